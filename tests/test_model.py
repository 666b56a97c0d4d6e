"""The shipped semantic model and its loader (ee.index.embedder), on the real model: no mocks."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ee.errors import ModelError
from ee.index.embedder import DEFAULT_MODEL_DIR, ENV_VAR, Embedder, load_embedder

pytestmark = pytest.mark.semantic

# Pinned by scripts/train_model.py (deterministic); a change means the shipped model changed.
MODEL_SHA256 = "96140d936846bde67bc25b36b76e6caa788898f2cd866f481aa581f46e81bb17"
MODEL_ID = "minilm-l6-v2-tl256@96140d936846"
ROOT = Path(__file__).resolve().parent.parent

# (text a, text b, cosine): the original all-MiniLM-L6-v2 gives 0.819, 0.918, 0.090, -0.019 for these.
SIMILARITIES = [
    ("How do I undo my last git commit?", "Revert the most recent commit in git", 0.7344),
    (
        "Use pytest fixtures to share setup between tests.",
        "Test setup code can be shared with pytest fixtures.",
        0.9284,
    ),
    ("How do I undo my last git commit?", "My grandmother bakes bread every Sunday.", 0.1189),
    ("The cat sat on the mat.", "Quarterly revenue grew by twelve percent.", -0.0739),
]

TEXTS = [
    "How do I undo my last git commit?",
    "def load_embedder(path: str | Path | None = None) -> Embedder:",
    "café naïve 日本語 🎉 — ünïcödé",
    "[UNK] [CLS] tokens that look special",
    "supercalifragilisticexpialidocious" * 5,  # one word over 100 chars: WordPiece gives [UNK], dropped
    "word " * 3000,  # over 512 tokens and over the character cap: truncated the same way as model2vec
    "",
    "   \n\t ",
]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder(DEFAULT_MODEL_DIR)


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(ENV_VAR, raising=False)
    return monkeypatch


def cos(e: Embedder, a: str, b: str) -> float:
    v = e.encode([a, b])
    return float(v[0] @ v[1])


# --- the shipped folder ------------------------------------------------------------------------------------


def test_shipped_model_files_and_hash() -> None:
    assert DEFAULT_MODEL_DIR.parts[-3:] == ("ee", "models", "minilm-l6-v2-tl256")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "LICENSE", "NOTICE"):
        assert (DEFAULT_MODEL_DIR / name).is_file(), name
    data = (DEFAULT_MODEL_DIR / "model.safetensors").read_bytes()
    assert hashlib.sha256(data).hexdigest() == MODEL_SHA256
    size = sum(f.stat().st_size for f in DEFAULT_MODEL_DIR.iterdir() if f.is_file())
    assert size < 10_000_000
    assert "Apache License" in (DEFAULT_MODEL_DIR / "LICENSE").read_text(encoding="utf-8")
    notice = (DEFAULT_MODEL_DIR / "NOTICE").read_text(encoding="utf-8")
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice
    assert "model2vec" in notice
    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    assert config["hidden_dim"] == 256
    assert config["embedding_dtype"] == "int8"


def test_default_load(embedder: Embedder, no_env: pytest.MonkeyPatch) -> None:
    assert embedder.model_id == MODEL_ID
    assert embedder.dim == 256
    again = load_embedder()  # None and no $EE_MODEL: the shipped folder
    assert again.model_id == MODEL_ID
    assert again.path == DEFAULT_MODEL_DIR


def test_embedder_is_immutable(embedder: Embedder) -> None:
    with pytest.raises(AttributeError):
        embedder.model_id = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        embedder.dim = 3  # type: ignore[misc]


# --- encoding ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "expected"), SIMILARITIES)
def test_pinned_similarities(embedder: Embedder, a: str, b: str, expected: float) -> None:
    assert cos(embedder, a, b) == pytest.approx(expected, abs=1e-3)


def test_paraphrases_beat_unrelated(embedder: Embedder) -> None:
    q = "How do I undo my last git commit?"
    assert cos(embedder, q, "Revert the most recent commit in git") > 0.6
    assert cos(embedder, q, "My grandmother bakes bread every Sunday.") < 0.3


def test_shape_dtype_and_norms(embedder: Embedder) -> None:
    v = embedder.encode(TEXTS)
    assert v.dtype == np.float32
    assert v.shape == (len(TEXTS), 256)
    norms = np.linalg.norm(v, axis=1)
    for text, norm in zip(TEXTS, norms, strict=True):
        if text.strip() and not text.startswith("supercal"):
            assert norm == pytest.approx(1.0, abs=1e-5), text
    assert embedder.encode([]).shape == (0, 256)


def test_empty_text_gives_zero_row(embedder: Embedder) -> None:
    v = embedder.encode(["", "   ", "git commit", "\n"])
    assert not v[0].any()
    assert not v[1].any()
    assert not v[3].any()
    assert np.linalg.norm(v[2]) == pytest.approx(1.0, abs=1e-5)
    assert not embedder.encode([""]).any()


def test_encode_rejects_a_bare_string(embedder: Embedder) -> None:
    with pytest.raises(TypeError):
        embedder.encode("a string, not a list")  # type: ignore[arg-type]


def test_deterministic(embedder: Embedder) -> None:
    first = embedder.encode(TEXTS)
    assert np.array_equal(first, embedder.encode(TEXTS))
    # independent of batch composition and order
    order = [5, 2, 7, 0, 3, 1, 6, 4]
    assert np.array_equal(embedder.encode([TEXTS[i] for i in order]), first[order])
    for i, text in enumerate(TEXTS):
        assert np.array_equal(embedder.encode([text])[0], first[i])
    # and across loads
    assert np.array_equal(load_embedder(DEFAULT_MODEL_DIR).encode(TEXTS), first)


def test_matches_model2vec_encode(embedder: Embedder) -> None:
    """ee's local loader builds the model model2vec's own loader builds (same vectors for the same texts)."""
    from model2vec import StaticModel

    reference = StaticModel.from_pretrained(DEFAULT_MODEL_DIR, force_download=False, normalize=True).encode(
        TEXTS
    )
    ours = embedder.encode(TEXTS)
    assert reference.shape == ours.shape
    np.testing.assert_array_equal(ours, reference)


# --- where the model comes from ----------------------------------------------------------------------------


def test_missing_folder_raises_model_error(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelError) as info:
        load_embedder(missing)
    assert str(missing) in info.value.message
    assert info.value.hint
    assert info.value.to_dict()["code"] == "model_unavailable"
    assert not missing.exists()  # nothing was fetched or created there


def test_env_pointing_at_missing_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "gone"))
    with pytest.raises(ModelError) as info:
        load_embedder()
    assert ENV_VAR in info.value.message
    assert f"unset {ENV_VAR}" in info.value.hint


def test_incomplete_and_corrupt_folders(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    incomplete = tmp_path / "incomplete"
    shutil.copytree(DEFAULT_MODEL_DIR, incomplete)
    (incomplete / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json"):
        load_embedder(incomplete)

    corrupt = tmp_path / "corrupt"
    shutil.copytree(DEFAULT_MODEL_DIR, corrupt)
    (corrupt / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ModelError, match="cannot read"):
        load_embedder(corrupt)

    a_file = tmp_path / "a-file"
    a_file.write_text("x", encoding="utf-8")
    with pytest.raises(ModelError, match="not a folder"):
        load_embedder(a_file)


def _tiny_model(folder: Path, dim: int = 8) -> None:
    """A different model2vec-format model: the shipped tokenizer with random float32 vectors."""
    from safetensors.numpy import save_file

    folder.mkdir()
    shutil.copyfile(DEFAULT_MODEL_DIR / "tokenizer.json", folder / "tokenizer.json")
    vocab = json.loads((DEFAULT_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    rng = np.random.default_rng(7)
    save_file(
        {"embeddings": rng.standard_normal((len(vocab), dim)).astype(np.float32)},
        str(folder / "model.safetensors"),
    )
    (folder / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": True}))


def test_env_points_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "tiny-model"
    _tiny_model(other)
    monkeypatch.setenv(ENV_VAR, str(other))
    e = load_embedder()
    assert e.path == other
    assert e.dim == 8
    assert e.model_id.startswith("tiny-model@")
    assert e.model_id != MODEL_ID
    v = e.encode(["git commit", ""])
    assert v.shape == (2, 8)
    assert np.linalg.norm(v[0]) == pytest.approx(1.0, abs=1e-5)
    assert not v[1].any()
    # an explicit path wins over $EE_MODEL
    assert load_embedder(DEFAULT_MODEL_DIR).model_id == MODEL_ID


def test_copied_model_keeps_hash_takes_folder_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "my-copy"
    shutil.copytree(DEFAULT_MODEL_DIR, copy)
    monkeypatch.setenv(ENV_VAR, str(copy))
    assert load_embedder().model_id == "my-copy@" + MODEL_SHA256[:12]


def test_import_is_cheap_and_loading_never_touches_the_hub() -> None:
    # Measured against `import ee.index`: the package's own imports are not this module's doing.
    code = (
        "import sys\n"
        "import ee.index\n"
        "before = set(sys.modules)\n"
        "import ee.index.embedder as m\n"
        "heavy = ('numpy', 'tokenizers', 'safetensors', 'model2vec', 'huggingface_hub')\n"
        "added = [n for n in heavy if n in set(sys.modules) - before]\n"
        "assert not added, added\n"
        "m.load_embedder().encode(['hello'])\n"
        "assert 'model2vec' in sys.modules  # model2vec encodes\n"
        "net = ('huggingface_hub', 'requests', 'httpx', 'urllib3')\n"
        "bad = [n for n in net if n in set(sys.modules) - before]\n"
        "assert not bad, bad\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=60)


def test_a_missing_folder_never_reaches_the_hub(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    """A model id that model2vec would fetch from the hub is only a missing local folder to ee."""
    code = (
        "import sys\n"
        "from ee.errors import ModelError\n"
        "from ee.index.embedder import load_embedder\n"
        "try:\n"
        "    load_embedder('minishlab/potion-base-8M')\n"
        "except ModelError as e:\n"
        "    assert 'no such folder' in e.message, e.message\n"
        "else:\n"
        "    raise AssertionError('loaded a model that is not a local folder')\n"
        "assert 'huggingface_hub' not in sys.modules\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path, timeout=60)
    assert not (tmp_path / ".cache" / "huggingface").exists()


def _cache(tmp_path: Path) -> Path:
    """A workspace's derived cache, where ee saves a profile: ee writes its files only under ``.ee/``
    (issue 31), so a profile ``folder`` elsewhere is never written."""
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws" / ".ee" / "cache"


def _saved_profile(embedder: Embedder, folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Path]:
    """A profile derived and saved in ``folder`` by a fresh process (an empty memo), and its file."""
    from ee.index import embedder as module

    monkeypatch.setattr(module, "_PROFILES", {})
    good = module.model_profile(embedder, folder)
    (path,) = folder.glob("model-*.json")
    monkeypatch.setattr(module, "_PROFILES", {})  # the next call is a later process
    return good, path


# ------------------------------------------------------------------------------------------ model profile
def test_model_profile_is_derived_once_and_read_back_from_the_cache(
    embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ee.index import embedder as module

    monkeypatch.setattr(module, "_PROFILES", {})
    derived = module.derive_profile(embedder)
    assert 0.0 < derived.null_spread < 1.0
    assert -1.0 < derived.null_mean < 1.0
    assert {"buffer", "window", "release"} <= derived.words
    assert not any(w.startswith(("##", "[")) for w in derived.words)

    cache = _cache(tmp_path)
    saved = module.model_profile(embedder, cache)
    assert saved == derived
    (path,) = cache.glob("model-*.json")
    assert json.loads(path.read_text())["model"] == embedder.model_id

    # A later process reads the file instead of deriving it: a valid file with another mean is believed.
    data = json.loads(path.read_text())
    data["null_mean"] = 0.125
    path.write_text(json.dumps(data))
    monkeypatch.setattr(module, "_PROFILES", {})
    assert module.model_profile(embedder, cache).null_mean == 0.125
    # ...and the process keeps what it has: the file is read once.
    path.unlink()
    assert module.model_profile(embedder, cache).null_mean == 0.125


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: b"\x00\xffnot json",
        lambda d: json.dumps([1, 2]).encode(),
        lambda d: json.dumps({**d, "version": 0}).encode(),
        lambda d: json.dumps({**d, "model": "other@000000000000"}).encode(),
        lambda d: json.dumps({**d, "null_mean": float("nan")}).encode(),
        lambda d: json.dumps({**d, "null_spread": -1.0}).encode(),
        lambda d: json.dumps({**d, "null_spread": "0.1"}).encode(),
        lambda d: json.dumps({**d, "words": ["ok", 7]}).encode(),
        lambda d: json.dumps({**d, "words": "buffer"}).encode(),
    ],
)
def test_a_damaged_profile_is_derived_again_and_replaced(
    embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    from ee.index import embedder as module

    cache = _cache(tmp_path)
    good, path = _saved_profile(embedder, cache, monkeypatch)
    path.write_bytes(damage(json.loads(path.read_text())))
    assert module.model_profile(embedder, cache) == good
    assert json.loads(path.read_text())["null_spread"] == good.null_spread


def test_a_profile_folder_that_cannot_be_written_costs_only_time(
    embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ee.index import embedder as module

    monkeypatch.setattr(module, "_PROFILES", {})
    blocker = _cache(tmp_path)
    blocker.parent.mkdir()
    blocker.write_text("a file where the cache folder should be")
    assert module.model_profile(embedder, blocker) == module.derive_profile(embedder)
    assert blocker.read_text() == "a file where the cache folder should be"


def test_a_fifo_in_place_of_the_profile_never_blocks(
    embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from ee.index import embedder as module

    cache = _cache(tmp_path)
    good, path = _saved_profile(embedder, cache, monkeypatch)
    path.unlink()
    os.mkfifo(path)
    assert module.model_profile(embedder, cache) == good  # derived again; the FIFO is replaced
    assert path.is_file()


def test_a_killed_save_leaves_one_temporary_that_the_next_save_reuses(
    embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ee.index import embedder as module

    cache = _cache(tmp_path)
    good, path = _saved_profile(embedder, cache, monkeypatch)
    path.unlink()
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text('{"version": 1, "model": "half-writ')  # what a killed writer left
    assert module.model_profile(embedder, cache) == good
    assert sorted(p.name for p in cache.iterdir()) == [path.name]


def test_saving_a_profile_never_makes_a_moved_workspace_again(
    embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm server of a workspace that was just moved away may still answer a query: saving the
    profile must not create the old workspace's folders again (the server would never see it gone)."""
    from ee.index import embedder as module

    monkeypatch.setattr(module, "_PROFILES", {})
    gone = tmp_path / "moved-away"
    assert module.model_profile(embedder, gone / ".ee" / "cache") == module.derive_profile(embedder)
    assert not gone.exists()
