"""The ``ee`` command line: parse, call one library function, render. No business logic here.

Exit codes (see ee.errors.ExitCode and the README): 0 ok, 1 internal, 2 usage, 3 configuration,
4 storage, 5 index, 6 policy denied, 7 not found, 8 conflict, 9 eval failed.

This module does not import click: a fresh ``ee search``, ``ee context``, ``ee remember`` (and ``pack``,
``why``, ``outcome``) parses its line with :mod:`ee.cli.params` and runs without it. Everything else (and
any line the fast parser does not fully understand) goes to the click group of :mod:`ee.cli.group`
(``ee.cli.cli``).
"""

from __future__ import annotations

import gc
import os
import sys

import ee._paths  # noqa: F401 - pathlib without urllib.parse (~3.5 ms of every command: see there)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import click

    from ee.errors import EeError
    from ee.workspace import Workspace

# A query multiplies one vector by the memory matrix (~1 ms on one core at 10k memories). OpenBLAS would
# run that on every core and then spin its threads, which cost a fresh `ee search` ~20 ms of CPU on a
# 2-core machine (and the other processes the cores it spun on). Set before numpy loads; the user's own
# setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The commands that run without click when their line is plain (see ee.cli.params) → their module.
FAST_COMMANDS = {
    "search": "query_cmds",
    "context": "context_cmds",
    "pack": "context_cmds",
    "why": "context_cmds",
    "outcome": "context_cmds",
    "remember": "remember_cmds",
}


def echo(message: str = "", nl: bool = True, err: bool = False) -> None:
    """``click.echo(message, nl=nl, err=err)`` without importing click.

    For text on an ordinary stream click writes the text (and newline) and flushes, as here. It does more
    only for text holding ANSI escapes (removed when the stream is not a terminal) and for a stream with
    no usable encoding (ASCII, or none: re-wrapped as UTF-8): those go to click itself."""
    stream = sys.stderr if err else sys.stdout
    if stream is None or "\x1b" in message or _ascii(stream):
        import click

        click.echo(message, nl=nl, err=err)
        return
    if nl:
        message += "\n"
    if message:
        stream.write(message)
    stream.flush()


def _ascii(stream: Any) -> bool:
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "ascii").name == "ascii"
    except LookupError:
        return False


