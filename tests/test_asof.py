"""asOf over git history: the files as they were, by time and by commit-ish."""

from __future__ import annotations

import json
import marshal
from pathlib import Path
from typing import Any

import pytest

from ee.index.segment import LAYOUT
from ee.workspace import Workspace
from tests.conftest import git, run_cli

TIMES = [
    "2026-01-01T10:00:00Z",
    "2026-02-01T10:00:00Z",
    "2026-03-01T10:00:00Z",
    "2026-04-01T10:00:00Z",
    "2026-05-01T10:00:00Z",
]


def at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)


def edit_body(root: Path, rel: str, new_body: str) -> None:
    path = root / rel
    head, _, _ = path.read_text().rpartition("---\n")
    path.write_text(head + "---\n" + new_body + "\n")
    git(root, "add", rel)
    git(root, "commit", "-q", "-m", f"edit {rel}")


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """One memory created, edited three times and deleted, each step a month apart."""
    root = tmp_path / "ws"
    at(monkeypatch, "2025-12-01T10:00:00Z")
    assert run_cli("init", str(root)).code == 0
    at(monkeypatch, TIMES[0])
    res = run_cli(
        "-W", str(root), "remember", "The build server is alpha.example", "--kind", "fact", "--json"
    )
    memory_id, rel = res.data["id"], res.data["path"]
    for when, text in zip(
        TIMES[1:4],
        [
            "The build server is bravo.example",
            "The build server is charlie.example",
            "The build server is delta.example",
        ],
        strict=True,
    ):
        at(monkeypatch, when)
        edit_body(root, rel, text)
    at(monkeypatch, TIMES[4])
    assert run_cli("-W", str(root), "memory", "forget", memory_id).code == 0
    at(monkeypatch, "2026-06-01T10:00:00Z")
    run_cli("-W", str(root), "remember", "A later memory about the build cache", "--json")
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    return {"root": root, "id": memory_id}


def search_as_of(root: Path, when: str, text: str = "build server") -> Any:
    res = run_cli("-W", str(root), "search", text, "--as-of", when, "--mode", "lexical", "--json")
    assert res.code == 0, res.out + res.err
    return res.json


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("2026-01-15T00:00:00Z", "alpha"),
        ("2026-02-15T00:00:00Z", "bravo"),
        ("2026-03-15T00:00:00Z", "charlie"),
        ("2026-04-15T00:00:00Z", "delta"),
        ("2026-05-15T00:00:00Z", None),
    ],
)
def test_five_points_in_time(history: dict[str, Any], when: str, expected: str | None) -> None:
    doc = search_as_of(history["root"], when)
    bodies = {h["id"]: h["body"] for h in doc["data"]["hits"]}
    if expected is None:
        assert history["id"] not in bodies
    else:
        assert f"{expected}.example" in bodies[history["id"]]
        hit = next(h for h in doc["data"]["hits"] if h["id"] == history["id"])
        assert hit["provenance"]["commit"] == doc["data"]["query"]["as_of"]["commit"]


def test_memories_created_later_are_excluded(history: dict[str, Any]) -> None:
    doc = search_as_of(history["root"], "2026-02-15T00:00:00Z", "build cache later")
    assert all("later memory" not in h["body"] for h in doc["data"]["hits"])
    now = run_cli("-W", str(history["root"]), "search", "build cache later", "--json").json
    assert any("later memory" in h["body"] for h in now["data"]["hits"])


def test_as_of_a_commit_ish(history: dict[str, Any]) -> None:
    # HEAD~3: the forget is HEAD~1, delta HEAD~2, charlie HEAD~3
    doc = search_as_of(history["root"], "HEAD~3")
    hit = next(h for h in doc["data"]["hits"] if h["id"] == history["id"])
    assert "charlie.example" in hit["body"]
    sha = git(history["root"], "rev-parse", "HEAD~3").strip()
    assert doc["data"]["query"]["as_of"]["commit"] == sha


def test_memory_show_as_of(history: dict[str, Any]) -> None:
    res = run_cli(
        "-W",
        str(history["root"]),
        "memory",
        "show",
        history["id"],
        "--as-of",
        "2026-02-15T00:00:00Z",
        "--json",
    )
    assert res.code == 0
    assert "bravo.example" in res.data["body"]
    gone = run_cli(
        "-W",
        str(history["root"]),
        "memory",
        "show",
        history["id"],
        "--as-of",
        "2026-05-15T00:00:00Z",
        "--json",
    )
    assert gone.code == 7


def test_before_the_first_commit_is_empty_with_a_degradation(history: dict[str, Any]) -> None:
    doc = search_as_of(history["root"], "2001-01-01T00:00:00Z")
    assert doc["data"]["hits"] == []
    assert any(d["code"] == "as_of_before_history" for d in doc["degraded"])


def test_invalid_commit_ish_is_a_clear_error(history: dict[str, Any]) -> None:
    res = run_cli("-W", str(history["root"]), "search", "x", "--as-of", "no-such-branch", "--json")
    assert res.code == 7
    res = run_cli("-W", str(history["root"]), "search", "x", "--as-of", "-rf", "--json")
    assert res.code == 2


