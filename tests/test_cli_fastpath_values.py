"""ee.model's value classes behave as the ``@dataclass(frozen=True, slots=True)`` classes they replace.

Their methods are written out (``dataclass`` compiled six methods per class at every ``ee`` start), so each
one is checked here against a real frozen, slotted dataclass built from the same fields and defaults:
construction, equality, hash, repr, immutability, pickling, copying, pattern matching and ``replace``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from ee import model
from ee.config import Config
from ee.model import CommitInfo, Link, Memory, Problem, Version
from ee.query.document import Query
from ee.workspace import Actor

REQUIRED = inspect.Parameter.empty
# The fields and defaults of the dataclasses these classes replaced, in order.
FIELDS: dict[type, list[tuple[str, Any]]] = {
    Link: [("type", REQUIRED), ("to", REQUIRED)],
    Memory: [
        ("id", REQUIRED),
        ("body", REQUIRED),
        ("path", REQUIRED),
        ("level", "semantic"),
        ("kind", "fact"),
        ("tags", ()),
        ("trust", None),
        ("confidence", None),
        ("utility", 0.5),
        ("importance", 0.5),
        ("created", None),
        ("valid_from", None),
        ("valid_to", None),
        ("source", ()),
        ("links", ()),
        ("paths", ()),
        ("redacted", ()),
        ("extra", ()),
        ("has_frontmatter", True),
        ("body_line", 1),
    ],
    Problem: [
        ("code", REQUIRED),
        ("severity", REQUIRED),
        ("message", REQUIRED),
        ("path", ""),
        ("line", None),
        ("key", None),
        ("repair", ""),
    ],
    Version: [
        (name, REQUIRED) for name in ("commit", "date", "author", "actor", "op", "message", "path", "changed")
    ]
    + [("deleted", False)],
    CommitInfo: [(name, REQUIRED) for name in ("sha", "date", "author", "message")],
    Actor: [("agent", None)],
    Query: [("doc", REQUIRED)],  # (was a mutable dataclass: unhashable by its dict, now frozen too)
}
CLASSES = list(FIELDS)


def reference(cls: type) -> type:
    """The frozen, slotted dataclass ``cls`` was: the same fields, in order, with the same defaults."""
    fields: list[Any] = [
        (name, Any) if default is REQUIRED else (name, Any, dataclasses.field(default=default))
        for name, default in FIELDS[cls]
    ]
    return dataclasses.make_dataclass(cls.__name__, fields, frozen=True, slots=True)


def sample(cls: type, variant: int = 0) -> dict[str, Any]:
    """Values for every field of ``cls`` (``variant`` changes each of them)."""
    values: dict[str, Any] = {}
    for i, name in enumerate(cls.__slots__):
        if name == "links":
            values[name] = (Link("related", f"mem_{variant}"),)
        elif name in ("tags", "source", "paths", "redacted", "changed"):
            values[name] = (f"{name}-{variant}", "x")
        elif name == "extra":
            values[name] = (("owner", variant),)
        elif name in ("confidence", "utility", "importance"):
            values[name] = 0.25 + variant / 10
        elif name in ("line", "body_line"):
            values[name] = i + variant
        elif name in ("deleted", "has_frontmatter"):
            values[name] = bool(variant % 2)
        else:
            values[name] = f"{name}-{variant}"
    return values


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_signature_and_defaults_match_the_dataclass(cls: type) -> None:
    ref = reference(cls)

    def shape(c: type) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(c).parameters.values()]

    assert shape(cls) == shape(ref)
    assert [(name, default) for name, _kind, default in shape(cls)] == FIELDS[cls]
    assert cls.__match_args__ == ref.__match_args__ == cls.__slots__
    required = [p.name for p in inspect.signature(cls).parameters.values() if p.default is p.empty]
    assert cls(*[f"v{i}" for i in range(len(required))]) is not None  # positional construction works
    with pytest.raises(TypeError):
        cls(*range(len(cls.__slots__) + 1))
    with pytest.raises(TypeError):
        cls(**sample(cls), unknown=1)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_value_semantics_match_the_dataclass(cls: type) -> None:
    ref = reference(cls)
    a, b, other = cls(**sample(cls)), cls(**sample(cls)), cls(**sample(cls, 1))
    ra, rother = ref(**sample(cls)), ref(**sample(cls, 1))
    assert repr(a) == repr(ra)
    assert repr(other) == repr(rother)
    assert a == b
    assert hash(a) == hash(b)
    assert hash(a) == hash(ra)
    assert a != other
    assert (a == other) == (ra == rother)
    assert len({a, b, other}) == 2
    assert a != ra  # another class never equals, as between two dataclasses
    assert a.__eq__(ra) is NotImplemented
    assert a != dataclasses.astuple(ra)
    for name in cls.__slots__:
        assert getattr(a, name) == getattr(ra, name)
        changed = cls(**sample(cls) | {name: sample(cls, 1)[name]})
        assert (changed == a) == (ref(**sample(cls) | {name: sample(cls, 1)[name]}) == ra)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_frozen_and_slotted(cls: type) -> None:
    value = cls(**sample(cls))
    name = cls.__slots__[0]
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(value, name, "x")
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{name}'"):
        delattr(value, name)
    with pytest.raises(AttributeError):
        value.not_a_field = 1  # type: ignore[attr-defined]
    assert not hasattr(value, "__dict__")
    assert getattr(value, name) == sample(cls)[name]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_pickle_copy_and_replace(cls: type) -> None:
    value = cls(**sample(cls))
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(value, protocol))
        assert again == value
        assert type(again) is cls
        assert again is not value
    assert copy.copy(value) == value
    assert copy.deepcopy(value) == value
    name = cls.__slots__[-1]
    new = sample(cls, 1)[name]
    replaced = value.replace(**{name: new})
    assert getattr(replaced, name) == new
    assert replaced == cls(**sample(cls) | {name: new})
    assert value == cls(**sample(cls))  # the original is unchanged
    with pytest.raises(TypeError):
        value.replace(unknown=1)


def test_pattern_matching_by_position() -> None:
    match Link("supports", "mem_1"):
        case Link(kind, target):
            assert (kind, target) == ("supports", "mem_1")
        case _:
            pytest.fail("Link did not match by position")


def test_to_dict_and_title_unchanged() -> None:
    memory = Memory(
        "mem_1",
        "\n# Retry flaky tests\nbody",
        "memories/mem_1.md",
        tags=("ci",),
        links=(Link("related", "mem_2"),),
    )
    assert memory.title == "Retry flaky tests"
    data = memory.to_dict()
    assert data["tags"] == ["ci"]
    assert data["links"] == [{"type": "related", "to": "mem_2"}]
    assert data["extra"] == {}
    assert data["body"] == memory.body
    assert Problem("c", "warning", "m", line=3).to_dict() == {
        "code": "c",
        "severity": "warning",
        "message": "m",
        "line": 3,
        "repair": "",
    }
    assert CommitInfo("abc", "d", "a", "m").to_dict()["commit"] == "abc"
    assert Version("abc", "d", "a", "human", "edit", "m", "p", ("body",)).to_dict()["changed"] == ["body"]


def test_importing_the_model_compiles_nothing() -> None:
    """The point of writing the methods out: no ``dataclass`` processing when ee.model is imported."""
    assert not any(dataclasses.is_dataclass(getattr(model, name)) for name in dir(model))


def test_config_defaults_are_fresh_dicts() -> None:
    first, second = Config(), Config()
    assert first == second
    assert first.values == {} and first.sections == {}  # noqa: PT018
    assert first.values is not second.values
    assert Config({"lock.timeout": 3.0}).get("lock.timeout") == 3.0
    assert repr(Config({"a": 1})) == "Config(values={'a': 1}, sections={})"
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.values = {}


def test_actor_keeps_its_behaviour() -> None:
    assert Actor() == Actor(None)
    assert Actor("codex").label == "agent:codex"
    assert Actor().trust == "human_explicit"
    assert {Actor("a"), Actor("a"), Actor()} == {Actor("a"), Actor()}
