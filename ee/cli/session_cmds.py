"""``ee import session`` and ``ee sessions list | show | forget``: agent transcripts as private evidence."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ee.cli import Output, json_option, workspace
from ee.sessions.read import FORMATS

if TYPE_CHECKING:
    from ee.results.sessions import SessionImport


@click.command("session")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False))
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default=None, help="Force the format of every file."
)
@click.option("--claude-code", is_flag=True, help="Also this workspace's transcripts in ~/.claude/projects/.")
@click.option("--codex", is_flag=True, help="Also this workspace's rollouts in ~/.codex/sessions/.")
@click.option(
    "--from-hook",
    is_flag=True,
    hidden=True,
    help="Read a Claude Code hook's JSON on stdin and import its transcript in the background.",
)
@click.option(
    "--from-codex-notify",
    "from_codex",
    is_flag=True,
    hidden=True,
    help="Codex CLI's notify program: PATHS is its JSON argument; import its thread's rollout.",
)
@json_option
@click.pass_context
def import_session_cmd(
    ctx: click.Context,
    paths: tuple[str, ...],
    fmt: str | None,
    claude_code: bool,
    codex: bool,
    from_hook: bool,
    from_codex: bool,
    as_json: bool | None,
) -> int:
    """Import agent transcripts (Claude Code, Codex, or {role, content} messages) as session evidence.

    Incremental and idempotent: a grown transcript adds only its new turns, the same one twice changes
    nothing. Evidence stays in .ee/sessions/ (never committed) and is searchable at once.

    Example: ee import session --claude-code   (or: ee import session ~/transcript.jsonl)
    """
    if from_hook:
        from ee.hooks.sessions import from_hook as run_hook

        return run_hook(ctx.find_root().params.get("workspace"), sys.stdin.read(1 << 20))
    if from_codex:  # (Codex appends its JSON to the command line: the last argument)
        from ee.hooks.sessions import from_codex_notify

        return from_codex_notify(ctx.find_root().params.get("workspace"), paths[-1] if paths else "")
    from ee.errors import UsageError
    from ee.sessions.ops import claude_code_folder, harness_transcripts

    ws = workspace(ctx)
    files = [Path(p) for p in paths]
    degraded = []
    for wanted, harness, name, where in (
        (claude_code, "claude-code", "Claude Code", lambda: str(claude_code_folder(ws.root))),
        (codex, "codex", "Codex", lambda: "~/.codex/sessions/ (no rollout's cwd is this folder)"),
    ):
        found = harness_transcripts(harness, ws.root) if wanted else []
        files += found
        if wanted and not found:  # (a harness started in another folder keeps its transcripts elsewhere)
            degraded.append(
                {
                    "code": "no_transcripts",
                    "severity": "info",
                    "message": f"no {name} transcript of this workspace in {where()}",
                    "repair": f"run {name} from this workspace's folder, or give the transcripts' paths",
                }
            )
    if not files and not (claude_code or codex):
        raise UsageError("no transcript given", "give PATH..., or --claude-code / --codex")
    from ee.hooks.sessions import propose_candidates

    imported = ws.import_sessions(list(dict.fromkeys(files)), fmt)
    report = imported.with_candidates(propose_candidates(ws, imported))
    data, withheld = report.envelope_parts()  # (a retention a tracked config sets: not applied, said)
    Output(as_json).emit(data, lambda: _import_human(report), degraded + withheld)
    if report.errors:
        from ee.errors import ExitCode
        from ee.policy.shown import visible

        for error in report.errors:  # on stderr too: a failing exit always says why there
            click.echo(visible(f"error: {error['message']}"), err=True)
            if error.get("repair"):
                click.echo(visible(f"  repair: {error['repair']}"), err=True)

        codes = {"usage": ExitCode.USAGE, "not_found": ExitCode.NOT_FOUND, "policy": ExitCode.POLICY}
        return int(codes.get(report.errors[0]["code"], ExitCode.STORAGE))
    return 0


def _import_human(report: SessionImport) -> str:
    lines = [
        f"{f['path']}: {f['status']}, {f['added']} new piece(s) of evidence"
        + (f" (session {f['session_id']})" if f.get("session_id") else " (no whole line yet)")
        for f in report.files
    ]
    # (a file in error is said once, on stderr, with its repair: see import_session_cmd)
    lines += [f"{e['path']}: not imported (the error follows)" for e in report.errors]
    found = report.candidates or {}
    pruned = f", {report.pruned} pruned (older than [sessions] retention_days)" if report.pruned else ""
    lines.append(
        f"{report.added} added{pruned}, {report.evidence} in all; "
        f"{len(found.get('proposed', []))} candidate(s) proposed for review (ee curate list)"
    )
    return "\n".join(lines)


@click.group("sessions")
def sessions_group() -> None:
    """Imported agent sessions: list, show and forget their evidence (.ee/sessions/, never committed)."""


@sessions_group.command("list")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """The imported sessions, oldest first, with how much evidence each holds.

    Example: ee sessions list --human
    """
    found = workspace(ctx).sessions()
    Output(as_json).emit(
        {"sessions": [s.to_json() for s in found]},
        lambda: (
            "\n".join(f"{s.session_id}  {s.first} .. {s.last}  {s.evidence} piece(s)" for s in found)
            or "no session imported (ee import session PATH...)"
        ),
    )


@sessions_group.command("show")
@click.argument("ident")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, ident: str, as_json: bool | None) -> None:
    """A session's evidence (or one piece, by its ev_ id), with provenance.

    Example: ee sessions show SESSION_ID --human
    """
    found = workspace(ctx).session(ident)

    def human() -> str:
        out = []
        for e in found.evidence:
            p = e.provenance
            marks = f"  [{', '.join(e.flags)}]" if e.flags else ""  # (a sub-agent's, masked, quarantined)
            out.append(f"{e.id}  {p['file_name']} turn {p['turn']}  {p['time']}{marks}\n{e.text}\n")
        return "\n".join(out)

    Output(as_json).emit(found.to_json(), human)


@sessions_group.command("forget")
@click.argument("ident")
@json_option
@click.pass_context
def forget_cmd(ctx: click.Context, ident: str, as_json: bool | None) -> None:
    """Purge a session's evidence (or one piece, by its ev_ id), its index entries and vectors.

    Example: ee sessions forget SESSION_ID
    """
    forgotten = workspace(ctx).forget_session(ident)
    Output(as_json).emit(forgotten.to_json(), f"forgot {forgotten.evidence} piece(s) of evidence of {ident}")
