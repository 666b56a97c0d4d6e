"""The lexical index: BM25 over ee's tokens, stored in bm25s's array layout.

Why not call ``bm25s.BM25.index`` on every change: it builds per-document Python structures and takes
~1 s for 10k memories, while an edit must be searchable in well under 150 ms. The score matrix is the
same one bm25s builds (``method="lucene"``: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, term weight
``tf / (tf + k1 * (1 - b + b * dl / avgdl))``), computed here with a few vectorised numpy passes from the
token ids of every memory, so an incremental update recomputes it exactly (no drifting statistics: the
index after any sequence of updates equals a full rebuild). The arrays and ``params.index.json`` are
bm25s's; the vocabulary is ``vocab.marshal`` (bm25s reads ``vocab.index.json``): parsing the JSON was
~35 ms of every fresh query at 100k memories, the marshal dict loads in a fraction of that.

Query scoring reads the memory-mapped CSC arrays directly (a sum of the query tokens' columns), so the
read path needs numpy but not the bm25s import (~90 ms).
"""

from __future__ import annotations

import json
import marshal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

METHOD = "lucene"
# Tuned on the development set with ee's tokenizer (scripts/tune_retrieval.py): b = 1 (full length
# normalisation) is the largest single gain; k1 = 1.5 sits on a flat optimum (2.0-2.5 was within noise).
K1 = 1.5
B = 1.0
_FILES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")
VOCAB = "vocab.marshal"


@dataclass(slots=True)
class Lexical:
    """A BM25 score matrix in CSC form: column ``t`` holds the scores of token ``t`` in each document."""

    data: np.ndarray  # float32 scores
    indices: np.ndarray  # int32 document positions
    indptr: np.ndarray  # int64 column starts, len = vocab size + 1
    vocab: dict[str, int]
    n_docs: int
    k1: float = K1
    b: float = B

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
        """Write the score arrays in bm25s's layout, the vocabulary as ``vocab.marshal``."""
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in zip(_FILES, (self.data, self.indices, self.indptr), strict=True):
            np.save(folder / name, array)
        (folder / VOCAB).write_bytes(marshal.dumps(self.vocab))
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
        (folder / "params.index.json").write_text(json.dumps(params, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Lexical:
        data, indices, indptr = (np.load(folder / name, mmap_mode="r") for name in _FILES)
        vocab = marshal.loads((folder / VOCAB).read_bytes())  # noqa: S302 - our own file
        if not isinstance(vocab, dict):
            raise ValueError("vocabulary damaged")
        params = json.loads((folder / "params.index.json").read_text(encoding="utf-8"))
        return cls(data, indices, indptr, vocab, int(params["num_docs"]), float(params["k1"]), float(params["b"]))


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


def build_from_ids(flat: np.ndarray, lengths: np.ndarray, vocab: dict[str, int], k1: float = K1,
                   b: float = B) -> Lexical:
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


def top_k(scores: np.ndarray, k: int, ids: Sequence[str], mask: np.ndarray | None = None) -> list[tuple[int, float]]:
    """Positions of the ``k`` best positive scores, best first, ties broken by memory id."""
    candidates = np.flatnonzero(scores > 0)
    if mask is not None:
        candidates = candidates[mask[candidates]]
    if candidates.size == 0:
        return []
    if candidates.size > k * 4:
        # Keep a generous head by score, then sort exactly (score desc, id asc) for determinism.
        cut = np.argpartition(-scores[candidates], k * 4)[: k * 4]
        threshold = scores[candidates[cut]].min()
        candidates = candidates[scores[candidates] >= threshold]
    ranked = sorted(candidates.tolist(), key=lambda pos: (-float(scores[pos]), ids[pos]))
    return [(pos, float(scores[pos])) for pos in ranked[:k]]


def params_of(lexical: Lexical) -> dict[str, Any]:
    return {"k1": lexical.k1, "b": lexical.b, "method": METHOD}
