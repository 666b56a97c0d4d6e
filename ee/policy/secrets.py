"""Secret detection and redaction: catch credentials before a memory reaches disk or git (DESIGN.md §5).

:func:`find_secrets` runs a fixed list of rules, most specific first, and keeps non-overlapping findings (on
an overlap the earlier rule wins, so ``token=ghp_…`` is a ``github_token``, not a ``secret_assignment``).
:func:`redact` replaces each finding's secret part with ``[REDACTED:<cls>]``; for assignments and URL
passwords only the value goes, so ``password=[REDACTED:password_assignment]`` still says what was there.

Classes: ``private_key``, ``jwt``, ``anthropic_key``, ``openai_key``, ``github_token``, ``gitlab_token``,
``slack_webhook``, ``slack_token``, ``stripe_key``, ``google_api_key``, ``npm_token``, ``pypi_token``,
``sendgrid_key``, ``twilio_key``, ``huggingface_token``, the vendor prefixes of :data:`_PREFIXED_TOKENS`
(DigitalOcean, Shopify, Atlassian, Databricks, Doppler, Vault, Terraform, Postman, Linear, Grafana, New
Relic, Sentry, age, Telegram, Square, Supabase, Pulumi, Replicate, Groq, xAI, Mailgun, Google OAuth, Discord,
Heroku, Figma), ``azure_key`` (``AccountKey=``, ``SharedAccessKey=``), ``azure_sas_token``,
``azure_client_secret``, ``gcp_service_account``, ``aws_access_key``, ``aws_secret_key``, ``bearer_token``,
``url_password``, ``basic_auth``, ``password_assignment``, ``secret_assignment``, ``password_in_prose``
("the root password is …", "password for the db is …"), ``password_flag`` (``--password …``, ``mysql -p…``,
``sshpass -p``, ``curl -u user:pw``, .netrc lines), ``high_entropy``.

The second half of the module applies the rules to a memory's fields: :func:`guard` (every write path, every
field), :func:`mask_memory` (every output), :func:`file_secrets` (a file about to enter git: the pre-commit
hook, ``ee sync``, the merge driver).

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
  in password/passwd/passphrase/pass/pwd/pw (``password_assignment``, value ≥ 6 characters) or token/secret/
  api_key/access_key/private_key/… (``secret_assignment``, ≥ 8). A value must mix two character classes (a
  bare value may instead be ≥ 16 long), so ``password: stored in vault``, ``token: expired`` and
  ``"refresh_token": "NextMarker"`` stay prose; prose and flags follow the same test.
* **Documentation's passwords are not secrets**: one plain word, even spelt with digits inside
  (``password="swordfish"``, ``0penstack``, ``superS3cret``), a leet spelling of a stock example
  (``s3cr3t``, ``P@ssw0rd``), stock credentials in a URL (``scott:tiger@``, ``user:…@``), and password hashes
  (``pbkdf2_sha256$…``, ``$2y$…``, ``{SHA}…``, ``SCRAM-SHA-256$…``). Digits or signs at the end
  (``hunter2x!``, ``Summer2024``) make a password of a word. Refusing one word under a password key
  (``passwd=dragon``, ``password: letmein``) was tried on 2026-12-05: it refused 21 more of the 37,451 pages
  of ``python -m bench.secrets_fp`` (28 in all, 1 in 1,338, against the bar of 1 in 5,000): ``password:
  0penstack``, ``password='mypassword'``, ``New password: parolam``, documentation's examples all.
* **Disguises are seen through**: each text is also scanned NFKC-normalised with invisible characters
  removed (``ｇｈｐ_…``, ``g\u200dhp_…``), with token runs a line break splits joined up (vendor tokens and
  PEM headers only: a join must not invent context), and with base64/hex blobs that decode to text decoded.
  A finding in a copy masks the characters of the original it came from.
* **Names are not values**: identifiers (``new_password``, ``TokenOpt``, ``FG_DEFAULT``), values that
  contain password/token/secret, and keys for public or pagination data (``publicKeyToken``,
  ``NextToken``, ``page_token``, ``ClientToken``).
* **Stripe test and publishable keys** (``sk_test_``, ``pk_…``) are not flagged: they grant no access to
  money and fill docs.
* **high_entropy** is a last net for random tokens (24+ characters, entropy ≥ 3.7 bits/char, not
  identifier-like, not a hash, id, ULID, UUID, data URI or encoded text) **with a credential word before
  them on their line** (key, token, secret, auth, session, salt, …): context over raw entropy, so message
  ids, document ids, signatures and base64 in code examples pass. See :mod:`ee.policy.entropy`.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ee.model import Memory
from ee.policy.entropy import CRYPT_RE, PLACEHOLDER_RE, b64decode, high_entropy_spans

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
    the rule, and a process never pays for compiling it (~0.5 ms a rule; a remember scans one text).
    ``spaceless``: no needle holds white space, so none can span two of the text's white-space-separated
    chunks, and the text's distinct chunks, joined, hold one exactly when the text does."""

    __slots__ = ("also", "check", "cls", "folded", "needles", "source", "spaceless")

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
        self.spaceless = not any(char.isspace() for needle in (*needles, *also) for char in needle)

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


# The passwords documentation shows ("s3cr3t", "P@ssw0rd", "tiger", "guest"): read with digits and signs as
# the letters they stand for, a conventional example or a public default, not anyone's secret.
_LEET = str.maketrans("013457@$!", "oieastasi")
_EXAMPLE_PASSWORDS = frozenset(
    {
        *("secret", "sekrit", "sekret", "password", "passwd", "pass", "passw", "admin", "administrator"),
        *("root", "guest", "test", "tester", "changeme", "letmein", "qwerty", "welcome", "default", "demo"),
        *("opensesame", "swordfish", "hunter", "unset", "disabled", "blank"),
        *("foobar", "foo", "bar", "baz", "spam", "eggs", "tiger", "scott", "pwd", "hello", "world"),
        *("random", "generated", "rotated", "prompt", "prompted", "unknown", "missing", "invalid", "same"),
        *("encrypted", "hashed", "provided", "supplied", "configured", "mandatory", "ignored", "hidden"),
    }
)


