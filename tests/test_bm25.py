from __future__ import annotations

import math
from pathlib import Path

import pytest

from ee.index import bm25
from ee.index.tokenize import tokenize

DOCS = [
    "Run the test suite with pytest before every commit.",
    "Never commit with --no-verify: the pre-commit hook catches secrets.",
    "The CI pipeline lives in src/ci/build.yml and runs on every push.",
    "Use snake_case for Python functions and CamelCase for classes.",
    "",
    "pytest fixtures live in tests/conftest.py; run pytest -x to stop early.",
]


@pytest.fixture
def index() -> bm25.Bm25Index:
    return bm25.build([tokenize(d) for d in DOCS])


def test_defaults_are_tuned_constants() -> None:
    idx = bm25.build([["a"], ["b"]])
    assert idx.params == {"k1": bm25.K1, "b": bm25.B, "method": bm25.METHOD}


def test_search_ranks_matching_docs(index: bm25.Bm25Index) -> None:
    hits = index.search(tokenize("pytest"), k=10)
    assert sorted(pos for pos, _ in hits) == [0, 5]  # only the documents that mention pytest
    assert all(score > 0 for _, score in hits)
    assert hits[0][1] >= hits[1][1]
    assert index.search(tokenize("build.yml"), k=3)[0][0] == 2
    assert index.search(tokenize("--no-verify"), k=3)[0][0] == 1
    assert index.search(tokenize("camel case"), k=3)[0][0] == 3


def test_k_limits_and_order(index: bm25.Bm25Index) -> None:
    hits = index.search(tokenize("commit pytest run"), k=2)
    assert len(hits) == 2
    assert hits[0][1] >= hits[1][1]
    assert index.search(tokenize("pytest"), k=0) == []


def test_ties_break_by_position() -> None:
    idx = bm25.build([["x", "y"], ["z"], ["y", "x"], ["x", "y"]])
    hits = idx.search(["x"], k=10)
    assert [pos for pos, _ in hits] == [0, 2, 3]
    assert len({score for _, score in hits}) == 1
    assert [pos for pos, _ in idx.search(["x"], k=2)] == [0, 2]


def test_unknown_and_empty_queries(index: bm25.Bm25Index) -> None:
    assert index.search([], k=5) == []
    assert index.search(["zzz-not-there"], k=5) == []
    known = index.search(tokenize("pytest"), k=5)
    assert index.search([*tokenize("pytest"), "zzz-not-there"], k=5) == known


def test_scores_match_lucene_bm25() -> None:
    corpus = [["a", "b"], ["a", "a", "c", "d"], ["e"]]
    k1, b = 1.2, 0.75
    idx = bm25.build(corpus, k1=k1, b=b, method="lucene")
    avgdl = sum(map(len, corpus)) / len(corpus)
    n, df = len(corpus), 2

    def expected(tf: int, dl: int) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))

    got = dict(idx.search(["a"], k=3))
    assert got[0] == pytest.approx(expected(1, 2), rel=1e-5)
    assert got[1] == pytest.approx(expected(2, 4), rel=1e-5)
    assert 2 not in got


def test_repeated_query_token_counts_again(index: bm25.Bm25Index) -> None:
    once = dict(index.search(["pytest"], k=5))
    twice = dict(index.search(["pytest", "pytest"], k=5))
    assert twice.keys() == once.keys()
    for pos in once:
        assert twice[pos] == pytest.approx(2 * once[pos], rel=1e-6)


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(index: bm25.Bm25Index, tmp_path: Path, mmap: bool) -> None:
    index.save(tmp_path / "bm25")
    loaded = bm25.Bm25Index.load(tmp_path / "bm25", mmap=mmap)
    assert loaded.n_docs == index.n_docs == len(DOCS)
    assert loaded.vocab_size == index.vocab_size
    assert loaded.params == index.params
    for q in ("pytest", "commit hook", "src/ci/build.yml", "snake_case", "nothing-here", ""):
        assert loaded.search(tokenize(q), k=10) == index.search(tokenize(q), k=10)


def test_save_is_deterministic(tmp_path: Path) -> None:
    for name in ("one", "two"):
        bm25.build([tokenize(d) for d in DOCS]).save(tmp_path / name)
    for f in sorted((tmp_path / "one").iterdir()):
        assert f.read_bytes() == (tmp_path / "two" / f.name).read_bytes(), f.name


def test_empty_corpus_and_empty_docs(tmp_path: Path) -> None:
    for corpus in ([], [[], []]):
        idx = bm25.build(corpus)
        assert idx.n_docs == len(corpus)
        assert idx.search(["x"], k=5) == []
        idx.save(tmp_path / str(len(corpus)))
        again = bm25.Bm25Index.load(tmp_path / str(len(corpus)))
        assert again.n_docs == len(corpus)
        assert again.search(["x"], k=5) == []


def test_other_methods_rank_consistently() -> None:
    corpus = [tokenize(d) for d in DOCS]
    for method in ("robertson", "atire", "bm25l", "bm25+"):
        idx = bm25.build(corpus, method=method)
        assert idx.search(tokenize("build.yml"), k=1)[0][0] == 2


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_equal_bm25s_own(method: str) -> None:
    import bm25s

    corpus = [tokenize(d) for d in DOCS if d]
    idx = bm25.build(corpus, method=method)
    ref = bm25s.BM25(k1=bm25.K1, b=bm25.B, method=method)
    ref.index(corpus, show_progress=False)
    for q in ("pytest run", "commit", "build.yml ci push"):
        toks = tokenize(q)
        want = ref.get_scores(toks)
        got = idx.scores(toks)
        for pos, _ in idx.search(toks, k=len(corpus)):
            assert got[pos] == pytest.approx(want[pos], rel=1e-5)
