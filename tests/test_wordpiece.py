"""The pure-Python query tokenizer (ee.index.wordpiece) gives exactly the ids of the real shipped tokenizer.

Compared with ``tokenizers.Tokenizer`` loaded from the shipped tokenizer.json on thousands of strings: the
repository's memories, fixtures and sources line by line and whole, every ASCII character and pair of
characters, code identifiers, paths, flags, URLs, punctuation runs, control characters, very long words,
empty and whitespace strings, random and hypothesis-generated text. Text the fast path declines (non-ASCII,
added tokens such as ``[UNK]``) must give None, and the embedder must then give the real tokenizer's vectors.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from ee.index import wordpiece
from ee.index.embedder import DEFAULT_MODEL_DIR, Embedder, load_embedder

pytestmark = pytest.mark.semantic

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_JSON = DEFAULT_MODEL_DIR / "tokenizer.json"


@pytest.fixture(scope="module")
def real() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(TOKENIZER_JSON))
    tokenizer.no_truncation()  # the file asks for 512; the fast path leaves truncation to the embedder
    return tokenizer


@pytest.fixture(scope="module")
def fast(real: Tokenizer) -> wordpiece.WordPiece:
    import json

    spec = wordpiece.fast_path_spec(json.loads(TOKENIZER_JSON.read_text(encoding="utf-8")))
    assert spec is not None, "the shipped tokenizer must get the fast path"
    return wordpiece.WordPiece.from_vocab(
        real.get_vocab(with_added_tokens=True),
        unk_token=spec["unk_token"],
        prefix=spec["prefix"],
        max_chars=spec["max_chars"],
        added=tuple(spec["added"]),
    )


def _repository_texts() -> list[str]:
    """Real text: memory bodies, fixtures and ee's own sources, whole and line by line."""
    texts: list[str] = []
    files = sorted((ROOT / "memories").rglob("*.md")) + sorted((ROOT / "tests" / "fixtures").rglob("*"))
    files += [*sorted((ROOT / "ee").rglob("*.py")), ROOT / "README.md"]
    for path in files:
        if not path.is_file() or path.stat().st_size > 2_000_000:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        texts.append(text[:20_000])
        texts.extend(line for line in text.splitlines()[:400])
    return texts


def _crafted_texts() -> list[str]:
    chars = [chr(c) for c in range(128)]
    texts = [
        "",
        " ",
        "\t\n\r ",
        "\x00",
        "\x7f",
        "\x0b\x0c\x1c\x1d\x1e\x1f",
        "a\x00b",
        "a\x01b c\x7fd",
        "A\tB\nC\rD",
    ]
    texts += chars
    texts += [a + b for a in chars for b in chars]  # every pair: 16 384 strings
    texts += [
        "ee/index/embedder.py",
        "/home/user/.cache/ee/model-digests.json",
        "--json --limit=10 -n 2 --no-verify",
        "https://github.com/huggingface/tokenizers/blob/main/README.md?x=1&y=2#anchor",
        "load_embedder(path: str | Path | None = None) -> Embedder:",
        "camelCaseIdentifier snake_case_identifier SCREAMING_CASE kebab-case-name",
        "x" * 100,
        "x" * 101,
        "a" * 99 + "##",
        "supercalifragilisticexpialidocious" * 3,
        "unaffable unbelievably tokenization preprocessing reimplementation",
        "!!!???...,,,;;;:::---___***&&&^^^%%%$$$###@@@~~~```|||\\\\\\///",
        "##ing ## # ##",
        "[PAD] [UNK] [pad] [unk] [CLS] [SEP] [MASK]",
        "a[UNK]b [PAD]x",
        "0x7fff 1e-5 3.14159 -42 +7 1,000,000 v1.2.3-rc.4",
        "word " * 3000,
        "ab" * 5000,
        "git commit -m 'fix: the thing' && git push origin HEAD:refs/heads/main",
    ]
    rng = random.Random(1234)
    alphabets = [
        string.printable,
        string.ascii_letters + string.digits + "_-./",
        "".join(chars),
        string.ascii_lowercase + " " * 5,
        string.punctuation + " ",
    ]
    for _ in range(3000):
        alphabet = rng.choice(alphabets)
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))))
    return texts