_EXAMPLE_USERS = frozenset(
    {
        *("scott", "user", "username", "dbuser", "myuser", "someuser", "testuser", "foo", "alice", "bob"),
        *("joe", "john", "jane", "jdoe", "me", "login", "usr"),
    }
)


def _unquote(value: str) -> str:
    from urllib.parse import unquote  # (here: only a URL with a password in it needs it)

    return unquote(value)


def _is_placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one (see the module doc for the list)."""
    stripped = value.strip()
    if not stripped or stripped[0] in "<$%{[" or "${" in stripped or "{{" in stripped:
        return True
    if re.fullmatch(_PLACEHOLDER_WORD_RE, stripped) or re.search(PLACEHOLDER_RE, stripped):
        return True
    if stripped.lower().translate(_LEET) in _EXAMPLE_PASSWORDS:
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
    if m.group("user").lower() in _EXAMPLE_USERS:
        return None  # "scott:tiger^5HHH@…", "user:S3cret@…": documentation's stock credentials
    return m.span("pw") if _plausible_value(_unquote(m.group("pw")), quoted=False, min_len=4) else None


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
    if not _plausible_value(value, quoted=group != "bare", min_len=6 if is_password else 8):
        return None
    return start, end


def _plausible_value(value: str, *, quoted: bool, min_len: int) -> bool:
    if len(value) < min_len or any(c.isspace() for c in value) or _is_placeholder(value):
        return False
    if re.search(_REFERENCE_RE, value) or value.startswith(("/", "~", "./")):
        return False
    if re.match(CRYPT_RE, value):
        return False  # a password hash ("pbkdf2_sha256$…", "$2y$…"), what a system stores instead
    letters = re.sub(r"[^a-z]", "", value.lower())
    if any(stem in letters for stem in _NAME_STEMS) or re.fullmatch(_NAME_RE, value):
        return False  # "refresh_token": "hf_oauth_refresh_token" names a secret, it is not one
    if re.fullmatch(_QUOTED_NAME_RE, value) or _plain_word(value):
        return False
    if quoted and min_len < 8:  # a quoted password may be one word, but not a plain one
        return True
    if not quoted and re.search(_CODE_RE, value):
        return False
    return _char_classes(value) >= 2 or (not quoted and len(value) >= 16)


def _plain_word(value: str) -> bool:
    """One word of letters, perhaps spelt with digits and signs inside ("0penstack", "priv4te",
    "superS3cret"): what documentation writes for a password. Digits or signs at the end ("hunter2x!",
    "mango77"), or random capitals ("SpUTQkzYxQoh"), make a password of it."""
    if sum(c.isupper() for c in value) > 1 and not value.isupper():
        return False
    lowered = value.lower()
    return lowered.isalpha() or (lowered[-1:].isalpha() and lowered.translate(_LEET).isalpha())


def _assignment_cls(m: re.Match[str]) -> str:
    key = m.group("key").lower()
    passwords = ("password", "passwd", "passphrase", "pass", "pwd", "pw")
    return "password_assignment" if key.endswith(passwords) else "secret_assignment"


# ---------------------------------------------------------------------------------------------- the rules

# Tokens a vendor marks with a prefix: (class, pattern after the token start, needles).
_PREFIXED_TOKENS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("slack_token", r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{32,}", ("xapp-",)),
    (
        "gitlab_token",
        r"(?:gldt|glrt|glptt|glcbt|glsoat|gloas|glimt|glffct|glagent)-[A-Za-z0-9_-]{20,}",
        ("gl",),
    ),
    ("gitlab_token", r"GR1348941[A-Za-z0-9_-]{20,}", ("GR1348941",)),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shp",)),
    ("atlassian_token", r"ATATT3[A-Za-z0-9_=-]{150,}", ("ATATT3",)),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?", ("dapi",)),
    ("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)(?:\.[a-z0-9_-]{2,35})?\.[A-Za-z0-9]{40,44}", ("dp.",)),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}", ("hvs.", "hvb.", "hvr.")),
    ("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}", (".atlasv1.",)),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", ("PMAK-",)),
    ("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}", ("lin_",)),
    (
        "grafana_token",
        r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})",
        ("glsa_", "glc_"),
    ),
    ("newrelic_key", r"NRAK-[A-Z0-9]{27}", ("NRAK-",)),
    ("sentry_token", r"(?:sntrys_eyJ[A-Za-z0-9+/=_-]{60,}|sntryu_[a-f0-9]{64})", ("sntry",)),
    ("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", ("AGE-SECRET-KEY-",)),
    ("telegram_bot_token", r"\d{8,10}:AA[A-Za-z0-9_-]{33}", (":AA",)),
    ("square_token", r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}", ("sq0",)),
    ("stripe_key", r"whsec_[A-Za-z0-9]{32,}", ("whsec_",)),
    ("supabase_token", r"sbp_[a-f0-9]{40}", ("sbp_",)),
    ("pulumi_token", r"pul-[a-f0-9]{40}", ("pul-",)),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}", ("r8_",)),
    ("groq_key", r"gsk_[A-Za-z0-9]{52}", ("gsk_",)),
    ("xai_key", r"xai-[A-Za-z0-9]{80}", ("xai-",)),
    ("mailgun_key", r"key-[0-9a-f]{32}", ("key-",)),
    (
        "google_oauth",
        r"(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{30,}|1//0[A-Za-z0-9_-]{40,})",
        ("GOCSPX-", "ya29.", "1//0"),
    ),
    (
        "discord_webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{60,}",
        ("discord",),
    ),
    ("heroku_key", r"HRKU-[A-Za-z0-9_-]{60,}", ("HRKU-",)),
    ("figma_token", r"figd_[A-Za-z0-9_-]{40,}", ("figd_",)),
    ("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}", ("dckr_",)),
    ("mapbox_token", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", ("sk.eyJ",)),
    ("fly_token", r"fo1_[A-Za-z0-9_-]{30,}", ("fo1_",)),
)

_B = r"(?<![A-Za-z0-9_-])"  # token start: not inside a longer word/token
_E = r"(?![A-Za-z0-9_-])"
# The start of a token whose prefix alone says what it is (ghp_, glpat-, sk-ant-): only a letter or digit
# before it makes it part of a longer word; one glued on with "-" or "_" ("s-ghp_…", a session id, a
# branch or file name built from it) is still the token.
_P = r"(?<![A-Za-z0-9])"


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

    # a header may be broken across lines ("-----BEGIN RSA PRIVATE\nKEY-----"): still a header
    words = r"(?:[A-Z0-9]+\s+)*PRIVATE\s+KEY(?:\s+BLOCK)?-----"
    return (
        rule(
            "private_key",
            r"-----BEGIN\s+" + words + r"(?:[\s\S]*?-----END\s+" + words + ""
            r"|(?:\r?\n(?:[A-Za-z-]+: [^\n]*|[A-Za-z0-9+/=]{8,}))+)",
            ("-----BEGIN",),
            _check_private_key,
        ),
        rule(
            "jwt",
            _B + r"(eyJ[A-Za-z0-9_-]{5,})\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{16,}" + _E,
            ("eyJ",),
            _check_jwt,
        ),
        rule("anthropic_key", _P + r"sk-ant-[A-Za-z0-9_-]{32,}" + _E, ("sk-ant-",)),
        rule(
            "openai_key",
            _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}" + _E,
            ("sk-",),
            _random_openai,
        ),
        rule(
            "github_token",
            _P + r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{60,250})" + _E,
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        ),
        rule("gitlab_token", _P + r"glpat-[A-Za-z0-9_-]{20,}" + _E, ("glpat-",)),
        rule(  # with or without its scheme and host: the path alone is the secret
            "slack_webhook",
            r"(?:(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/|(?<![A-Za-z0-9])services/)"
            r"(T[A-Z0-9]{6,}/[AB][A-Z0-9]{6,}/[A-Za-z0-9]{16,})",
            ("hooks.slack.com/", "services/T"),
            _random_group(1),
        ),
        rule(
            "teams_webhook",
            r"(?i:(?:https?://)?[a-z0-9.-]*(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)"
            r"/[0-9a-f-]{36}@[0-9a-f-]{36}/IncomingWebhook/([0-9a-f]{32})/[0-9a-f-]{36})",
            ("webhook.office.com", "outlook.office"),
            _random_group(1),
            folded=True,
        ),
        rule(  # a Discord bot token, named or not: base64 of the bot's id, a time, an HMAC
            "discord_bot_token",
            r"(?<![A-Za-z0-9_.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_.-])",
            (".",),
            _check_discord,
        ),
        rule("slack_token", _B + r"xox[abposr]-(?:\d+-)+[A-Za-z0-9-]{8,}" + _E, ("xox",)),
        rule("stripe_key", _B + r"(?:sk|rk)_live_[A-Za-z0-9]{20,}" + _E, ("_live_",)),
        rule("google_api_key", _B + r"AIza[A-Za-z0-9_-]{35}" + _E, ("AIza",)),
        rule("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _E, ("npm_",)),
        rule("pypi_token", _B + r"pypi-Ag[A-Za-z0-9_-]{50,}" + _E, ("pypi-Ag",)),
        rule("sendgrid_key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _E, ("SG.",)),
        rule("twilio_key", _B + r"SK[0-9a-f]{32}" + _E, ("SK",)),
        rule("huggingface_token", _B + r"hf_[A-Za-z0-9]{34,40}" + _E, ("hf_",)),
        *(rule(cls, _B + pattern + _E, needles) for cls, pattern, needles in _PREFIXED_TOKENS),
        rule(
            "azure_key",
            r"(?i:AccountKey|SharedAccessKey|SharedSecret)[ \t]*=[ \t]*[\"']?"
            r"([A-Za-z0-9+/]{30,}={0,2})(?![A-Za-z0-9+/=])",
            ("accountkey", "sharedaccesskey", "sharedsecret"),
            _random_group(1),
            folded=True,
        ),
        rule(
            "azure_sas_token",
            r"(?i:[?&;\s\"']sig=)([A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})",
            ("sig=",),
            _check_sas,
            folded=True,
        ),
        rule(
            "azure_client_secret",
            r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
            ("Q~",),
        ),
        rule(
            "gcp_service_account",
            r"\"private_key_id\"\s*:\s*\"([0-9a-f]{40})\"",
            ('"private_key_id"',),
            _random_group(1),
        ),
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
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://(?P<user>[^\s:/@'\"<>()]*):(?P<pw>[^\s/@'\"<>]+)@[A-Za-z0-9.\[\]_-]+",
            ("://",),
            _check_url_password,
            also=("@",),
        ),
        rule(
            "basic_auth",
            r"(?i:\bbasic)[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
            ("basic",),
            _check_basic_auth,
            folded=True,
        ),
        # every key the pattern accepts holds pass, pw, secret, token or key, and an assignment : or =
        rule(
            "password_assignment",
            _ASSIGNMENT,
            ("pass", "pw", "secret", "token", "key"),
            _check_assignment,
            folded=True,
            also=(":", "="),
        ),
        rule("password_in_prose", _PROSE_RE, ("pass", "pw"), _check_prose_password, folded=True),
        rule(
            "secret_in_prose",
            _VALUE_PROSE_RE,
            (
                "signing",
                "hmac",
                "secret",
                "private",
                "encryption",
                "webhook",
                "api",
                "access",
                "auth",
                "session",
            ),
            _check_secret_prose,
            folded=True,
        ),
        rule("password_flag", _USER_FLAG_RE, ("-u",), _check_user_flag, also=(":",)),
        rule(
            "password_flag",
            _FLAG_RE,
            ("pass", "pw", "-p", "token", "secret", "key"),
            _check_flag,
            folded=True,
        ),
    )


_ASSIGNMENT = (
    r"(?i)(?<![A-Za-z0-9])(?P<key>[A-Za-z0-9_.-]*?(?:pass(?:word|wd|phrase)|(?<![A-Za-z])pass(?![A-Za-z])|pwd|(?<![A-Za-z])pw|secret(?:[_-]?key)?|token"
    r"|api[_-]?key|access[_-]?key|private[_-]?key|signing[_-]?key|encryption[_-]?key|auth[_-]?key))"
    r"[\"'`*_]{0,3}[ \t]*(?::=|=>|=(?!=)|:(?![:/]))[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|(?P<bare>(?:[^\s\"'`,;<>&]|&(?![\w.-]+=)){1,256}))"
)


# Prose: "the root password is hunter2x!", "password for the db is 'N7q!xR2#vL'", "pwd was Summer2024"
_PROSE_RE = (
    r"(?i)\b(?:pass(?:word|wd|phrase)s?|pass[ -]phrase|pwd|pw)"
    r"(?:[ \t]+(?:for|of|to|on)[ \t]+(?:the[ \t]+|our[ \t]+|my[ \t]+|this[ \t]+)?[\w.@:/-]{1,40}"
    r"(?:[ \t]+(?:account|user|database|db|server|box|instance|host|cluster|vm|machine|router|wifi"
    r"|network))?)?"
    r"[ \t]*(?:\b(?:(?:is|was|has[ \t]+been)[ \t]+)?(?:changed|set|reset|updated)[ \t]+to|\bis(?:[ \t]+now)?"
    r"|\bwas|\bare|\bbecomes?|->|=>|(?<=[\w.@/-])(?=[ \t]*:[ \t]))[ \t]*[:=]?[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,64})\"|'(?P<sq>[^'\n]{1,64})'|`(?P<bq>[^`\n]{1,64})`|(?P<bare>[^\s\"'`<>]{1,64}))"
)
# Prose naming a secret value: "the signing value is <40 characters of base64>", "HMAC key: <hex>"
_VALUE_PROSE_RE = (
    r"(?i)\b(?:signing|hmac|secret|private|encryption|webhook|api|access|auth(?:entication)?|session)"
    r"[ \t]+(?:value|key|secret|token|salt|string|code)s?"
    r"[ \t]*(?:\b(?:is|was|are|=|:)|[:=])[ \t]*(?:now[ \t]+)?[:=]?[ \t]*[\"'`]?"
    r"([A-Za-z0-9+/_-]{32,}={0,2})(?![A-Za-z0-9+/_=-])"
)
# Command lines: "--password hunter2x!", "--token=…", "mysql -u root -pS3cret!", "sshpass -p 'x'"; .netrc
# lines ("machine host login me password S3cret") and their prose ("user deploy and password S3cret")
_FLAG_RE = (
    r"(?im)(?:(?<![\w-])--(?:[a-z]+-)?(?:password|passwd|pass|pwd|token|secret|api-key|access-key)[ \t=]"
    r"|\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?[ \t]-p(?=[^\s])|\bsshpass[ \t]+-p[ \t]*"
    r"|\b(?:login|user(?:name)?)[ \t]+\S+[ \t]+(?:and[ \t]+)?(?:password|passwd|pwd|pw)[ \t]+"
    r"|^[ \t]*password[ \t]+(?=\S+[ \t]*$))[ \t]*"
    r"(?:\"(?P<dq>[^\"\n]{1,128})\"|'(?P<sq>[^'\n]{1,128})'|(?P<bare>[^\s\"'`<>]{1,128}))"
)


# "curl -u admin:hunter2 https://…", "--user deploy:S3cret": a user and password given on a command line
_USER_FLAG_RE = (
    r"(?:\bcurl\b[^\n]*?[ \t](?:-u|--user)|(?<![\w-])--user)[ \t=]+[\"']?"
    r"(?P<user>[^\s:\"'/@]+):(?P<pw>[^\s\"']+)"
)


def _check_user_flag(m: re.Match[str]) -> Span | None:
    password = m.group("pw")
    if m.group("user").lower() in _EXAMPLE_USERS or len(password) < 4 or _is_placeholder(password):
        return None
    return None if re.search(_REFERENCE_RE, password) else m.span("pw")


def _quoted_value(m: re.Match[str]) -> tuple[str, int, int, bool]:
    """The value of a prose or flag match: (text, start, end, quoted), a bare one without the sentence's
    closing punctuation."""
    group = next(g for g in ("dq", "sq", "bq", "bare") if g in m.re.groupindex and m.group(g) is not None)
    start, end = m.span(group)
    value = m.group(group)
    if group == "bare":
        trimmed = value.rstrip(".,;:)]}")
        end -= len(value) - len(trimmed)
        value = trimmed
    return value, start, end, group != "bare"


def _check_prose_password(m: re.Match[str]) -> Span | None:
    value, start, end, quoted = _quoted_value(m)
    if not any(c.isalpha() for c in value) or re.search(r"-[a-z]{2,}ed$", value):
        return None  # "is 8-64 characters", "is sha256-hashed": a description, not a password
    return (start, end) if _plausible_value(value, quoted=quoted, min_len=6) else None


def _check_flag(m: re.Match[str]) -> Span | None:
    value, start, end, quoted = _quoted_value(m)
    password = re.search(r"(?i)pass|pwd|-p", m.group()[: start - m.start()]) is not None
    return (start, end) if _plausible_value(value, quoted=quoted, min_len=6 if password else 8) else None


def _check_sas(m: re.Match[str]) -> Span | None:
    """An Azure shared access signature: ``sig=`` in a URL or connection string that also says ``sv=``."""
    line_start = m.string.rfind("\n", 0, m.start()) + 1
    line_end = m.string.find("\n", m.end())
    line = m.string[line_start : line_end if line_end >= 0 else len(m.string)]
    if not re.search(r"(?i)[?&;=\s\"']sv=\d{4}-\d\d-\d\d", line):
        return None
    return m.span(1) if _looks_random(m.group(1)) else None


def _check_basic_auth(m: re.Match[str]) -> Span | None:
    """``Authorization: Basic <base64 of user:password>``, when the password is a plausible one."""
    raw = b64decode(m.group(1))
    if raw is None:
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    user, sep, password = decoded.partition(":")
    if not sep or not decoded.isprintable() or user.lower() in _EXAMPLE_USERS:
        return None
    return m.span(1) if _plausible_value(password, quoted=False, min_len=6) else None


def _check_discord(m: re.Match[str]) -> Span | None:
    token = m.group()
    return m.span() if _char_classes(token.replace(".", "")) >= 3 and _looks_random(token) else None


def _check_secret_prose(m: re.Match[str]) -> Span | None:
    value = m.group(1)
    if _char_classes(value) < 3 or not _looks_random(value, 12) or re.fullmatch(_NAME_RE, value.lower()):
        return None  # a name ("api_key_for_the_service_account_x") or a hash of one case is not a secret here
    return m.span(1)


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

    A secret in disguise is found too (:func:`_disguised`): spelt with fullwidth or other compatibility
    characters, cut by invisible characters, split across lines, or base64/hex encoded. Its span is mapped
    back to ``text``, so redaction covers every character of it, the disguise included.
    """
    spans = _merge(_scan_passes(text), _disguised(text))
    newlines = [m.start() for m in re.finditer("\n", text)]
    return [
        SecretFinding(cls, start, end, bisect.bisect_left(newlines, start) + 1, _preview(text[start:end]))
        for start, end, cls in spans
    ]


