"""Near-duplicates by embedding, from the vectors the index already holds.

The index keeps a vector per memory: the static model's always, the transformer's once every memory has
one (``ee.index.view.IndexView.arm``). The arm used is the one :data:`ee.curate.similar.NEAR_BARS` has
measured bars for (today the static one; its docstring says why not the transformer). A scan compares the
pairs that share rare words (:func:`ee.curate.scan.pairs`) by the cosine of their rows; a write (``ee
remember``, MCP ``remember``, ``ee import jsonl``) embeds only the new text, with that arm's model, and
compares it with every row. Nothing here embeds the store: a write looks only when an index exists
(:func:`for_write`, which catches up incrementally, as a search does); without one only the same text is
looked for, and a damaged index is said in ``degraded``. The bars are the same at write time and in a scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ee.index.view import IndexView
    from ee.workspace import Workspace


@dataclass(slots=True)
class StoreVectors:
    """The index's vectors of one store state, by memory id, and the arm (model) they come from."""

    view: IndexView
    arm: str
    matrix: np.ndarray  # rows L2-normalised, in generation order

    def row(self, memory_id: str) -> int | None:
        return self.view.gen.position(memory_id)

    def cosines(self, rows: list[int], row: int) -> list[float]:
        """The cosine of row ``row`` with each of ``rows``."""
        import numpy as np

        if not rows:
            return []
        return [float(x) for x in np.einsum("ij,j->i", self.matrix[rows], self.matrix[row])]

    def embed(self, texts: list[str], tags: list[list[str]], kinds: list[str]) -> np.ndarray:
        """New texts as the index would embed them, with this arm's model and its text."""
        encoder = self.view.arm_encoder() if self.arm == "transformer" else self.view.embedder()
        return embed(encoder, texts, tags, kinds, self.arm)

    def nearest(self, vectors: np.ndarray, bar: float) -> list[list[tuple[str, float]]]:
        """For each vector, [(memory id, cosine)] of the store's memories at or above ``bar``, closest first
        (ties by id). Compared in blocks: a large import never holds a texts × store matrix at once."""
        import numpy as np

        out: list[list[tuple[str, float]]] = []
        ids = self.view.gen.ids
        for start in range(0, len(vectors), BLOCK):
            block = np.asarray(vectors[start : start + BLOCK], dtype=np.float32)
            scores = self.matrix @ block.T if len(ids) else np.zeros((0, len(block)), dtype=np.float32)
            for column in range(block.shape[0]):
                # A matrix product rounds by block (IndexView.cosines): the few rows near the bar are
                # scored again one by one, so the same store and text give the same answer.
                rows = [int(i) for i in np.flatnonzero(scores[:, column] >= bar - SLACK)]
                exact = np.einsum("ij,j->i", self.matrix[rows], block[column]) if rows else []
                found = [(ids[i], round(float(c), 4)) for i, c in zip(rows, exact, strict=True) if c >= bar]
                out.append(sorted(found, key=lambda pair: (-pair[1], pair[0])))
        return out


BLOCK = 256  # new texts compared with the store at a time
SLACK = 1e-3  # how far below a bar a blocked product may round a cosine that is at it


def embed(
    encoder: Any, texts: list[str], tags: list[list[str]], kinds: list[str], arm: str = "static"
) -> np.ndarray:
    """Texts as the index embeds a memory with ``encoder``'s model: the text of ``arm``
    (``ee.index.derive.embed_text`` for the static model, ``transformer_text`` for the transformer)."""
    from ee.index.derive import embed_text, transformer_text

    zipped = zip(texts, tags, kinds, strict=True)
    if arm == "transformer":
        return encoder.encode_documents([transformer_text(t, g) for t, g, _k in zipped])
    return encoder.encode_documents([embed_text(t, g, k) for t, g, k in zipped])


def static_encoder(ws: Workspace) -> Any | None:
    """The static model the index embeds with (:data:`ee.curate.similar.NEAR_BARS` ``static``), loaded alone:
    for a write that compares a few texts of its own (``ee import jsonl``'s lines with each other and with
    the memories that open as they do) without the index. None without a usable model."""
    from ee.index.view import embedder_or_problem, model_folder

    folder, key, _missing = model_folder(ws)
    encoder, _unloadable = embedder_or_problem(folder, key)
    return encoder


def close_pairs(matrix: np.ndarray, bar: float) -> list[tuple[int, int, float]]:
    """(earlier row, later row, cosine) of every pair of rows of ``matrix`` (L2-normalised) at or above
    ``bar``, by later row then earlier row. Compared in blocks of :data:`BLOCK` rows, each row with the rows
    before it; the few near the bar are scored again one by one, as :meth:`StoreVectors.nearest` does."""
    import numpy as np

    out: list[tuple[int, int, float]] = []
    for start in range(0, len(matrix), BLOCK):
        block = np.asarray(matrix[start : start + BLOCK], dtype=np.float32)
        scores = block @ np.asarray(matrix[: start + len(block)], dtype=np.float32).T
        for offset in range(len(block)):
            later = start + offset
            rows = [int(i) for i in np.flatnonzero(scores[offset, :later] >= bar - SLACK)]
            exact = np.einsum("ij,j->i", matrix[rows], matrix[later]) if rows else []
            out += [(i, later, round(float(c), 4)) for i, c in zip(rows, exact, strict=True) if c >= bar]
    return out


def of_view(view: IndexView) -> StoreVectors | None:
    """The vectors of the arm that answers ``view``'s queries when its bars were measured
    (:data:`ee.curate.similar.NEAR_BARS`), else the static ones; None for an index without vectors."""
    from ee.curate.similar import NEAR_BARS

    measured = "transformer" in NEAR_BARS
    if measured and view.transformer_vectors is not None and view.transformer_folder is not None:
        return StoreVectors(view, "transformer", view.transformer_vectors)
    if view.gen.vectors is not None and view.model_folder is not None:
        return StoreVectors(view, "static", view.gen.vectors)
    return None


def for_scan(ws: Workspace) -> StoreVectors | None:
    """The store's vectors for a scan (which brings the index up to date, as ``ee search`` would)."""
    from ee.errors import EeError
    from ee.index.view import open_index

    try:
        return of_view(open_index(ws))
    except EeError:
        return None  # (a damaged index is reported by ee index status; the word rules still run)


def for_write(ws: Workspace) -> tuple[StoreVectors | None, str | None]:
    """(the store's vectors, or None; why not, for ``degraded``) for a write. Only an index that exists is
    used (caught up incrementally): building one would embed the whole store inside ``ee remember``. A
    store with no index yet is not reported (every new store starts so; its first search builds one)."""
    from ee.errors import EeError
    from ee.store.files import MANIFEST

    if not (ws.root / MANIFEST).exists():
        return None, None  # (a new store, before its first search: nothing heavy is even imported)
    from ee.index.freshness import read_manifest
    from ee.index.view import open_index

    if read_manifest(ws.root) is None:
        return None, None  # (an index of an older format: rebuilding it would embed the whole store)
    try:
        vectors = of_view(open_index(ws))
    except EeError as exc:
        return None, f"the index could not be read ({exc.message}): only the same text was looked for"
    if vectors is None:
        return None, "the index holds no vectors (no model): only the same text was looked for"
    return vectors, None
