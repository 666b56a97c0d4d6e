"""The JSON Schemas ee ships (``schemas/*.json``) and validation against them."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from ee.errors import NotFound


def schema_dir() -> Path:
    """``ee/schemas`` in an installed wheel; the repository's top-level ``schemas/`` in a checkout."""
    packaged = Path(__file__).parent / "schemas"
    if packaged.is_dir():
        return packaged
    return Path(__file__).parent.parent / "schemas"


def list_schemas() -> list[str]:
    return sorted(p.name.removesuffix(".json") for p in schema_dir().glob("*.json"))


@cache
def load_schema(schema_id: str) -> dict[str, Any]:
    path = schema_dir() / f"{schema_id.removesuffix('.json')}.json"
    if "/" in schema_id or not path.is_file():
        raise NotFound(f"no schema {schema_id!r}", "run `ee schema list` for the ids")
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$")


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8. A command-line argument or variable holding bytes that are
    not UTF-8 reaches Python as lone surrogates (``\\udcff``), and so does a ``"\\udcff"`` escape in JSON:
    text that no file, git commit, JSON answer or tokenizer takes."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


NOT_UTF8 = "holds text that is not UTF-8 (a lone surrogate)"
NOT_FINITE = "is not a finite number (JSON has no NaN or Infinity)"


def unwritable(doc: Any) -> tuple[str, str] | None:
    """``(JSON pointer, problem)`` of the first value of a parsed JSON document that ee could not write out
    again, or None: a key or string that is not UTF-8 (:func:`is_utf8`), or a number that is not finite
    (Python's json reads ``NaN``, ``Infinity`` and ``1e400``; strict JSON has none of them)."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        node, pointer = stack.pop()
        if isinstance(node, str):
            if not is_utf8(node):
                return pointer or "/", NOT_UTF8
        elif isinstance(node, float):
            if not math.isfinite(node):
                return pointer or "/", NOT_FINITE
        elif isinstance(node, dict | list):
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, value in items:
                if isinstance(key, str) and not is_utf8(key):
                    return pointer or "/", NOT_UTF8
                stack.append((value, f"{pointer}/{key}"))
    return None


def is_rfc3339(value: object) -> bool:
    """RFC 3339 date-time, checked by ee itself (jsonschema checks ``date-time`` only with an extra
    package): the form, then :func:`ee.store.ids.parse_time` (a real date, in range once in UTC)."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        return not isinstance(value, str)
    from ee.store.ids import parse_time

    try:
        parse_time(value)
    except ValueError:
        return False
    return True


@cache
def validator(schema_id: str) -> Any:
    """A jsonschema validator for ``schema_id`` (jsonschema imported lazily), checking date-time formats."""
    import jsonschema

    schema = load_schema(schema_id)
    cls = jsonschema.validators.validator_for(schema)
    checker = jsonschema.FormatChecker()
    checker.checks("date-time")(is_rfc3339)
    return cls(schema, format_checker=checker)
