"""The click command group ``ee`` and the click run of a command line (help, errors, every command).

Imported only when click parses the line: the hot commands usually run without it (see
:mod:`ee.cli.params`). ``ee.cli.cli`` is this module's :data:`cli`.
"""

from __future__ import annotations

from typing import Any

import click

from ee import __version__
from ee.cli import echo, report_error, wants_json
from ee.errors import EeError, ExitCode

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
_NO_ARGS_IS_HELP: type[click.ClickException] = getattr(
    click.exceptions, "NoArgsIsHelpError", click.UsageError
)


def run(args: list[str]) -> int:
    """Parse ``args`` with click and run the command; the exit code."""
    try:
        result = cli.main(args=args, prog_name="ee", standalone_mode=False)
    except EeError as exc:
        return report_error(exc, wants_json(args))
    except _NO_ARGS_IS_HELP as exc:
        help_ctx = getattr(exc, "ctx", None)
        echo(help_ctx.get_help() if help_ctx else "", err=True)
        return int(ExitCode.USAGE)
    except click.UsageError as exc:
        if wants_json(args):
            from ee.render import dumps, error_envelope

            echo(
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
        echo("aborted", err=True)
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    return result if isinstance(result, int) else 0
