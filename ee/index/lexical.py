"""The lexical index: BM25 over ee's tokens, stored in bm25s's array layout.

Why ee has its own BM25 rather than bm25s's: bm25s cannot update an index (``bm25s.BM25.index`` builds
it again, with per-document Python structures: ~1 s for 10k memories), while an edit must be searchable
in well under 150 ms. The score matrix is the same one bm25s builds (``method="lucene"``:
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, term weight ``tf / (tf + k1 * (1 - b + b * dl / avgdl))``;
``tests/test_lexical.py`` pins the scores to bm25s's on the same tokens, built at once and after
incremental updates), computed here with a few vectorised numpy passes from the
token ids of every memory, so an incremental update recomputes it exactly (no drifting statistics: the
index after any sequence of updates equals a full rebuild). The arrays and ``params.index.json`` are
bm25s's; the vocabulary is ``vocab.sorted.marshal`` (bm25s reads ``vocab.index.json``): the tokens'
UTF-8 bytes sorted and laid end to end, with where each starts and its column, looked up by bisection
(:class:`Vocabulary`). Parsing the JSON was ~35 ms of every fresh query at 100k memories; building even
a dict of the 100k tokens ~50 ms, for the handful of tokens a query looks up.

Query scoring reads the memory-mapped CSC arrays directly (a sum of the query tokens' columns), so the
read path needs numpy but not the bm25s import (~90 ms).

The defaults (:data:`K1` 1.5, :data:`B` 1.0, :data:`METHOD` ``lucene``) were tuned on the dev set (Vim
help in BEIR layout, 6 398 docs, 1 035 queries) with ee's tokenizer: ``PYTHONPATH=. python
scripts/tune_retrieval.py /work/devset --grid lexical``. Recall@10 / MRR@10, lucene:

=========  =============  =============  =============  =============  =============  =============
k1 \\ b     0.6            0.75           0.85           0.9            0.95           1.0
=========  =============  =============  =============  =============  =============  =============
0.9        0.567 / 0.328  0.603 / 0.369  0.630 / 0.404  0.639 / 0.418  0.648 / 0.426  0.646 / 0.431
1.2        0.576 / 0.327  0.615 / 0.373  0.640 / 0.409  0.649 / 0.423  0.653 / 0.436  0.649 / 0.438
**1.5**    0.571 / 0.322  0.614 / 0.375  0.644 / 0.412  0.654 / 0.427  0.656 / 0.440  **0.666 / 0.445**
2.0        0.565 / 0.314  0.617 / 0.374  0.650 / 0.414  0.657 / 0.432  0.666 / 0.444  0.669 / 0.449
2.5        0.562 / 0.304  0.619 / 0.369  0.657 / 0.415  0.661 / 0.431  0.671 / 0.448  0.674 / 0.448
=========  =============  =============  =============  =============  =============  =============

(bm25s's own tokenizer with k1 1.5, b 0.75, the eval README's baseline: 0.630 / 0.398.) ``b`` near 1, full
length normalisation, is the one large effect: memories and help chunks vary a lot in length, and a long
document must not win on sheer vocabulary. ``k1`` is flat from 1.5 to 2.5; 1.5 (the middle of the textbook
1.2 to 2.0 range, and bm25s's default) is kept rather than the dev set's marginal best. ``robertson``,
``atire``, ``bm25l`` and ``bm25+`` score within 0.003 of ``lucene`` at k1 1.5, b 1.0 (0.664 / 0.442,
0.665 / 0.445, 0.669 / 0.449, 0.665 / 0.445), so Lucene's formula, the best known, is kept.
"""

from __future__ import annotations

import itertools
import json
import marshal
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ee.config import write_private

METHOD = "lucene"
# Tuned on the development set with ee's tokenizer (scripts/tune_retrieval.py): b = 1 (full length
# normalisation) is the largest single gain; k1 = 1.5 sits on a flat optimum (2.0-2.5 was within noise).
K1 = 1.5
B = 1.0
_FILES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")
VOCAB = "vocab.sorted.marshal"


