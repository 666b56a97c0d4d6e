"""``ee memory …``: one memory at a time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ee.cli import Output, call, json_option, workspace
from ee.cli.options import declared
from ee.errors import UsageError
from ee.policy.trust import TRUST_CLASSES
from ee.render.text import history_lines, memory_block, memory_line

if TYPE_CHECKING:
    from ee.results.memory import MemoryView


@click.group("memory")
def memory_group() -> None:
    """Show, list and edit single memories."""


@memory_group.command("show")
@declared("memory_show", "memory_id")
@declared("memory_show", "as_of")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, memory_id: str, as_of: str | None, as_json: bool | None) -> None:
    """Show MEMORY_ID: its fields and body.

    Example: ee memory show ID --as-of HEAD~5
    """
    memory = call(ctx, "memory_show", memory_id=memory_id, as_of=as_of)

    def human() -> str:
        if memory.as_of is None:
            return memory_block(memory)
        commit = memory.as_of
        return f"as of {commit['commit'][:10]} ({commit['date']})\n" + memory_block(memory)

    Output(as_json).emit(memory.to_json(), human)


@memory_group.command("list")
@declared("memory_list", "level")
@declared("memory_list", "kind")
@declared("memory_list", "tags")
@declared("memory_list", "limit")
@declared("memory_list", "agent")
@declared("memory_list", "trust")
@declared("memory_list", "since")
@declared("memory_list", "quarantined")
@json_option
@click.pass_context
def list_cmd(
    ctx: click.Context,
    level: str | None,
    kind: str | None,
    tags: tuple[str, ...],
    limit: int | None,
    agent: str | None,
    trust: str | None,
    since: str | None,
    quarantined: bool,
    as_json: bool | None,
) -> None:
    """List memories (sorted by id), with trust, writer, created and quarantine; with filters.

    Example: ee memory list --kind rule --tag ci --human
    """
    listed = call(
        ctx,
        "memory_list",
        level=level,
        kind=kind,
        tags=list(tags),
        limit=limit,
        agent=agent,
        trust=trust,
        since=since,
        quarantined=quarantined,
    )

    def line(memory: MemoryView) -> str:
        flag = "  [conflict: ee memory resolve]" if memory.conflict else ""
        flag += "  [QUARANTINED]" if memory.quarantined else ""
        standing = f"{memory.trust}, by {memory.writer}, {(memory.file_created or '-')[:10]}"
        effective = memory.effective_confidence or 0.0
        return f"{memory_line(memory)}  ({standing}, confidence {effective:.2f}){flag}"

    def human() -> str:
        return "\n".join(map(line, listed.memories)) or "no memories"

    data, degraded = listed.envelope_parts()
    Output(as_json).emit(data, human, degraded)


@memory_group.command("history")
@declared("memory_history", "memory_id")
@json_option
@click.pass_context
def history_cmd(ctx: click.Context, memory_id: str, as_json: bool | None) -> None:
    """Every version of MEMORY_ID: commit, date, actor, message, the fields that changed.

    Example: ee memory history ID --human
    """
    history = call(ctx, "memory_history", memory_id=memory_id)
    Output(as_json).emit(history.to_json(), lambda: history_lines(history.versions))


@memory_group.command("tags")
@click.argument("memory_id")
@click.option("--add", "add", multiple=True, help="Tags to add (comma-separated or repeated).")
@click.option("--remove", "remove", multiple=True, help="Tags to remove.")
@click.option("--agent", default=None, help="Act as this agent.")
@json_option
@click.pass_context
def tags_cmd(
    ctx: click.Context,
    memory_id: str,
    add: tuple[str, ...],
    remove: tuple[str, ...],
    agent: str | None,
    as_json: bool | None,
) -> None:
    """Add or remove tags of MEMORY_ID (one commit; the file's layout is kept).

    Example: ee memory tags ID --add ci --remove draft
    """
    from ee.policy.trust import Actor

    if not add and not remove:
        raise UsageError("nothing to change", "pass --add TAG and/or --remove TAG")
    ws = workspace(ctx)
    memory = ws.edit_tags(memory_id, add, remove, Actor.from_env(agent))
    Output(as_json).emit(
        memory.to_dict(), f"{memory.id} tags: {', '.join(memory.tags) or '-'}", ws.branch_notes()
    )


@memory_group.command("trust")
@click.argument("memory_id")
@click.option(
    "--class",
    "cls",
    required=True,
    type=click.Choice(TRUST_CLASSES),
    help="The trust class you give MEMORY_ID after reviewing it (peer_human_attested: you confirm "
    "an agent's memory).",
)
@json_option
@click.pass_context
def trust_cmd(ctx: click.Context, memory_id: str, cls: str, as_json: bool | None) -> None:
    """Review MEMORY_ID and set its trust class (a person only; refused with EE_AGENT set).

    The only way a memory an agent wrote rises above agent_assertion or leaves quarantine: one commit
    with the trailers Ee-Op: trust and Ee-Trust: CLASS. Editing tags or the file is no review.

    Example: ee memory trust ID --class human_explicit
    """
    from ee.policy.trust import Actor

    ws = workspace(ctx)
    memory = ws.review_trust(memory_id, cls, Actor.from_env())
    Output(as_json).emit(memory.to_dict(), f"{memory.id} trust: {memory.trust} (reviewed)", ws.branch_notes())


@memory_group.command("link")
@click.argument("memory_id")
@click.argument("target")
@click.option(
    "--type",
    "link_type",
    default="related",
    show_default=True,
    type=click.Choice(
        ["supports", "contradicts", "derived_from", "supersedes", "related", "co_tag", "co_mention"]
    ),
    help="The kind of link.",
)
@click.option("--agent", default=None, help="Act as this agent.")
@json_option
@click.pass_context
def link_cmd(
    ctx: click.Context, memory_id: str, target: str, link_type: str, agent: str | None, as_json: bool | None
) -> None:
    """Link MEMORY_ID to TARGET with a typed link.

    Example: ee memory link ID OTHER_ID --type supports
    """
    from ee.policy.trust import Actor

    ws = workspace(ctx)
    memory = ws.link(memory_id, target, link_type, Actor.from_env(agent))
    Output(as_json).emit(memory.to_dict(), f"{memory.id} --{link_type}--> {target}", ws.branch_notes())


@memory_group.command("expire")
@click.argument("memory_id")
@click.option("--at", "at", metavar="TIME", help="When validity ends (default: now).")
@click.option("--agent", default=None, help="Act as this agent.")
@json_option
@click.pass_context
def expire_cmd(
    ctx: click.Context, memory_id: str, at: str | None, agent: str | None, as_json: bool | None
) -> None:
    """End MEMORY_ID's validity (sets valid_to; the memory stays in the store and in history).

    Example: ee memory expire ID --at 2027-01-01T00:00:00Z
    """
    from ee.policy.trust import Actor

    ws = workspace(ctx)
    memory = ws.expire(memory_id, at, Actor.from_env(agent))
    Output(as_json).emit(memory.to_dict(), f"{memory.id} valid until {memory.valid_to}", ws.branch_notes())


@memory_group.command("forget")
@click.argument("memory_id")
@click.option("--agent", default=None, help="Act as this agent.")
@json_option
@click.pass_context
def forget_cmd(ctx: click.Context, memory_id: str, agent: str | None, as_json: bool | None) -> None:
    """Delete MEMORY_ID's file in a commit (`ee memory history` still shows every version).

    Example: ee memory forget ID
    """
    from ee.policy.trust import Actor

    ws = workspace(ctx)
    memory = ws.forget(memory_id, Actor.from_env(agent))
    Output(as_json).emit(
        {"id": memory.id, "path": memory.path, "forgotten": True},
        f"forgot {memory.id} ({memory.path})",
        ws.branch_notes(),
    )


@memory_group.command("resolve")
@click.argument("memory_id")
@click.option(
    "--pick",
    metavar="local|remote|both|COMMIT|AUTHOR",
    help="Keep this clone's version (local), the other one (remote), all of them (both), or the one of "
    "a commit or an author shown in the labels.",
)
@click.option(
    "--text",
    "text_file",
    metavar="FILE",
    type=click.File("r", encoding="utf-8"),
    help="Use the text in FILE ('-' for stdin) as the body.",
)
@click.option("--agent", default=None, help="Act as this agent.")
@json_option
@click.pass_context
def resolve_cmd(
    ctx: click.Context,
    memory_id: str,
    pick: str | None,
    text_file: Any,
    agent: str | None,
    as_json: bool | None,
) -> None:
    """Settle MEMORY_ID after a merge kept several versions of its text (one commit).

    "local" is the version committed in this clone, whether the merge was a rebase or not.
    Without --pick or --text: lists the versions.

    Example: ee memory resolve ID --pick local
    """
    from ee.policy.trust import Actor

    try:
        text = text_file.read() if text_file is not None else None
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"--text {text_file.name}: not UTF-8 text ({exc.reason} at byte {exc.start})",
            "save the new body as UTF-8 text",
        ) from None
    ws = workspace(ctx)
    memory, commit = ws.resolve(memory_id, pick, text, Actor.from_env(agent))
    Output(as_json).emit(
        {"memory": memory.to_dict(), "commit": commit},
        f"resolved {memory.id} ({commit[:10]})",
        ws.branch_notes(),
    )
