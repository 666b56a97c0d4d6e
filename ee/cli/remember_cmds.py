"""``ee remember``: one new memory, one file, one commit."""

from __future__ import annotations

import sys

import click

from ee.cli import Output, json_option, workspace

LEVELS = ["working", "episodic", "semantic", "procedural"]


@click.command("remember")
@click.argument("text")
@click.option(
    "--level", default="semantic", show_default=True, type=click.Choice(LEVELS), help="Memory level."
)
@click.option("--kind", default="fact", show_default=True, help="rule, fact, decision, failure, command, …")
@click.option("--tags", default="", help="Comma-separated tags, e.g. ci,rust.")
@click.option(
    "--confidence",
    type=click.FloatRange(min=0, max=1),
    help="Prior confidence (default by trust: 0.85 / 0.5).",
)
@click.option("--source", multiple=True, metavar="URI", help="Provenance URI (repeatable).")
@click.option("--valid-from", metavar="TIME", help="Start of validity (RFC 3339).")
@click.option("--valid-to", metavar="TIME", help="End of validity (RFC 3339).")
@click.option(
    "--link", "links", multiple=True, metavar="TYPE:ID", help="Link to another memory (repeatable)."
)
@click.option(
    "--path", "paths", multiple=True, metavar="GLOB", help="Code path this memory is about (repeatable)."
)
@click.option("--agent", default=None, help="Write as this agent (default: $EE_AGENT; otherwise a human).")
@click.option("--redact", is_flag=True, help="Store secrets as [REDACTED:<class>] instead of refusing.")
@json_option
@click.pass_context
def remember_cmd(
    ctx: click.Context,
    text: str,
    level: str,
    kind: str,
    tags: str,
    confidence: float | None,
    source: tuple[str, ...],
    valid_from: str | None,
    valid_to: str | None,
    links: tuple[str, ...],
    paths: tuple[str, ...],
    agent: str | None,
    redact: bool,
    as_json: bool | None,
) -> None:
    """Remember TEXT as a new memory (one file, one commit). TEXT '-' reads standard input.

    Example: ee remember "Run make test before a release" --kind rule --tags ci,release
    """
    from ee.curate.intake import remember
    from ee.policy.trust import Actor

    if text == "-":
        text = sys.stdin.read()
    ws = workspace(ctx)
    data, degraded = remember(
        ws,
        text,
        level=level,
        kind=kind,
        tags=tags.split(",") if tags else [],
        confidence=confidence,
        source=source,
        valid_from=valid_from,
        valid_to=valid_to,
        links=links,
        paths=paths,
        actor=Actor.from_env(agent),
        redact=redact,
    )
    if "duplicate_of" in data:
        human = f"already remembered as {data['id']}  ({data['path']}): confirmed, no new file"
    else:
        human = f"remembered {data['id']}  ({data['path']})"
    Output(as_json).emit(data, human, [*degraded, *ws.branch_notes()])
