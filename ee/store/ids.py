"""Memory ids (``mem_`` + a ULID) and the time stamps ee writes."""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_RE = re.compile(r"^mem_[0-9A-HJKMNP-TV-Z]{26}$")
# Ids of hand-written files are derived from their path; anything safe for a file name is accepted.
LOOSE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def new_ulid(now_ms: int | None = None) -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, in Crockford base 32."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id() -> str:
    return "mem_" + new_ulid()


def is_valid_id(value: str) -> bool:
    return bool(LOOSE_ID_RE.match(value)) and ".." not in value


def utcnow() -> datetime:
    from datetime import UTC, datetime

    return datetime.now(UTC).replace(microsecond=0)


def now_text() -> str:
    """Now as :func:`format_time` writes it, without importing datetime (~1 ms of ``ee remember``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def format_time(value: datetime) -> str:
    """RFC 3339 UTC with a ``Z``, to the second: the only form ee writes. Raises :class:`TimeOutOfRange`
    for a time whose UTC date is outside years 1-9999 (``0001-01-01T00:00:00+01:00``)."""
    utc = as_utc(value)
    # Not strftime: C's %Y does not pad years before 1000 ("999-…"), which no parser reads back.
    return utc.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


class TimeOutOfRange(ValueError):
    """A well-formed time whose UTC date falls outside years 1-9999, which Python cannot represent."""

    reason = "is out of range: in UTC it falls outside years 1 to 9999"


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC (naive means UTC already). Raises :class:`TimeOutOfRange` (a ValueError, not
    Python's OverflowError) when the UTC date falls outside years 1-9999 (``9999-12-31T23:59:59-14:00``),
    so every caller treats it as the bad time it is."""
    from datetime import UTC

    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise TimeOutOfRange(f"{value.isoformat()} {TimeOutOfRange.reason}") from None


def parse_time(value: str) -> datetime:
    """Parse RFC 3339 / ISO 8601 (a date alone means midnight UTC) into an aware UTC datetime. Raises
    ValueError for anything else, a time out of range in UTC included."""
    from datetime import datetime

    text = value.strip()
    if not text:
        raise ValueError("empty time")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return as_utc(datetime.fromisoformat(text))
