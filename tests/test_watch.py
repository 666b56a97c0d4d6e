"""``ee watch`` with a real watchdog observer in a real process: the index follows the files by itself.

Each check waits for the watcher (polling ``status`` with a deadline, which never updates anything), then
reads the index it wrote without catching up in this process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import git

from ee.index.tokenize import tokenize
from ee.index.view import open_index, rebuild, status
from ee.serve import client, protocol
from ee.serve.watch import MAX_DIRTY, Dirty, Relevance
from ee.workspace import Workspace

DEADLINE = 60.0  # generous: the machine may be busy; nothing here asserts on time


class Watcher:
    """A running ``ee watch`` process and its log."""

    def __init__(self, ws: Workspace, *args: str) -> None:
        self.ws = ws
        self.log_path = ws.root.parent / f"watch-{time.monotonic_ns()}.log"
        self.log_file = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ee", "--workspace", str(ws.root), "watch", *args],
            stdout=subprocess.DEVNULL,
            stderr=self.log_file,
            env=dict(os.environ),
        )
        wait_for(lambda: "watching " in self.log, "the watcher to start", self)

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=DEADLINE)
        self.log_file.close()
        return code


def wait_for(condition: Callable[[], bool], what: str, watcher: Watcher | None = None) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if watcher is not None and watcher.proc.poll() is not None:
            pytest.fail(
                f"the watcher died (code {watcher.proc.returncode}) waiting for {what}:\n{watcher.log}"
            )
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}" + (f":\n{watcher.log}" if watcher else ""))
        time.sleep(0.05)


def indexed(watcher: Watcher) -> Any:
    """The index once the watcher has caught up with the files (read here without catching up)."""
    wait_for(lambda: status(watcher.ws)["state"] == "ready", "the watcher to catch up", watcher)
    return open_index(watcher.ws, catch_up=False)


@pytest.fixture
def watch(ws: Workspace) -> Iterator[Callable[..., Watcher]]:
    started: list[Watcher] = []

    def start(*args: str) -> Watcher:
        started.append(Watcher(ws, *args))
        return started[-1]

    yield start
    for watcher in started:
        watcher.stop()


def write(ws: Workspace, rel: str, body: str, memory_id: str) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {memory_id}\n---\n{body}\n", encoding="utf-8")


def scores(view: Any, text: str) -> dict[str, float]:
    values = view.gen.lexical.scores(tokenize(text))
    return {view.gen.records[i]["id"]: round(float(values[i]), 5) for i in np.flatnonzero(values)}


def ids(view: Any) -> dict[str, str]:
    return {r["id"]: r["path"] for r in view.gen.records}


# ------------------------------------------------------------------------------------------ following files


def test_edits_deletes_and_renames_are_followed(ws: Workspace, watch: Callable[..., Watcher]) -> None:
    write(ws, "memories/a.md", "alpha rollback", "mem_a")
    write(ws, "memories/b.md", "bravo", "mem_b")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "two memories")
    watcher = watch("--no-serve")
    assert ids(indexed(watcher)) == {"mem_a": "memories/a.md", "mem_b": "memories/b.md"}

    write(ws, "memories/a.md", "alpha alpha edited", "mem_a")
    view = indexed(watcher)
    assert set(scores(view, "edited")) == {"mem_a"}
    assert scores(view, "rollback") == {}

    (ws.root / "memories/b.md").unlink()
    assert ids(indexed(watcher)) == {"mem_a": "memories/a.md"}

    (ws.root / "memories/deep").mkdir()
    os.rename(ws.root / "memories/a.md", ws.root / "memories/deep/a-renamed.md")
    assert ids(indexed(watcher)) == {"mem_a": "memories/deep/a-renamed.md"}

    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "edits")
    git(ws.root, "mv", "memories/deep/a-renamed.md", "memories/a-again.md")
    git(ws.root, "commit", "-q", "-m", "git mv")
    view = indexed(watcher)
    assert ids(view) == {"mem_a": "memories/a-again.md"}
    assert view.gen.records[0]["committed"] is True
    assert "indexed" in watcher.log
    assert watcher.stop() == 0


def test_editor_save_patterns(ws: Workspace, watch: Callable[..., Watcher]) -> None:
    write(ws, "memories/note.md", "alpha first version", "mem_note")
    watcher = watch("--no-serve")
    folder = ws.root / "memories"
    indexed(watcher)

    # vim (backupcopy=no): probe file 4913, swap file, rename to backup~, write anew, drop the backup
    (folder / "4913").write_text("")
    (folder / "4913").unlink()
    (folder / ".note.md.swp").write_bytes(b"\x00swap")
    os.rename(folder / "note.md", folder / "note.md~")
    write(ws, "memories/note.md", "bravo second version", "mem_note")
    (folder / "note.md~").unlink()
    (folder / ".note.md.swp").unlink()
    view = indexed(watcher)
    assert set(scores(view, "bravo")) == {"mem_note"}
    assert scores(view, "alpha") == {}

    # write to a temporary file, then rename over the original (most editors, ee itself)
    tmp = folder / "note.md.tmp8812"
    tmp.write_text("---\nid: mem_note\n---\ncharlie third version\n", encoding="utf-8")
    os.replace(tmp, folder / "note.md")
    view = indexed(watcher)
    assert set(scores(view, "charlie")) == {"mem_note"}
    assert ids(view) == {"mem_note": "memories/note.md"}

    # emacs: a lock symlink and an autosave file beside the memory, then an in-place save
    os.symlink("user@host.1234", folder / ".#note.md")
    (folder / "#note.md#").write_text("autosave")
    write(ws, "memories/note.md", "delta fourth version", "mem_note")
    os.unlink(folder / ".#note.md")
    (folder / "#note.md#").unlink()
    view = indexed(watcher)
    assert set(scores(view, "delta")) == {"mem_note"}
    assert ids(view) == {"mem_note": "memories/note.md"}
    assert "problem" not in watcher.log


def test_commit_and_checkout_trigger_a_catch_up(ws: Workspace, watch: Callable[..., Watcher]) -> None:
    write(ws, "memories/a.md", "alpha on main", "mem_a")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "main")
    main = git(ws.root, "branch", "--show-current").strip()
    git(ws.root, "checkout", "-q", "-b", "feature")
    watcher = watch("--no-serve")

    write(ws, "memories/b.md", "bravo on feature", "mem_b")
    view = indexed(watcher)
    assert [r["committed"] for r in view.gen.records if r["id"] == "mem_b"] == [False]
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "feature")  # only HEAD moves: the watcher must notice
    wait_for(lambda: all(r["committed"] for r in indexed(watcher).gen.records), "the commit", watcher)

    git(ws.root, "checkout", "-q", main)
    view = indexed(watcher)
    assert ids(view) == {"mem_a": "memories/a.md"}
    assert scores(view, "bravo") == {}


def test_a_pull_of_a_hundred_files_equals_a_full_rebuild(
    ws: Workspace, tmp_path: Path, watch: Callable[..., Watcher]
) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "start")
    branch = git(ws.root, "branch", "--show-current").strip()
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(ws.root), str(other))
    for i in range(100):
        write(
            Workspace(other),
            f"memories/pulled/m{i:03d}.md",
            f"alpha rollback window number{i}",
            f"mem_p{i:03d}",
        )
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "a hundred memories")
    watcher = watch("--no-serve")
    indexed(watcher)

    git(ws.root, "pull", "-q", "--ff-only", str(other), branch)
    view = indexed(watcher)
    assert view.gen.size == 101
    assert all(r["committed"] for r in view.gen.records)
    picture = {q: scores(view, q) for q in ("alpha", "rollback window", "number42")}
    records = sorted(view.gen.records, key=lambda r: r["id"])
    watcher.stop()
    rebuild(ws)
    fresh = open_index(ws)
    assert {q: scores(fresh, q) for q in picture} == picture
    assert sorted(fresh.gen.records, key=lambda r: r["id"]) == records


def test_events_files_are_followed(ws: Workspace, watch: Callable[..., Watcher]) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    watcher = watch("--no-serve")
    indexed(watcher)
    events = ws.root / "memories/.events/mem_a.jsonl"
    line = '{"id": "ev1", "memory": "mem_a", "signal": "helpful", "at": "2026-12-01T10:00:00Z"}\n'
    events.write_text(line, encoding="utf-8")
    view = indexed(watcher)
    assert [e["id"] for e in view.state["events"]["mem_a"]] == ["ev1"]


def test_a_file_broken_mid_edit_is_reported_and_the_watcher_survives(
    ws: Workspace, watch: Callable[..., Watcher]
) -> None:
    write(ws, "memories/a.md", "alpha", "mem_a")
    watcher = watch("--no-serve")
    indexed(watcher)
    (ws.root / "memories/a.md").write_text(
        "---\nid: mem_a\ntags: [half\n---\nalpha saved\n", encoding="utf-8"
    )
    view = indexed(watcher)
    assert view.gen.size == 0
    wait_for(lambda: "problem: memories/a.md:3" in watcher.log, "the problem in the log", watcher)

    write(ws, "memories/a.md", "alpha repaired", "mem_a")
    view = indexed(watcher)
    assert set(scores(view, "repaired")) == {"mem_a"}
    wait_for(lambda: "fixed: memories/a.md:3" in watcher.log, "the fix in the log", watcher)
    assert watcher.proc.poll() is None


# ------------------------------------------------------------------------------------------ process


def test_a_second_server_refuses_with_the_conflict_code(ws: Workspace, watch: Callable[..., Watcher]) -> None:
    first = watch()
    second = subprocess.run(
        [sys.executable, "-m", "ee", "--workspace", str(ws.root), "watch"],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert second.returncode == 8
    assert f"ee's server is already running (pid {first.proc.pid})" in second.stderr
    assert "repair:" in second.stderr
    assert json.loads(second.stdout)["error"]["code"] == "conflict"
    assert client.server_pid() == first.proc.pid


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_cleanly_and_removes_socket_and_pid(
    ws: Workspace, watch: Callable[..., Watcher], sig: int
) -> None:
    watcher = watch()
    folder = protocol.runtime_dir()
    wait_for(lambda: (folder / protocol.SOCKET).exists(), "the socket", watcher)
    assert (folder / protocol.PID_FILE).read_text().strip() == str(watcher.proc.pid)
    assert watcher.stop(sig) == 0
    assert not (folder / protocol.SOCKET).exists()
    assert not (folder / protocol.PID_FILE).exists()
    assert watcher.log.rstrip().endswith("stopped")
    assert "Traceback" not in watcher.log


def test_watching_without_serving_listens_nowhere(ws: Workspace, watch: Callable[..., Watcher]) -> None:
    watcher = watch("--no-serve")
    assert not (protocol.runtime_dir() / protocol.SOCKET).exists()
    assert client.server_pid() is None
    assert watcher.stop() == 0


# ------------------------------------------------------------------------------------------ pieces


def test_relevance_keeps_memories_events_and_refs_only(tmp_path: Path) -> None:
    root, git_dir = tmp_path / "ws", tmp_path / "ws/.git"
    relevant = Relevance(root, [git_dir])

    def rel(path: str, is_dir: bool = False) -> bool:
        return relevant(str(tmp_path / path), is_dir)

    assert rel("ws/memories/a.md")
    assert rel("ws/memories/sub/deeper/b.md")
    assert rel("ws/memories/sub", is_dir=True)
    assert rel("ws/memories/.events/mem_a.jsonl")
    assert rel("ws/.git/HEAD")
    assert rel("ws/.git/packed-refs")
    assert rel("ws/.git/refs/heads/main")
    for noise in (
        "ws/memories/4913",
        "ws/memories/a.md~",
        "ws/memories/.a.md.swp",
        "ws/memories/.#a.md",
        "ws/memories/#a.md#",
        "ws/memories/a.md.tmp123",
        "ws/memories/.hidden/a.md",
        "ws/memories/.events/.tmp.jsonl",
        "ws/memories/.events/notes.txt",
        "ws/.git/index",
        "ws/.git/HEAD.lock",
        "ws/.git/refs/heads/main.lock",
        "ws/.ee/index/manifest.json",
        "ws/README.md",
    ):
        assert not rel(noise), noise


def test_dirty_set_stays_bounded() -> None:
    dirty = Dirty()
    for i in range(MAX_DIRTY * 5):
        dirty.add(f"/ws/memories/m{i}.md")
    due = dirty.due(quiet=0.15, max_wait=2.0)
    assert due is not None
    assert due <= 0.15
    paths, dropped = dirty.take()
    assert len(paths) == MAX_DIRTY
    assert dropped == MAX_DIRTY * 4
    assert dirty.due(0.15, 2.0) is None


def test_a_closed_watcher_leaves_nothing_behind(ws: Workspace) -> None:
    """The server opens and closes watchers for as long as it runs: a closed one leaves no logging handler
    (which kept the whole watcher, and its workspace, alive: the server grew with each workspace reopened)."""
    import logging

    from ee.serve.watch import Watcher as RealWatcher

    handlers = logging.getLogger("watchdog.observers.inotify").handlers
    before = len(handlers)
    for _ in range(3):
        watcher = RealWatcher(ws, log=lambda line: None)
        watcher.start()
        assert len(handlers) == before + 1
        watcher.close()
        assert len(handlers) == before
