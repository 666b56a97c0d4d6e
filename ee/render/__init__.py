"""Renderers: data → text. They never read files or call git."""

from __future__ import annotations

import json
from typing import Any

RESPONSE_SCHEMA = "ee.response.v1"
ERROR_SCHEMA = "ee.error.v1"


def envelope(data: Any, degraded: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ee.response.v1 document. ``data`` is masked where its values come from (an index record, a
    memory, git's words: ee.policy.secrets); the degradations, which quote file names, are masked here."""
    masked = masked_degradations(degraded)
    return {"schema": RESPONSE_SCHEMA, "success": True, "data": data, "degraded": masked}


def masked_degradations(degraded: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """An answer's degradations with every secret they quote masked (ee.policy.secrets). Most answers have
    none, and then the secret policy is not even imported (a served ``ee search`` is mostly imports)."""
    if not degraded:
        return []
    from ee.policy.secrets import mask_output

    masked: list[dict[str, Any]] = mask_output(degraded)
    return masked


def error_envelope(error: dict[str, Any]) -> dict[str, Any]:
    """The ee.error.v1 document; a value the message quotes is masked like any output."""
    from ee.policy.secrets import mask_output

    return {"schema": ERROR_SCHEMA, "success": False, "error": mask_output(error)}


def dumps(value: Any, indent: int | None = 2) -> str:
    """Deterministic, strict JSON: key order as built, UTF-8 kept, no trailing spaces. Every JSON answer
    goes through here (envelopes, JSON Lines, export, MCP): a NaN or Infinity, which strict parsers refuse,
    is a bug that raises ValueError here, never output (what ee reads is checked: ee.schemas.unwritable, and
    frontmatter carries a non-finite extra value as text)."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=_default, allow_nan=False)


def _default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot render {type(value).__name__} as JSON")
