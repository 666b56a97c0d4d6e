"""``ee why`` and ``ee outcome``: how a memory stands and why, and the feedback that moves it."""

from __future__ import annotations

import click

from ee.cli import Output, call, json_option, workspace
from ee.cli.options import declared


@click.command("why")
@declared("why", "memory_id")
@declared("why", "query")
@declared("why", "profile")
@declared("why", "as_of")
@json_option
@click.pass_context
def why_cmd(
    ctx: click.Context,
    memory_id: str,
    query_text: str | None,
    profile: str | None,
    as_of: str | None,
    as_json: bool | None,
) -> None:
    """Why MEMORY_ID ranks where it does: standing, feedback, links, validity, history, --query rank.

    Example: ee why ID --query "how do we release"
    """
    from ee.render.pack_text import why_human

    if profile and not query_text:  # (as Workspace.why says it, before any server is asked)
        from ee.errors import UsageError

        raise UsageError("a profile says which pack the query is checked against", "give a query too")
    result = call(ctx, "why", memory_id=memory_id, query_text=query_text, as_of=as_of, profile=profile)
    data, degraded = result.envelope_parts()
    Output(as_json).emit(data, lambda: why_human(result), degraded)


@click.command("outcome")
@declared("outcome", "memory_id")
@declared("outcome", "signal")
@declared("outcome", "reason")
@declared("outcome", "agent")
@json_option
@click.pass_context
def outcome_cmd(
    ctx: click.Context,
    memory_id: str,
    signal: str,
    reason: str | None,
    agent: str | None,
    as_json: bool | None,
) -> None:
    """Record that MEMORY_ID helped or hurt: an append-only feedback event, committed on its own.

    Example: ee outcome ID --signal helpful --reason "the checklist was right"
    """
    from ee.policy.trust import Actor
    from ee.render.pack_text import outcome_human

    ws = workspace(ctx)
    report = ws.outcome(memory_id, signal, reason, Actor.from_env(agent))
    Output(as_json).emit(report.to_json(), lambda: outcome_human(report), ws.branch_notes())
