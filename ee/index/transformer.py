"""The transformer semantic arm: all-MiniLM-L6-v2 as an int8 ONNX graph, run by onnxruntime.

ee ships the model inside the package (``ee/models/minilm-l6-v2-onnx-int8``, built by
``scripts/build_onnx_model.py``; see its NOTICE). Its vectors are far better witnesses of meaning than the
static model's (semantic-only recall@10 on the development set 0.606 against 0.521, and paraphrases
separate from off-topic questions much more cleanly), but embedding costs ~70× the static model's time.
So a memory's vector is computed once per blob id, in the background (the warm server's idle time,
:func:`embed_pending`) and by ``ee index rebuild``, and cached in the derived cache like every derived
datum. A query never waits for them: until every memory of a generation has its vector, the static arm
answers (``ee.index.view.IndexView.arm``).

Each text is run through the graph alone: the graph quantises its activations per call (dynamic int8), so
a text's vector would depend on what else shares its batch (cosine 0.98 between the two); alone, it
depends on the text only, and the same store gives the same bytes however it was embedded. (Alone is also
faster here: a batch pads every text to the longest.) :data:`THREADS` texts run at once, each on one
onnxruntime thread. Work is still done in batches of :data:`BATCH` texts between the time checks and
cache writes of :func:`embed_pending`.

A generation's complete matrix (rows in position order) is saved beside it as
``transformer-<key>.npy``: a query memory-maps it, as it does the static vectors.

Heavy imports (numpy, onnxruntime, tokenizers) happen inside functions: importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BATCH",
    "DEFAULT_MAX_MEMORIES",
    "DEFAULT_TRANSFORMER_DIR",
    "LEAD_WORDS",
    "STATES",
    "THREADS",
    "Transformer",
    "VectorReport",
    "embed_pending",
    "load_transformer",
    "matrix_path",
    "vectors_done",
]

TRANSFORMER_NAME = "minilm-l6-v2-onnx-int8"
DEFAULT_TRANSFORMER_DIR: Path = Path(__file__).resolve().parent.parent / "models" / TRANSFORMER_NAME
BATCH = 8  # texts embedded between two time checks (and one cache write)
THREADS = 2  # texts run at once, each on one onnxruntime thread (see Transformer.encode)
# A store larger than this keeps the static arm: embedding it takes minutes (~150 memories/s), and
# its cosines cost a served query more than the static ones (bench/README.md, "transformer arm").
DEFAULT_MAX_MEMORIES = 50_000
PENDING = "transformer-pending"  # a generation whose vectors the cache did not hold, checked once
# What a memory's cached vector is made of (Transformer.encode_documents of ee.index.derive
# .transformer_text): part of the name cached vectors and saved matrices are filed under, so vectors
# of another recipe are never mixed with this one's (they are embedded again).
DOCUMENT_RECIPE = "tags+body:whole+pooled-lead16"
# The words of a memory's opening whose tokens the graph pools into the lead's vector (its second
# output, from the same run as the whole text's). Fewer than the static model's LEAD_WORDS (24): these
# tokens have read the whole text, so a shorter opening is enough. Semantic-only R@10 / MRR@10 on the
# development set (exact cosine ranking) with 12, 16, 24, 32, 48 words: 0.614 / 0.358,
# 0.613 / 0.360, 0.599 / 0.349, 0.597 / 0.349, 0.592 / 0.339 (bench/README.md, "fifth pass").
LEAD_WORDS = 16
# The files whose bytes make a model's vectors: the graph, the tokenizer and the configuration that
# sets the truncation. All three are in the model's identity (the id, the cheap key).
MODEL_FILES = ("model.onnx", "tokenizer.json", "config.json")


# Where a store's transformer vectors stand (``ee index rebuild`` and ``ee index status`` say it):
# complete (the transformer arm answers), pending (the static arm answers until the rest are embedded),
# off (``[model] transformer = false``), above_max_memories (the store is larger than ``[model]
# transformer_max_memories``), unavailable (the model is not installed), empty (no memory to embed).
STATES = ("complete", "pending", "off", "above_max_memories", "unavailable", "empty")


@dataclass(frozen=True, slots=True)
class VectorReport:
    """The transformer arm's vectors of a generation: ``state`` (one of :data:`STATES`), the memories
    with a vector (``done``: ``reused`` from the cache plus ``computed`` now) of ``memories``, the
    seconds spent embedding, and the configured ``max_memories``."""

    state: str
    memories: int
    done: int = 0
    computed: int = 0
    reused: int = 0
    seconds: float = 0.0
    max_memories: int = DEFAULT_MAX_MEMORIES

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "memories": self.memories,
            "done": self.done,
            "computed": self.computed,
            "reused": self.reused,
            "seconds": round(self.seconds, 4),
            "max_memories": self.max_memories,
        }


@dataclass(frozen=True, slots=True)
class Transformer:
    """A loaded ONNX sentence encoder. Safe to share between threads (onnxruntime sessions are)."""

    model_id: str
    dim: int
    path: Path
    session: Any = field(repr=False, compare=False)
    tokenizer: Any = field(repr=False, compare=False)

    def vocabulary(self) -> list[str]:
        """Every token of the tokenizer (what ``ee.index.embedder.derive_profile`` reads words from)."""
        vocab: dict[str, int] = self.tokenizer.get_vocab(with_added_tokens=True)
        return [token for token, _id in sorted(vocab.items(), key=lambda item: item[1])]

    def encode(self, texts: list[str]) -> np.ndarray:
        """L2-normalised float32 vectors (len(texts), dim), each text run alone (see the module's doc).
        A text with no token at all gets a row of zeros."""
        return self._run(texts, lead=False)

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        """Document vectors: ``normalise(e(whole text) + e(its first LEAD_WORDS words))``, as the static
        model's recipe (:meth:`ee.index.embedder.Embedder.encode_documents`), from one run of the graph
        per text.

        The transformer reads a text's first 256 tokens and mean-pools them: a long memory's vector leans
        on its middle and tail, where its opening says what it is about. The lead's vector keeps the
        opening: the graph's second output mean-pools [CLS] and the tokens of the first
        :data:`LEAD_WORDS` words in the same run, so it costs nothing more than the whole text's (it is
        not the vector of the lead encoded alone: those tokens have read the rest of the text). On the
        development set semantic-only recall@10 / MRR@10 rose from 0.583 / 0.335 (whole text) to
        0.612 / 0.360 (bench/README.md, "fifth pass"). A text of at most LEAD_WORDS words is its own lead
        (its vector is the whole text's). Queries use :meth:`encode`."""
        return self._run(texts, lead=True)

    def _run(self, texts: list[str], lead: bool) -> np.ndarray:
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("Transformer.encode takes a list of strings, not a string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = [self.tokenizer.encode(text) for text in texts]

        def run(i: int) -> None:
            ids = encodings[i].ids
            if not ids:
                return
            row = np.asarray([ids], dtype=np.int64)
            mask = np.ones_like(row)
            lead_mask = _lead_mask(texts[i], encodings[i]) if lead else None
            feed = {
                "input_ids": row,
                "attention_mask": mask,
                "lead_mask": mask if lead_mask is None else lead_mask,
            }
            whole, first = self.session.run(None, feed)
            if lead_mask is None:  # (a query, or a text that is its own lead)
                out[i] = whole[0]
                return
            both = whole[0] + first[0]
            norm = float(np.linalg.norm(both))
            if norm > 0:
                out[i] = both / norm

        if len(texts) < 2:
            for i in range(len(texts)):
                run(i)
            return out
        # Several texts run at once, each alone on one onnxruntime thread (a session may be run from many
        # threads): on two cores two such runs embedded 156 texts/s against 94-120/s for one run on two
        # intra-op threads, whose work per short text is too small to split well (bench/README.md).
        # Each text's vector still depends on that text only.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            list(pool.map(run, range(len(texts))))
        return out


def _lead_mask(text: str, encoding: Any) -> Any | None:
    """The graph's ``lead_mask`` for one encoded text (shape (1, tokens)): 1 on [CLS] and on the tokens
    that start within the text's first :data:`LEAD_WORDS` whitespace-separated words
    (as :func:`ee.index.tokenize.lead` splits them), 0 elsewhere ([SEP] too). A text of at most
    LEAD_WORDS words is its own lead: None (its vector is the whole text's)."""
    import re

    import numpy as np

    ends = [m.end() for m, _ in zip(re.finditer(r"\S+", text), range(LEAD_WORDS + 1), strict=False)]
    if len(ends) <= LEAD_WORDS:
        return None
    starts = np.fromiter((start for start, _end in encoding.offsets), dtype=np.int64)
    special = np.asarray(encoding.special_tokens_mask, dtype=bool)
    mask = (starts < ends[LEAD_WORDS - 1]) & ~special
    mask[0] = True  # [CLS]
    return mask.astype(np.int64)[np.newaxis, :]


_LOADED: dict[str, Transformer] = {}  # folder key → loaded model: a long-lived process loads it once


def transformer_key(folder: Path) -> str | None:
    """A cheap key of the model in ``folder`` (path, and size and mtime of each of :data:`MODEL_FILES`),
    or None if model.onnx is absent."""
    stats = []
    for name in MODEL_FILES:
        try:
            st = (folder / name).stat()
        except OSError:
            if name == "model.onnx":
                return None
            stats.append("-")
            continue
        stats.append(f"{st.st_size}:{st.st_mtime_ns}")
    return f"{folder.resolve()}:{':'.join(stats)}"


def model_digest(folder: Path) -> str:
    """sha256 over the bytes of :data:`MODEL_FILES`, in order (each prefixed by its name and size): a
    changed graph, tokenizer or truncation is another model, whose vectors are computed again."""
    digest = hashlib.sha256()
    for name in MODEL_FILES:
        data = (folder / name).read_bytes()
        digest.update(f"{name}:{len(data)}\n".encode())
        digest.update(data)
    return digest.hexdigest()


MAX_DIM = 65_536  # the widest vector config.json's dim may name
MAX_TOKENS = 1_000_000  # the most tokens of a text its max_tokens may ask for


def _whole(config: Any, key: str, default: int | None, most: int) -> int:
    """config.json's ``key``: a whole number from 1 to ``most`` (a ValueError naming it otherwise)."""
    value = config.get(key, default) if isinstance(config, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ValueError(f"config.json: {key} must be a whole number from 1 to {most}, not {value!r}")
    return value


GRAPH_INPUTS = ("input_ids", "attention_mask", "lead_mask")  # what Transformer._run feeds
GRAPH_OUTPUTS = ("sentence_embedding", "lead_embedding")  # and the two vectors it reads back


def load_transformer(folder: Path = DEFAULT_TRANSFORMER_DIR) -> Transformer:
    """Load the ONNX model of ``folder`` (once per process while its file is unchanged).

    Raises :class:`ee.errors.ModelError` with a repair hint when the folder is incomplete or unreadable.
    Reads local files only: never the network."""
    key = transformer_key(folder) or ""
    loaded = _LOADED.get(key)
    if loaded is not None:
        return loaded

    def fail(what: str, cause: BaseException | None = None) -> ModelError:
        err = ModelError(
            f"transformer model unavailable ({folder}): {what}",
            "pip install --force-reinstall --no-deps eidetic-engine   "
            f"# in a source checkout: git checkout -- ee/models/{TRANSFORMER_NAME}",
            {"path": str(folder)},
        )
        if cause is not None:
            err.__cause__ = cause
        return err

    if not key or not (folder / "tokenizer.json").is_file() or not (folder / "config.json").is_file():
        raise fail("incomplete model folder (model.onnx, tokenizer.json, config.json)")
    try:
        import onnxruntime
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - runtime deps of ee
        raise fail(f"{exc}; pip install onnxruntime", exc) from exc
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        dim, max_tokens = _whole(config, "dim", None, MAX_DIM), _whole(config, "max_tokens", 256, MAX_TOKENS)
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_tokens)
        digest = model_digest(folder)
        options = onnxruntime.SessionOptions()
        # One thread per run: texts are spread over THREADS runs at once instead (Transformer.encode).
        # No thread is left spinning, burning a core the server's queries and the machine's other work
        # need (under load, two spinning intra-op threads embedded 41 texts per CPU-second, one 89).
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # (onnxruntime's shape-merge warnings are not the user's business)
        # From the file, not from its bytes read here: onnxruntime then holds the one copy it parses
        # (measured: +39 MB RSS for the session, against +69 MB with the bytes passed in), which the
        # per-user server keeps for its whole life.
        session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # OSError, JSON errors, and onnxruntime's / tokenizers' own exception types
        raise fail(f"cannot load it ({type(exc).__name__}: {exc})", exc) from exc
    inputs = [node.name for node in session.get_inputs()]
    outputs = [node.name for node in session.get_outputs()]
    if inputs != list(GRAPH_INPUTS) or outputs != list(GRAPH_OUTPUTS):  # (an older or foreign graph)
        raise fail(
            f"its graph takes {inputs} and gives {outputs}; ee {GRAPH_INPUTS} and {GRAPH_OUTPUTS} "
            "(a model built by another version of scripts/build_onnx_model.py)"
        )
    # What Transformer._run feeds and reads back: int64 ids and masks in, (batch, dim) float vectors out.
    fed = {node.type for node in session.get_inputs()}
    given = [(node.type, node.shape) for node in session.get_outputs()]
    if fed != {"tensor(int64)"} or any(
        kind != "tensor(float)" or shape[-1:] != [dim] for kind, shape in given
    ):
        raise fail(
            f"its graph takes {sorted(fed)} and gives {given}; ee feeds tensor(int64) and reads "
            f"tensor(float) vectors of config.json's dim ({dim})"
        )
    model = Transformer(f"{folder.resolve().name}@{digest[:12]}", dim, folder, session, tokenizer)
    _LOADED.clear()  # one model at a time: a changed key means the old one is gone
    _LOADED[key] = model
    return model


# ------------------------------------------------------------------------------------ vectors of a store


def matrix_path(gen_folder: Path, key: str) -> Path:
    """Where a generation's complete transformer matrix is saved (one per model and document recipe)."""
    named = f"{key}:{DOCUMENT_RECIPE}"
    digest = hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return gen_folder / f"transformer-{digest}.npy"


_IDS: dict[str, str] = {}  # folder key → model id (the model file's digest), computed once per process


def cache_model_id(folder: Path, key: str) -> str:
    """The name the derived cache files transformer vectors under: the model's id (``<folder name>@<first
    12 hex of`` :func:`model_digest` ``>``, as :func:`load_transformer` names it) and the
    :data:`DOCUMENT_RECIPE`, so a reinstalled or moved copy of the same model reuses them, and another
    model, tokenizer, truncation or recipe does not. Computed without loading the model (~20 ms), once
    per process."""
    model_id = _IDS.get(key)
    if model_id is None:
        model_id = _IDS[key] = f"{folder.resolve().name}@{model_digest(folder)[:12]}"
    return f"transformer:{model_id}:{DOCUMENT_RECIPE}"


def generation_blobs(gen_folder: Path) -> list[str]:
    """The blob id of each position of a saved generation (its ``columns.marshal``)."""
    import marshal

    columns = marshal.loads((gen_folder / "columns.marshal").read_bytes())  # noqa: S302 - our own file
    blobs = columns["blobs"]
    if not isinstance(blobs, list):
        raise ValueError("generation columns damaged")
    return blobs


_DIMS: dict[str, int] = {}  # folder key → config.json's dim, read once per process


def model_dim(folder: Path, key: str) -> int:
    """The width of the vectors of the model in ``folder`` (config.json's ``dim``), without loading it;
    an OSError or ValueError when config.json cannot say."""
    dim = _DIMS.get(key)
    if dim is None:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        dim = _DIMS[key] = _whole(config, "dim", None, MAX_DIM)
    return dim


def load_matrix(gen_folder: Path, model_folder: Path, key: str, size: int) -> np.ndarray | None:
    """The saved complete matrix of a generation, memory-mapped, or None (absent, damaged, of another
    shape than ``size`` rows of the model's width, or holding a NaN or an infinity: a file whose name is
    right but whose content lies is derived again, never a query's internal error)."""
    import numpy as np

    path = matrix_path(gen_folder, key)
    try:
        matrix = np.load(path, mmap_mode="r")
        dim = model_dim(model_folder, key)
    except (OSError, ValueError):
        return None
    if matrix.ndim != 2 or matrix.shape != (size, dim) or matrix.dtype != np.float32:
        return None
    if not np.isfinite(matrix).all():
        return None
    return matrix


def vectors_done(root: Path, gen_folder: Path, model_folder: Path, key: str, size: int) -> int:
    """How many memories of a saved generation have their transformer vector (all when its matrix is
    saved; else those the derived cache holds). Reads only: no model is loaded."""
    if load_matrix(gen_folder, model_folder, key, size) is not None:
        return size
    vectors = _cached_vectors(root, gen_folder, model_folder, key)
    if vectors is None:
        return 0
    blobs, found = vectors
    return sum(1 for blob in blobs if blob in found)


def assemble_from_cache(
    root: Path, gen_folder: Path, model_folder: Path, key: str, size: int
) -> np.ndarray | None:
    """A generation's matrix from vectors the derived cache already holds, saved beside it; None when the
    cache lacks any (then ``transformer-pending`` is left there so the next query does not look again:
    only :func:`embed_pending` fills the gap, and it saves the matrix itself). No model is loaded."""
    pending = gen_folder / PENDING
    if pending.exists():
        return None
    vectors = _cached_vectors(root, gen_folder, model_folder, key)
    if vectors is None:
        return None
    blobs, found = vectors
    if len(blobs) != size or any(b not in found for b in blobs):
        with contextlib.suppress(OSError):
            pending.touch()
        return None
    return _save_matrix(gen_folder, key, blobs, found)


def embed_pending(
    view: Any,
    max_seconds: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    lock: Any = None,
) -> tuple[int, int]:
    """Embed the memories of ``view``'s generation that the derived cache has no transformer vector for,
    :data:`BATCH` at a time, until all are done or ``max_seconds`` have passed (None: no limit). Each batch
    is written to the cache at once, so work is never lost; when every memory has its vector, the
    generation's matrix is saved beside it and the next query answers with the transformer arm.

    Returns (memories with a vector, memories in the generation). Any server loop calls this in idle
    time, passing the ``lock`` its queries hold: the view switches arms under it, never in the middle of a
    query (whose vector and cosines must come from one arm); ``ee index rebuild`` calls it with no limit
    and a ``progress(phase, done, total)``. Does nothing (returns (0, size)) when the view has no saved
    generation, the store is above the configured size, or the transformer is off or not there."""
    import numpy as np

    started = time.monotonic()
    gen = view.gen
    folder = _gen_folder(view)
    key = view.transformer_key
    if folder is None or not key or gen.size == 0:
        return (0, gen.size)
    saved = load_matrix(folder, view.transformer_folder, key, gen.size)
    if saved is not None:
        _switch(view, saved, lock)
        return (gen.size, gen.size)
    assert view.root is not None
    vectors = _cached_vectors(view.root, folder, view.transformer_folder, key)
    if vectors is None:
        return (0, gen.size)
    blobs, found = vectors
    missing = [pos for pos, blob in enumerate(blobs) if blob not in found]
    done = gen.size - len(missing)
    if missing:
        from ee.index.cache import DerivedCache
        from ee.index.derive import transformer_text
        from ee.index.freshness import CACHE_PATH

        model = load_transformer(view.transformer_folder)
        cache = DerivedCache(view.root / CACHE_PATH)
        try:
            for start in range(0, len(missing), BATCH):
                if max_seconds is not None and time.monotonic() - started >= max_seconds:
                    break
                chunk = missing[start : start + BATCH]
                texts = []
                for pos in chunk:
                    record = gen.records[pos]
                    texts.append(transformer_text(gen.body(pos), record.get("tags") or []))
                matrix = model.encode_documents(texts)
                rows = {blobs[p]: matrix[i].tobytes() for i, p in enumerate(chunk)}
                cache.put_vectors(rows, cache_model_id(view.transformer_folder, key))
                found.update({blob: np.frombuffer(row, dtype=np.float32) for blob, row in rows.items()})
                done += len(chunk)
                if progress is not None:
                    progress("transformer", done, gen.size)
        finally:
            cache.close()
    if done < gen.size:
        return (done, gen.size)
    if _save_matrix(folder, key, blobs, found) is not None:
        # The relevance profile of the model (its null cosines: 400 encodings, ~1 s) is derived and saved
        # now, in the background, so the first query the transformer answers does not wait for it.
        from ee.index.embedder import model_profile
        from ee.index.freshness import CACHE_PATH

        model_profile(load_transformer(view.transformer_folder), view.root / Path(CACHE_PATH).parent)
        _switch(view, load_matrix(folder, view.transformer_folder, key, gen.size), lock)
    with contextlib.suppress(OSError):
        (folder / PENDING).unlink(missing_ok=True)
    return (done, gen.size)


def _switch(view: Any, matrix: Any, lock: Any) -> None:
    if lock is None:
        view.use_transformer(matrix)
        return
    with lock:
        view.use_transformer(matrix)


def _gen_folder(view: Any) -> Path | None:
    from ee.index.freshness import INDEX_DIR

    if view.root is None or view.commit is not None:
        return None  # (an asOf view keeps the static arm: it is not saved as a generation)
    name = view.manifest.get("generation") if isinstance(view.manifest, dict) else None
    if not name:
        return None
    folder: Path = view.root / INDEX_DIR / name
    return folder if folder.is_dir() else None


def _cached_vectors(
    root: Path, gen_folder: Path, model_folder: Path, key: str
) -> tuple[list[str], dict[str, Any]] | None:
    """(each position's blob, blob → cached vector of those the cache holds), or None when the generation
    or the cache cannot be read (a writer pruned it meanwhile: the next call sees the new one). A cached
    vector of another width than the model's, or holding a NaN or an infinity, counts as not held: it is
    embedded again (and replaced) instead of failing every query."""
    import numpy as np

    from ee.index.cache import DerivedCache, fits
    from ee.index.freshness import CACHE_PATH

    try:
        blobs = generation_blobs(gen_folder)
        model_id = cache_model_id(model_folder, key)
        dim = model_dim(model_folder, key)
        cache = DerivedCache(root / CACHE_PATH)
    except (OSError, ValueError, EOFError, KeyError, TypeError):
        return None
    try:
        raw = cache.get_vectors(blobs, model_id)
    finally:
        cache.close()
    found = {blob: np.frombuffer(data, dtype=np.float32) for blob, data in raw.items() if fits(data, dim)}
    return blobs, found


def _save_matrix(gen_folder: Path, key: str, blobs: list[str], found: dict[str, Any]) -> np.ndarray | None:
    """Write the matrix (rows in position order) atomically beside the generation; None if it is gone."""
    import numpy as np

    matrix = np.stack([found[b] for b in blobs]).astype(np.float32, copy=False)
    path = matrix_path(gen_folder, key)
    try:
        fd, tmp = tempfile.mkstemp(dir=gen_folder, prefix=".ee-tmp-", suffix=".npy")
    except OSError:
        return None  # (pruned by a writer since: the next generation gets its own)
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, matrix)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return None
    return matrix
