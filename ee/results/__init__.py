"""What the library's reads return: typed answers, turned into ee.response.v1 JSON only at the edges.

``Workspace.search`` returns a :class:`SearchResult` of :class:`Hit`, ``Workspace.context`` a :class:`Pack`
of :class:`PackSection` and :class:`PackItem` (with :class:`Omitted` entries), ``Workspace.why`` an
:class:`Explanation`; the review queue a :class:`Queue` of candidates and a :class:`Review` of one. A
front end reads their attributes; the command line, MCP and the warm server turn them into JSON with
``to_json()``, the one path from each type to its ``data`` object.

**One module per operation's types**, so a front end imports only the types of the answer it renders
(a served ``ee search`` does not build the dataclasses of packs, the review queue or sessions: each
costs the generated code of its methods at import): :mod:`ee.results.search`, :mod:`ee.results.pack`,
:mod:`ee.results.why`, :mod:`ee.results.curate`, :mod:`ee.results.sessions`. This module holds what
they share: :class:`Result` and the one JSON path of every type.

**Exact bytes.** An answer shows a different set of keys for different requests (``output.fields``
minimal / summary / standard / full, ``--explain``, an evidence hit's own keys), and its bytes are a
contract (``tests/test_contract*.py``). So each result keeps ``shown``: the keys its answer shows, in
their order, as the pipeline chose them; ``to_json`` writes exactly those. A key not shown has its
field's empty value (None, ``()``, ``{}``), which is not the same as a shown ``null``.

**The warm server** sends ``to_json()`` (:func:`ee.operations.run`: the same ``data`` the command line
prints), and the front end that asked rebuilds the result with :meth:`Result.from_json`
(:func:`ee.operations.answer`): ``from_json(x.to_json()) == x`` and ``from_json(d).to_json() == d``, so
a served answer is the same object, and the same bytes, as one computed in-process. That is simpler than
a second wire format: the JSON a front end prints is already complete, and the round trip is the one a
test pins (tests/test_results.py). The review queue's types are not served: they only go one way.

Nested blocks that only renderers and agents read (a hit's score ``components`` and ``factors``, its
``provenance``, ``explanation`` and ``memory`` block; why's ``standing`` and ``links``) stay JSON objects
(:data:`JsonObject`); each is built in one place in the pipeline (ee.query.explain, ee.ops.why).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import Any, ClassVar, Literal, Self

JsonObject = Mapping[str, Any]
# One entry of an answer's ``degraded`` list (code, severity, message, repair; ee.model.Problem's shape):
# a plain dict, as the envelope masks and writes it.
Degradation = dict[str, Any]

HitType = Literal["memory", "evidence"]
Posture = Literal["authoritative", "advisory", "legacy_evidence"]
Fields = Literal["minimal", "summary", "standard", "full"]
# The setting that cut a search's page short (ee.query.engine._truncated_by).
TruncatedBy = Literal["budget.maxTokens", "pagination.limit", "budget.maxResults"]


class Result:
    """A typed answer (or a part of one): a frozen, slotted dataclass with ``shown``, the keys its JSON
    shows in order. ``NESTED`` names the fields holding results (one, or a tuple of them), by their type;
    ``TUPLES`` the fields holding a JSON list of plain values."""

    __slots__ = ()
    NESTED: ClassVar[Mapping[str, type[Result]]] = {}
    TUPLES: ClassVar[frozenset[str]] = frozenset()
    shown: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The ee.response.v1 object of this result: the keys of ``shown``, in order."""
        return {key: _plain(getattr(self, key)) for key in self.shown}

    def envelope_parts(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(``data``, ``degraded``) of the ee.response.v1 envelope: an answer carries its degradations
        inside; the envelope holds them beside its data."""
        data = self.to_json()
        return data, data.pop("degraded", [])

    @classmethod
    def from_json(cls, data: JsonObject) -> Self:
        """The result whose :meth:`to_json` is ``data`` (an answer as the pipeline or the warm server
        wrote it). A key this type does not know is a bug: TypeError."""
        # (mypy takes a class for not Hashable: functools.cache keys on it all the same)
        unknown = data.keys() - _keys(cls)  # type: ignore[arg-type]
        if unknown:
            raise TypeError(f"{cls.__name__} has no {', '.join(sorted(unknown))}")
        values = {key: _typed(cls, key, value) for key, value in data.items()}
        return cls(**(values | {"shown": tuple(data)}))


@cache
def _keys(cls: type[Result]) -> frozenset[str]:
    """The JSON keys a result type knows: its fields but ``shown``."""
    return frozenset(f.name for f in fields(cls) if f.name != "shown")  # type: ignore[arg-type]


def _plain(value: Any) -> Any:
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _typed(cls: type[Result], key: str, value: Any) -> Any:
    nested = cls.NESTED.get(key)
    if nested is not None and value is not None:
        if isinstance(value, list):
            return tuple(nested.from_json(item) for item in value)
        return nested.from_json(value)
    if key in cls.TUPLES and isinstance(value, list):
        return tuple(value)
    return value
