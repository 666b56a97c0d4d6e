"""The semantic encoder: a model2vec static model, loaded from a local folder only.

ee ships its default model inside the package (``ee/models/minilm-l6-v2-tl256``, a static model trained to
imitate all-MiniLM-L6-v2 by ``scripts/train_model.py``; see its NOTICE). ``$EE_MODEL`` or an explicit path
may point at any other model2vec folder.

Encoding is model2vec's own ``StaticModel.encode`` (character cap, token truncation, unknown-token removal,
mean pooling, L2 normalisation). Loading reads the folder's three files with the libraries model2vec
itself reads them with (``safetensors``, ``tokenizers``) and builds the ``StaticModel`` from them, instead
of calling ``StaticModel.from_pretrained``: that one falls back to downloading from the Hugging Face hub
whenever the path does not exist (a typo in ``$EE_MODEL`` would go to the network), and it imports
``huggingface_hub`` and parses the model card on every load. ee checks the folder and reads local files
only; it never imports ``huggingface_hub``.

Heavy imports (numpy, model2vec, safetensors, tokenizers) happen inside functions: importing this module stays
cheap.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.config import write_private
from ee.errors import ModelError, StorageError
from ee.index.tokenize import LEAD_WORDS, lead

if TYPE_CHECKING:
    import numpy as np
    from model2vec import StaticModel

    from ee.index.transformer import Transformer

__all__ = [
    "DEFAULT_MODEL_DIR",
    "DEFAULT_MODEL_NAME",
    "ENV_VAR",
    "WORD",
    "Embedder",
    "ModelProfile",
    "load_embedder",
    "model_profile",
]

DEFAULT_MODEL_NAME = "minilm-l6-v2-tl256"
DEFAULT_MODEL_DIR: Path = Path(__file__).resolve().parent.parent / "models" / DEFAULT_MODEL_NAME
ENV_VAR = "EE_MODEL"
MAX_TOKENS = 1_000_000  # the most tokens of a text a model's max_length may ask for (null: no limit)
DOCUMENT_RECIPE = f"lead{LEAD_WORDS}+whole"  # part of the key cached document vectors are stored under

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


@dataclass(frozen=True, slots=True)
class Embedder:
    """A loaded static embedding model. Immutable and safe to share between threads.

    ``model_id`` is ``<folder name>@<first 12 hex of sha256(model.safetensors)>``: indexes record it and are
    rebuilt when it changes. Build one with :func:`load_embedder`.
    """

    model_id: str
    dim: int
    path: Path
    model: StaticModel = field(repr=False, compare=False)

    def vocabulary(self) -> list[str]:
        """Every token of the model's tokenizer, added tokens included (the list model2vec built at load)."""
        return list(self.model.tokens)

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
        leads = [lead(t, lead_words) for t in texts]
        both = full + self.encode(leads)
        norms = np.linalg.norm(both, axis=1, keepdims=True)
        return np.divide(both, norms, out=np.zeros_like(both), where=norms > 0).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``: float32 array (len(texts), dim), each row L2-normalised (model2vec's encode).

        A text with no known token (empty, whitespace, only unknown symbols) gets a row of zeros. The result
        depends only on the model and the texts: no batching effect, no randomness.
        """
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("Embedder.encode takes a list of strings, not a string")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(texts, normalize=True, use_multiprocessing=False)
        return np.asarray(vectors, dtype=np.float32)


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


Fail = Callable[[str], ModelError]  # a model folder's problem → the error that names it


def _layout(folder: Path, fail: Fail) -> tuple[str, str, str, str]:
    """The file names of the model folder's layout (config, weights, tokenizer, the vectors' tensor)."""
    if not folder.exists():
        raise fail("no such folder")
    if not folder.is_dir():
        raise fail("not a folder")
    layout = next((lay for lay in _LAYOUTS if all((folder / name).is_file() for name in lay[:3])), None)
    if layout is None:
        missing = [n for n in _LAYOUTS[0][:3] if not (folder / n).is_file()]
        raise fail(f"incomplete model folder, missing {', '.join(missing)}")
    return layout


def _max_length(config: Any, config_name: str, fail: Fail) -> int | None:
    """The model's ``max_length`` (tokens per text; None: no limit), checked."""
    if not isinstance(config, dict):
        raise fail(f"{config_name} is not a JSON object")
    max_length = config.get("max_length", 512)  # model2vec's default when config.json names none
    if max_length is not None and (
        not isinstance(max_length, int) or isinstance(max_length, bool) or not 1 <= max_length <= MAX_TOKENS
    ):
        raise fail(
            f"{config_name}: max_length must be a whole number from 1 to {MAX_TOKENS} or null, "
            f"not {max_length!r}"
        )
    return max_length