class Vocabulary(Mapping[str, int]):
    """Token → column, read from the sorted form :meth:`Lexical.save` writes: ``get`` bisects the sorted
    token bytes (no dict is built, and a query looks up a handful of tokens); iterating or sizing it
    builds the dict once (an update, which copies the vocabulary anyway)."""

    __slots__ = ("_columns", "_dict", "_starts", "_tokens")

    def __init__(self, tokens: bytes, starts: np.ndarray, columns: np.ndarray) -> None:
        self._tokens = tokens  # every token's UTF-8 bytes (surrogates passed), sorted, end to end
        self._starts = starts  # int64, where each starts, and the end: len = size + 1
        self._columns = columns  # int64, the column of each
        self._dict: dict[str, int] | None = None

    @classmethod
    def of(cls, vocab: Mapping[str, int]) -> Vocabulary:
        if isinstance(vocab, Vocabulary):
            return vocab
        pairs = sorted((_key(token), column) for token, column in vocab.items())
        starts = np.zeros(len(pairs) + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(key) for key, _column in pairs), np.int64, len(pairs)), out=starts[1:])
        columns = np.fromiter((column for _key, column in pairs), np.int64, len(pairs))
        return cls(b"".join(key for key, _column in pairs), starts, columns)

    def to_record(self) -> dict[str, bytes]:
        return {
            "tokens": self._tokens,
            "starts": self._starts.astype(np.int64).tobytes(),
            "columns": self._columns.astype(np.int64).tobytes(),
        }

    @classmethod
    def from_record(cls, record: Any) -> Vocabulary:
        """Raises ValueError/KeyError/TypeError when ``record`` is damaged."""
        tokens, starts, columns = record["tokens"], record["starts"], record["columns"]
        if not (isinstance(tokens, bytes) and isinstance(starts, bytes) and isinstance(columns, bytes)):
            raise TypeError("vocabulary damaged")
        table = np.frombuffer(starts, dtype=np.int64)
        values = np.frombuffer(columns, dtype=np.int64)
        if len(table) != len(values) + 1 or int(table[0]) != 0 or int(table[-1]) != len(tokens):
            raise ValueError("vocabulary damaged")
        return cls(tokens, table, values)

    def fits(self, columns: int) -> bool:
        """Does every token name a column below ``columns``?"""
        values = self._columns
        return not len(values) or 0 <= int(values.min()) <= int(values.max()) < columns

    def _find(self, token: object) -> int:
        if self._dict is not None or not isinstance(token, str):
            return -1
        key, tokens, starts = _key(token), self._tokens, self._starts
        size = len(starts) - 1
        lo, hi = 0, size
        while lo < hi:  # the first token not below ``key``
            mid = (lo + hi) // 2
            if tokens[int(starts[mid]) : int(starts[mid + 1])] < key:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < size and tokens[int(starts[lo]) : int(starts[lo + 1])] == key else -1

    def get(self, token: object, default: Any = None) -> Any:
        if self._dict is not None:
            return self._dict.get(token, default)  # type: ignore[call-overload]
        at = self._find(token)
        return int(self._columns[at]) if at >= 0 else default

    def __getitem__(self, token: str) -> int:
        column: int | None = self.get(token)
        if column is None:
            raise KeyError(token)
        return column

    def __contains__(self, token: object) -> bool:
        return self.get(token) is not None

    def as_dict(self) -> dict[str, int]:
        if self._dict is None:
            starts, tokens = self._starts.tolist(), self._tokens
            words = [tokens[a:b].decode("utf-8", "surrogatepass") for a, b in itertools.pairwise(starts)]
            self._dict = dict(zip(words, self._columns.tolist(), strict=True))
        return self._dict

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self._starts) - 1


def _key(token: str) -> bytes:
    return token.encode("utf-8", "surrogatepass")


