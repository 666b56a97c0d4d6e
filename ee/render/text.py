"""Human-readable terminal views of memories, histories and reports."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ee.model import Problem
from ee.results import JsonObject

if TYPE_CHECKING:
    from ee.results.memory import MemoryView


def plural(count: int, one: str, many: str) -> str:
    """``1 memory``, ``2 memories``: a count with its noun."""
    return f"{count:,} {one if count == 1 else many}"


def memory_line(memory: MemoryView) -> str:
    """One memory of ``ee memory list``: id, level/kind, tags, title."""
    tags = f" [{', '.join(memory.tags)}]" if memory.tags else ""
    return f"{memory.id}  {memory.level}/{memory.kind}{tags}  {memory.title}"


def memory_block(memory: MemoryView) -> str:
    """The memory's fields and body (``ee memory show``). The values search uses — the trust class ee
    grants, the confidence and creation time — each marked ``(file)`` or with how ee derived it; as of a
    time or commit (``as_of``), the file's own values then."""
    if memory.as_of is not None:
        trust = memory.trust or "-"
        confidence = "-" if memory.confidence is None else f"{memory.confidence:.2f}"
        created = memory.created or "-"
    else:
        derived = memory.derived
        trust = f"{memory.trust}  " + (
            f"(file; ee grants {memory.trust} only: the file claims {memory.trust_claimed}; a person raises "
            f"it with: ee memory trust {memory.id})"
            if memory.trust_claimed
            else "(derived: who committed it)"
            if "trust" in derived
            else "(file)"
        )
        confidence = ("-" if memory.confidence is None else f"{memory.confidence:.2f}") + "  "
        confidence += f"(derived: the default of {memory.trust})" if "confidence" in derived else "(file)"
        effective = memory.effective_confidence
        if (
            effective is not None
            and memory.confidence is not None
            and round(effective, 2) != round(memory.confidence, 2)
        ):
            confidence += f"; {effective:.2f} with feedback"
        created = (
            f"{memory.created}  (derived: its first commit)"
            if "created" in derived
            else f"{memory.created}  (file)"
            if memory.created
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
        rows.append(("links", ", ".join(f"{link['type']}:{link['to']}" for link in memory.links)))
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
