"""One generation of the index: the memories of one store state, their BM25 matrix and their vectors.

A generation is immutable once saved (a folder under ``.ee/index/``); an update writes a new one. The
BM25 matrix is recomputed exactly from term frequencies on every update (see :mod:`ee.index.lexical`),
so the result of any sequence of updates equals a full rebuild. Document positions are arbitrary: every
ranking breaks ties by memory id, so positions never show in results.
"""

from __future__ import annotations

import contextlib
import gc
import json
import marshal
import mmap
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ee._crash import crash_point
from ee.index.lexical import K1, B, Lexical

_MASK32 = np.int64(0xFFFFFFFF)


@dataclass(slots=True)
class Entry:
    """A memory file to put in a generation: where it is, which version, and what was derived from it."""

    path: str
    blob: str
    committed: bool
    record: dict[str, Any]
    body: str
    tokens: list[str]
    vector: np.ndarray | None


@dataclass(slots=True)
class Generation:
    records: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[str] = field(default_factory=list)
    vocab: dict[str, int] = field(default_factory=dict)
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # token << 32 | position
    tf: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    vectors: np.ndarray | None = None
    lexical: Lexical | None = None
    bodies_path: Path | None = None  # bodies are read on first use
    _bodies_map: mmap.mmap | None = None
    _pos: dict[str, int] | None = None

    @property
    def size(self) -> int:
        return len(self.records)

    @property
    def ids(self) -> list[str]:
        return [r["id"] for r in self.records]

    def position(self, memory_id: str) -> int | None:
        if self._pos is None:
            self._pos = {r["id"]: i for i, r in enumerate(self.records)}
        return self._pos.get(memory_id)

    # -------------------------------------------------------------------------------- updating

    def updated(self, remove: Sequence[int], add: Sequence[Entry], dim: int | None) -> Generation:
        """A new generation: this one without positions ``remove``, plus ``add`` at the end.

        The (token, position) keys stay sorted without a full sort: dropping documents and renumbering
        the rest keeps their order, and the added documents' keys (all at the end) are merged in.
        """
        n = self.size
        keep = np.ones(n, dtype=bool)
        if remove:
            keep[np.asarray(list(remove), dtype=np.int64)] = False
        new_pos = np.cumsum(keep, dtype=np.int64) - 1
        positions = self.keys & _MASK32
        alive = keep[positions] if n else np.zeros(0, dtype=bool)
        old_keys = ((self.keys[alive] >> 32) << 32) | new_pos[positions[alive]]
        old_tf = self.tf[alive].astype(np.int32)
        vocab = dict(self.vocab)
        add_keys, add_tf = _count(add, vocab, base=int(keep.sum()))
        at = np.searchsorted(old_keys, add_keys)
        lengths = np.fromiter((len(e.tokens) for e in add), np.int32, len(add))
        gen = Generation(
            records=[r for r, k in zip(self.records, keep, strict=True) if k] + [_record(e) for e in add],
            bodies=[b for b, k in zip(self.bodies, keep, strict=True) if k] + [e.body for e in add],
            vocab=vocab,
            keys=np.insert(old_keys, at, add_keys),
            tf=np.insert(old_tf, at, add_tf),
            lengths=np.concatenate([self.lengths[keep], lengths]).astype(np.int32),
        )
        gen.vectors = _vectors(self.vectors, keep, add, dim)
        gen.compact_vocab()
        gen.lexical = gen.compute_lexical()
        return gen

    def compact_vocab(self, slack: float = 0.25) -> None:
        """Drop tokens no document holds any more once they are ``slack`` of the vocabulary (edits over
        days would otherwise grow it without bound). Scores do not change: such tokens have no column."""
        n_vocab = len(self.vocab)
        tokens = self.keys >> 32
        used = np.zeros(n_vocab, dtype=bool)
        used[tokens] = True
        dead = n_vocab - int(used.sum())
        if dead <= max(1000, slack * n_vocab):
            return
        remap = np.cumsum(used, dtype=np.int64) - 1
        self.vocab = {t: int(remap[i]) for t, i in self.vocab.items() if used[i]}
        self.keys = (remap[tokens] << 32) | (self.keys & _MASK32)  # token-major order is unchanged

    def compute_lexical(self, k1: float = K1, b: float = B) -> Lexical:
        n_docs, n_vocab = self.size, len(self.vocab)
        tokens = self.keys >> 32
        positions = (self.keys & _MASK32).astype(np.int32)
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        if n_docs == 0 or self.keys.size == 0:
            return Lexical(np.zeros(0, np.float32), positions, indptr, self.vocab, n_docs, k1, b)
        df = np.bincount(tokens, minlength=n_vocab)
        np.cumsum(df, out=indptr[1:])
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        lengths = self.lengths.astype(np.float64)
        avgdl = lengths.sum() / n_docs if lengths.sum() else 1.0
        tf = self.tf.astype(np.float64)
        norm = k1 * (1.0 - b + b * lengths[positions] / avgdl)
        data = (idf[tokens] * (tf / (tf + norm))).astype(np.float32)
        return Lexical(data, positions, indptr, self.vocab, n_docs, k1, b)

    # -------------------------------------------------------------------------------- disk

    def save(self, folder: Path) -> None:
        tmp = folder.with_name(folder.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        (tmp / "records.marshal").write_bytes(marshal.dumps(self.records))
        (tmp / "bodies.marshal").write_bytes(marshal.dumps(self.bodies))
        np.save(tmp / "keys.npy", self.keys)
        np.save(tmp / "tf.npy", self.tf)
        np.save(tmp / "lengths.npy", self.lengths)
        crash_point("index.segment")
        if self.vectors is not None:
            np.save(tmp / "vectors.npy", self.vectors)
        assert self.lexical is not None
        self.lexical.save(tmp / "bm25s")
        (tmp / "DONE").write_text(json.dumps({"size": self.size}))
        tmp.rename(folder)

    @classmethod
    def load(cls, folder: Path, for_update: bool = False) -> Generation:
        """Open a saved generation (arrays memory-mapped). Raises OSError/ValueError when it is damaged."""
        done = json.loads((folder / "DONE").read_text())
        data = (folder / "records.marshal").read_bytes()
        with no_gc():
            records = marshal.loads(data)  # noqa: S302 - our own file
        if len(records) != done["size"]:
            raise ValueError("generation size mismatch")
        gen = cls(records=records)
        gen.lexical = Lexical.load(folder / "bm25s")
        gen.vocab = gen.lexical.vocab
        if gen.lexical.n_docs != len(records):
            raise ValueError("lexical index does not match the records")
        vectors = folder / "vectors.npy"
        gen.vectors = np.load(vectors, mmap_mode="r") if vectors.exists() else None
        if gen.vectors is not None and gen.vectors.shape[0] != len(records):
            raise ValueError("vectors do not match the records")
        if for_update:
            gen.keys = np.load(folder / "keys.npy")
            gen.tf = np.load(folder / "tf.npy")
            gen.lengths = np.load(folder / "lengths.npy")
            data = (folder / "bodies.marshal").read_bytes()
            with no_gc():
                gen.bodies = marshal.loads(data)  # noqa: S302 - our own file
        else:
            gen.bodies_path = folder / "bodies.marshal"
            gen._bodies_map = _map(gen.bodies_path)
        return gen

    def body(self, position: int) -> str:
        if not self.bodies and self._bodies_map is not None:
            self.bodies = marshal.loads(self._bodies_map)  # noqa: S302 - our own file
        elif not self.bodies and self.bodies_path is not None:
            self.bodies = marshal.loads(self.bodies_path.read_bytes())  # noqa: S302 - our own file
        return self.bodies[position]


def _map(path: Path) -> mmap.mmap:
    """``path`` mapped read-only now, read on first use: a mapping outlives its file, so a writer may prune
    this generation (``ee.index.sync._prune``) while a query still reads bodies from it."""
    with open(path, "rb") as handle:
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects that hold no cycles."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _count(add: Sequence[Entry], vocab: dict[str, int], base: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (token << 32 | position) keys and term frequencies of ``add`` at positions ``base``…,
    growing ``vocab`` with new tokens: one vectorised pass (a per-document Counter cost ~1 s at 10k)."""
    lengths = np.fromiter((len(e.tokens) for e in add), np.int64, len(add))
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    flat = np.fromiter((vocab.setdefault(t, len(vocab)) for e in add for t in e.tokens), np.int64, total)
    where = np.repeat(np.arange(base, base + len(add), dtype=np.int64), lengths)
    keys, tf = np.unique((flat << 32) | where, return_counts=True)
    return keys, tf.astype(np.int32)


def _record(entry: Entry) -> dict[str, Any]:
    record = dict(entry.record)
    record["path"] = entry.path
    record["blob"] = entry.blob
    record["committed"] = entry.committed
    return record


def _vectors(old: np.ndarray | None, keep: np.ndarray, add: Sequence[Entry], dim: int | None) -> np.ndarray | None:
    if dim is None:
        return None
    parts = []
    if old is not None and old.shape[1] == dim:
        parts.append(np.asarray(old[keep], dtype=np.float32))
    elif keep.any():
        return None  # the model changed: the caller re-embeds everything
    for entry in add:
        if entry.vector is None:
            return None
        parts.append(entry.vector.reshape(1, dim).astype(np.float32))
    if not parts:
        return np.zeros((0, dim), dtype=np.float32)
    return np.concatenate(parts, axis=0)
