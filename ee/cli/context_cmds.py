"""``ee context`` and ``ee pack``: token-budgeted context packs for agents."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ee.cli import call, json_option, workspace
from ee.cli.options import declared
from ee.cli.query_cmds import (
    check_explain,
    emit,
    output_format,
    read_query_file,
)
from ee.errors import QueryError, UsageError
from ee.values import FORMATS

# The options ``ee context`` and ``ee pack`` share (on ``pack`` they override the document).
PACK_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    declared("context", "max_tokens"),
    declared("context", "profile"),
    declared("context", "quota"),
    declared("context", "fields"),
    declared("context", "explain"),
    declared("context", "as_of"),
    click.option(
        "--format", "fmt", type=click.Choice(FORMATS), help="Output format (default: json when piped)."
    ),
    declared("context", "min_relevance"),
    json_option,
]


def pack_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """:data:`PACK_OPTIONS` on a command, in that order."""
    for option in reversed(PACK_OPTIONS):
        func = option(func)
    return func


@click.command("context")
@declared("context", "task")
@pack_options
@declared("context", "mode")
@declared("context", "speed")
@declared("context", "tags")
@declared("context", "query")
@declared("context", "for_staged")
@declared("context", "for_paths")
@declared("context", "for_branch")
@declared("context", "for_session")
@click.pass_context
def context_cmd(
    ctx: click.Context,
    task: tuple[str, ...],
    max_tokens: int | None,
    profile: str | None,
    quotas: tuple[str, ...],
    fields: str | None,
    explain: bool | None,
    as_of: str | None,
    fmt: str | None,
    min_relevance: float | None,
    as_json: bool | None,
    mode: str | None,
    speed: str | None,
    tags: tuple[str, ...],
    query_file: str | None,
    for_staged: bool,
    for_paths: bool,
    for_branch: bool,
    for_session: bool,
) -> int:
    """The memories that matter for TASK, as a token-budgeted pack to paste into a prompt.

    TASK '-' reads the task from stdin (an agent hook's JSON input: its "prompt"). With --format hook an
    error prints an empty context and exits 0, so an agent harness never blocks on ee.

    Example: ee context "fix the flaky upload test" --max-tokens 1200 --format markdown
    """
    from ee.hooks.agents import never_block
    from ee.hooks.tasks import task_query
    from ee.query.document import with_options

    def pack() -> int:
        if query_file:
            if task or for_staged or for_paths or for_branch or for_session:
                raise QueryError(
                    "give TASK or --query-file, not both", "put the task in the document's query.text"
                )
            query, floor = read_query_file(query_file), min_relevance
        else:
            query, floor = task_query(
                workspace(ctx).root if for_session or for_staged or for_paths else None,
                task,
                min_relevance,
                for_staged=for_staged,
                for_paths=for_paths,
                for_branch=for_branch,
                for_session=for_session,
            )
        query = with_options(query, mode=mode, tags=list(tags), speed=speed)
        return run_pack(ctx, query, max_tokens, profile, quotas, fields, explain, as_of, fmt, floor, as_json)

    return never_block(fmt, pack)


@click.command("pack")
@click.option(
    "--query-file",
    required=True,
    metavar="FILE",
    type=click.Path(allow_dash=True),
    help="An ee.query.v1 document ('-' reads stdin).",
)
@pack_options
@click.pass_context
def pack_cmd(
    ctx: click.Context,
    query_file: str,
    max_tokens: int | None,
    profile: str | None,
    quotas: tuple[str, ...],
    fields: str | None,
    explain: bool | None,
    as_of: str | None,
    fmt: str | None,
    min_relevance: float | None,
    as_json: bool | None,
) -> int:
    """A context pack for an ee.query.v1 document (options given here override the document).

    Example: ee pack --query-file query.json --format markdown
    """
    query = read_query_file(query_file)
    return run_pack(
        ctx, query, max_tokens, profile, quotas, fields, explain, as_of, fmt, min_relevance, as_json
    )


def run_pack(
    ctx: click.Context,
    query: Any,
    max_tokens: int | None,
    profile: str | None,
    quotas: tuple[str, ...],
    fields: str | None,
    explain: bool | None,
    as_of: str | None,
    fmt: str | None,
    min_relevance: float | None,
    as_json: bool | None,
) -> int:
    from ee.query.document import with_options

    overrides = parse_quotas(quotas)
    if overrides and profile not in (None, "custom"):
        raise UsageError(
            f"--quota applies to the custom profile, not {profile}", "drop --profile or use custom"
        )
    query = with_options(
        query,
        max_tokens=max_tokens,
        profile="custom" if overrides else profile,
        fields=fields,
        explain=True if explain else None,
        as_of=as_of,
    )
    chosen = output_format(fmt, as_json, query)
    check_explain(query, chosen, "context")
    pack = call(
        ctx,
        "context",
        query=query.doc,
        query_notes=list(query.notes),
        quotas=overrides or None,
        min_relevance=min_relevance,
    )
    emit(pack, chosen)
    return 0


def parse_quotas(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``procedural=0.5`` → {"procedural": 0.5}; values read as TOML (numbers, true/false), else as text.
    (tomllib, with the ``string`` module it loads, is imported only when there are pairs: most packs
    give none, and a served ``ee context`` is mostly imports.)"""
    out: dict[str, Any] = {}
    if not pairs:
        return out
    import tomllib

    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--quota {pair!r} is not KEY=VALUE", "write e.g. --quota procedural=0.5")
        try:
            value = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw.strip()
        out[key.strip()] = value
    return out
