"""Query pieces that read the lexical postings for a few candidates instead of a pass over every document
are pinned to the dense definition on random corpora."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ee.index.lexical import build
from ee.query.engine import _ranks_of, _top
from ee.query.relevance import _terms

WORDS = ["cache", "cold", "build", "fails", "merge", "commit", "tests", "snapshot", "leak"]
DOCS = st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=30)


@settings(max_examples=100, deadline=None)
@given(DOCS, st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=5), st.data())
def test_term_strengths_equal_the_dense_definition(
    docs: list[list[str]], query: list[str], data: st.DataObject
) -> None:
    lexical = build(docs)
    positions = np.asarray(
        data.draw(st.lists(st.integers(0, len(docs) - 1), max_size=len(docs))), dtype=np.int64
    )
    terms, idfs, weights = _terms(lexical, " ".join(query), positions)
    for term, idf, weight in zip(terms, idfs, weights, strict=True):
        column = lexical.vocab.get(term)
        if column is None:
            assert weight is None
            continue
        start, end = int(lexical.indptr[column]), int(lexical.indptr[column + 1])
        dense = np.zeros(len(docs), dtype=np.float64)
        dense[lexical.indices[start:end]] = lexical.data[start:end]
        df = end - start
        assert idf == math.log(1.0 + (len(docs) - df + 0.5) / (df + 0.5))
        expected = np.where(
            dense[positions] > 0, np.minimum(1.0, dense[positions] * (lexical.k1 + 1) / idf), 0.0
        )
        assert np.array_equal(weight, expected)


SCORES = st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0, 2.0, -1.0]), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(SCORES, st.data())
def test_ranks_of_left_out_candidates_count_every_higher_score(
    values: list[float], data: st.DataObject
) -> None:
    scores = np.asarray(values, dtype=np.float64)
    positions = data.draw(st.lists(st.integers(0, len(values) - 1), unique=True))
    ranks = _ranks_of(scores, positions)
    assert ranks == {p: (values[p], 1 + sum(s > values[p] for s in values)) for p in positions}


@settings(max_examples=200, deadline=None)
@given(SCORES, st.integers(1, 10), st.data())
def test_top_is_the_best_k_eligible_positive_scores_ties_by_id(
    values: list[float], k: int, data: st.DataObject
) -> None:
    scores = np.asarray(values, dtype=np.float64)
    eligible = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values))))
    ids = [f"mem_{i:03d}" for i in range(len(values))][::-1]  # ids do not follow positions
    best = sorted(
        ((p, s) for p, s in enumerate(values) if s > 0 and eligible[p]),
        key=lambda pair: (-pair[1], ids[pair[0]]),
    )
    assert _top(scores, k, ids, eligible) == best[:k]
