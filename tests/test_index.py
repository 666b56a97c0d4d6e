"""The index without a watcher: every open_index sees the store as it is (real files, real git)."""

from __future__ import annotations

import json
import marshal
import os
import random
import shutil
import time
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import git, run_cli

from ee.index import derive as derive_module
from ee.index import freshness, generations, lexical
from ee.index.freshness import INDEX_DIR, read_manifest
from ee.index.lexical import Vocabulary
from ee.index.segment import Entry, Generation, split_strings
from ee.index.tokenize import tokenize
from ee.index.transformer import embed_pending
from ee.index.view import open_index, rebuild, status
from ee.workspace import Workspace

QUERIES = [
    "alpha",
    "rollback window",
    "flaky upload test",
    "cargo clippy",
    "snake_case_helper",
    "bravo delta",
]


def write(ws: Workspace, rel: str, body: str, memory_id: str | None = None, tags: str = "") -> Path:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    head = f"---\nid: {memory_id}\nkind: fact\ntags: [{tags}]\n---\n" if memory_id else ""
    path.write_text(head + body + "\n", encoding="utf-8")
    return path


def commit(ws: Workspace, message: str = "change") -> None:
    git(ws.root, "add", "-A", "memories")
    git(ws.root, "commit", "-q", "--allow-empty", "-m", message)


def scores(view: Any, text: str) -> dict[str, float]:
    """BM25 score of every memory matching ``text``, by id."""
    values = view.gen.lexical.scores(tokenize(text))
    return {view.gen.records[i]["id"]: round(float(values[i]), 5) for i in np.flatnonzero(values)}


def picture(view: Any) -> dict[str, Any]:
    """What a full rebuild must reproduce: every record and body (by id) and the scores of several queries.

    The columns kept beside the packed records (ids, links) must say what the records say."""
    gen = view.gen
    assert gen.ids == [r["id"] for r in gen.records]
    assert gen.links == [(p, r["id"], r["links"]) for p, r in enumerate(gen.records) if r.get("links")]
    records = {r["id"]: r for r in gen.records}
    bodies = {gen.ids[p]: gen.body(p) for p in range(gen.size)}
    return {
        "records": dict(sorted(records.items())),
        "bodies": dict(sorted(bodies.items())),
        "scores": {q: scores(view, q) for q in QUERIES},
    }


def codes(view: Any) -> list[str]:
    return [d["code"] for d in view.degraded]


# ------------------------------------------------------------------------------------------ changes


def test_edit_is_seen_by_the_next_open(ws: Workspace) -> None:
    write(ws, "memories/a.md", "alpha rollback window", "mem_a")
    write(ws, "memories/b.md", "bravo", "mem_b")
    first = open_index(ws)
    assert first.report is not None
    assert sorted(first.report.new) == ["memories/a.md", "memories/b.md"]
    before = scores(first, "alpha")
    assert set(before) == {"mem_a"}

    write(ws, "memories/a.md", "alpha alpha rollback", "mem_a")
    view = open_index(ws)
    assert view.report is not None
    assert view.report.modified == ["memories/a.md"]
    assert scores(view, "alpha")["mem_a"] > before["mem_a"]  # tf 2 in a shorter document
    assert scores(view, "window") == {}

    again = open_index(ws)
    assert again.report is None  # fresh: nothing read, nothing written


def test_an_events_file_of_invalid_lines_is_reported_once_across_updates(ws: Workspace) -> None:
    # Such a file gives no events, only problems: later updates that leave it alone must keep its
    # problems as they were, not read it again and report each line twice.
    write(ws, "memories/a.md", "alpha", "mem_a")
    events = ws.root / "memories/.events"
    events.mkdir(parents=True, exist_ok=True)
    lines = '{"memory": "mem_a", "signal": "helpful"}\nnot json\n'
    (events / "mem_a.jsonl").write_text(lines, encoding="utf-8")
    first = open_index(ws)
    invalid = [p for p in first.state["problems"] if p["code"] == "event_invalid"]
    assert [p["line"] for p in invalid] == [1, 2]
    for i in range(3):
        write(ws, "memories/b.md", f"bravo {i}", "mem_b")  # an update that does not touch the events file
        view = open_index(ws)
        assert view.report is not None
        assert view.report.changed
        assert [p for p in view.state["problems"] if p["code"] == "event_invalid"] == invalid
        assert "mem_a" not in view.state.get("events", {})


def test_delete_is_gone(ws: Workspace) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    write(ws, "memories/b.md", "alpha bravo", "mem_b")
    open_index(ws)
    (ws.root / "memories/a.md").unlink()
    view = open_index(ws)
    assert view.report is not None
    assert view.report.deleted == ["memories/a.md"]
    assert set(scores(view, "alpha")) == {"mem_b"}
    assert [r["id"] for r in view.gen.records] == ["mem_b"]


