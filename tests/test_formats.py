"""Every output format of ee search and ee context, for every profile, validated against the schemas."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import toon_format
from hypothesis import given, settings
from hypothesis import strategies as st

from ee.query.engine import count_tokens
from ee.schemas import validator
from ee.workspace import Workspace
from tests.conftest import REPO_ROOT, git, run_cli
from tests.memory_corpus import shared_store

TASK = "roll back the api deployment after the release tag broke the orders table"
PROFILES = ["compact", "balanced", "grounding", "orientation", "wide", "thorough", "submodular", "custom"]
FORMATS = ["human", "json", "jsonl", "compact", "markdown", "toon", "hook"]
FIELDS = ["minimal", "summary", "standard", "full"]


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return shared_store(tmp_path_factory)


def ee(store: dict[str, Any], *args: str) -> str:
    res = run_cli("--workspace", str(store["root"]), *args)
    assert res.code == 0, res.err
    return res.out


def profile_args(profile: str) -> list[str]:
    return ["--quota", "decisions=0.4"] if profile == "custom" else ["--profile", profile]


def check_envelope(doc: dict[str, Any], data_schema: str) -> None:
    assert list(validator("ee.response.v1").iter_errors(doc)) == []
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in validator(data_schema).iter_errors(doc["data"])
    ]
    assert errors == []


def check_jsonl(text: str, kind: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        assert [e.message for e in validator("ee.jsonl.v1").iter_errors(line)] == []
    assert lines[0]["type"] == "header"
    assert lines[0]["kind"] == kind
    assert lines[-1]["type"] == "footer"
    assert {line["type"] for line in lines[1:-1]} <= {"item"}
    assert lines[-1]["count"] == len(lines) - 2
    return lines


def check_toon_pack(doc: dict[str, Any], data: dict[str, Any]) -> None:
    """A pack in TOON: the task, and each item (id, kind, text, short why, source) under its section,
    advisory ones apart, in the pack's order; none of the envelope."""
    assert doc["task"] == data["task"]
    assert "schema" not in doc
    assert "sections" not in doc
    for authoritative, where in ((True, doc), (False, doc.get("advisory", {}))):
        for section in data["sections"]:
            items = [i for i in section["items"] if i["authoritative"] is authoritative]
            rows = where.get(section["name"], [])
            assert [row["id"] for row in rows] == [i["id"] for i in items]
            for row, item in zip(rows, items, strict=True):
                explained = {"explain"} if "selection" in item else set()  # (with --explain)
                assert set(row) == {"id", "kind", "text", "why", "source", *explained}
                if explained:
                    assert row["explain"].startswith(
                        "matched: " if item["explanation"].get("matched_terms") else ""
                    )
                    assert "selected: " in row["explain"]
                assert row["text"] == item.get("body", item["title"])
                assert row["kind"] == item.get("kind", "")


