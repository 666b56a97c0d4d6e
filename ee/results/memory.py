"""What ``ee memory …``'s served reads return: :class:`MemoryHistory` (``Workspace.memory_history``).

A version stays the JSON object :class:`ee.model.Version` writes (``to_dict``): the history use case
(:mod:`ee.ops.history`) builds those, and renderers read their keys. See :mod:`ee.results`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ee.results import JsonObject, Result


@dataclass(frozen=True, slots=True)
class MemoryHistory(Result):
    """Every version of one memory from git, oldest to newest: commit, date, author, actor, op, message,
    path, the fields that changed, whether it was deleted."""

    TUPLES = frozenset({"versions"})

    id: str = ""
    versions: tuple[JsonObject, ...] = ()
    shown: tuple[str, ...] = ()
