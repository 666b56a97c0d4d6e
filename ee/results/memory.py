"""What ``ee memory …``'s reads return: :class:`MemoryView` (``Workspace.memory_show``, one memory as ee
reports it), :class:`MemoryList` (``Workspace.memory_list``) and :class:`MemoryHistory`
(``Workspace.memory_history``), all three served warm (:data:`ee.operations.OPERATIONS`); and
:class:`Remembered`, what ``ee remember`` did.

A view carries everything its human text needs, so a served ``ee memory show --human`` renders the same
bytes as one run in-process: the values search weighs (the trust ee grants, the prior and effective
confidence, the creation time) and, beside them, what the file itself says where that differs
(``trust_claimed``; ``derived`` names the values ee derived because the file has none). A version of
a history stays the JSON object :class:`ee.model.Version` writes (``to_dict``): the history use case
(:mod:`ee.ops.history`) builds those, and renderers read their keys. See :mod:`ee.results`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ee.results import Degradation, JsonObject, Result


@dataclass(frozen=True, slots=True)
class MemoryView(Result):
    """One memory as ``ee memory show`` and ``list`` report it: the file's fields (``ee.model.Memory``'s
    ``to_dict``, secrets masked) with ``trust`` the class ee grants and, unless ``as_of`` (the commit it
    was read from) is shown, ``confidence`` the prior search uses, ``effective_confidence`` (feedback
    applied) and ``created`` the file's, else its first commit's. ``list`` adds ``title``, ``writer``
    (who wrote it since a person last reviewed it), ``quarantined`` and ``conflict``."""

    TUPLES = frozenset({"tags", "source", "links", "paths", "redacted", "derived"})

    id: str = ""
    path: str = ""
    level: str = ""
    kind: str = ""
    tags: tuple[str, ...] = ()
    trust: str | None = None
    confidence: float | None = None
    utility: float | None = None
    importance: float | None = None
    created: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    source: tuple[str, ...] = ()
    links: tuple[JsonObject, ...] = ()
    paths: tuple[str, ...] = ()
    redacted: tuple[str, ...] = ()
    extra: JsonObject | None = None
    body: str = ""
    trust_claimed: str | None = None  # the file's own trust: when it says more (or other) than ee grants
    effective_confidence: float | None = None
    derived: tuple[str, ...] = ()  # of trust, confidence, created: the ones ee derived (not the file's)
    as_of: JsonObject | None = None  # read as of a time or commit: that commit (commit, date, …)
    title: str | None = None  # (list)
    writer: str | None = None  # (list) agent:<name> or human
    quarantined: bool | None = None  # (list)
    conflict: bool | None = None  # (list) a merge kept several versions of its text
    shown: tuple[str, ...] = ()

    @property
    def file_created(self) -> str | None:
        """The creation time the file itself holds (None when ee derived ``created``)."""
        return None if "created" in self.derived else self.created


@dataclass(frozen=True, slots=True)
class MemoryList(Result):
    """The answer of ``ee memory list``: the memories (sorted by id) and the files that failed to load
    (``degraded``, which the envelope carries beside ``data``)."""

    NESTED: ClassVar[Mapping[str, type[Result]]] = {"memories": MemoryView}
    TUPLES = frozenset({"degraded"})

    count: int = 0
    memories: tuple[MemoryView, ...] = ()
    degraded: tuple[Degradation, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemoryHistory(Result):
    """Every version of one memory from git, oldest to newest: commit, date, author, actor, op, message,
    path, the fields that changed, whether it was deleted."""

    TUPLES = frozenset({"versions"})

    id: str = ""
    versions: tuple[JsonObject, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Remembered:
    """What ``ee remember`` did (:func:`ee.curate.intake.remember`; a write: never served).

    ``written``: a new memory, ``memory`` its fields as written, ``merge_candidates`` the merges proposed
    with the near-identical memories it was found beside (None: none was near). Not written: the store
    already held the text, ``memory`` is that memory as ``ee memory show`` gives it, ``confirmation`` the
    event and commit of the confirmation recorded on it and ``effective_confidence`` that after it."""

    memory: JsonObject
    written: bool = True
    merge_candidates: tuple[str, ...] | None = None
    confirmation: JsonObject | None = None
    effective_confidence: JsonObject | None = None

    @property
    def id(self) -> str:
        return str(self.memory["id"])

    @property
    def path(self) -> str:
        return str(self.memory["path"])

    def to_json(self) -> dict[str, Any]:
        data = dict(self.memory)
        if not self.written:
            return data | {
                "duplicate_of": self.id,
                "written": False,
                "confirmation": self.confirmation,
                "effective_confidence": self.effective_confidence,
            }
        if self.merge_candidates is not None:
            data["merge_candidates"] = list(self.merge_candidates)
        return data
