"""A tool call answered by the library: the arguments are checked against the tool's input schema
(:mod:`ee.mcp.mapping`), one method of the workspace façade (:class:`ee.workspace.Workspace`) answers, and
its data goes out in the ee.response.v1 envelope that ``ee <command> --json`` prints for the same call (the
CLI calls the same methods; ``tests/test_mcp.py`` compares the two answers tool by tool).
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ee.errors import EeError, QueryError, UsageError, disk_failure
from ee.mcp.mapping import check_arguments

if TYPE_CHECKING:
    from ee.commands import Command
    from ee.policy.trust import Actor
    from ee.query.document import Query
    from ee.results import Result
    from ee.workspace import Workspace

Answer = tuple[dict[str, Any], list[dict[str, Any]]]  # the data, and the degraded list


@dataclass(frozen=True, slots=True)
class Outcome:
    """A tool's answer: the envelope as text (``text``: on one line, as ``--json`` prints it for a program;
    an agent reads it) and parsed (``document``)."""

    ok: bool
    text: str
    document: dict[str, Any]


def call_tool(tool: Command, arguments: dict[str, Any], workspace: str, agent: str | None = None) -> Outcome:
    """Check the arguments, answer the call, and return its envelope (``ok`` False for ee.error.v1).
    ``agent`` names the writer when the call names none."""
    from ee.render import dumps, envelope
    from ee.workspace import Workspace

    try:
        arguments = plain_query(tool, arguments)
        check_arguments(tool, arguments)
        data, degraded = ANSWERS[tool.name](Workspace.discover(workspace), arguments, agent)
    except EeError as exc:
        return failure(exc.to_dict())
    except Exception as exc:  # a bug in ee: report it as an internal error and keep serving
        if (storage := disk_failure(exc)) is not None:  # (not a bug: a full or read-only disk)
            return failure(storage.to_dict())
        traceback.print_exc(file=sys.stderr)
        return failure(
            {
                "code": "internal",
                "message": f"{type(exc).__name__}: {exc}",
                "repair": "this is a bug in ee: please report it with the server's stderr",
                "details": {"tool": tool.name},
            }
        )
    document = envelope(data, degraded)
    return Outcome(True, dumps(document, indent=None), document)


def plain_query(tool: Command, arguments: dict[str, Any]) -> dict[str, Any]:
    """``{"query": "release checklist"}``: plain words where a tool takes a query document are its text (or
    task), as an agent often sends them; anything else is checked against the schema as it is."""
    words = arguments.get("query")
    document = any(p.name == "query" and p.document for p in tool.params)
    text = next((p.name for p in tool.params if not p.flag), None)
    if not document or not isinstance(words, str) or text is None or text in arguments:
        return arguments
    return {**{k: v for k, v in arguments.items() if k != "query"}, text: words}


def failure(error: dict[str, Any]) -> Outcome:
    from ee.render import dumps, error_envelope

    document = error_envelope(error)
    return Outcome(False, dumps(document, indent=None), document)


# ---------------------------------------------------------------------------------------- the tools


def _search(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.query.document import from_arguments, with_options

    # The arguments shape a plain text, and override a document's settings, as the CLI's options do.
    query = with_options(
        _document(args, "text") or from_arguments(args["text"]),
        mode=args.get("mode"),
        limit=args.get("limit"),
        tags=args.get("tags"),
        level=args.get("level"),
        kind=args.get("kind"),
        as_of=args.get("as_of"),
        explain=True if args.get("explain") else None,
        fields=args.get("fields"),
        speed=args.get("speed"),
    )
    return _split(ws.search(query, args.get("min_relevance")))


def _context(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.hooks.tasks import task_query
    from ee.query.document import with_options

    quotas, profile = args.get("quota") or None, args.get("profile")
    if quotas and profile not in (None, "custom"):
        raise UsageError(f"quota applies to the custom profile, not {profile}", "drop profile or use custom")
    sources = {
        name: bool(args.get(name)) for name in ("for_staged", "for_paths", "for_branch", "for_session")
    }
    floor = args.get("min_relevance")
    if any(sources.values()) and "query" not in args:
        # (the task's words: paths for for_paths, one task otherwise; a for_* source takes none)
        task = args.get("task", "")
        words = task.split() if sources["for_paths"] else [task] if task else []
        query, floor = task_query(ws.root, words, floor, **sources)
    else:
        query = _document(args, "task") or task_query(ws.root, [args["task"]], floor)[0]
    query = with_options(
        query,
        mode=args.get("mode"),
        tags=args.get("tags"),
        speed=args.get("speed"),
        max_tokens=args.get("max_tokens"),
        profile="custom" if quotas else profile,
        fields=args.get("fields"),
        explain=True if args.get("explain") else None,
        as_of=args.get("as_of"),
    )
    return _split(ws.context(query, quotas, floor))


def _remember(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.curate.intake import remember

    done, degraded = remember(
        ws,
        args["text"],
        level=args.get("level", "semantic"),
        kind=args.get("kind", "fact"),
        tags=args.get("tags", ()),
        confidence=args.get("confidence"),
        source=args.get("source", ()),
        valid_from=args.get("valid_from"),
        valid_to=args.get("valid_to"),
        links=args.get("links", ()),
        paths=args.get("paths", ()),
        actor=_actor(args, agent),
        redact=bool(args.get("redact")),
    )
    return done.to_json(), [*degraded, *ws.branch_notes()]


def _outcome(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    report = ws.outcome(args["memory_id"], args["signal"], args.get("reason"), _actor(args, agent))
    return report.to_json(), ws.branch_notes()


def _why(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    data = ws.why(args["memory_id"], args.get("query"), as_of=args.get("as_of"), profile=args.get("profile"))
    return _split(data)


def _memory_show(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    return _split(ws.memory_show(args["memory_id"], args.get("as_of")))


def _memory_list(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    listed = ws.memory_list(
        level=args.get("level"),
        kind=args.get("kind"),
        tags=args.get("tags", ()),
        limit=args.get("limit"),
        agent=args.get("agent"),
        trust=args.get("trust"),
        since=args.get("since"),
        quarantined=bool(args.get("quarantined")),
    )
    return _split(listed)


def _memory_history(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    return _split(ws.memory_history(args["memory_id"]))


def _curate_list(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.curate.queue import list_data, pending

    candidates, degraded = pending(ws, args.get("type"))
    return list_data(candidates).to_json(), degraded


def _curate_show(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.curate.queue import show

    return show(ws, args["candidate_id"], args.get("action")).to_json(), []


def _curate_propose(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.curate.queue import list_data, propose_documents

    return list_data(propose_documents(ws, args["candidates"], _actor(args, agent))).to_json(), []


def _curate_scan(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    from ee.curate.scan import scan

    report, degraded = scan(ws, docs=bool(args.get("docs")))
    return report.to_json(), list(degraded)


def _import_docs(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    """Proposals only (nothing is written to the store); a relative path is the repository's, not the
    server's current folder."""
    from ee.curate.docs import import_docs

    return import_docs(ws, args["files"], base=ws.root), []


