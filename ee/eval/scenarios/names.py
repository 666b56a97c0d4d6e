"""Local memory names → real ids, in the places of an ee.query.v1 document that hold memory ids."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ID_PREDICATES = ("eq", "neq", "in", "notIn")


def memory_id(scenario_id: str, name: str) -> str:
    """A stable ``mem_`` + ULID-shaped id for a local name: the same scenario gives the same ids every run,
    so ties (broken by id) and reports are reproducible."""
    value = int.from_bytes(hashlib.sha256(f"{scenario_id}/{name}".encode()).digest()[:17], "big") >> 6
    chars = [_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1)]
    return "mem_" + "".join(chars)


def map_query_names(doc: dict[str, Any], ids: dict[str, str], strict: bool = False) -> dict[str, Any]:
    """A copy of ``doc`` with local names replaced by ids in graph.seedMemories, eval.expectedMemoryIds and
    the id filter's eq / neq / in / notIn. ``strict``: an unknown name raises KeyError (else kept as is)."""
    out = copy.deepcopy(doc)

    def one(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value in ids:
            return ids[value]
        if strict:
            raise KeyError(value)
        return value

    def many(values: Any) -> Any:
        return [one(v) for v in values] if isinstance(values, list) else one(values)

    graph = out.get("graph")
    if isinstance(graph, dict) and "seedMemories" in graph:
        graph["seedMemories"] = many(graph["seedMemories"])
    evaluation = out.get("eval")
    if isinstance(evaluation, dict) and "expectedMemoryIds" in evaluation:
        evaluation["expectedMemoryIds"] = many(evaluation["expectedMemoryIds"])
    id_filter = (out.get("filters") or {}).get("id") if isinstance(out.get("filters"), dict) else None
    if isinstance(id_filter, dict):
        for op in _ID_PREDICATES:
            if op in id_filter:
                id_filter[op] = many(id_filter[op])
    return out