@pytest.mark.parametrize("how", ["mv", "git mv"])
def test_rename_keeps_the_id_and_is_reported_as_moved(ws: Workspace, how: str) -> None:
    write(ws, "memories/a.md", "alpha rollback", "mem_a")
    commit(ws)
    open_index(ws)
    (ws.root / "memories/sub").mkdir()
    if how == "mv":
        os.rename(ws.root / "memories/a.md", ws.root / "memories/sub/renamed.md")
    else:
        git(ws.root, "mv", "memories/a.md", "memories/sub/renamed.md")
        git(ws.root, "commit", "-q", "-m", "rename")
    view = open_index(ws)
    assert view.report is not None
    assert view.report.moved == [("memories/a.md", "memories/sub/renamed.md")]
    assert view.report.new == view.report.deleted == []
    (record,) = view.gen.records
    assert (record["id"], record["path"]) == ("mem_a", "memories/sub/renamed.md")
    assert record["committed"] is (how == "git mv")


def test_hand_written_file_without_frontmatter_gets_an_id_from_its_path(ws: Workspace) -> None:
    write(ws, "memories/notes/deploy.md", "always deploy on tuesday")
    view = open_index(ws)
    (record,) = view.gen.records
    assert record["path"] == "memories/notes/deploy.md"
    assert record["id"]
    assert scores(view, "tuesday") == {record["id"]: scores(view, "tuesday")[record["id"]]}


def test_checkout_of_an_older_branch_matches_that_branch(ws: Workspace) -> None:
    write(ws, "memories/a.md", "alpha on main", "mem_a")
    commit(ws, "main state")
    main = git(ws.root, "branch", "--show-current").strip()
    git(ws.root, "checkout", "-q", "-b", "feature")
    write(ws, "memories/a.md", "alpha rewritten on feature with bravo", "mem_a")
    write(ws, "memories/b.md", "bravo only on feature", "mem_b")
    commit(ws, "feature state")
    on_feature = open_index(ws)
    assert set(scores(on_feature, "bravo")) == {"mem_a", "mem_b"}

    git(ws.root, "checkout", "-q", main)
    view = open_index(ws)
    assert view.report is not None
    assert view.report.head_changed
    assert view.report.deleted == ["memories/b.md"]
    assert view.report.modified == ["memories/a.md"]
    assert scores(view, "bravo") == {}
    assert all(r["committed"] for r in view.gen.records)
    incremental = picture(view)
    rebuild(ws)
    assert picture(open_index(ws)) == incremental


def test_pull_of_a_hundred_files(ws: Workspace, tmp_path: Path) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    commit(ws)
    open_index(ws)
    branch = git(ws.root, "branch", "--show-current").strip()
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(ws.root), str(other))
    rng = random.Random(3)
    for i in range(100):
        words = " ".join(
            rng.choice(["alpha", "bravo", "delta", "rollback", "window", "flaky"]) for _ in range(8)
        )
        path = other / f"memories/pulled/m{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nid: mem_p{i:03d}\n---\n{words} number{i}\n", encoding="utf-8")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "a hundred memories")
    git(ws.root, "pull", "-q", "--ff-only", str(other), branch)

    view = open_index(ws)
    assert view.report is not None
    assert len(view.report.new) == 100
    assert view.report.head_changed
    assert view.gen.size == 101
    assert all(r["committed"] for r in view.gen.records)
    incremental = picture(view)
    rebuild(ws)
    assert picture(open_index(ws)) == incremental


def test_touch_without_change_reindexes_nothing(ws: Workspace) -> None:
    path = write(ws, "memories/a.md", "alpha", "mem_a")
    first = open_index(ws)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    view = open_index(ws)
    assert view.report is None  # read again, same blob: new stamps, same generation
    assert view.manifest["generation"] == first.manifest["generation"]
    assert view.gen.records == first.gen.records


def test_scan_stats_the_files_the_store_lists(tmp_path: Path) -> None:
    """The freshness scan sees exactly the store's memory files (ee.store.walk.memory_files) with their
    lstat stamps: nested folders, hidden names skipped, symlinks stamped as links (dangling ones too),
    a folder named like a memory walked into, a FIFO stamped without being opened."""
    from ee.store.walk import memory_files

    base = tmp_path / "memories"
    for folder in ("a/b", ".hidden", "dir.md", "c", ".events"):
        (base / folder).mkdir(parents=True)
    for rel in ("x.md", ".y.md", "a/z.md", "a/b/w.md", ".hidden/h.md", "dir.md/in.md", "c/notes.txt"):
        (base / rel).write_text("body\n", encoding="utf-8")
    (base / ".events" / "mem_a.jsonl").write_text("", encoding="utf-8")
    os.symlink("../x.md", base / "c" / "link.md")
    os.symlink("/nonexistent/file.md", base / "c" / "dangling.md")
    os.symlink("../a", base / "c" / "folder-link")
    os.mkfifo(base / "c" / "fifo.md")

    found = freshness.scan(tmp_path)
    expected = dict(memory_files(tmp_path))
    assert sorted(found.paths) == sorted(expected)
    assert found.files == {rel: freshness.stamp(st) for rel, st in expected.items()}
    assert list(found.events) == ["memories/.events/mem_a.jsonl"]
    assert freshness.scan(tmp_path / "nowhere").paths == []


