"""``ee remember``: one new memory, one file, one commit."""

from __future__ import annotations

import sys

import click

from ee.cli import Output, json_option, workspace
from ee.cli.options import declared


@click.command("remember")
@declared("remember", "text")
@declared("remember", "level")
@declared("remember", "kind")
@declared("remember", "tags")
@declared("remember", "confidence")
@declared("remember", "source")
@declared("remember", "valid_from")
@declared("remember", "valid_to")
@declared("remember", "links")
@declared("remember", "paths")
@declared("remember", "agent")
@declared("remember", "redact")
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
    done, degraded = remember(
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
    if not done.written:
        human = f"already remembered as {done.id}  ({done.path}): confirmed, no new file"
    else:
        human = f"remembered {done.id}  ({done.path})"
    Output(as_json).emit(done.to_json(), human, [*degraded, *ws.branch_notes()])
