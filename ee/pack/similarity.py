"""Pairwise similarity of pack candidates: cosine over the memories' embedding vectors, or token Jaccard
(ee's tokenizer over the body) when the index has no vectors (no usable embedding model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def similarity(gen: Any, positions: Sequence[int], bodies: Sequence[str]) -> tuple[np.ndarray, str]:
    """(an n-by-n matrix with a diagonal of 1, "embedding" | "token_jaccard")."""
    n = len(positions)
    if n == 0:
        return np.zeros((0, 0), dtype=np.float32), "embedding" if gen.vectors is not None else "token_jaccard"
    if gen.vectors is not None:
        vectors = np.asarray(gen.vectors[np.asarray(positions, dtype=np.int64)], dtype=np.float32)
        sim = np.clip(vectors @ vectors.T, -1.0, 1.0)
        np.fill_diagonal(sim, 1.0)
        return sim, "embedding"
    return jaccard(bodies), "token_jaccard"


def jaccard(bodies: Sequence[str]) -> np.ndarray:
    """Token Jaccard (shared tokens / tokens of either) of each pair of bodies; 1 on the diagonal, 0 for
    two empty bodies."""
    from ee.index.tokenize import tokenize

    vocab: dict[str, int] = {}
    rows = [sorted({vocab.setdefault(t, len(vocab)) for t in tokenize(body)}) for body in bodies]
    matrix = np.zeros((len(bodies), max(1, len(vocab))), dtype=np.float32)
    for i, row in enumerate(rows):
        matrix[i, row] = 1.0
    inter = matrix @ matrix.T
    sizes = matrix.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - inter
    sim = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    np.fill_diagonal(sim, 1.0)
    return sim
