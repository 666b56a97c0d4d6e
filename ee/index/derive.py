"""One memory version's derived data: parse, secret masking, injection flags, tokens (no I/O)."""

from __future__ import annotations

from typing import Any

from ee import frontmatter
from ee.errors import MemoryFormatError
from ee.index.cache import Derived
from ee.index.tokenize import tokenize


def derive(data: bytes, path: str) -> Derived:
    """Parse ``data`` (the bytes of a memory file at ``path``) into what the index keeps.

    Secrets found in the text (a hand edit can add one) are masked before anything is tokenised,
    embedded or shown; the file itself is never changed. An unreadable file gives a record with
    ``error`` set, so the error is cached too and reported without parsing again.
    """
    from ee.policy.secrets import find_secrets, redact

    try:
        memory, problems = frontmatter.parse(frontmatter.decode(data, path), path)
    except MemoryFormatError as exc:
        error = {"message": exc.reason, "line": exc.line, "key": exc.key, "repair": exc.hint}
        return Derived({"error": error}, "", [], None)
    body = memory.body
    findings = find_secrets(body)
    secret_classes = sorted({f.cls for f in findings})
    if findings:
        body = redact(body, findings)
    record: dict[str, Any] = {
        "id": memory.id,
        "id_from_path": not _has_id_key(memory, data),
        "level": memory.level,
        "kind": memory.kind,
        "tags": list(memory.tags),
        "trust": memory.trust,
        "confidence": memory.confidence,
        "utility": memory.utility,
        "importance": memory.importance,
        "created": memory.created,
        "valid_from": memory.valid_from,
        "valid_to": memory.valid_to,
        "source": list(memory.source),
        "links": [[link.type, link.to] for link in memory.links],
        "paths": list(memory.paths),
        "redacted": list(memory.redacted),
        "extra": dict(memory.extra),
        "has_frontmatter": memory.has_frontmatter,
        "body_line": memory.body_line,
        "secrets": secret_classes,
        "injection": _injection(body),
        "warnings": [p.to_dict() for p in problems],
        "conflict": bool(dict(memory.extra).get("conflict")) or "\n<<<<<<< " in "\n" + body,
    }
    return Derived(record, body, index_tokens(body, memory.tags, memory.kind, memory.paths), None)


def index_tokens(body: str, tags: Any, kind: str, paths: Any) -> list[str]:
    """What BM25 sees: the body, then tags, kind and code paths (each findable by name)."""
    extra = " ".join([*tags, kind, *paths])
    return tokenize(body) + tokenize(extra)


def embed_text(body: str, tags: Any, kind: str) -> str:
    """What the embedding sees: tags and kind lead, so the model's token cap keeps them."""
    head = " ".join(tags)
    return f"{kind}: {head}\n{body}" if head else f"{kind}: {body}"


def _has_id_key(memory: Any, data: bytes) -> bool:
    if not memory.has_frontmatter:
        return False
    fm, _body, _line = frontmatter.split(data.decode("utf-8", "replace"))
    return fm is not None and "id" in frontmatter.top_level_key_lines(fm)


def _injection(body: str) -> dict[str, Any]:
    try:
        from ee.policy.injection import scan_injection
    except ModuleNotFoundError:  # pragma: no cover - the guard ships with ee
        return {"score": 0.0, "flagged": False, "signals": []}
    report = scan_injection(body)
    return {"score": round(report.score, 4), "flagged": report.flagged, "signals": list(report.signals)}
