"""Graph expansion over memories' typed links (ee.query.v1 ``graph``)."""

from __future__ import annotations

from collections import deque
from typing import Any


def _edges(
    records: list[dict[str, Any]], spec: dict[str, Any]
) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
    """Outbound and inbound adjacency between positions, over the allowed link types."""
    allowed = set(spec.get("linkTypes") or [])
    pos_of = {r["id"]: i for i, r in enumerate(records)}
    out: dict[int, set[int]] = {}
    inbound: dict[int, set[int]] = {}
    for pos, record in enumerate(records):
        for link_type, target in record.get("links", []):
            if allowed and link_type not in allowed:
                continue
            other = pos_of.get(target)
            if other is None or other == pos:
                continue
            out.setdefault(pos, set()).add(other)
            inbound.setdefault(other, set()).add(pos)
    return out, inbound


def expand(
    records: list[dict[str, Any]], spec: dict[str, Any], degraded: list[dict[str, Any]]
) -> dict[int, int]:
    """Positions within ``maxHops`` of the seeds (the seeds at 0), following ``traversal``."""
    seeds = spec.get("seedMemories") or []
    if not seeds:
        return {}
    pos_of = {r["id"]: i for i, r in enumerate(records)}
    missing = [s for s in seeds if s not in pos_of]
    if missing:
        degraded.append(
            {
                "code": "graph_seed_missing",
                "severity": "warning",
                "message": f"seed memories not in the store: {', '.join(missing)}",
                "repair": "check the ids with `ee memory list`",
            }
        )
    out, inbound = _edges(records, spec)
    traversal = spec.get("traversal", "bidirectional")
    max_hops = int(spec.get("maxHops", 1))
    hops = {pos_of[s]: 0 for s in seeds if s in pos_of}
    queue = deque(hops)
    while queue:
        pos = queue.popleft()
        if hops[pos] >= max_hops:
            continue
        nxt: set[int] = set()
        if traversal in ("outbound", "bidirectional"):
            nxt |= out.get(pos, set())
        if traversal in ("inbound", "bidirectional"):
            nxt |= inbound.get(pos, set())
        for other in sorted(nxt):
            if other not in hops:
                hops[other] = hops[pos] + 1
                queue.append(other)
    return hops


def linked_positions(records: list[dict[str, Any]], spec: dict[str, Any]) -> set[int]:
    """Positions with at least one link (either way) of an allowed type: the non-orphans."""
    out, inbound = _edges(records, spec)
    return set(out) | set(inbound)
