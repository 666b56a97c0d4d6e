"""When two memories say the same thing, or disagree: pure, deterministic text rules (no model, no I/O).

- :func:`normalise`: the text compared for exact duplicates (case, accents' width forms, punctuation and
  spacing ignored: ``Use uv, not pip.`` and ``use uv not pip`` are the same memory).
- :func:`content_tokens`: the words that carry a memory's meaning (stop words and negations dropped), which
  near-duplicates, contradictions and updates are judged on.
- :func:`classify`: what a pair of memories (their :class:`Features`) is to each other, with the reason a
  person reads; :func:`relate` adds the cosine of their index vectors (:data:`NEAR_BARS`).
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
    """The text as compared for exact duplicates: NFKC, single-spaced, without a final full stop. Case and
    punctuation stay: on Vim's help, folding them merged distinct memories (``iw`` / ``iW``, ``g*`` /
    ``g#``); texts that differ only there are near-duplicates, proposed for a merge, never dropped."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).rstrip(".")


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


def one_value_changed(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    """(old word, new word) when two texts (their :func:`words`) are the same words but one, at the same
    place, and that word carries a value (a digit): "the timeout is 30 minutes" / "… 45 minutes". Two
    statements about different subjects ("COMPOUNDBEGIN … first" / "COMPOUNDLAST … last") differ more."""
    if len(a) != len(b) or len(a) < 4:
        return None
    differ = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if len(differ) == 1 and any(c.isdigit() for c in differ[0][0] + differ[0][1]):
        return differ[0]
    return None


# A token that names something: a code character, a lower-then-upper case change, a letter beside a digit.
_CODE_RE = re.compile(r"[_(){}\[\]<>#*$^:/\\|=@~`]|[A-Za-z]\d|\d[A-Za-z]|[a-z][A-Z]")
_EDGE = "\"'.,;!?"


def code_words(text: str) -> frozenset[str]:
    """The identifiers a text names, case kept: ``max({expr})``, ``iW``, ``v:true``, ``TextChangedI``. Two
    memories about different identifiers are about different things, however alike their words."""
    found = (raw.strip(_EDGE) for raw in text.split() if _CODE_RE.search(raw))
    return frozenset(t for t in found if t and not t.replace(".", "").isdigit())


def opening(text: str) -> tuple[str, ...]:
    """The first :data:`HEAD_WORDS` words, case kept (``Features.head``): two texts that open otherwise are
    never near-duplicates, so a writer need only compare those that open alike."""
    return tuple(w.strip(_EDGE) for w in text.split()[:HEAD_WORDS])


@dataclass(frozen=True, slots=True)
class Features:
    """What the pair rules read of one memory's text, computed once per memory."""

    key: str  # normalise(text)
    tokens: frozenset[str]  # content_tokens(text)
    words: tuple[str, ...]
    code: frozenset[str]
    negated: bool
    switches: bool
    head: tuple[str, ...]  # the first words, case kept: what the text is about, as it names it

    @classmethod
    def of(cls, text: str) -> Features:
        said = tuple(words(text))
        plain = [w.replace("'", "") for w in said]
        return cls(
            normalise(text),
            frozenset(w for w in plain if w not in STOP_WORDS and w not in NEGATIONS),
            said,
            code_words(text),
            any(w in NEGATIONS for w in plain) or any(w in NEGATIONS for w in said),
            switches(text),
            opening(text),
        )


@dataclass(frozen=True, slots=True)
class Relation:
    type: str  # duplicate | merge | contradiction | update
    reason: str
    score: float


HEAD_WORDS = 3  # a merge needs the same first words: "e Forward to…" / "E Forward to…" are two commands
CONTRADICTION_BAR = 0.7  # word overlap (negations aside) for "use X" / "never use X"
MAX_DIFFERENT_WORDS = 3  # ... and at most this many meaningful words in one and not the other


def classify(old: Features, new: Features) -> Relation | None:
    """What ``new`` (the later memory) is to ``old``; None for unrelated memories.

    Deliberately strict (a false proposal costs a person's attention): texts naming different identifiers
    are unrelated; a contradiction needs the same words but a negation; a merge, almost all words."""
    if old.key == new.key:
        return Relation("duplicate", "the same text (spacing and a final full stop aside)", 1.0)
    if old.code != new.code:
        return None
    score = jaccard(old.tokens, new.tokens)
    if score < RELATED_BAR:
        return None
    shared = ", ".join(sorted(old.tokens & new.tokens)[:6])
    close = len(old.tokens ^ new.tokens) <= MAX_DIFFERENT_WORDS
    if old.negated != new.negated and score >= CONTRADICTION_BAR and close:
        return Relation(
            "contradiction", f"one says not, the other says so, about the same words ({shared})", score
        )
    if new.switches and not old.switches and close:
        return Relation("update", f"the newer one says it changed ({shared})", score)
    value = one_value_changed(old.words, new.words)
    if value is not None:
        return Relation("update", f"the same statement with another value ({value[0]} → {value[1]})", score)
    if score >= MERGE_BAR and old.negated == new.negated and old.head == new.head:
        return Relation("merge", f"{score:.0%} of their words are the same ({shared})", score)
    return None


@dataclass(frozen=True, slots=True)
class Bars:
    """Cosine bars of one embedding arm: at or above ``duplicate`` two memories are near-identical (a
    write is refused as a duplicate, a scan proposes forgetting one); at or above ``merge``, a merge."""

    duplicate: float
    merge: float


NEAR_BARS: dict[str, Bars] = {"static": Bars(duplicate=0.99, merge=0.97)}
"""The cosine bars of each embedding arm, measured with ``python -m bench.curate_bench --vim DIR`` (the
figures: docs/curate.md, "Measured").

**static** (ee's model2vec model, the index's document vectors): over the pairs a scan compares on Vim's
help (6,393 readable chunks; pairs sharing rare words, naming the same identifiers, with the same negation
and the same first three words), the closest pairs are templated but distinct texts: the Tar and Zip
plugin headers (0.988), then "For Vim version 9.0. Last change: <date> …" headers of two files (0.973
and below). At 0.97 six pairs (9 memories, 0.14 %) are flagged; at 0.96, 40 pairs (29 memories); at 0.95,
59, and distinct entries begin ("Highlight keywords defined by plain.mf" / "… modes.mf": 0.949). With the
word rules, the scan flags 23 memories (0.36 %) in 15 pairs, 5 of them by embedding; all 15 were read by
hand and are textual near-duplicates (headers of two help files that differ in a date or a word). On this
repository's 54 memories nothing is flagged (its closest pair: 0.79). Re-worded true duplicates score
0.76 to 0.99 ("reset every night" / "wiped nightly": 0.76; "30 minutes" / "thirty minutes", reordered:
0.99): this model cannot tell a rewording from a sibling text below ~0.99, so the bars sit above every
distinct Vim pair for ``duplicate`` (a write refused) and where what is flagged is textually
near-identical for ``merge`` (a proposal a person reads).

Without the first-words guard, the static model put ``e`` / ``E`` at 1.0, ``CTRL-D`` / ``CTRL-U`` at
0.989 and ``CTRL-W H`` / ``CTRL-W L`` at 0.982: it folds case and reads "up" and "down" alike.

**transformer** (MiniLM, once every memory has its vector): measured on the same pairs, and not used. It
tells meanings apart better ("use uv" / "use poetry": 0.53 against the static 0.71; ``CTRL-D`` /
``CTRL-U``: 0.93), but Vim's templated headers (two files' "Last change: <date>" lines) score 0.98 to
0.993, above every rewording tried (0.90 to 0.98): a merge bar of 0.98 flags 57 memories (0.89 %), and one
above the headers (0.995) would find no rewording at all. So :mod:`ee.curate.near` reads the static
vectors, which every index holds, whichever arm answers queries; an arm enters this table only with its
measurement."""


def near_relation(old: Features, new: Features, cosine: float, arm: str) -> Relation | None:
    """What the cosine of two memories' index vectors says, once the text rules found no contradiction or
    update: near-identical (``duplicate``), close enough to merge (``merge``), or nothing. The same guards
    as the text rules: a pair naming different identifiers, with a negation on one side only, or opening
    with other words (case kept: what a memory is about) is never a near-duplicate however close its
    vectors (the static model reads ``e`` and ``E``, "up" and "down" alike)."""
    bars = NEAR_BARS.get(arm)
    if bars is None or old.code != new.code or old.negated != new.negated or old.head != new.head:
        return None
    if one_value_changed(old.words, new.words) is not None:
        return None
    if cosine >= bars.duplicate:
        why = f"near-identical by embedding (cosine {cosine:.3f} ≥ {bars.duplicate}, {arm})"
        return Relation("duplicate", why, cosine)
    if cosine >= bars.merge:
        return Relation(
            "merge", f"nearly the same by embedding (cosine {cosine:.3f} ≥ {bars.merge}, {arm})", cosine
        )
    return None


def relate(old: Features, new: Features, cosine: float | None = None, arm: str = "static") -> Relation | None:
    """:func:`classify`, then the embedding bars when the pair's cosine is known: the same text is the exact
    rule; a contradiction or an update stands; otherwise the stronger of the word rule and the bars."""
    relation = classify(old, new)
    if cosine is None or (relation is not None and relation.type != "merge"):
        return relation
    near = near_relation(old, new, cosine, arm)
    if near is None or (relation is not None and near.type == "merge"):
        return relation
    return near
