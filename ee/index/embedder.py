"""The semantic encoder: a model2vec static model, loaded from a local folder only.

ee ships its default model inside the package (``ee/models/minilm-l6-v2-m2v256``, a model2vec distillation of
all-MiniLM-L6-v2; see its NOTICE). ``$EE_MODEL`` or an explicit path may point at any other model2vec folder.

The model is read directly with ``safetensors`` + ``tokenizers`` and encoded here, replicating
``model2vec.StaticModel.encode`` (character cap, token truncation, unknown-token removal, mean pooling, L2
normalisation); tests/test_model.py checks the two agree to 1e-5 on the shipped model. Reasons:

* ``StaticModel.from_pretrained`` falls back to downloading from the Hugging Face hub whenever the path does
  not exist (it defaults to ``force_download=True``), so a typo in ``$EE_MODEL`` would go to the network. This
  module never imports ``huggingface_hub`` and never touches the network.
* Importing model2vec pulls in huggingface_hub, joblib, tqdm and the model-card machinery (it parses README.md
  on every load); reading the two files directly is several times faster (figures in the commit message).

Heavy imports (numpy, safetensors, tokenizers) happen inside functions: importing this module stays cheap.
Queries do not even build the ``tokenizers.Tokenizer`` (~29 ms from tokenizer.json): ASCII text is tokenised
by :mod:`ee.index.wordpiece` from a vocabulary cached per user, with the same ids; other text, and document
batches, go to the real tokenizer, built on first need from the bytes read at load time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import ModelError

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

    from ee.index.wordpiece import WordPiece

__all__ = ["DEFAULT_MODEL_DIR", "DEFAULT_MODEL_NAME", "ENV_VAR", "Embedder", "load_embedder"]

DEFAULT_MODEL_NAME = "minilm-l6-v2-m2v256"
DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parent.parent / "models" / DEFAULT_MODEL_NAME
ENV_VAR = "EE_MODEL"
LEAD_WORDS = 24  # see Embedder.encode_documents
DOCUMENT_RECIPE = f"lead{LEAD_WORDS}+whole"  # part of the key cached document vectors are stored under

_DEFAULT_MAX_LENGTH = 512  # model2vec's default when config.json names none
_BATCH = 1024  # texts tokenised and pooled at a time (bounds memory; model2vec uses the same batch size)
_FAST_TEXTS = 16  # batches up to this size use the pure-Python tokenizer; larger ones the (parallel) Rust one

# The folder layouts model2vec itself accepts: (config, weights, tokenizer, name of the embedding tensor).
_LAYOUTS: tuple[tuple[str, str, str, str], ...] = (
    ("config.json", "model.safetensors", "tokenizer.json", "embeddings"),
    ("config_sentence_transformers.json", "model.safetensors", "tokenizer.json", "embedding.weight"),
    (
        "config_sentence_transformers.json",
        "0_StaticEmbedding/model.safetensors",
        "0_StaticEmbedding/tokenizer.json",
        "embedding.weight",
    ),
)


class Embedder:
    """A loaded static embedding model. Immutable ("frozen-ish") and safe to share between threads.

    ``model_id`` is ``<folder name>@<first 12 hex of sha256(model.safetensors)>``: indexes record it and are
    rebuilt when it changes. Build one with :func:`load_embedder`.
    """

    __slots__ = (
        "_char_cap",
        "_fast",
        "_mapping",
        "_max_length",
        "_median_chars",
        "_tokenizer",
        "_tokenizer_json",
        "_unk_id",
        "_vectors",
        "_weights",
        "dim",
        "model_id",
        "path",
    )

    model_id: str
    dim: int
    path: Path
    _vectors: np.ndarray
    _weights: np.ndarray | None
    _mapping: np.ndarray | None
    _tokenizer: Tokenizer | None
    _tokenizer_json: str
    _fast: WordPiece | None
    _median_chars: int | None
    _unk_id: int | None
    _max_length: int | None
    _char_cap: int | None

    def __init__(
        self,
        *,
        model_id: str,
        path: Path,
        vectors: np.ndarray,
        weights: np.ndarray | None,
        mapping: np.ndarray | None,
        tokenizer: Tokenizer | None,
        tokenizer_json: str,
        fast: WordPiece | None,
        median_chars: int | None,
        unk_id: int | None,
        max_length: int | None,
    ) -> None:
        init = object.__setattr__
        init(self, "model_id", model_id)
        init(self, "dim", int(vectors.shape[1]))
        init(self, "path", path)
        init(self, "_vectors", vectors)  # (vocab or clusters, dim): int8 / float16 / float32 as stored
        init(self, "_weights", weights)  # per-token weights (vocabulary-quantised models only)
        init(self, "_mapping", mapping)  # token id -> row of _vectors (vocabulary-quantised models only)
        init(self, "_tokenizer", tokenizer)  # None until first needed when ``fast`` covers queries
        init(self, "_tokenizer_json", tokenizer_json)  # the bytes the vocabulary facts were taken from
        init(self, "_fast", fast)  # pure-Python WordPiece for ASCII text, or None
        init(self, "_median_chars", median_chars)  # median token length in characters, when known
        init(self, "_unk_id", unk_id)
        init(self, "_max_length", max_length)
        init(self, "_char_cap", None)  # computed on first need: see _cap()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Embedder is immutable (cannot set {name})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Embedder is immutable (cannot delete {name})")

    def __repr__(self) -> str:
        return f"Embedder(model_id={self.model_id!r}, dim={self.dim}, path={str(self.path)!r})"

    def _cap(self) -> int:
        """model2vec cuts each text to max_length * (median token length) characters before tokenising.

        Reading the vocabulary for the median costs ~15 ms, so it is done once, and only when some text is
        longer than max_length characters (the cap is at least that, as every token has a character).
        """
        cap = self._char_cap
        if cap is None:
            assert self._max_length is not None
            median = self._median_chars
            if median is None:
                median = _median_token_chars(self._real_tokenizer())
            cap = self._max_length * median
            object.__setattr__(self, "_char_cap", cap)  # idempotent: a race computes the same value
        return cap

    def _real_tokenizer(self) -> Tokenizer:
        """The ``tokenizers`` tokenizer, set up as model2vec sets it up; built on first need.

        Built from the bytes read at load time, so it cannot disagree with the cached vocabulary even if
        the file changed since. A race builds two identical tokenizers; either may be kept.
        """
        tokenizer = self._tokenizer
        if tokenizer is None:
            tokenizer = _configured_tokenizer(self._tokenizer_json, self._max_length)
            object.__setattr__(self, "_tokenizer", tokenizer)
        return tokenizer

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's ids as ``Tokenizer.encode(text, add_special_tokens=False)`` gives them, truncated.

        Small batches (queries) go through the pure-Python tokenizer where it applies; the rest, and every
        text it declines, through the real one.
        """
        fast = self._fast
        ids: list[list[int] | None]
        if fast is not None and len(texts) <= _FAST_TEXTS:
            limit = self._max_length
            ids = [fast.encode(text) for text in texts]
            ids = [found if found is None or limit is None else found[:limit] for found in ids]
        else:
            ids = [None] * len(texts)
        missing = [i for i, found in enumerate(ids) if found is None]
        if missing:
            tokenizer = self._real_tokenizer()
            encode_batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
            encodings = encode_batch([texts[i] for i in missing], add_special_tokens=False)
            for i, enc in zip(missing, encodings, strict=True):
                ids[i] = enc.ids
        return [found if found is not None else [] for found in ids]

    def encode_documents(self, texts: list[str], lead_words: int = LEAD_WORDS) -> np.ndarray:
        """Document vectors: ``normalise(e(first lead_words words) + e(whole text))``.

        A static model averages every token vector, so a long memory drifts towards a generic vector and
        its opening (the title and first sentence, where a memory says what it is about) is drowned out.
        Adding the lead's vector keeps it: on the development set semantic recall@10 rose from 0.432 to
        0.493 and hybrid from 0.687 to 0.701 (scripts/tune_retrieval.py). Texts of at most ``lead_words``
        words get their plain vector. Queries use :meth:`encode`.
        """
        import numpy as np

        full = self.encode(texts)
        leads = [" ".join(t.split()[:lead_words]) for t in texts]
        both = full + self.encode(leads)
        norms = np.linalg.norm(both, axis=1, keepdims=True)
        return np.divide(both, norms, out=np.zeros_like(both), where=norms > 0).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``: float32 array (len(texts), dim), each row L2-normalised.

        A text with no known token (empty, whitespace, only unknown symbols) gets a row of zeros. The result
        depends only on the model and the texts: no batching effect, no randomness.
        """
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("Embedder.encode takes a list of strings, not a string")
        n = len(texts)
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0:
            return out
        texts = list(texts)
        if self._max_length is not None and any(len(t) > self._max_length for t in texts):
            cap = self._cap()
            texts = [t[:cap] for t in texts]

        for begin in range(0, n, _BATCH):
            self._encode_into(texts[begin : begin + _BATCH], out[begin : begin + _BATCH])
        return out

    def _encode_into(self, texts: list[str], out: np.ndarray) -> None:
        """Mean-pool and normalise one batch into ``out`` (zeros where a text has no known token).

        One small gather per text: on this hardware it beats one big gather + ``np.add.reduceat`` by an
        order of magnitude (large temporaries cost more in page faults than the loop costs in Python).
        """
        import numpy as np

        unk = self._unk_id
        vectors, weights, mapping = self._vectors, self._weights, self._mapping
        exact = vectors.dtype.kind == "i" and weights is None  # integer sums: exact, order-independent
        for row, token_ids in enumerate(self._token_ids(texts)):
            ids = np.asarray(token_ids, dtype=np.int64)
            if unk is not None:
                ids = ids[ids != unk]
            if ids.size == 0:
                continue  # no known token: the row stays zero
            picked = vectors[mapping[ids] if mapping is not None else ids]
            if exact:
                total = picked.sum(axis=0, dtype=np.int64).astype(np.float32)
            elif weights is not None:
                total = (picked.astype(np.float32) * weights[ids].astype(np.float32)[:, None]).sum(axis=0)
            else:
                total = picked.astype(np.float32).sum(axis=0)
            out[row] = total / np.float32(ids.size)
        # Normalise the batch at once as model2vec does (same arithmetic, same bits); zero rows stay 0.
        out /= np.linalg.norm(out, axis=1, keepdims=True) + np.float32(1e-32)


def _resolve(path: str | Path | None) -> tuple[Path, str]:
    """The folder to load and where its name came from (for messages)."""
    if path is not None:
        return Path(path).expanduser(), "the given path"
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser(), f"${ENV_VAR}"
    return DEFAULT_MODEL_DIR, "the default model shipped with ee"


def _repair_hint(source: str, folder: Path) -> str:
    if source == f"${ENV_VAR}":
        return (
            f"unset {ENV_VAR}   # to use the model shipped with ee, or point it at a model2vec folder "
            f"(config.json, model.safetensors, tokenizer.json): export {ENV_VAR}=/path/to/model"
        )
    if source == "the given path":
        return f"pass a model2vec folder (config.json, model.safetensors, tokenizer.json), not {folder}"
    return (
        "pip install --force-reinstall --no-deps eidetic-engine   "
        f"# the package is damaged; in a source checkout: git checkout -- ee/models/{DEFAULT_MODEL_NAME}"
    )


def load_embedder(path: str | Path | None = None) -> Embedder:
    """Load a model2vec model folder; ``None`` means ``$EE_MODEL`` if set, else :data:`DEFAULT_MODEL_DIR`.

    Raises :class:`ee.errors.ModelError` (with a copy-paste repair hint) when the folder is missing,
    unreadable or incomplete. Reads local files only: never the network.
    """
    import json

    folder, source = _resolve(path)

    def fail(what: str, cause: BaseException | None = None) -> ModelError:
        err = ModelError(
            f"semantic model unavailable ({source}: {folder}): {what}",
            _repair_hint(source, folder),
            {"path": str(folder), "source": source},
        )
        if cause is not None:
            err.__cause__ = cause
        return err

    if not folder.exists():
        raise fail("no such folder")
    if not folder.is_dir():
        raise fail("not a folder")
    layout = next(
        (lay for lay in _LAYOUTS if all((folder / name).is_file() for name in lay[:3])),
        None,
    )
    if layout is None:
        missing = [n for n in _LAYOUTS[0][:3] if not (folder / n).is_file()]
        raise fail(f"incomplete model folder, missing {', '.join(missing)}")
    config_name, weights_name, tokenizer_name, tensor_name = layout

    from ee.index import wordpiece

    weights_path = folder / weights_name
    try:
        config: dict[str, Any] = json.loads((folder / config_name).read_text(encoding="utf-8"))
        tensors, digest = _read_weights(weights_path)
        tokenizer_bytes = (folder / tokenizer_name).read_bytes()
        tokenizer_json = tokenizer_bytes.decode("utf-8")
    except Exception as exc:  # OSError, JSON errors, and safetensors' own exception types
        raise fail(f"cannot read the model files ({type(exc).__name__}: {exc})", exc) from exc
    if not isinstance(config, dict):
        raise fail(f"{config_name} is not a JSON object")
    max_length = config.get("max_length", _DEFAULT_MAX_LENGTH)
    if max_length is not None and (
        not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1
    ):
        raise fail(f"{config_name}: max_length must be a positive integer or null, not {max_length!r}")

    # The vocabulary facts (and the pure-Python tokenizer) come from a per-user cache keyed by the file's
    # sha256; on a miss they are taken from the real tokenizer, which is then kept.
    tokenizer: Tokenizer | None = None
    cached = wordpiece.load_vocab(tokenizer_bytes)
    if cached is not None:
        fast, facts = cached
    else:
        try:
            tokenizer = _configured_tokenizer(tokenizer_json, max_length)
        except ModelError:  # tokenizers is not installed: keep that message and its hint
            raise
        except Exception as exc:  # tokenizers' own exception types
            raise fail(f"cannot read the model files ({type(exc).__name__}: {exc})", exc) from exc
        facts = {
            "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True),
            "unk_id": _unk_id(tokenizer),
            "median": _median_token_chars(tokenizer),
        }
        fast = wordpiece.save_vocab(tokenizer_bytes, tokenizer.get_vocab(with_added_tokens=True), facts)

    vectors = tensors.get(tensor_name)
    if vectors is None:
        raise fail(f"{weights_name} has no '{tensor_name}' tensor")
    if vectors.ndim != 2 or vectors.shape[0] == 0 or vectors.shape[1] == 0:
        raise fail(f"'{tensor_name}' has shape {vectors.shape}, expected (tokens, dim)")
    if vectors.dtype.kind not in "fi":
        raise fail(f"'{tensor_name}' has unsupported dtype {vectors.dtype}")
    weights = tensors.get("weights")
    mapping = tensors.get("mapping")

    vocab_size = facts["vocab_size"]
    if mapping is None and vocab_size != vectors.shape[0]:
        raise fail(f"tokenizer has {vocab_size} tokens but the model {vectors.shape[0]} vectors")
    if mapping is not None and (mapping.shape[0] < vocab_size or int(mapping.max()) >= vectors.shape[0]):
        raise fail("token mapping does not fit the vectors")
    if weights is not None and weights.shape[0] < vocab_size:
        raise fail("token weights do not cover the vocabulary")

    for array in (vectors, weights, mapping):
        if array is not None:
            array.flags.writeable = False

    return Embedder(
        model_id=f"{folder.resolve().name}@{digest[:12]}",
        path=folder,
        vectors=vectors,
        weights=weights,
        mapping=mapping,
        tokenizer=tokenizer,
        tokenizer_json=tokenizer_json,
        fast=fast,
        median_chars=facts["median"],
        unk_id=facts["unk_id"],
        max_length=max_length,
    )


def _configured_tokenizer(tokenizer_json: str, max_length: int | None) -> Tokenizer:
    """A ``tokenizers.Tokenizer`` set up as model2vec's StaticModel sets it up.

    No padding, truncation to max_length tokens (texts are also cut to max_length * (median token length)
    characters before tokenising: see ``Embedder._cap``).
    """
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - runtime deps of ee
        raise ModelError(
            f"semantic model unavailable: {exc}",
            "pip install 'numpy' 'safetensors' 'tokenizers'   # or reinstall ee with its dependencies",
        ) from exc
    tokenizer = Tokenizer.from_str(tokenizer_json)
    tokenizer.no_padding()
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    return tokenizer


def _unk_id(tokenizer: Tokenizer) -> int | None:
    """The unknown token's id: model2vec drops it before pooling (it carries no meaning)."""
    import json

    if hasattr(tokenizer.model, "unk_token"):  # WordPiece, BPE, WordLevel
        if tokenizer.model.unk_token is not None:
            found = tokenizer.token_to_id(tokenizer.model.unk_token)
            return found if isinstance(found, int) else None
        return None
    found = json.loads(tokenizer.to_str()).get("model", {}).get("unk_id")  # Unigram
    return found if isinstance(found, int) else None


