"""``ee outcome``: record that a memory helped or hurt, as an append-only feedback event in the repository.

The event (ee.policy.feedback.new_event, source = the actor's label) is appended to
``memories/.events/<id>.jsonl`` under the workspace lock and committed alone (trailers ``Ee-Op: outcome``,
``Ee-Memory``, ``Ee-Actor``). The memory file is never touched: its ``confidence`` stays the prior, and the
effective confidence is derived from prior + events wherever it is shown (``ee why``, search factors,
``ee memory list`` through :func:`effective_confidences`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.policy.trust import Actor
    from ee.workspace import Workspace


def record_outcome(
    ws: Workspace, memory_id: str, signal: str, reason: str | None = None, actor: Actor | None = None
) -> dict[str, Any]:
    """Append and commit one event; report the effective confidence before and after, and whether the burst
    rule held the new event back."""
    from ee.git.repo import format_message
    from ee.policy.feedback import NEGATIVE_SIGNALS, new_event, validate_signal
    from ee.policy.secrets import check_reason
    from ee.policy.trust import Actor
    from ee.store.feedback import append_event
    from ee.store.ids import new_ulid, utcnow

    validate_signal(signal)
    actor = actor or Actor.from_env()
    reason = check_reason(reason)
    if signal in NEGATIVE_SIGNALS:  # a complaint demotes: an agent's may not sink a person's memory
        ws.may_change(actor, ws.get(memory_id), "outcome", {"signal": signal, "reason": reason})
    with ws.lock():
        memory = ws.get(memory_id)
        event = new_event(
            event_id=f"evt_{new_ulid()}",
            memory=memory.id,
            signal=signal,
            at=utcnow(),
            source=actor.label,
            reason=reason,
        )
        path = ws.root / f"memories/.events/{memory.id}.jsonl"
        size = path.stat().st_size if path.exists() else None
        rel = append_event(ws.root, event)
        try:
            commit = ws.git.commit_paths(
                [rel],
                format_message(
                    f"ee: outcome {signal} for {memory.title}",
                    {"Ee-Op": "outcome", "Ee-Memory": memory.id, "Ee-Actor": actor.label},
                ),
            )
        except BaseException:
            _undo_append(path, size)  # a failed outcome leaves nothing behind
            raise
    return _report(ws, memory, event, rel, commit)


def _undo_append(path: Any, size: int | None) -> None:
    if size is None:
        path.unlink(missing_ok=True)
        return
    from ee.config import open_regular

    with open(open_regular(path, os.O_RDWR), "r+b") as handle:
        handle.truncate(size)
        os.fsync(handle.fileno())


def _report(ws: Workspace, memory: Any, event: dict[str, Any], rel: str, commit: str) -> dict[str, Any]:
    from ee.policy.feedback import effective_confidence
    from ee.policy.secrets import mask_memory
    from ee.query.standing import feedback_cutoff
    from ee.store.ids import utcnow

    shown = mask_memory(memory)  # (the report quotes its title and path: a hand-typed secret masked)
    now = feedback_cutoff(utcnow())  # as every ranking counts feedback: up to the end of today
    prior, events = _prior_and_events(ws, memory)
    after = effective_confidence(prior, events, now)
    before = effective_confidence(prior, [e for e in events if e.get("id") != event["id"]], now)
    held = event["id"] in after.held_back
    out: dict[str, Any] = {
        "event": event,
        "events_file": rel,
        "commit": commit,
        "memory": {"id": shown.id, "title": shown.title, "path": shown.path},
        "prior_confidence": round(prior, 4),
        "effective_confidence": {"before": round(before.effective, 4), "after": round(after.effective, 4)},
        "applied": event["id"] in after.applied,
        "held_back": held,
        "feedback": {
            "helpful": after.helpful,
            "harmful": after.harmful,
            "stale": after.stale,
            "held_back": len(after.held_back),
            "notes": list(after.notes),
        },
    }
    if held:
        out["message"] = (
            f"held back by the burst rule: more than 3 negative events from {event['source']} "
            "within an hour; recorded, not applied"
        )
    return out


def _prior_and_events(ws: Workspace, memory: Any) -> tuple[float, list[dict[str, Any]]]:
    """The prior and events as the index sees them (trust of a file without one comes from its committer),
    so ``outcome`` reports what ``why`` and ``search`` will show."""
    from ee.index.provenance import writer_of
    from ee.index.view import open_index
    from ee.query.standing import resolve_trust

    view = open_index(ws)
    events: list[dict[str, Any]] = view.state.get("events", {}).get(memory.id, [])
    pos = view.gen.position(memory.id)
    if pos is None:
        return prior_of(memory.confidence, memory.trust), events
    record = view.gen.records[pos]
    cls = resolve_trust(record, writer_of(view.state, record["path"], record["id"]))
    return prior_of(record.get("confidence"), cls), events


def prior_of(confidence: float | None, cls: str | None) -> float:
    from ee.policy import trust

    return float(confidence) if confidence is not None else trust.initial_confidence(cls or "human_explicit")


def effective_confidences(ws: Workspace, memories: list[Any]) -> dict[str, float]:
    """Effective confidence of each of ``memories`` (ee.model.Memory), read straight from the events files
    (no index), for ``ee memory list``. A memory without a trust key is taken as human-written here."""
    from ee.policy.feedback import effective_confidence
    from ee.query.standing import feedback_cutoff
    from ee.store.feedback import events_path, read_events_file
    from ee.store.ids import utcnow

    now = feedback_cutoff(utcnow())  # as every ranking counts feedback: up to the end of today
    out: dict[str, float] = {}
    for memory in memories:
        rel = events_path(memory.id)
        path = ws.root / rel
        events = read_events_file(path, rel)[0] if path.is_file() else []
        prior = prior_of(memory.confidence, memory.trust)
        out[memory.id] = round(effective_confidence(prior, events, now).effective, 4)
    return out
