"""A pure-Python BERT-uncased WordPiece tokenizer for ASCII text: query ids without building ``tokenizers``.

Constructing ``tokenizers.Tokenizer`` from the shipped tokenizer.json costs a fresh ``ee search`` ~29 ms, more
than everything else the embedder does for one query. For ASCII text the BERT pipeline is small enough to
replicate exactly, so :func:`load_vocab` reads the vocabulary from a marshal file cached per user (keyed by
the sha256 of tokenizer.json), stored as a few thousand newline-joined buckets rather than a 30k-entry dict
(unmarshalling the dict cost ~8 ms, the buckets ~1 ms), and :meth:`WordPiece.encode` gives the ids
``Tokenizer.encode(text, add_special_tokens=False)`` gives. Anything outside that class returns ``None`` and
the caller uses the real tokenizer: non-ASCII text (Unicode tables, NFD and case mapping would have to match
the Rust crates' versions exactly) and text containing an added token such as ``[UNK]`` (matched on the raw
text before normalisation).
tests/test_wordpiece.py compares the two on thousands of strings.

The replicated pipeline, restricted to ASCII (huggingface/tokenizers ``BertNormalizer``,
``BertPreTokenizer``, ``WordPiece``):

* normaliser: NUL and control characters other than tab, newline and carriage return are deleted, those three
  become spaces; lowercase (CJK padding, NFD and accent stripping do nothing to ASCII);
* pre-tokeniser: split on whitespace, each ASCII punctuation character a word of its own;
* WordPiece: a word longer than ``max_input_chars_per_word`` characters, or one that cannot be covered by
  greedy longest-match-first pieces (continuations prefixed ``##``), becomes one unknown token.

Only tokenizer.json files of exactly that shape get a fast path (:func:`fast_path_spec`); others keep using
``tokenizers`` for everything.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import marshal
import os
import re
from array import array
from pathlib import Path
from typing import Any

__all__ = ["WordPiece", "fast_path_spec", "load_vocab", "save_vocab"]

_FORMAT = 2  # bump when the cached record or the replicated pipeline changes
# ASCII control characters BertNormalizer deletes (Unicode category Cc, less tab / newline / carriage return).
_DELETE = dict.fromkeys((*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F))
# After deletion and lowercasing the only whitespace left is " \t\n\r"; punctuation is string.punctuation.
_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 \t\n\r]")


class WordPiece:
    """BERT-uncased WordPiece over ASCII text; :meth:`encode` returns ``None`` for text it does not cover.

    The vocabulary is held as buckets keyed by a token's first characters (see :func:`_bucket_key`): each
    bucket is ``"\n" + "\n".join(tokens) + "\n"`` and the offset of its first token's id in ``ids``
    (int32), so a lookup is one small ``str.find`` and a newline count.
    """

    __slots__ = ("_added", "_buckets", "_ids", "_max_chars", "_prefix", "_unk_id")

    def __init__(
        self,
        buckets: dict[str, tuple[str, int]],
        ids: bytes,
        *,
        unk_id: int,
        prefix: str,
        max_chars: int,
        added: tuple[str, ...],
    ) -> None:
        self._buckets = buckets
        self._ids = array("i")
        self._ids.frombytes(ids)
        self._unk_id = unk_id
        self._prefix = prefix
        self._max_chars = max_chars
        self._added = added

    @classmethod
    def from_vocab(
        cls, vocab: dict[str, int], *, unk_token: str, prefix: str, max_chars: int, added: tuple[str, ...]
    ) -> WordPiece:
        """Build from a token -> id mapping (tokens must not contain a newline)."""
        buckets, ids = _buckets(vocab, prefix)
        return cls(buckets, ids, unk_id=vocab[unk_token], prefix=prefix, max_chars=max_chars, added=added)

    def _get(self, piece: str) -> int | None:
        """The id of ``piece``, or None when it is not in the vocabulary."""
        bucket = self._buckets.get(_bucket_key(piece, self._prefix))
        if bucket is None:
            return None
        blob, first = bucket
        at = blob.find(f"\n{piece}\n")
        if at < 0:
            return None
        return self._ids[first + blob.count("\n", 0, at)]

    def encode(self, text: str) -> list[int] | None:
        """The ids of ``text`` (no special tokens, no truncation); None for non-ASCII text or added tokens."""
        if not text.isascii() or any(token in text for token in self._added):
            return None
        ids: list[int] = []
        for word in _WORDS.findall(text.translate(_DELETE).lower()):
            self._word(word, ids)
        return ids

    def _word(self, word: str, ids: list[int]) -> None:
        """Append the pieces of one pre-tokenised word (greedy longest match first), or one unknown token."""
        if len(word) > self._max_chars:
            ids.append(self._unk_id)
            return
        get = self._get
        found = get(word)
        if found is not None:  # the common case: the whole word is in the vocabulary
            ids.append(found)
            return
        pieces: list[int] = []
        start, size = 0, len(word)
        while start < size:
            end = size
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                ids.append(self._unk_id)
                return
            pieces.append(found)
            start = end
        ids.extend(pieces)


def _bucket_key(token: str, prefix: str) -> str:
    """Two characters past the continuation prefix: buckets of at most a few kB for a BERT vocabulary."""
    return token[: len(prefix) + 2] if prefix and token.startswith(prefix) else token[:2]


def _buckets(vocab: dict[str, int], prefix: str) -> tuple[dict[str, tuple[str, int]], bytes]:
    grouped: dict[str, list[tuple[str, int]]] = {}
    for token, token_id in vocab.items():
        grouped.setdefault(_bucket_key(token, prefix), []).append((token, token_id))
    ids = array("i")
    buckets: dict[str, tuple[str, int]] = {}
    for key, members in grouped.items():
        buckets[key] = ("\n" + "\n".join(token for token, _ in members) + "\n", len(ids))
        ids.extend(token_id for _, token_id in members)
    return buckets, ids.tobytes()


def fast_path_spec(document: Any) -> dict[str, Any] | None:
    """From a parsed tokenizer.json: what :class:`WordPiece` needs, or None when it is not a BERT-uncased one.

    Every setting that changes ids for ASCII text is checked, so a tokenizer of another shape (cased,
    byte-level BPE, a different pre-tokeniser, added tokens matched after normalisation...) never gets here.
    """
    if not isinstance(document, dict):
        return None
    normalizer, pre, model = document.get("normalizer"), document.get("pre_tokenizer"), document.get("model")
    if not (
        isinstance(normalizer, dict)
        and normalizer.get("type") == "BertNormalizer"
        and normalizer.get("clean_text") is True
        and normalizer.get("lowercase") is True
        and isinstance(pre, dict)
        and pre.get("type") == "BertPreTokenizer"
        and document.get("post_processor") is None
        and isinstance(model, dict)
        and model.get("type") == "WordPiece"
        and isinstance(model.get("unk_token"), str)
        and isinstance(model.get("continuing_subword_prefix"), str)
        and type(model.get("max_input_chars_per_word")) is int
    ):
        return None
    added: list[str] = []
    for token in document.get("added_tokens") or []:
        if not isinstance(token, dict) or not isinstance(token.get("content"), str) or not token["content"]:
            return None
        if any(token.get(flag) is not False for flag in ("normalized", "lstrip", "rstrip", "single_word")):
            return None
        added.append(token["content"])
    return {
        "unk_token": model["unk_token"],
        "prefix": model["continuing_subword_prefix"],
        "max_chars": model["max_input_chars_per_word"],
        "added": added,
    }


def _cache_file(tokenizer_bytes: bytes) -> Path:
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(tokenizer_bytes).hexdigest()
    return Path(cache_home) / "ee" / "wordpiece" / f"{digest}.v{_FORMAT}.marshal"


def load_vocab(tokenizer_bytes: bytes) -> tuple[WordPiece | None, dict[str, Any]] | None:
    """The cached record for these tokenizer.json bytes: (fast tokenizer or None, facts), or None on a miss.

    The facts (``vocab_size``, ``unk_id``, ``median_token_chars``) are what the embedder would otherwise ask
    the real tokenizer for. A tokenizer without a fast path is cached too (as None), so it is not re-examined
    on every load. Unreadable or malformed cache files are misses.
    """
    try:
        # The user's own cache, trusted as Python trusts __pycache__; the record's shape is checked below.
        record = marshal.loads(_cache_file(tokenizer_bytes).read_bytes())  # noqa: S302
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(record, tuple) and len(record) == 3 and record[0] == _FORMAT):
        return None
    _, spec, facts = record
    if not isinstance(facts, dict) or not all(type(facts.get(k)) is int for k in ("vocab_size", "median")):
        return None
    if not (facts.get("unk_id") is None or type(facts.get("unk_id")) is int):
        return None
    if spec is None:
        return None, facts
    if not isinstance(spec, dict) or not isinstance(spec.get("buckets"), dict):
        return None
    try:
        fast = _from_spec(spec)
    except (KeyError, TypeError, ValueError):
        return None
    return fast, facts


def _from_spec(spec: dict[str, Any]) -> WordPiece:
    return WordPiece(
        spec["buckets"],
        spec["ids"],
        unk_id=spec["unk_id"],
        prefix=spec["prefix"],
        max_chars=spec["max_chars"],
        added=tuple(spec["added"]),
    )


def save_vocab(tokenizer_bytes: bytes, vocab: dict[str, int], facts: dict[str, Any]) -> WordPiece | None:
    """Cache the record for these bytes (best effort) and return the fast tokenizer, if the file allows one.

    ``vocab`` must come from the real tokenizer loaded from the same bytes (with added tokens), so the two
    cannot disagree on an id.
    """
    try:
        spec = fast_path_spec(json.loads(tokenizer_bytes))
    except ValueError:
        spec = None
    fast: WordPiece | None = None
    if (
        spec is not None
        and spec["unk_token"] in vocab
        and facts.get("unk_id") == vocab[spec["unk_token"]]
        and not any("\n" in token for token in vocab)
        and all(-(2**31) <= token_id < 2**31 for token_id in vocab.values())
    ):
        spec["buckets"], spec["ids"] = _buckets(vocab, spec["prefix"])
        spec["unk_id"] = vocab[spec["unk_token"]]
        fast = _from_spec(spec)
    else:
        spec = None
    with contextlib.suppress(ValueError):
        write_cache_file(_cache_file(tokenizer_bytes), marshal.dumps((_FORMAT, spec, facts)))
    return fast


def write_cache_file(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` atomically, best effort: a cache that cannot be written is only
    slower next time (a temporary in the same folder, renamed into place; removed if that fails)."""
    import tempfile  # (here: with the shutil and random it imports, ~4.5 ms of every embedding query)

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
