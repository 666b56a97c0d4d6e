"""``ee remember``: one new memory, one file, one commit (declared without click: see ee.cli.params)."""

from __future__ import annotations

import sys

from ee.cli import Output, open_workspace
from ee.cli.params import JSON_OPTION, Argument, Command, Option

LEVELS = ["working", "episodic", "semantic", "procedural"]


def remember_cmd(
    root: str | None,
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
    """Remember TEXT as a new memory (one file, one commit). TEXT '-' reads standard input."""
    from ee.workspace import Actor

    if text == "-":
        text = sys.stdin.read()
    memory = open_workspace(root).remember(
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
    Output(as_json).emit(memory.to_dict(), f"remembered {memory.id}  ({memory.path})")


REMEMBER = Command(
    "remember",
    remember_cmd,
    [
        Argument("text"),
        Option("--level", default="semantic", show_default=True, choices=LEVELS, help="Memory level."),
        Option("--kind", default="fact", show_default=True, help="rule, fact, decision, failure, command, …"),
        Option("--tags", default="", help="Comma-separated tags, e.g. ci,rust."),
        Option(
            "--confidence", type=float, min=0, max=1, help="Prior confidence (default by trust: 0.85 / 0.5)."
        ),
        Option("--source", multiple=True, metavar="URI", help="Provenance URI (repeatable)."),
        Option("--valid-from", metavar="TIME", help="Start of validity (RFC 3339)."),
        Option("--valid-to", metavar="TIME", help="End of validity (RFC 3339)."),
        Option(
            "--link", "links", multiple=True, metavar="TYPE:ID", help="Link to another memory (repeatable)."
        ),
        Option(
            "--path",
            "paths",
            multiple=True,
            metavar="GLOB",
            help="Code path this memory is about (repeatable).",
        ),
        Option("--agent", default=None, help="Write as this agent (default: $EE_AGENT; otherwise a human)."),
        Option("--redact", is_flag=True, help="Store secrets as [REDACTED:<class>] instead of refusing."),
        JSON_OPTION,
    ],
)
COMMANDS = {"remember": REMEMBER}
