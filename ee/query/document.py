"""The ee.query.v1 document: validation against the shipped schema, defaults, the CLI's plain form,
and the opaque pagination cursor bound to one query."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from ee.errors import QueryError
from ee.text import cut_at_word

MAX_DOCUMENT_BYTES = 256 * 1024
MAX_QUERY_CHARS = 8192
MAX_DEPTH = 32  # nesting of objects and arrays; the schema needs 4, filter values a few more
POOL_SCALE = {"instant": 0.25, "default": 1.0, "quality": 4.0}  # candidate-pool multiplier of each speed


@dataclass(frozen=True, slots=True)
class Query:
    """A validated query document (``doc``) with its defaults filled in; ``notes``: what reading it
    changed (a text too long, shortened), reported in the answer's ``degraded``."""

    doc: dict[str, Any]
    notes: tuple[dict[str, Any], ...] = ()

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.doc
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def text(self) -> str:
        return str(self.doc["query"]["text"])

    @property
    def mode(self) -> str:
        return str(self.get("query.mode", "hybrid"))

    @property
    def speed(self) -> str:
        return str(self.doc.get("speed", "default"))

    @property
    def limit(self) -> int:
        page = self.get("pagination.limit")
        max_results = int(self.get("budget.maxResults", 100))
        return min(int(page), max_results) if page else max_results

    @property
    def pool(self) -> int:
        return max(10, int(int(self.get("budget.candidatePool", 200)) * POOL_SCALE[self.speed]))

    def binding(self) -> str:
        """The hash a cursor is bound to: the whole document except the pagination cursor itself."""
        doc = copy.deepcopy(self.doc)
        doc.get("pagination", {}).pop("cursor", None)
        if doc.get("pagination") == {}:  # a cursor added to a document without a pagination block
            del doc["pagination"]
        canonical = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        import hashlib  # (only a digest needs it: not imported for every parsed query)

        return hashlib.sha256(canonical.encode()).hexdigest()[:24]

    def offset(self) -> int:
        """How many memories the pages before this one returned (0 without a cursor)."""
        cursor = self.get("pagination.cursor")
        return decode_cursor(cursor, self.binding()) if cursor else 0

    def evidence_offset(self) -> int:
        """How many pieces of session evidence the pages before this one returned (0 without a cursor)."""
        cursor = self.get("pagination.cursor")
        return decode_cursor(cursor, self.binding(), "e") if cursor else 0