class Lexical:
    """A BM25 score matrix in CSC form: column ``t`` holds the scores of token ``t`` in each document."""

    __slots__ = ("b", "data", "indices", "indptr", "k1", "n_docs", "vocab")

    def __init__(
        self,
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        vocab: Mapping[str, int],
        n_docs: int,
        k1: float = K1,
        b: float = B,
    ) -> None:
        self.data = data  # float32 scores
        self.indices = indices  # int32 document positions
        self.indptr = indptr  # int64 column starts, len = vocab size + 1
        self.vocab = vocab
        self.n_docs = n_docs
        self.k1 = k1
        self.b = b

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for ``query_tokens`` (float64; a repeated token counts again)."""
        out = np.zeros(self.n_docs, dtype=np.float64)
        for token in query_tokens:
            column = self.vocab.get(token)
            if column is None or column + 1 >= len(self.indptr):
                continue
            start, end = int(self.indptr[column]), int(self.indptr[column + 1])
            if start < end:
                np.add.at(out, self.indices[start:end], self.data[start:end].astype(np.float64))
        return out

    def document_frequency(self, token: str) -> int:
        column = self.vocab.get(token)
        if column is None:
            return 0
        return int(self.indptr[column + 1] - self.indptr[column])

    def save(self, folder: Path) -> None:
        """Write the score arrays in bm25s's layout, the vocabulary sorted (:class:`Vocabulary`)."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in zip(_FILES, (self.data, self.indices, self.indptr), strict=True):
            np.save(folder / name, array)
        write_private(folder / VOCAB, marshal.dumps(Vocabulary.of(self.vocab).to_record()))
        params = {
            "k1": self.k1,
            "b": self.b,
            "delta": 0.5,
            "method": METHOD,
            "idf_method": METHOD,
            "dtype": "float32",
            "int_dtype": "int32",
            "num_docs": self.n_docs,
            "version": "ee",
            "backend": "numpy",
        }
        write_private(folder / "params.index.json", json.dumps(params, indent=2).encode("utf-8"))

    @classmethod
    def load(cls, folder: Path) -> Lexical:
        """The saved index; a ValueError (a damaged generation, built again) when its arrays load but do
        not fit together: a posting past the last document or a column past the matrix would be a
        query's IndexError, a NaN score its internal error."""
        data, indices, indptr = (np.load(folder / name, mmap_mode="r") for name in _FILES)
        vocab = Vocabulary.from_record(marshal.loads((folder / VOCAB).read_bytes()))  # noqa: S302 - ours
        params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
        n_docs = int(params["num_docs"])
        if not (
            data.ndim == indices.ndim == indptr.ndim == 1
            and len(data) == len(indices)
            and len(indptr) >= 1
            and int(indptr[0]) == 0
            and int(indptr[-1]) == len(data)
            and bool((np.diff(indptr) >= 0).all())
            and (not len(indices) or 0 <= int(indices.min()) <= int(indices.max()) < n_docs)
            and bool(np.isfinite(data).all())
            and vocab.fits(len(indptr) - 1)
        ):
            raise ValueError("lexical index damaged")
        return cls(data, indices, indptr, vocab, n_docs, float(params["k1"]), float(params["b"]))


# ---- term counts: what an index keeps to be updated exactly (ee.index.segment, ee.sessions.index) -------
#
# ``keys`` are the sorted (token << 32 | position) pairs of every document, ``tf`` each pair's term
# frequency and ``lengths`` each document's token count. They are all BM25 needs: an update drops
# documents and appends new ones at the end (:func:`updated_counts`), and :func:`from_counts` computes the
# matrix again, so any sequence of updates scores as a full build of the same documents does.

MASK32 = np.int64(0xFFFFFFFF)


