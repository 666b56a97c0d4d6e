"""Choosing a pack's items: greedy selection under the token budget and the profile's quotas.

Two objectives, both greedy over the candidates (best-ranked first on ties, so the result is deterministic):

* **MMR** (maximal marginal relevance): repeatedly take the candidate maximising
  ``λ · relevance - (1 - λ) · max similarity to the items already taken``.
* **Facility location** (``submodular``): maximise
  ``F(S) = Σ_i rel_i · max_{j∈S} sim⁺(i, j) + μ Σ_{j∈S} rel_j`` over every candidate ``i`` (the chosen
  set should *stand for* the whole pool, weighted by relevance), taking the best gain per
  ``tokens ** cost_exponent`` each step. The objective is monotone submodular, so a
  gain only shrinks as the set grows: lazy evaluation (a heap of stale upper bounds, recomputing only the
  top) gives the same picks as plain greedy at a fraction of the work.

A candidate that no longer fits is set aside with its reason: ``budget`` (the total would pass
``max_tokens``), ``quota`` (its section's share, or the advisory share, is used up), ``duplicate``
(the same content as an item already taken: the same text once case and blanks are normalised, or
near-identical embeddings — a cosine of at least 0.99, token Jaccard 0.95 without a model; distinct memories
on one topic are diversity's business, not duplicates), ``max_results`` (the document's
``budget.maxResults`` is reached). With ``spill``, a second pass offers the room left to the candidates a
section share turned away.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ee.pack.profiles import SECTIONS, Profile

FACILITY_RELEVANCE = 0.05  # μ: the modular relevance term that orders items once the pool is covered
DUPLICATE = {"embedding": 0.99, "token_jaccard": 0.95}  # near-identical, not merely similar


@dataclass(slots=True)
class Candidate:
    index: int  # rank order among the candidates
    pos: int  # position in the index generation
    memory_id: str
    section: str
    authoritative: bool
    body: str  # as the pack shows it (cut to the item cap when ``truncated``)
    truncated: bool
    cost: int  # tokens of the item's text in the pack
    relevance: float  # final score / the best candidate's final score
    reason: str | None = None
    marks: tuple[str, ...] = ()  # what the review queue has not settled (ee.curate.marks)
    duplicate_of: str | None = None
    chosen_pass: int = 0
    trace: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Budget:
    """Token accounting: the title is paid up front; a block or section heading when its first item comes."""

    max_tokens: int
    title: int
    headings: dict[tuple[bool, str], int]  # (authoritative, section) → section heading tokens
    block_headings: dict[bool, int]
    section_limit: dict[str, int]
    advisory_limit: int
    max_items: int | None = None
    used: int = 0
    used_section: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SECTIONS, 0))
    used_advisory: int = 0
    opened: set[tuple[bool, str]] = field(default_factory=set)
    count: int = 0

    @classmethod
    def plan(
        cls,
        max_tokens: int,
        title: int,
        profile: Profile,
        block_headings: dict[bool, int],
        headings: dict[tuple[bool, str], int],
        max_items: int | None,
    ) -> Budget:
        room = max(0, max_tokens - title)
        limits = {s: math.floor(profile.shares.get(s, 0.0) * room) for s in SECTIONS}
        return cls(
            max_tokens,
            title,
            headings,
            block_headings,
            limits,
            math.floor(profile.advisory_share * room),
            max_items,
            used=title,
        )

    def frame_cost(self, c: Candidate) -> int:
        """Headings this candidate would open."""
        key = (c.authoritative, c.section)
        if key in self.opened:
            return 0
        block = (
            0 if any(k[0] == c.authoritative for k in self.opened) else self.block_headings[c.authoritative]
        )
        return block + self.headings[key]

    def refusal(self, c: Candidate, quotas: bool) -> str | None:
        if self.max_items is not None and self.count >= self.max_items:
            return "max_results"
        if quotas and self.used_section[c.section] + c.cost > self.section_limit[c.section]:
            return "quota:section"
        if not c.authoritative and self.used_advisory + c.cost > self.advisory_limit:
            return "quota:advisory"
        if self.used + self.frame_cost(c) + c.cost > self.max_tokens:
            return "budget"
        return None

    def take(self, c: Candidate) -> None:
        self.used += self.frame_cost(c) + c.cost
        self.opened.add((c.authoritative, c.section))
        self.used_section[c.section] += c.cost
        if not c.authoritative:
            self.used_advisory += c.cost
        self.count += 1


@dataclass(slots=True)
class Selection:
    cands: list[Candidate]
    sim: np.ndarray  # candidates by candidates, diagonal 1
    duplicate: float
    budget: Budget
    profile: Profile
    rel: np.ndarray = field(init=False)
    active: np.ndarray = field(init=False)
    max_sim: np.ndarray = field(init=False)
    cover: np.ndarray = field(init=False)
    chosen: list[int] = field(default_factory=list)
    same: np.ndarray = field(init=False)  # candidates by candidates: the same content

    def __post_init__(self) -> None:
        n = len(self.cands)
        self.same = (self.sim >= self.duplicate) | same_text([c.body for c in self.cands])
        self.rel = np.asarray([c.relevance for c in self.cands], dtype=np.float64)
        self.active = np.asarray([c.reason is None for c in self.cands], dtype=bool)
        self.max_sim = np.zeros(n, dtype=np.float64)
        self.cover = np.zeros(n, dtype=np.float64)

    def set_aside(self, j: int, reason: str) -> None:
        self.cands[j].reason = reason
        self.active[j] = False

    def take(self, j: int, pass_no: int, trace: dict[str, Any]) -> None:
        c = self.cands[j]
        self.budget.take(c)
        c.chosen_pass = pass_no
        c.trace = trace
        self.active[j] = False
        self.chosen.append(j)
        column = self.sim[:, j].astype(np.float64)
        self.max_sim = np.maximum(self.max_sim, column)
        self.cover = np.maximum(self.cover, np.clip(column, 0.0, 1.0))
        for i in np.flatnonzero(self.active & self.same[:, j]).tolist():
            self.set_aside(i, "duplicate")
            self.cands[i].duplicate_of = c.memory_id


def same_text(bodies: list[str]) -> np.ndarray:
    """Which pairs of bodies hold the same text once case and runs of blanks are normalised."""
    groups: dict[str, int] = {}
    keys = (" ".join(body.split()).casefold() for body in bodies)
    group = np.fromiter(
        (groups.setdefault(key, len(groups)) for key in keys), dtype=np.int64, count=len(bodies)
    )
    return group[:, None] == group[None, :]  # (one comparison of group numbers, not one block per group)


def select(
    cands: list[Candidate], sim: np.ndarray, similarity: str, profile: Profile, budget: Budget
) -> list[Candidate]:
    """The chosen candidates, in the order taken; every other candidate gets a ``reason``."""
    state = Selection(cands, sim, DUPLICATE[similarity], budget, profile)
    run = _mmr if profile.diversity == "mmr" else _facility
    run(state, pass_no=1, quotas=True)
    if profile.spill:
        for c in cands:
            if c.reason == "quota:section":
                c.reason = None
                state.active[c.index] = True
        run(state, pass_no=2, quotas=False)
    return [cands[j] for j in state.chosen]


def _mmr(state: Selection, pass_no: int, quotas: bool) -> None:
    """Take the candidate of highest MMR value (the first maximum: the better-ranked one) until none is left.

    A candidate the budget turns away is only set aside: nothing the values depend on changes (the
    similarities to the items taken, the budget), so the next best is the next in the same order, and the
    values are computed again only after a take."""
    lam = state.profile.mmr_lambda
    while True:
        idx = np.flatnonzero(state.active)
        if idx.size == 0:
            return
        scores = lam * state.rel[idx] - (1.0 - lam) * np.maximum(state.max_sim[idx], 0.0)
        # Best first; ties in candidate order (np.argmax's first maximum).
        for k in np.argsort(-scores, kind="stable").tolist():
            best = int(idx[k])
            reason = state.budget.refusal(state.cands[best], quotas)
            if reason:
                state.set_aside(best, reason)
                continue
            state.take(
                best,
                pass_no,
                {
                    "objective": "mmr",
                    "value": round(float(scores[k]), 6),
                    "relevance": round(state.rel[best], 6),
                    "max_similarity": round(float(max(state.max_sim[best], 0.0)), 6),
                    "pass": pass_no,
                },
            )
            break
        else:
            return  # every candidate left was set aside


def _facility(state: Selection, pass_no: int, quotas: bool) -> None:
    sim = np.clip(state.sim.astype(np.float64), 0.0, 1.0)
    cost = np.asarray([max(1, c.cost) for c in state.cands], dtype=np.float64) ** state.profile.cost_exponent

    def gain(j: int) -> float:
        coverage = float(state.rel @ np.maximum(sim[:, j] - state.cover, 0.0))
        return coverage + FACILITY_RELEVANCE * float(state.rel[j])

    initial = state.rel @ np.maximum(sim - state.cover[:, None], 0.0) + FACILITY_RELEVANCE * state.rel
    heap = [(-float(initial[j] / cost[j]), j) for j in np.flatnonzero(state.active).tolist()]
    heapq.heapify(heap)
    while heap:
        _bound, j = heapq.heappop(heap)
        if not state.active[j]:
            continue
        reason = state.budget.refusal(state.cands[j], quotas)
        if reason:
            state.set_aside(j, reason)
            continue
        g = gain(j)
        ratio = g / cost[j]
        if heap and ratio < -heap[0][0] - 1e-12:
            heapq.heappush(heap, (-ratio, j))  # stale bound: put it back with the fresh one
            continue
        state.take(
            j,
            pass_no,
            {
                "objective": "facility_location",
                "gain": round(g, 6),
                "gain_per_cost": round(ratio, 6),
                "relevance": round(state.rel[j], 6),
                "pass": pass_no,
            },
        )