def _scan_passes(text: str) -> list[_Found]:
    """:func:`_scan`, repeated on the redacted text until nothing new turns up."""
    spans = _scan(text)
    for _ in range(_MAX_PASSES):
        if not spans:
            break
        masked, placeholders = _mask(text, spans)
        extra = [span for span in (_unmask(found, placeholders) for found in _scan(masked)) if span]
        if not extra:
            break
        spans = sorted(spans + extra)
    return spans


_Found = tuple[int, int, str]  # (start, end, cls)


def _scan(text: str) -> list[_Found]:
    candidates: list[tuple[int, int, int, str]] = []  # (priority, start, end, cls)
    rules = _rules()
    lowered = None if any(char in text for char in _FOLD_EXTRAS) else text.lower()  # (4 searches in C)
    # the needles of most rules are looked for in the distinct chunks only: a far shorter text where a
    # transcript repeats itself (lower() maps white space to itself and nothing else to it)
    chunks = "\n".join(set(text.split()))
    distinct = (chunks, None if lowered is None else chunks.lower())
    for priority, rule in enumerate(rules):
        if not rule.may_match(*(distinct if rule.spaceless else (text, lowered))):
            continue
        pattern, position = rule.pattern, 0
        while (m := pattern.search(text, position)) is not None:
            span = rule.check(m)
            if span is not None and span[1] > span[0]:
                cls = _assignment_cls(m) if rule.cls == "password_assignment" else rule.cls
                candidates.append((priority, span[0], span[1], cls))
                position = max(m.end(), m.start() + 1)
            else:  # a rejected match must not hide one inside it ("token: SENTRY_AUTH_TOKEN=<hex>")
                position = m.start() + 1
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


