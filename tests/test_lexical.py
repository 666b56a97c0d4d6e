"""ee's own BM25 (ee.index.lexical) scores exactly as bm25s does on the same tokens: built at once, and
after the incremental updates a store's edits make (see the module's docstring for why ee has its own)."""

from __future__ import annotations

import math

import bm25s
import numpy as np
import pytest

from ee.index import lexical
from ee.index.segment import Generation
from ee.index.tokenize import LEAD_WORDS, tokenize
from ee.index.view import open_index
from ee.workspace import Workspace

DOCS = [
    "Run the test suite with pytest before every commit.",
    "Never commit with --no-verify: the pre-commit hook catches secrets.",
    "The CI pipeline lives in src/ci/build.yml and runs on every push.",
    "Use snake_case for Python functions and CamelCase for classes.",
    "pytest fixtures live in tests/conftest.py; run pytest -x to stop early.",
    "Retry a flaky test once; a second failure is a real failure of the commit.",
]
QUERIES = ["pytest run", "commit", "build.yml ci push", "flaky failure failure", "nothing-matches-this"]


def bm25s_scores(docs: list[list[str]], query: list[str], k1: float, b: float) -> np.ndarray:
    model = bm25s.BM25(k1=k1, b=b, method=lexical.METHOD)
    model.index(docs, show_progress=False)
    known = [token for token in query if token in model.vocab_dict]
    return np.zeros(len(docs)) if not known else np.asarray(model.get_scores(known), dtype=np.float64)


@pytest.mark.parametrize(("k1", "b"), [(lexical.K1, lexical.B), (1.2, 0.75), (0.9, 0.0)])
def test_a_built_matrix_scores_as_bm25s(k1: float, b: float) -> None:
    docs = [tokenize(text) for text in DOCS]
    index = lexical.build(docs, k1=k1, b=b)
    for text in QUERIES:
        query = tokenize(text)
        assert index.scores(query) == pytest.approx(bm25s_scores(docs, query, k1, b), rel=1e-5, abs=1e-7)


def test_lucene_formula_by_hand() -> None:
    corpus = [["a", "b"], ["a", "a", "c", "d"], ["e"]]
    k1, b = 1.2, 0.75
    avgdl, n, df = sum(map(len, corpus)) / len(corpus), len(corpus), 2

    def expected(tf: int, dl: int) -> float:
        return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + k1 * (1 - b + b * dl / avgdl))

    scores = lexical.build(corpus, k1=k1, b=b).scores(["a"])
    assert scores.tolist() == pytest.approx([expected(1, 2), expected(2, 4), 0.0], rel=1e-6)


def documents_of(gen: Generation) -> list[list[str]]:
    """Each position's tokens (as a bag) from the generation's (token << 32 | position) keys and counts."""
    token_of = {column: token for token, column in gen.vocab.items()}
    docs: list[list[str]] = [[] for _ in range(gen.size)]
    for key, count in zip(gen.keys.tolist(), gen.tf.tolist(), strict=True):
        docs[key & 0xFFFFFFFF].extend([token_of[key >> 32]] * count)
    return docs


def test_the_index_after_incremental_updates_scores_as_bm25s(ws: Workspace) -> None:
    memories = [ws.remember(text, tags=["ci"] if i % 2 else []) for i, text in enumerate(DOCS[:4])]
    first = open_index(ws)
    assert first.gen.size == 4
    ws.remember(DOCS[4], kind="rule")
    ws.forget(memories[1].id)
    path = ws.root / memories[2].path
    path.write_text(path.read_text(encoding="utf-8") + "\nAnd flaky pushes retry once.\n", encoding="utf-8")
    ws.remember(DOCS[5], kind="failure", tags=["flaky"])
    view = open_index(ws)
    assert view.report is not None
    assert not view.report.rebuilt
    gen = view.gen
    assert gen.size == 5
    assert gen.lexical is not None
    docs = documents_of(gen)
    for text in [*QUERIES, "flaky pushes retry", "ci rule"]:
        query = tokenize(text)
        want = bm25s_scores(docs, query, lexical.K1, lexical.B)
        assert gen.lexical.scores(query) == pytest.approx(want, rel=1e-5, abs=1e-7), text


def test_a_memory_that_opens_with_the_query_outscores_one_that_mentions_it_later(ws: Workspace) -> None:
    # The same words in both bodies (same length, same term counts): only where the query's words stand
    # differs. BM25 counts a memory's lead (its first LEAD_WORDS words) again, so the memory that says so
    # in its opening wins; without that rule the two would tie.
    topic = "Pipeline cache keys include the lockfile hash."
    rest = (
        "Nightly builds run on the shared runners and upload their logs to the artifact store for two weeks "
        "so that a failed job can be inspected later by whoever is on call that day."
    )
    assert len(rest.split()) > LEAD_WORDS
    opening = ws.remember(f"{topic} {rest}")
    later = ws.remember(f"{rest} {topic}")
    gen = open_index(ws).gen
    assert gen.lexical is not None
    scores = gen.lexical.scores(tokenize("pipeline cache lockfile"))
    assert scores[gen.position(opening.id)] > scores[gen.position(later.id)] > 0
