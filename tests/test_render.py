"""ee.render: ``dumps`` (json.dumps with ee's conversions: ``to_dict()``, sets and tuples as lists, UTF-8
kept) and the pack item text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ee.render import dumps


@dataclass(frozen=True)
class Point:
    x: int
    y: float

    def to_dict(self) -> dict[str, Any]:
        return {"x": self.x, "y": self.y, "tags": ("a", "b")}


def test_dumps_writes_to_dict_values_sets_and_text_as_they_are() -> None:
    value = {"point": Point(1, 2.5), "set": frozenset({3}), "text": "é中😀"}
    assert dumps(value) == (
        '{\n  "point": {\n    "x": 1,\n    "y": 2.5,\n    "tags": [\n      "a",\n      "b"\n    ]\n  },\n'
        '  "set": [\n    3\n  ],\n  "text": "é中😀"\n}'
    )
    assert (
        dumps(value, indent=None)
        == '{"point": {"x": 1, "y": 2.5, "tags": ["a", "b"]}, "set": [3], "text": "é中😀"}'
    )


def test_a_value_that_is_no_json_is_refused_as_the_standard_encoder_refuses_it() -> None:
    with pytest.raises(TypeError, match="cannot render object"):
        dumps({"a": [1, object()]})


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_dumps_never_writes_nan_or_infinity(number: float) -> None:
    # Strict parsers (JavaScript's JSON.parse, Go, jq) refuse them: a bug upstream, never output.
    for indent in (None, 2):
        with pytest.raises(ValueError, match="not JSON compliant"):
            dumps({"data": {"extra": {"a": [number]}}}, indent=indent)


def _item_text_reference(kind: str, body: str, memory_id: str, trust: str, confidence: float) -> str:
    """The pack item text as first written (every body through the general path)."""
    lines = body.strip().splitlines() or [""]
    rest = [f"  {line}" if line.strip() else "" for line in lines[1:]]
    meta = f"  `{memory_id}` · {trust} · confidence {confidence:.2f}"
    return "\n".join([f"- **{kind}** {lines[0].strip()}", *rest, meta]) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab \t\n\r\x0b\x0c\x1c\x85\u2028#`")), st.floats(0, 1))
def test_a_pack_items_text_is_the_same_for_one_line_and_many(body: str, confidence: float) -> None:
    from ee.pack.pieces import body_text, item_text

    args = ("fact", body, "mem_A", "agent_validated", confidence)
    # (a heading's marks that open the body are not shown: test_a_body_that_opens_with_a_markdown_title…)
    assert item_text(*args) == _item_text_reference("fact", body_text(body), *args[2:])


def test_a_body_that_opens_with_a_markdown_title_shows_it_as_text(tmp_path: Any) -> None:
    """QA finding 15: ``- **failure** # Duplicate lines after a restart`` in the markdown, hook and compact
    packs. The heading's marks go (one place: ``ee.pack.pieces.body_text``); ``#include`` is no heading."""
    from pathlib import Path

    from ee.pack.pieces import body_text
    from ee.workspace import Workspace
    from tests.conftest import run_cli

    assert body_text("## Duplicate lines\n\nAfter a restart.") == "Duplicate lines\n\nAfter a restart."
    assert body_text("#include <x.h> breaks the build") == "#include <x.h> breaks the build"
    assert body_text("#\n\nAfter a restart.") == "After a restart."
    ws, _ = Workspace.init(Path(tmp_path) / "ws")
    (ws.root / "memories" / "dupes.md").write_text(
        "---\nkind: failure\n---\n# Duplicate lines after a restart\n\n"
        "The offsets were saved before the batch was sent, so a restart shipped it twice.\n",
        encoding="utf-8",
    )
    task = ["--workspace", str(ws.root), "context", "duplicate lines after a restart"]
    markdown = run_cli(*task, "--format", "markdown").out
    hook = run_cli(*task, "--format", "hook").json["hookSpecificOutput"]["additionalContext"]
    compact = run_cli(*task, "--format", "compact").out
    for shown in (markdown, hook):
        assert "- **failure** Duplicate lines after a restart\n" in shown, shown
        assert "  The offsets were saved before the batch was sent" in shown
    assert "dupes failure: Duplicate lines after a restart The offsets" in compact, compact
    assert "# Duplicate" not in markdown + hook + compact
