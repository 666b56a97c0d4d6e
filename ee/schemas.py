"""The JSON Schemas ee ships (``schemas/*.json``) and validation against them."""

from __future__ import annotations

import json
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


def validator(schema_id: str) -> Any:
    """A jsonschema validator for ``schema_id`` (jsonschema imported lazily)."""
    import jsonschema

    schema = load_schema(schema_id)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)
