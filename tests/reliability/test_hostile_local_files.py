"""Hostile local files (issue 19, item 9): a config that the TOML parser cannot read and a ``memories``
path that is not a folder are clear errors with their documented exit codes, never a traceback."""

from __future__ import annotations

import contextlib
import json
import marshal
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ee.errors import ExitCode
from ee.workspace import Workspace
from tests.conftest import git, run_cli

from .harness import doctor_report, run_ee


def _config(ws: Workspace) -> Path:
    return ws.root / ".ee" / "config.toml"


@pytest.mark.parametrize(
    "command", [("search", "ci"), ("memory", "list"), ("remember", "ci caches go stale")]
)
def test_deeply_nested_config_is_a_config_error(ws: Workspace, command: tuple[str, ...]) -> None:
    # (20 000 levels: past the parser's stack, within the 64 KiB a settings file may hold)
    _config(ws).write_text("a = " + "[" * 20_000 + "]" * 20_000 + "\n", encoding="utf-8")
    res = run_cli("--workspace", str(ws.root), *command, "--json")
    assert res.code == ExitCode.CONFIG, res.err
    assert "Traceback" not in res.out + res.err
    assert "nested too deeply" in res.out + res.err
    assert str(_config(ws)) in res.out + res.err  # the repair names the file


def test_config_that_is_a_folder_is_a_config_error(ws: Workspace) -> None:
    _config(ws).unlink(missing_ok=True)
    _config(ws).mkdir()
    res = run_cli("--workspace", str(ws.root), "search", "ci", "--json")
    assert res.code == ExitCode.CONFIG, res.err
    assert "cannot be read" in res.out + res.err


