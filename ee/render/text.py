"""Human-readable terminal views of memories, histories and reports."""

from __future__ import annotations

from collections.abc import Iterable

from ee.model import Memory, Problem, Version


def plural(count: int, one: str, many: str) -> str:
    """``1 memory``, ``2 memories``: a count with its noun."""
    return f"{count:,} {one if count == 1 else many}"


def memory_line(memory: Memory) -> str:
    tags = f" [{', '.join(memory.tags)}]" if memory.tags else ""
    return f"{memory.id}  {memory.level}/{memory.kind}{tags}  {memory.title}"


def memory_block(memory: Memory, granted: str | None = None) -> str:
    """The memory's fields and body; ``granted``: the trust class ee grants it, shown with the file's claim
    when the two differ."""
    trust = granted or memory.trust or "-"
    if granted and memory.trust and memory.trust != granted:
        trust += f" (the file claims {memory.trust}; a person raises it with: ee memory trust {memory.id})"
    rows = [
        ("id", memory.id),
        ("path", memory.path),
        ("level", memory.level),
        ("kind", memory.kind),
        ("tags", ", ".join(memory.tags) or "-"),
        ("trust", trust),
        ("confidence", "-" if memory.confidence is None else f"{memory.confidence:.2f}"),
        ("created", memory.created or "-"),
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


def history_lines(versions: Iterable[Version]) -> str:
    out = []
    for version in versions:
        changed = ", ".join(version.changed) or "-"
        mark = " (deleted)" if version.deleted else ""
        out.append(
            f"{version.commit[:10]}  {version.date}  {version.actor:<16} {version.op:<9} {changed}{mark}"
        )
        out.append(f"            {version.message.splitlines()[0] if version.message else ''}")
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