def count(docs: Sequence[Sequence[str]], vocab: dict[str, int], base: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (token << 32 | position) keys and term frequencies of ``docs`` at positions ``base``…,
    growing ``vocab`` with new tokens: one vectorised pass (a per-document Counter cost ~1 s at 10k)."""
    lengths = np.fromiter((len(doc) for doc in docs), np.int64, len(docs))
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    flat = np.fromiter((vocab.setdefault(t, len(vocab)) for doc in docs for t in doc), np.int64, total)
    where = np.repeat(np.arange(base, base + len(docs), dtype=np.int64), lengths)
    keys, tf = np.unique((flat << 32) | where, return_counts=True)
    return keys, tf.astype(np.int32)


def updated_counts(
    keys: np.ndarray,
    tf: np.ndarray,
    keep: np.ndarray,
    add_keys: np.ndarray,
    add_tf: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``keys``/``tf`` without the documents ``keep`` is False for, the others renumbered in order, with
    ``add_keys``/``add_tf`` (of documents counted at positions after the kept ones) merged in. The keys stay
    sorted without a full sort: dropping documents and renumbering the rest keeps their order."""
    new_pos = np.cumsum(keep, dtype=np.int64) - 1
    positions = keys & MASK32
    alive = keep[positions] if keep.size else np.zeros(0, dtype=bool)
    old_keys = ((keys[alive] >> 32) << 32) | new_pos[positions[alive]]
    old_tf = tf[alive].astype(np.int32)
    at = np.searchsorted(old_keys, add_keys)
    return np.insert(old_keys, at, add_keys), np.insert(old_tf, at, add_tf)


def compacted(
    keys: np.ndarray, vocab: Mapping[str, int], slack: float = 0.25
) -> tuple[np.ndarray, Mapping[str, int]]:
    """``keys`` and ``vocab`` without the tokens no document holds any more, once they are ``slack`` of the
    vocabulary (edits over days would otherwise grow it without bound); else both as they are. Scores do not
    change: such tokens have no column."""
    n_vocab = len(vocab)
    tokens = keys >> 32
    used = np.zeros(n_vocab, dtype=bool)
    used[tokens] = True
    dead = n_vocab - int(used.sum())
    if dead <= max(1000, slack * n_vocab):
        return keys, vocab
    remap = np.cumsum(used, dtype=np.int64) - 1
    kept = {t: int(remap[i]) for t, i in vocab.items() if used[i]}
    return (remap[tokens] << 32) | (keys & MASK32), kept  # token-major order is unchanged


def keys_of(lexical: Lexical) -> np.ndarray:
    """The sorted (token << 32 | position) keys, read back from a score matrix: its columns are the tokens
    and hold the positions in key order (see :func:`from_counts`), so they need not be saved twice."""
    indptr = np.asarray(lexical.indptr)
    tokens = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    return (tokens << 32) | np.asarray(lexical.indices).astype(np.int64)


def from_counts(
    keys: np.ndarray,
    tf: np.ndarray,
    lengths: np.ndarray,
    vocab: Mapping[str, int],
    k1: float = K1,
    b: float = B,
) -> Lexical:
    """The BM25 matrix of the documents ``keys``, ``tf`` and ``lengths`` describe."""
    n_docs, n_vocab = len(lengths), len(vocab)
    tokens = keys >> 32
    positions = (keys & MASK32).astype(np.int32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    if n_docs == 0 or keys.size == 0:
        return Lexical(np.zeros(0, np.float32), positions, indptr, vocab, n_docs, k1, b)
    df = np.bincount(tokens, minlength=n_vocab)
    np.cumsum(df, out=indptr[1:])
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    as_float = lengths.astype(np.float64)
    avgdl = as_float.sum() / n_docs if as_float.sum() else 1.0
    frequency = tf.astype(np.float64)
    norm = k1 * (1.0 - b + b * as_float[positions] / avgdl)
    data = (idf[tokens] * (frequency / (frequency + norm))).astype(np.float32)
    return Lexical(data, positions, indptr, vocab, n_docs, k1, b)


def build(docs: Sequence[Sequence[str]], k1: float = K1, b: float = B) -> Lexical:
    """The BM25 matrix of ``docs`` (token lists, one per document position)."""
    vocab: dict[str, int] = {}
    lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
    flat = np.fromiter(
        (vocab.setdefault(token, len(vocab)) for doc in docs for token in doc),
        dtype=np.int64,
        count=int(lengths.sum()),
    )
    return build_from_ids(flat, lengths, vocab, k1, b)


def build_from_ids(
    flat: np.ndarray, lengths: np.ndarray, vocab: dict[str, int], k1: float = K1, b: float = B
) -> Lexical:
    """The same from a flat array of token ids and the length of each document."""
    n_docs = len(lengths)
    n_vocab = len(vocab)
    if n_docs == 0 or flat.size == 0:
        empty_ptr = np.zeros(n_vocab + 1, dtype=np.int64)
        return Lexical(np.zeros(0, np.float32), np.zeros(0, np.int32), empty_ptr, vocab, n_docs, k1, b)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    # One key per (token, document) pair, sorted token-major: CSC column order, documents ascending.
    keys = flat * n_docs + doc_of
    unique, tf = np.unique(keys, return_counts=True)
    tokens = unique // n_docs
    doc_ids = unique % n_docs
    df = np.bincount(tokens, minlength=n_vocab)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
    avgdl = lengths.sum() / n_docs
    norm = k1 * (1.0 - b + b * lengths[doc_ids] / avgdl)
    scores = (idf[tokens] * (tf / (tf + norm))).astype(np.float32)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return Lexical(scores, doc_ids.astype(np.int32), indptr, vocab, n_docs, k1, b)