@pytest.mark.parametrize("odd", ["fifo", "device"])
def test_config_that_is_no_file_is_a_config_error_at_once(ws: Workspace, odd: str) -> None:
    """A FIFO there blocked every command on its read (no writer ever comes); a device was read as a
    file. Each command in a process of its own: a hang fails on the timeout, not the test run."""
    _config(ws).unlink(missing_ok=True)
    if odd == "fifo":
        os.mkfifo(_config(ws))
    else:
        _config(ws).symlink_to("/dev/null")  # (/dev/zero would never end: read, it would fill memory)
    for command in (("search", "ci"), ("remember", "ci caches go stale")):
        proc = run_ee(ws.root, *command, "--json", timeout=120)
        assert proc.returncode == ExitCode.CONFIG, proc.stdout + proc.stderr
        # (a link to the device is refused as a link now: ee follows none under .ee/)
        reason = "Not a regular file" if odd == "fifo" else "Is a symbolic link"
        assert f"cannot be read ({reason}" in proc.stdout
    # A git hook's reading of a setting does not wait on it either: it is refused as a config error.
    probe = (
        "import sys; from ee.errors import ConfigError; from ee.hooks.run import Hook\n"
        "try: Hook('pre-commit', [], sys.argv[1], sys.argv[1], False).setting('hooks.block')\n"
        "except ConfigError as exc: print('ConfigError')"
    )
    hook = subprocess.run(
        [sys.executable, "-c", probe, str(ws.root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert hook.stdout == "ConfigError\n"  # ee.config reports it


def _odd_memories(ws: Workspace, odd: str) -> Path:
    """Put something odd where ``memories/`` should be; its path."""
    memories = ws.root / "memories"
    os.rename(memories, ws.root / "memories.old")
    if odd == "file":
        memories.write_text("not a folder\n", encoding="utf-8")
    elif odd == "symlink loop":
        memories.symlink_to("memories")  # (resolving it never ends: ELOOP)
    else:
        memories.symlink_to(ws.root / "nowhere")
    return memories


ODD = {"dangling symlink": "a dangling symlink", "file": "not a folder", "symlink loop": "a symlink loop"}


@pytest.mark.parametrize("odd", ODD)
def test_memories_that_is_not_a_folder_is_a_storage_error(ws: Workspace, odd: str) -> None:
    head = git(ws.root, "rev-parse", "HEAD")
    memories = _odd_memories(ws, odd)
    res = run_cli("--workspace", str(ws.root), "remember", "ci caches go stale", "--json")
    assert res.code == ExitCode.STORAGE, res.err
    assert "Traceback" not in res.out + res.err
    assert f"{memories} is {ODD[odd]}" in res.out + res.err
    assert git(ws.root, "rev-parse", "HEAD") == head  # nothing committed
    assert not (ws.root / "nowhere").exists()  # nothing created through the symlink


@pytest.mark.parametrize("odd", ODD)
def test_memories_that_is_not_a_folder_reads_as_no_memories(ws: Workspace, odd: str) -> None:
    """Reads answer (no memories there), each in a process of its own; ``ee doctor`` says what is wrong."""
    _odd_memories(ws, odd)
    for command in (("search", "ci"), ("memory", "list"), ("context", "ci"), ("index", "rebuild")):
        proc = run_ee(ws.root, *command, "--json")
        assert proc.returncode == 0, (command, proc.stdout + proc.stderr)
        assert "Traceback" not in proc.stdout + proc.stderr
    proc = run_ee(ws.root, "doctor", "--json")
    assert proc.returncode == ExitCode.STORAGE, proc.stdout + proc.stderr
    assert "memories_missing" in [p["code"] for p in doctor_report(proc.stdout)["problems"]]


def _damage_cache(ws: Workspace, how: str) -> Path:
    """Damage the derived cache as a disk fault or a careless copy would; the cache file."""
    cache = ws.root / ".ee" / "cache" / "derived.sqlite"
    with contextlib.closing(sqlite3.connect(cache)) as db:  # everything into the file: the WAL goes next
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for name in ("derived.sqlite-wal", "derived.sqlite-shm"):  # else the WAL would mask the damage
        (cache.parent / name).unlink(missing_ok=True)
    if how == "garbage":
        cache.write_bytes(os.urandom(64 * 1024))
    else:  # a copy killed half-way: the schema page, then part of the tables
        data = cache.read_bytes()
        assert len(data) > 3 * 4096
        cache.write_bytes(data[: 2 * 4096 + 100])
    return cache


# Each command in a process of its own, as a person runs them: one process's open connection to the cache
# is not another's.


def _search_ids(ws: Workspace, query: str) -> list[str]:
    proc = run_ee(ws.root, "search", query, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [hit["id"] for hit in json.loads(proc.stdout)["data"]["hits"]]


def _doctor_codes(ws: Workspace, *args: str, code: int) -> list[str]:
    proc = run_ee(ws.root, "doctor", *args, "--json")
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    return [p["code"] for p in doctor_report(proc.stdout)["problems"]]


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_a_damaged_derived_cache_is_reported_and_rebuilt(ws: Workspace, how: str) -> None:
    for text in ("ci caches go stale after a lockfile change", "the release checklist needs a tag"):
        ws.remember(text, tags=["ci"])
    want = _search_ids(ws, "stale ci caches")
    assert want
    cache = _damage_cache(ws, how)

    assert "derived_cache_corrupt" in _doctor_codes(ws, code=ExitCode.STORAGE)
    shutil.rmtree(ws.root / ".ee" / "index")  # the next query derives everything again, through the cache
    assert _search_ids(ws, "stale ci caches") == want  # rebuilt from the memories: nothing lost
    codes = _doctor_codes(ws, code=0)
    assert "derived_cache_corrupt" not in codes
    assert "derived_cache_rebuilt" in codes  # said once, so a recurring disk fault is seen
    assert _doctor_codes(ws, "--fix", code=0) == []  # --fix clears the note
    assert _doctor_codes(ws, code=0) == []
    assert cache.is_file()


def test_doctor_fix_rebuilds_a_damaged_derived_cache(ws: Workspace) -> None:
    ws.remember("ci caches go stale after a lockfile change", tags=["ci"])
    want = _search_ids(ws, "stale ci caches")
    _damage_cache(ws, "garbage")
    assert _doctor_codes(ws, "--fix", code=0) == []
    assert _doctor_codes(ws, code=0) == []
    shutil.rmtree(ws.root / ".ee" / "index")
    assert _search_ids(ws, "stale ci caches") == want


# A cache whose key matches but whose content lies: a transformer vector filed under the right blob and model
# with another width, bytes that are no float32 vector, or NaN; a saved matrix of another width or with NaN.
# Whoever wrote it (an agent, a killed copy, another ee), it is not used: each query answers (the static arm
# until the lie is replaced), and the next embedding pass replaces it.

_LIES = {
    "short": lambda dim: b"\0" * 28,
    "odd-bytes": lambda dim: b"abc",
    "nan": lambda dim: b"\xff\xff\xff\x7f" * dim,
}


def _embedded(tmp_path: Path) -> tuple[Workspace, Any]:
    from ee.index.transformer import embed_pending
    from ee.index.view import open_index
    from tests.test_transformer import tinycalc_repo

    ws = Workspace(tinycalc_repo(tmp_path / "ws"))
    view = open_index(ws)
    assert embed_pending(view) == (38, 38)
    return ws, view


def _fresh_search(ws: Workspace) -> dict[str, Any]:
    proc = run_ee(ws.root, "search", "divide by zero", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)["data"]
    assert data["hits"][0]["id"] == "division-by-zero"
    return data


@pytest.mark.semantic
@pytest.mark.parametrize("lie", sorted(_LIES))
def test_a_lying_cached_vector_is_never_used_and_is_embedded_again(tmp_path: Path, lie: str) -> None:
    from ee.index.cache import DerivedCache
    from ee.index.freshness import CACHE_PATH, INDEX_DIR
    from ee.index.transformer import cache_model_id, embed_pending, generation_blobs, matrix_path
    from ee.index.view import open_index

    ws, view = _embedded(tmp_path)
    gen = ws.root / INDEX_DIR / view.manifest["generation"]
    model_id = cache_model_id(view.transformer_folder, view.transformer_key)
    blob = generation_blobs(gen)[0]
    matrix_path(gen, view.transformer_key).unlink()  # the next query assembles the matrix from the cache
    cache = DerivedCache(ws.root / CACHE_PATH)
    try:
        good = cache.get_vectors([blob], model_id)[blob]
        cache.put_vectors({blob: _LIES[lie](len(good) // 4)}, model_id)
    finally:
        cache.close()

    assert _fresh_search(ws)["query"]["semantic_arm"] == "static"  # no internal error, no NaN score
    assert embed_pending(open_index(ws)) == (38, 38)  # the lie counts as missing: embedded again
    cache = DerivedCache(ws.root / CACHE_PATH)
    try:
        assert cache.get_vectors([blob], model_id)[blob] == good
    finally:
        cache.close()
    assert _fresh_search(ws)["query"]["semantic_arm"] == "transformer"


@pytest.mark.semantic
@pytest.mark.parametrize("lie", ["wide", "nan"])
def test_a_lying_saved_matrix_is_never_used_and_is_assembled_again(tmp_path: Path, lie: str) -> None:
    import numpy as np

    from ee.index.freshness import INDEX_DIR
    from ee.index.transformer import matrix_path

    ws, view = _embedded(tmp_path)
    path = matrix_path(ws.root / INDEX_DIR / view.manifest["generation"], view.transformer_key)
    good = np.load(path)
    lying = np.zeros((good.shape[0], 7), np.float32) if lie == "wide" else good.copy()
    lying[0] = np.nan
    np.save(path, lying)

    assert _fresh_search(ws)["query"]["semantic_arm"] == "transformer"  # from the cached vectors again
    assert np.array_equal(np.load(path), good)


_ROW_LIES = {
    "garbage": lambda data: b"\xff\x00 no marshal data",
    "truncated": lambda data: data[: len(data) // 2],
    "another-shape": lambda data: marshal.dumps(["record", "body"]),
    "no-record": lambda data: marshal.dumps((["not", "a", "dict"], "body", ["tokens"])),
}


@pytest.mark.parametrize("lie", sorted(_ROW_LIES))
def test_a_lying_derived_row_is_derived_again(ws: Workspace, lie: str) -> None:
    """A row of the derived cache filed under a memory's blob whose data is no parse record (damaged in
    a sound SQLite page, or written by another program) made every search and `ee memory list` an
    internal error while `ee doctor` said healthy. It counts as not cached: derived again, replaced."""
    ws.remember("ci caches go stale after a lockfile change", tags=["ci"])
    want = _search_ids(ws, "stale ci caches")
    assert want
    cache = ws.root / ".ee" / "cache" / "derived.sqlite"
    with contextlib.closing(sqlite3.connect(cache)) as db, db:
        for blob, data in db.execute("SELECT blob, data FROM derived").fetchall():
            db.execute("UPDATE derived SET data = ? WHERE blob = ?", (_ROW_LIES[lie](data), blob))
    shutil.rmtree(ws.root / ".ee" / "index")  # the next query derives everything again, through the cache
    assert _search_ids(ws, "stale ci caches") == want
    proc = run_ee(ws.root, "memory", "list", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with contextlib.closing(sqlite3.connect(cache)) as db:  # replaced by what the blob really gives
        rows = db.execute("SELECT data FROM derived").fetchall()
    assert all(isinstance(marshal.loads(data)[0], dict) for (data,) in rows)


@pytest.mark.parametrize("lie", ["short", "nan"])
def test_a_lying_static_vector_is_embedded_again(ws: Workspace, lie: str) -> None:
    ws.remember("ci caches go stale after a lockfile change", tags=["ci"])
    ws.remember("the release checklist needs a signed tag", tags=["release"])
    want = _search_ids(ws, "stale ci caches")
    cache = ws.root / ".ee" / "cache" / "derived.sqlite"
    with contextlib.closing(sqlite3.connect(cache)) as db, db:
        rows = db.execute("SELECT blob, model, vector FROM vectors WHERE model NOT LIKE 'transformer:%'")
        for blob, model, vector in rows.fetchall():
            lying = b"\0" * 28 if lie == "short" else b"\xff\xff\xff\x7f" * (len(vector) // 4)
            db.execute("UPDATE vectors SET vector = ? WHERE blob = ? AND model = ?", (lying, blob, model))
    shutil.rmtree(ws.root / ".ee" / "index")
    assert _search_ids(ws, "stale ci caches") == want
    with contextlib.closing(sqlite3.connect(cache)) as db:
        rows = db.execute("SELECT vector FROM vectors WHERE model NOT LIKE 'transformer:%'").fetchall()
    assert rows
    assert all(
        len(vector) == len(rows[0][0]) > 28 and b"\xff\xff\xff\x7f" not in vector for (vector,) in rows
    )


@pytest.mark.parametrize("lie", ["indices", "indptr", "data"])
def test_a_lying_lexical_index_is_rebuilt(ws: Workspace, lie: str) -> None:
    """A saved generation's BM25 arrays that load but lie (a posting naming a memory past the end, a
    column past the vocabulary, NaN scores) made every search an internal error; the generation is now
    refused at load, like any damaged one, and the index built again."""
    import numpy as np

    ws.remember("ci caches go stale after a lockfile change", tags=["ci"])
    ws.remember("the release checklist needs a signed tag", tags=["release"])
    want = _search_ids(ws, "stale ci caches")
    manifest = json.loads((ws.root / ".ee" / "index" / "manifest.json").read_text(encoding="utf-8"))
    folder = ws.root / ".ee" / "index" / manifest["generation"] / "bm25s"
    name = {
        "indices": "indices.csc.index.npy",
        "indptr": "indptr.csc.index.npy",
        "data": "data.csc.index.npy",
    }
    path = folder / name[lie]
    array = np.load(path)
    if lie == "indices":
        array[:] = 10**9
    elif lie == "indptr":
        array[1:] = array[-1] + 5
    else:
        array[:] = np.nan
    np.save(path, array)
    assert _search_ids(ws, "stale ci caches") == want


class _Planted:
    """What a pickle in an ``.npy`` file would run when loaded with ``allow_pickle``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str, ...]]:
        return (open, (str(self.marker), "w"))  # (creates the marker file)


def test_a_pickle_in_an_index_array_is_never_loaded(ws: Workspace, tmp_path: Path) -> None:
    """Every ``.npy`` ee keeps is loaded without pickles: an object array planted in a generation (by any
    program that can write ``.ee/``) is a damaged generation, built again; its code never runs."""
    import numpy as np

    ws.remember("ci caches go stale after a lockfile change", tags=["ci"])
    want = _search_ids(ws, "stale ci caches")
    manifest = json.loads((ws.root / ".ee" / "index" / "manifest.json").read_text(encoding="utf-8"))
    marker = tmp_path / "ran"
    for name in ("vectors.npy", "committed.npy", "bm25s/indices.csc.index.npy"):
        path = ws.root / ".ee" / "index" / manifest["generation"] / name
        np.save(path, np.array([_Planted(marker)], dtype=object), allow_pickle=True)
    assert _search_ids(ws, "stale ci caches") == want
    assert not marker.exists()
