"""A scenario's workspace: a real git repository in a temporary folder, built with the same library calls
the CLI makes (``ee init``, ``ee import``, ``ee memory expire|forget``, ``ee outcome``), plus the hand edits a
person makes in an editor. History steps are commits dated with GIT_AUTHOR_DATE / GIT_COMMITTER_DATE."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.eval.scenarios.names import memory_id

if TYPE_CHECKING:
    from ee.eval.scenarios.load import Scenario
    from ee.policy.trust import Actor
    from ee.workspace import Workspace

DEFAULT_AGENT = "eval-agent"
_DATE_VARS = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
_RECORD_KEYS = (
    "body",
    "level",
    "kind",
    "tags",
    "trust",
    "confidence",
    "utility",
    "importance",
    "created",
    "valid_from",
    "valid_to",
    "source",
    "paths",
)


@contextlib.contextmanager
def commit_date(when: str | None) -> Iterator[None]:
    """Commits made inside carry this date (None: now); the environment is restored afterwards."""
    saved = {name: os.environ.get(name) for name in _DATE_VARS}
    try:
        for name in _DATE_VARS:
            if when:
                os.environ[name] = when
            else:
                os.environ.pop(name, None)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build(scenario: Scenario, root: Path) -> tuple[Workspace, dict[str, str]]:
    """Initialise a workspace at ``root`` holding the scenario's memories and history; (workspace, name → id).
    Feedback is recorded separately (:func:`record_feedback`) so checks can run before it."""
    from ee.workspace import Workspace

    data = scenario.data
    ids = {name: memory_id(scenario.id, name) for name in scenario.names}
    date = data.get("date")
    with commit_date(date):
        ws, _ = Workspace.init(root)
        add_memories(ws, data["memories"], ids, date)
    for step in data.get("history", []):
        with commit_date(step["at"]):
            apply_step(ws, step, ids)
    return ws, ids


def add_memories(
    ws: Workspace, memories: list[dict[str, Any]], ids: dict[str, str], date: str | None
) -> None:
    """People's memories in one import, each agent's in another (its commit says so), hand edits last."""
    from ee.ops.transfer import import_jsonl
    from ee.policy.trust import Actor

    groups: dict[str | None, list[dict[str, Any]]] = {}
    for memory in memories:
        if not memory.get("hand_edit"):
            groups.setdefault(agent_of(memory), []).append(memory)
    for agent, group in groups.items():
        lines = [json.dumps(record(m, ids, date)) for m in group]
        import_jsonl(ws, lines, actor=Actor(agent=agent), source_name="scenario")
    for memory in memories:
        if memory.get("hand_edit"):
            hand_write(ws, memory, ids, date)


def agent_of(memory: dict[str, Any]) -> str | None:
    agent = memory.get("agent")
    if agent is True:
        return DEFAULT_AGENT
    return agent or None


def record(memory: dict[str, Any], ids: dict[str, str], date: str | None) -> dict[str, Any]:
    """The ``ee import jsonl`` record of a scenario memory (links by id, created defaulting to ``date``)."""
    out = {key: memory[key] for key in _RECORD_KEYS if key in memory}
    out["id"] = ids[memory["name"]]
    if date and "created" not in out:
        out["created"] = date
    if memory.get("links"):
        out["links"] = [{"type": link["type"], "to": ids[link["to"]]} for link in memory["links"]]
    return out


def hand_write(ws: Workspace, memory: dict[str, Any], ids: dict[str, str], date: str | None) -> None:
    """A file a person wrote in an editor: no secret check on the way in; committed with plain git unless
    ``commit: false`` leaves it in the working tree."""
    from ee.store import frontmatter
    from ee.store.fields import build_fields, parse_link

    rec = record(memory, ids, date)
    agent = agent_of(memory)
    fields = build_fields(
        memory_id=rec["id"],
        level=rec.get("level", "semantic"),
        kind=rec.get("kind", "fact"),
        tags=rec.get("tags", []),
        trust=rec.get("trust") or ("agent_assertion" if agent else "human_explicit"),
        confidence=rec.get("confidence"),
        source=rec.get("source", []),
        valid_from=rec.get("valid_from"),
        valid_to=rec.get("valid_to"),
        links=[parse_link(f"{x['type']}:{x['to']}") for x in rec.get("links", [])],
        paths=rec.get("paths", []),
        created=rec.get("created"),
        utility=rec.get("utility", 0.5),
        importance=rec.get("importance", 0.5),
    )
    rel = f"memories/{memory['name']}.md"
    ws.store.write(rel, frontmatter.render_new(fields, memory["body"].strip()))
    if memory.get("commit", True):
        with ws.lock():
            ws.git.commit_paths([rel], f"Edit {rel} by hand\n")


def apply_step(ws: Workspace, step: dict[str, Any], ids: dict[str, str]) -> None:
    from ee.policy.trust import Actor

    actor = Actor()
    if "add" in step:
        add_memories(ws, step["add"], ids, step["at"])
    elif "forget" in step:
        ws.forget(ids[step["forget"]], actor=actor)
    elif "expire" in step:
        ws.expire(ids[step["expire"]], step["at"], actor=actor)
    else:
        hand_edit(ws, ids[step["edit"]], step.get("body"), step.get("set") or {})


def hand_edit(ws: Workspace, target: str, body: str | None, changes: dict[str, Any]) -> None:
    """Change a memory's body and/or frontmatter keys as an editor would (round-trip), then commit it."""
    from ee.store import frontmatter

    memory = ws.get(target)
    text = frontmatter.decode(ws.store.read_bytes(memory.path), memory.path)
    if changes:
        text = frontmatter.update(text, changes, memory.path)
    if body is not None:
        _fm, _old, body_line = frontmatter.split(text)
        head = "".join(text.splitlines(keepends=True)[: body_line - 1])
        text = head + body.strip() + "\n"
    frontmatter.parse(text, memory.path)  # an edit that does not read back is the scenario's mistake
    with ws.lock():
        ws.store.write(memory.path, text)
        ws.git.commit_paths([memory.path], f"Edit {memory.path} by hand\n")


def record_feedback(ws: Workspace, events: list[dict[str, Any]], ids: dict[str, str]) -> None:
    """``ee outcome`` for each event, in order (the events are dated now, as a live agent's would be)."""
    from ee.ops.feedback import record_outcome

    for event in events:
        record_outcome(ws, ids[event["memory"]], event["signal"], event.get("reason"), _actor(event))


def _actor(event: dict[str, Any]) -> Actor:
    from ee.policy.trust import Actor

    return Actor(agent=event.get("agent"))
