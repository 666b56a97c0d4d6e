"""When two memories say the same thing, or disagree: pure, deterministic text rules (no model, no I/O).

- :func:`normalise`: the text compared for exact duplicates (case, accents' width forms, punctuation and
  spacing ignored: ``Use uv, not pip.`` and ``use uv not pip`` are the same memory).
- :func:`content_tokens`: the words that carry a memory's meaning (stop words and negations dropped), which
  near-duplicates, contradictions and updates are judged on.
- :func:`classify`: what a pair of memories (their :class:`Features`) is to each other, with the reason a
  person reads; :func:`relate` adds the cosine of their index vectors (:data:`NEAR_BARS`).
- :func:`value_conflict`, :func:`opposite_conflict`: contradictions without "not": the same subject with
  another value (:func:`quantities`) or an opposite word (:data:`ANTONYMS`); measured on the labelled pairs
  of tests/fixtures/curate-pairs/ (``python -m bench.curate_pairs``, docs/curate.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
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


# ------------------------------------------------------------------------------------ conflicts without "not"
# Two memories about the same subject can disagree without a negation: they state different values for the
# same thing ("at most 1000 lines" / "above 5 MB", "port 8000" / "port 5173"), or opposite words
# ("enabled" / "disabled"). What a text states is read once per memory (:class:`Quantity`, Features).

_NUMBER_RE = re.compile(
    r"(?<![\w./\\-])(?<!\d:)(\d+(?:,\d{3})*(?:\.\d+)*)(?![\d:])(k\b)?(?:\s*([A-Za-z]+))?", re.UNICODE
)
_TIME_RE = re.compile(r"(?<![\w:])([01]?\d|2[0-3]):([0-5]\d)(?![\w:])")
VERSIONED = frozenset(
    [
        "version",
        "python",
        "node",
        "nodejs",
        "postgresql",
        "postgres",
        "mysql",
        "redis",
        "java",
        "ruby",
        "rust",
        "ubuntu",
        "debian",
        "alpine",
    ]
)
"""Names a version number follows ("Python 3.11", "python:3.12-slim", "PostgreSQL 15")."""
_NUMBER_WORDS = dict(
    zip(
        ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"],
        range(1, 11),
        strict=True,
    )
)
# unit → (dimension, factor to the dimension's base: bytes, seconds)
_UNITS: dict[str, tuple[str, float]] = {
    **dict.fromkeys(("b", "byte", "bytes"), ("size", 1.0)),
    **dict.fromkeys(("kb", "kib"), ("size", 1e3)),
    **dict.fromkeys(("mb", "mib"), ("size", 1e6)),
    **dict.fromkeys(("gb", "gib"), ("size", 1e9)),
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), ("duration", 0.001)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), ("duration", 1.0)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), ("duration", 60.0)),
    **dict.fromkeys(("h", "hr", "hour", "hours"), ("duration", 3600.0)),
    **dict.fromkeys(("day", "days"), ("duration", 86400.0)),
}
LIMIT_WORDS = frozenset(
    [
        "most",
        "max",
        "maximum",
        "limit",
        "limited",
        "limits",
        "above",
        "over",
        "exceeding",
        "beyond",
        "capped",
        "cap",
        "larger",
        "up",
    ]
)
"""Words that make the value after them a limit ("at most 1000 lines", "bodies above 5 MB", "up to 10 MB")."""
ANTONYMS: tuple[tuple[str, str], ...] = (
    ("enabled enable enables", "disabled disable disables"),
    ("allow allows allowed", "deny denies denied"),
    ("sync synchronous synchronously", "async asynchronous asynchronously"),
    ("automatic automatically", "manual manually"),
    ("parallel", "serial serially sequentially"),
    ("earliest oldest", "latest newest"),
    ("before", "after"),
    ("always", "never"),
    ("json", "plain"),
)
"""Opposite words (each side in its forms): the same statement with one for the other says the opposite.
Short on purpose: each pair is a switch a memory states (docs/curate.md, "Contradictions without not")."""
_SIDE = {
    form: (k, side)
    for k, pair in enumerate(ANTONYMS)
    for side, forms in enumerate(pair)
    for form in forms.split()
}
SCOPE_WORDS = frozenset(
    [
        "production",
        "prod",
        "staging",
        "development",
        "dev",
        "local",
        "locally",
        "ci",
        "test",
        "tests",
        "cold",
        "warm",
        "live",
        "replay",
        "primary",
        "replica",
        "replicas",
        "admin",
        "public",
        "private",
        "client",
        "server",
        "read",
        "write",
        "connect",
        "idle",
    ]
)
"""Words that say where or when a statement holds: two values for production and staging, for a cold and a
warm start, do not disagree. A pair whose scope words differ is never a conflict of values or opposites."""
_NOT_SUBJECT = frozenset(_UNITS) | LIMIT_WORDS | frozenset(_SIDE) | frozenset(_NUMBER_WORDS)
_DIGIT_RE = re.compile(r"\d")
_NUMBER_WORD_RE = re.compile(r"\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
VALUE_SUBJECT_BAR = 0.75  # the share of the shorter text's subject words the other must hold
OPPOSITE_SUBJECT_BAR = 0.75  # ... for opposite words, whose texts say nearly the same otherwise
LONGER_SIDE_BAR = 0.4  # ... and the share of the longer text's subject words, for both


@dataclass(frozen=True, slots=True)
class Quantity:
    said: str  # as written: "1000 lines", "5 MB"
    dimension: str  # size, duration, or "count of <noun>", "version", "port", "number"
    value: float  # in the dimension's base (bytes, seconds)
    limit: bool  # stated as a limit ("at most", "above", "max")

    @property
    def number(self) -> str:
        """The number as written ("5.5", "1,000", "one"): two texts that write the same one agree on it."""
        return next(p for p in self.said.split() if p in _NUMBER_WORDS or any(c.isdigit() for c in p))


def quantities(text: str) -> tuple[Quantity, ...]:
    """The values a text states: a number with its unit, or the noun it counts; a version after a name that
    takes one (``Python 3.11``, ``python:3.12-slim``); a time of day (``02:00``); a limit when a limit word
    comes just before ("at most 1000 lines"). Number words (one … ten) count when a noun follows. A text
    that gives several values of one dimension (a changelog's "between version 5.0 and 5.1", "24 hours
    … 30 days") lists them rather than sets one: those are left out (bare numbers stay, as outcomes)."""
    out: list[Quantity] = []
    for match in _TIME_RE.finditer(text):
        out.append(
            Quantity(match.group(0), "time of day", float(match.group(1)) * 60 + float(match.group(2)), False)
        )
    for match in _NUMBER_RE.finditer(text):
        digits, thousands, unit = match.groups()
        before = [
            w.casefold()
            for w in re.findall(r"[A-Za-z]+", text[max(0, match.start() - 40) : match.start()])[-3:]
        ]
        limit = any(w in LIMIT_WORDS for w in before)
        if before and before[-1] in VERSIONED:
            out.append(Quantity(f"{before[-1]} {digits}", "version", _version(digits), limit))
            continue
        if digits.count(".") > 1:
            continue  # a version of something unnamed, or an address
        value = float(digits.replace(",", "")) * (1000 if thousands else 1)
        out.append(_quantity(digits + (thousands or ""), value, unit, before, limit))
    said = words(text) if _NUMBER_WORD_RE.search(text) else []
    for k, word in enumerate(said[:-1]):
        if word in _NUMBER_WORDS:
            noun = said[k + 1]
            if noun in STOP_WORDS or noun in _NUMBER_WORDS:
                continue
            limit = any(w in LIMIT_WORDS for w in said[max(0, k - 3) : k])
            out.append(_quantity(word, float(_NUMBER_WORDS[word]), noun, said[max(0, k - 3) : k], limit))
    values: dict[str, set[float]] = defaultdict(set)
    for q in out:
        values[q.dimension].add(q.value)
    return tuple(q for q in out if q.dimension == "number" or len(values[q.dimension]) == 1)


def _version(digits: str) -> float:
    major, _, minor = digits.replace(",", "").partition(".")  # ("python 1,000": a thousands separator)
    return float(major) * 1000 + float(minor.split(".")[0] or 0)


def _quantity(said: str, value: float, unit: str | None, before: list[str], limit: bool) -> Quantity:
    unit_key = (unit or "").casefold()
    if unit_key in _UNITS:
        dimension, factor = _UNITS[unit_key]
        return Quantity(f"{said} {unit}", dimension, value * factor, limit)
    if before and before[-1] == "port":
        return Quantity(f"port {said}", "port", value, limit)
    if unit_key and unit_key not in STOP_WORDS and unit_key.isalpha():
        noun = unit_key.removesuffix("s") if len(unit_key) > 3 else unit_key
        return Quantity(f"{said} {unit}", f"count of {noun}", value, limit)
    return Quantity(said, "number", value, limit)


def _subject(tokens: frozenset[str]) -> frozenset[str]:
    """The words of a text that name what it is about: its meaningful words but values, units, limit words
    and opposite words, a plural as its singular ("avatars" is "avatar")."""
    return frozenset(
        t[:-1] if t.endswith("s") and not t.endswith("ss") and len(t) > 3 else t
        for t in tokens - _NOT_SUBJECT
        if not _DIGIT_RE.search(t)
    )


def _same_subject(a: frozenset[str], b: frozenset[str], bar: float) -> bool:
    """Whether two texts' subject words are nearly the same: two at least shared, ``bar`` of the shorter
    side's and :data:`LONGER_SIDE_BAR` of the longer side's (a one-line rule is not "about" a long text that
    happens to hold its words)."""
    shared = len(a & b)
    return (
        shared >= 2
        and shared >= bar * min(len(a), len(b))
        and shared >= LONGER_SIDE_BAR * max(len(a), len(b))
    )


def value_conflict(old: Features, new: Features) -> str | None:
    """Why two texts state different values for the same thing, or None. Both in the same scope, negated
    alike, and either

    - about nearly the same subject (:data:`VALUE_SUBJECT_BAR` of the shorter's subject words, two at
      least) with a value of the same dimension and kind (a limit, or not) that differs ("port 8000 vs
      port 5173"), or
    - two limits, whatever their units, that end in the same outcome (a bare number both state, such as
      an HTTP status) about a subject word they share ("1000 lines vs 5 MB for the 413 limit").

    A value both state means they agree on it: the others are about something else."""
    if not old.quantities or not new.quantities or old.scope != new.scope or old.negated != new.negated:
        return None
    shared = old.subject & new.subject
    outcomes = _outcomes(old, new)
    both = {q.number for q in old.quantities} & {q.number for q in new.quantities}
    if not shared or both - {f"{o:.0f}" for o in outcomes}:
        return None
    about = ", ".join(sorted(shared)[:4])
    if _same_subject(old.subject, new.subject, VALUE_SUBJECT_BAR):
        # Each dimension but "number" holds one value in a text (quantities()): the first of the newer's of
        # the same dimension and kind is the one to compare with, looked up rather than searched for (two
        # memories of 256 kB stating 17,000 values each were 300 million comparisons).
        first: dict[tuple[str, bool], Quantity] = {}
        for b in new.quantities:
            first.setdefault((b.dimension, b.limit), b)
        for a in old.quantities:
            match = first.get((a.dimension, a.limit))
            if a.dimension != "number" and match is not None and a.value != match.value:
                return f"{a.said} vs {match.said} ({a.dimension}) about the same thing ({about})"
    old_limits = [q for q in old.quantities if q.limit]
    new_limits = [q for q in new.quantities if q.limit]
    for outcome in sorted(outcomes):
        limit = next((q for q in old_limits if q.value != outcome), None)
        other = next((q for q in new_limits if q.value != outcome), None)
        if limit is not None and other is not None and limit.value != other.value:
            return f"{limit.said} vs {other.said} for the {outcome:.0f} limit ({about})"
    return None


def _outcomes(old: Features, new: Features) -> set[float]:
    """The bare numbers of three digits both texts state (an HTTP status, an exit code): an outcome."""

    def bare(f: Features) -> set[float]:
        return {q.value for q in f.quantities if q.dimension == "number" and 100 <= q.value <= 999}

    return bare(old) & bare(new)


def opposite_conflict(old: Features, new: Features) -> str | None:
    """Why two texts say opposite things, or None: one holds a word of :data:`ANTONYMS` and the other its
    opposite (neither both), in the same scope, about nearly the same subject words
    (:data:`OPPOSITE_SUBJECT_BAR` of the shorter's, two at least)."""
    if old.scope != new.scope:
        return None
    shared = old.subject & new.subject
    if not _same_subject(old.subject, new.subject, OPPOSITE_SUBJECT_BAR):
        return None
    old_sides = {_SIDE[w] for w in old.words if w in _SIDE}
    new_sides = {_SIDE[w] for w in new.words if w in _SIDE}
    for pair, side in sorted(old_sides - new_sides):
        if (pair, 1 - side) in new_sides - old_sides and (pair, 1 - side) not in old_sides:
            said = next(w for w in old.words if _SIDE.get(w) == (pair, side))
            other = next(w for w in new.words if _SIDE.get(w) == (pair, 1 - side))
            return f"{said} vs {other} about the same thing ({', '.join(sorted(shared)[:4])})"
    return None


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
    quantities: tuple[Quantity, ...]  # the values it states (quantities(text))
    subject: frozenset[str]  # tokens but values, units and opposite words: what it is about
    scope: frozenset[str]  # where or when it holds (SCOPE_WORDS it names)
    states: bool  # it states a value or an opposite word: it may conflict with fewer words shared
    names: frozenset[str]  # the identifiers that name something rather than hold a value (no digit)

    @classmethod
    def of(cls, text: str) -> Features:
        said = tuple(words(text))
        plain = [w.replace("'", "") for w in said]
        tokens = frozenset(w for w in plain if w not in STOP_WORDS and w not in NEGATIONS)
        stated = quantities(text)
        code = code_words(text)
        return cls(
            normalise(text),
            tokens,
            said,
            code,
            any(w in NEGATIONS for w in plain) or any(w in NEGATIONS for w in said),
            switches(text),
            opening(text),
            stated,
            _subject(tokens),
            frozenset(said) & SCOPE_WORDS,
            bool(stated) or not _SIDE.keys().isdisjoint(said),
            frozenset(c for c in code if not _DIGIT_RE.search(c)),
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
    are unrelated (for a conflict, only identifiers without a digit count, ``python:3.11-slim`` holds a
    value, and one side may name none: a person's "batch_size 500" beside an agent's words); a
    contradiction needs the same words but a negation, or the same subject with another value or an
    opposite word (:func:`value_conflict`, :func:`opposite_conflict`); a merge, almost all words."""
    if old.key == new.key:
        return Relation("duplicate", "the same text (spacing and a final full stop aside)", 1.0)
    score = jaccard(old.tokens, new.tokens) if old.code == new.code else 0.0  # (the identifiers first: cheap)
    if score >= RELATED_BAR:
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
            return Relation(
                "update", f"the same statement with another value ({value[0]} → {value[1]})", score
            )
    same_names = old.names == new.names or not (old.names and new.names)
    if old.states and new.states and same_names:
        conflict = value_conflict(old, new) or opposite_conflict(old, new)
        if conflict is not None and new.switches and not old.switches:  # "we now run 2 workers"
            return Relation("update", f"the newer one says it changed: {conflict}", score)
        if conflict is not None:
            return Relation("contradiction", conflict, score or jaccard(old.tokens, new.tokens))
    if old.code != new.code:
        return None
    if score >= MERGE_BAR and old.negated == new.negated and old.head == new.head:
        shared = ", ".join(sorted(old.tokens & new.tokens)[:6])
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
