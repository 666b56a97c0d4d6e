"""Who and when, as ``git commit-tree`` would write them, for a commit object made in-process.

Only the plain cases, each taken from git's rules (ident.c, date.c): a name and an email set in
``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` or as ``user.name`` / ``user.email`` in the global or repository
configuration; a date set as ``<seconds> <±hhmm>`` (``@`` optional) in ``GIT_*_DATE``, or now in the
local time zone. Anything else (a quoted or escaped config value, a name git would trim or clean, a
signing or encoding setting, a default identity from the system) returns None, and git makes the commit.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

# Config words after which git's commit differs from the plain one here (a signature, an encoding
# header) or the identity may come from somewhere this reading does not follow.
_CONFIG_WORDS = (b"gpgsign", b"commitencoding", b"useconfigonly", b"include")
_SECTION = re.compile(rb'\s*\[\s*([A-Za-z0-9.-]+)(\s+"[^"\\]*")?\s*\]\s*')
_KEY = re.compile(rb"\s*(name|email)\s*=\s*(.*?)\s*", re.I)
# A value git takes byte for byte: no character git trims or drops at either end or anywhere, no quote,
# escape or comment (bytes from 0x80 are parts of UTF-8 characters: git keeps them).
_END = rb"[^\x00-\x20,:;<>\"\\'.#\x7f]"
_VALUE = re.compile(_END + rb"([^\x00-\x1f,:;<>\"\\'#\x7f]*" + _END + rb")?")
_DATE = re.compile(r"@?(\d{9,12}) ([+-])(\d\d)([0-5]\d)")


def idents(system_files: Iterable[Path], config_files: Iterable[Path]) -> tuple[bytes, bytes] | None:
    """(author, committer) lines' values (``Name <email> <seconds> <±hhmm>``), or None: ask git.

    The name and email come from ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*``, else ``user.name`` /
    ``user.email`` of ``config_files`` (the global and repository files, in git's order: the last one
    wins). ``author.*`` / ``committer.*`` settings anywhere (read by git 2.22 and later only) and an
    identity only the system file gives (``system_files``: where git's may be) are left to git.
    """
    system = _read_settings(system_files)
    settings = _read_settings(config_files)
    if system is None or settings is None:
        return None
    if any(not key.startswith(b"user.") for key in [*system, *settings]):
        return None
    out = []
    now = _now()  # one "now" for both, as git takes it once
    for role in ("AUTHOR", "COMMITTER"):
        name = _pick(os.environ.get(f"GIT_{role}_NAME"), settings.get(b"user.name"))
        email = _pick(os.environ.get(f"GIT_{role}_EMAIL"), settings.get(b"user.email"))
        date = _date(os.environ.get(f"GIT_{role}_DATE"), now)
        if name is None or email is None or date is None:
            return None
        out.append(name + b" <" + email + b"> " + date)
    return out[0], out[1]


def _pick(env: str | None, configured: bytes | None) -> bytes | None:
    """The environment's value (even empty), else the configured one; None unless plain."""
    value = os.fsencode(env) if env is not None else configured
    if value is None or not _VALUE.fullmatch(value):
        return None
    return value


def _date(env: str | None, now: bytes) -> bytes | None:
    if env:
        match = _DATE.fullmatch(env)
        if match is None:
            return None  # another of the formats git reads: git reads it
        seconds, sign, hours, minutes = match.groups()
        if hours == minutes == "00":
            sign = "+"  # git writes -0000 as +0000
        return f"{int(seconds)} {sign}{hours}{minutes}".encode()
    return now


def _now() -> bytes:
    """Now in the local time zone, as git writes it (``<seconds> <±hhmm>``)."""
    # git reads TZ as it is now; this process read it at start (and ``ee watch`` runs a client's write
    # with the client's environment): read it again.
    time.tzset()
    now = int(time.time())
    offset = time.localtime(now).tm_gmtoff // 60
    sign = "-" if offset < 0 else "+"
    return f"{now} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}".encode()


def _read_settings(config_files: Iterable[Path]) -> dict[bytes, bytes] | None:
    """``section.key`` → value for the name and email keys of the files, later files winning (as git's
    system, global and repository order); None when a file holds anything this reading might get wrong."""
    settings: dict[bytes, bytes] = {}
    for path in config_files:
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None
        folded = data.lower().replace(b" ", b"").replace(b"\t", b"")
        if any(word in folded for word in _CONFIG_WORDS):
            return None
        section = b""
        for line in data.splitlines():
            if line.rstrip().endswith(b"\\"):
                return None  # a value continued on the next line
            stripped = line.strip()
            if not stripped or stripped[:1] in (b"#", b";"):
                continue
            if stripped.startswith(b"["):
                header = _SECTION.fullmatch(line)
                if header is None:
                    return None  # a key on the header's line, an escaped sub-section name
                section = b"?" if header.group(2) else header.group(1).lower()  # user "x" is not user
                continue
            if section not in (b"user", b"author", b"committer"):
                continue
            key = _KEY.fullmatch(line)
            if key is None:
                if re.match(rb"\s*(name|email)\b", line, re.I):
                    return None  # a name or email key written some other way
                continue
            settings[section + b"." + key.group(1).lower()] = key.group(2)
    return settings