def test_a_process_opens_a_generation_once_and_still_sees_every_change(ws: Workspace) -> None:
    """A generation opened for queries is kept by the process (it never changes once saved): the next
    query, after the same freshness check, answers from it without reading it again; an edit still makes
    a new generation, built from the files on disk, not from the kept query-only copy."""
    write(ws, "memories/a.md", "alpha rollback", "mem_a")
    write(ws, "memories/b.md", "bravo window", "mem_b")
    deadline = time.monotonic() + 30
    while open_index(ws).manifest["racy"]:  # until the stamps are old enough to be trusted
        assert time.monotonic() < deadline
        time.sleep(0.02)
    generations._WARM.clear()  # as a new process: nothing in memory
    first = open_index(ws)
    assert first.report is None
    again = open_index(ws)
    assert again.gen is first.gen
    assert again.state is first.state
    assert (
        generations.warm(ws.root / INDEX_DIR / first.manifest["generation"]) is None
    )  # query-only: no update base

    write(ws, "memories/b.md", "bravo window alpha", "mem_b")
    write(ws, "memories/c.md", "charlie alpha", "mem_c")
    (ws.root / "memories/a.md").unlink()
    changed = open_index(ws)
    assert changed.report is not None
    assert changed.report.modified == ["memories/b.md"]
    assert changed.report.new == ["memories/c.md"]
    assert changed.manifest["generation"] != first.manifest["generation"]
    assert set(scores(changed, "alpha")) == {"mem_b", "mem_c"}
    expected = picture(changed)
    rebuild(ws)
    assert picture(open_index(ws)) == expected


def test_a_stamp_in_whole_seconds_stays_racy_for_its_whole_tick() -> None:
    """On a file system that keeps whole seconds (ext4 with 128-byte inodes, ext3, HFS+; FAT keeps two),
    a write at 10.0 s and a same-size rewrite at 10.9 s both stamp 10 s: an update that stat'ed the file
    at 10.4 s must read it again next time. It was trusted (the window was 50 ms before the stat), and
    that rewrite was never seen: ``ee search`` answered with the old text until the file changed again.
    (Reproduced on a loop-mounted ``mkfs.ext4 -I 128``.)"""
    second = 1_000_000_000
    stamps = array(
        "q", [10 * second, 10 * second, 42, 7, 10 * second + 300_000_123, 10 * second + 300_000_123, 42, 8]
    )
    found = freshness.Scan(["memories/coarse.md", "memories/fine.md"], stamps, {})
    assert freshness.racy_files(found, 10 * second + 400_000_000) == ["memories/coarse.md"]
    assert freshness.racy_files(found, 11 * second + 900_000_000) == ["memories/coarse.md"]
    assert freshness.racy_files(found, 12 * second + 100_000_000) == []
    assert freshness.racy_files(found, 10 * second + 330_000_000) == [
        "memories/coarse.md",
        "memories/fine.md",
    ]


def test_a_file_changed_within_one_clock_tick_of_its_stat_is_read_again(ws: Workspace) -> None:
    """A coarse file-system clock can leave a same-size rewrite with the very stamp the index saw."""
    path = write(ws, "memories/a.md", "alpha", "mem_a")
    view = open_index(ws)
    assert view.manifest["racy"] == ["memories/a.md"]  # written a moment before its stat
    write(ws, "memories/a.md", "bravo", "mem_a")  # same size
    stamps_file = ws.root / INDEX_DIR / view.manifest["generation"] / freshness.STAMPS
    stamps = marshal.loads(stamps_file.read_bytes())
    assert split_strings(stamps["paths"]) == ["memories/a.md"]
    # What a coarse clock would have left: the new text under the stamp the index saved.
    stamps["stamps"] = np.asarray(freshness.stamp(path.stat()), dtype=np.int64).tobytes()
    stamps_file.write_bytes(marshal.dumps(stamps))
    generations._WARM.clear()
    again = open_index(ws)
    assert again.report is not None
    assert again.report.modified == ["memories/a.md"]
    assert set(scores(again, "bravo")) == {"mem_a"}

    deadline = time.monotonic() + 30
    while open_index(ws).manifest["racy"]:  # once the stamps are old enough, they are trusted again
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert open_index(ws).report is None
    assert status(ws)["state"] == "ready"


def test_incremental_updates_equal_a_full_rebuild(ws: Workspace) -> None:
    rng = random.Random(7)
    words = [
        "alpha",
        "bravo",
        "delta",
        "rollback",
        "window",
        "flaky",
        "upload",
        "test",
        "cargo",
        "clippy",
        "snake_case_helper",
        "echo",
    ]
    live: dict[str, str] = {}
    for step in range(40):
        action = rng.choice(["add", "add", "edit", "edit", "delete", "rename", "commit"]) if live else "add"
        if action == "add":
            rel = f"memories/{rng.choice(['', 'sub/'])}m{step}.md"
            live[rel] = f"mem_s{step}"
            write(
                ws, rel, " ".join(rng.choices(words, k=rng.randint(1, 12))), live[rel], rng.choice(["", "ci"])
            )
        elif action == "edit":
            rel = rng.choice(sorted(live))
            write(ws, rel, " ".join(rng.choices(words, k=rng.randint(1, 12))) + f" v{step}", live[rel])
        elif action == "delete":
            rel = rng.choice(sorted(live))
            (ws.root / rel).unlink()
            del live[rel]
        elif action == "rename":
            rel = rng.choice(sorted(live))
            new = f"memories/r{step}.md"
            os.rename(ws.root / rel, ws.root / new)
            live[new] = live.pop(rel)
        else:
            commit(ws, f"step {step}")
        if rng.random() < 0.6:
            open_index(ws)
    incremental = picture(open_index(ws))
    assert set(incremental["records"]) == set(live.values())
    report, _ = rebuild(ws)
    assert report.rebuilt
    assert picture(open_index(ws)) == incremental


