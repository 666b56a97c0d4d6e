"""The server's freshness proof (ee.serve.watch's docstring) with a real watchdog observer on real files.

Each check does what the server does for a request: the barrier (:meth:`Watcher.prove`), then
``open_index`` with the proof set on the workspace's :class:`~ee.index.view.Hold`. A write done just
before must be in the view, in every repetition and for every way a file changes; with nothing changed
the kept view answers without the stat pass; a probe that never arrives falls back to that pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git

from ee.index import view as view_module
from ee.index.tokenize import tokenize
from ee.index.view import IndexView, open_index
from ee.serve import watch as watch_module
from ee.serve.watch import Watcher
from ee.workspace import Workspace

REPEAT = 40


def note(_line: str) -> None:
    """The watcher's log: not needed here."""


@pytest.fixture
def watcher(ws: Workspace) -> Iterator[Watcher]:
    (ws.root / ".ee/config.toml").write_text("[model]\ntransformer = false\n", encoding="utf-8")
    write(ws.root, "a", "alpha first")
    watched = Watcher(Workspace(ws.root), log=note)
    watched.start()  # (observer on, one update: the kept view)
    yield watched
    watched.close()


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the stat passes ``open_index`` makes (the real ``scan``, counted)."""
    calls: list[int] = []
    real = view_module.scan

    def counted(root: Path) -> Any:
        calls.append(1)
        return real(root)

    monkeypatch.setattr(view_module, "scan", counted)
    return calls


def write(root: Path, name: str, body: str, folder: str = "memories") -> Path:
    path = root / folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: mem_{name}\n---\n{body}\n", encoding="utf-8")
    return path


def served(watcher: Watcher) -> tuple[IndexView, bool]:
    """One request as the server makes it: the barrier, then the index under that proof."""
    ws = watcher.workspace()
    watcher.hold.proven = proven = watcher.prove()
    try:
        return open_index(ws), proven
    finally:
        watcher.hold.proven = False


def bodies(view: IndexView) -> dict[str, str]:
    return {r["id"]: r["path"] for r in view.gen.records}


def says(view: IndexView, memory_id: str, word: str) -> bool:
    """Whether the view indexed ``word`` in ``memory_id``'s text."""
    pos = view.gen.position(memory_id)
    return pos is not None and bool(view.gen.lexical.scores(tokenize(word))[pos] > 0)


def test_nothing_changed_answers_from_the_kept_view_without_a_stat_pass(
    watcher: Watcher, scans: list[int]
) -> None:
    first, proven = served(watcher)
    assert proven
    again, proven = served(watcher)
    assert proven
    assert again is first
    assert scans == []  # (the view kept by the watcher's own update, proven unchanged twice)


def test_a_write_just_before_a_request_is_seen_every_time(watcher: Watcher, scans: list[int]) -> None:
    root = watcher.root
    for i in range(REPEAT):
        write(root, f"n{i}", f"alpha round {i}")
        view, proven = served(watcher)
        assert proven
        assert f"mem_n{i}" in bodies(view), f"round {i}: a new file missed"
        path = write(root, f"n{i}", f"beta edited {i}")  # (an edit in place, same size class)
        view, _ = served(watcher)
        assert says(view, f"mem_n{i}", "beta"), f"round {i}: an edit missed"
        assert not says(view, f"mem_n{i}", "alpha"), f"round {i}: an edit missed"
        os.unlink(path)
        view, _ = served(watcher)
        assert f"mem_n{i}" not in bodies(view), f"round {i}: a deletion missed"
    assert scans  # (each change took the stat pass)


