"""One generation of the index: the memories of one store state, their BM25 matrix and their vectors.

A generation is immutable once saved (a folder under ``.ee/index/``); an update writes a new one. The
BM25 matrix is recomputed exactly from term frequencies on every update (see :mod:`ee.index.lexical`),
so the result of any sequence of updates equals a full rebuild. Document positions are arbitrary: every
ranking breaks ties by memory id, so positions never show in results.

Layout (``LAYOUT`` 5), so that opening costs little more than the files' sizes, whatever the store's:
``records.bin`` / ``bodies.bin`` hold each record (marshal) and body (UTF-8) one after another, with
``*.offsets.npy`` (int64, size + 1); both are memory-mapped and a position is decoded when read. Columns
read over every document without decoding records: ``ids.marshal`` (ranking's tie-breaks),
``links.marshal`` ((position, id, links) of the memories that have links), ``tags.marshal`` (every
memory's tags: an exact-phrase query or a tag filter reads them all; read on first use, and derived from
the records in a generation saved before it existed), ``committed.npy``, and for updates
``columns.marshal`` (paths, blob ids). An update copies the kept records' and bodies' bytes in
runs and encodes only the new ones. Then ``tf``/``lengths``/``vectors`` ``.npy`` and ``bm25s/`` (whose
columns give back the (token, position) keys an update needs).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import json
import marshal
import mmap
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from ee._crash import crash_point
from ee.index.lexical import (
    K1,
    B,
    Lexical,
    Vocabulary,
    compacted,
    count,
    from_counts,
    keys_of,
    updated_counts,
)

# 2: records and bodies packed with offsets (decoded per position), ids/paths/blobs/links apart;
# 3: records in marshal version 2 (no back-references: the buffer decodes whole, too);
# 4: the vocabulary in ee's own marshal file under bm25s/ (was vocab.index.json);
# 5: that vocabulary only sorted (vocab.sorted.marshal; a layout-4 folder may hold the older dict form)
LAYOUT = 5
TAGS = "tags.marshal"  # (read on first use: see Generation.tag_lists)


class Entry:
    """A memory file to put in a generation: where it is, which version, and what was derived from it."""

    __slots__ = ("blob", "body", "committed", "path", "record", "tokens", "vector")

    def __init__(
        self,
        path: str,
        blob: str,
        committed: bool,
        record: dict[str, Any],
        body: str,
        tokens: list[str],
        vector: np.ndarray | None,
    ) -> None:
        self.path = path
        self.blob = blob
        self.committed = committed
        self.record = record
        self.body = body
        self.tokens = tokens
        self.vector = vector


class Packed(Sequence[Any]):
    """Values stored one after another in one buffer, with an offsets array: each is decoded when read.

    A fresh query touches a few dozen of a generation's records; unmarshalling all of them was the largest
    single cost of opening an index (~45 ms at 10k, ~0.4 s at 100k). An update copies the unchanged
    values' bytes as they are (``spliced``) and encodes only the new ones.
    """

    __slots__ = ("_bulk", "_cache", "_data", "_decode", "_offsets")

    def __init__(
        self,
        data: Any,
        offsets: np.ndarray,
        decode: Callable[[Any], Any],
        bulk: Callable[[bytes, int], list[Any]] | None = None,
    ) -> None:
        self._data = data  # bytes, or a read-only mmap (kept open: a writer may prune the file meanwhile)
        self._offsets = offsets  # int64, len = size + 1
        self._decode = decode
        self._bulk = bulk  # decodes the whole buffer at once (for a pass over every value)
        self._cache: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, pos: int) -> Any: ...
    @overload
    def __getitem__(self, pos: slice) -> list[Any]: ...
    def __getitem__(self, pos: int | slice) -> Any:
        if isinstance(pos, slice):
            return [self[i] for i in range(*pos.indices(len(self)))]
        value = self._cache.get(pos)
        if value is None:
            size = len(self)
            if pos < 0:
                pos += size
            if not 0 <= pos < size:
                raise IndexError("position out of range")
            value = self._cache[pos] = self._decode(self._data[self._offsets[pos] : self._offsets[pos + 1]])
        return value

    def __iter__(self) -> Iterator[Any]:
        return iter(self.all())

    def all(self) -> list[Any]:
        """Every value, decoded in one pass where the buffer allows it (values already read are kept)."""
        size, cache = len(self), self._cache
        if len(cache) < size:
            data = self._data[: int(self._offsets[-1])]
            values = self._bulk(data, size) if self._bulk else [self[i] for i in range(size)]
            for pos, value in enumerate(values):
                cache.setdefault(pos, value)
        return [cache[pos] for pos in range(size)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Packed | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def joined(self, separator: bytes) -> bytes:
        """Every value's encoded bytes with ``separator`` between them (none is decoded)."""
        data, bounds = self._data, self._offsets.tolist()
        return separator.join([data[start:stop] for start, stop in itertools.pairwise(bounds)])

    def raw(self) -> tuple[bytes, np.ndarray]:
        """The encoded buffer (as bytes) and its offsets, for saving."""
        return bytes(self._data), self._offsets

    def spliced(self, keep: np.ndarray, add: list[bytes]) -> Packed:
        """The kept values' bytes copied in runs, then ``add`` (already encoded), in that order."""
        offsets = self._offsets
        parts: list[bytes] = []
        if len(keep) and keep.all():
            parts.append(bytes(self._data[: int(offsets[-1])]))
        elif len(keep) and keep.any():
            edges = np.flatnonzero(np.diff(np.concatenate([[False], keep, [False]]).astype(np.int8)))
            for start, stop in zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True):
                parts.append(bytes(self._data[int(offsets[start]) : int(offsets[stop])]))
        sizes = np.diff(offsets)[keep] if len(keep) else np.zeros(0, np.int64)
        added = np.fromiter((len(b) for b in add), np.int64, len(add))
        new_offsets = np.zeros(len(sizes) + len(add) + 1, dtype=np.int64)
        np.cumsum(np.concatenate([sizes, added]), out=new_offsets[1:])
        return Packed(b"".join(parts + add), new_offsets, self._decode, self._bulk)

    @classmethod
    def empty(
        cls, decode: Callable[[Any], Any], bulk: Callable[[bytes, int], list[Any]] | None = None
    ) -> Packed:
        return cls(b"", np.zeros(1, dtype=np.int64), decode, bulk)


