"""Hybrid fusion of the lexical (BM25) and semantic (cosine) arms: pure Python, deterministic, explainable.

:func:`fuse` is min-max linear fusion: each arm's scores are rescaled to [0, 1] over the candidates it was
given, then ``fused = (1 - w) * lexical_norm + w * semantic_norm`` with ``w = weight_semantic``. Every
component is kept in :class:`FusedScore`, so a hit can say exactly why it ranks where it does. The result is
ordered best first, ties broken by id, so the same inputs always give the same order.

**Score the union.** Best results come when the caller gives BOTH arms a score for EVERY candidate (the union
of each arm's top ``pool``): BM25 can score any document (0.0 when no term matches; keep those zeros in the
dict) and the cosine is defined for every embedded document. A candidate that an arm really has no score for
(not embedded yet, say) may be left out of that arm's dict: it gets ``None`` for that arm and a normalised
score of 0.0, the floor of the range.

**Measured on the dev set** (Vim help in BEIR layout, 6 398 docs, 1 035 queries; R@10 / MRR@10). Lexical arm:
ee's tokenizer + BM25 k1 1.5, b 1.0 (alone: 0.666 / 0.445). Semantic arm: the shipped static MiniLM
distillation, each document embedded as normalise(e(first 24 words) + e(whole text)) (alone: 0.493 / 0.275;
whole text only: 0.432 / 0.244). Pool 100 per arm. ``PYTHONPATH=. python scripts/tune_retrieval.py
/work/devset --grid fusion``:

=====================================================================  ===============
fusion                                                                 R@10 / MRR@10
=====================================================================  ===============
RRF k 60, equal weights (:func:`rrf`, the classic baseline)            0.645 / 0.401
RRF k 60, semantic weight 0.3                                          0.685 / 0.436
RRF k 20, semantic weight 0.3                                          0.690 / 0.448
min-max, w 0.3, each arm only its own pool (missing = 0)               0.689 / 0.456
**min-max, w 0.3, union scored by both arms (shipped)**                **0.701 / 0.459**
z-score, w 0.3, union                                                  0.700 / 0.458
distribution-based (mean ± 3 sd → [0, 1]), w 0.3, union                0.700 / 0.448
max-only (score / max, natural zero), w 0.3 / 0.4, union               0.686 / 0.459, 0.699 / 0.456
min-max, union, w 0.1 / 0.2 / 0.25 / 0.35 / 0.4 / 0.5                  0.676, 0.685, 0.692, 0.700, 0.696,
                                                                       0.681 (MRR 0.452 to 0.459)
min-max, w 0.3, union, pool 50 / 200                                   0.702 / 0.460, 0.697 / 0.458
min-max, w 0.3, union, whole-text document vectors                     0.687 / 0.451
=====================================================================  ===============

RRF throws the score gaps away: with a weak arm (here the static model) equal-weight RRF drags good lexical
hits down, below lexical alone. Among score-based fusions min-max and z-score tie; min-max is shipped because
its components stay in [0, 1] and read directly in an explanation. The weight has a flat optimum from 0.25 to
0.4; 0.3 sits in it. Scoring the union with both arms is worth ~0.01 R@10 over leaving a candidate's missing
arm at 0, and the pool size hardly matters between 50 and 200.

Since BM25 counts each memory's lead three times (:func:`ee.index.derive.index_tokens`; lexical alone 0.678 /
0.466), the same grid keeps its flat optimum: min-max, union, w 0.25 / 0.3 / 0.35 / 0.4 give 0.700 / 0.472,
0.702 / 0.475, 0.704 / 0.475, 0.703 / 0.471, so 0.3 stays.

**What runs where.** Ranking calls :func:`fuse_arrays` only. :func:`fuse` (and :func:`minmax`) stay as
its pure-Python statement, to which ``tests/test_fusion.py`` pins every float ``fuse_arrays`` computes;
:func:`rrf` and :func:`fuse` are what ``scripts/tune_retrieval.py`` measures the table above with. (Issue 32
asked for the helpers the product does not call to go: kept for these two uses.)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RRF_K",
    "WEIGHT_SEMANTIC",
    "WEIGHT_TRANSFORMER",
    "FusedScore",
    "fuse",
    "fuse_arrays",
    "minmax",
    "rrf",
    "semantic_weight",
]

WEIGHT_SEMANTIC = 0.3
# The transformer arm is a stronger witness, so it weighs more. On the development set (hybrid, floor
# off; scripts/tune_relevance.py --arm transformer --weights ...), recall@10 / MRR@10 at 0.3: 0.7227 /
# 0.4851, 0.4: 0.7343 / 0.4850, 0.5: 0.7430 / 0.4833, 0.6: 0.7324 / 0.4741 (static arm at 0.3: 0.7053 /
# 0.4832; bm25s 0.6300 / 0.3976). 0.4 holds MRR where 0.5 gains recall and loses it. With the lead's
# vector in the documents (stop 39): 0.35: 0.7333 / 0.4938, 0.4: 0.7372 / 0.4929, 0.45: 0.7382 /
# 0.4953, 0.5: 0.7391 / 0.4945, within 0.3 % of each other: 0.4 kept.
WEIGHT_TRANSFORMER = 0.4


def semantic_weight(arm: str) -> float:
    """The semantic arm's weight in the fusion for the arm that answers (``static`` or ``transformer``)."""
    return WEIGHT_TRANSFORMER if arm == "transformer" else WEIGHT_SEMANTIC