def test_editor_save_patterns_are_seen_at_once(watcher: Watcher) -> None:
    root = watcher.root
    target = root / "memories/a.md"
    for i in range(REPEAT // 4):
        # vim: backup by rename, write a new file, remove the backup
        os.rename(target, root / "memories/a.md~")
        target.write_text(f"---\nid: mem_a\n---\nvim{i}\n", encoding="utf-8")
        os.unlink(root / "memories/a.md~")
        view, _ = served(watcher)
        assert says(view, "mem_a", f"vim{i}")
        # most editors: a temporary file renamed over the original
        tmp = root / f"memories/.a.md.tmp{i}"
        tmp.write_text(f"---\nid: mem_a\n---\natomic{i}\n", encoding="utf-8")
        os.replace(tmp, target)
        view, _ = served(watcher)
        assert says(view, "mem_a", f"atomic{i}")
        # a move into a new folder, and out of memories/ altogether (an unpaired move)
        os.makedirs(root / f"memories/sub{i}")
        os.rename(target, root / f"memories/sub{i}/a.md")
        view, _ = served(watcher)
        assert bodies(view)["mem_a"] == f"memories/sub{i}/a.md"
        os.rename(root / f"memories/sub{i}/a.md", root / "outside.md")
        view, _ = served(watcher)
        assert "mem_a" not in bodies(view)
        os.rename(root / "outside.md", target)
        view, _ = served(watcher)
        assert bodies(view)["mem_a"] == "memories/a.md"


def test_commit_checkout_and_an_events_line_are_seen_at_once(watcher: Watcher) -> None:
    root = watcher.root
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a")
    git(root, "checkout", "-q", "-b", "other")
    write(root, "b", "bravo on other")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "b")
    view, _ = served(watcher)
    assert "mem_b" in bodies(view)
    assert view.gen.records[view.gen.position("mem_b")]["committed"]
    git(root, "checkout", "-q", "-")
    view, _ = served(watcher)
    assert "mem_b" not in bodies(view)
    events = root / "memories/.events/mem_a.jsonl"
    for i in range(REPEAT // 4):
        with events.open("a", encoding="utf-8") as out:
            out.write(
                f'{{"id": "ev{i}", "memory": "mem_a", "signal": "helpful", "at": "2026-12-01T10:00:00Z"}}\n'
            )
        view, _ = served(watcher)
        assert [e["id"] for e in view.state["events"]["mem_a"]][-1] == f"ev{i}"


def test_a_missed_probe_falls_back_to_the_stat_pass(
    watcher: Watcher, scans: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watch_module, "PROOF_WAIT", 0.05)
    monkeypatch.setattr(watcher.dirty, "probe_seen", lambda: None)  # (the probe's event is lost)
    write(watcher.root, "late", "alpha late")
    view, proven = served(watcher)
    assert not proven
    assert "mem_late" in bodies(view)
    before = len(scans)
    served(watcher)
    assert len(scans) == before + 1  # (unproven: every request stats the files)


def test_a_replaced_memories_folder_is_never_proven(watcher: Watcher, scans: list[int]) -> None:
    root = watcher.root
    os.rename(root / "memories", root / "old-memories")
    write(root, "z", "zulu in a new folder")
    view, proven = served(watcher)
    assert not proven
    assert set(bodies(view)) == {"mem_z"}


def test_a_changed_setting_gets_a_new_kept_view(watcher: Watcher) -> None:
    first, _ = served(watcher)
    (watcher.root / ".ee/config.toml").write_text(
        "[model]\ntransformer = false\n[store]\nmax_body_bytes = 100000\n", encoding="utf-8"
    )
    again, proven = served(watcher)
    assert proven
    assert again is not first


def test_a_rebuild_by_another_process_is_seen(watcher: Watcher, scans: list[int]) -> None:
    first, _ = served(watcher)
    subprocess.run(
        [sys.executable, "-m", "ee", "--workspace", str(watcher.root), "index", "rebuild"],
        check=True,
        capture_output=True,
        env=dict(os.environ, EE_NO_SERVER="1"),
    )
    again, proven = served(watcher)
    assert proven
    assert again is not first
    assert again.manifest["generation"] != first.manifest["generation"]