def join_strings(values: list[str]) -> bytes:
    """Strings as one NUL-separated byte string (paths hold no NUL; undecodable names round-trip)."""
    return "\0".join(values).encode("utf-8", "surrogateescape")


def split_strings(data: bytes) -> list[str]:
    """The strings of :func:`join_strings`."""
    return data.decode("utf-8", "surrogateescape").split("\0") if data else []


class PackedMap(Mapping[str, Any]):
    """A read-only ``{str: value}`` map whose values are decoded on access: sorted keys (looked up by
    bisection, no dict is built) and one :class:`Packed` buffer. What HEAD names for every file
    (provenance, blob ids) is read this way: a query looks up the few paths it ranks."""

    __slots__ = ("_keys", "_keys_data", "_values")

    def __init__(self, keys: list[str] | None, values: Packed, keys_data: bytes = b"") -> None:
        self._keys = keys  # None: split from ``keys_data`` at the first lookup (a query never reads
        self._keys_data = keys_data  # head_blobs, an update never reads provenance)
        self._values = values

    @property
    def keys_list(self) -> list[str]:
        if self._keys is None:
            self._keys = split_strings(self._keys_data)
        return self._keys

    @classmethod
    def of(cls, mapping: Mapping[str, Any]) -> PackedMap:
        if isinstance(mapping, PackedMap):
            return mapping
        keys = sorted(mapping)
        return cls(
            keys,
            Packed.empty(_decode_record).spliced(
                np.zeros(0, dtype=bool), [marshal.dumps(mapping[k]) for k in keys]
            ),
        )

    def to_record(self) -> dict[str, bytes]:
        data, offsets = self._values.raw()
        return {
            "keys": join_strings(self.keys_list),
            "data": data,
            "offsets": offsets.astype(np.int64).tobytes(),
        }

    @classmethod
    def from_record(cls, record: Any) -> PackedMap:
        """Raises ValueError/KeyError/TypeError when ``record`` is damaged."""
        keys_data, data, offsets = record["keys"], record["data"], record["offsets"]
        table = np.frombuffer(offsets, dtype=np.int64)
        count = keys_data.count(b"\0") + 1 if keys_data else 0
        if not isinstance(keys_data, bytes) or len(table) != count + 1 or int(table[-1]) != len(data):
            raise ValueError("packed map damaged")
        return cls(None, Packed(data, table, _decode_record), keys_data)

    def _find(self, key: object) -> int:
        keys = self.keys_list
        if not isinstance(key, str):
            return -1
        at = bisect.bisect_left(keys, key)
        return at if at < len(keys) and keys[at] == key else -1

    def __getitem__(self, key: str) -> Any:
        at = self._find(key)
        if at < 0:
            raise KeyError(key)
        return self._values[at]

    def __contains__(self, key: object) -> bool:
        return self._find(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_list)

    def __len__(self) -> int:
        return len(self._values)


