"""The evidence index: derived from the evidence store, rebuilt when the store's generation moved.

``.ee/sessions/index.json`` names the current folder ``.ee/sessions/index-<generation>/``, which holds
the BM25 arrays (:mod:`ee.index.lexical`, ee's tokens), ``tf.npy`` and ``lengths.npy`` (the term counts
an update recomputes them from), ``vectors.npy`` (the static model2vec vectors of every piece, float16:
half the bytes of float32, the same ranking to three decimals), ``ids.json`` and ``times.json`` (each
piece's id and time, in the arrays' order).

**Updates.** When the store moved on, the next import or query updates the index rather than building
it again: the pieces the store no longer holds are dropped, the new ones are read from the database
(their stored tokens and text) and appended, and the BM25 matrix is recomputed from the term counts
(:func:`ee.index.lexical.updated_counts`), so it scores exactly as a full build of the same pieces does
(``tests/test_sessions.py`` pins it to a full build and to bm25s). Only new pieces are embedded. The new
folder is written, then ``index.json`` points at it: a reader sees the old index or the new one. A folder
without the counts (written before them), or one built for another model, is built again in full.
Evidence gets the static arm only (the transformer arm is for memories). Deleting the folders loses
nothing: the next query or import builds them again from the database.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ee.sessions import store

POINTER = "index.json"
EMBED_CHARS = 1500  # what the vector of a piece is computed from (its first characters)
# BM25's length normalisation for evidence (memories: ee.index.lexical.B, 1.0). Exchanges run from "ok, go"
# to pages of tool calls; full normalisation lets a one-line "where were we?" outrank the exchange that
# holds the answer. Dev set MRR (semantic weight 0.15): b 1.0 → 0.824, 0.75 → 0.820, 0.5 → 0.827, 0.3 → 0.823.
LEXICAL_B = 0.5


class EvidenceIndex:
    """One built index: the arrays, and each position's id and time."""

    __slots__ = ("_matrix", "folder", "generation", "ids", "lexical", "model_key", "times", "vectors")

    def __init__(
        self,
        folder: Path,
        generation: int,
        model_key: str,
        ids: list[str],
        times: list[str],
        lexical: Any,
        vectors: np.ndarray | None,
    ) -> None:
        self.folder = folder
        self.generation = generation
        self.model_key = model_key
        self.ids = ids
        self.times = times
        self.lexical = lexical
        self.vectors = vectors  # float16, as stored
        self._matrix: np.ndarray | None = None

    def matrix(self) -> np.ndarray:
        """The vectors as float32, converted once per loaded index (a warm server keeps it)."""
        if self._matrix is None:
            self._matrix = np.asarray(self.vectors, dtype=np.float32)
        return self._matrix

    @property
    def size(self) -> int:
        return len(self.ids)


_LOADED: dict[str, EvidenceIndex] = {}  # folder → index: a long-lived process (ee watch) loads it once


def pointer(root: Path) -> dict[str, Any] | None:
    from ee.config import read_settings_file

    try:
        value = json.loads(read_settings_file(store.folder_of(root) / POINTER))
    except (OSError, ValueError):  # (a link or a FIFO there is an OSError: no index, built again)
        return None
    return value if isinstance(value, dict) else None


def load(root: Path) -> EvidenceIndex | None:
    """The current index as ``index.json`` names it (None when there is none)."""
    from ee.index.lexical import Lexical

    current = pointer(root)
    if current is None or not isinstance(current.get("folder"), str):
        return None
    folder = store.folder_of(root) / Path(current["folder"]).name
    kept = _LOADED.get(str(folder))
    if kept is not None:
        return kept
    try:
        ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        times = json.loads((folder / "times.json").read_text(encoding="utf-8"))
        lexical = Lexical.load(folder / "lexical")
        vectors_path = folder / "vectors.npy"
        vectors = np.load(vectors_path, mmap_mode="r") if vectors_path.exists() else None
    except (OSError, ValueError, KeyError):
        return None
    index = EvidenceIndex(
        folder, int(current.get("generation", 0)), str(current.get("model", "")), ids, times, lexical, vectors
    )
    _LOADED.clear()
    _LOADED[str(folder)] = index
    return index


Known = dict[str, tuple[list[str], str]]  # id → (index tokens, text) of pieces a caller has in hand


def fresh(root: Path, embedder: Any, model_key: str, known: Known | None = None) -> EvidenceIndex | None:
    """The index, rebuilt first when the store moved on or the model changed (None: no evidence).
    ``known``: see :func:`build`."""
    with store.connect(root, write=False) as db:
        if db is None:
            return None
        generation = store.generation(db)
    index = load(root)
    if index is not None and index.generation == generation and index.model_key == model_key:
        return index
    return build(root, embedder, model_key, known)


