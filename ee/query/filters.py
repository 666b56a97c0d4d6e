"""Predicates of ee.query.v1 over a memory's frontmatter: tags, filters, time, trust.

A filter names a frontmatter field (``level``, ``kind``, ``tags``, ``trust``, ``confidence``, ``created``,
``valid_to``, …, or any unknown key a human added, e.g. ``team``). On a list field (tags, paths, source)
``eq`` / ``in`` / ``startsWith`` / ``endsWith`` / ``contains`` hold when any element matches, ``neq`` /
``notIn`` when no element does. ``gt`` / ``gte`` / ``lt`` / ``lte`` compare numbers; on a time field the
number is seconds since the epoch. ``exists`` is true when the field is set and not empty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ee.ids import parse_time
from ee.policy import trust as trust_policy

TIME_FIELDS = frozenset({"created", "valid_from", "valid_to"})
FIELDS = frozenset(
    {
        "id",
        "path",
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
    }
)


def field_value(record: dict[str, Any], name: str) -> Any:
    if name == "links":
        return [f"{t}:{to}" for t, to in record.get("links", [])]
    if name in FIELDS:
        return record.get(name)
    return record.get("extra", {}).get(name)


def _number(value: Any, name: str) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if name in TIME_FIELDS and isinstance(value, str):
        try:
            return parse_time(value).timestamp()
        except ValueError:
            return None
    return None


def _elements(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _text_test(op: str, arg: str) -> Callable[[Any], bool]:
    def test(element: Any) -> bool:
        if not isinstance(element, str):
            return False
        if op == "startsWith":
            return element.startswith(arg)
        if op == "endsWith":
            return element.endswith(arg)
        return arg in element

    return test


def predicate_holds(value: Any, op: str, arg: Any, name: str) -> bool:
    elements = _elements(value)
    if op == "exists":
        present = value is not None and value != [] and value != ""
        return present == bool(arg)
    if op == "eq":
        return value == arg or arg in elements
    if op == "neq":
        return value != arg and arg not in elements
    if op == "in":
        return any(e in arg for e in elements)
    if op == "notIn":
        return not any(e in arg for e in elements)
    if op in ("gt", "gte", "lt", "lte"):
        number = _number(value, name)
        if number is None:
            return False
        return {"gt": number > arg, "gte": number >= arg, "lt": number < arg, "lte": number <= arg}[op]
    if op in ("startsWith", "endsWith", "contains"):
        return any(_text_test(op, arg)(e) for e in elements)
    raise AssertionError(op)  # pragma: no cover - the schema admits only the twelve predicates


def passes_filters(record: dict[str, Any], filters: dict[str, dict[str, Any]]) -> bool:
    for name, predicates in filters.items():
        value = field_value(record, name)
        for op, arg in predicates.items():
            if not predicate_holds(value, op, arg, name):
                return False
    return True


def passes_tags(record: dict[str, Any], tags: dict[str, list[str]]) -> bool:
    have = set(record.get("tags", ()))
    if not all(t in have for t in tags.get("require", [])):
        return False
    any_of = tags.get("requireAny")
    if any_of and not have.intersection(any_of):
        return False
    return not have.intersection(tags.get("exclude", []))


def passes_trust(cls: str, posture: str, spec: dict[str, Any]) -> bool:
    minimum = spec.get("minClass")
    if minimum and not trust_policy.at_least(cls, minimum):
        return False
    if cls in spec.get("excludeClasses", []):
        return False
    required = spec.get("requirePosture")
    return not (required and posture != required)


def passes_time(created: str | None, spec: dict[str, str]) -> bool:
    if not spec:
        return True
    if created is None:
        return False
    moment = parse_time(created)
    if "after" in spec and not moment > parse_time(spec["after"]):
        return False
    return not ("before" in spec and not moment < parse_time(spec["before"]))


def unknown_filter_fields(filters: dict[str, Any], records: list[dict[str, Any]]) -> list[str]:
    """Filter fields that no memory has (a likely typo, reported as a degradation)."""
    extra_keys = {k for r in records for k in r.get("extra", {})}
    return sorted(name for name in filters if name not in FIELDS and name not in extra_keys)
