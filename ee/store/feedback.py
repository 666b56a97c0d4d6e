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

from ee.config import MAX_INT, open_regular
from ee.errors import StorageError, UsageError
from ee.store.files import EVENTS, MEMORIES


def events_path(memory_id: str) -> str:
    return f"{EVENTS}/{memory_id}.jsonl"


def read_events_file(path: Path, rel: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The events of one file, sorted by (at, id), and a problem for each unreadable line."""
    try:
        with os.fdopen(open_events(path, rel, os.O_RDONLY), "rb") as handle:
            text = handle.read().decode("utf-8")
    except StorageError as exc:
        return [], [_problem(rel, None, exc.message, exc.hint)]
    except (OSError, UnicodeDecodeError) as exc:
        return [], [_problem(rel, None, f"unreadable events file: {exc}")]
    return read_events_text(text, rel)


def open_events(path: Path, rel: str, flags: int, named: str = EVENTS) -> int:
    """A file descriptor of the events file ``path`` (``rel`` names it), opened with ``flags``; ``named``
    is its folder in messages (``memories/.events``, or the review decisions' ``memories/.curate``).

    Refused with a StorageError: a symlink (the file's own, or a ``memories/.events`` folder that leads out
    of ``memories/``), so a link a teammate committed never makes ee read or append to a file outside the
    repository; and anything but a regular file (a FIFO would block ee forever). ``FileNotFoundError``
    passes through."""
    folder = os.path.realpath(path.parent)
    memories = os.path.realpath(path.parent.parent)
    if path.parent.parent.name != MEMORIES or os.path.dirname(folder) != memories:
        raise StorageError(
            f"{rel}: the events folder {named}/ is a symlink out of memories/; ee reads and writes "
            "its events only inside memories/",
            f"replace the link with a folder: rm {named} && git checkout -- {named}",
        )
    try:
        return open_regular(path, flags | os.O_NOFOLLOW)  # (O_NOFOLLOW: a link fails the open itself)
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = exc.strerror or str(exc)
    if os.path.islink(path):
        raise StorageError(
            f"{rel} is a symlink; ee reads and writes its events only in a regular file",
            f"replace the link with a regular file: rm {rel} (or git rm {rel}), then run the command again",
        )
    if not os.path.isfile(path):
        why = "not a regular file (a FIFO, socket, device or folder)"
    raise StorageError(f"{rel} cannot be opened: {why}", f"move it out of {named}/ (rm {rel})")


def read_events_text(text: str, rel: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from ee.policy.secrets import mask_text

    events: dict[str, dict[str, Any]] = {}
    problems: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line, parse_int=bounded_int)
        except json.JSONDecodeError as exc:
            problems.append(_problem(rel, number, f"not JSON: {exc.msg}"))
            continue
        except ValueError as exc:  # a number of 5,000 digits: one bad line, like any other
            problems.append(_problem(rel, number, str(exc)))
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


def bounded_int(text: str) -> int:
    """A whole number of a JSON line, or ValueError beyond :data:`ee.config.MAX_INT` (Python reads no more
    than 4300 digits, and ee computes with none beyond 64 bits)."""
    value = int(text) if len(text) <= 20 else None
    if value is None or abs(value) > MAX_INT:
        shown = text if len(text) <= 24 else f"{text[:12]}…({len(text)} digits)"
        raise ValueError(f"the number {shown} is beyond {MAX_INT}")
    return value


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
    fd = open_events(path, rel, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return rel


def _problem(rel: str, line: int | None, message: str, repair: str = "") -> dict[str, Any]:
    return {
        "code": "event_invalid",
        "severity": "warning",
        "path": rel,
        "line": line,
        "message": message,
        "repair": repair or f"fix or delete the line in {rel}",
    }