@pytest.mark.parametrize("spec", ["HEAD~2..HEAD", "HEAD~2...HEAD", "main..HEAD", "^HEAD", "HEAD..HEAD"])
@pytest.mark.parametrize("command", [["search", "build server"], ["memory", "show", "ID"]])
def test_a_range_is_a_usage_error_not_a_traceback(
    history: dict[str, Any], spec: str, command: list[str]
) -> None:
    """A range names several commits (or none): git printed its ends and ee read them as a date, or ran
    `git show` on them (a traceback, or a storage error quoting git)."""
    args = [history["id"] if arg == "ID" else arg for arg in command]
    res = run_cli("-W", str(history["root"]), *args, "--as-of", spec, "--json")
    assert res.code == 2, res.out + res.err
    assert res.json["error"]["message"] == f"{spec!r} is a range, not one commit"
    assert "Traceback" not in res.err


def test_as_of_reuses_its_cached_view(history: dict[str, Any]) -> None:
    first = search_as_of(history["root"], "HEAD~2")
    views = list((history["root"] / ".ee" / "index" / "asof").iterdir())
    second = search_as_of(history["root"], "HEAD~2")
    assert first == second
    assert list((history["root"] / ".ee" / "index" / "asof").iterdir()) == views


def test_an_as_of_view_in_an_older_layout_is_built_again(history: dict[str, Any]) -> None:
    """A view saved by an older ee (no layout in its DONE file, whole-list records) is not read."""
    first = search_as_of(history["root"], "HEAD~2")
    (view,) = (history["root"] / ".ee" / "index" / "asof").iterdir()
    for name in ("records.bin", "records.offsets.npy", "ids.marshal"):
        (view / name).unlink()
    (view / "records.marshal").write_bytes(b"\x00old")
    (view / "DONE").write_text(json.dumps({"size": 1}))
    assert search_as_of(history["root"], "HEAD~2") == first
    assert json.loads((view / "DONE").read_text())["layout"] == LAYOUT
    assert (view / "records.bin").exists()


def _search_both(root: Path, text: str) -> tuple[Any, Any]:
    """(the HEAD index's answer, the answer asOf HEAD): the same files, so the same answer."""
    now = run_cli("-W", str(root), "search", text, "--mode", "lexical", "--json")
    then = run_cli("-W", str(root), "search", text, "--mode", "lexical", "--as-of", "HEAD", "--json")
    assert now.code == 0, now.out + now.err
    assert then.code == 0, then.out + then.err
    return now.json, then.json


def test_as_of_keeps_the_file_of_a_duplicate_id_the_index_keeps(ws: Workspace) -> None:
    """Of two files with one id, asOf kept the first in path order while the index (and a fresh workspace
    at that commit) keep the one named as ee names that id's file; and asOf did not report the other."""
    root = ws.root
    memory_id = "mem_01AAAAAAAAAAAAAAAAAAAAAAAA"
    (root / "memories" / "a-copy.md").write_text(f"---\nid: {memory_id}\n---\nThe copy of the rule\n")
    (root / "memories" / "rule-aaaaaaaa.md").write_text(f"---\nid: {memory_id}\n---\nThe rule itself\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a copy")
    now, then = _search_both(root, "rule")
    assert [h["path"] for h in now["data"]["hits"]] == ["memories/rule-aaaaaaaa.md"]
    assert [h["path"] for h in then["data"]["hits"]] == ["memories/rule-aaaaaaaa.md"]
    assert [d for d in then["degraded"] if d["code"] == "duplicate_id"] == [
        d for d in now["degraded"] if d["code"] == "duplicate_id"
    ]
    assert any("memories/a-copy.md" in d["message"] for d in then["degraded"])
    shown = run_cli("-W", str(root), "memory", "show", memory_id, "--as-of", "HEAD", "--json")
    assert shown.data["body"] == "The rule itself"
    # A view an older ee saved (its state without this layout: the other file kept) is built again.
    (view,) = (root / ".ee" / "index" / "asof").iterdir()
    state = marshal.loads((view / "state.marshal").read_bytes())
    (view / "state.marshal").write_bytes(marshal.dumps({k: v for k, v in state.items() if k != "layout"}))
    assert _search_both(root, "rule")[1] == then
    assert marshal.loads((view / "state.marshal").read_bytes())["layout"] == state["layout"]


def test_as_of_reports_the_files_it_leaves_out(ws: Workspace) -> None:
    """A file that does not parse at that commit is named with its line, as the HEAD index names it."""
    root = ws.root
    (root / "memories" / "good.md").write_text("A good rule about the release\n")
    (root / "memories" / "bad.md").write_text("---\nlevel: nonsense\n---\nA broken rule about the release\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one good, one broken")
    now, then = _search_both(root, "release")
    assert [h["path"] for h in then["data"]["hits"]] == [h["path"] for h in now["data"]["hits"]]
    invalid = [d for d in then["degraded"] if d["code"] == "memory_invalid"]
    assert invalid == [d for d in now["degraded"] if d["code"] == "memory_invalid"]
    assert invalid
    assert invalid[0]["message"].startswith("memories/bad.md:2: ")
