"""Secret detection and redaction: catch credentials before a memory reaches disk or git (DESIGN.md §5).

:func:`find_secrets` runs a fixed list of rules, most specific first, and keeps non-overlapping findings (on
an overlap the earlier rule wins, so ``token=ghp_…`` is a ``github_token``, not a ``secret_assignment``).
:func:`redact` replaces each finding's secret part with ``[REDACTED:<cls>]``; for assignments and URL
passwords only the value goes, so ``password=[REDACTED:password_assignment]`` still says what was there.

Classes: ``private_key``, ``jwt``, ``anthropic_key``, ``openai_key``, ``github_token``, ``gitlab_token``,
``slack_webhook``, ``slack_token``, ``stripe_key``, ``google_api_key``, ``npm_token``, ``pypi_token``,
``sendgrid_key``, ``twilio_key``, ``huggingface_token``, ``aws_access_key``, ``aws_secret_key``,
``bearer_token``, ``url_password``, ``password_assignment``, ``secret_assignment``, ``high_entropy``.

Decisions where reasonable people differ:

* **Documented examples are not secrets.** AWS's published example credentials (``AKIAIOSFODNN7EXAMPLE``,
  ``wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY``) and any value containing ``EXAMPLE`` are skipped: they fill
  docs and tutorials, and a real key with that suffix is vanishingly unlikely.
* **Placeholders are not secrets**: ``<your-password>``, ``${TOKEN}``, ``$TOKEN``, ``{{ secrets.X }}``,
  ``xxxxxxxx``, ``********``, ``...``, words such as ``password``, ``secret``, ``changeme``, ``example``,
  ``your_token``, values that are code (``os.environ["X"]``, ``getpass()``, ``args.password``) or references
  (``env:X``, ``/run/secrets/db``, ``op://vault/item``). ``changeme`` is treated as a placeholder: it is the
  conventional "replace me" default, public knowledge, and a memory that says "the dev default is changeme"
  is useful rather than a leak.
* **Assignments need a plausible value**, without whitespace (passphrases with spaces are missed). Keys end
  in password/passwd/passphrase (``password_assignment``, value ≥ 4 characters) or token/secret/api_key/
  access_key/private_key/… (``secret_assignment``, ≥ 8). A quoted password may be one plain word
  (``password="correcthorse"``); anything else must mix two character classes (a bare value may instead be
  ≥ 16 long), so ``password: stored in vault``, ``token: expired`` and ``"refresh_token": "NextMarker"``
  stay prose. Names are not values: identifiers (``new_password``, ``TokenOpt``, ``FG_DEFAULT``), values
  that contain password/token/secret, and keys for public or pagination data (``publicKeyToken``,
  ``NextToken``, ``page_token``, ``ClientToken``).
* **Stripe test and publishable keys** (``sk_test_``, ``pk_…``) are not flagged: they grant no access to
  money and fill docs.
* **high_entropy** is a last net for unlabelled random tokens (24+ characters, entropy ≥ 3.7 bits/char,
  not identifier-like, not a hash, id, ULID, UUID, data URI or encoded text): see :mod:`ee.policy.entropy`.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from ee.policy.entropy import PLACEHOLDER_RE, b64decode, high_entropy_spans

_MAX_PASSES = 4

# Regexes are kept as source strings: ``re`` compiles and caches each on first use, so import stays cheap.


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One secret: ``text[start:end]`` is the part :func:`redact` replaces; ``line`` is 1-based."""

    cls: str
    start: int
    end: int
    line: int
    preview: str

    def to_dict(self) -> dict[str, object]:
        return {
            "cls": self.cls,
            "start": self.start,
            "end": self.end,
            "line": self.line,
            "preview": self.preview,
        }


Span = tuple[int, int]
Checker = Callable[[re.Match[str]], Span | None]