def _checked_tensors(
    tensors: dict[str, Any], vocab_size: int, weights_name: str, tensor_name: str, fail: Fail
) -> tuple[Any, Any, Any]:
    """(vectors, token weights or None, token mapping or None), each fitting the others and the
    tokenizer's ``vocab_size``."""
    import numpy as np

    vectors = tensors.get(tensor_name)
    if vectors is None:
        raise fail(f"{weights_name} has no '{tensor_name}' tensor")
    if vectors.ndim != 2 or vectors.shape[0] == 0 or vectors.shape[1] == 0:
        raise fail(f"'{tensor_name}' has shape {vectors.shape}, expected (tokens, dim)")
    if vectors.dtype.kind not in "fi":
        raise fail(f"'{tensor_name}' has unsupported dtype {vectors.dtype}")
    # A NaN or infinite number in a vector makes every score it meets NaN: no ranking can use it.
    for name, array in ((tensor_name, vectors), ("weights", tensors.get("weights"))):
        if array is not None and array.dtype.kind == "f" and not np.isfinite(array).all():
            raise fail(f"'{name}' holds numbers that are not finite (NaN or infinity)")
    weights, mapping = tensors.get("weights"), tensors.get("mapping")
    if mapping is None and vocab_size != vectors.shape[0]:
        raise fail(f"tokenizer has {vocab_size} tokens but the model {vectors.shape[0]} vectors")
    if mapping is not None and (mapping.shape[0] < vocab_size or int(mapping.max()) >= vectors.shape[0]):
        raise fail("token mapping does not fit the vectors")
    if weights is not None and weights.shape[0] < vocab_size:
        raise fail("token weights do not cover the vocabulary")
    return vectors, weights, mapping


def load_embedder(path: str | Path | None = None) -> Embedder:
    """Load a model2vec model folder; ``None`` means ``$EE_MODEL`` if set, else :data:`DEFAULT_MODEL_DIR`.

    Raises :class:`ee.errors.ModelError` (with a copy-paste repair hint) when the folder is missing,
    unreadable or incomplete. Reads local files only: never the network.
    """
    import hashlib
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

    config_name, weights_name, tokenizer_name, tensor_name = _layout(folder, fail)

    try:
        from model2vec import StaticModel
        from safetensors.numpy import load as load_tensors
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - runtime deps of ee
        raise ModelError(
            f"semantic model unavailable: {exc}",
            "pip install 'model2vec'   # or reinstall ee with its dependencies",
        ) from exc

    try:
        config: Any = json.loads((folder / config_name).read_text(encoding="utf-8"))
        data = (folder / weights_name).read_bytes()
        tensors = load_tensors(data)
        tokenizer = Tokenizer.from_file(str(folder / tokenizer_name))
    except Exception as exc:  # OSError, JSON errors, and safetensors' / tokenizers' own exception types
        raise fail(f"cannot read the model files ({type(exc).__name__}: {exc})", exc) from exc
    max_length = _max_length(config, config_name, fail)
    vectors, weights, mapping = _checked_tensors(
        tensors, tokenizer.get_vocab_size(with_added_tokens=True), weights_name, tensor_name, fail
    )
    for array in (vectors, weights, mapping):
        if array is not None:
            array.flags.writeable = False

    model = StaticModel(
        vectors=vectors,
        tokenizer=tokenizer,
        config=config,
        normalize=True,
        weights=weights,
        token_mapping=mapping,
        max_length=max_length,
    )
    digest = hashlib.sha256(data).hexdigest()
    return Embedder(
        model_id=f"{folder.resolve().name}@{digest[:12]}", dim=int(model.dim), path=folder, model=model
    )


# ------------------------------------------------------------------------------------------ model profile
# A word as calibrated relevance counts them: letters only (ee.query.relevance reads a query's words with it).
WORD = re.compile(r"[^\W\d_]+")
PROFILE_VERSION = 1  # bump when what derive_profile computes, or how, changes: saved profiles are redone
_PROBE_TEXTS = 400  # random-word texts for the null distribution: 200 unrelated pairs
_PROBE_WORDS = 8
_PROFILES: dict[str, ModelProfile] = {}  # model id → its profile: a long-lived process derives it once


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """What calibrated relevance (ee.query.relevance) needs to know about a model, from the model alone.

    ``null_mean`` and ``null_spread`` (μ₀, σ₀) describe the cosine between unrelated texts: estimated from
    200 pairs of texts of eight random whole words of the model's vocabulary (longer than two letters),
    drawn with a fixed seed. ``words`` are the whole words of its tokenizer (WordPiece continuation pieces
    and special tokens aside), casefolded.
    """

    model_id: str
    null_mean: float
    null_spread: float
    words: frozenset[str]


