"""What a random-looking token is, and what merely looks like one: the ``high_entropy`` rule of
:mod:`ee.policy.secrets`, and the placeholder test the other rules share.

A token (a run of base64/base64url characters at least :data:`HIGH_ENTROPY_MIN_LEN` = 24 long) is random when:

* its longest separator-free run (split on ``-_/+``, after an id prefix such as ``mem_``) is ≥ 12 characters
  and mixes lower case, upper case and digits;
* its Shannon entropy is ≥ :data:`HIGH_ENTROPY_MIN_BITS` = 3.7 bits per character (random base64 of 24
  characters scores about 4.25, 99 % above 3.9; identifiers such as ``AbstractSingletonProxyFactoryBean``
  score about 4.0, so entropy alone cannot separate them);
* less than half of it is word-like runs (``[A-Z]?[a-z]{3,}``): 0.17 for random base64 (99th percentile
  about 0.55 at 24 characters, 0.41 at 64), 1.0 for ``AbstractSingletonProxyFactoryBean``;
* it is not an alphabet (``ABC…xyz0123…``), not hex (git SHAs, sha256 digests, UUIDs), not an id built on a
  UUID, not a ULID (no lower case after the prefix), not an SRI/nix hash (``sha512-…``), not a Stripe
  test/publishable key, not an OpenSSH public key (``AAAAC3NzaC1…``), and does not decode (base64) to text,
  JSON, markup or a file header (PNG, JPEG, GIF, WebP, PDF, zip).

Context also clears a token: inside a ``data:…;base64,`` URI, inside a ``PUBLIC KEY``, ``CERTIFICATE``,
``SIGNATURE`` or ``MESSAGE`` PEM block, after ``sha256:``, ``md5``, ``digest``, ``checksum``, ``fingerprint``,
``integrity``, ``etag`` or an ``…Id``/``id:`` key, or as one line of a multi-line base64 blob (an attachment).
A path-like token (``a/b/c`` with word segments) is judged segment by segment. And a token is only ever
reported with a credential word (:data:`CREDENTIAL_WORDS_RE`) before it on its line, and not inside a
password hash (:data:`CRYPT_RE`): without context, entropy alone refused real documentation (Gmail message
ids, Google Docs ids, signed values in Django's docs, HPKP pins in Node's).
"""

from __future__ import annotations

import collections
import itertools
import re
from collections.abc import Iterable

Span = tuple[int, int]

# Regexes are kept as source strings: ``re`` compiles and caches each on first use, so import stays cheap.

PLACEHOLDER_RE = (
    r"(?i)your|example|placeholder|redacted|dummy|sample|changeme|change[_-]?me|replace|insert"
    r"|(?-i:xxx|XXX)|\.\.\.|…"
)
"""Text that marks a value as a stand-in (``your-token``, ``EXAMPLE``, ``xxx``, ``...``), not a secret."""

HIGH_ENTROPY_MIN_LEN = 24
HIGH_ENTROPY_MIN_BITS = 3.7
HIGH_ENTROPY_MAX_WORDY = 0.5
HIGH_ENTROPY_MIN_RUN = 12

