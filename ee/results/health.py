"""What the workspace's upkeep returns: :class:`InitReport` (``Workspace.init``), :class:`DoctorReport`
(``Workspace.doctor``), :class:`IndexStatus` (``Workspace.index_status``). Writes and local checks: never
served. Each problem list keeps the JSON objects the checks build (:data:`Degradation`'s shape, file names
masked). See :mod:`ee.results`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ee.results import Degradation, JsonObject, Result


@dataclass(frozen=True, slots=True)
class InitReport(Result):
    """``ee init``: the workspace's folder, what was created and registered, the commit ('' when nothing
    was committed), the memory branch (None: memories live on the code branch)."""

    TUPLES = frozenset({"created", "registered"})

    root: str = ""
    created: tuple[str, ...] = ()
    registered: tuple[str, ...] = ()
    commit: str | None = None
    branch: str | None = None
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DoctorReport(Result):
    """``ee doctor``: how many memories load, the problems found (errors and warnings counted),
    ``healthy`` when there is no error; with ``--fix``, what was repaired first (``fixed``)."""

    TUPLES = frozenset({"problems"})

    root: str = ""
    memories: int = 0
    errors: int = 0
    warnings: int = 0
    healthy: bool = False
    problems: tuple[Degradation, ...] = ()
    fixed: JsonObject | None = None
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IndexStatus(Result):
    """``ee index status``: ``state`` (ready / stale / missing / corrupt), the files seen and the memories
    indexed, the generation, when it was built, the model and semantic arm (the one a query would use
    now), the transformer arm's vectors (``ee.index.transformer.VectorReport``: state, done of memories),
    its problems and the repair. Every key is shown in every state (None when unknown)."""

    TUPLES = frozenset({"problems", "degraded"})

    root: str = ""
    state: str = ""
    files: int = 0
    memories: int | None = None
    generation: str | None = None
    built: str | None = None
    model: str | None = None
    semantic: bool = False
    semantic_arm: str | None = None
    transformer: JsonObject | None = None
    problems: tuple[Degradation, ...] = ()
    degraded: tuple[Degradation, ...] = ()
    repair: str = ""
    shown: tuple[str, ...] = ()