def _median_token_chars(tokenizer: Tokenizer) -> int:
    """int(median length of the vocabulary's tokens), as model2vec computes it for its character cap."""
    import numpy as np

    vocab = tokenizer.get_vocab(with_added_tokens=True)
    lengths = np.fromiter((len(t) for t in vocab), dtype=np.int64, count=len(vocab))
    return int(np.median(lengths))


# safetensors dtype → numpy (little-endian, as the format stores them); anything else goes to safetensors.
_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}


def _read_weights(path: Path) -> tuple[dict[str, np.ndarray], str]:
    """The tensors of a safetensors file (read-only arrays) and the file's sha256 (hex).

    The arrays are views of a read-only memory map: a query touches only the rows of its own tokens, not
    the 7.5 MB of the file (reading and copying it cost a fresh query ~5 ms). The sha256, which names the
    model in ``model_id``, comes from :func:`_weights_digest`'s cache when the file is unchanged (hashing
    cost ~7 ms a load). A header this reader does not follow goes to ``safetensors`` itself.
    """
    import mmap

    with open(path, "rb") as handle:
        info = os.fstat(handle.fileno())
        try:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            mapped = None
    data: Any = mapped if mapped is not None else b""
    tensors = _parse_safetensors(data)
    if tensors is None:
        from safetensors.numpy import load as load_safetensors

        tensors = load_safetensors(bytes(data))
    return tensors, _weights_digest(path, info, data)


