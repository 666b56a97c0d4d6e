"""``ee curate …``: the review queue. Agents may list, show and propose; only a person decides."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ee.cli import Output, json_option, workspace
from ee.cli.options import declared
from ee.curate.model import TYPES

AGENT_OPTION = click.option(
    "--agent", default=None, help="Act as this agent (default: $EE_AGENT, else human)."
)


@click.group("curate")
def curate_group() -> None:
    """Review what ee proposes: duplicates, contradictions, stale memories, agents' writes, docs."""


@curate_group.command("list")
@declared("curate_list", "type")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, kind: str | None, as_json: bool | None) -> None:
    """The candidates waiting for review (from the last scan, agents and sessions).

    Example: ee curate list --type duplicate --human
    """
    from ee.curate.queue import list_data, pending
    from ee.render.curate_text import queue_human

    candidates, degraded = pending(workspace(ctx), kind)
    queue = list_data(candidates)
    Output(as_json).emit(queue.to_json(), lambda: queue_human(queue), degraded)


@curate_group.command("show")
@declared("curate_show", "candidate_id")
@declared("curate_show", "action")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, candidate_id: str, action: str | None, as_json: bool | None) -> None:
    """A candidate's evidence, and exactly what accepting it would change (a diff).

    Example: ee curate show CANDIDATE_ID --human
    """
    from ee.curate.queue import show
    from ee.render.curate_text import candidate_human

    review = show(workspace(ctx), candidate_id, action)
    Output(as_json).emit(review.to_json(), lambda: candidate_human(review))


def _bulk(candidate_id: str | None, all_: bool, kind: str | None) -> None:
    from ee.errors import UsageError

    if all_ and not kind:
        raise UsageError("--all needs --type", "say which type: --all --type duplicate")
    if all_ and candidate_id:
        raise UsageError("give a candidate id or --all --type T, not both", "drop one")
    if not all_ and not candidate_id:
        raise UsageError("name a candidate", "ee curate list shows their ids (or use --all --type T)")


@curate_group.command("accept")
@click.argument("candidate_id", required=False)
@click.option("--action", help="Carry out this action instead of the candidate's default.")
@click.option("--edit", is_flag=True, help="Open the file it writes in $EDITOR before committing.")
@click.option("--all", "all_", is_flag=True, help="Accept every pending candidate of --type.")
@click.option("--type", "kind", type=click.Choice(TYPES), help="With --all: the type to accept.")
@AGENT_OPTION
@json_option
@click.pass_context
def accept_cmd(
    ctx: click.Context,
    candidate_id: str | None,
    action: str | None,
    edit: bool,
    all_: bool,
    kind: str | None,
    agent: str | None,
    as_json: bool | None,
) -> None:
    """Carry out a candidate: one commit with the change and the decision (a person only).

    Example: ee curate accept CANDIDATE_ID
    """
    from ee.curate.queue import accept, decide_all
    from ee.policy.trust import Actor
    from ee.render.curate_text import decided_human

    actor = Actor.from_env(agent)
    _bulk(candidate_id, all_, kind)
    ws = workspace(ctx)
    if all_ and kind:
        data = decide_all(ws, "accept", kind, actor)
    else:
        editor = _editor if edit else None
        data = accept(ws, str(candidate_id), actor, action, editor)
    Output(as_json).emit(data, lambda: decided_human(data), ws.branch_notes())


def _editor(text: str) -> str | None:
    return click.edit(text, extension=".md", require_save=True)


@curate_group.command("reject")
@click.argument("candidate_id", required=False)
@click.option("--reason", help="Why (stored with the decision, shared with the team).")
@click.option("--all", "all_", is_flag=True, help="Reject every pending candidate of --type.")
@click.option("--type", "kind", type=click.Choice(TYPES), help="With --all: the type to reject.")
@AGENT_OPTION
@json_option
@click.pass_context
def reject_cmd(
    ctx: click.Context,
    candidate_id: str | None,
    reason: str | None,
    all_: bool,
    kind: str | None,
    agent: str | None,
    as_json: bool | None,
) -> None:
    """Reject a candidate: it is never proposed again for the same subjects, in any clone.

    Example: ee curate reject CANDIDATE_ID --reason "both are needed"
    """
    from ee.curate.queue import decide_all, reject
    from ee.policy.trust import Actor
    from ee.render.curate_text import decided_human

    actor = Actor.from_env(agent)
    _bulk(candidate_id, all_, kind)
    ws = workspace(ctx)
    if all_ and kind:
        data = decide_all(ws, "reject", kind, actor, reason)
    else:
        data = reject(ws, str(candidate_id), reason, actor)
    Output(as_json).emit(data, lambda: decided_human(data), ws.branch_notes())


@curate_group.command("snooze")
@click.argument("candidate_id")
@click.option("--until", required=True, help="When it comes back: a duration (7d, 12h) or RFC 3339 time.")
@AGENT_OPTION
@json_option
@click.pass_context
def snooze_cmd(
    ctx: click.Context, candidate_id: str, until: str, agent: str | None, as_json: bool | None
) -> None:
    """Hide a candidate until a time; then it is pending again.

    Example: ee curate snooze CANDIDATE_ID --until 7d
    """
    from ee.curate.queue import snooze
    from ee.policy.trust import Actor
    from ee.render.curate_text import decided_human

    ws = workspace(ctx)
    data = snooze(ws, candidate_id, until, Actor.from_env(agent))
    Output(as_json).emit(data, lambda: decided_human(data), ws.branch_notes())


@curate_group.command("scan")
@declared("curate_scan", "docs")
@json_option
@click.pass_context
def scan_cmd(ctx: click.Context, docs: bool, as_json: bool | None) -> None:
    """Look for duplicates, contradictions, stale and unused memories, and agents' writes to review.

    Example: ee curate scan --docs
    """
    from ee.curate.scan import scan
    from ee.render.curate_text import scan_human

    report, degraded = scan(workspace(ctx), docs=docs)
    Output(as_json).emit(report.to_json(), lambda: scan_human(report), degraded)


@curate_group.command("propose")
@declared("curate_propose", "candidates")
@declared("curate_propose", "agent")
@json_option
@click.pass_context
def propose_cmd(ctx: click.Context, file: str, agent: str | None, as_json: bool | None) -> None:
    """Propose candidates for a person to review (type, subjects, title, reason, new_memory, …).

    Example: ee curate propose --candidates candidates.json --agent codex
    """
    from ee.curate.queue import list_data, propose_documents
    from ee.policy.trust import Actor
    from ee.render.curate_text import proposed_human

    raw = _read_json(file)
    candidates = propose_documents(workspace(ctx), raw, Actor.from_env(agent))
    queue = list_data(candidates)
    Output(as_json).emit(queue.to_json(), lambda: proposed_human(queue))


def _read_json(file: str) -> Any:
    from ee.errors import UsageError

    try:
        if file == "-":
            return json.load(sys.stdin)
        with open(file, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(
            f"{file}: not a JSON candidate list: {exc}", "see schemas/ee.curate.v1.json"
        ) from None