_CANDIDATE_RE = r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/_=-])"
_WORDY_RE = r"[A-Z]?[a-z]{3,}"
_SEPARATOR_RE = r"[-_/+]+"
_UUID_TAIL_RE = r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
# hashes and ids in an obvious context: "sha256: <base64>", "ETag …", "integrity=…", "UploadId": "…"
_HASH_CONTEXT_RE = (
    r"(?:(?i:sha-?(?:1|224|256|384|512)|md5|digest|hash|checksum|fingerprint|integrity|etag)[\W_]{0,6}"
    r"|(?:[a-z]Ids?|ID|\bids?|[_-]ids?|(?i:identifier))[\"'`]?\s*[:=]\s*[\"'`]?)$"
)
CREDENTIAL_WORDS_RE = (
    r"(?i)secret|token|passw|passphrase|pwd|api[_-]?key|apikey|access[_-]?key|private|credential|auth"
    r"|salt|session|cookie|bearer|signing[ _-](?:key|material|secret)|webhook|hooks/|\bkey\b|[_-]key\b"
    r"|license[ _-]?key"
)
"""Words before a random-looking token, on its line, that make it a credential: without one, raw entropy
alone (a message id, a document id, a signature in an example) is not refused."""
CREDENTIAL_WORDS_CHARS = 64
# A password hash in crypt, htpasswd or SCRAM form ("$2y$05$…", "{SHA}…", "SCRAM-SHA-256$4096:…"): a hash
# is what a system stores in place of a password, not the password.
CRYPT_RE = (
    r"(?:\$(?:2[abxy]?|1|5|6|y|7|argon2(?:id|i|d)|scrypt|pbkdf2[-_]?\w*|sha\d*|md5|apr1)\$"
    r"|\{(?:S?SHA\d*|S?MD5|CRYPT|PBKDF2[-\w]*)\}|SCRAM-SHA-\d+\$|(?:pbkdf2_sha|bcrypt_sha|argon2)\w*\$)"
)
"""The start of a password hash (``re.match`` it against a value)."""
_CRYPT_TAIL_RE = CRYPT_RE + r"[^\s'\"]*$"
_BLOB_LINE_RE = r"[A-Za-z0-9+/]{40,}={0,2}"
_ID_PREFIX_RE = r"^[a-z]{1,12}[_-]"
# Subresource Integrity / nix hashes; Stripe test and publishable keys (public or harmless by design)
# and OpenSSH public keys (``ssh-ed25519 AAAAC3NzaC1…``).
_HARMLESS_PREFIX_RE = (
    r"(?i)sha(?:1|224|256|384|512)-|(?:pk|sk|rk)_test_|pk_live_|(?-i:AAAA[BCE][0-9]Nza|AAAAE2VjZHNh)"
)
_PUBLIC_BLOCK_RE = (
    r"-----BEGIN ((?:[A-Z0-9]+ )*(?:PUBLIC KEY|CERTIFICATE[A-Z ]*|SIGNATURE|MESSAGE))-----"
    r"[\s\S]*?-----END \1-----"
)
_FILE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"%PDF", b"<?xml", b"<svg", b"PK\x03\x04")


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s character distribution (0 for empty)."""
    if not value:
        return 0.0
    total = len(value)
    from math import log2  # (here: most texts hold no candidate token; a remember need not load math)

    return -sum(n / total * log2(n / total) for n in collections.Counter(value).values())


def high_entropy_spans(text: str) -> Iterable[Span]:
    """Spans of ``text`` holding random-looking tokens (the test and the exemptions of the module doc)."""
    public = [m.span() for m in re.finditer(_PUBLIC_BLOCK_RE, text)] if "-----BEGIN" in text else []
    for m in re.finditer(_CANDIDATE_RE, text):
        prefix = text[max(0, m.start() - 8) : m.start()]
        if prefix.endswith("base64,"):  # a data: URI is content, not a credential
            continue
        if any(start <= m.start() < end for start, end in public):  # certificates and public keys
            continue
        if re.search(_HASH_CONTEXT_RE, text[max(0, m.start() - 24) : m.start()]):
            continue
        if _in_base64_blob(text, m.start(), m.end()):
            continue
        for start, end in _random_parts(m.group(), m.start()):
            if _in_secret_context(text, start):
                yield start, end


def _in_secret_context(text: str, start: int) -> bool:
    """A word before ``start`` on its line makes the token a credential (and it is no password hash):
    raw entropy alone (a message id, a document id, a signature in an example) is not refused."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - CREDENTIAL_WORDS_CHARS) : start]
    return bool(re.search(CREDENTIAL_WORDS_RE, before)) and not re.search(_CRYPT_TAIL_RE, before)


