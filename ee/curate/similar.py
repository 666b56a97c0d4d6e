"""When two memories say the same thing, or disagree: pure, deterministic text rules (no model, no I/O).

- :func:`normalise`: the text compared for exact duplicates (case, accents' width forms, punctuation and
  spacing ignored: ``Use uv, not pip.`` and ``use uv not pip`` are the same memory).
- :func:`content_tokens`: the words that carry a memory's meaning (stop words and negations dropped), which
  near-duplicates, contradictions and updates are judged on.
- :func:`classify`: what a pair of memories is to each other, with the reason a person reads.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_WORD_RE = re.compile(r"[^\W_]+(?:[._/-][^\W_]+)*", re.UNICODE)
NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "dont",
        "don't",
        "doesnt",
        "doesn't",
        "avoid",
        "without",
        "cannot",
        "cant",
        "can't",
    }
)
# "we switched to B", "now use", "replaced A with B", "no longer": the newer memory says the older changed.
_SWITCH_RE = re.compile(
    r"\b(?:switched|moved|migrated|changed)\s+(?:from\s+\S+\s+)?to\b|\bnow\s+(?:use|uses|run|runs)\b"
    r"|\breplaced\b.*\bwith\b|\bno\s+longer\b|\binstead\s+of\b",
    re.IGNORECASE,
)
_STOP = "a an and are as at be by for from has have in is it its of on or that the this to was we were will"
STOP_WORDS = frozenset((_STOP + " with you your our us i should must always use uses using").split(" "))

MERGE_BAR = 0.85  # token Jaccard at or above: near-duplicates, proposed for a merge
RELATED_BAR = 0.5  # at or above: the same subject (a polarity flip is a contradiction, a switch an update)


def normalise(text: str) -> str:
    """The text as compared for exact duplicates: NFKC, case-folded, words only, single-spaced."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("'", "")
    return " ".join(_WORD_RE.findall(folded))


def words(text: str) -> list[str]:
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold().replace("’", "'"))


def content_tokens(text: str) -> frozenset[str]:
    """The meaning-carrying words: no stop words, no negations (so "use X" and "don't use X" compare equal
    here, and :func:`negated` tells them apart)."""
    return frozenset(
        w
        for w in (word.replace("'", "") for word in words(text))
        if w not in STOP_WORDS and w not in NEGATIONS
    )


def negated(text: str) -> bool:
    """Whether the text says something is not so ("don't", "never", "avoid", …)."""
    return any(word in NEGATIONS or word.replace("'", "") in NEGATIONS for word in words(text))


def switches(text: str) -> bool:
    return bool(_SWITCH_RE.search(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True, slots=True)
class Relation:
    type: str  # duplicate | merge | contradiction | update
    reason: str
    score: float


def classify(older: str, newer: str, a: frozenset[str], b: frozenset[str]) -> Relation | None:
    """What ``newer`` (the later memory) is to ``older``, given their :func:`content_tokens`; None for
    unrelated memories."""
    if normalise(older) == normalise(newer):
        return Relation("duplicate", "the same text (ignoring case, punctuation and spacing)", 1.0)
    score = jaccard(a, b)
    if score < RELATED_BAR:
        return None
    shared = ", ".join(sorted(a & b)[:6])
    if negated(older) != negated(newer):
        return Relation(
            "contradiction", f"one says not, the other says so, about the same words ({shared})", score
        )
    if switches(newer) and not switches(older):
        return Relation("update", f"the newer one says it changed ({shared})", score)
    changed = sorted(a ^ b)
    small = 1 <= len(a - b) <= 2 and len(a - b) == len(b - a) and len(a) >= 4
    if small and (score < MERGE_BAR or any(c.isdigit() for token in changed for c in token)):
        return Relation("update", f"the same statement with another value ({', '.join(changed[:4])})", score)
    if score >= MERGE_BAR:
        return Relation("merge", f"{score:.0%} of their words are the same ({shared})", score)
    return None