# ---------------------------------------------------------------------------------------------- disguises
#
# A reader (or an agent) sees through a disguise a regex does not: "ｇｈｐ_…" is ghp_… to anyone, a token cut
# by a zero-width joiner or a line break is one paste away from working, base64 is one decode away. Each
# disguise is undone in a copy of the text that remembers, for every character, where it came from.

# Characters that show nothing: zero-width spaces and joiners, direction marks, soft hyphen, word joiner,
# invisible operators, variation selectors, the BOM, tag characters (Unicode category Cf and kin).
_INVISIBLE_RE = (
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]"
)
# Runs of token characters that a line break (and the indentation around it) splits: "ghp_iK2Z…\ngFb5…"
# (the look-behind starts a run only at its first character: without it the search retried at every one;
# possessive runs give back nothing, as no break can follow a shorter run: one before a space fails at once)
_SPLIT_RE = r"(?<![A-Za-z0-9_+/=.~-])[A-Za-z0-9_+/=.~-]++(?:[ \t]*+\r?\n[ \t]*+[A-Za-z0-9_+/=.~-]++)+"
_BREAK_RE = r"[ \t]*\r?\n[ \t]*"
# Rules that read context around a value: a line join would give them text nobody wrote.
_CONTEXTUAL = frozenset(
    {
        *("high_entropy", "password_assignment", "secret_assignment", "password_in_prose", "password_flag"),
        *("url_password", "basic_auth", "aws_secret_key", "azure_key", "azure_sas_token", "twilio_key"),
        *("gcp_service_account", "bearer_token", "slack_webhook"),
    }
)
# base64 (standard or URL-safe) and hex blobs long enough to hold a credential
_ENCODED_RE = (
    r"(?<![A-Za-z0-9+/=_-])(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9_-]{16,}={0,2})(?![A-Za-z0-9+/=_-])"
)
_HEX_RE = r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}){16,}(?![0-9A-Za-z])"