RRF_K = 60


@dataclass(frozen=True, slots=True)
class FusedScore:
    """One candidate's fused score with every component that produced it.

    ``lexical`` / ``semantic`` are the raw arm scores (``None`` when that arm gave no score),
    ``lexical_norm`` / ``semantic_norm`` their normalised values, ``fused`` the final score.
    """

    lexical: float | None
    semantic: float | None
    lexical_norm: float
    semantic_norm: float
    fused: float


def _check(scores: Mapping[str, float], arm: str) -> None:
    for key, value in scores.items():
        if not math.isfinite(value):
            raise ValueError(f"{arm} score for {key!r} is not finite: {value!r}")


def _check_weight(weight: float) -> None:
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight_semantic must be within [0, 1], got {weight!r}")


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Rescale to [0, 1] (lowest → 0, highest → 1). If all are equal, every candidate gets 1.0 when that
    score is a match (positive) and 0.0 when it is not: an arm that matched nothing never reads as a
    perfect match."""
    if not scores:
        return {}
    lo = min(scores.values())
    hi = max(scores.values())
    if hi <= lo:
        return dict.fromkeys(scores, 1.0 if hi > 0 else 0.0)
    span = hi - lo
    return {key: (value - lo) / span for key, value in scores.items()}


def _ordered(scored: dict[str, FusedScore]) -> dict[str, FusedScore]:
    return dict(sorted(scored.items(), key=lambda item: (-item[1].fused, item[0])))


def fuse(
    lexical: Mapping[str, float],
    semantic: Mapping[str, float],
    *,
    weight_semantic: float = WEIGHT_SEMANTIC,
    ordered: bool = True,
) -> dict[str, FusedScore]:
    """Min-max linear fusion of two arms' raw scores (id → score); best first, ties by id.

    ``weight_semantic`` 0 ranks by the lexical arm alone, 1 by the semantic arm alone; either dict may be
    empty. ``ordered`` False skips the sort, for a caller that only looks scores up (ranking orders by the
    final score later).
    """
    _check_weight(weight_semantic)
    _check(lexical, "lexical")
    _check(semantic, "semantic")
    lex_norm = minmax(lexical)
    sem_norm = minmax(semantic)
    w_lex = 1.0 - weight_semantic
    out: dict[str, FusedScore] = {}
    for key in lexical.keys() | semantic.keys():
        ln = lex_norm.get(key, 0.0)
        sn = sem_norm.get(key, 0.0)
        out[key] = FusedScore(
            lexical=lexical.get(key),
            semantic=semantic.get(key),
            lexical_norm=ln,
            semantic_norm=sn,
            fused=w_lex * ln + weight_semantic * sn,
        )
    return _ordered(out) if ordered else out


def fuse_arrays(
    lexical: Any,
    semantic: Any,
    name_of: Callable[[int], str],
    *,
    weight_semantic: float = WEIGHT_SEMANTIC,
) -> tuple[Any, Any, Any]:
    """:func:`fuse` over numpy arrays, for ranking's candidates: ``lexical`` and ``semantic`` hold each
    candidate's raw float64 score, the same candidates in the same order (None: the arm gave no scores,
    as an empty dict does for ``fuse``). Returns the arrays ``(lexical_norm, semantic_norm, fused)``.

    Every value is the float :func:`fuse` computes for that candidate: the same IEEE operations in the
    same order (min, max, ``(value - lo) / span``, ``w_lex * ln + w * sn``), element-wise in C instead of
    one dict entry and one :class:`FusedScore` per candidate. ``name_of(i)`` names candidate ``i`` in the
    error a non-finite score raises (the first one, lexical arm first, as ``fuse`` reports it)."""
    import numpy as np

    _check_weight(weight_semantic)
    size = len(lexical) if lexical is not None else len(semantic) if semantic is not None else 0
    norms = []
    for arm, values in (("lexical", lexical), ("semantic", semantic)):
        if values is None or size == 0:
            norms.append(np.zeros(size, dtype=np.float64))
            continue
        finite = np.isfinite(values)
        if not finite.all():
            first = int(np.flatnonzero(~finite)[0])
            raise ValueError(f"{arm} score for {name_of(first)!r} is not finite: {float(values[first])!r}")
        lo, hi = values.min(), values.max()
        if hi <= lo:  # all equal: a match (positive) everywhere, or nothing matched (see minmax)
            norms.append(np.full(size, 1.0 if hi > 0 else 0.0, dtype=np.float64))
        else:
            norms.append((values - lo) / (hi - lo))
    lexical_norm, semantic_norm = norms
    fused = (1.0 - weight_semantic) * lexical_norm + weight_semantic * semantic_norm
    return lexical_norm, semantic_norm, fused


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1-based ranks, best score first, ties by id."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return {key: i for i, (key, _) in enumerate(ordered, start=1)}


def rrf(
    lexical: Mapping[str, float],
    semantic: Mapping[str, float],
    *,
    weight_semantic: float = 0.5,
    k: int = RRF_K,
) -> dict[str, FusedScore]:
    """Weighted reciprocal-rank fusion, the documented baseline (Cormack et al., 2009).

    ``fused = (1 - w) / (k + lexical_rank) + w / (k + semantic_rank)``; the ``*_norm`` fields hold each arm's
    unweighted ``1 / (k + rank)`` (0.0 when the arm did not rank the candidate). With ``w`` 0.5 this is
    plain RRF up to a factor of 2.
    """
    _check_weight(weight_semantic)
    _check(lexical, "lexical")
    _check(semantic, "semantic")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k!r}")
    lex_rank = _ranks(lexical)
    sem_rank = _ranks(semantic)
    out: dict[str, FusedScore] = {}
    for key in lexical.keys() | semantic.keys():
        ln = 1.0 / (k + lex_rank[key]) if key in lex_rank else 0.0
        sn = 1.0 / (k + sem_rank[key]) if key in sem_rank else 0.0
        out[key] = FusedScore(
            lexical=lexical.get(key),
            semantic=semantic.get(key),
            lexical_norm=ln,
            semantic_norm=sn,
            fused=(1.0 - weight_semantic) * ln + weight_semantic * sn,
        )
    return _ordered(out)
