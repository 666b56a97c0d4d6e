"""ee.render.dumps: the bytes of ``json.dumps(value, ensure_ascii=False, indent=…)`` for the values the
renderers meet beyond plain data (subclasses, objects with ``to_dict``, sets, mappings that are not
dicts) and for documents shaped like a search response (many dicts sharing their keys at one depth,
the same keys again at another depth). The random values of test_formats cover the plain cases."""

from __future__ import annotations

import enum
import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ee.render import _default, dumps


def standard(value: Any, indent: int | None = 2) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=_default)


class Level(enum.IntEnum):
    LOW = 1


class Word(str):
    pass


class Ratio(float):
    def __repr__(self) -> str:  # the encoders write float.__repr__, not this
        return "ratio"


@dataclass(frozen=True)
class Point:
    x: int
    y: float

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "y": self.y, "tags": ("a", "b")}


class Counted(dict):  # type: ignore[type-arg]
    pass


@pytest.mark.parametrize(
    "value",
    [
        {"level": Level.LOW, "word": Word('w\n"q"'), "ratio": Ratio(0.5)},
        [Level.LOW, Word("x"), Ratio(1e300), Ratio(float("nan"))],
        {"point": Point(1, 2.5), "points": [Point(3, float("inf")), Point(-4, -0.0)]},
        {"set": frozenset({3}), "tuple": (1, (2, [3, {}]), [])},
        OrderedDict([("b", 1), ("a", [OrderedDict(), {"z": None}])]),
        Counted(a=1, b=Counted(c=[True, False, None])),
        {Word("key"): 1, "other": {1: "int key", None: "none key"}},  # keys that are not str
        {"": "", "\u00e9\u4e2d\U0001f600": "\x00\x1f\x7f\u2028", "\\": '\\"'},
        Word("top"),
        Level.LOW,
        Ratio(2.0),
        None,
        [],
        {},
        [[[]], [{}], {"a": {"b": {"c": [1, [2, [3]]]}}}],
    ],
)
@pytest.mark.parametrize("indent", [1, 2, 4])
def test_dumps_matches_the_standard_encoder_beyond_plain_data(value: Any, indent: int) -> None:
    assert dumps(value, indent=indent) == standard(value, indent)


def hit(rank: int, tags: list[str], body: str) -> dict[str, Any]:
    return {
        "rank": rank,
        "id": f"mem_{rank}",
        "score": 1 / (rank + 1),
        "tags": tags,
        "flags": [],
        "body": body,
        "components": {"lexical": {"score": 1.5, "rank": rank}, "semantic": None, "fused": 0.25},
        "factors": {"trust": {"value": "agent_validated", "multiplier": 1.0}, "validity": {}},
        "provenance": {"path": f"memories/{rank}.md", "committed": rank % 2 == 0},
    }


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.text(max_size=5), max_size=3), st.text(max_size=40)), max_size=12),
    st.integers(min_value=1, max_value=4),
)
def test_a_search_shaped_document_is_written_as_the_standard_encoder_does(
    hits: list[tuple[list[str], str]], indent: int
) -> None:
    """Dicts of one key sequence at one depth share their keys' text; the same dicts one level deeper
    (and a dict whose keys are a prefix of theirs) must get their own."""
    page = [hit(rank, tags, body) for rank, (tags, body) in enumerate(hits)]
    shallow = {"rank": 0, "id": "x"}
    document = {"data": {"hits": page, "again": {"hits": page}, "shallow": shallow}, "degraded": []}
    assert dumps(document, indent=indent) == standard(document, indent)


def test_a_value_that_is_no_json_is_refused_as_the_standard_encoder_refuses_it() -> None:
    with pytest.raises(TypeError, match="cannot render object"):
        dumps({"a": [1, object()]})


def _item_text_reference(kind: str, body: str, memory_id: str, trust: str, confidence: float) -> str:
    """The pack item text as first written (every body through the general path)."""
    lines = body.strip().splitlines() or [""]
    rest = [f"  {line}" if line.strip() else "" for line in lines[1:]]
    meta = f"  `{memory_id}` · {trust} · confidence {confidence:.2f}"
    return "\n".join([f"- **{kind}** {lines[0].strip()}", *rest, meta]) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab \t\n\r\x0b\x0c\x1c\x85\u2028#`")), st.floats(0, 1))
def test_a_pack_items_text_is_the_same_for_one_line_and_many(body: str, confidence: float) -> None:
    from ee.render.pack_text import item_text

    args = ("fact", body, "mem_A", "agent_validated", confidence)
    assert item_text(*args) == _item_text_reference(*args)