class _View:
    """A copy of a text with a disguise undone; ``origin[i]`` is where character ``i`` came from."""

    __slots__ = ("origin", "text")

    def __init__(self, text: str, origin: Sequence[int]) -> None:
        self.text = text
        self.origin = origin

    def span(self, start: int, end: int) -> Span:
        return self.origin[start], self.origin[end - 1] + 1


def _normalised(text: str) -> _View | None:
    """``text`` under NFKC with invisible characters removed, or None when that changes nothing."""
    import unicodedata  # (here: an ASCII text never needs it)

    if text.isascii() or (unicodedata.is_normalized("NFKC", text) and not re.search(_INVISIBLE_RE, text)):
        return None
    chars: list[str] = []
    origin: list[int] = []
    position = 0
    for m in re.finditer(r"[^\x00-\x7f]+", text):  # ASCII runs are copied whole: NFKC keeps them
        chars.append(text[position : m.start()])
        origin.extend(range(position, m.start()))
        for index in range(m.start(), m.end()):
            char = text[index]
            if re.match(_INVISIBLE_RE, char) or unicodedata.category(char) == "Cf":
                continue
            part = unicodedata.normalize("NFKC", char)
            chars.append(part)
            origin.extend([index] * len(part))
        position = m.end()
    chars.append(text[position:])
    origin.extend(range(position, len(text)))
    return _View("".join(chars), origin) if origin else None


