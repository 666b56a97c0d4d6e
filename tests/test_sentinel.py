"""The sentinel of ``ee watch``'s server: a view handed out again without a scan is exact, every time.

Each change is made and the index opened *immediately* after (no sleep, no event wait), many times over,
and the view the voucher hands out is compared with one opened the normal way (scan, update). Real files,
real git, real inotify.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git

import ee.index.view
from ee.index.view import open_index
from ee.serve.sentinel import Sentinel, Voucher, file_system_type
from ee.workspace import Workspace

ROUNDS = 25

pytestmark = pytest.mark.skipif(
    file_system_type(Path("/tmp")) is None, reason="no inotify / statfs here (not Linux)"
)


def write(root: Path, rel: str, body: str, memory_id: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {memory_id}\ntags: [t]\n---\n{body}\n", encoding="utf-8")


def picture(view: Any) -> dict[str, Any]:
    """What a query can see of a view: every record's id, path, blob and committed flag, the feedback
    events, the problems, and what HEAD named."""
    records = sorted((r["id"], r["path"], r["blob"], r["committed"]) for r in view.gen.records)
    return {
        "records": records,
        "events": view.state.get("events"),
        "problems": view.state.get("problems"),
        "head": view.manifest.get("head"),
        "head_commit": view.state.get("head_commit"),
    }


def truth(ws: Workspace) -> dict[str, Any]:
    """The view opened the normal way (no voucher): scan, update."""
    saved, ee.index.view.VOUCHER = ee.index.view.VOUCHER, None
    try:
        return picture(open_index(ws))
    finally:
        ee.index.view.VOUCHER = saved


@pytest.fixture
def vouched(ws: Workspace) -> Iterator[Voucher]:
    write(ws.root, "memories/a.md", "alpha rollback", "mem_a")
    write(ws.root, "memories/b.md", "bravo", "mem_b")
    write(ws.root, "memories/sub/c.md", "charlie", "mem_c")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "three memories")
    voucher = Voucher(ws.root)
    ee.index.view.VOUCHER = voucher
    try:
        yield voucher
    finally:
        ee.index.view.VOUCHER = None
        voucher.close()


def check(ws: Workspace, voucher: Voucher, change: Callable[[int], None], rounds: int = ROUNDS) -> None:
    """``change(i)`` then at once a vouched open: equal to the truth; then again with nothing changed:
    handed out without a scan, still equal."""
    open_index(ws)
    for i in range(rounds):
        change(i)
        seen = picture(open_index(ws))  # straight after the change: no sleep, no event wait
        assert seen == truth(ws), f"round {i}: the view after the change is not the store's"
        before = voucher.vouched
        again = picture(open_index(ws))
        assert voucher.vouched == before + 1, "nothing changed, yet the view was not handed out again"
        assert again == seen


def test_nothing_changed_means_no_scan(ws: Workspace, vouched: Voucher) -> None:
    first = picture(open_index(ws))
    for _ in range(5):
        assert picture(open_index(ws)) == first
    assert vouched.vouched == 5
    assert vouched.opened == 1


def test_write_in_place(ws: Workspace, vouched: Voucher) -> None:
    check(ws, vouched, lambda i: write(ws.root, "memories/a.md", f"alpha edit {i}", "mem_a"))


def test_same_size_rewrite_within_the_clock_tick(ws: Workspace, vouched: Voucher) -> None:
    # The same size, written again at once: the stamps may not change, the event does.
    check(ws, vouched, lambda i: write(ws.root, "memories/a.md", f"alpha {i % 10}", "mem_a"), rounds=40)


def test_temp_file_then_rename(ws: Workspace, vouched: Voucher) -> None:
    def change(i: int) -> None:
        tmp = ws.root / "memories" / f".a.md.{i}.tmp"
        tmp.write_text(f"---\nid: mem_a\n---\nalpha atomically {i}\n", encoding="utf-8")
        os.replace(tmp, ws.root / "memories/a.md")

    check(ws, vouched, change)


def test_delete_and_recreate(ws: Workspace, vouched: Voucher) -> None:
    def change(i: int) -> None:
        path = ws.root / "memories/b.md"
        if path.exists():
            path.unlink()
        else:
            write(ws.root, "memories/b.md", f"bravo back {i}", "mem_b")

    check(ws, vouched, change)


def test_rename_and_move_between_folders(ws: Workspace, vouched: Voucher) -> None:
    places = ["memories/b.md", "memories/b2.md", "memories/sub/b.md"]

    def change(i: int) -> None:
        os.rename(ws.root / places[i % 3], ws.root / places[(i + 1) % 3])

    check(ws, vouched, change, rounds=ROUNDS - ROUNDS % 3)


def test_new_folder_with_a_file_written_at_once(ws: Workspace, vouched: Voucher) -> None:
    # The file lands before the sentinel can watch the new folder: the scan after the drain sees it.
    check(ws, vouched, lambda i: write(ws.root, f"memories/new{i}/deep/n.md", f"new {i}", f"mem_n{i}"))


def test_folder_moved_in_and_out(ws: Workspace, vouched: Voucher, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "moved/m.md", "moved in", "mem_m")

    def change(i: int) -> None:
        inside = ws.root / "memories/moved"
        if inside.exists():
            os.rename(inside, outside / "moved")
        else:
            os.rename(outside / "moved", inside)
            write(ws.root, "memories/moved/m.md", f"moved in {i}", "mem_m")  # inside the moved folder

    check(ws, vouched, change)


def test_touch_and_chmod(ws: Workspace, vouched: Voucher) -> None:
    def change(i: int) -> None:
        path = ws.root / "memories/a.md"
        if i % 2:
            os.utime(path, ns=(i * 10**9, i * 10**9))
        else:
            path.chmod(0o600 if i % 4 else 0o644)

    check(ws, vouched, change)


def test_feedback_events_file(ws: Workspace, vouched: Voucher) -> None:
    events = ws.root / "memories/.events"

    def change(i: int) -> None:
        events.mkdir(exist_ok=True)
        with (events / "mem_a.jsonl").open("a", encoding="utf-8") as out:
            out.write(f'{{"memory": "mem_a", "signal": "helpful", "at": "2026-01-0{1 + i % 9}T00:00:00Z"}}\n')

    check(ws, vouched, change)


def test_commit_moves_head(ws: Workspace, vouched: Voucher) -> None:
    def change(i: int) -> None:
        write(ws.root, "memories/a.md", f"alpha committed {i}", "mem_a")
        if i % 2:
            git(ws.root, "commit", "-q", "-am", f"edit {i}")  # file and HEAD move together

    check(ws, vouched, change, rounds=12)


def test_commit_of_what_is_already_there(ws: Workspace, vouched: Voucher) -> None:
    # No memory file changes, only HEAD (and so the committed flags).
    def change(i: int) -> None:
        if i % 2:
            git(ws.root, "commit", "-q", "-am", f"edit {i}")
        else:
            write(ws.root, "memories/a.md", f"alpha to commit {i}", "mem_a")
            open_index(ws)  # the edit is indexed first: the commit alone must be seen next

    check(ws, vouched, change, rounds=12)


def test_checkout_of_another_branch(ws: Workspace, vouched: Voucher) -> None:
    main = git(ws.root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(ws.root, "checkout", "-q", "-b", "other")
    write(ws.root, "memories/other.md", "only on the other branch", "mem_other")
    (ws.root / "memories/b.md").unlink()
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "other branch")
    git(ws.root, "checkout", "-q", main)
    check(ws, vouched, lambda i: git(ws.root, "checkout", "-q", "other" if i % 2 == 0 else main), rounds=12)


def test_detached_head_and_branch_ref_rewritten(ws: Workspace, vouched: Voucher) -> None:
    main = git(ws.root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    first = git(ws.root, "rev-parse", "HEAD").strip()
    write(ws.root, "memories/a.md", "alpha second", "mem_a")
    git(ws.root, "commit", "-q", "-am", "second")
    second = git(ws.root, "rev-parse", "HEAD").strip()

    def change(i: int) -> None:
        if i % 3 == 0:
            git(ws.root, "checkout", "-q", "--detach", first)
        elif i % 3 == 1:
            git(ws.root, "checkout", "-q", main)
        else:  # the branch ref moves under HEAD without a checkout: the files stay, HEAD's commit changes
            git(ws.root, "update-ref", f"refs/heads/{main}", first if i % 2 else second)

    check(ws, vouched, change, rounds=12)


def test_packed_refs(ws: Workspace, vouched: Voucher) -> None:
    def change(i: int) -> None:
        write(ws.root, "memories/a.md", f"alpha packed {i}", "mem_a")
        git(ws.root, "commit", "-q", "-am", f"packed {i}")
        git(ws.root, "pack-refs", "--all")  # the loose ref file goes: HEAD's branch is in packed-refs

    check(ws, vouched, change, rounds=6)


def test_memories_folder_replaced(ws: Workspace, vouched: Voucher) -> None:
    def change(i: int) -> None:
        folder = ws.root / "memories"
        copy = ws.root / "memories-copy"
        shutil.copytree(folder, copy)
        write(copy, f"r{i}.md", f"replaced {i}", f"mem_r{i}")
        shutil.rmtree(folder)
        os.rename(copy, folder)

    check(ws, vouched, change, rounds=10)


def test_model_and_config_changes_are_seen(
    ws: Workspace, vouched: Voucher, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_index(ws)
    assert first.semantic_ready
    monkeypatch.setenv("EE_MODEL", str(ws.root / "no-such-model"))
    view = open_index(ws)
    assert not view.semantic_ready
    assert any(d["code"] == "semantic_unavailable" for d in view.degraded)
    monkeypatch.delenv("EE_MODEL")
    assert open_index(ws).semantic_ready
    config = ws.root / ".ee/config.toml"
    before = vouched.opened
    config.write_text(config.read_text() + "\n# edited\n")
    open_index(ws)
    assert vouched.opened == before + 1  # not handed out: the config changed


def test_another_process_writing_a_generation_is_seen(ws: Workspace, vouched: Voucher) -> None:
    open_index(ws)
    before = vouched.opened
    saved, ee.index.view.VOUCHER = ee.index.view.VOUCHER, None
    try:
        ee.index.view.rebuild(ws)  # as `ee index rebuild` in another process: a new manifest, old ones pruned
    finally:
        ee.index.view.VOUCHER = saved
    assert picture(open_index(ws)) == truth(ws)
    assert vouched.opened == before + 1


def test_an_as_of_view_is_never_held(ws: Workspace, vouched: Voucher) -> None:
    from ee.query import search
    from ee.query.document import from_arguments

    head = git(ws.root, "rev-parse", "HEAD").strip()
    write(ws.root, "memories/a.md", "alpha after the commit", "mem_a")
    past = search(ws, from_arguments("alpha", as_of=head))
    now = search(ws, from_arguments("alpha"))
    assert past != now
    assert picture(open_index(ws)) == truth(ws)


def test_many_changes_overflow_the_queue(ws: Workspace, vouched: Voucher) -> None:
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 20_000:
        pytest.skip("the queue limit is too high to overflow quickly here")
    open_index(ws)
    path = ws.root / "memories/a.md"
    for i in range(limit + 10):  # more events than the queue holds: IN_Q_OVERFLOW
        os.utime(path, ns=(i, i))
    write(ws.root, "memories/a.md", "alpha after the flood", "mem_a")
    assert picture(open_index(ws)) == truth(ws)
    assert picture(open_index(ws)) == truth(ws)


# ------------------------------------------------------------------------------------------ the sentinel


def test_sentinel_reports_every_kind_of_change(tmp_path: Path) -> None:
    root = tmp_path
    (root / "memories/sub").mkdir(parents=True)
    (root / "memories/a.md").write_text("a")
    sentinel = Sentinel(root)
    assert sentinel.arm()
    assert sentinel.quiet()
    changes: list[Callable[[], None]] = [
        lambda: (root / "memories/a.md").write_text("b"),
        lambda: os.utime(root / "memories/a.md", ns=(1, 1)),
        lambda: os.rename(root / "memories/a.md", root / "memories/sub/a.md"),
        lambda: (root / "memories/sub/a.md").unlink(),
        lambda: (root / "memories/.swp").write_text("x"),  # (not a memory: still reported, harmless)
    ]
    for change in changes:
        change()
        assert not sentinel.quiet()
        assert sentinel.drain()  # files only: the watches stay right
        assert sentinel.quiet()
    (root / "memories/new").mkdir()
    assert not sentinel.quiet()
    assert not sentinel.drain()  # a folder appeared: arm again to watch it
    assert sentinel.arm()
    (root / "memories/new/x.md").write_text("x")
    assert not sentinel.quiet()
    sentinel.close()
    assert not sentinel.quiet()


def test_no_memories_folder_vouches_for_nothing(tmp_path: Path) -> None:
    assert not Sentinel(tmp_path).arm()


def test_memories_symlink_pointed_elsewhere(ws: Workspace, vouched: Voucher, tmp_path: Path) -> None:
    # The workspace root is not watched: re-pointing a memories/ symlink raises no event anywhere watched.
    stores = [tmp_path / "store-a", tmp_path / "store-b"]
    for n, store in enumerate(stores):
        shutil.copytree(ws.root / "memories", store)
        write(store, "only.md", f"only in store {n}", f"mem_only{n}")
    shutil.rmtree(ws.root / "memories")
    (ws.root / "memories").symlink_to(stores[0])

    def change(i: int) -> None:
        link = ws.root / "memories"
        tmp = ws.root / "memories.new"
        tmp.symlink_to(stores[(i + 1) % 2])
        os.replace(tmp, link)

    check(ws, vouched, change, rounds=10)