def _curate_decide(ws: Workspace, args: dict[str, Any], agent: str | None) -> Answer:
    """Over MCP the caller is an agent, named or not: only a person decides (ee curate accept …)."""
    from ee.curate.queue import refuse_agent
    from ee.policy.trust import Actor

    refuse_agent(Actor(agent or "mcp-client"), "decide")
    raise AssertionError("refuse_agent returned for an agent")  # pragma: no cover


ANSWERS: dict[str, Callable[[Workspace, dict[str, Any], str | None], Answer]] = {
    "context": _context,
    "search": _search,
    "remember": _remember,
    "outcome": _outcome,
    "why": _why,
    "memory_show": _memory_show,
    "memory_list": _memory_list,
    "memory_history": _memory_history,
    "curate_list": _curate_list,
    "curate_show": _curate_show,
    "curate_propose": _curate_propose,
    "curate_scan": _curate_scan,
    "import_docs": _import_docs,
    "curate_accept": _curate_decide,
    "curate_reject": _curate_decide,
    "curate_snooze": _curate_decide,
}


def _document(args: dict[str, Any], text_param: str) -> Query | None:
    """The call's ee.query.v1 document (validated as ``--query-file`` validates one), or None."""
    from ee.query.document import parse_document

    if "query" not in args:
        if text_param not in args:
            raise QueryError(f"nothing to look for: give {text_param} or query", f"pass {text_param}")
        return None
    if text_param in args:
        raise QueryError(
            f"give {text_param} or query, not both", f"put the {text_param} in the document's query.text"
        )
    return parse_document(json.dumps(args["query"], ensure_ascii=False), "query")


def _actor(args: dict[str, Any], agent: str | None) -> Actor:
    from ee.policy.trust import Actor

    return Actor.from_env(args.get("agent") or agent)


def _split(result: Result) -> Answer:
    return result.envelope_parts()
