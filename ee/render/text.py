"""Human-readable terminal views of memories, histories and reports."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ee.model import Memory, Problem
from ee.results import JsonObject


def plural(count: int, one: str, many: str) -> str:
    """``1 memory``, ``2 memories``: a count with its noun."""
    return f"{count:,} {one if count == 1 else many}"


def memory_line(memory: Memory) -> str:
    tags = f" [{', '.join(memory.tags)}]" if memory.tags else ""
    return f"{memory.id}  {memory.level}/{memory.kind}{tags}  {memory.title}"


def memory_block(memory: Memory, shown: dict[str, Any] | None = None) -> str:
    """The memory's fields and body. ``shown`` (``ee memory show``'s data): the values search uses — the
    trust class ee grants, the confidence and creation time — each marked ``(file)`` or with how ee
    derived it; without it, the file's own values."""
    if shown is None:
        trust = memory.trust or "-"
        confidence = "-" if memory.confidence is None else f"{memory.confidence:.2f}"
        created = memory.created or "-"
    else:
        derived = shown.get("derived", [])
        trust = f"{shown['trust']}  " + (
            f"(file; ee grants {shown['trust']} only: the file claims {memory.trust}; a person raises it "
            f"with: ee memory trust {memory.id})"
            if memory.trust and memory.trust != shown["trust"]
            else "(derived: who committed it)"
            if "trust" in derived
            else "(file)"
        )
        confidence = f"{shown['confidence']:.2f}  " + (
            f"(derived: the default of {shown['trust']})" if "confidence" in derived else "(file)"
        )
        effective = shown.get("effective_confidence")
        if effective is not None and round(effective, 2) != round(shown["confidence"], 2):
            confidence += f"; {effective:.2f} with feedback"
        created = (
            f"{shown['created']}  (derived: its first commit)"
            if "created" in derived
            else f"{shown['created']}  (file)"
            if shown.get("created")
            else "-  (not committed yet)"
        )
    rows = [
        ("id", memory.id),
        ("path", memory.path),
        ("level", memory.level),
        ("kind", memory.kind),
        ("tags", ", ".join(memory.tags) or "-"),
        ("trust", trust),
        ("confidence", confidence),
        ("created", created),
    ]
    if memory.valid_from or memory.valid_to:
        rows.append(("valid", f"{memory.valid_from or '…'} → {memory.valid_to or '…'}"))
    if memory.source:
        rows.append(("source", ", ".join(memory.source)))
    if memory.links:
        rows.append(("links", ", ".join(f"{link.type}:{link.to}" for link in memory.links)))
    if memory.paths:
        rows.append(("paths", ", ".join(memory.paths)))
    if memory.redacted:
        rows.append(("redacted", ", ".join(memory.redacted)))
    width = max(len(key) for key, _ in rows)
    head = "\n".join(f"{key.rjust(width)}  {value}" for key, value in rows)
    return f"{head}\n\n{memory.body}\n"


def history_lines(versions: Iterable[JsonObject]) -> str:
    """A memory's versions (``MemoryHistory.versions``: :meth:`ee.model.Version.to_dict` objects)."""
    out = []
    for version in versions:
        changed = ", ".join(version["changed"]) or "-"
        mark = " (deleted)" if version["deleted"] else ""
        out.append(
            f"{version['commit'][:10]}  {version['date']}  {version['actor']:<16} {version['op']:<9} "
            f"{changed}{mark}"
        )
        message = version["message"]
        out.append(f"            {message.splitlines()[0] if message else ''}")
    return "\n".join(out)


def problem_lines(problems: Iterable[Problem]) -> str:
    out = []
    for problem in problems:
        where = problem.path + (f":{problem.line}" if problem.line else "")
        prefix = f"{where}: " if where else ""
        out.append(f"{problem.severity}: {prefix}{problem.message}")
        if problem.repair:
            out.append(f"  repair: {problem.repair}")
    return "\n".join(out)
