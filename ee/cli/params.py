"""Command parameters declared once, without click: click's options and the fast parser are built from them.

The hot commands (``ee search``, ``ee context``, ``ee remember``; ``pack``, ``why``, ``outcome``) run in
a fresh process many times a minute, and importing click costs each of them ~10 ms of CPU (~20 ms where
numpy is not imported). So their parameters are declared here, as the keyword arguments
``click.option`` / ``click.argument`` take (with ``choices=``, ``type=int|float``, ``min=``, ``max=``
standing for click's ``Choice`` / ``IntRange`` / ``FloatRange``). :func:`click_command` builds the click
command from them (help, ``ee --help``, the MCP tool table, every error message), and :func:`parse` reads a
command line with them directly.

:func:`parse` handles exactly the grammar these commands use — long options, ``--opt=value``, flags,
``--a/--b`` switches, repeated options, ``--``, positional arguments anywhere — and returns None for
anything else: ``--help`` or ``-h``, a short or unknown option, a missing, extra or invalid value. Then
click parses the line itself, so every message, exit code and help text stays click's. It accepts a line
only where click gives the same values (``tests/test_cli_fastpath.py`` checks that on many lines).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import click


class Argument:
    """A positional parameter: ``click.argument(name, **attrs)``."""

    __slots__ = ("attrs", "name", "nargs", "required")

    def __init__(self, name: str, **attrs: Any) -> None:
        self.name = name
        self.attrs = attrs
        self.nargs: int = attrs.get("nargs", 1)
        self.required: bool = attrs.get("required", self.nargs > 0 and "default" not in attrs)

    def to_click(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        import click

        return click.argument(self.name, **self.attrs)


class Option:
    """An option: ``click.option(*decls, **attrs)``, with ``choices=`` for ``type=click.Choice(choices)``
    and ``type=int|float`` with ``min=`` / ``max=`` for ``click.IntRange`` / ``click.FloatRange``."""

    __slots__ = (
        "attrs",
        "choices",
        "decls",
        "default",
        "flag",
        "kind",
        "max",
        "min",
        "multiple",
        "name",
        "names",
    )

    def __init__(
        self,
        *decls: str,
        choices: Sequence[str] | None = None,
        type: type | None = None,  # noqa: A002 - click's name for it
        min: float | None = None,  # noqa: A002 - click's name for it
        max: float | None = None,  # noqa: A002 - click's name for it
        **attrs: Any,
    ) -> None:
        self.decls = decls
        self.attrs = attrs
        self.choices = tuple(choices) if choices is not None else None
        self.kind = type
        self.min = min
        self.max = max
        self.multiple: bool = attrs.get("multiple", False)
        self.flag: bool = attrs.get("is_flag", False) or any("/" in decl for decl in decls)
        identifiers = [decl for decl in decls if decl.isidentifier()]
        switches = [decl for decl in decls if not decl.isidentifier()]
        # What each spelling stores: a value, True (a flag, or the first half of --a/--b), or False.
        self.names: dict[str, bool | None] = {}
        for decl in switches:
            on, _, off = decl.partition("/")
            self.names[on] = True if self.flag else None
            if off:
                self.names[off] = False
        # click's rule: the identifier given, else the first long spelling, else the first short one.
        spelled = sorted((decl.partition("/")[0] for decl in switches), key=lambda s: not s.startswith("--"))
        self.name: str = identifiers[0] if identifiers else spelled[0].lstrip("-").replace("-", "_").lower()
        self.default: Any = attrs.get("default", () if self.multiple else False if self.flag else None)

    def to_click(self) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        import click

        attrs = dict(self.attrs)
        if self.choices is not None:
            attrs["type"] = click.Choice(list(self.choices))
        elif self.kind is int:
            attrs["type"] = click.IntRange(min=self.min, max=self.max)  # type: ignore[arg-type]
        elif self.kind is float:
            attrs["type"] = click.FloatRange(min=self.min, max=self.max)
        return click.option(*self.decls, **attrs)

    def convert(self, text: str) -> tuple[bool, Any]:
        """(True, the value click makes of ``text``), or (False, None) where click would refuse it."""
        value: Any = text
        if self.choices is not None:
            return (True, text) if text in self.choices else (False, None)
        if self.kind is int or self.kind is float:
            try:
                value = self.kind(text)  # what click's IntRange / FloatRange call
            except ValueError:
                return False, None
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                return False, None
        return True, value


# --json / --human, on every command (``ee.cli.json_option`` puts it on the ones declared with click).
JSON_OPTION = Option(
    "--json/--human",
    "as_json",
    default=None,
    help="Print the ee.response.v1 JSON envelope (default when stdout is not a terminal), or text.",
)


class Command:
    """A command: its name, its parameters (in help order), and ``run(root, **params)``, where ``root`` is
    the ``--workspace`` given before the command (None when absent)."""

    __slots__ = ("name", "params", "run")

    def __init__(self, name: str, run: Callable[..., Any], params: Sequence[Argument | Option]) -> None:
        self.name = name
        self.run = run
        self.params = tuple(params)


def click_command(command: Command) -> click.Command:
    """The click command: ``command.run``'s docstring is its help, ``command.params`` its parameters."""
    import click

    def callback(**params: Any) -> Any:
        root = click.get_current_context().find_root().params.get("workspace")
        return command.run(root, **params)

    callback.__doc__ = command.run.__doc__
    decorated: Callable[..., Any] = callback
    for param in reversed(command.params):
        decorated = param.to_click()(decorated)
    return click.command(command.name)(decorated)


def parse(command: Command, args: Sequence[str]) -> dict[str, Any] | None:
    """The parameters click would pass for ``args`` (the words after the command's name), or None when the
    line is not one :func:`parse` fully understands (click then parses it: help, errors, …)."""
    spellings: dict[str, Option] = {}
    for param in command.params:
        if isinstance(param, Option):
            spellings.update(dict.fromkeys(param.names, param))
    values: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional.extend(args[i:])
            break
        if arg[:1] != "-" or len(arg) == 1:
            positional.append(arg)
            continue
        spelling, eq, attached = arg.partition("=")
        option = spellings.get(spelling)
        if option is None or not spelling.startswith("--"):
            return None  # help, a short option, an unknown one: click says what it is
        if option.flag:
            if eq:
                return None  # "--explain=yes": click refuses it
            values[option.name] = option.names[spelling]
            continue
        if not eq:
            if i == len(args):
                return None  # a missing value
            attached = args[i]
            i += 1
        ok, value = option.convert(attached)
        if not ok:
            return None
        if option.multiple:
            values.setdefault(option.name, []).append(value)
        else:
            values[option.name] = value
    return _bind(command, values, positional)


def _bind(command: Command, values: dict[str, Any], positional: list[str]) -> dict[str, Any] | None:
    """Options' values or defaults, and the positional words given to the arguments (None: click's error)."""
    if sum(isinstance(param, Argument) for param in command.params) > 1:
        return None  # click shares words out between several arguments: not needed here
    params: dict[str, Any] = {}
    for param in command.params:
        if isinstance(param, Option):
            if param.name in values:
                given = values[param.name]
                params[param.name] = tuple(given) if param.multiple else given
            elif param.attrs.get("required"):
                return None
            else:
                params[param.name] = param.default
        elif param.nargs == -1:
            if param.required and not positional:
                return None
            params[param.name] = tuple(positional)
            positional = []
        elif param.nargs == 1:
            if positional:
                params[param.name] = positional.pop(0)
            elif param.required:
                return None
            else:
                params[param.name] = param.attrs.get("default")
        else:
            return None  # nargs > 1: not used here
    return None if positional else params