def test_an_updated_index_answers_byte_for_byte_as_a_rebuilt_one(ws: Workspace) -> None:
    """Same files, same query, same JSON, whatever order updates left the index's rows in. A memory's
    cosine came out a last digit apart (semantic_norm, fused) when BLAS put its row in a final partial
    block in one index and not in the other."""
    topics = [
        "deploys go out on Tuesdays after the release train",
        "the flaky upload test needs a retry",
        "cargo clippy runs with pedantic lints",
        "rollback window is thirty minutes",
        "snake_case_helper names are enforced in review",
    ]
    for n in range(51):  # (not a multiple of BLAS's block of rows)
        write(ws, f"memories/m{n:02}.md", f"{topics[n % 5]}, note {n}", f"mem_t{n:02}")
    commit(ws)
    open_index(ws)
    for n in range(0, 51, 4):  # each edited file's row moves to the end of the updated index
        write(ws, f"memories/m{n:02}.md", f"{topics[n % 5]}, note {n} (revised)", f"mem_t{n:02}")

    def answers() -> list[str]:
        return [
            run_cli("-W", str(ws.root), "search", text, "--limit", "50", "--min-relevance", "0", "--json").out
            for text in QUERIES + [" ".join(topic.split()[i : i + 2]) for topic in topics for i in (0, 3)]
        ]

    updated = answers()  # (the static arm: the transformer's vectors are not computed yet)
    assert '"semantic_arm": "static"' in updated[0]
    view = open_index(ws)
    assert not view.report  # (answered by the updated index, not a rebuilt one)
    embed_pending(view)  # the updated generation's transformer vectors, as the warm server computes them
    updated_transformer = answers()
    assert '"semantic_arm": "transformer"' in updated_transformer[0]
    report, _ = rebuild(ws)
    assert report.rebuilt
    assert answers() == updated_transformer
    (ws.root / ".ee" / "config.toml").write_text("[model]\ntransformer = false\n", encoding="utf-8")
    assert answers() == updated


