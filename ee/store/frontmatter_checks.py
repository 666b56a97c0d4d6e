"""The checks of a memory file's known frontmatter keys as :func:`ee.store.frontmatter.parse` reads them
(all but the id, which parse checks against the secret policy): each value's type, allowed values and
bounds, normalised (:func:`check_key`; a bad value raises MemoryFormatError naming the key and its line, an
unknown kind is a warning), and an extra key's value made JSON-ready (:func:`jsonable`). Pure: no file or
git I/O.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from ee.errors import MemoryFormatError
from ee.model import Link, Problem
from ee.store.ids import TimeOutOfRange, format_time, parse_time
from ee.values import KINDS, LEVELS, LINK_TYPES, TRUST_CLASSES

MAX_TAGS = 256
MAX_TAG_LENGTH = 100


def problem_error(message: str, path: str, line: int | None, key: str, hint: str) -> MemoryFormatError:
    return MemoryFormatError(message, path, line, key, hint=hint)


def check_key(key: str, raw: Any, path: str, line: int | None, problems: list[Problem]) -> Any:
    """Validate and normalise one known key's value but the id (:func:`ee.store.frontmatter.parse` checks
    that one, against the secret policy); raise on a wrong type or value."""
    if raw is None:
        return () if key in ("tags", "source", "links", "paths", "redacted") else None
    if key == "level":
        return _check_choice(key, raw, LEVELS, "level", path, line)
    if key == "kind":
        return _check_kind(raw, path, line, problems)
    if key == "trust":
        return _check_choice(key, raw, TRUST_CLASSES, "trust class", path, line)
    if key in ("confidence", "utility", "importance"):
        return _check_fraction(key, raw, path, line)
    if key in ("created", "valid_from", "valid_to"):
        return _check_time(key, raw, path, line)
    if key in ("tags", "source", "paths", "redacted"):
        return _check_text_list(key, raw, path, line)
    if key == "links":
        return _check_links(raw, path, line)
    raise AssertionError(key)  # pragma: no cover - KNOWN_KEYS and this function move together


def _check_choice(
    key: str, raw: Any, allowed: tuple[str, ...], what: str, path: str, line: int | None
) -> Any:
    """A value that must be one of ``allowed`` (a level, a trust class)."""
    if raw not in allowed:
        raise problem_error(f"unknown {what} {raw!r}", path, line, key, f"use one of: {', '.join(allowed)}")
    return raw


def _check_kind(raw: Any, path: str, line: int | None, problems: list[Problem]) -> str:
    """Any text; a kind ee does not know is a warning, not an error."""
    value = scalar_text(raw)
    if not value:
        raise problem_error(
            f"kind must be text, not {type(raw).__name__}",
            path,
            line,
            "kind",
            f"use one of: {', '.join(KINDS)}",
        )
    if value not in KINDS:
        problems.append(
            Problem(
                "unknown_kind",
                "warning",
                f"kind {value!r} is not one ee knows",
                path,
                line,
                "kind",
                f"ee knows: {', '.join(KINDS)}",
            )
        )
    return value


def _check_fraction(key: str, raw: Any, path: str, line: int | None) -> float:
    """A number from 0 to 1 (confidence, utility, importance)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0.0 <= float(raw) <= 1.0:
        raise problem_error(
            f"{key} must be a number from 0 to 1, not {raw!r}",
            path,
            line,
            key,
            f"write e.g. '{key}: 0.5'",
        )
    return float(raw)


def _dates() -> Any:
    """The datetime module when something imported it, else None: then no value can be a date or a
    datetime (YAML's loader imports it; ``ee remember``, which writes its own times, never does)."""
    return sys.modules.get("datetime")


def _check_time(key: str, raw: Any, path: str, line: int | None) -> str:
    dt = _dates()
    problem = "is not a date-time"
    try:
        if dt is not None and isinstance(raw, dt.datetime):
            return format_time(raw)
        if dt is not None and isinstance(raw, dt.date):
            return format_time(dt.datetime(raw.year, raw.month, raw.day, tzinfo=dt.UTC))
        if isinstance(raw, str):
            return format_time(parse_time(raw))
    except TimeOutOfRange:
        problem = TimeOutOfRange.reason
    except ValueError:
        pass
    shown = raw.isoformat() if dt is not None and isinstance(raw, dt.date) else repr(raw)
    raise problem_error(
        f"{key} {shown} {problem}",
        path,
        line,
        key,
        f"write RFC 3339, e.g. '{key}: 2026-12-01T09:00:00Z'",
    )


def _check_text_list(key: str, raw: Any, path: str, line: int | None) -> tuple[str, ...]:
    if isinstance(raw, str):
        items: list[Any] = [part.strip() for part in raw.split(",")] if key == "tags" else [raw]
    elif isinstance(raw, list):
        items = raw
    else:
        raise problem_error(
            f"{key} must be a list of text, not {type(raw).__name__}",
            path,
            line,
            key,
            f"write e.g. '{key}: [a, b]'",
        )
    out: list[str] = []
    for item in items:
        text = scalar_text(item)
        if text is None:
            raise problem_error(
                f"{key} holds a {type(item).__name__}, not text",
                path,
                line,
                key,
                f"write each entry of {key} as plain text",
            )
        if text and text not in out:
            out.append(text)
    if key == "tags":
        if len(out) > MAX_TAGS:
            raise problem_error(
                f"{len(out)} tags (at most {MAX_TAGS})",
                path,
                line,
                key,
                "keep the tags that help find this memory",
            )
        long = [tag for tag in out if len(tag) > MAX_TAG_LENGTH]
        if long:
            raise problem_error(
                f"tag longer than {MAX_TAG_LENGTH} characters", path, line, key, "shorten the tag"
            )
    return tuple(out)


def _check_links(raw: Any, path: str, line: int | None) -> tuple[Link, ...]:
    if not isinstance(raw, list):
        raise problem_error(
            "links must be a list of {type, to}",
            path,
            line,
            "links",
            "write e.g. 'links: [{type: supports, to: mem_…}]'",
        )
    out: list[Link] = []
    for item in raw:
        if isinstance(item, str) and ":" in item:
            link_type, _, target = item.partition(":")
        elif isinstance(item, Mapping) and "type" in item and "to" in item:
            link_type, target = str(item["type"]), str(item["to"])
        else:
            raise problem_error(
                f"a link must be {{type, to}}, not {item!r}",
                path,
                line,
                "links",
                "write e.g. '- {type: supports, to: mem_…}'",
            )
        if link_type not in LINK_TYPES:
            raise problem_error(
                f"unknown link type {link_type!r}",
                path,
                line,
                "links",
                f"use one of: {', '.join(LINK_TYPES)}",
            )
        link = Link(type=link_type, to=target.strip())
        if link not in out:
            out.append(link)
    return tuple(out)


def scalar_text(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, str | int | float):
        return str(value).strip()
    dt = _dates()
    if dt is not None and isinstance(value, dt.date):
        return value.isoformat()
    return None


# What JSON has no value for is carried as text in an extra key, as a date is: a non-finite number (YAML's
# .nan, .inf, 1.0e+400) as YAML spells it, !!binary as its base64 text; a !!set becomes a sorted list.
_NOT_FINITE = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf"}


def jsonable(value: Any) -> Any:
    """An extra key's YAML value as JSON-ready data (every answer is strict JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        return _NOT_FINITE[repr(value)]
    if isinstance(value, bytes):
        import base64

        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset):
        return sorted((jsonable(v) for v in value), key=repr)
    dt = _dates()
    if dt is not None and isinstance(value, dt.datetime):
        return format_time(value)
    if dt is not None and isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
