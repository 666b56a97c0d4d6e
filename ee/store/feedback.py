"""Feedback events on disk: ``memories/.events/<memory-id>.jsonl``, append-only, one JSON object a line.

Append-only lines in one file per memory merge with git's ``union`` driver (see ``.gitattributes``), so
feedback recorded in several clones at once never conflicts. Effective confidence is derived from the
events (ee.policy.feedback); the frontmatter prior is never rewritten.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ee.errors import UsageError
from ee.store.files import EVENTS


def events_path(memory_id: str) -> str:
    return f"{EVENTS}/{memory_id}.jsonl"


def read_events_file(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The events of one file, sorted by (at, id), and a problem for each unreadable line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [_problem(rel, None, f"unreadable events file: {exc}")]
    return read_events_text(text, rel)


def read_events_text(text: str, rel: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from ee.policy.secrets import mask_text

    events: dict[str, dict[str, Any]] = {}
    problems: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(_problem(rel, number, f"not JSON: {exc.msg}"))
            continue
        if not isinstance(event, dict) or not all(
            isinstance(event.get(k), str) for k in ("id", "signal", "at")
        ):
            problems.append(_problem(rel, number, "an event needs string fields id, signal and at"))
            continue
        for key in ("source", "reason"):  # an events file written by hand or by an older ee: never guarded
            if isinstance(event.get(key), str):
                event[key] = mask_text(event[key])
        events.setdefault(event["id"], event)  # a union merge may duplicate a line: count it once
    return sorted(events.values(), key=lambda e: (e["at"], e["id"])), problems


def append_event(root: Path, event: dict[str, Any]) -> str:
    """Append one event line (O_APPEND: concurrent appends of short lines never interleave)."""
    rel = events_path(event["memory"])
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        line = (json.dumps(event, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not UTF-8 where the text came from
        raise UsageError(
            "the feedback event holds text that is not UTF-8", "convert it first (e.g. with iconv)"
        ) from None
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return rel


def _problem(rel: str, line: int | None, message: str) -> dict[str, Any]:
    return {
        "code": "event_invalid",
        "severity": "warning",
        "path": rel,
        "line": line,
        "message": message,
        "repair": f"fix or delete the line in {rel}",
    }
