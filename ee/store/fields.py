"""The fields of a new memory, checked: its text, its frontmatter values, its links and times, and the
secret guard over all of them. Every writer of a new memory (remember, import, a curate accept, sync's
resolution) builds its fields here, so each rule has one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ee.errors import UsageError
from ee.model import Link
from ee.policy.trust import initial_confidence
from ee.store.files import check_id
from ee.store.frontmatter_checks import MAX_TAG_LENGTH, MAX_TAGS
from ee.store.ids import TimeOutOfRange, format_time, is_valid_id, now_text, parse_time
from ee.values import KINDS, LEVELS, LINK_TYPES


def check_text(text: str) -> str:
    """A memory's text, stripped: refused when empty, binary or not UTF-8 (secrets: :func:`guard_memory`)."""
    body = text.strip()
    if not body:
        raise UsageError("the memory text is empty", 'write the memory as an argument: ee remember "…"')
    if "\x00" in body:
        raise UsageError("the memory text holds a NUL byte (binary data?)", "pass text, not binary data")
    try:
        body.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            "the memory text holds bytes that are not UTF-8",
            "convert it first, e.g. with: iconv -f latin1 -t utf-8",
        ) from None
    return body


def guard_memory(
    fields: dict[str, Any], body: str, extra: dict[str, Any] | None = None, *, redact: bool = False
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The secret guard (:func:`ee.policy.secrets.guard`) over every field of a new memory: its body, each
    frontmatter value and each extra key. Refuses (nothing is written), or with ``redact`` masks the secrets
    and names their classes under ``redacted``. Returns (fields, body, extra) to write."""
    from ee.policy.secrets import guard

    values, classes = guard({**fields, "body": body, "extra": dict(extra or {})}, redact=redact)
    clean: dict[str, Any] = dict(values)
    body, extra = clean.pop("body"), clean.pop("extra")
    if classes:
        clean["redacted"] = sorted({*(clean.get("redacted") or ()), *classes})
    return clean, body, extra


def build_fields(
    *,
    memory_id: str,
    level: str,
    kind: str,
    tags: Sequence[str],
    trust: str,
    confidence: float | None,
    source: Sequence[str],
    valid_from: str | None,
    valid_to: str | None,
    links: Sequence[Link],
    paths: Sequence[str],
    redacted: Sequence[str] = (),
    created: str | None = None,
    utility: float = 0.5,
    importance: float = 0.5,
) -> dict[str, Any]:
    """The frontmatter of a new memory, every value checked (UsageError names the bad one)."""
    if not is_valid_id(memory_id):
        raise UsageError(
            f"id {memory_id!r} is not a valid memory id", "use letters, digits, '_', '-', '.', ':'"
        )
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}", f"use one of: {', '.join(LEVELS)}")
    if not isinstance(kind, str) or not kind or any(c.isspace() for c in kind):
        raise UsageError(f"kind {kind!r} is not usable", f"use one of: {', '.join(KINDS)}")
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r}", f"use one of: {', '.join(KINDS)}")
    for name, value in (("confidence", confidence), ("utility", utility), ("importance", importance)):
        if value is not None and not 0.0 <= value <= 1.0:
            raise UsageError(f"{name} {value} is outside 0..1", f"pass a number from 0 to 1 as --{name}")
    start = normalise_time(valid_from, "--valid-from") if valid_from else None
    end = normalise_time(valid_to, "--valid-to") if valid_to else None
    check_window(start, end, "--valid-from", "--valid-to")
    if confidence is None:
        # (the trust table's prior: a person's, else an agent's assertion's)
        confidence = initial_confidence("human_explicit" if trust == "human_explicit" else "agent_assertion")
    return {
        "id": memory_id,
        "level": level,
        "kind": kind,
        "tags": clean_tags(tags),
        "trust": trust,
        "confidence": round(float(confidence), 4),
        "utility": utility,
        "importance": importance,
        "created": created or now_text(),
        "valid_from": start,
        "valid_to": end,
        "source": [s.strip() for s in source if s.strip()],
        "links": list(links),
        "paths": [p.strip() for p in paths if p.strip()],
        "redacted": list(redacted),
    }


def clean_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    for raw in tags:
        for part in str(raw).split(","):
            tag = part.strip()
            if not tag:
                continue
            if len(tag) > MAX_TAG_LENGTH or any(c in tag for c in "\n\r\0"):
                raise UsageError(f"tag {tag[:40]!r}… is not usable", "use short tags without line breaks")
            if tag not in out:
                out.append(tag)
    if len(out) > MAX_TAGS:
        raise UsageError(f"{len(out)} tags (at most {MAX_TAGS})", "keep the tags that matter")
    return out


def parse_link(spec: str) -> Link:
    link_type, sep, target = spec.partition(":")
    if not sep or not link_type:
        raise UsageError(
            f"link {spec!r} is not TYPE:ID",
            f"write e.g. --link supports:mem_…; types: {', '.join(LINK_TYPES)}",
        )
    if link_type not in LINK_TYPES:
        raise UsageError(
            f"unknown link type {link_type!r} in {spec!r}",
            f"use one of: {', '.join(LINK_TYPES)} (e.g. --link related:{target or 'mem_…'})",
        )
    check_id(target)
    return Link(type=link_type, to=target)


def check_window(start: str | None, end: str | None, start_name: str, end_name: str) -> None:
    """A validity window must not end before it starts (``ee remember``, ``ee memory expire``)."""
    if start and end and parse_time(end) < parse_time(start):
        raise UsageError(
            f"{end_name} {end} is before {start_name} {start}", "give an end at or after the start"
        )


def normalise_time(value: Any, what: str) -> str:
    problem = "is not a date-time"
    try:
        if isinstance(value, str):
            return format_time(parse_time(value))
    except TimeOutOfRange:
        problem = TimeOutOfRange.reason
    except ValueError:
        pass
    raise UsageError(f"{what} {value!r} {problem}", "write RFC 3339, e.g. 2026-12-01T09:00:00Z")
