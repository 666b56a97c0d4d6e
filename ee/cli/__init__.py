"""The ``ee`` command line (click): parse, call one library function, render. No business logic here.

Exit codes (see ee.errors.ExitCode and docs/cli.md): 0 ok, 1 internal, 2 usage, 3 configuration,
4 storage, 5 index, 6 policy denied, 7 not found, 8 conflict, 9 eval failed. :func:`main` is the one
place that maps what a command raises to its message and exit code (:func:`_run`).

:data:`COMMANDS` is the routing table: each command's name → the click command that runs it, imported
only when it is needed, so ``ee search`` does not import the modules (and dependencies) of thirty other
commands (click's documented lazy group: see :class:`LazyGroup`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from importlib import import_module
from typing import TYPE_CHECKING, Any

import click

from ee import __version__
from ee.errors import EeError, ExitCode, disk_failure

if TYPE_CHECKING:
    from ee.workspace import Workspace

# Every top-level command → "module:attribute" of its click command, in the order help lists them (it
# reads like the README).
COMMANDS = {
    "status": "status_cmds:status_cmd",
    "init": "store_cmds:init_cmd",
    "remember": "remember_cmds:remember_cmd",
    "import": "store_cmds:import_group",
    "sessions": "session_cmds:sessions_group",
    "export": "store_cmds:export_group",
    "doctor": "store_cmds:doctor_cmd",
    "schema": "store_cmds:schema_group",
    "memory": "memory_cmds:memory_group",
    "index": "index_cmds:index_group",
    "watch": "index_cmds:watch_cmd",
    "search": "query_cmds:search_cmd",
    "context": "context_cmds:context_cmd",
    "pack": "context_cmds:pack_cmd",
    "why": "feedback_cmds:why_cmd",
    "outcome": "feedback_cmds:outcome_cmd",
    "curate": "curate_cmds:curate_group",
    "hooks": "hooks_cmds:hooks_group",
    "hook": "hooks_cmds:hook_cmd",
    "sync": "sync_cmds:sync_cmd",
    "merge-driver": "sync_cmds:merge_driver_cmd",
    "eval": "eval_cmds:eval_group",
    "mcp": "mcp_cmds:mcp_group",
}


class Text(click.ParamType):
    """A text argument or option. Bytes that are not UTF-8 (``$'\\xff'``) reach Python as lone surrogates,
    which no memory file, commit, JSON answer or tokenizer takes, and a NUL byte no file name or git
    argument takes: a usage error naming the parameter."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ee.schemas import is_utf8

        if isinstance(value, str) and (not is_utf8(value) or "\x00" in value):
            from ee.errors import UsageError

            shown = (param.opts[0] if param.opts else (param.name or "").upper()) if param else "an argument"
            if "\x00" in value:  # no process argument holds one, but the warm server's and MCP's may
                raise UsageError(f"{shown} holds a NUL byte", "pass text without NUL (\\0) characters")
            raise UsageError(
                f"{shown} holds bytes that are not UTF-8",
                "convert it first, e.g. with: iconv -f latin1 -t utf-8",
            )
        return value


TEXT = Text()


def _text_parameters(command: click.Command) -> click.Command:
    """Every plain-string parameter of ``command`` (and of its subcommands) checked as :data:`TEXT`: the
    one place the rule applies to every command, present and future. A path is declared ``click.Path``
    (a file name need not be UTF-8) and keeps its type."""
    for param in command.params:
        if type(param.type) is click.types.StringParamType:
            param.type = TEXT
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _text_parameters(sub)
    return command