def test_a_large_batch_is_derived_in_worker_processes_with_the_same_result(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(30):
        write(ws, f"memories/m{i}.md", f"alpha rollback number{i} snake_case_helper", f"mem_{i:02d}")
    (ws.root / "memories/broken.md").write_text("---\nid: [half\n---\nbody\n", encoding="utf-8")
    alone = picture(open_index(ws))
    alone_problems = status(ws)["problems"]
    shutil.rmtree(ws.root / ".ee/cache")
    monkeypatch.setattr(derive_module, "PARALLEL_MIN", 5)
    monkeypatch.setattr(derive_module, "_CHUNK", 4)
    in_workers = derive_module._derive_in_workers
    calls: list[int] = []

    def counted(items: Any, report: Any) -> Any:
        derived = in_workers(items, report)  # (a failure here would fall back to this process)
        calls.append(len(derived))
        return derived

    monkeypatch.setattr(derive_module, "_derive_in_workers", counted)
    seen: list[tuple[str, int, int]] = []
    report, _ = rebuild(ws, progress=lambda *step: seen.append(step))
    assert calls == [31]  # the worker processes derived all of them
    assert len(report.new) == 31  # the broken file is reported as new too
    assert picture(open_index(ws)) == alone
    assert status(ws)["problems"] == alone_problems
    assert [s[1:] for s in seen if s[0] == "embed"][-1] == (30, 30)
    assert seen[-1] == ("transformer", 30, 30)  # then the transformer arm's vectors (ee.index.transformer)
    assert [s[1:] for s in seen if s[0] == "parse"][-1] == (31, 31)


def test_vocabulary_is_compacted_after_many_edits() -> None:
    def entry(name: str, tokens: list[str]) -> Entry:
        return Entry(name, "blob", False, {"id": name}, "", tokens, None)

    gen = Generation().updated([], [entry("keep", ["stable", "words"])], None)
    for i in range(3000):  # an editor autosaving a growing word: a new token every time
        gen = gen.updated([1] if gen.size == 2 else [], [entry("draft", ["stable", f"word{i}"])], None)
    assert len(gen.vocab) < 1100
    assert set(gen.lexical.vocab) >= {"stable", "words", "word2999"}
    fresh = Generation().updated(
        [], [entry("keep", ["stable", "words"]), entry("draft", ["stable", "word2999"])], None
    )
    for query in (["stable"], ["word2999"], ["words", "stable"]):
        assert np.allclose(np.sort(gen.lexical.scores(query)), np.sort(fresh.lexical.scores(query)))


def test_saved_vocabulary_is_looked_up_without_building_a_dict(tmp_path: Path) -> None:
    """The vocabulary is saved sorted and bisected when read: every token finds its column (tokens that
    share a prefix, non-ASCII, a lone surrogate, a NUL), an unknown one finds none; an update is exact."""

    def entry(name: str, tokens: list[str]) -> Entry:
        return Entry(f"memories/{name}.md", f"blob-{name}", True, {"id": name}, "", tokens, None)

    words = ["a", "ab", "abc", "b", "é", "ée", "✓", "\udcff", "x\x00y", "zz", "", "🙂"]
    gen = Generation().updated([], [entry(f"m{i}", words[i:] + words[:2]) for i in range(len(words))], None)
    gen.save(tmp_path / "gen")
    loaded = Generation.load(tmp_path / "gen")
    vocab = loaded.lexical.vocab
    assert isinstance(vocab, Vocabulary)
    assert {token: vocab.get(token) for token in gen.vocab} == dict(gen.vocab)
    for missing in ("", "aa", "abcd", "e", "x", "\x00", "zzz", "🙂🙂"):
        assert missing not in gen.vocab or vocab.get(missing) == gen.vocab[missing]
        if missing not in gen.vocab:
            assert vocab.get(missing) is None
            assert missing not in vocab
    assert dict(vocab) == dict(gen.vocab)
    assert len(vocab) == len(gen.vocab)
    queries = [["a"], ["ab", "é"], ["\udcff", "x\x00y"], ["nope"], words]
    expected = [gen.lexical.scores(q).tolist() for q in queries]
    assert [loaded.lexical.scores(q).tolist() for q in queries] == expected

    later = Generation.load(tmp_path / "gen", for_update=True).updated(
        [0], [entry("m99", ["ab", "new"])], None
    )
    fresh = Generation().updated(
        [],
        [entry(f"m{i}", words[i:] + words[:2]) for i in range(1, len(words))] + [entry("m99", ["ab", "new"])],
        None,
    )
    for q in (["ab"], ["new"], ["a", "zz"]):
        assert sorted(later.lexical.scores(q).tolist()) == sorted(fresh.lexical.scores(q).tolist())


def test_packed_records_read_one_by_one_or_all_at_once_are_the_same(tmp_path: Path) -> None:
    """A query decodes the records it ranks; a filter decodes them all in one pass: the same records."""

    def entry(name: str, tokens: list[str], committed: bool) -> Entry:
        record = {
            "id": name,
            "tags": ["ci", name],
            "links": [["supersedes", "m0"]] if name == "m3" else [],
            "confidence": 0.5,
            "extra": {"team": "core", "n": len(tokens)},
            "title": "é ✓ \udcff",
        }
        body = f"body of {name} ✓"
        return Entry(f"memories/{name}.md", f"blob-{name}", committed, record, body, tokens, None)

    gen = Generation().updated([], [entry(f"m{i}", ["w", f"t{i}"], i % 2 == 0) for i in range(6)], None)
    gen = gen.updated([1, 4], [entry("m9", ["late"], True)], None)
    gen.save(tmp_path / "gen")
    one_by_one = Generation.load(tmp_path / "gen")
    singles = [one_by_one.records[p] for p in reversed(range(one_by_one.size))][::-1]
    at_once = Generation.load(tmp_path / "gen").records.all()
    assert singles == at_once == list(gen.records)
    assert [r["id"] for r in at_once] == one_by_one.ids == ["m0", "m2", "m3", "m5", "m9"]
    assert [r["committed"] for r in at_once] == [True, True, False, False, True]
    assert one_by_one.links == [(2, "m3", [["supersedes", "m0"]])]
    names = ("m0", "m2", "m3", "m5", "m9")
    assert [one_by_one.body(p) for p in range(5)] == [f"body of {n} ✓" for n in names]


def test_workspace_in_a_sub_folder_of_the_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    ws, _ = Workspace.init(repo / "notes")
    write(ws, "memories/a.md", "alpha in a sub folder", "mem_a")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memories in notes/")
    view = open_index(ws)
    (record,) = view.gen.records
    assert record["committed"] is True
    assert view.state["provenance"]["memories/a.md"][3] == "memories in notes/"


# ------------------------------------------------------------------------------------------ damage


def _generation(ws: Workspace) -> Path:
    manifest = read_manifest(ws.root)
    assert manifest is not None
    return ws.root / INDEX_DIR / manifest["generation"]


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:40])


def _chop(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-5])


def _drop_a_blob_id(path: Path) -> None:
    record = marshal.loads(path.read_bytes())
    record["blobs"] = record["blobs"].split(b"\0", 1)[1]
    path.write_bytes(marshal.dumps(record))