def _decode_record(data: Any) -> dict[str, Any]:
    record: dict[str, Any] = marshal.loads(data)  # noqa: S302 - our own file
    return record


def _encode_record(record: dict[str, Any]) -> bytes:
    """Marshal version 2: no back-references, so the records' bytes laid end to end after a list header
    are one valid marshal list (:func:`_decode_records`) as well as each a value of its own."""
    return marshal.dumps(record, 2)


def _decode_records(data: bytes, size: int) -> list[dict[str, Any]]:
    """Every record in one ``marshal.loads`` (a filter or an exact-phrase pass reads them all)."""
    with no_gc():
        records: list[dict[str, Any]] = marshal.loads(b"[" + size.to_bytes(4, "little") + bytes(data))  # noqa: S302
    if len(records) != size:
        raise ValueError("records damaged")
    return records


def _decode_body(data: Any) -> str:
    return bytes(data).decode("utf-8", "surrogatepass")


def _encode_body(body: str) -> bytes:
    return body.encode("utf-8", "surrogatepass")


class Records(Sequence[dict[str, Any]]):
    """The generation's records by position, decoded on first access; ``committed`` comes from a column
    (a commit of a hand edit changes only that flag: the records' bytes stay as they are)."""

    __slots__ = ("committed", "packed")

    def __init__(self, packed: Packed, committed: np.ndarray) -> None:
        self.packed = packed
        self.committed = committed  # bool, one per position

    def __len__(self) -> int:
        return len(self.packed)

    @overload
    def __getitem__(self, pos: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, pos: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, pos: int | slice) -> Any:
        if isinstance(pos, slice):
            return [self[i] for i in range(*pos.indices(len(self)))]
        record: dict[str, Any] = self.packed[pos]
        record["committed"] = bool(self.committed[pos])
        return record

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.all())

    def all(self) -> list[dict[str, Any]]:
        """Every record, decoded in one pass."""
        records: list[dict[str, Any]] = self.packed.all()
        for record, committed in zip(records, self.committed.tolist(), strict=True):
            record["committed"] = committed
        return records

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Records | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _empty_records() -> Records:
    return Records(Packed.empty(_decode_record, _decode_records), np.zeros(0, dtype=bool))