def format_tokens(root: Path, args: list[str], fmt: str) -> int:
    """⌈bytes / 4⌉ of ``ee ARGS --format FMT`` (the README's measure)."""
    res = run_cli("--workspace", str(root), *args, "--format", fmt)
    assert res.code == 0, res.err
    return -(-len(res.out.encode()) // 4)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_token_saving_formats_save_tokens(store: dict[str, Any], profile: str) -> None:
    """For the same pack of short memories: toon, compact and hook ≤ Markdown."""
    args = ["context", TASK, "--max-tokens", "4000", *profile_args(profile)]
    markdown = format_tokens(store["root"], args, "markdown")
    assert format_tokens(store["root"], args, "toon") <= markdown
    assert format_tokens(store["root"], args, "compact") < markdown
    assert format_tokens(store["root"], args, "hook") <= markdown


def test_the_readme_format_sizes_on_ees_own_memories(tmp_path: Path) -> None:
    """The README's table: a 4k pack of this repository's memories. toon ≤ Markdown, compact ≤ ½
    Markdown, hook ≤ Markdown."""
    root = tmp_path / "own"
    shutil.copytree(REPO_ROOT / "memories", root / "memories")
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    Workspace.init(root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "memories")
    args = ["context", "how does ee commit a memory", "--max-tokens", "4000"]
    markdown = format_tokens(root, args, "markdown")
    assert format_tokens(root, args, "toon") <= markdown
    assert format_tokens(root, args, "compact") <= markdown / 2
    assert format_tokens(root, args, "hook") <= markdown


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_context_every_profile_and_format(store: dict[str, Any], profile: str, fmt: str) -> None:
    args = ["context", TASK, "--max-tokens", "1500", *profile_args(profile)]
    data = json.loads(ee(store, *args, "--format", "json"))
    check_envelope(data, "ee.pack.v1")
    assert data["data"]["counts"]["items"] > 0
    out = ee(store, *args, "--format", fmt)
    ids = [i["id"] for s in data["data"]["sections"] for i in s["items"]]
    if fmt == "json":
        assert json.loads(out) == data
    elif fmt == "jsonl":
        lines = check_jsonl(out, "context")
        assert [line["id"] for line in lines[1:-1]] == ids
        assert lines[-1]["pack_hash"] == data["data"]["pack_hash"]
    elif fmt == "toon":
        check_toon_pack(toon_format.decode(out), data["data"])
    elif fmt == "hook":
        hook = json.loads(out)
        assert set(hook) == {"hookSpecificOutput"}
        context = hook["hookSpecificOutput"]["additionalContext"]
        assert hook["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        markdown = ee(store, *args, "--format", "markdown")
        assert context.startswith(markdown.splitlines()[0])
        assert all(f"`{i}`" in context for i in ids)
        assert len(out.encode()) <= len(markdown.encode())  # the JSON with its escapes included
    elif fmt == "markdown":
        assert out.startswith("# ee context: ")
        assert count_tokens(out) <= 1500
        assert all(f"`{i}`" in out for i in ids)
    elif fmt == "compact":
        sections = {s["name"] for s in data["data"]["sections"] if s["items"]}
        assert out.count("\n") == 1 + len(ids) + len(sections)
        assert out.startswith(f"ee context: {TASK[:40]}")
        assert f"({len(ids)} items, " in out.splitlines()[0]
        assert [line.split()[0] for line in out.splitlines() if line.startswith("mem_")] == ids
    else:
        assert "AUTHORITATIVE" in out or "ADVISORY" in out
        assert data["data"]["pack_hash"][:19] in out


def test_hook_event_name_comes_from_the_environment(
    store: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EE_HOOK_EVENT", "SessionStart")
    hook = json.loads(ee(store, "context", TASK, "--format", "hook"))
    assert hook["hookSpecificOutput"]["hookEventName"] == "SessionStart"


@pytest.mark.parametrize("fields", FIELDS)
def test_fields_trim_every_format_consistently(store: dict[str, Any], fields: str) -> None:
    base = ["context", TASK, "--fields", fields]
    doc = json.loads(ee(store, *base, "--format", "json"))
    check_envelope(doc, "ee.pack.v1")
    items = [i for s in doc["data"]["sections"] for i in s["items"]]
    keys = {key for item in items for key in item}
    expected = {
        "minimal": {"id", "section", "authoritative", "title"},
        "summary": {
            "id",
            "section",
            "authoritative",
            "title",
            "kind",
            "level",
            "tags",
            "trust",
            "posture",
            "confidence",
            "score",
            "rank",
            "tokens",
            "why",
            "flags",
        },
    }
    if fields in expected:
        assert keys == expected[fields]
    else:
        assert ("memory" in keys) is (fields == "full")
        assert {"body", "provenance", "components", "factors", "truncated"} <= keys
    if fields == "minimal":
        assert all(set(o) == {"id", "reason"} for o in doc["data"]["omitted"])
    lines = check_jsonl(ee(store, *base, "--format", "jsonl"), "context")
    assert list(lines[1:-1]) == [{"type": "item", **item} for item in items]
    check_toon_pack(toon_format.decode(ee(store, *base, "--format", "toon")), doc["data"])
    full = ee(store, "context", TASK, "--format", "markdown", "--fields", "full")
    assert len(ee(store, *base, "--format", "markdown")) <= len(full)


@pytest.mark.parametrize("fields", FIELDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_search_every_format(store: dict[str, Any], fmt: str, fields: str) -> None:
    args = ["search", "orders table migration", "--limit", "5", "--fields", fields]
    doc = json.loads(ee(store, *args, "--format", "json"))
    check_envelope(doc, "ee.search.v1")
    hits = doc["data"]["hits"]
    assert hits
    out = ee(store, *args, "--format", fmt)
    if fmt == "jsonl":
        lines = check_jsonl(out, "search")
        assert [line["id"] for line in lines[1:-1]] == [h["id"] for h in hits]
    elif fmt == "toon":
        toon = toon_format.decode(out)
        assert toon["query"] == "orders table migration"
        assert [(h["rank"], h["id"]) for h in toon["hits"]] == [(h["rank"], h["id"]) for h in hits]
        assert all(set(h) == {"id", "rank", "kind", "text", "why", "source"} for h in toon["hits"])
    elif fmt == "hook":
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert all(h["id"] in context for h in hits)
    elif fmt in ("human", "markdown", "compact"):
        assert all(h["id"] in out for h in hits)


def test_explain_output_validates(store: dict[str, Any]) -> None:
    for profile in ("balanced", "submodular"):
        doc = json.loads(
            ee(store, "context", TASK, "--explain", "--fields", "full", "--profile", profile, "--json")
        )
        check_envelope(doc, "ee.pack.v1")
        args = ["context", TASK, "--explain", "--fields", "full", "--profile", profile, "--format", "toon"]
        check_toon_pack(toon_format.decode(ee(store, *args)), doc["data"])
    doc = json.loads(ee(store, "search", "orders", "--explain", "--fields", "full", "--json"))
    check_envelope(doc, "ee.search.v1")


# ------------------------------------------------------------------------------------------ json bytes

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
# keys that json.dumps writes as strings
_json_keys = st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(_json_keys, inner, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_json_values, st.sampled_from([None, 0, 1, 2, 4]))
def test_dumps_writes_the_bytes_of_the_standard_encoder(value: Any, indent: int | None) -> None:
    """``ee.render.dumps`` is byte for byte ``json.dumps(value, ensure_ascii=False, indent=...)``: strings
    in any script, control characters, quotes and backslashes, floats (exponents), big ints, bools, None,
    tuples, keys that are not strings, empty and nested containers; and, strict JSON only, it refuses NaN
    and infinities where the standard encoder with ``allow_nan=False`` does."""
    from ee.render import dumps

    try:
        expected = json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    except ValueError:
        with pytest.raises(ValueError, match="not JSON compliant"):
            dumps(value, indent=indent)
        return
    assert dumps(value, indent=indent) == expected


def test_dumps_of_a_served_search_response_is_the_standard_encoders(store: dict[str, Any]) -> None:
    from ee.render import dumps

    res = run_cli("-W", str(store["root"]), "search", "deploy the release", "--explain", "--json")
    assert res.code == 0, res.err
    # stdout is not a terminal here: the envelope on one line (a terminal's is indented: tests/test_server.py)
    assert res.out == json.dumps(res.json, ensure_ascii=False) + "\n"
    assert dumps(res.json, indent=None) == res.out[:-1]


def test_human_context_lists_what_it_omitted_and_why(store: dict[str, Any]) -> None:
    args = ["context", TASK, "--max-tokens", "600"]
    data = json.loads(ee(store, *args, "--format", "json"))["data"]
    omitted = data["omitted"]
    assert len(omitted) > 10
    human = ee(store, *args, "--format", "human")
    reasons = ", ".join(f"{n} {reason}" for reason, n in data["counts"]["omitted_by_reason"].items())
    assert f"omitted: {reasons}" in human
    # Listed one by one: the best ten of those left out for a reason other than the relevance floor
    # (what falls below it is only counted: nobody asked for it).
    listed = [item for item in omitted if item["reason"] != "below_relevance_floor"]
    assert len(listed) > 10
    for item in listed[:10]:
        assert f"  - {item['id']} ({item['section']}, {item['reason']}, {item['tokens']} tokens)" in human
    assert listed[10]["id"] not in human
    assert all(item["id"] not in human for item in omitted if item["reason"] == "below_relevance_floor")
    assert f"… {len(listed) - 10} more (--format json lists each one)" in human


def test_explain_shows_in_human_output(store: dict[str, Any]) -> None:
    plain = ee(store, "search", "orders table", "--limit", "2", "--format", "human")
    explained = ee(store, "search", "orders table", "--limit", "2", "--explain", "--format", "human")
    assert "matched: " not in plain
    hits = json.loads(ee(store, "search", "orders table", "--limit", "2", "--explain", "--json"))["data"][
        "hits"
    ]
    for hit in hits:
        assert f"matched: {', '.join(hit['explanation']['matched_terms'])}" in explained
        assert f"score: {hit['explanation']['final']}" in explained
    pack = ee(store, "context", TASK, "--max-tokens", "600", "--explain", "--format", "human")
    assert "score: " in pack
    assert "selected: mmr (" in pack
    assert "selected: " not in ee(store, "context", TASK, "--max-tokens", "600", "--format", "human")


@pytest.mark.slow
def test_the_readme_format_table_is_written_by_its_script_and_its_targets_hold(tmp_path: Path) -> None:
    """The format sizes the READMEs state come from one script (issue 36, item 9): run on copies of them it
    replaces bench/README.md's table and the README's summary only, names both stores and the date, and
    the targets it states hold on both stores as measured."""
    from bench import format_sizes

    readme, bench = tmp_path / "README.md", tmp_path / "bench.md"
    shutil.copy(REPO_ROOT / "README.md", readme)
    shutil.copy(REPO_ROOT / "bench" / "README.md", bench)
    assert format_sizes.main(["--write", "--readme", str(readme), "--bench-readme", str(bench)]) == 0
    before, after = (REPO_ROOT / "README.md").read_text().splitlines(), readme.read_text().splitlines()
    assert len(after) == len(before)  # (the README's line budget)
    line = next(i for i, text in enumerate(after) if text.startswith(format_sizes.SUMMARY))
    assert [a for i, a in enumerate(after) if i not in (line, line + 1)] == [
        b for i, b in enumerate(before) if i not in (line, line + 1)
    ]
    assert "(20" in after[line]  # the date
    assert "bench/README.md#format-sizes" in after[line + 1]
    lines = bench.read_text().splitlines()
    start = next(i for i, text in enumerate(lines) if text.startswith(format_sizes.INTRO))
    assert "(20" in lines[start]
    header = lines[start + 3]
    assert "this repository's" in header
    assert f"{len(format_sizes.SHORT_MEMORIES)} short memories" in header
    cells = [text.strip("|").split(" | ") for text in lines[start + 5 : start + 10]]
    rows = {row[0].strip(): row for row in cells}
    assert list(rows) == list(format_sizes.FORMATS)

    def tokens(fmt: str, store: int) -> int:
        return int(rows[fmt][1 + 2 * store].replace(",", ""))

    for store in (0, 1):
        markdown = tokens("markdown", store)
        assert tokens("toon", store) <= markdown
        assert tokens("compact", store) < markdown
        assert tokens("hook", store) <= markdown
    assert tokens("compact", 0) <= tokens("markdown", 0) / 2  # long memories: ≤ ½
    assert {fmt: rows[fmt][-1].strip() for fmt in rows} == format_sizes.TARGETS
    compact = round(100 * tokens("compact", 0) / tokens("markdown", 0))
    assert f"compact {compact} % on long memories" in after[line + 1]
