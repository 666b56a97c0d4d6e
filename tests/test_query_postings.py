"""Query pieces that read the lexical postings for a few candidates instead of a pass over every document
are pinned to the dense definition on random corpora."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ee.index.lexical import build
from ee.query.engine import _ranks_of, _top
from ee.query.filters import created_micros, passes_time, time_mask
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
    terms, idfs, _shares, weights = _terms(lexical, " ".join(query), positions)
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


TIMES = st.one_of(
    st.none(),
    st.just("not a time"),
    st.datetimes(
        min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.sampled_from([UTC, None])
    ).map(lambda moment: moment.isoformat()),
    st.sampled_from(["2026-03-01T00:00:00Z", "2026-03-01", "2026-03-01T00:00:00.000001+00:00"]),
)
BOUNDS = st.sampled_from(["2026-03-01T00:00:00Z", "2026-03-01T01:00:00+01:00", "2024-06-30T12:00:00.5Z"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(TIMES, max_size=20),
    st.dictionaries(st.sampled_from(["after", "before"]), BOUNDS, min_size=1),
    st.data(),
)
def test_time_mask_equals_passes_time_over_the_eligible_memories(
    created: list[str | None], spec: dict[str, str], data: st.DataObject
) -> None:
    eligible = np.asarray(
        data.draw(st.lists(st.booleans(), min_size=len(created), max_size=len(created))), bool
    )
    expected: list[bool] | None = []
    try:
        for pos, value in enumerate(created):
            if eligible[pos]:
                assert expected is not None
                expected.append(passes_time(value, spec))
    except ValueError:
        expected = None
    try:
        mask = time_mask(created, created_micros(created), spec, eligible)
    except ValueError:
        assert expected is None
        return
    assert expected is not None
    assert mask[eligible].tolist() == expected