def parse_document(raw: str | bytes, source: str = "query document") -> Query:
    """Parse and validate a JSON query document; errors name the JSON pointer and what was expected."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise QueryError(f"{source} is larger than {MAX_DOCUMENT_BYTES} bytes", "send a smaller document")
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise QueryError(
            f"{source} is not JSON{where}: {exc}", "send one JSON object (see `ee schema export ee.query.v1`)"
        ) from None
    except RecursionError:  # e.g. 100,000 nested '[': small enough for the size cap, too deep for json
        raise QueryError(f"{source} is nested too deeply", "send a flat ee.query.v1 document") from None
    return validate(doc, source)


def validate(doc: Any, source: str = "query document") -> Query:
    from ee.schemas import unwritable, validator

    too_deep = _too_deep(doc, MAX_DEPTH)
    bad = None if too_deep else unwritable(doc)
    if bad is not None:  # "\udcff" (no tokenizer takes it), NaN or 1e400 (no strict JSON answer echoes it)
        raise QueryError(
            f"{source}: {bad[0]}: {bad[1]}",
            "send UTF-8 text and finite numbers",
            {"pointer": bad[0], "expected": "UTF-8 text or a finite number", "errors": 1},
        )
    if too_deep is not None:  # the schema validator (and json.dumps) recurse once per level
        raise QueryError(
            f"{source}: {too_deep}: nested more than {MAX_DEPTH} levels deep",
            "send a flat ee.query.v1 document",
            {"pointer": too_deep, "expected": f"at most {MAX_DEPTH} levels of nesting", "errors": 1},
        )
    errors = sorted(
        validator("ee.query.v1").iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message)
    )
    if errors:
        first = errors[0]
        pointer = "/" + "/".join(str(p) for p in first.absolute_path)
        expected = _expected(first)
        raise QueryError(
            f"{source}: {pointer}: {first.message}",
            f"expected {expected} at {pointer} (see `ee schema export ee.query.v1`)",
            {"pointer": pointer, "expected": expected, "errors": len(errors)},
        )
    doc["query"]["text"], notes = shortened(doc["query"]["text"])  # (the rule of every query text)
    return Query(doc, notes)


def _too_deep(doc: Any, limit: int) -> str | None:
    """The JSON pointer of the first value nested deeper than ``limit``, or None (iterative: no recursion)."""
    stack: list[tuple[Any, list[str]]] = [(doc, [])]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if len(path) >= limit:
            return "/" + "/".join(path)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((value, [*path, str(key)]) for key, value in items)
    return None


def _expected(error: Any) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "enum":
        return "one of " + ", ".join(json.dumps(v) for v in error.validator_value)
    if error.validator == "type":
        return f"a value of type {error.validator_value}"
    if error.validator == "required":
        return "the fields " + ", ".join(error.validator_value)
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return "only the fields " + ", ".join(allowed) if allowed else "no other fields"
    if error.validator == "anyOf" and schema.get("description"):  # asOf: a time or a commit-ish
        return str(schema["description"]).partition(": ")[2] or str(schema["description"])
    if error.validator == "format":
        return f"a {error.validator_value} string (RFC 3339, e.g. 2026-12-01T09:00:00Z)"
    if error.validator in ("minimum", "maximum", "minLength", "minProperties", "const"):
        return f"{error.validator} {error.validator_value}"
    return f"a value matching the schema ({error.validator})"


def from_arguments(
    text: str,
    *,
    mode: str = "hybrid",
    limit: int | None = None,
    tags: list[str] | None = None,
    level: str | None = None,
    kind: str | None = None,
    as_of: str | None = None,
    explain: bool = False,
    fields: str | None = None,
    speed: str | None = None,
    max_tokens: int | None = None,
    profile: str | None = None,
    fmt: str | None = None,
) -> Query:
    """The document the plain CLI arguments stand for (then validated like any other). A text longer than
    :data:`MAX_QUERY_CHARS` is shortened (:func:`shortened`), and the answer says so."""
    if not text.strip():
        raise QueryError("the query text is empty", 'pass the words to search for: ee search "…"')
    text, notes = shortened(text)
    from ee.schemas import is_utf8

    if not is_utf8(text):
        raise QueryError(
            "the query text holds bytes that are not UTF-8",
            "convert it first, e.g. with: iconv -f latin1 -t utf-8",
        )
    # click's choices already constrain every other argument: skip jsonschema (~110 ms of imports).
    return with_options(
        Query({"version": "ee.query.v1", "query": {"text": text, "mode": mode}}, notes),
        limit=limit or None,
        tags=tags,
        level=level or None,
        kind=kind or None,
        as_of=as_of or None,
        explain=explain or None,
        fields=fields or None,
        speed=speed or None,
        max_tokens=max_tokens or None,
        profile=profile or None,
        fmt=fmt or None,
    )


def with_options(
    query: Query,
    *,
    mode: str | None = None,
    limit: int | None = None,
    tags: list[str] | None = None,
    level: str | None = None,
    kind: str | None = None,
    as_of: str | None = None,
    explain: bool | None = None,
    fields: str | None = None,
    speed: str | None = None,
    max_tokens: int | None = None,
    profile: str | None = None,
    fmt: str | None = None,
) -> Query:
    """The document with the given options written in, each where the schema keeps it (``--limit`` is
    ``budget.maxResults``, ``--tag`` ``tags.require``, ``--level`` ``filters.level``…); ``None`` (and no
    tags) leaves the document's own value. The one place command-line options become a document: plain
    arguments, and options given with a query document (``--query-file``, a ``--batch`` line, ``ee pack``,
    MCP arguments), which override it.

    The document was validated when it was read, and the options are constrained where they are parsed
    (click's choices and ranges, the MCP input schema), so only a new asOf needs a check: no jsonschema here
    (~75 ms of imports on every plain `ee context`).
    """
    if as_of:
        check_as_of(as_of)
    doc = copy.deepcopy(query.doc)
    if mode is not None:
        doc.setdefault("query", {})["mode"] = mode
    if tags:
        doc.setdefault("tags", {})["require"] = list(tags)
    for key, value in (("level", level), ("kind", kind)):
        if value is not None:
            doc.setdefault("filters", {})[key] = {"eq": value}
    if as_of:
        doc["asOf"] = as_of
    settings: tuple[tuple[str, str, Any], ...] = (
        ("output", "explain", explain),
        ("output", "fields", fields),
        ("output", "profile", profile),
        ("output", "format", fmt),
        ("budget", "maxResults", limit),
        ("budget", "maxTokens", max_tokens),
    )
    for section, key, value in settings:
        if value is not None:
            doc.setdefault(section, {})[key] = value
    if speed is not None:
        doc["speed"] = speed
    return Query(doc, query.notes)


def shortened(text: str, limit: int = MAX_QUERY_CHARS) -> tuple[str, tuple[dict[str, Any], ...]]:
    """One rule for a task or query text longer than ``limit`` (a pasted issue, log or stack trace), on the
    command line, in a hook and over MCP alike: keep the most informative part and say so.

    Repeated lines go first (a log repeats itself; whitespace runs count as one space); if the text is
    still too long, its beginning (where a task is stated) and its end (where the question often is) are
    kept, three quarters and one quarter, cut between words. The text and the note for ``degraded``."""
    if len(text) <= limit:
        return text, ()
    seen: set[str] = set()
    lines = []
    for line in text.splitlines():
        words = " ".join(line.split())
        if words and words not in seen:
            seen.add(words)
            lines.append(words)
    kept = "\n".join(lines)
    how = "each repeated line once"
    if len(kept) > limit:
        gap = " … "
        head = cut_at_word(kept, limit * 3 // 4)
        # the end, cut the same way from the other side: the text reversed, cut, and turned back
        tail = cut_at_word(kept[::-1], limit - len(head) - len(gap))[::-1]
        kept = head + gap + tail
        how = "its beginning and its end, each repeated line once"
    note = {
        "code": "task_shortened",
        "severity": "warning",
        "message": f"the text is {len(text):,} characters, more than {limit:,}: ee kept {len(kept):,} "
        f"({how})",
        "repair": "put what matters in the first lines, or shorten the text",
    }
    return kept, (note,)


def check_as_of(as_of: str) -> None:
    """A time-like --as-of must be RFC 3339 (or a date); anything else is taken as a commit-ish later."""
    if not _looks_like_time(as_of):
        return
    from ee.schemas import is_rfc3339

    if not is_rfc3339(as_of) and not _is_date(as_of):
        raise QueryError(f"--as-of {as_of!r} is not an RFC 3339 time", "write e.g. 2026-12-01T09:00:00Z")


def _looks_like_time(value: str) -> bool:
    """A year and a dash: ``2026-12-01…`` is a time; ``1418a9c…`` (a commit id that starts with four digits)
    or ``HEAD~3`` is a commit-ish (the same test as :func:`ee.query.asof.resolve`)."""
    return value[:4].isdigit() and "-" in value


def _is_date(value: str) -> bool:
    from datetime import date

    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def encode_cursor(binding: str, offset: int, evidence: int = 0) -> str:
    """The cursor of the page after ``offset`` memories and ``evidence`` pieces of session evidence."""
    import base64  # (cursors only: a query without one does not import it)

    data: dict[str, Any] = {"q": binding, "o": offset}
    if evidence:
        data["e"] = evidence
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, binding: str, key: str = "o") -> int:
    """The cursor's offset of memories (``key`` ``o``) or of session evidence (``e``, 0 when absent)."""
    import base64

    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        offset = int(data.get(key, 0) if key == "e" else data[key])
        bound = str(data["q"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise QueryError(
            "/pagination/cursor is not a cursor ee made",
            "pass the next_cursor of a previous response unchanged",
        ) from None
    if bound != binding or offset < 0:
        raise QueryError(
            "/pagination/cursor belongs to a different query",
            "repeat the same query document with the cursor, or drop the cursor to start over",
        )
    return offset