class Generation:
    """Records and bodies are decoded per position on access; ``ids``, ``paths``, ``blobs`` and the
    records' links are kept apart as plain columns, for what reads every document (ranking's tie-breaks,
    an update's bookkeeping, the superseded map) without decoding records."""

    __slots__ = (
        "_folder",
        "_pos",
        "_tags",
        "blobs",
        "ids",
        "keys",
        "lengths",
        "lexical",
        "links",
        "packed_bodies",
        "paths",
        "records",
        "tf",
        "vectors",
        "vocab",
    )

    def __init__(
        self,
        records: Records | None = None,
        ids: list[str] | None = None,
        paths: list[str] | None = None,
        blobs: list[str] | None = None,
        links: list[tuple[int, str, list[Any]]] | None = None,
        tags: list[list[str]] | None = None,
        packed_bodies: Packed | None = None,
        vocab: Mapping[str, int] | None = None,
        keys: np.ndarray | None = None,
        tf: np.ndarray | None = None,
        lengths: np.ndarray | None = None,
    ) -> None:
        self.records = _empty_records() if records is None else records
        self.ids: list[str] = [] if ids is None else ids
        self.paths: list[str] = [] if paths is None else paths
        self.blobs: list[str] = [] if blobs is None else blobs
        # (position, id, links) of the memories that have links
        self.links: list[tuple[int, str, list[Any]]] = [] if links is None else links
        self.packed_bodies = Packed.empty(_decode_body) if packed_bodies is None else packed_bodies
        self.vocab: Mapping[str, int] = {} if vocab is None else vocab
        self.keys = np.zeros(0, np.int64) if keys is None else keys  # token << 32 | position
        self.tf = np.zeros(0, np.int32) if tf is None else tf
        self.lengths = np.zeros(0, np.int32) if lengths is None else lengths
        self.vectors: np.ndarray | None = None
        self.lexical: Lexical | None = None
        self._pos: dict[str, int] | None = None
        self._tags = tags  # None: read from ``_folder`` (or derived from the records) on first use
        self._folder: Path | None = None

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def bodies(self) -> list[str]:
        """Every body, decoded (for tools that want them all)."""
        return list(self.packed_bodies)

    def body(self, position: int) -> str:
        body: str = self.packed_bodies[position]
        return body

    def position(self, memory_id: str) -> int | None:
        if self._pos is None:
            self._pos = {memory_id: i for i, memory_id in enumerate(self.ids)}
        return self._pos.get(memory_id)

    def link_records(self) -> list[dict[str, Any]]:
        """``{"id", "links"}`` of each memory that has links, in position order (what
        :func:`ee.query.standing.superseded_map` and the graph read)."""
        return [{"id": memory_id, "links": links} for _pos, memory_id, links in self.links]

    def tag_lists(self) -> list[list[str]]:
        """Every memory's tags, by position: the ``tags.marshal`` column, read on first use (a query that
        reads no tag reads no file), so an exact-phrase query or a tag filter does not decode 10^5 records
        (~0.9 s at 100k) for them. A generation pruned by a writer since it was opened (or whose column
        is damaged) gives them from its records."""
        if self._tags is None:
            tags: list[list[str]] | None = None
            if self._folder is not None:
                with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
                    tags = _load_list(self._folder / TAGS)
            if tags is None or len(tags) != self.size:
                tags = [_tags_of(record) for record in self.records.all()]
            self._tags = tags
        return self._tags

    def with_committed(self, committed: np.ndarray) -> None:
        """Set the committed column (a commit changes only this flag)."""
        self.records = Records(self.records.packed, committed)

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
        vocab = dict(self.vocab)
        base = int(keep.sum())
        add_keys, add_tf = count([e.tokens for e in add], vocab, base)
        keys, tf = updated_counts(self.keys, self.tf, keep, add_keys, add_tf)
        lengths = np.fromiter((len(e.tokens) for e in add), np.int32, len(add))
        kept = np.flatnonzero(keep).tolist() if remove else range(n)
        links = list(self.links)
        if remove:
            links = [(int(new_pos[p]), memory_id, lk) for p, memory_id, lk in links if keep[p]]
        records = [_record(e) for e in add]
        links += [(base + k, r["id"], r["links"]) for k, r in enumerate(records) if r.get("links")]
        old_tags = self.tag_lists() if n else []
        tags = [old_tags[p] for p in kept] + [_tags_of(r) for r in records]
        committed = np.concatenate(
            [self.records.committed[keep], np.fromiter((e.committed for e in add), bool, len(add))]
        )
        gen = Generation(
            records=Records(
                self.records.packed.spliced(keep, [_encode_record(r) for r in records]), committed
            ),
            ids=[self.ids[p] for p in kept] + [r["id"] for r in records],
            paths=[self.paths[p] for p in kept] + [e.path for e in add],
            blobs=[self.blobs[p] for p in kept] + [e.blob for e in add],
            links=links,
            tags=tags,
            packed_bodies=self.packed_bodies.spliced(keep, [_encode_body(e.body) for e in add]),
            vocab=vocab,
            keys=keys,
            tf=tf,
            lengths=np.concatenate([self.lengths[keep], lengths]).astype(np.int32),
        )
        gen.vectors = _vectors(self.vectors, keep, add, dim)
        gen.compact_vocab()
        gen.lexical = gen.compute_lexical()
        return gen

    def compact_vocab(self, slack: float = 0.25) -> None:
        """Drop tokens no document holds any more (:func:`ee.index.lexical.compacted`)."""
        self.keys, self.vocab = compacted(self.keys, self.vocab, slack)

    def compute_lexical(self, k1: float = K1, b: float = B) -> Lexical:
        return from_counts(self.keys, self.tf, self.lengths, self.vocab, k1, b)

    # -------------------------------------------------------------------------------- disk

    def save(self, folder: Path) -> None:
        tmp = folder.with_name(folder.name + ".tmp")
        if tmp.exists():
            import shutil  # (here: shutil and the compression modules it loads cost a query ~2.5 ms)

            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        for name, packed in (("records", self.records.packed), ("bodies", self.packed_bodies)):
            data, offsets = packed.raw()
            (tmp / f"{name}.bin").write_bytes(data)
            np.save(tmp / f"{name}.offsets.npy", offsets)
        np.save(tmp / "committed.npy", self.records.committed)
        (tmp / "ids.marshal").write_bytes(marshal.dumps(self.ids))
        (tmp / "links.marshal").write_bytes(marshal.dumps(self.links))
        (tmp / TAGS).write_bytes(marshal.dumps(self.tag_lists()))
        (tmp / "columns.marshal").write_bytes(marshal.dumps({"paths": self.paths, "blobs": self.blobs}))
        np.save(tmp / "tf.npy", self.tf)
        np.save(tmp / "lengths.npy", self.lengths)
        crash_point("index.segment")
        if self.vectors is not None:
            np.save(tmp / "vectors.npy", self.vectors)
        assert self.lexical is not None
        self.lexical.save(tmp / "bm25s")
        (tmp / "DONE").write_text(json.dumps({"size": self.size, "layout": LAYOUT}))
        tmp.rename(folder)

    @classmethod
    def load(cls, folder: Path, for_update: bool = False) -> Generation:
        """Open a saved generation (arrays and record/body buffers memory-mapped; records decoded when
        read). Raises OSError/ValueError when it is damaged."""
        done = json.loads((folder / "DONE").read_text())
        if done.get("layout") != LAYOUT:
            raise ValueError("generation in another layout")
        size = done["size"]
        ids = _load_list(folder / "ids.marshal")
        committed = np.load(folder / "committed.npy")
        records = Records(
            _load_packed(folder, "records", _decode_record, size, for_update, _decode_records), committed
        )
        if not (len(ids) == len(records) == len(committed) == size):
            raise ValueError("generation size mismatch")
        links = marshal.loads((folder / "links.marshal").read_bytes())  # noqa: S302 - our own file
        if not isinstance(links, list):
            raise ValueError("links damaged")
        gen = cls(
            records=records,
            ids=ids,
            links=links,
            packed_bodies=_load_packed(folder, "bodies", _decode_body, size, for_update),
        )
        gen._folder = folder
        gen.lexical = Lexical.load(folder / "bm25s")
        vocab = gen.lexical.vocab  # an update copies it whole: the dict, built once
        gen.vocab = vocab.as_dict() if for_update and isinstance(vocab, Vocabulary) else vocab
        if gen.lexical.n_docs != size:
            raise ValueError("lexical index does not match the records")
        vectors = folder / "vectors.npy"
        gen.vectors = np.load(vectors, mmap_mode="r") if vectors.exists() else None
        if gen.vectors is not None and gen.vectors.shape[0] != size:
            raise ValueError("vectors do not match the records")
        if for_update:
            gen.keys = keys_of(gen.lexical)
            gen.tf = np.load(folder / "tf.npy")
            if len(gen.tf) != len(gen.keys):
                raise ValueError("term frequencies do not match the score matrix")
            gen.lengths = np.load(folder / "lengths.npy")
            columns = marshal.loads((folder / "columns.marshal").read_bytes())  # noqa: S302 - our own file
            gen.paths, gen.blobs = columns["paths"], columns["blobs"]
            if not (len(gen.paths) == len(gen.blobs) == len(gen.lengths) == size):
                raise ValueError("generation columns do not match the records")
        return gen


