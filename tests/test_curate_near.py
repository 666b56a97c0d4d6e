"""Near-duplicates by embedding (the index's vectors, the shipped static model): the bars of
``ee.curate.similar.NEAR_BARS`` at write time (``ee remember``, ``ee import jsonl``) and in a scan, on real
repositories; and the guards that keep siblings apart however close their vectors."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Result, git, run_cli

from ee.curate.similar import NEAR_BARS, Features, near_relation, relate
from ee.workspace import Workspace

# (first, a rewording of it): near-identical to the shipped static model (cosine ≥ the duplicate bar) but
# not the same text, and not a word-rule merge either ("Tuesdays" / "Tuesday", "the standup" / "standup").
DEPLOYS = "Deploys to production happen on Tuesdays after the standup."
DEPLOYS_AGAIN = "Deploys to production happen on Tuesday after standup."
# Close (between the bars), same opening words, one word changed: a merge by embedding, not by words.
MIGRATIONS = "Run the database migrations inside one transaction."
MIGRATIONS_AGAIN = "Run the database migrations inside a single transaction."


def ee(root: Path, *args: str, input: str | None = None) -> Result:  # noqa: A002
    return run_cli("--workspace", str(root), *args, "--json", input=input)


def memory_files(root: Path) -> list[Path]:
    return sorted((root / "memories").glob("*.md"))


def indexed(ws: Workspace) -> Workspace:
    """The store with an index (a write uses one only when it exists, as after a first search)."""
    result = ee(ws.root, "index", "rebuild")
    assert result.code == 0, result.err
    return ws


def test_the_rules_judge_a_rewording_by_its_cosine() -> None:
    static = NEAR_BARS["static"]
    assert static.merge < static.duplicate
    old, new = Features.of(DEPLOYS), Features.of(DEPLOYS_AGAIN)
    assert relate(old, new) is None  # the words alone do not pair them
    duplicate = relate(old, new, static.duplicate + 0.001, "static")
    assert duplicate is not None
    assert duplicate.type == "duplicate"
    assert "embedding" in duplicate.reason
    merge = relate(old, new, static.merge, "static")
    assert merge is not None
    assert merge.type == "merge"
    assert relate(old, new, static.merge - 0.001, "static") is None
    assert relate(old, new, 1.0, "an unmeasured model") is None


def test_siblings_are_never_near_duplicates_however_close_their_vectors() -> None:
    pairs = [
        # Vim's help: the static model put these at 1.0 and 0.989 (it folds case; up and down read alike)
        ("e Forward to the end of word, inclusive.", "E Forward to the end of WORD, inclusive."),
        ("CTRL-D Scroll window Downwards in the buffer.", "CTRL-U Scroll window Upwards in the buffer."),
        ("Use the cache for the lint job.", "Don't use the cache for the lint job."),  # a negation
        ("Call retry() around the upload.", "Call backoff() around the upload."),  # other identifiers
    ]
    for a, b in pairs:
        assert near_relation(Features.of(a), Features.of(b), 1.0, "static") is None, (a, b)
    # a value changed in place is an update, whatever the vectors say
    update = relate(
        Features.of("The lint job times out after 30 minutes."),
        Features.of("The lint job times out after 45 minutes."),
        1.0,
    )
    assert update is not None
    assert update.type == "update"


def test_remembering_a_near_identical_text_writes_no_file(ws: Workspace) -> None:
    first = ee(indexed(ws).root, "remember", DEPLOYS)
    assert first.code == 0, first.err
    again = ee(ws.root, "remember", DEPLOYS_AGAIN)
    assert again.code == 0, again.err
    assert again.data["duplicate_of"] == first.data["id"]
    assert again.data["written"] is False
    assert [d["code"] for d in again.json["degraded"]] == ["duplicate"]
    assert "near-identical" in again.json["degraded"][0]["message"]
    assert len(memory_files(ws.root)) == 1
    assert git(ws.root, "status", "--porcelain").strip() == ""


def test_a_close_text_is_written_and_proposed_for_a_merge_by_embedding(ws: Workspace) -> None:
    first = ee(indexed(ws).root, "remember", MIGRATIONS)
    again = ee(ws.root, "remember", MIGRATIONS_AGAIN)
    assert again.code == 0, again.err
    assert "duplicate_of" not in again.data
    assert len(memory_files(ws.root)) == 2
    assert [d["code"] for d in again.json["degraded"]] == ["near_duplicate"]
    listed = ee(ws.root, "curate", "list", "--type", "merge").data
    assert [c["id"] for c in listed["candidates"]] == again.data["merge_candidates"]
    candidate = listed["candidates"][0]
    assert candidate["subjects"] == [first.data["id"], again.data["id"]]
    assert "by embedding" in candidate["reason"]


def test_a_store_without_an_index_is_not_embedded_by_a_write(ws: Workspace) -> None:
    ee(ws.root, "remember", DEPLOYS)
    again = ee(ws.root, "remember", DEPLOYS_AGAIN)
    assert again.code == 0
    assert "duplicate_of" not in again.data
    assert not (ws.root / ".ee" / "index" / "manifest.json").exists()
    assert len(memory_files(ws.root)) == 2


def test_an_import_leaves_out_a_near_identical_line(ws: Workspace, tmp_path: Path) -> None:
    existing = ee(indexed(ws).root, "remember", DEPLOYS).data["id"]
    lines = [{"body": DEPLOYS_AGAIN}, {"body": "Staging is rebuilt from scratch every Monday morning."}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = ee(ws.root, "import", "jsonl", str(source)).data
    assert report["imported"] == 1
    assert [(d["line"], d["duplicate_of"]) for d in report["duplicates"]] == [(1, existing)]
    assert "near-identical" in report["duplicates"][0]["reason"]
    again = ee(ws.root, "import", "jsonl", str(source)).data
    assert again["imported"] == 0  # an import repeated changes nothing
    assert len(memory_files(ws.root)) == 2


def test_an_import_checks_its_lines_against_each_other(ws: Workspace, tmp_path: Path) -> None:
    """The same lesson three times (spacing aside) and a rewording of it are one file; a close line is
    written and proposed for a merge with the earlier one; the store has no index (nothing to ask)."""
    lines = [
        {"body": DEPLOYS},
        {"body": MIGRATIONS},
        {"body": "  " + DEPLOYS.replace(" ", "  ")},
        {"body": DEPLOYS.rstrip(".")},
        {"body": DEPLOYS_AGAIN},
        {"body": MIGRATIONS_AGAIN},
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    first = ee(ws.root, "import", "jsonl", str(source))
    assert first.code == 0, first.err
    report = first.data
    assert report["imported"] == 3
    deploys, migrations, close = report["ids"]
    assert [(d["line"], d["duplicate_of"]) for d in report["duplicates"]] == [
        (3, deploys),
        (4, deploys),
        (5, deploys),
    ]
    assert "near-identical" in report["duplicates"][2]["reason"]
    assert "line 1 of this file" in report["duplicates"][2]["reason"]
    assert len(memory_files(ws.root)) == 3
    merges = ee(ws.root, "curate", "list", "--type", "merge").data["candidates"]
    assert [c["id"] for c in merges] == report["merge_candidates"]
    assert [c["subjects"] for c in merges] == [sorted([migrations, close])]
    assert "by embedding" in merges[0]["reason"]
    assert not (ws.root / ".ee" / "index" / "manifest.json").exists()  # the lines alone were embedded

    head = git(ws.root, "rev-parse", "HEAD")
    again = ee(ws.root, "import", "jsonl", str(source))
    assert again.code == 0, again.err
    assert again.data["imported"] == 0  # an import repeated changes nothing
    assert again.data["merge_candidates"] == []
    assert len(again.data["duplicates"]) == len(lines)
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert len(memory_files(ws.root)) == 3


def hand_write(ws: Workspace, name: str, body: str, created: str) -> None:
    path = ws.root / "memories" / f"{name}.md"
    path.write_text(f"---\nid: {name}\ncreated: {created}\n---\n{body}\n", encoding="utf-8")
    git(ws.root, "add", str(path))
    git(ws.root, "commit", "-q", "-m", f"add {name}")


def test_a_scan_proposes_near_identical_memories_as_duplicates(ws: Workspace) -> None:
    hand_write(ws, "deploys-a", DEPLOYS, "2026-01-01T00:00:00Z")
    hand_write(ws, "deploys-b", DEPLOYS_AGAIN, "2026-02-01T00:00:00Z")
    hand_write(ws, "migrations-a", MIGRATIONS, "2026-01-01T00:00:00Z")
    hand_write(ws, "migrations-b", MIGRATIONS_AGAIN, "2026-02-01T00:00:00Z")
    hand_write(ws, "scroll-d", "CTRL-D Scroll window Downwards in the buffer.", "2026-01-01T00:00:00Z")
    hand_write(ws, "scroll-u", "CTRL-U Scroll window Upwards in the buffer.", "2026-02-01T00:00:00Z")
    data = ee(ws.root, "curate", "scan").data
    found = {tuple(c["subjects"]): c for c in data["candidates"]}
    assert found[("deploys-a", "deploys-b")]["type"] == "duplicate"
    assert "embedding" in found[("deploys-a", "deploys-b")]["reason"]
    assert found[("migrations-a", "migrations-b")]["type"] == "merge"
    assert not any("scroll-d" in subjects for subjects in found)
    accepted = ee(ws.root, "curate", "accept", found[("deploys-a", "deploys-b")]["id"])
    assert accepted.code == 0, accepted.err
    assert not (ws.root / "memories" / "deploys-b.md").exists()  # the newer one forgotten, in a commit
    assert git(ws.root, "status", "--porcelain").strip() == ""
