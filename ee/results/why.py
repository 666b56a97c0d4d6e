"""What ``Workspace.why`` returns: an :class:`Explanation`. See :mod:`ee.results`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ee.results import Degradation, JsonObject, Result


@dataclass(frozen=True, slots=True)
class Explanation(Result):
    """The answer of ``ee why``: a memory's standing, links, injection verdict and history; with a
    query, its rank there and what a pack would do with it (``query``)."""

    TUPLES = frozenset({"tags", "events_elsewhere", "degraded"})

    id: str = ""
    title: str = ""
    path: str = ""
    level: str = ""
    kind: str = ""
    tags: tuple[str, ...] = ()
    standing: JsonObject = field(default_factory=dict)
    links: JsonObject = field(default_factory=dict)
    injection: JsonObject = field(default_factory=dict)
    history: JsonObject = field(default_factory=dict)
    query: JsonObject | None = None
    events_elsewhere: tuple[JsonObject, ...] = ()
    degraded: tuple[Degradation, ...] = ()
    shown: tuple[str, ...] = ()
