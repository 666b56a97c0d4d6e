"""The JSON Schemas ee ships (``schemas/*.json``) and validation against them."""

from __future__ import annotations

import json
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