class LazyGroup(click.Group):
    """A group whose commands are imported when first asked for (``list_commands`` / ``get_command``,
    which help, suggestions, the MCP tool table and the tests use); each with its text parameters checked
    (:func:`_text_parameters`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, _, attribute = target.partition(":")
        command: click.Command = getattr(import_module(f"ee.cli.{module_name}"), attribute)
        return _text_parameters(command)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader of the answer stopped reading (`ee export jsonl | head -1`): a normal end. Caught
            # here, before click's main turns it into exit 1 (ee's code for a bug).
            drop_output()
            return 0

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMANDS:
            # click suggests the close names ("Did you mean …?") from ``self.commands``.
            self.commands = {name: command for name in COMMANDS if (command := self.get_command(ctx, name))}
        return super().resolve_command(ctx, args)


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.option(
    "--workspace",
    "-W",
    metavar="DIR",
    default=None,
    type=click.Path(),
    help="The workspace folder (default: $EE_WORKSPACE, else the nearest folder up with .ee/ or memories/).",
)
@click.version_option(__version__, prog_name="ee")
def cli(workspace: str | None) -> None:
    """ee — durable, local-first, explainable memory for coding agents.

    Memories are Markdown files under memories/, versioned in git. Indexes are derived.
    """


def stdout_is_terminal() -> bool:
    """Whether this command's output goes to a terminal (a person reads it) rather than to a program."""
    return sys.stdout.isatty()


def json_indent() -> int | None:
    """How a JSON envelope is printed: indented for a terminal; on one line for a program (a pipe, a file).
    Indentation is a quarter of a search's bytes (tokens an agent pays for), and json indents with its
    pure-Python encoder: ~5 ms for a search's 100 hits, against ~1.5 ms on one line."""
    return 2 if stdout_is_terminal() else None


def json_by_default() -> bool:
    """Without --json / --human: JSON unless ``$EE_FORMAT`` or a terminal on stdout says text."""
    forced = os.environ.get("EE_FORMAT", "").lower()
    return forced == "json" or (forced != "human" and not stdout_is_terminal())


class Output:
    """Where a command's result goes: the JSON envelope on stdout, or human text."""

    def __init__(self, as_json: bool | None) -> None:
        self.json = json_by_default() if as_json is None else as_json

    def emit(
        self, data: Any, human: Callable[[], str] | str, degraded: list[dict[str, Any]] | None = None
    ) -> None:
        if self.json:
            from ee.render import dumps, envelope

            click.echo(dumps(envelope(data, degraded), indent=json_indent()))
            return
        from ee.policy.shown import visible

        text = human() if callable(human) else human
        if text:
            click.echo(visible(text))
        report_degraded(degraded or [])


def report_degraded(degraded: list[dict[str, Any]]) -> None:
    """Each degradation of a text answer on stderr, with its repair (JSON carries them in the envelope)."""
    from ee.policy.shown import visible
    from ee.render import masked_degradations

    for item in masked_degradations(degraded):
        click.echo(visible(f"degraded: {item['message']} (repair: {item['repair']})"), err=True)


# ``--json`` / ``--human`` on every command (default: JSON when stdout is not a terminal).
json_option = click.option(
    "--json/--human",
    "as_json",
    default=None,
    help="Print the ee.response.v1 JSON envelope (default when stdout is not a terminal; on one line "
    "then), or text.",
)


def workspace(ctx: click.Context) -> Workspace:
    """The workspace of a click command (the ``--workspace`` given before it, else the usual search)."""
    from ee.workspace import Workspace

    return Workspace.discover(ctx.find_root().params.get("workspace"))


def call(ctx: click.Context, op: str, **args: Any) -> Any:
    """The result of library operation ``op`` (:data:`ee.operations.OPERATIONS`) with ``args`` (as they
    travel: a query as its document) for this command's workspace: answered by the user's warm server
    when one runs and the operation only reads, else run here — the same ``Workspace`` method either way,
    so the command renders the same bytes."""
    from ee.discovery import check_state_untracked, find_root
    from ee.operations import OPERATIONS, answer, result

    # (whether git tracks files under .ee/ is checked by whichever process answers: the server keeps
    # the answer while git's index is unchanged, and a command of its own runs git for it)
    root = find_root(ctx.find_root().params.get("workspace"), tracked=False)
    operation = OPERATIONS[op]
    if operation.served:
        from ee.serve.client import call as served

        # (the answer's result types are imported while the server computes: they are needed either way)
        sent = served(op, root, args, meanwhile=lambda: operation.result_type)
        if sent is not None:
            return answer(op, sent)
    check_state_untracked(root)
    from ee.workspace import Workspace

    return result(Workspace(root), op, args)


