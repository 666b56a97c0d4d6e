"""The evidence index: derived from the evidence store, rebuilt when the store's generation moved.

``.ee/sessions/index.json`` names the current folder ``.ee/sessions/index-<generation>/``, which holds
the BM25 arrays (:mod:`ee.index.lexical`, ee's tokens), ``vectors.npy`` (the static model2vec vectors of
every piece, float16: half the bytes of float32, the same ranking to three decimals), ``ids.json`` and
``times.json`` (each piece's id and time, in the arrays' order). A rebuild embeds only the pieces the
previous folder did not hold, writes the new folder, then points ``index.json`` at it: a reader sees the
old index or the new one. Evidence gets the static arm only (the transformer arm is for memories).
Deleting the folders loses nothing: the next query or import builds them again from the database.
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


def fresh(root: Path, embedder: Any, model_key: str) -> EvidenceIndex | None:
    """The index, rebuilt first when the store moved on or the model changed (None: no evidence)."""
    with store.connect(root, write=False) as db:
        if db is None:
            return None
        generation = store.generation(db)
    index = load(root)
    if index is not None and index.generation == generation and index.model_key == model_key:
        return index
    return build(root, embedder, model_key)


def build(root: Path, embedder: Any, model_key: str) -> EvidenceIndex | None:
    """Build the index of the store as it is (reusing the vectors the current index holds)."""
    from ee.index.lexical import build as build_lexical

    old = load(root)
    with store.connect(root) as db:
        if db is None:
            return None
        generation = store.generation(db)
        rows = list(store.all_tokens(db))
        ids = [r[0] for r in rows]
        known: dict[str, int] = {}
        if old is not None and old.vectors is not None and old.model_key == model_key:
            known = {evidence_id: i for i, evidence_id in enumerate(old.ids)}
        missing = [i for i in ids if i not in known]
        texts = store.texts(db, missing) if embedder is not None and missing else []
    lexical = build_lexical([r[2] for r in rows], b=LEXICAL_B)
    vectors: np.ndarray | None = None
    if embedder is not None:
        vectors = np.zeros((len(ids), embedder.dim), dtype=np.float16)
        if known and old is not None and old.vectors is not None:
            reuse = [(pos, known[i]) for pos, i in enumerate(ids) if i in known]
            if reuse:
                new_rows, old_rows = zip(*reuse, strict=True)
                vectors[list(new_rows)] = old.vectors[list(old_rows)]
        if missing:
            # A static model averages its tokens: past a few hundred words a text's vector hardly moves,
            # and tokenizing the rest was half of a 10 MB transcript's import.
            heads = [text[:EMBED_CHARS] for text in texts]
            fresh_vectors = embedder.encode_documents(heads).astype(np.float16)
            where = {i: pos for pos, i in enumerate(ids)}
            vectors[[where[i] for i in missing]] = fresh_vectors
    base = store.folder_of(root)
    target = base / f"index-{generation}"
    temp = Path(tempfile.mkdtemp(prefix=".index-", dir=base))
    try:
        lexical.save(temp / "lexical")
        if vectors is not None:
            np.save(temp / "vectors.npy", vectors)
        (temp / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
        (temp / "times.json").write_text(json.dumps([r[1] for r in rows]), encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(temp, target)
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


def size_bytes(index: EvidenceIndex) -> int:
    """The bytes of the index's files (lexical arrays, vectors, ids and times)."""
    return sum(p.stat().st_size for p in index.folder.rglob("*") if p.is_file())