def _non_ascii_texts() -> list[str]:
    return [
        "café naïve ünïcödé Ångström",
        "日本語のテキスト 中文 한국어",
        "emoji 🎉🚀 and ZWJ 👩‍💻",
        "ΣΊΣΥΦΟΣ final sigma",
        "İstanbul ß ﬁ ligature",
        "\u00a0non-breaking\u2003em space\u200bzero width",
        "\ufffdreplacement",
        "e\u0301 combining",
    ]


def _compare(real: Tokenizer, fast: wordpiece.WordPiece, texts: list[str]) -> int:
    """Assert every covered text gets the real ids; return how many were covered."""
    encodings = real.encode_batch(texts, add_special_tokens=False)
    covered = 0
    for text, enc in zip(texts, encodings, strict=True):
        ids = fast.encode(text)
        if ids is None:
            assert not text.isascii() or "[PAD]" in text or "[UNK]" in text, repr(text)
            continue
        covered += 1
        assert ids == enc.ids, repr(text)
    return covered


def test_ids_match_the_real_tokenizer_on_repository_text(real: Tokenizer, fast: wordpiece.WordPiece) -> None:
    texts = _repository_texts()
    assert len(texts) > 3000
    covered = _compare(real, fast, texts)
    assert covered > 3000


def test_ids_match_the_real_tokenizer_on_crafted_text(real: Tokenizer, fast: wordpiece.WordPiece) -> None:
    texts = _crafted_texts()
    covered = _compare(real, fast, texts)
    assert covered > 19_000


def test_non_ascii_and_added_tokens_are_declined(fast: wordpiece.WordPiece) -> None:
    for text in [*_non_ascii_texts(), "a[UNK]b", "[PAD]"]:
        assert fast.encode(text) is None, text
    assert fast.encode("[pad] [unk]") is not None  # lowercase: ordinary punctuation and words


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ids_match_on_generated_ascii(real: Tokenizer, fast: wordpiece.WordPiece, text: str) -> None:
    ids = fast.encode(text)
    if ids is not None:
        assert ids == real.encode(text, add_special_tokens=False).ids


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_matched_or_declined(real: Tokenizer, fast: wordpiece.WordPiece, text: str) -> None:
    ids = fast.encode(text)
    if ids is None:
        assert not text.isascii() or "[PAD]" in text or "[UNK]" in text
    else:
        assert ids == real.encode(text, add_special_tokens=False).ids


def test_embedder_query_vectors_equal_the_real_tokenizer_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh loads (cache miss, then hit) give the same bits as batches the real tokenizer handles."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = load_embedder(DEFAULT_MODEL_DIR)  # miss: facts from the real tokenizer, cache written
    assert first._tokenizer is not None
    second = load_embedder(DEFAULT_MODEL_DIR)  # hit: no real tokenizer until one is needed
    assert second._tokenizer is None
    assert second._fast is not None
    assert list((tmp_path / "cache" / "ee" / "wordpiece").iterdir())
    texts = [
        "How do I undo my last git commit?",
        "ee search --json 'hybrid ranking' --limit 5",
        "word " * 3000,
        "",
        "[UNK] only",
        "café 日本語 🎉",
        *_repository_texts()[:40],
    ]
    big = _batch_with_real_tokenizer(second, texts)
    for i, text in enumerate(texts):
        one = second.encode([text])
        assert np.array_equal(one[0], big[i]), repr(text[:80])
        assert np.array_equal(first.encode([text])[0], big[i]), repr(text[:80])
    assert second._char_cap == first._cap()


def _batch_with_real_tokenizer(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """Encode ``texts`` in batches too large for the fast path (padding with a filler text)."""
    filler = ["filler"] * 20
    rows = embedder.encode([*texts, *filler])
    return rows[: len(texts)]
