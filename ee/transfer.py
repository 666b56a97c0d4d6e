"""Bulk import and export of memories as JSON Lines: one commit for a whole import."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ee import frontmatter
from ee.errors import EeError, UsageError
from ee.gitrepo import format_message
from ee.ids import new_id
from ee.model import Link, Memory
from ee.workspace import Actor, build_fields, guard_secrets, parse_link

if TYPE_CHECKING:
    from ee.workspace import Workspace

_ALLOWED = {
    "id",
    "body",
    "text",
    "level",
    "kind",
    "tags",
    "trust",
    "confidence",
    "utility",
    "importance",
    "created",
    "valid_from",
    "valid_to",
    "source",
    "links",
    "paths",
    "redacted",
    "extra",
    "path",
}


@dataclass(slots=True)
class ImportReport:
    imported: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "imported": len(self.imported),
            "skipped": self.skipped,
            "commit": self.commit,
            "ids": self.imported,
        }


def export_records(memories: Iterable[Memory]) -> Iterator[dict[str, Any]]:
    """One JSON-ready record per memory, sorted by id; ``import_jsonl`` reads them back unchanged."""
    for memory in sorted(memories, key=lambda m: m.id):
        record = memory.to_dict()
        record.pop("path")
        yield record


def import_jsonl(
    ws: Workspace,
    lines: Iterable[str],
    *,
    skip_invalid: bool = False,
    redact: bool = False,
    actor: Actor | None = None,
    source_name: str = "<stdin>",
) -> ImportReport:
    """Validate every line, then write all memories and commit them once.

    A bad line aborts the whole import (naming its line number) unless ``skip_invalid``.
    """
    actor = actor or Actor.from_env()
    report = ImportReport()
    existing = set(ws.store.snapshot().memories)
    planned: dict[str, tuple[str, str]] = {}  # id → (path, text)
    taken_paths: set[str] = set()
    errors: list[dict[str, Any]] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            memory_id, rel, text = _prepare(ws, raw, actor, redact)
            if memory_id in existing or memory_id in planned:
                raise UsageError(
                    f"id {memory_id} is already in the store"
                    if memory_id in existing
                    else f"id {memory_id} appears twice in the file"
                )
            while rel in taken_paths or (ws.root / rel).exists():
                rel = rel.removesuffix(".md") + "-1.md"
            taken_paths.add(rel)
            planned[memory_id] = (rel, text)
        except EeError as exc:
            errors.append({"line": number, "message": exc.message, "repair": exc.hint})
    if errors and not skip_invalid:
        first = errors[0]
        more = f" (and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
        raise UsageError(
            f"{source_name}:{first['line']}: {first['message']}{more}; nothing was imported",
            "fix the line(s), or pass --skip-invalid to import the good lines only",
            {"errors": errors[:100]},
        )
    report.skipped = errors
    if not planned:
        return report
    with ws.lock():
        written: list[str] = []
        try:
            for rel, text in planned.values():
                ws.store.write(rel, text)
                written.append(rel)
            report.commit = ws.git.commit_paths(
                written,
                format_message(
                    f"ee: import {len(planned)} memories from {source_name}",
                    {"Ee-Op": "import", "Ee-Count": str(len(planned)), "Ee-Actor": actor.label},
                ),
            )
        except BaseException:
            for rel in written:  # all or nothing
                (ws.root / rel).unlink(missing_ok=True)
            raise
    report.imported = list(planned)
    return report


def _prepare(ws: Workspace, raw: str, actor: Actor, redact: bool) -> tuple[str, str, str]:
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"not JSON: {exc.msg} at column {exc.colno}", "write one JSON object per line"
        ) from None
    if not isinstance(record, dict):
        raise UsageError("a line must be a JSON object", 'write e.g. {"body": "…", "kind": "rule"}')
    unknown = sorted(set(record) - _ALLOWED)
    if unknown:
        raise UsageError(f"unknown field(s): {', '.join(unknown)}", f"use: {', '.join(sorted(_ALLOWED))}")
    body = record.get("body", record.get("text"))
    if not isinstance(body, str):
        raise UsageError("'body' (or 'text') must be a string", 'add "body": "…"')
    body, redacted = guard_secrets(body, redact)
    memory_id = record.get("id") or new_id()
    links = [_link(item) for item in _list(record, "links")]
    trust = record.get("trust") or (
        "legacy_import" if record.get("id") is None and actor.agent else actor.trust
    )
    if trust not in frontmatter.TRUST_CLASSES:
        raise UsageError(f"unknown trust {trust!r}", f"use one of: {', '.join(frontmatter.TRUST_CLASSES)}")
    fields = build_fields(
        memory_id=str(memory_id),
        level=record.get("level") or "semantic",
        kind=record.get("kind") or "fact",
        tags=_texts(record, "tags"),
        trust=trust,
        confidence=_number(record, "confidence"),
        source=_texts(record, "source"),
        valid_from=record.get("valid_from"),
        valid_to=record.get("valid_to"),
        links=links,
        paths=_texts(record, "paths"),
        redacted=sorted(set(redacted) | set(_texts(record, "redacted"))),
        created=_created(record.get("created")),
        utility=_number(record, "utility", 0.5),
        importance=_number(record, "importance", 0.5),
    )
    extra = record.get("extra") or {}
    if not isinstance(extra, dict):
        raise UsageError("'extra' must be an object", "remove it or make it {}")
    text = frontmatter.render_new(fields, body, extra)
    rel = ws.store.new_path(fields["id"], body)
    frontmatter.parse(text, rel)  # what we write must read back
    return fields["id"], rel, text


def _created(value: Any) -> str | None:
    if value is None:
        return None
    from ee.workspace import normalise_time

    return normalise_time(str(value), "created")


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise UsageError(f"'{key}' must be a list", f'write e.g. "{key}": ["a", "b"]')
    return value


def _texts(record: dict[str, Any], key: str) -> list[str]:
    """A list of short texts (numbers are taken as text); a nested list or object is an error."""
    out = []
    for item in _list(record, key):
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise UsageError(
                f"'{key}' holds {json.dumps(item)[:40]}, not text", f'write e.g. "{key}": ["a", "b"]'
            )
        out.append(str(item))
    return out


def _number(record: dict[str, Any], key: str, default: float | None = None) -> Any:
    value = record.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"'{key}' must be a number from 0 to 1", f'write e.g. "{key}": 0.5')
    return float(value)


def _link(item: Any) -> Link:
    if isinstance(item, str):
        return parse_link(item)
    if isinstance(item, dict) and isinstance(item.get("type"), str) and isinstance(item.get("to"), str):
        return parse_link(f"{item['type']}:{item['to']}")
    raise UsageError(f"link {item!r} is not {{type, to}}", 'write e.g. {"type": "supports", "to": "mem_…"}')