def _tags_of(record: dict[str, Any]) -> list[str]:
    return list(record.get("tags", ()))


def _load_list(path: Path) -> list[Any]:
    value = marshal.loads(path.read_bytes())  # noqa: S302 - our own file
    if not isinstance(value, list):
        raise ValueError(f"{path} is damaged")
    return value


def _load_packed(
    folder: Path,
    name: str,
    decode: Callable[[Any], Any],
    size: int,
    read: bool,
    bulk: Callable[[bytes, int], list[Any]] | None = None,
) -> Packed:
    """A packed buffer, read whole for an update (it is copied into the next generation), else mapped."""
    offsets = np.load(folder / f"{name}.offsets.npy")
    path = folder / f"{name}.bin"
    data: Any = path.read_bytes() if read else _map(path)
    if offsets.shape != (size + 1,) or (size and int(offsets[-1]) != len(data)):
        raise ValueError(f"{name} do not match the records")
    return Packed(data, offsets, decode, bulk)


def _map(path: Path) -> Any:
    """``path`` mapped read-only now, read on first use: a mapping outlives its file, so a writer may prune
    this generation (``ee.index.generations.prune``) while a query still reads from it. (An empty file cannot
    be mapped: its bytes are b"".)"""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small objects that hold no cycles.

    Kept (issue 32 asked whether it could go), measured: a fresh ``ee search`` at 10k memories spends
    ~45 ms more CPU with the collector running through these loads (343 ms against 299 ms, median of 7
    fresh processes each, 2026-12-05, ``time.process_time`` around ``Workspace.search``). Safe in the
    threads of the warm server: a block that found the collector on turns it back on, so whatever the
    interleaving, the collector is on again once the blocks end."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _record(entry: Entry) -> dict[str, Any]:
    """What is stored of a record (``committed`` is a column: :class:`Records` adds it when read)."""
    record = dict(entry.record)
    record.pop("committed", None)
    record["path"] = entry.path
    record["blob"] = entry.blob
    return record


def _vectors(
    old: np.ndarray | None, keep: np.ndarray, add: Sequence[Entry], dim: int | None
) -> np.ndarray | None:
    if dim is None:
        return None
    base = int(keep.sum())
    if base and (old is None or old.shape[1] != dim):
        return None  # the model changed: the caller re-embeds everything
    if any(entry.vector is None for entry in add):
        return None
    out = np.empty((base + len(add), dim), dtype=np.float32)
    if base:
        assert old is not None
        out[:base] = old if base == len(old) else old[keep]
    for i, entry in enumerate(add):
        out[base + i] = entry.vector.reshape(dim)  # type: ignore[union-attr]
    return out
