"""Predicates of ee.query.v1 over a memory's frontmatter: tags, filters, time, trust.

A filter names a frontmatter field (``level``, ``kind``, ``tags``, ``trust``, ``confidence``, ``created``,
``valid_to``, …, or any unknown key a human added, e.g. ``team``). On a list field (tags, paths, source)
``eq`` / ``in`` / ``startsWith`` / ``endsWith`` / ``contains`` hold when any element matches, ``neq`` /
``notIn`` when no element does. ``gt`` / ``gte`` / ``lt`` / ``lte`` compare numbers; on a time field the
number is seconds since the epoch. ``exists`` is true when the field is set and not empty.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ee.policy import trust as trust_policy
from ee.store.ids import parse_time
from ee.values import KNOWN_KEYS

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
TIME_FIELDS = frozenset({"created", "valid_from", "valid_to"})
FIELDS = frozenset({"id", "path", *KNOWN_KEYS})


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


def created_micros(created: list[str | None]) -> tuple[Any, Any, Any]:
    """Each memory's creation time (by position) as integer microseconds since the epoch, exact for any
    time :func:`ee.store.ids.parse_time` reads, each distinct value parsed once: ``(micros, known, bad)``,
    ``known`` False where there is none, ``bad`` True where it does not parse."""
    import numpy as np

    size = len(created)
    micros = np.zeros(size, dtype=np.int64)
    known = np.zeros(size, dtype=bool)
    bad = np.zeros(size, dtype=bool)
    parsed: dict[str, int | None] = {}
    for pos, value in enumerate(created):
        if value is None:
            continue
        if value not in parsed:
            try:
                parsed[value] = (parse_time(value) - _EPOCH) // _MICROSECOND
            except ValueError:
                parsed[value] = None
        moment = parsed[value]
        if moment is None:
            bad[pos] = True
        else:
            micros[pos], known[pos] = moment, True
    return micros, known, bad


def time_mask(
    created: list[str | None], micros: tuple[Any, Any, Any], spec: dict[str, str], eligible: Any
) -> Any:
    """:func:`passes_time` for every memory at once (``micros`` is :func:`created_micros` of ``created``):
    one comparison per bound instead of a pass over the memories. As ``passes_time`` over the eligible
    memories in position order would, it raises the ValueError of the first eligible creation time that
    does not parse."""
    import numpy as np

    moments, known, bad = micros
    wrong = np.flatnonzero(eligible & bad)
    if wrong.size:
        passes_time(created[int(wrong[0])], spec)  # raises
    mask = known.copy()
    if "after" in spec:
        mask &= moments > (parse_time(spec["after"]) - _EPOCH) // _MICROSECOND
    if "before" in spec:
        mask &= moments < (parse_time(spec["before"]) - _EPOCH) // _MICROSECOND
    return mask


def unknown_filter_fields(
    filters: dict[str, Any], records: list[dict[str, Any]], cache: dict[str, Any] | None = None
) -> list[str]:
    """Filter fields that no memory has (a likely typo, reported as a degradation)."""
    if not any(name not in FIELDS for name in filters):
        return []
    cache = {} if cache is None else cache
    extra_keys = cache.get("extra_keys")
    if extra_keys is None:
        extra_keys = cache["extra_keys"] = {k for r in records for k in r.get("extra", {})}
    return sorted(name for name in filters if name not in FIELDS and name not in extra_keys)


# ------------------------------------------------------------------------------------------ masks
# The same predicates as boolean masks over a generation's records (position order). ``cache`` is a dict
# kept per generation (ee.query.engine.generation_memo): the tag index and each field's values grouped
# by value are built once, then a predicate is decided once per distinct value, not once per memory
# (a loop over 10k records took 15-20 ms per filtered query).


def tags_mask(tag_lists: list[list[str]], tags: dict[str, list[str]], cache: dict[str, Any]) -> Any:
    """Which memories (each memory's tags, by position: ``Generation.tag_lists``) pass the tag filter:
    every ``require`` tag, one of ``requireAny`` (when given), no ``exclude`` tag."""
    import numpy as np

    index: dict[str, Any] | None = cache.get("tag_index")
    if index is None:
        lists: dict[str, list[int]] = {}
        for pos, memory_tags in enumerate(tag_lists):
            for tag in set(memory_tags):
                lists.setdefault(tag, []).append(pos)
        index = cache["tag_index"] = {t: np.asarray(p, dtype=np.int64) for t, p in lists.items()}
    size = len(tag_lists)

    def having(tag: str) -> Any:
        out = np.zeros(size, dtype=bool)
        positions = index.get(tag)
        if positions is not None:
            out[positions] = True
        return out

    mask = np.ones(size, dtype=bool)
    for tag in tags.get("require", []):
        mask &= having(tag)
    any_of = tags.get("requireAny")
    if any_of:
        some = np.zeros(size, dtype=bool)
        for tag in any_of:
            some |= having(tag)
        mask &= some
    for tag in tags.get("exclude", []):
        mask &= ~having(tag)
    return mask


def filters_mask(
    records: list[dict[str, Any]], filters: dict[str, dict[str, Any]], cache: dict[str, Any]
) -> Any:
    """:func:`passes_filters` for every record at once."""
    import numpy as np

    size = len(records)
    mask = np.ones(size, dtype=bool)
    for name, predicates in filters.items():
        groups = _value_groups(records, name, cache)
        if groups is None:  # a value that cannot be grouped (a mapping): record by record
            mask &= np.fromiter((passes_filters(r, {name: predicates}) for r in records), bool, size)
            continue
        for op, arg in predicates.items():
            keep = np.zeros(size, dtype=bool)
            for value, positions in groups:
                if predicate_holds(value, op, arg, name):
                    keep[positions] = True
            mask &= keep
    return mask


def _value_groups(
    records: list[dict[str, Any]], name: str, cache: dict[str, Any]
) -> list[tuple[Any, Any]] | None:
    """``field_value`` of every record grouped by value (type included: ``1``, ``1.0`` and ``True`` are
    compared differently): [(value, positions)], or None when a value is not hashable as a group key."""
    import numpy as np

    key = f"values:{name}"
    if key not in cache:
        groups: dict[Any, tuple[Any, list[int]]] = {}
        try:
            for pos, record in enumerate(records):
                value = field_value(record, name)
                groups.setdefault(_group_key(value), (value, []))[1].append(pos)
        except TypeError:
            cache[key] = None
        else:
            cache[key] = [(value, np.asarray(p, dtype=np.int64)) for value, p in groups.values()]
    result: list[tuple[Any, Any]] | None = cache[key]
    return result


def _group_key(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return (type(value), tuple(_group_key(v) for v in value))
    if isinstance(value, dict | set):
        raise TypeError("not groupable")
    hash(value)
    return (type(value), value)