def _joined(view: _View) -> list[tuple[_View, list[int]]]:
    """Each run of token characters a line break splits, joined up, with the positions of the joins."""
    out = []
    for m in re.finditer(_SPLIT_RE, view.text):
        joined = re.sub(_BREAK_RE, "", m.group())
        if len(joined) < 20 or not any(c.isdigit() for c in joined):  # no token long enough: most prose
            continue
        chars: list[str] = []
        origin: list[int] = []
        joins: list[int] = []
        position = m.start()
        for index, piece in enumerate(re.split(_BREAK_RE, m.group())):
            if index:
                joins.append(len(chars))
                position = view.text.index(piece, position)
            chars.extend(piece)
            origin.extend(view.origin[position + i] for i in range(len(piece)))
            position += len(piece)
        out.append((_View("".join(chars), origin), joins))
    return out


def _decoded(view: _View) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) of each base64 or hex blob in ``view`` that decodes to printable text."""
    out = []
    for pattern, decode in ((_ENCODED_RE, b64decode), (_HEX_RE, _hexdecode)):
        for m in re.finditer(pattern, view.text):
            blob = m.group()
            if pattern is _ENCODED_RE and _char_classes(blob.rstrip("=")) < 2:
                continue  # an identifier or a word, not an encoding
            raw = decode(blob)
            if raw is None or len(raw) < 8:
                continue
            try:
                decoded = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if all(c.isprintable() or c in "\n\r\t" for c in decoded) and any(c.isalpha() for c in decoded):
                out.append((m.start(), m.end(), decoded))
    return out


def _hexdecode(value: str) -> bytes | None:
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def _disguised(text: str) -> list[_Found]:
    """Secrets only a normalised, line-joined or decoded copy of ``text`` shows, as spans of ``text``."""
    base = _normalised(text)
    found: list[_Found] = []
    if base is not None:
        found += [(*base.span(start, end), cls) for start, end, cls in _scan_passes(base.text)]
    view = base or _View(text, range(len(text)))  # (each character from itself: no list to build)
    if "\n" in view.text:
        for joined, joins in _joined(view):
            for start, end, cls in _scan(joined.text):
                if cls not in _CONTEXTUAL and any(start < join < end for join in joins):
                    found.append((*joined.span(start, end), cls))
    for start, end, decoded in _decoded(view):
        inner = _scan_passes(decoded)
        if inner:
            found.append((*view.span(start, end), inner[0][2]))
    return found


def _merge(spans: list[_Found], extra: list[_Found]) -> list[_Found]:
    """``spans`` with each of ``extra`` added; one overlapping others takes their place, widened to cover
    them all (a disguised token's plain half may already be a finding of its own)."""
    if not extra:
        return spans
    out = list(spans)
    for start, end, cls in sorted(extra):
        overlapping = [s for s in out if s[0] < end and start < s[1]]
        if overlapping and all(s[0] <= start and end <= s[1] for s in overlapping):
            continue  # already covered
        for s in overlapping:
            out.remove(s)
        out.append(
            (min([start] + [s[0] for s in overlapping]), max([end] + [s[1] for s in overlapping]), cls)
        )
    return sorted(out)


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


@functools.lru_cache(maxsize=4096)
def mask_text(text: str) -> str:
    """``text`` with every secret masked (:func:`redact`): for a value ee shows that no write guard saw, such
    as a commit's author, subject or ``Ee-Actor`` trailer, an events file's ``source``, a file name, or a
    value quoted in an error. Cached: the same names come back often."""
    return redact(text) if text else text


# Strings that cannot hold a secret, skipped by :func:`mask_output`: git object ids, ULID memory ids, times,
# numbers, and short lower-case words (kinds, trust classes, codes).
_PLAIN_OUTPUT_RE = r"[0-9a-f]{7,64}|mem_[0-9A-Z]{26}|\d{4}-\d\d-\d\d(?:T[\d:.]+Z)?|[\d.]+|[a-z_-]{0,24}"


def mask_output(value: Any) -> Any:
    """``value`` (an answer's degradations, an error, doctor's problems: JSON-ready data that quotes file
    names and values) with every secret in every string masked, keys included. An answer's own data is
    masked where its values come from (:func:`name_record`, ee.index.provenance), not walked here."""
    if isinstance(value, str):
        return value if re.fullmatch(_PLAIN_OUTPUT_RE, value) else mask_text(value)
    if isinstance(value, dict):
        return {mask_output(key): mask_output(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_output(item) for item in value]
    return value


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


# ---------------------------------------------------------------------------------------------- every field
#
# One guard for everything ee writes, and one mask for everything it shows: a memory's body and every
# frontmatter value (source, paths, tags, links, extra keys at any depth), an outcome's reason, a file
# about to be committed. A value is scanned with its key in front ("db_password: hunter2x!"), so an
# assignment split between a key and its value is still an assignment.

_UNMASKABLE = ("id", "links")  # a memory id (or a link's target) cannot hold a placeholder


@dataclass(frozen=True, slots=True)
class FieldSecret:
    """One secret in one field: ``field`` is ``body``, a frontmatter key (``source``, ``tags``…), a dotted
    path into ``extra`` (``extra.db.password``) or ``reason``; ``line`` is 1-based, in the field's text (in
    the file, for :func:`file_secrets`)."""

    field: str
    cls: str
    line: int
    preview: str

    def to_dict(self) -> dict[str, object]:
        return {"field": self.field, "cls": self.cls, "line": self.line, "preview": self.preview}

    def describe(self) -> str:
        where = f"line {self.line}" if self.field == "body" else self.field
        return f"{self.cls} in {where} ({self.preview})"


Visit = Callable[[str, str | None, str], str]


def _walk(value: object, label: str, key: str | None, visit: Visit) -> object:
    """``value`` rebuilt with ``visit(label, key, text)`` applied to every text in it, keys included."""
    from ee.model import Link

    if isinstance(value, str):
        return visit(label, key, value)
    if isinstance(value, Link):
        return Link(value.type, str(visit(label, value.type, value.to)))
    if isinstance(value, dict):
        out = {}
        for name, item in value.items():
            inner = f"{label}.{name}"
            new_name = visit(inner, None, name) if isinstance(name, str) else name
            out[new_name] = _walk(item, inner, str(name), visit)
        return out
    if isinstance(value, list | tuple):
        return type(value)(_walk(item, label, key, visit) for item in value)
    return value


def field_texts(fields: dict[str, object]) -> list[str]:
    """Every text in ``fields`` (field name → value), keys of mappings included, in order: what the other
    guards (the injection guard) read besides a memory's body."""
    texts: list[str] = []

    def visit(_label: str, _key: str | None, text: str) -> str:
        texts.append(text)
        return text

    for name, value in fields.items():
        _walk(value, name, name, visit)
    return texts


def _scan_value(key: str | None, text: str) -> list[SecretFinding]:
    """The findings in ``text``, scanned after ``key: `` (spans and lines are ``text``'s own)."""
    if not key:
        return find_secrets(text)
    head = f"{key}: "
    out = []
    for f in find_secrets(head + text):
        if f.end <= len(head):
            continue  # the key alone (an extra key is checked as a text of its own)
        start, end = max(f.start, len(head)) - len(head), f.end - len(head)
        out.append(SecretFinding(f.cls, start, end, f.line, _preview(text[start:end])))
    return out


def scan_fields(fields: dict[str, object]) -> tuple[dict[str, object], list[FieldSecret]]:
    """Every secret in ``fields`` (field name → value, the body under ``body``), and the fields with each
    secret masked as ``[REDACTED:<class>]``."""
    found: list[FieldSecret] = []

    def visit(label: str, key: str | None, text: str) -> str:
        findings = _scan_value(None if label == "body" else key, text)
        found.extend(FieldSecret(label, f.cls, f.line, f.preview) for f in findings)
        return _apply(text, findings) if findings else text

    masked = {name: _walk(value, name, name, visit) for name, value in fields.items()}
    return masked, found


def guard(
    fields: dict[str, object], *, redact: bool = False, what: str = "the memory", repair: str | None = None
) -> tuple[dict[str, object], list[str]]:
    """Refuse ``fields`` (as :func:`scan_fields` reads them) holding a secret, before anything is written;
    with ``redact`` mask them instead. Returns the fields to write and the classes masked.

    A secret in a memory id, a link or a key is refused even with ``redact``: a placeholder is no id."""
    from ee.errors import SecretFound

    masked, found = scan_fields(fields)
    if not found:
        return fields, []
    classes = sorted({f.cls for f in found})
    stuck = [f for f in found if f.field.partition(".")[0] in _UNMASKABLE or _is_key(fields, f.field)]
    if redact and not stuck:
        return masked, classes
    shown = stuck or found
    where = "; ".join(f.describe() for f in shown[:5]) + (
        f"; and {len(shown) - 5} more" if len(shown) > 5 else ""
    )
    hint = (
        f"remove the secret from {', '.join(sorted({f.field for f in stuck}))} (an id, link or key cannot be "
        "masked)"
        if stuck
        else repair or "remove the secret, or pass --redact to store it as [REDACTED:<class>]"
    )
    raise SecretFound(
        f"{what} holds {len(shown)} secret(s): {where}; nothing was written",
        hint,
        {"classes": classes, "fields": sorted({f.field for f in shown})},
    )


MAX_REASON_CHARS = 2000
"""The longest free-text reason ee stores (an outcome's, a review decision's)."""


def check_reason(reason: str | None) -> str | None:
    """A free-text reason (``ee outcome --reason``, ``ee curate reject --reason``), stripped; None when
    empty. Refused before anything is written when longer than :data:`MAX_REASON_CHARS` or holding a
    secret."""
    from ee.errors import UsageError

    if reason is None or not reason.strip():
        return None
    reason = reason.strip()
    if len(reason) > MAX_REASON_CHARS:
        raise UsageError(
            f"the reason is {len(reason)} characters (at most {MAX_REASON_CHARS})",
            "say it in a sentence or two",
        )
    guard({"reason": reason}, what="the reason", repair="remove the secret from --reason and run it again")
    return reason


def _is_key(fields: dict[str, object], label: str) -> bool:
    """Is ``label`` (``extra.a.b``) the name of a key rather than a value? Keys are visited with no key."""
    head, _, rest = label.partition(".")
    node: object = fields.get(head)
    parts = rest.split(".") if rest else []
    for index, part in enumerate(parts):
        if not isinstance(node, dict):
            return False
        if index == len(parts) - 1:
            return part in node and _scan_value(None, part) != []
        node = node.get(part)
    return False


def mask_memory(memory: Memory) -> Memory:
    """``memory`` as output may show it: a secret in any field (a hand edit can put one anywhere) masked;
    ``redacted`` then names the masked classes too, and a secret in its file or folder name is masked in
    its path and in the id derived from it. The file is not changed; ``ee doctor`` reports it."""
    masked = scan_memory(memory)[0]
    path = mask_text(memory.path)
    if path == memory.path:
        return masked
    from ee.store.frontmatter import id_from_path

    derived = memory.id == id_from_path(memory.path)
    return dataclasses.replace(
        masked, path=path, id=path_id(memory.path) if derived else mask_text(memory.id)
    )


def name_record(record: dict[str, Any], path: str) -> None:
    """Give an index record of the file at ``path`` its id when the file names none (:func:`path_id`),
    and, when a file or folder name in ``path`` holds a secret, ``shown_path``: the path masked, which
    every output shows instead (:func:`shown_path`). Once per file the index reads, not per answer."""
    masked = mask_text(path)
    if record.get("id_from_path"):
        record["id"] = path_id(path)
    if masked != path:
        record["shown_path"] = masked


def shown_path(record: Mapping[str, Any]) -> str:
    """The path an output shows for an index record: a secret in its file or folder name masked."""
    return str(record.get("shown_path") or record["path"])


def path_id(path: str) -> str:
    """The id of a memory file without an ``id`` key: derived from its path, a secret in the path masked
    (with a short digest of the path, so two such files keep two ids)."""
    from ee.store.frontmatter import fit_id, id_from_path

    masked = mask_text(path)
    if masked == path:
        return id_from_path(path)
    import hashlib

    return fit_id(f"{id_from_path(masked)}-{hashlib.sha256(path.encode()).hexdigest()[:8]}", path)


def rename_command(path: str) -> str | None:
    """The ``git mv`` that renames the first file or folder of ``path`` whose name holds a secret, or None.
    The secret is written as its preview then ``?`` wildcards (the shell matches the name without anyone
    typing or seeing the secret); the new name is ``renamed-`` and a digest of the old one."""
    findings = path_secrets(path)
    if not findings:
        return None
    import hashlib

    first = findings[0]
    end = path.find("/", first.end)
    end = len(path) if end < 0 else end
    start = path.rfind("/", 0, first.start) + 1
    pattern = path[start:end]
    for f in reversed([f for f in findings if start <= f.start and f.end <= end]):
        hidden = len(f.preview) - 1
        pattern = (
            pattern[: f.start - start + hidden] + "?" * (f.end - f.start - hidden) + pattern[f.end - start :]
        )
    suffix = ".md" if end == len(path) and path.endswith(".md") else ""
    target = f"renamed-{hashlib.sha256(path[:end].encode()).hexdigest()[:8]}{suffix}"
    return f"git mv {path[:start]}{pattern} {path[:start]}{target}"


def path_secrets(path: str) -> list[SecretFinding]:
    """The secrets in a memory file's path (its file and folder names): it enters git as its text does."""
    return find_secrets(path) if path else []


def scan_memory(memory: Memory) -> tuple[Memory, list[FieldSecret]]:
    """:func:`mask_memory`'s result, and the secrets it masked."""
    masked, found = scan_fields(_memory_fields(memory))
    if not found:
        return memory, []
    values: dict[str, Any] = masked  # the same shapes as the memory's fields, texts masked
    return dataclasses.replace(
        memory,
        body=values["body"],
        tags=values["tags"],
        source=values["source"],
        paths=values["paths"],
        links=values["links"],
        extra=tuple(values["extra"].items()),
        redacted=tuple(sorted(set(memory.redacted) | {f.cls for f in found})),
    ), found


def memory_secrets(memory: Memory) -> list[FieldSecret]:
    """Every secret in any field of ``memory`` (as :func:`mask_memory` masks them)."""
    return scan_memory(memory)[1]


def _memory_fields(memory: Memory) -> dict[str, object]:
    return {
        "body": memory.body,
        "tags": memory.tags,
        "source": memory.source,
        "paths": memory.paths,
        "links": memory.links,
        "extra": dict(memory.extra),
    }


def file_secrets(text: str, path: str = "") -> list[FieldSecret]:
    """Every secret in a memory file's text, each with its line in the file and the field that holds it.

    The raw text is scanned (YAML comments included), and, when it parses, every decoded frontmatter value
    too: a YAML escape (``"\\x70assword"``) or a folded string must not hide a secret. Used wherever a file
    is about to enter git: the pre-commit hook, ``ee sync``, the merge driver. A secret in ``path`` itself
    (a file or folder name) is one too, reported as field ``path`` (line 1: git shows the name first)."""

    named = [FieldSecret("path", f.cls, 1, f.preview) for f in path_secrets(path)]
    return named + _text_secrets(text, path)


def _text_secrets(text: str, path: str) -> list[FieldSecret]:
    from ee.errors import EeError
    from ee.store import frontmatter

    fm_text, _body, body_line = frontmatter.split(text)
    keys = sorted((line, key) for key, line in frontmatter.top_level_key_lines(fm_text or "").items())

    def field_at(line: int) -> str:
        if fm_text is None or line >= body_line:
            return "body"
        index = bisect.bisect_right([n for n, _k in keys], line)
        return keys[index - 1][1] if index else "frontmatter"

    found = [FieldSecret(field_at(f.line), f.cls, f.line, f.preview) for f in find_secrets(text)]
    try:
        memory, _problems = frontmatter.parse(text, path or "memory.md")
    except EeError:
        return found
    seen = {(f.field.partition(".")[0], f.cls) for f in found}
    key_line = {key: line for line, key in keys}
    for f in memory_secrets(memory):
        top = f.field.partition(".")[0]
        if top != "body" and (top, f.cls) not in seen:
            found.append(FieldSecret(f.field, f.cls, key_line.get(top, 1), f.preview))
    return sorted(found, key=lambda f: (f.line, f.field, f.cls))


def refusal(path: str, found: list[FieldSecret]) -> str:
    """What ee says of a file it will not commit: each secret with its line and class, and the repair."""
    where = ", ".join(f"{path}:{f.line} {f.cls} in {f.field} ({f.preview})" for f in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return f"{where}{more}"


def file_refusal(text: str, path: str) -> str | None:
    """Why a memory file must not enter git (its secrets, each with line and class), or None when clean:
    for a writer that cannot raise, such as the merge driver git runs."""
    found = file_secrets(text, path)
    if not found:
        return None
    return f"it holds a secret ({refusal(path, found)}): remove it from the side that added it, and rotate it"