def wants_json(argv: list[str]) -> bool:
    if "--json" in argv:
        return True
    if "--human" in argv:
        return False
    return json_by_default()


def report_error(exc: EeError, as_json: bool) -> int:
    """``exc`` on stderr (and its envelope on stdout for ``as_json``); its exit code. A value the message
    quotes is masked, on stderr too."""
    from ee.policy.shown import visible
    from ee.render import dumps, error_envelope

    error = error_envelope(exc.to_dict())
    with reader_may_be_gone():
        if as_json:
            click.echo(dumps(error, indent=json_indent()))
        click.echo(visible(f"error: {error['error']['message']}"), err=True)
        if error["error"]["repair"]:
            click.echo(visible(f"  repair: {error['error']['repair']}"), err=True)
    return int(exc.exit_code)


@contextlib.contextmanager
def reader_may_be_gone() -> Iterator[None]:
    """Writes whose reader may have gone away (``ee … 2>&1 | head -1``): a closed pipe ends them quietly
    and changes nothing else, least of all the exit code the caller returns."""
    try:
        yield
    except BrokenPipeError:
        drop_output()


def drop_output() -> None:
    """After a closed pipe: send what is left of stdout and stderr to /dev/null, so the interpreter's last
    flush neither fails again nor turns the exit code into 120 (as the Python docs advise for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # (a stream without a descriptor: a test's)
                os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """Run ``ee ARGV`` (default: this process's arguments); the exit code. The ``ee`` entry point: click
    parses the arguments once, and a command that runs a library operation asks the warm server for it
    (:func:`call`)."""
    from ee.config import one_blas_thread

    one_blas_thread()
    args = list(sys.argv[1:] if argv is None else argv)
    code = _run(args)
    with reader_may_be_gone():  # now, not in the interpreter's teardown, where a closed pipe exits 120
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    return code


# click ≥ 8.2 raises this for a group called without a command; older clicks print help and exit 0.
_NO_ARGS_IS_HELP: type[click.ClickException] = getattr(
    click.exceptions, "NoArgsIsHelpError", click.UsageError
)


def _run(args: list[str]) -> int:
    """Parse ``args`` with click and run the command; the exit code."""
    try:
        result = cli.main(args=args, prog_name="ee", standalone_mode=False)
    except EeError as exc:
        return report_error(exc, wants_json(args))
    except _NO_ARGS_IS_HELP as exc:
        help_ctx = getattr(exc, "ctx", None)
        with reader_may_be_gone():
            click.echo(help_ctx.get_help() if help_ctx else "", err=True)
        return int(ExitCode.USAGE)
    except click.UsageError as exc:
        with reader_may_be_gone():
            if wants_json(args):
                from ee.render import dumps, error_envelope

                usage = {"code": "usage", "message": exc.format_message(), "repair": "see `ee --help`"}
                click.echo(dumps(error_envelope(usage | {"details": {}}), indent=json_indent()))
            exc.show()
        return int(ExitCode.USAGE)
    except click.ClickException as exc:
        with reader_may_be_gone():
            exc.show()
        return int(ExitCode.USAGE)
    except click.exceptions.Abort:
        with reader_may_be_gone():
            click.echo("aborted", err=True)
        return 130
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except BrokenPipeError:  # the reader of the answer stopped reading (`ee search … | head -1`): done
        drop_output()
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        storage = disk_failure(exc)
        if storage is not None:
            return report_error(storage, wants_json(args))
        if os.environ.get("EE_DEBUG"):
            raise
        # A bug: one clear line and exit 1 (documented: "internal error"), not a traceback in a person's
        # or an agent's face; EE_DEBUG=1 shows where it happened.
        bug = EeError(
            f"internal error (a bug in ee {__version__}): {type(exc).__name__}: {exc}",
            "run it again with EE_DEBUG=1 to see the traceback, and report it",
        )
        return report_error(bug, wants_json(args))
    return result if isinstance(result, int) else 0