class _Rule:
    """``source`` compiles to the rule's pattern. It can only match a text holding one of ``needles``
    (``folded``: in the lower-cased text, for a case-insensitive pattern), so a text holding none skips
    the rule, and a process never pays for compiling it (~0.5 ms a rule; a remember scans one text)."""

    __slots__ = ("also", "check", "cls", "folded", "needles", "source")

    def __init__(
        self,
        cls: str,
        source: str,
        check: Checker,
        needles: tuple[str, ...],
        folded: bool = False,
        also: tuple[str, ...] = (),  # and one of these too (not letters: no folding)
    ) -> None:
        self.cls = cls
        self.source = source
        self.check = check
        self.needles = needles
        self.folded = folded
        self.also = also

    @property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.source)  # re's own cache: compiled once per process

    def may_match(self, text: str, lowered: str | None) -> bool:
        """False only when the pattern cannot match ``text``; ``lowered`` is ``text.lower()``, or None when
        the text holds a character that (?i) matches to an ASCII letter without lower-casing to it."""
        if self.also and not any(needle in text for needle in self.also):
            return False
        if not self.folded:
            return any(needle in text for needle in self.needles)
        return lowered is None or any(needle in lowered for needle in self.needles)


# What (?i) matches to an ASCII letter besides its two cases: İ ı ſ K (checked over all of Unicode in
# tests/test_policy_secrets.py). A text holding one is scanned by every case-insensitive rule.
_FOLD_EXTRAS = frozenset("\u0130\u0131\u017f\u212a")


# ---------------------------------------------------------------------------------------------- value tests

_PLACEHOLDER_WORD_RE = (
    r"(?i)pass(?:word|wd|phrase)?|pwd|secrets?|tokens?|key|api[_-]?key|none|null|nil|undefined|true|false"
    r"|string|str|bytes|int|required|optional|change_?me|default|empty|redacted|hidden|masked|test|foo|bar|baz"
    r"|values?|dummy|sample|placeholder|todo|tbd|n/?a"
)
_REFERENCE_RE = r"(?i)^(?:env|file|vault|op|ssm|keychain|secretsmanager|aws-sm|gcp-sm|pass):|://"
# code (calls, subscripts, dotted names), lower-case words and identifiers, CamelCase type names
_CODE_RE = (
    r"[()\[\]{}]|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$|^[a-z_][a-z_-]*$|^[A-Z][a-z]+$|^[A-Z][a-z]+(?:[A-Z][a-z]+)+$"
    r"|^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"
)
# publicKeyToken, public_key: published on purpose; NextToken, page_token, ChangeToken: pagination and locks
_HARMLESS_KEY_RE = (
    r"(?i)^public|(?:next|page|change|lock|continuation|pagination|input|output|sync|csrf|client|idempotency"
    r"|request|action)[_-]?token$"
)
_NAME_RE = r"[a-z]+(?:[-_.][a-z]+)+"  # "xet-auth", "fal-ai-api-key": a name, even when quoted
# dotted names, CamelCase and CONSTANT_CASE identifiers: names even inside quotes ("NextMarker")
_QUOTED_NAME_RE = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
_NAME_STEMS = ("password", "passwd", "token", "secret")


