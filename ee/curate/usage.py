"""Which memories packs retrieved, and when: the evidence for ``unused`` candidates.

Each context pack appends one line to ``.ee/curate/retrieved.jsonl`` (private, per clone: ``{"day", "ids"}``),
the ids of the memories it included. ``ee curate scan`` reads it: a memory older than ``[curate]
unused_days`` that no pack included in that many days is proposed for review. Until the log itself is that
old, nothing is judged (a fresh clone has retrieved nothing yet, which says nothing).

Recording is best effort: a pack never fails because its line could not be written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

USAGE_FILE = ".ee/curate/retrieved.jsonl"


def record_retrieval(root: Path, ids: Iterable[str], day: str) -> None:
    """Append the day and the ids a pack included (O_APPEND: concurrent packs never interleave a line)."""
    from ee.config import open_regular
    from ee.store.files import make_state_folder

    shown = sorted(set(ids))
    if not shown:
        return
    line = (json.dumps({"day": day, "ids": shown}, separators=(",", ":")) + "\n").encode("utf-8")
    try:
        make_state_folder(root / ".ee" / "curate")
        fd = open_regular(root / USAGE_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        return  # (a read-only disk, a link in its place: the pack is what was asked for)


def last_retrieved(root: Path) -> tuple[str | None, dict[str, str]]:
    """(the first day the log records, or None; memory id → the last day a pack included it)."""
    from ee.config import open_regular

    try:
        with open(open_regular(root / USAGE_FILE, os.O_RDONLY | os.O_NOFOLLOW), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None, {}
    first: str | None = None
    last: dict[str, str] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            day, ids = str(entry["day"]), entry["ids"]
        except (json.JSONDecodeError, KeyError, TypeError):
            continue  # (a torn last line of a killed process)
        if not isinstance(ids, list):
            continue
        first = day if first is None or day < first else first
        for memory_id in ids:
            if isinstance(memory_id, str) and last.get(memory_id, "") < day:
                last[memory_id] = day
    return first, last