class Output:
    """Where a command's result goes: the JSON envelope on stdout, or human text."""

    def __init__(self, as_json: bool | None) -> None:
        if as_json is None:
            forced = os.environ.get("EE_FORMAT", "").lower()
            as_json = forced == "json" or (forced != "human" and not sys.stdout.isatty())
        self.json = as_json

    def emit(
        self, data: Any, human: Callable[[], str] | str, degraded: list[dict[str, Any]] | None = None
    ) -> None:
        if self.json:
            from ee.render import dumps, envelope

            echo(dumps(envelope(data, degraded)))
            return
        text = human() if callable(human) else human
        if text:
            echo(text)
        for item in degraded or []:
            echo(f"degraded: {item['message']} (repair: {item['repair']})", err=True)


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` / ``--human`` on every command (default: JSON when stdout is not a terminal)."""
    from ee.cli.params import JSON_OPTION

    return JSON_OPTION.to_click()(func)


def workspace(ctx: click.Context) -> Any:
    """The workspace of a click command (the ``--workspace`` given before it, else the usual search)."""
    return open_workspace(ctx.find_root().params.get("workspace"))


def open_workspace(root: str | None) -> Workspace:
    """The workspace at ``root`` (the ``--workspace`` given before the command), else the usual search."""
    from ee.workspace import Workspace

    return Workspace.discover(root)


def wants_json(argv: list[str]) -> bool:
    if "--json" in argv:
        return True
    if "--human" in argv:
        return False
    forced = os.environ.get("EE_FORMAT", "").lower()
    return forced == "json" or (forced != "human" and not sys.stdout.isatty())


def report_error(exc: EeError, as_json: bool) -> int:
    if as_json:
        from ee.render import dumps, error_envelope

        echo(dumps(error_envelope(exc.to_dict())))
    echo(f"error: {exc.message}", err=True)
    if exc.hint:
        echo(f"  repair: {exc.hint}", err=True)
    return int(exc.exit_code)


def main(argv: list[str] | None = None) -> int:
    """Run ``ee ARGV`` (default: this process's arguments); the exit code.

    Called without ``argv`` (the ``ee`` process itself), a read-only command ends the process here once
    its output is flushed: see :func:`_leave`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None and _short_lived(args):
        # A short-lived reader: no cyclic garbage collection. A 100k-memory index is ~2M objects; a full
        # collection that an allocation triggered halfway through a query cost ~0.5 s there (and the
        # process ends in _leave without one). A --batch of queries may run long: it keeps the collector.
        # One small write (remember, outcome) allocates little beyond its imports, whose ~20 collections
        # cost it ~5 ms; its files and git processes are closed and waited for explicitly, never by gc.
        gc.disable()
    code = _run_fast(args) if argv is None else None
    if code is None:
        code = _run(args)
    if argv is None:
        _leave(args, code)
    return code


def _read_only(args: list[str]) -> bool:
    from ee.client import is_read_only, parse_argv

    return is_read_only(parse_argv(args)[1])


# Writes of one memory or one event: short processes, like the read-only commands.
SMALL_WRITES = ("remember", "outcome")


def _small_write(args: list[str]) -> bool:
    from ee.client import parse_argv

    command = parse_argv(args)[1]
    return command is not None and command[0] in SMALL_WRITES


def _short_lived(args: list[str]) -> bool:
    if "--batch" in args:
        return False
    return _read_only(args) or _small_write(args)


def _leave(args: list[str], code: int) -> None:
    """End a read-only command's or a small write's process now, without tearing the interpreter down.

    Freeing what a query loaded (10k memory records, their state, the model) and the final garbage
    collection cost a fresh `ee search` ~120 ms of CPU at 10k memories, after its answer was written; the
    teardown of a remember's modules alone costs ~7 ms. Only read-only commands (the ones ``ee watch`` may
    answer) and :data:`SMALL_WRITES` leave this way: the index a query brought up to date is already on
    disk (written, renamed and its lock released before the query ran), and a remember or an outcome has
    written, synced and committed its file, waited for its git processes and released the workspace lock
    before it returned (every file they write is closed where it is written). Other writes return
    normally, so nothing they left to finalizers is cut short.
    """
    if not (_read_only(args) or _small_write(args)):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: let the usual exit path report it as before
        return
    os._exit(code)


def _run(args: list[str]) -> int:
    from ee.cli.group import run

    return run(args)


def _run_fast(args: list[str]) -> int | None:
    """Run a command of :data:`FAST_COMMANDS` without click; None when click must parse the line (help,
    a mistake, an option the fast parser does not read: see :mod:`ee.cli.params`) or another command.

    What the command raises is handled as click's ``main`` and :func:`_run` handle it."""
    import errno

    from ee.errors import EeError

    line = _split_command(args)
    if line is None or "_EE_COMPLETE" in os.environ:  # (click's shell completion)
        return None
    root, name, rest = line
    module_name = FAST_COMMANDS.get(name)
    if module_name is None:
        return None
    from ee.cli.params import parse

    command = __import__(f"ee.cli.{module_name}", fromlist=["COMMANDS"]).COMMANDS[name]
    params = parse(command, rest)
    if params is None:
        return None
    try:
        result = command.run(root, **params)
    except EeError as exc:
        return report_error(exc, wants_json(args))
    except (EOFError, KeyboardInterrupt):  # click: a newline, then Abort → "aborted"
        echo(err=True)
        echo("aborted", err=True)
        return 130
    except OSError as exc:  # click: output to a closed pipe ends the process with 1, flushing quietly
        if exc.errno != errno.EPIPE:
            raise
        sys.stdout = _Pacified(sys.stdout)
        sys.stderr = _Pacified(sys.stderr)
        sys.exit(1)
    return result if isinstance(result, int) else 0


def _split_command(args: list[str]) -> tuple[str | None, str, list[str]] | None:
    """(the ``--workspace`` given, the command's name, the words after it), read as the group ``ee`` reads
    them; None when anything else comes before the command (``--version``, ``--help``, a mistake)."""
    root = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-W", "--workspace"):
            if i + 1 == len(args):
                return None
            root, i = args[i + 1], i + 2
        elif arg.startswith("--workspace="):
            root, i = arg.partition("=")[2], i + 1
        elif arg.startswith("-W"):  # click reads "-WDIR" (and "-W=DIR") as -W with the rest attached
            root, i = arg[2:], i + 1
        elif arg.startswith("-"):
            return None
        else:
            return root, arg, args[i + 1 :]
    return None


class _Pacified:
    """A stream whose flush ignores a closed pipe (click's ``_PacifyFlushWrapper``)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        import errno

        try:
            self.wrapped.flush()
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)


def __getattr__(name: str) -> Any:
    # The click group and what goes with it, imported when first asked for (``from ee.cli import cli``).
    if name in ("cli", "EeGroup", "COMMAND_MODULES", "HOT_COMMANDS"):
        from ee.cli import group

        return getattr(group, name)
    raise AttributeError(name)


def run() -> None:
    """The console-script entry point: a read-only command goes to `ee watch`'s warm server if one runs."""
    from ee.client import try_server

    code = try_server(sys.argv[1:])
    sys.exit(main() if code is None else code)