def build(root: Path, embedder: Any, model_key: str, known: Known | None = None) -> EvidenceIndex | None:
    """The index of the store as it is: the current one updated (see the module's docstring), or built
    in full when there is none to update. ``known`` holds the tokens and text of pieces the caller has
    just stored (an import): those are taken as they are, not read back from the database and unpacked
    (the database holds the same, from the same lists)."""
    from ee.index.lexical import compacted, count, from_counts, updated_counts

    old = load(root)
    counts = _counts(old) if old is not None else None
    other_model = embedder is not None and (old is None or old.vectors is None or old.model_key != model_key)
    if old is None or counts is None or other_model:
        old, counts = None, None
    with store.connect(root) as db:
        if db is None:
            return None
        generation = store.generation(db)
        times = dict(store.ids_times(db))
        old_ids = old.ids if old is not None else []
        keep = np.fromiter((i in times for i in old_ids), dtype=bool, count=len(old_ids))
        held = set(old_ids)
        added = sorted(i for i in times if i not in held)
        known = known or {}
        unknown = [i for i in added if i not in known]
        read = dict(zip(unknown, store.tokens(db, unknown), strict=True))
        added_tokens = [known[i][0] if i in known else read[i] for i in added]
        if embedder is not None and added:
            stored = dict(zip(unknown, store.texts(db, unknown), strict=True))
            texts = [known[i][1] if i in known else stored[i] for i in added]
        else:
            texts = []
    keys, tf, lengths, vocab = counts if counts is not None else (_EMPTY_KEYS, _EMPTY_TF, _EMPTY_TF, {})
    kept = int(keep.sum())
    add_keys, add_tf = count(added_tokens, vocab, kept)
    keys, tf = updated_counts(keys, tf, keep, add_keys, add_tf)
    new_lengths = np.fromiter((len(t) for t in added_tokens), np.int32, len(added_tokens))
    lengths = np.concatenate([lengths[keep], new_lengths]).astype(np.int32)
    keys, columns = compacted(keys, vocab)
    lexical = from_counts(keys, tf, lengths, columns, b=LEXICAL_B)
    ids = [i for i, k in zip(old_ids, keep.tolist(), strict=True) if k] + added
    vectors: np.ndarray | None = None
    if embedder is not None:
        vectors = np.zeros((len(ids), embedder.dim), dtype=np.float16)
        if kept and old is not None and old.vectors is not None:
            vectors[:kept] = old.vectors[keep]
        if added:
            # A static model averages its tokens: past a few hundred words a text's vector hardly moves,
            # and tokenizing the rest was half of a 10 MB transcript's import.
            heads = [text[:EMBED_CHARS] for text in texts]
            vectors[kept:] = embedder.encode_documents(heads).astype(np.float16)
    base = store.folder_of(root)
    target = base / f"index-{generation}"
    temp = Path(tempfile.mkdtemp(prefix=".index-", dir=base))
    try:
        lexical.save(temp / "lexical")
        np.save(temp / "tf.npy", tf)
        np.save(temp / "lengths.npy", lengths)
        if vectors is not None:
            np.save(temp / "vectors.npy", vectors)
        (temp / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
        (temp / "times.json").write_text(json.dumps([times[i] for i in ids]), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(temp, target)
        # (a folder of the same generation built again, for another model: the loaded one is stale)
        _LOADED.pop(str(target), None)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    from ee.config import open_regular

    pointer_temp = base / f".{POINTER}.{os.getpid()}.{os.urandom(4).hex()}"
    text = json.dumps({"folder": target.name, "generation": generation, "model": model_key})
    with open(open_regular(pointer_temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
        file.write(text)
    os.replace(pointer_temp, base / POINTER)
    for stale in base.glob("index-*"):
        if stale != target and stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
    return load(root)


_EMPTY_KEYS = np.zeros(0, np.int64)
_EMPTY_TF = np.zeros(0, np.int32)


def _counts(index: EvidenceIndex) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]] | None:
    """The term counts of a built index, to update it (None: a folder without them, or damaged)."""
    from ee.index.lexical import Vocabulary, keys_of

    lexical = index.lexical
    if lexical.b != LEXICAL_B:
        return None
    try:
        tf = np.load(index.folder / "tf.npy")
        lengths = np.load(index.folder / "lengths.npy")
    except (OSError, ValueError):
        return None
    keys = keys_of(lexical)
    if len(tf) != len(keys) or len(lengths) != index.size:
        return None
    vocab = lexical.vocab
    return keys, tf, lengths, dict(vocab.as_dict() if isinstance(vocab, Vocabulary) else vocab)


def size_bytes(index: EvidenceIndex) -> int:
    """The bytes of the index's files (lexical arrays, vectors, ids and times)."""
    return sum(p.stat().st_size for p in index.folder.rglob("*") if p.is_file())
