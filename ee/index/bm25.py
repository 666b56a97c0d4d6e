"""A thin, fast wrapper over bm25s for ee's lexical index.

ee tokenizes with :func:`ee.index.tokenize.tokenize`; bm25s only ever sees token ids and the vocabulary we
built, so it never re-tokenizes with its own splitter. The vocabulary is numbered in order of first
appearance (document order, then token order), so the same corpus gives byte-identical index files.

Scoring is bm25s's eager sparse matrix (one column of precomputed BM25 weights per term); a query sums the
columns of its known tokens (a repeated query token counts again, as in Lucene). :meth:`Bm25Index.search`
returns only documents that match at least one token, best first, ties broken by document position.

Defaults (:data:`K1` 1.5, :data:`B` 1.0, :data:`METHOD` ``lucene``) were tuned on the dev set (Vim help in
BEIR layout, 6 398 docs, 1 035 queries) with ee's tokenizer: ``PYTHONPATH=. python scripts/tune_retrieval.py
/work/devset --grid lexical``. Recall@10 / MRR@10, lucene:

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

Dev corpus (67 k terms, 417 k postings, 5.2 MB on disk): build 0.7 s; ``load`` 50 ms with or without mmap
(parsing the JSON vocabulary dominates; the arrays are small); search 0.1 ms per query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bm25s
import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["K1", "METHOD", "B", "Bm25Index", "build"]

K1 = 1.5
B = 1.0
METHOD = "lucene"

_EE_META = "ee_bm25.json"
_FORMAT = 1


class Bm25Index:
    """A built or loaded BM25 index over documents numbered 0..n_docs-1."""

    __slots__ = ("_model", "_n_docs", "_vocab")

    def __init__(self, model: Any, n_docs: int) -> None:
        self._model = model
        self._n_docs = n_docs
        self._vocab: dict[str, int] = model.vocab_dict if model is not None else {}

    @property
    def n_docs(self) -> int:
        return self._n_docs

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def params(self) -> dict[str, Any]:
        m = self._model
        if m is None:
            return {}
        return {"k1": float(m.k1), "b": float(m.b), "method": str(m.method)}

    def token_ids(self, query_tokens: Sequence[str]) -> list[int]:
        """Ids of the known tokens of a query, in order (repeats kept); unknown tokens are dropped."""
        vocab = self._vocab
        return [vocab[t] for t in query_tokens if t in vocab]

    def scores(self, query_tokens: Sequence[str]) -> NDArray[np.float32]:
        """BM25 score of every document (0.0 where no query token occurs)."""
        ids = self.token_ids(query_tokens)
        if not ids or self._model is None:
            return np.zeros(self._n_docs, dtype=np.float32)
        s = self._model.scores
        indptr = s["indptr"]
        starts = indptr[ids]
        ends = indptr[np.asarray(ids) + 1]
        docs = np.concatenate([s["indices"][a:b] for a, b in zip(starts, ends, strict=True)])
        weights = np.concatenate([s["data"][a:b] for a, b in zip(starts, ends, strict=True)])
        # bincount accumulates in float64 in a fixed order: deterministic and faster than np.add.at.
        out = np.asarray(np.bincount(docs, weights=weights, minlength=self._n_docs), dtype=np.float64)
        nonocc = self._model.nonoccurrence_array
        if nonocc is not None:
            # bm25l / bm25+ store (score - score at tf 0) per posting; add the tf-0 part back, to the
            # matching documents only (it is the same for every document, so ranking is unchanged).
            out[np.bincount(docs, minlength=self._n_docs) > 0] += float(nonocc[ids].sum())
        return out.astype(np.float32)

    def search(self, query_tokens: Sequence[str], k: int = 10) -> list[tuple[int, float]]:
        """Top ``k`` matching documents as ``(position, score)``, best first, ties by position."""
        if k <= 0:
            return []
        scores = self.scores(query_tokens)
        hits = np.flatnonzero(scores > 0)
        if hits.size == 0:
            return []
        hit_scores = scores[hits]
        if hits.size > k:
            # Keep every document tied with the k-th score so that the position tie-break is exact.
            kth = np.partition(hit_scores, hits.size - k)[hits.size - k]
            keep = hit_scores >= kth
            hits, hit_scores = hits[keep], hit_scores[keep]
        order = np.lexsort((hits, -hit_scores))[:k]
        return [(int(hits[i]), float(hit_scores[i])) for i in order]

    def save(self, directory: str | Path) -> None:
        """Write the index with bm25s's own format (plus a small ee header) into ``directory``."""
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        if self._model is not None:
            self._model.save(str(path), show_progress=False)
        meta = {"format": _FORMAT, "n_docs": self._n_docs, "empty": self._model is None}
        (path / _EE_META).write_text(json.dumps(meta, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, mmap: bool = True) -> Bm25Index:
        """Load an index written by :meth:`save`.

        ``mmap=True`` maps the score arrays read-only instead of reading them (the vocabulary is always
        parsed): resident memory then grows only with the pages the queries touch. On the dev corpus both
        take ~50 ms (best of 7; the JSON vocabulary dominates); search is 0.13 ms per query mapped, 0.09 ms
        loaded.
        """
        path = Path(directory)
        meta = json.loads((path / _EE_META).read_text(encoding="utf-8"))
        if meta.get("format") != _FORMAT:
            raise ValueError(f"unsupported bm25 index format {meta.get('format')!r} in {path}")
        if meta.get("empty"):
            return cls(None, int(meta["n_docs"]))
        model = bm25s.BM25.load(str(path), mmap=mmap, load_corpus=False, show_progress=False)
        return cls(model, int(meta["n_docs"]))


def build(
    corpus_tokens: Sequence[Sequence[str]], k1: float = K1, b: float = B, method: str = METHOD
) -> Bm25Index:
    """Index pre-tokenized documents; document ``i`` of ``corpus_tokens`` is position ``i`` in results."""
    vocab: dict[str, int] = {}
    add = vocab.setdefault
    ids = [[add(tok, len(vocab)) for tok in doc] for doc in corpus_tokens]
    n_docs = len(ids)
    if not vocab:
        # No document has a token: nothing can match. bm25s cannot index an empty vocabulary.
        return Bm25Index(None, n_docs)
    model = bm25s.BM25(k1=k1, b=b, method=method, backend="numpy")
    model.index((ids, vocab), create_empty_token=False, show_progress=False)
    return Bm25Index(model, n_docs)