def _parse_safetensors(data: Any) -> dict[str, np.ndarray] | None:
    """Arrays over ``data`` (bytes or a memory map) for each tensor, or None for anything unusual."""
    import json

    import numpy as np

    if len(data) < 8:
        return None
    size = int.from_bytes(data[:8], "little")
    if size > len(data) - 8 or size > 100 * 2**20:
        return None
    try:
        header = json.loads(bytes(data[8 : 8 + size]))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(header, dict):
        return None
    start = 8 + size
    out: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(spec, dict) or spec.get("dtype") not in _DTYPES:
            return None
        dtype = np.dtype(_DTYPES[spec["dtype"]])
        shape, offsets = spec.get("shape"), spec.get("data_offsets")
        if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
            return None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(n, int) for n in offsets)):
            return None
        begin, end = offsets
        count = 1
        for n in shape:
            count *= n
        if not 0 <= begin <= end <= len(data) - start or end - begin != count * dtype.itemsize:
            return None
        array = np.frombuffer(data, dtype=dtype, count=count, offset=start + begin).reshape(shape)
        out[name] = array.astype(dtype.newbyteorder("="), copy=False)
    return out


def _weights_digest(path: Path, info: os.stat_result, data: Any) -> str:
    """sha256 of the weights file, remembered per user by path, size, inode and change times.

    Any write to the file changes its mtime and ctime (ctime cannot be set back by the user), so an
    unchanged key means unchanged bytes. The cache (``$XDG_CACHE_HOME/ee/model-digests.json``) is only a
    shortcut: unreadable, missing or unwritable, the digest is computed as before.
    """
    import hashlib
    import json

    key = os.path.realpath(path)
    stamp = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    cache = Path(cache_home) / "ee" / "model-digests.json"
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    entry = known.get(key)
    if isinstance(entry, dict) and entry.get("stat") == stamp and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    digest = hashlib.sha256(data).hexdigest()
    known[key] = {"stat": stamp, "sha256": digest}
    from ee.index.wordpiece import write_cache_file

    write_cache_file(cache, json.dumps(known).encode())
    return digest
