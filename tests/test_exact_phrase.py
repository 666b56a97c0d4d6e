"""Exact-phrase matching (``query.mode`` exact) over a generation's joined texts is pinned to the plain
definition, memory by memory: the phrase (whitespace collapsed, case-folded) is in the body with its
whitespace collapsed and case-folded, or in the tags joined by spaces and case-folded."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ee.index.segment import Entry, Generation
from ee.query.engine import _exact_matches, generation_memo

# Characters where case folding, whitespace and NUL differ from the ASCII view: ß → ss, the Kelvin sign → k,
# ſ → s, the ﬁ ligature → fi, no-break and ideographic spaces, the ASCII separators \x1c-\x1f that
# str.split() treats as whitespace, and NUL itself.
ALPHABET = "abKkSsß\u212a\u017f\ufb01fi \t\n\u00a0\u3000\x1c\x1f\x00-."
TEXT = st.text(alphabet=ALPHABET, max_size=24)


def reference(needle_text: str, bodies: list[str], tags: list[list[str]], eligible: list[bool]) -> set[int]:
    needle = " ".join(needle_text.split()).casefold()
    return {
        pos
        for pos, (body, memory_tags) in enumerate(zip(bodies, tags, strict=True))
        if eligible[pos]
        and (needle in " ".join(body.split()).casefold() or needle in " ".join(memory_tags).casefold())
    }


def generation(bodies: list[str], tags: list[list[str]]) -> Generation:
    entries = [
        Entry(f"memories/m{i}.md", f"{i:040x}", True, {"id": f"mem_{i:04d}", "tags": t}, body, [], None)
        for i, (body, t) in enumerate(zip(bodies, tags, strict=True))
    ]
    return Generation().updated([], entries, None)


def matches(gen: Generation, text: str, eligible: list[bool]) -> set[int]:
    ctx: Any = SimpleNamespace(query=SimpleNamespace(text=text), view=SimpleNamespace(gen=gen))
    return _exact_matches(ctx, np.asarray(eligible, dtype=bool))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(TEXT, st.lists(st.text(alphabet=ALPHABET, max_size=6), max_size=3), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    TEXT,
)
def test_exact_matches_equal_the_memory_by_memory_definition(
    memories: list[tuple[str, list[str], bool]], needle: str
) -> None:
    bodies = [body for body, _tags, _ok in memories]
    tags = [t for _body, t, _ok in memories]
    eligible = [ok for _body, _tags, ok in memories]
    gen = generation(bodies, tags)
    assert matches(gen, needle, eligible) == reference(needle, bodies, tags, eligible)


def test_a_phrase_across_line_breaks_and_case_is_found_and_kept_per_memory() -> None:
    bodies = ["Run the\n  Snapshot\tTESTS twice", "snapshot", "tests snapshot", "STRASSE names"]
    tags = [[], ["snapshot", "tests"], [], ["ci"]]
    gen = generation(bodies, tags)
    everything = [True] * len(bodies)
    assert matches(gen, "snapshot tests", everything) == {0, 1}
    assert matches(gen, "straße", everything) == {3}
    assert matches(gen, "snapshot tests", [False, True, True, True]) == {1}
    assert generation_memo(gen)["exact"] is not None  # the joined texts are kept for the next query
    assert matches(gen, "  ", everything) == {0, 1, 2, 3}  # the empty phrase is in every text


def test_the_tags_column_is_saved_updated_and_derived_when_missing(tmp_path: Any) -> None:
    gen = generation(["a", "b", "c"], [["x"], [], ["y", "z"]])
    gen.lexical = gen.compute_lexical()
    gen.save(tmp_path / "g1")
    loaded = Generation.load(tmp_path / "g1")
    assert loaded.tag_lists() == [["x"], [], ["y", "z"]]
    (tmp_path / "g1" / "tags.marshal").unlink()  # a generation saved before the column existed
    assert Generation.load(tmp_path / "g1").tag_lists() == [["x"], [], ["y", "z"]]
    old = Generation.load(tmp_path / "g1", for_update=True)
    added = Entry("memories/d.md", "d" * 40, True, {"id": "mem_d", "tags": ["w"]}, "d", [], None)
    assert old.updated([1], [added], None).tag_lists() == [["x"], ["y", "z"], ["w"]]