def derive_profile(embedder: Embedder | Transformer) -> ModelProfile:
    """The profile of ``embedder``'s model, computed (~70 ms: the word list and 400 encodings)."""
    import numpy as np

    words = frozenset(
        t.casefold().lstrip("▁Ġ")
        for t in embedder.vocabulary()
        if not t.startswith(("##", "[", "<")) and WORD.fullmatch(t.lstrip("▁Ġ"))
    )
    probes = sorted(w for w in words if len(w) > 2 and w.isascii())
    if len(probes) < _PROBE_WORDS:
        return ModelProfile(embedder.model_id, 0.0, 1.0, words)
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(probes), size=(_PROBE_TEXTS, _PROBE_WORDS))
    texts = [" ".join(probes[j] for j in row) for row in picks.tolist()]
    vectors = np.asarray(embedder.encode(texts), dtype=np.float64)
    half = _PROBE_TEXTS // 2
    cos = np.sum(vectors[:half] * vectors[half:], axis=1)
    return ModelProfile(embedder.model_id, float(cos.mean()), max(float(cos.std()), 1e-3), words)


def model_profile(embedder: Embedder | Transformer, folder: Path | None = None) -> ModelProfile:
    """The profile of ``embedder``'s model: derived once per process, and saved in ``folder`` (a
    workspace's derived cache) so the next process reads it instead of deriving it again.

    The saved file is derived data: one that is unreadable, damaged, of another model or another
    :data:`PROFILE_VERSION` is derived again and replaced; a folder that cannot be written costs only the
    time of deriving it. It is JSON, read with checks: a crafted file can at worst mis-state the model
    (it cannot run code), and it lives in ``.ee/``, which ee never commits."""
    profile = _PROFILES.get(embedder.model_id)
    if profile is not None:
        return profile
    path = folder / f"model-{_file_key(embedder.model_id)}.json" if folder is not None else None
    profile = _read_profile(path, embedder.model_id) if path is not None else None
    if profile is None:
        profile = derive_profile(embedder)
        if path is not None:
            _write_profile(path, profile)
    _PROFILES[embedder.model_id] = profile
    return profile


def _file_key(model_id: str) -> str:
    """A file-name-safe key of a model id (``<folder name>@<digest>``: the folder name is anyone's)."""
    import hashlib

    return hashlib.sha256(model_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _read_profile(path: Path, model_id: str) -> ModelProfile | None:
    from ee.config import read_settings_file  # (refuses a FIFO or device planted in its place, at once)

    try:
        data = json.loads(read_settings_file(path))
    except (OSError, ValueError):  # (UnicodeDecodeError and JSON errors are ValueErrors)
        return None
    if not isinstance(data, dict) or data.get("version") != PROFILE_VERSION or data.get("model") != model_id:
        return None
    mean, spread, words = data.get("null_mean"), data.get("null_spread"), data.get("words")
    if not isinstance(mean, float) or not isinstance(spread, float) or not isinstance(words, list):
        return None
    if not (math.isfinite(mean) and math.isfinite(spread) and spread > 0):
        return None
    if not all(isinstance(w, str) for w in words):
        return None
    return ModelProfile(model_id, mean, spread, frozenset(words))


def _write_profile(path: Path, profile: ModelProfile) -> None:
    from ee.store.files import make_state_folder

    data = {
        "version": PROFILE_VERSION,
        "model": profile.model_id,
        "null_mean": profile.null_mean,
        "null_spread": profile.null_spread,
        "words": sorted(profile.words),
    }
    # One temporary name per profile, not one per process: a writer killed before the rename leaves that
    # one file, which the next save rewrites. Two processes saving at once write the same bytes, and a
    # reader that meets a half-written file finds no valid JSON and derives the profile itself.
    tmp = path.with_name(path.name + ".tmp")
    try:
        make_state_folder(path.parent)
        write_private(tmp, json.dumps(data, ensure_ascii=False).encode("utf-8"))
        tmp.replace(path)
    # (not writable; StorageError: a link or a file in place of the folder, which make_state_folder refuses;
    # ValueError: a folder not under .ee/, or a word UTF-8 cannot hold, never expected)
    except (OSError, StorageError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