def _is_placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one (see the module doc for the list)."""
    stripped = value.strip()
    if not stripped or stripped[0] in "<$%{[" or "${" in stripped or "{{" in stripped:
        return True
    if re.fullmatch(_PLACEHOLDER_WORD_RE, stripped) or re.search(PLACEHOLDER_RE, stripped):
        return True
    return len(set(stripped.lower()) - set("x*.-_#0•·")) == 0 or len(set(stripped)) <= 2


def _looks_random(body: str, min_distinct: int = 8) -> bool:
    """A token body that is not a placeholder and varies enough to be a real credential."""
    return not _is_placeholder(body) and len(set(body)) >= min(min_distinct, max(3, len(body) // 3))


def _char_classes(value: str) -> int:
    return sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )


def _random_token(m: re.Match[str]) -> Span | None:
    return m.span() if _looks_random(m.group()) else None


def _random_group(group: int) -> Checker:
    def check(m: re.Match[str]) -> Span | None:
        return m.span(group) if _looks_random(m.group(group)) else None

    return check


# ---------------------------------------------------------------------------------------------- rule checks


def _check_private_key(m: re.Match[str]) -> Span | None:
    body = re.sub(r"-----(?:BEGIN|END)[^-]*-----|^[A-Za-z-]+:.*$", "", m.group(), flags=re.MULTILINE)
    body = re.sub(r"\\[nr]|\s", "", body)  # JSON-escaped newlines count as line breaks
    base64_chars = len(re.findall(r"[A-Za-z0-9+/=]", body))
    if base64_chars < 32 or base64_chars < 0.95 * len(body) or re.search(PLACEHOLDER_RE, body):
        return None  # a header quoted in prose or code that builds a key, not a key
    return m.span()


def _check_jwt(m: re.Match[str]) -> Span | None:
    header = b64decode(m.group(1))
    if header is None or b'"alg"' not in header.replace(b" ", b""):
        return None
    return m.span()


def _check_aws_access_key(m: re.Match[str]) -> Span | None:
    key = m.group()
    return None if "EXAMPLE" in key or len(set(key[4:])) < 6 else m.span()


def _check_aws_secret(m: re.Match[str]) -> Span | None:
    value = m.group(1)
    if "EXAMPLE" in value or re.fullmatch(r"[0-9a-fA-F]+", value) or _char_classes(value) < 3:
        return None
    return m.span(1)


def _check_url_password(m: re.Match[str]) -> Span | None:
    return m.span("pw") if _plausible_value(m.group("pw"), quoted=False, min_len=4) else None


def _check_assignment(m: re.Match[str]) -> Span | None:
    group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
    start, end = m.span(group)
    value = m.group(group)
    if group == "bare":
        trimmed = value.rstrip(".,:!?")
        end -= len(value) - len(trimmed)
        value = trimmed
    if re.search(_HARMLESS_KEY_RE, m.group("key")):
        return None
    is_password = _assignment_cls(m) == "password_assignment"
    if not _plausible_value(value, quoted=group != "bare", min_len=4 if is_password else 8):
        return None
    return start, end


def _plausible_value(value: str, *, quoted: bool, min_len: int) -> bool:
    if len(value) < min_len or any(c.isspace() for c in value) or _is_placeholder(value):
        return False
    if re.search(_REFERENCE_RE, value) or value.startswith(("/", "~", "./")):
        return False
    if any(stem in value.lower() for stem in _NAME_STEMS) or re.fullmatch(_NAME_RE, value):
        return False  # "refresh_token": "hf_oauth_refresh_token" names a secret, it is not one
    if re.fullmatch(_QUOTED_NAME_RE, value):
        return False
    if quoted and min_len < 8:  # a quoted password may be one plain word
        return True
    if not quoted and re.search(_CODE_RE, value):
        return False
    return _char_classes(value) >= 2 or (not quoted and len(value) >= 16)


def _assignment_cls(m: re.Match[str]) -> str:
    key = m.group("key").lower()
    return (
        "password_assignment" if key.endswith(("password", "passwd", "passphrase")) else "secret_assignment"
    )


# ---------------------------------------------------------------------------------------------- the rules

_B = r"(?<![A-Za-z0-9_-])"  # token start: not inside a longer word/token
_E = r"(?![A-Za-z0-9_-])"


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    """Most specific first. Each pattern is compiled when a text first holds one of its needles."""

    def rule(
        cls: str,
        pattern: str,
        needles: tuple[str, ...],
        check: Checker = _random_token,
        folded: bool = False,
        also: tuple[str, ...] = (),
    ) -> _Rule:
        return _Rule(cls, pattern, check, needles, folded, also)

    pem = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    return (
        rule(
            "private_key",
            pem + r"(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\r?\n(?:[A-Za-z-]+: [^\n]*|[A-Za-z0-9+/=]{8,}))+)",
            ("-----BEGIN ",),
            _check_private_key,
        ),
        rule(
            "jwt",
            _B + r"(eyJ[A-Za-z0-9_-]{5,})\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{16,}" + _E,
            ("eyJ",),
            _check_jwt,
        ),
        rule("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_-]{32,}" + _E, ("sk-ant-",)),
        rule(
            "openai_key",
            _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}" + _E,
            ("sk-",),
            _random_openai,
        ),
        rule(
            "github_token",
            _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,250})" + _E,
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        ),
        rule("gitlab_token", _B + r"glpat-[A-Za-z0-9_-]{20,}" + _E, ("glpat-",)),
        rule(
            "slack_webhook",
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(T[A-Z0-9]{6,}/[A-Za-z0-9/]{16,})",
            ("https://hooks.slack.com/",),
            _random_group(1),
        ),
        rule("slack_token", _B + r"xox[abposr]-(?:\d+-)+[A-Za-z0-9-]{8,}" + _E, ("xox",)),
        rule("stripe_key", _B + r"(?:sk|rk)_live_[A-Za-z0-9]{20,}" + _E, ("_live_",)),
        rule("google_api_key", _B + r"AIza[A-Za-z0-9_-]{35}" + _E, ("AIza",)),
        rule("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _E, ("npm_",)),
        rule("pypi_token", _B + r"pypi-Ag[A-Za-z0-9_-]{50,}" + _E, ("pypi-Ag",)),
        rule("sendgrid_key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _E, ("SG.",)),
        rule("twilio_key", _B + r"SK[0-9a-f]{32}" + _E, ("SK",)),
        rule("huggingface_token", _B + r"hf_[A-Za-z0-9]{34,40}" + _E, ("hf_",)),
        rule(
            "aws_access_key",
            r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Z0-9])",
            ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
            _check_aws_access_key,
        ),
        rule(
            "aws_secret_key",
            r"(?i:(?:aws|amazon)[^\n]{0,40}?secret|secret[_-]?access[_-]?key)[^\n]{0,40}?"
            r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
            ("secret",),
            _check_aws_secret,
            folded=True,
        ),
        rule(
            "twilio_key",
            r"(?i:twilio[^\n]{0,40}?token)[^\n]{0,20}?(?<![0-9a-fA-F])([0-9a-f]{32})(?![0-9a-zA-Z])",
            ("twilio",),
            _random_group(1),
            folded=True,
        ),
        rule(
            "bearer_token",
            r"(?i:\bbearer)[ \t]+([A-Za-z0-9._~+/-]{20,}=*)",
            ("bearer",),
            _random_bearer,
            folded=True,
        ),
        rule(
            "url_password",
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@'\"<>()]*:(?P<pw>[^\s/@'\"<>]+)@[A-Za-z0-9.\[\]_-]+",
            ("://",),
            _check_url_password,
            also=("@",),
        ),
        # every key the pattern accepts holds pass, secret, token or key, and an assignment holds : or =
        rule(
            "password_assignment",
            _ASSIGNMENT,
            ("pass", "secret", "token", "key"),
            _check_assignment,
            folded=True,
            also=(":", "="),
        ),
    )


_ASSIGNMENT = (
    r"(?i)(?<![A-Za-z0-9])(?P<key>[A-Za-z0-9_.-]*?(?:pass(?:word|wd|phrase)|secret(?:[_-]?key)?|token"
    r"|api[_-]?key|access[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|auth[_-]?key))"
    r"[\"'`*_]{0,3}[ \t]*(?::=|=>|=(?!=)|:(?![:/]))[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<bare>(?:[^\s\"'`,;<>&]|&(?![\w.-]+=)){1,256}))"
)


def _random_openai(m: re.Match[str]) -> Span | None:
    body = m.group()[3:]
    if not (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
        return None
    return m.span() if _looks_random(body, 10) else None


def _random_bearer(m: re.Match[str]) -> Span | None:
    value = m.group(1)
    return m.span(1) if _char_classes(value) >= 3 and _looks_random(value, 10) else None


# ---------------------------------------------------------------------------------------------- public API


def find_secrets(text: str) -> list[SecretFinding]:
    """Every secret in ``text``, sorted by start, non-overlapping (see the module doc for the rules).

    Redacting a secret can expose a neighbour glued to it (``AKIA…xoxp-…``: the Slack token only starts a
    token once the AWS key before it is gone), so the scan repeats on the redacted text until nothing new
    turns up. Hence ``redact(text, find_secrets(text))`` is always clean.
    """
    spans = _scan(text)
    for _ in range(_MAX_PASSES):
        if not spans:
            break
        masked, placeholders = _mask(text, spans)
        extra = [span for span in (_unmask(found, placeholders) for found in _scan(masked)) if span]
        if not extra:
            break
        spans = sorted(spans + extra)
    newlines = [m.start() for m in re.finditer("\n", text)]
    return [
        SecretFinding(cls, start, end, bisect.bisect_left(newlines, start) + 1, _preview(text[start:end]))
        for start, end, cls in spans
    ]


_Found = tuple[int, int, str]  # (start, end, cls)


def _scan(text: str) -> list[_Found]:
    candidates: list[tuple[int, int, int, str]] = []  # (priority, start, end, cls)
    rules = _rules()
    lowered = None if _FOLD_EXTRAS.intersection(text) else text.lower()
    for priority, rule in enumerate(rules):
        if not rule.may_match(text, lowered):
            continue
        for m in rule.pattern.finditer(text):
            span = rule.check(m)
            if span is not None and span[1] > span[0]:
                cls = _assignment_cls(m) if rule.cls == "password_assignment" else rule.cls
                candidates.append((priority, span[0], span[1], cls))
    for start, end in high_entropy_spans(text):
        candidates.append((len(rules), start, end, "high_entropy"))
    return _non_overlapping(candidates)


def _mask(text: str, spans: list[_Found]) -> tuple[str, list[tuple[int, int, int]]]:
    """Redact ``spans``; also return each placeholder as (masked start, masked end, original end)."""
    parts: list[str] = []
    placeholders: list[tuple[int, int, int]] = []
    position = 0
    length = 0
    for start, end, cls in spans:
        parts.append(text[position:start])
        length += start - position
        label = f"[REDACTED:{cls}]"
        parts.append(label)
        placeholders.append((length, length + len(label), end))
        length += len(label)
        position = end
    parts.append(text[position:])
    return "".join(parts), placeholders


def _unmask(found: _Found, placeholders: list[tuple[int, int, int]]) -> _Found | None:
    """Map a span of the masked text back to the original, or None if it touches a placeholder."""
    start, end, cls = found
    shift = 0
    for masked_start, masked_end, original_end in placeholders:
        if masked_start >= end:
            break
        if masked_end > start:
            return None
        shift = original_end - masked_end
    return start + shift, end + shift, cls


def redact(text: str, findings: list[SecretFinding] | None = None) -> str:
    """Replace each finding's secret part with ``[REDACTED:<cls>]``.

    Without ``findings`` the text is scanned (and re-scanned until clean, at most a few passes), so the result
    has no findings and ``redact(redact(x)) == redact(x)``. Given ``findings`` (from :func:`find_secrets` on
    this same text), exactly those are replaced; overlapping ones after the first are ignored.
    """
    if findings is not None:
        return _apply(text, findings)
    for _ in range(_MAX_PASSES):
        found = find_secrets(text)
        if not found:
            break
        text = _apply(text, found)
    return text


def _apply(text: str, findings: list[SecretFinding]) -> str:
    parts: list[str] = []
    position = 0
    for finding in sorted(findings, key=lambda f: (f.start, f.end)):
        if finding.start < position:
            continue
        parts.append(text[position : finding.start])
        parts.append(f"[REDACTED:{finding.cls}]")
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def _non_overlapping(candidates: list[tuple[int, int, int, str]]) -> list[tuple[int, int, str]]:
    """Greedy by (priority, start): a candidate is kept when it overlaps nothing kept so far."""
    starts: list[int] = []
    kept: list[tuple[int, int, str]] = []
    for _priority, start, end, cls in sorted(candidates):
        index = bisect.bisect_left(starts, start)
        if index > 0 and kept[index - 1][1] > start:
            continue
        if index < len(kept) and kept[index][0] < end:
            continue
        starts.insert(index, start)
        kept.insert(index, (start, end, cls))
    return kept


def _preview(secret: str) -> str:
    """At most the first 4 characters (fewer for short secrets: a quarter of the length), then ``…``."""
    return secret[: min(4, len(secret) // 4)] + "…"
