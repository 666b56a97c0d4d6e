"""ee why: standing, feedback, links both ways, validity, injection, history, and the rank for a query."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ee.workspace import Workspace
from tests.conftest import git, make_repo, run_cli
from tests.memory_corpus import shared_store

TASK = "fix the CI cache with the curl repair script"


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return shared_store(tmp_path_factory)


def why(store: dict[str, Any], *args: str) -> dict[str, Any]:
    res = run_cli("--workspace", str(store["root"]), "why", *args, "--json")
    assert res.code == 0, res.err
    data: dict[str, Any] = res.data
    return data


def test_why_in_general_reports_standing_links_validity_and_history(store: dict[str, Any]) -> None:
    record = next(
        r for r in store["records"] if any(link["type"] == "supports" for link in r.get("links", []))
    )
    target = next(link["to"] for link in record["links"] if link["type"] == "supports")
    data = why(store, record["id"])
    st = data["standing"]
    assert st["trust"] == record["trust"]
    assert st["prior_confidence"] == (0.85 if record["trust"] == "human_explicit" else 0.5)
    assert st["effective_confidence"] == st["prior_confidence"]  # no feedback yet
    assert st["events"] == []
    assert 0 < st["freshness"] <= 1
    assert st["half_life_days"] in (1, 30, 90, 180, 365)
    assert set(st["multipliers"]) == {"confidence", "freshness", "trust", "validity"}
    assert {"type": "supports", "to": target, "exists": True}.items() <= data["links"]["outbound"][0].items()
    assert data["history"]["versions"] == 1
    assert data["history"]["first"]["op"] == "import"
    assert data["history"]["first"] == data["history"]["last"]
    assert data["query"] is None
    inbound = why(store, target)["links"]["inbound"]
    assert {"type": "supports", "from": record["id"]} in [
        {k: v for k, v in i.items() if k != "title"} for i in inbound
    ]


def test_why_for_a_query_matches_search_and_the_pack(store: dict[str, Any]) -> None:
    hits = run_cli("--workspace", str(store["root"]), "search", TASK, "--json").data["hits"]
    top = hits[0]
    data = why(store, top["id"], "--query", TASK)
    query = data["query"]
    assert query["retrieved"] is True
    assert query["rank"] == 1
    assert query["score"] == top["score"]
    assert query["components"] == top["components"]
    assert query["factors"] == top["factors"]
    assert "next_above" not in query
    pack = run_cli("--workspace", str(store["root"]), "context", TASK, "--json").data
    packed = {i["id"]: s["name"] for s in pack["sections"] for i in s["items"]}
    omitted = {o["id"]: o["reason"] for o in pack["omitted"]}
    for hit in hits[:8]:
        decision = why(store, hit["id"], "--query", TASK)["query"]["pack"]
        if hit["id"] in packed:
            assert decision["selected"] is True
            assert decision["section"] == packed[hit["id"]]
        else:
            assert decision["selected"] is False
            assert decision["reason"] == omitted.get(hit["id"], "beyond the candidate pool")
    second = why(store, hits[1]["id"], "--query", TASK)["query"]
    assert second["next_above"] == {"id": top["id"], "score": top["score"]}


def test_why_shows_the_quarantine(store: dict[str, Any]) -> None:
    data = why(store, store["quarantined"], "--query", TASK)
    assert data["standing"]["quarantined"] is True
    assert data["standing"]["posture"] == "advisory"
    assert data["injection"]["flagged"] is True
    assert "ignore_instructions" in data["injection"]["signals"]
    assert data["query"]["pack"] == {
        "profile": "balanced",
        "selected": False,
        "section": "procedural",
        "reason": "quarantined",
    }
    assert data["standing"]["multipliers"]["trust"] == 0.5


def test_why_shows_validity(store: dict[str, Any]) -> None:
    data = why(store, store["expired"])
    assert data["standing"]["valid"] is False
    assert data["standing"]["validity"].startswith("expired at 2020-01-01")
    assert data["standing"]["valid_to"] == "2020-01-01T00:00:00Z"


def test_why_a_memory_the_query_did_not_retrieve(store: dict[str, Any]) -> None:
    data = why(store, store["expired"], "--query", "zzzqx")
    assert data["query"]["retrieved"] is False
    assert data["query"]["rank"] is None
    assert "no query term matches" in data["query"]["reason"]


def test_why_a_memory_below_the_relevance_floor_in_both_views(store: dict[str, Any]) -> None:
    """Retrieved but not relevant enough: no rank, no score. The human view crashed on the missing score
    (exit 1, "internal error"); it says why, with the relevance evidence --explain shows."""
    task = "how do I season a cast iron pan before frying eggs"
    res = run_cli("--workspace", str(store["root"]), "search", task, "--explain", "--json")
    assert res.code == 0, res.err
    nearest = [near for entry in res.data["omitted"] for near in entry.get("nearest", [])]
    assert nearest, res.data["omitted"]
    below = nearest[0]
    query = why(store, below["id"], "--query", task)["query"]
    assert query["retrieved"] is True
    assert query["rank"] is None
    assert query["relevance"]["value"] == below["relevance"]
    human = run_cli("--workspace", str(store["root"]), "why", below["id"], "--query", task, "--human")
    assert human.code == 0, human.err
    assert f"relevance {below['relevance']:.4f} is below the floor 0.8" in human.out
    assert f"coverage {below['explanation']['coverage']:.2f}" in human.out
    assert "pack (balanced): omitted, below_relevance_floor" in human.out


def test_why_unknown_memory_and_human_view(store: dict[str, Any]) -> None:
    res = run_cli("--workspace", str(store["root"]), "why", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB", "--json")
    assert res.code == 7
    assert "ee search" in res.json["error"]["repair"]
    human = run_cli(
        "--workspace", str(store["root"]), "why", store["quarantined"], "--query", TASK, "--human"
    ).out
    assert "QUARANTINED" in human
    assert "pack (balanced): omitted, quarantined" in human
    assert "history      1 version(s)" in human


# ------------------------------------------------------------------ finding the memory through the index


def _why_in(ws: Workspace, memory_id: str) -> dict[str, Any]:
    res = run_cli("--workspace", str(ws.root), "why", memory_id, "--json")
    assert res.code == 0, res.err
    data: dict[str, Any] = res.data
    return data


def test_why_finds_a_memory_renamed_on_disk_and_follows_a_committed_rename(ws: Workspace) -> None:
    memory = ws.remember("the staging cluster restarts at midnight", kind="fact")
    _why_in(ws, memory.id)  # an index exists, with the old path
    old = ws.root / memory.path
    new = ws.root / "memories" / "ops" / "staging-restarts.md"
    new.parent.mkdir()
    old.rename(new)
    data = _why_in(ws, memory.id)
    assert data["path"] == "memories/ops/staging-restarts.md"
    assert data["history"]["note"] == "not committed yet"  # that path has no history yet
    git(ws.root, "add", "-A", "memories")
    git(ws.root, "commit", "-q", "-m", "move the staging note")
    history = _why_in(ws, memory.id)["history"]
    assert history["versions"] == 2
    assert history["first"]["op"] == "remember"
    assert history["last"]["changed"] == ["path"]


def test_why_finds_a_memory_added_by_hand(ws: Workspace) -> None:
    ws.remember("an earlier memory, so that the index exists", kind="fact")
    run_cli("--workspace", str(ws.root), "search", "earlier", "--json")
    memory_id = "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YC"
    (ws.root / "memories" / "by-hand.md").write_text(
        f"---\nid: {memory_id}\nlevel: semantic\nkind: fact\n---\nwritten in an editor\n", encoding="utf-8"
    )
    data = _why_in(ws, memory_id)
    assert data["path"] == "memories/by-hand.md"
    assert data["title"] == "written in an editor"
    assert data["history"] == {"versions": 0, "first": None, "last": None, "note": "not committed yet"}


def test_why_and_history_of_an_unknown_or_malformed_id(ws: Workspace) -> None:
    ws.remember("something to be indexed", kind="fact")
    unknown = run_cli("--workspace", str(ws.root), "why", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YD", "--json")
    assert unknown.code == 7
    assert unknown.json["error"]["message"] == "no memory mem_01JE4ZP6Q3V8R2K7M5T9W1X3YD in the store"
    malformed = run_cli("--workspace", str(ws.root), "why", "../x", "--json")
    assert malformed.code == 2
    assert "is not a memory id" in malformed.json["error"]["message"]
    history = run_cli("--workspace", str(ws.root), "memory", "history", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YD")
    assert history.code == 7


def test_history_uses_the_index_and_falls_back_to_the_files_without_one(ws: Workspace) -> None:
    from ee.ops.history import history, indexed_path

    memory = ws.remember("history is looked up through the index", kind="fact")
    assert indexed_path(ws, memory.id) is None  # no index yet: nothing is built for a look-up
    assert not (ws.root / ".ee" / "index" / "manifest.json").exists()
    assert [v.op for v in history(ws, memory.id)] == ["remember"]  # found by reading the files
    run_cli("--workspace", str(ws.root), "search", "history", "--json")  # builds the index
    assert indexed_path(ws, memory.id) == memory.path
    moved = "memories/moved-by-hand.md"
    (ws.root / memory.path).rename(ws.root / moved)
    assert indexed_path(ws, memory.id) == moved  # the index caught up first
    # The file at the indexed path now holds another memory: the look-up does not trust the index.
    other = "---\nid: mem_01JE4ZP6Q3V8R2K7M5T9W1X3YE\nlevel: semantic\nkind: fact\n---\nanother\n"
    from ee.index.view import open_index

    open_index(ws)
    (ws.root / moved).write_text(other, encoding="utf-8")
    os.utime(ws.root / moved, ns=(1, 1))  # (whatever its stamp, the id is read from the file)
    assert indexed_path(ws, memory.id) is None


def test_why_and_history_in_a_repository_without_a_commit(tmp_path: Path) -> None:
    """Before the first commit `git log` fails: `ee why` stopped with a storage error quoting git, and
    `ee memory history` too, instead of saying the memory is not committed yet."""
    root = make_repo(tmp_path / "fresh", {"memories/release.md": "Release on Tuesdays.\n"}, commit=False)
    res = run_cli("--workspace", str(root), "why", "release", "--json")
    assert res.code == 0, res.out + res.err
    assert res.data["history"] == {"versions": 0, "first": None, "last": None, "note": "not committed yet"}
    res = run_cli("--workspace", str(root), "memory", "history", "release", "--json")
    assert res.code == 7, res.out + res.err
    assert res.json["error"]["message"] == "memory release has no committed history"


def test_the_memory_block_shows_the_known_keys_a_hit_does_not_in_their_order(store: dict[str, Any]) -> None:
    """A full hit's ``memory`` block (search ``--fields full``, why's rank for a query): ee's frontmatter
    keys in the order ee writes them, minus those the hit shows itself, then extra and the effective
    confidence — the JSON order the contract pins, derived from ``ee.values.KNOWN_KEYS``."""
    hits = run_cli("--workspace", str(store["root"]), "search", TASK, "--fields", "full", "--json").data[
        "hits"
    ]
    assert list(hits[0]["memory"]) == [
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
        "extra",
        "effective_confidence",
    ]


def test_why_of_a_memory_in_an_unreadable_file_says_a_file_could_not_be_read(tmp_path: Path) -> None:
    """A hand-written file with a wrong level is left out of the index: `ee why` on its id said only
    "no memory X in the store" (look it up with ee search), while `ee memory show` said a file could not be
    read and `ee doctor` names it. Both now give the same repair."""
    files = {
        "memories/python-311-min.md": "---\nkind: decision\nlevel: procedure\n---\nMinimum Python is 3.11.\n",
        "memories/release.md": "Release on Tuesdays.\n",
    }
    root = make_repo(tmp_path / "broken", files)
    Workspace.init(root)
    why_res = run_cli("--workspace", str(root), "why", "python-311-min", "--json")
    show = run_cli("--workspace", str(root), "memory", "show", "python-311-min", "--json")
    assert why_res.code == show.code == 7, why_res.out + show.out
    assert "1 memory file(s) could not be read: `ee doctor` names them" in why_res.json["error"]["repair"]
    assert why_res.json["error"]["repair"] == show.json["error"]["repair"]