DAMAGE = {
    "truncated score matrix": lambda ws: _truncate(_generation(ws) / "bm25s" / "data.csc.index.npy"),
    "truncated vectors": lambda ws: _truncate(_generation(ws) / "vectors.npy"),
    "truncated records": lambda ws: _truncate(_generation(ws) / "records.bin"),
    "truncated record offsets": lambda ws: _truncate(_generation(ws) / "records.offsets.npy"),
    "truncated bodies": lambda ws: _chop(_generation(ws) / "bodies.bin"),
    "truncated ids": lambda ws: _chop(_generation(ws) / "ids.marshal"),
    "truncated committed column": lambda ws: _truncate(_generation(ws) / "committed.npy"),
    "garbage stamps": lambda ws: (_generation(ws) / "stamps.marshal").write_bytes(b"\x00garbage"),
    "stamps missing a blob id": lambda ws: _drop_a_blob_id(_generation(ws) / "stamps.marshal"),
    "garbage vocabulary": lambda ws: (_generation(ws) / "bm25s" / lexical.VOCAB).write_bytes(b"\x00bad"),
    "truncated vocabulary": lambda ws: _chop(_generation(ws) / "bm25s" / lexical.VOCAB),
    "truncated head state": lambda ws: _truncate(_generation(ws) / "head.marshal"),
    "garbage manifest": lambda ws: (ws.root / INDEX_DIR / "manifest.json").write_text("{not json"),
    "generation folder deleted": lambda ws: shutil.rmtree(_generation(ws)),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_corrupt_index_files_are_detected_and_rebuilt(ws: Workspace, damage: str) -> None:
    write(ws, "memories/a.md", "alpha rollback", "mem_a")
    write(ws, "memories/b.md", "bravo window", "mem_b")
    expected = picture(open_index(ws))
    DAMAGE[damage](ws)
    generations._WARM.clear()  # as another process would: this one keeps what it wrote in memory
    assert status(ws)["state"] == "corrupt"
    view = open_index(ws)
    assert "index_repaired" in codes(view), view.degraded
    repaired = next(d for d in view.degraded if d["code"] == "index_repaired")
    assert repaired["repair"] == "ee index rebuild"
    assert picture(view) == expected
    assert status(ws)["state"] == "ready"
    assert open_index(ws).degraded == []  # reported once, when it was repaired


def test_a_manifest_that_is_a_fifo_is_corrupt_not_a_hang(ws: Workspace) -> None:
    """Reading the manifest waited for a FIFO's writer for ever, in every command; it is damage like any
    other now: the index is rebuilt, and the FIFO replaced."""
    from conftest import run_ee_process

    write(ws, "memories/a.md", "alpha rollback", "mem_a")
    expected = picture(open_index(ws))
    manifest = ws.root / INDEX_DIR / "manifest.json"
    manifest.unlink()
    os.mkfifo(manifest)
    proc = run_ee_process("search", "alpha", "--json", cwd=ws.root, env={"EE_NO_SERVER": "1"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "index_repaired" in proc.stdout
    assert manifest.is_file()
    generations._WARM.clear()
    assert picture(open_index(ws)) == expected


def test_an_index_in_the_previous_layout_is_rebuilt_without_fuss(ws: Workspace) -> None:
    """An index written by an older ee (format 6: whole-list marshal files, stamps as a dict) is not read:
    the next query builds the current layout from the files."""
    write(ws, "memories/a.md", "alpha rollback", "mem_a")
    write(ws, "memories/b.md", "bravo window", "mem_b")
    expected = picture(open_index(ws))
    folder = _generation(ws)
    # What format 6 left on disk: records.marshal and stamps.marshal as whole dicts, no packed files.
    records = [dict(r) for r in open_index(ws).gen.records]
    for name in (
        "records.bin",
        "records.offsets.npy",
        "bodies.bin",
        "bodies.offsets.npy",
        "ids.marshal",
        "links.marshal",
        "columns.marshal",
        "committed.npy",
    ):
        (folder / name).unlink()
    (folder / "records.marshal").write_bytes(marshal.dumps(records))
    (folder / "DONE").write_text(json.dumps({"size": len(records)}))
    (folder / freshness.STAMPS).write_bytes(
        marshal.dumps({"files": {}, "blobs": {}, "events": {}, "racy": []})
    )
    manifest_path = ws.root / INDEX_DIR / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps(manifest | {"format": 6}))
    generations._WARM.clear()
    assert read_manifest(ws.root) is None
    assert status(ws)["state"] == "missing"
    view = open_index(ws)
    assert view.report is not None
    assert view.report.rebuilt
    assert view.report.reason == "full build"
    assert view.degraded == []
    assert picture(view) == expected
    assert json.loads(manifest_path.read_text())["format"] == freshness.FORMAT
    assert status(ws)["state"] == "ready"

    # A generation folder in the old layout under a current manifest (a half-upgraded index) is damage:
    # detected and rebuilt too.
    (_generation(ws) / "DONE").write_text(json.dumps({"size": 2}))
    generations._WARM.clear()
    assert status(ws)["state"] == "corrupt"
    assert picture(open_index(ws)) == expected
    assert status(ws)["state"] == "ready"


def test_damage_in_update_only_arrays_is_repaired_by_the_next_update(ws: Workspace) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    open_index(ws)
    _truncate(_generation(ws) / "tf.npy")  # read only when updating
    generations._WARM.clear()
    assert status(ws)["state"] == "corrupt"
    write(ws, "memories/b.md", "bravo alpha", "mem_b")
    view = open_index(ws)
    assert "index_repaired" in codes(view)
    assert set(scores(view, "alpha")) == {"mem_a", "mem_b"}


# ------------------------------------------------------------------------------------------ degraded


def test_missing_model_gives_lexical_results_and_a_degraded_entry(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-model"
    empty.mkdir()
    monkeypatch.setenv("EE_MODEL", str(empty))
    write(ws, "memories/a.md", "alpha rollback window", "mem_a")
    view = open_index(ws)
    assert not view.semantic_ready
    assert view.gen.vectors is None
    (problem,) = [d for d in view.degraded if d["code"] == "semantic_unavailable"]
    assert problem["repair"]
    assert str(empty) in problem["message"]
    assert set(scores(view, "rollback")) == {"mem_a"}
    assert status(ws)["degraded"][0]["code"] == "semantic_unavailable"

    result = run_cli("--workspace", str(ws.root), "search", "rollback", "--json")
    assert result.code == 0, result.err
    doc = result.json
    assert [h["id"] for h in doc["data"]["hits"]] == ["mem_a"]
    assert "semantic_unavailable" in [d["code"] for d in doc["degraded"]]


def test_broken_model_file_is_reported_on_every_query(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken-model"
    shutil.copytree(Path(__file__).resolve().parent.parent / "ee/models/minilm-l6-v2-tl256", broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setenv("EE_MODEL", str(broken))
    write(ws, "memories/a.md", "alpha", "mem_a")
    assert "semantic_unavailable" in codes(open_index(ws))
    again = open_index(ws)
    assert again.report is None
    assert "semantic_unavailable" in codes(again)
    assert not again.semantic_ready
    assert "semantic_unavailable" in [d["code"] for d in status(ws)["degraded"]]


def test_another_model_rebuilds_the_index(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest records the model; a different one (a new shipped model, $EE_MODEL) rebuilds."""
    write(ws, "memories/a.md", "alpha", "mem_a")
    first = open_index(ws)
    assert first.semantic_ready
    other = tmp_path / "other-model"
    shutil.copytree(Path(__file__).resolve().parent.parent / "ee/models/minilm-l6-v2-tl256", other)
    monkeypatch.setenv("EE_MODEL", str(other))
    view = open_index(ws)
    assert view.report is not None
    assert view.report.rebuilt
    assert view.report.reason == "the embedding model changed"
    assert view.manifest["model_id"] != first.manifest["model_id"]
    assert view.semantic_ready
    assert open_index(ws).report is None  # and then it is fresh


def test_hand_edited_secret_is_masked_and_reported(ws: Workspace) -> None:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    write(ws, "memories/a.md", f"deploy with {token} from the vault", "mem_a")
    view = open_index(ws)
    body = view.gen.body(0)
    assert token not in body
    assert "[REDACTED:github_token]" in body
    assert not any(token.lower() in t for t in view.gen.vocab)
    (problem,) = [d for d in view.degraded if d["code"] == "secret_in_file"]
    assert "memories/a.md" in problem["message"]
    assert problem["repair"]
    assert token not in json.dumps(view.state, default=dict)  # (tables of the state are mappings)


def test_broken_yaml_is_reported_and_skipped_then_indexed_when_fixed(ws: Workspace) -> None:
    write(ws, "memories/good.md", "alpha good", "mem_good")
    broken = ws.root / "memories/broken.md"
    broken.write_text("---\nid: mem_broken\ntags: [ci\n---\nalpha half-saved\n", encoding="utf-8")
    view = open_index(ws)
    assert [r["id"] for r in view.gen.records] == ["mem_good"]
    (problem,) = [d for d in view.degraded if d["code"] == "memory_invalid"]
    assert problem["message"].startswith("memories/broken.md:3")
    assert "not indexed" in problem["message"]
    assert status(ws)["problems"][0]["path"] == "memories/broken.md"

    write(ws, "memories/broken.md", "alpha fixed", "mem_broken")
    fixed = open_index(ws)
    assert set(scores(fixed, "alpha")) == {"mem_good", "mem_broken"}
    assert "memory_invalid" not in codes(fixed)


def _limit(ws: Workspace, max_bytes: int | None) -> None:
    config = ws.root / ".ee" / "config.toml"
    config.write_text("" if max_bytes is None else f"[store]\nmax_body_bytes = {max_bytes}\n")


def _skipped(view: Any) -> list[str]:
    return sorted(d["message"].split(":")[0] for d in view.degraded if "more than the limit" in d["message"])


def test_a_changed_size_limit_is_picked_up_both_ways(ws: Workspace) -> None:
    # One file skipped alone once left the saved blob ids unreadable (every later query failed), and a
    # raised limit was never seen: the skipped files stayed skipped until `ee index rebuild`.
    write(ws, "memories/a.md", "alpha rollback window", "mem_a")
    commit(ws)
    open_index(ws)
    _limit(ws, 10)
    view = open_index(ws)
    assert (view.gen.size, _skipped(view)) == (0, ["memories/a.md"])
    assert status(ws)["state"] == "ready"
    _limit(ws, None)
    write(ws, "memories/b.md", "bravo delta", "mem_b")
    view = open_index(ws)
    assert sorted(view.gen.ids) == ["mem_a", "mem_b"]
    assert _skipped(view) == []
    _limit(ws, 55)  # lowered: b (50 bytes) stays, a (60 bytes) leaves the index
    view = open_index(ws)
    assert (view.gen.ids, _skipped(view)) == (["mem_b"], ["memories/a.md"])
    assert "mem_a" not in scores(view, "alpha rollback")
    _limit(ws, 10)
    assert _skipped(open_index(ws)) == ["memories/a.md", "memories/b.md"]
    _limit(ws, 100_000)  # raised past every file: all of them are read again
    incremental = picture(view := open_index(ws))
    assert (sorted(view.gen.ids), _skipped(view)) == (["mem_a", "mem_b"], [])
    assert status(ws)["state"] == "ready"
    rebuild(ws)
    assert picture(open_index(ws)) == incremental


def test_the_search_command_follows_a_changed_size_limit(ws: Workspace) -> None:
    ws.remember("A memory about compilers.")
    _limit(ws, 10)
    assert run_cli("--workspace", str(ws.root), "search", "compilers", "--json").data["hits"] == []
    _limit(ws, None)
    ws.remember("A new one about linkers.")
    for word in ("compilers", "linkers"):
        result = run_cli("--workspace", str(ws.root), "search", word, "--json")
        assert result.code == 0, result.err
        assert len(result.data["hits"]) == 1, word


def test_a_file_grown_past_the_limit_leaves_the_index(ws: Workspace) -> None:
    write(ws, "memories/a.md", "zebra crossing", "mem_a")
    assert "mem_a" in scores(open_index(ws), "zebra")
    write(ws, "memories/a.md", "zebra " * 50_000, "mem_a")
    view = open_index(ws)
    assert (view.gen.size, _skipped(view)) == (0, ["memories/a.md"])
    assert view.report is not None
    assert view.report.modified == ["memories/a.md"]
    write(ws, "memories/a.md", "zebra again", "mem_a")
    assert "mem_a" in scores(open_index(ws), "zebra")


# ------------------------------------------------------------------------------------------ CLI


def test_index_status_states(ws: Workspace) -> None:
    def state() -> str:
        result = run_cli("--workspace", str(ws.root), "index", "status", "--json")
        assert result.code == 0, result.err
        data = result.data
        assert set(data) >= {
            "state",
            "files",
            "memories",
            "generation",
            "model",
            "semantic",
            "problems",
            "repair",
            "watcher",
        }
        return str(data["state"])

    write(ws, "memories/a.md", "alpha", "mem_a")
    assert state() == "missing"
    open_index(ws)
    assert state() == "ready"
    write(ws, "memories/a.md", "alpha edited", "mem_a")
    assert state() == "stale"
    (ws.root / INDEX_DIR / "manifest.json").write_text("garbage")
    assert state() == "corrupt"
    human = run_cli("--workspace", str(ws.root), "index", "status", "--human")
    assert "index: corrupt" in human.out
    assert "repair: ee index rebuild" in human.out
    assert "watcher: not running" in human.out


def test_index_rebuild_reports_the_sync(ws: Workspace) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    write(ws, "memories/b.md", "bravo", "mem_b")
    result = run_cli("--workspace", str(ws.root), "index", "rebuild", "--json")
    assert result.code == 0, result.err
    data = result.data
    assert sorted(data["new"]) == ["memories/a.md", "memories/b.md"]
    assert data["rebuilt"] is True
    assert set(data) >= {"modified", "deleted", "moved", "seconds"}
    assert result.err == ""  # no progress bar when stderr is not a terminal
    human = run_cli("--workspace", str(ws.root), "index", "rebuild", "--human")
    assert human.out.startswith("rebuilt: 2 new, 0 modified, 0 deleted, 0 moved in ")


def test_index_commands_outside_a_workspace_exit_with_the_configuration_code(tmp_path: Path) -> None:
    result = run_cli("index", "status", "--json", cwd=tmp_path)
    assert result.code == 3
    assert result.json["error"]["code"] == "workspace_not_found"


def test_index_rebuild_shows_a_progress_bar_on_a_terminal(ws: Workspace) -> None:
    import pty
    import subprocess
    import sys

    write(ws, "memories/a.md", "alpha", "mem_a")
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ee", "--workspace", str(ws.root), "index", "rebuild", "--json"],
            stderr=follower,
            stdout=subprocess.PIPE,
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["data"]["new"] == ["memories/a.md"]
    assert b"parsing" in shown
    assert b"embedding" in shown


def test_index_writers_never_make_a_moved_workspace_again(ws: Workspace, tmp_path: Path) -> None:
    """ee watch may still update the index of a workspace that was just moved away: its index lock and
    derived cache make .ee/ folders only inside a workspace folder that exists."""
    from ee.index.cache import DerivedCache

    assert run_cli("--workspace", str(ws.root), "search", "anything", "--json").code == 0
    old = ws.root
    old.rename(tmp_path / "moved")
    with pytest.raises(FileNotFoundError), freshness.index_lock(old):
        pass
    with pytest.raises(FileNotFoundError):
        DerivedCache(old / freshness.CACHE_PATH)
    assert not old.exists()
    # Inside an existing workspace both still make what is missing.
    shutil.rmtree(tmp_path / "moved" / ".ee" / "index")
    shutil.rmtree(tmp_path / "moved" / ".ee" / "cache")
    with freshness.index_lock(tmp_path / "moved"):
        pass
    DerivedCache(tmp_path / "moved" / freshness.CACHE_PATH).close()
    assert (tmp_path / "moved" / INDEX_DIR / "lock").exists()
    assert (tmp_path / "moved" / freshness.CACHE_PATH).exists()


def test_a_process_touching_many_workspaces_keeps_a_bounded_number_of_files_open(tmp_path: Path) -> None:
    # Each derived cache holds the database, its WAL and shared memory open: a process that searches many
    # workspaces in turn (the per-user server, a script) must let the least recently used ones go.
    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    spaces = [Workspace.init(tmp_path / f"w{n}")[0] for n in range(generations.WARM_WORKSPACES * 2 + 2)]
    for space in spaces[: generations.WARM_WORKSPACES]:
        open_index(space)
    filled = open_files()
    for space in spaces[generations.WARM_WORKSPACES :]:
        open_index(space)
    assert open_files() <= filled
    assert len(generations._CACHES) == generations.WARM_WORKSPACES
