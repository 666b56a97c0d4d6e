"""The ``ee`` command line: parse, call one library function, render. No business logic here.

Exit codes (see ee.errors.ExitCode and the README): 0 ok, 1 internal, 2 usage, 3 configuration,
4 storage, 5 index, 6 policy denied, 7 not found, 8 conflict, 9 eval failed.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from ee import __version__
from ee.errors import EeError, ExitCode
from ee.render import dumps, envelope, error_envelope

# A query multiplies one vector by the memory matrix (~1 ms on one core at 10k memories). OpenBLAS would
# run that on every core and then spin its threads, which cost a fresh `ee search` ~20 ms of CPU on a
# 2-core machine (and the other processes the cores it spun on). Set before numpy loads; the user's own
# setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


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
            click.echo(dumps(envelope(data, degraded)))
            return
        text = human() if callable(human) else human
        if text:
            click.echo(text)
        for item in degraded or []:
            click.echo(f"degraded: {item['message']} (repair: {item['repair']})", err=True)


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` / ``--human`` on every command (default: JSON when stdout is not a terminal)."""
    return click.option(
        "--json/--human",
        "as_json",
        default=None,
        help="Print the ee.response.v1 JSON envelope (default when stdout is not a terminal), or text.",
    )(func)


def workspace(ctx: click.Context) -> Any:
    from ee.workspace import Workspace

    root = ctx.find_root().params.get("workspace")
    return Workspace.discover(root)


# The modules that register commands, in the order help lists them (it reads like the README).
COMMAND_MODULES = (
    "store_cmds",
    "memory_cmds",
    "index_cmds",
    "query_cmds",
    "context_cmds",
    "hooks_cmds",
    "sync_cmds",
    "eval_cmds",
    "mcp_cmds",
)
# Commands whose latency matters (agents and git hooks call them all the time) → the one module that
# registers them: running one imports only that module. Any other name imports them all, in order.
HOT_COMMANDS = {
    "search": "query_cmds",
    "context": "context_cmds",
    "pack": "context_cmds",
    "why": "context_cmds",
    "outcome": "context_cmds",
    "remember": "store_cmds",
    "hook": "hooks_cmds",
}


class EeGroup(click.Group):
    """Keeps commands in the order they were added (help reads like the README), and imports the module
    of a command when it is first needed: ``ee search`` does not import the modules (and their
    dependencies) of thirty other commands. ``commands`` read from outside (help, suggestions, the MCP
    tool table, tests) holds every command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._commands: dict[str, click.Command] = {}
        self._loaded: dict[str, list[str]] = {}  # module → the names it registered
        self._all = False
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        self._load_all()
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._commands = dict(value)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        name = name or cmd.name
        if name is None:
            raise TypeError("Command has no name.")
        self._commands[name] = cmd

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = HOT_COMMANDS.get(cmd_name)
        if module is not None and not self._all:
            self._load(module)
        else:
            self._load_all()
        return self._commands.get(cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def _load(self, module_name: str) -> None:
        if module_name in self._loaded:
            return
        before = set(self._commands)
        self._loaded[module_name] = []
        try:
            module = __import__(f"ee.cli.{module_name}", fromlist=["register"])
        except ModuleNotFoundError as exc:  # a command module still being written: ee works without it
            if exc.name != f"ee.cli.{module_name}":
                raise
            return
        module.register(self)
        self._loaded[module_name] = [name for name in self._commands if name not in before]

    def _load_all(self) -> None:
        if self._all:
            return
        self._all = True
        for module_name in COMMAND_MODULES:
            self._load(module_name)
        # Help order does not depend on which command ran first.
        ordered = {name: self._commands[name] for m in COMMAND_MODULES for name in self._loaded.get(m, [])}
        self._commands = ordered | self._commands


@click.group(cls=EeGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--workspace",
    "-W",
    metavar="DIR",
    default=None,
    help="The workspace folder (default: $EE_WORKSPACE, else the nearest folder up with .ee/ or memories/).",
)
@click.version_option(__version__, prog_name="ee")
def cli(workspace: str | None) -> None:
    """ee — durable, local-first, explainable memory for coding agents.

    Memories are Markdown files under memories/, versioned in git. Indexes are derived.
    """


# click ≥ 8.2 raises this for a group called without a command; older clicks print help and exit 0.
_NO_ARGS_IS_HELP: type[click.ClickException] = getattr(click.exceptions, "NoArgsIsHelpError", click.UsageError)


def wants_json(argv: list[str]) -> bool:
    if "--json" in argv:
        return True
    if "--human" in argv:
        return False
    forced = os.environ.get("EE_FORMAT", "").lower()
    return forced == "json" or (forced != "human" and not sys.stdout.isatty())


def report_error(exc: EeError, as_json: bool) -> int:
    if as_json:
        click.echo(dumps(error_envelope(exc.to_dict())))
    click.echo(f"error: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"  repair: {exc.hint}", err=True)
    return int(exc.exit_code)


def main(argv: list[str] | None = None) -> int:
    """Run ``ee ARGV`` (default: this process's arguments); the exit code.

    Called without ``argv`` (the ``ee`` process itself), a read-only command ends the process here once
    its output is flushed: see :func:`_leave`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None and _read_only(args) and "--batch" not in args:
        # A short-lived reader: no cyclic garbage collection. A 100k-memory index is ~2M objects; a full
        # collection that an allocation triggered halfway through a query cost ~0.5 s there (and the
        # process ends in _leave without one). A --batch of queries may run long: it keeps the collector.
        gc.disable()
    code = _run(args)
    if argv is None:
        _leave(args, code)
    return code


def _read_only(args: list[str]) -> bool:
    from ee.client import is_read_only, parse_argv

    return is_read_only(parse_argv(args)[1])


def _leave(args: list[str], code: int) -> None:
    """End a read-only command's process now, without tearing the interpreter down.

    Freeing what a query loaded (10k memory records, their state, the model) and the final garbage
    collection cost a fresh `ee search` ~120 ms of CPU at 10k memories, after its answer was written.
    Only read-only commands (the ones ``ee watch`` may answer) leave this way: a command that writes
    returns normally, so nothing it left to finalizers is cut short. The index a query brought up to date
    is already on disk (written, renamed and its lock released before the query ran).
    """
    if not _read_only(args):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: let the usual exit path report it as before
        return
    os._exit(code)


def _run(args: list[str]) -> int:
    try:
        result = cli.main(args=args, prog_name="ee", standalone_mode=False)
    except EeError as exc:
        return report_error(exc, wants_json(args))
    except _NO_ARGS_IS_HELP as exc:
        help_ctx = getattr(exc, "ctx", None)
        click.echo(help_ctx.get_help() if help_ctx else "", err=True)
        return int(ExitCode.USAGE)
    except click.UsageError as exc:
        if wants_json(args):
            click.echo(
                dumps(
                    error_envelope(
                        {
                            "code": "usage",
                            "message": exc.format_message(),
                            "repair": "see `ee --help`",
                            "details": {},
                        }
                    )
                )
            )
        exc.show()
        return int(ExitCode.USAGE)
    except click.ClickException as exc:
        exc.show()
        return int(ExitCode.USAGE)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0


def run() -> None:
    """The console-script entry point: a read-only command goes to `ee watch`'s warm server if one runs."""
    from ee.client import try_server

    code = try_server(sys.argv[1:])
    sys.exit(main() if code is None else code)