def _in_base64_blob(text: str, start: int, end: int) -> bool:
    """A token that fills its line next to another long base64 line is part of an encoded attachment."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if text[line_start:line_end].strip() != text[start:end]:
        return False
    before = text[text.rfind("\n", 0, max(0, line_start - 1)) + 1 : max(0, line_start - 1)]
    after_end = text.find("\n", line_end + 1)
    after = text[line_end + 1 : len(text) if after_end < 0 else after_end]
    return any(re.fullmatch(_BLOB_LINE_RE, neighbour.strip()) for neighbour in (before, after))


def _random_parts(token: str, offset: int) -> Iterable[Span]:
    """Spans of ``token`` that look random; a path-like token is judged segment by segment."""
    segments = token.split("/")
    if len(segments) > 2 and sum(1 for s in segments if re.fullmatch(r"[a-z][a-z0-9_.-]{2,}", s)) >= 2:
        position = offset
        for segment in segments:
            if _is_random_token(segment):
                yield position, position + len(segment)
            position += len(segment) + 1
    elif _is_random_token(token):
        yield offset, offset + len(token)


def _is_random_token(token: str) -> bool:
    """The high-entropy test of the module doc."""
    if len(token) < HIGH_ENTROPY_MIN_LEN or re.fullmatch(r"[0-9a-fA-F-]+", token):
        return False
    if re.match(_HARMLESS_PREFIX_RE, token) or re.search(PLACEHOLDER_RE, token):
        return False
    if re.search(_UUID_TAIL_RE, token):  # "ADID1234ab12-3eec-4eb3-9be6-9374c10eb51b": an id built on a UUID
        return False
    # Judge the longest separator-free run: structured names ("PS-or-PDF-font-exception-20170817",
    # "JID123e4567-e89b-…", "LiquidAI/LFM2-VL-1") are many short parts, random base64 has long runs.
    core = max(re.split(_SEPARATOR_RE, re.sub(_ID_PREFIX_RE, "", token, count=1)), key=len)
    if len(core) < HIGH_ENTROPY_MIN_RUN:
        return False
    if not (
        any(c.islower() for c in core) and any(c.isupper() for c in core) and any(c.isdigit() for c in core)
    ):
        return False
    if sum(1 for a, b in itertools.pairwise(token) if ord(b) - ord(a) == 1) * 2 > len(token):
        return False  # an alphabet such as "ABC…XYZabc…xyz0123…"
    if shannon_entropy(token) < HIGH_ENTROPY_MIN_BITS:
        return False
    if max(_wordy(token), _wordy(core)) >= HIGH_ENTROPY_MAX_WORDY:
        return False
    return not _decodes_to_content(token)


def _wordy(token: str) -> float:
    return sum(len(w) for w in re.findall(_WORDY_RE, token)) / len(token)


def _decodes_to_content(token: str) -> bool:
    """Base64 of prose or of a known file header is content someone pasted, not a credential."""
    raw = b64decode(token)
    if raw is None:
        return False
    if raw.startswith(_FILE_MAGIC):
        return True
    try:
        decoded = raw.decode("ascii")
    except UnicodeDecodeError:
        return False
    decoded = decoded.strip()
    if not all(c.isprintable() or c in "\r\n\t" for c in decoded):
        return False
    if decoded.lstrip().startswith(("{", "<", "[")):  # JSON or markup, e.g. a JWT header quoted in docs
        return True
    letters = sum(c.isalpha() or c.isspace() for c in decoded)
    return bool(re.fullmatch(r"[A-Za-z ,.'!?-]+", decoded)) or (
        " " in decoded and letters >= 0.6 * len(decoded)
    )


def b64decode(value: str) -> bytes | None:
    import base64  # (here, as math above: only a text with a candidate token decodes one)
    import binascii

    padded = value + "=" * (-len(value) % 4)
    try:
        if "-" in value or "_" in value:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None
