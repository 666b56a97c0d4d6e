"""One tokenizer for memories and queries: code-aware, English-stemmed, deterministic.

``tokenize(text)`` is applied to BOTH documents and queries, so a query term meets a document term only if
both went through exactly these steps.

* **Words.** A raw word is a run of word characters (Unicode ``\\w``) joined by the separators of code:
  ``/ \\ :`` (paths, URLs, ``std::vector``), ``.`` (``dotted.names``, ``build.yml``, ``9.0``), ``-``
  (``kebab-case``, ``CTRL-W``) and ``_`` (``snake_case``), plus up to two leading dashes that do not join it
  to a previous word (``--no-verify``, ``-rf``). An apostrophe between word characters stays inside the word
  (``vim's``, ``don't``) and is left to the stemmer. Anything else (blanks, quotes, brackets, commas, a
  sentence's final dot) separates.
* **Whole and parts.** A compound raw word emits its whole form (lower-cased, not stemmed, leading dashes kept
  so the flag ``-rf`` is not the word ``rf``), then every intermediate compound (``src/ci/build.yml`` →
  ``build.yml``; ``x86_64`` → ``x86``), then its leaf parts, split at separators and at case and digit
  boundaries (``HTTPServer`` → ``http``, ``server``; ``utf8`` → ``utf``, ``8``). Separators are split
  top-down (``/ \\ :``, then ``.``, ``-``, ``_``, then case/digits), so an identifier is findable whole, by a
  sub-path, or by any word in it; each token is emitted once per raw word. Whole forms are exact-match keys:
  rare, so BM25's idf rewards a query that names the identifier exactly, while the parts let a prose query
  reach it.
* **Case.** ``str.casefold`` after NFKC normalisation (done only for non-ASCII text, so ASCII stays fast):
  full-width letters, ligatures, ``ß`` and typographic apostrophes match their plain spellings.
* **Stopwords.** Lucene's 33-word English set (:data:`STOPWORDS`), dropped as standalone words and leaf parts,
  never from a whole identifier (``--no-verify`` keeps ``--no-verify`` and ``verify``).
* **Stemming.** Snowball English (PyStemmer), imported on first use, ``functools.lru_cache`` on word → stem.
  Whole identifiers are not stemmed.
* **Numbers** are kept at any length (``2021``, ``3``; ``9.0`` → ``9.0``, ``9``, ``0``).
* **Single ASCII letters** are dropped as words and parts (``x``, the ``i`` of ``i_CTRL-D``): in code and
  commands they are loop variables and abbreviations far more often than search terms. A flag keeps its whole
  form (``-v``), and single non-ASCII characters (a CJK word) are kept.

Measured on the dev set (Vim help in BEIR layout, 6 398 docs, 1 035 prose queries; BM25 with the defaults of
:mod:`ee.index.lexical`, k1 1.5, b 1.0; recall@10 / MRR@10; ``scripts/tune_retrieval.py`` and its ablations):

==================================================================  =============
tokenizer                                                           R@10 / MRR@10
==================================================================  =============
bm25s's splitter (``\\w\\w+``), Lucene stopwords, no stemming            0.649 / 0.436
the same + Snowball stemming                                        0.666 / 0.445
**this module**                                                     0.666 / 0.445
this module without whole / intermediate compounds                  0.664 / 0.445
this module keeping single letters                                  0.659 / 0.439
this module with NLTK's 179 stopwords                               0.642 / 0.418
this module with no stopwords                                       0.671 / 0.448
==================================================================  =============

The dev queries are prose, so the code-aware compounds cost nothing there and serve identifier, path and flag
queries (tests/test_tokenize.py). Long stopword lists hurt: technical text uses "only", "other", "same",
"each", "up", "down", "after" as content words. No stopwords at all is within noise of Lucene's short list,
which is kept because it drops the longest posting lists (smaller index, faster queries).

Speed (dev corpus, 9.1 MB, 1.3 M tokens, one core, best of 5): ~0.95 M tokens/s from cold caches
(6 MB/s), ~1.6 M tokens/s once the per-word caches are warm (splitting, stopwords and stemming are cached per
raw word, so a corpus costs one regex pass plus dictionary look-ups).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from itertools import chain
from typing import Any

__all__ = ["LEAD_WORDS", "STOPWORDS", "lead", "tokenize", "tokenize_many"]

# Lucene's (and Elasticsearch's) default English stop set. Larger lists lost recall on the dev set: technical
# text uses "only", "other", "same", "each", "up", "down", "all" as content words, and BM25's idf already
# discounts the common ones.
STOPWORDS: frozenset[str] = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)

# A raw word: optional leading dashes (a flag: a dash after a word character was already taken as a separator
# by the leftmost match), then word runs joined by code separators; an apostrophe between word characters
# stays inside a run.
_WORD_RE = re.compile(r"-{0,2}\w+(?:'\w+)*(?:[./\\:\-]+\w+(?:'\w+)*)*")
# Separator levels, split top-down: paths/namespaces, dots, dashes, underscores.
_LEVELS = (re.compile(r"[/\\:]+"), re.compile(r"\.+"), re.compile(r"-+"), re.compile(r"_+"))
_SEPARATORS = frozenset("/\\:.-_")

_STEM_CACHE = 1 << 17
_WORD_CACHE = 1 << 18


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: imported on first use so `import ee.index.tokenize` stays cheap

    return Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=_STEM_CACHE)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def _case_split(segment: str) -> list[str]:
    """Split at lower→Upper, UPPER→Upper+lower (``HTTPServer``) and letter↔digit boundaries."""
    parts: list[str] = []
    start = 0
    n = len(segment)
    for i in range(1, n):
        prev, cur = segment[i - 1], segment[i]
        if (
            (prev.islower() and cur.isupper())
            or (prev.isupper() and cur.isupper() and i + 1 < n and segment[i + 1].islower())
            or (prev.isdigit() != cur.isdigit())
        ):
            parts.append(segment[start:i])
            start = i
    parts.append(segment[start:])
    return parts


def _leaf(word: str) -> str | None:
    low = word.casefold()
    if not low or low in STOPWORDS or (len(low) == 1 and "a" <= low <= "z"):
        return None
    return _stem(low)


def _split(text: str, level: int, out: dict[str, None], top: bool) -> None:
    """Emit ``text`` (if it is an intermediate compound) and its parts, splitting at ``level`` and below."""
    while level < len(_LEVELS):
        pieces = [p for p in _LEVELS[level].split(text) if p]
        if len(pieces) > 1:
            if not top:
                out[text.casefold()] = None
            for piece in pieces:
                _split(piece, level + 1, out, False)
            return
        if len(pieces) == 1:
            text = pieces[0]
        level += 1
    parts = _case_split(text)
    if len(parts) > 1 and not top:
        out[text.casefold()] = None
    for part in parts:
        leaf = _leaf(part)
        if leaf is not None:
            out[leaf] = None


@functools.lru_cache(maxsize=_WORD_CACHE)
def _word_tokens(raw: str) -> tuple[str, ...]:
    body = raw.lstrip("-")
    if body and not (_SEPARATORS.intersection(body) or len(_case_split(body)) > 1):
        # A plain word (the common case): stopword filter and stem; leading dashes make it a flag.
        if len(body) == len(raw):
            leaf = _leaf(body)
            return () if leaf is None else (leaf,)
        stem = _leaf(body)
        return (raw.casefold(),) if stem is None else (raw.casefold(), stem)
    out: dict[str, None] = {raw.casefold(): None}
    _split(body, 0, out, True)
    return tuple(out)


def tokenize(text: str) -> list[str]:
    """Tokens of ``text`` in order of appearance (see the module docstring for every rule)."""
    if not text:
        return []
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).replace("\u2019", "'")
    return list(chain.from_iterable(map(_word_tokens, _WORD_RE.findall(text))))


def tokenize_many(texts: Iterable[str]) -> list[list[str]]:
    """``[tokenize(t) for t in texts]``."""
    return [tokenize(t) for t in texts]


# A memory says what it is about in its opening (a title, the first sentence). Both arms weight it: the
# embedding adds the lead's vector to the whole text's (ee.index.embedder.Embedder.encode_documents), BM25
# counts the lead's terms again (ee.index.derive.index_tokens).
LEAD_WORDS = 24


def lead(text: str, words: int = LEAD_WORDS) -> str:
    """The first ``words`` whitespace-separated words of ``text``, joined by single spaces."""
    return " ".join(text.split()[:words])
