"""What a killed ee process can leave behind, and the safe repair of each (``ee doctor --fix``).

- ``.ee-tmp-*`` files in ``memories/`` (and the workspace root): atomic-write temporaries, never renamed
  into place. Ignored by every reader and by git, but they pile up.
- ``.git/ee/*.lock`` and ``.git/ee-index-*``: a killed ``git update-index`` on ee's private index file
  leaves its lock (ee's next commit removes it too); temporary index files of older versions of ee.
- ``.ee/index/*.tmp`` and ``.ee/index/gen-*/*.tmp``: a generation folder, manifest or stamps table being
  written by an index update.
- ``.ee/import-journal.json``: an import that wrote its memory files and did not commit them.

Who may be using each: the writers of the first two and of the journal hold the workspace lock, index
writers hold the index lock. A repair takes the matching lock first (waiting a few seconds at most), so
nothing a live writer is using is ever touched. Temporaries in the workspace root (where tools that do not
take the lock write too) are also left alone until they are a minute old.

The import journal lists every file an import is about to write with its blob id, and is removed once
the commit is made. Recovery touches only files that still hold exactly the content the journal names:
a person's own file, or an imported file a person has changed since, is never committed nor deleted.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee._crash import crash_point
from ee.config import open_regular
from ee.errors import LockTimeout
from ee.git.repo import blob_id
from ee.model import Problem
from ee.store.files import MEMORIES, STATE_DIR, TEMP_PREFIX, workspace_lock

if TYPE_CHECKING:
    from ee.git.repo import Git
    from ee.workspace import Workspace

JOURNAL = f"{STATE_DIR}/import-journal.json"
LOCK_WAIT = 5.0  # seconds a repair waits for a lock before it leaves that kind of leftover for later
ROOT_TEMP_AGE = 60.0  # seconds: a temporary in the workspace root younger than this may still be in use


@dataclass(frozen=True, slots=True)
class Leftover:
    """One file or folder a killed process left, and the lock a live writer of it would hold."""

    kind: str  # temp_file | git_temp | index_temp
    path: Path
    lock: str  # workspace | index

    def problem(self, root: Path) -> Problem:
        shown = _shown(self.path, root)
        what = {
            "temp_file": "an atomic-write temporary left by a killed ee (never renamed into place)",
            "git_temp": "a temporary file of ee's private git index, left by a killed commit",
            "index_temp": "a part-written index file or folder, left by a killed index update",
        }[self.kind]
        return Problem(
            f"leftover_{self.kind}",
            "warning",
            what,
            shown,
            repair="ee doctor --fix  # removes it once no ee process is writing",
        )


@dataclass(slots=True)
class Repairs:
    """What ``ee doctor --fix`` did."""

    removed: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    recovered: dict[str, Any] | None = None
    git: dict[str, str] | None = None  # the rebase or merge of a killed ee sync, aborted (ee.ops.doctor)

    def to_dict(self) -> dict[str, Any]:
        return {
            "removed": self.removed,
            "skipped": self.skipped,
            "recovered": self.recovered,
            "git": self.git,
        }


# ------------------------------------------------------------------------------------------ leftovers


def find_leftovers(root: Path, git: Git | None, now: float | None = None) -> list[Leftover]:
    """Every leftover of a killed process in the workspace at ``root`` (``git``: its repository, None
    when there is none)."""
    now = time.time() if now is None else now
    out = [Leftover("temp_file", path, "workspace") for path in memory_temporaries(root)]
    for path in sorted(root.glob(TEMP_PREFIX + "*")):
        if _age(path, now) >= ROOT_TEMP_AGE:
            out.append(Leftover("temp_file", path, "workspace"))
    journal_tmp = root / (JOURNAL + ".tmp")  # (killed while the import journal was written)
    if journal_tmp.exists():
        out.append(Leftover("temp_file", journal_tmp, "workspace"))
    if git is not None:
        out += [Leftover("git_temp", path, "workspace") for path in _git_temporaries(git)]
    index = root / STATE_DIR / "index"
    temps = [*index.glob("*.tmp"), *index.glob("gen-*/*.tmp")]
    out += [Leftover("index_temp", path, "index") for path in sorted(temps)]
    return out


def index_busy(root: Path) -> bool:
    """Is an index writer running (holding the index lock)? Asked without waiting."""
    from ee.index.freshness import index_lock

    try:
        with index_lock(root, 0.0):
            return False
    except LockTimeout:
        return True


def memory_temporaries(root: Path) -> list[Path]:
    """``.ee-tmp-*`` files anywhere below ``memories/`` (hidden folders such as ``.events`` included)."""
    found: list[Path] = []
    for folder, _dirs, files in os.walk(root / MEMORIES):
        found += [Path(folder, name) for name in files if name.startswith(TEMP_PREFIX)]
    return sorted(found)


def _git_temporaries(git: Git) -> list[Path]:
    """The lock beside this workspace's private index file (:meth:`Git.private_index`), and
    the temporary index files older versions of ee wrote straight into the git folder."""
    index = git.private_index()
    lock = index.with_name(index.name + ".lock")
    return ([lock] if lock.exists() else []) + sorted(git.git_dir.glob("ee-index-*"))


def repair(ws: Workspace) -> Repairs:
    """``ee doctor --fix``: finish or undo an interrupted import, and remove every leftover, each under
    the lock its writers hold (waiting :data:`LOCK_WAIT` seconds at most; what could not be locked is
    listed as skipped, for a later run)."""
    from ee.index.freshness import index_lock

    repairs = Repairs()
    git = ws.git if ws.git.is_repo() else None
    for lock_name, lock in (("workspace", workspace_lock), ("index", index_lock)):
        try:
            with lock(ws.root, LOCK_WAIT):
                if lock_name == "workspace" and git is not None:
                    repairs.recovered = recover_import(ws, "ee doctor --fix")
                if lock_name == "index":  # the derived cache's writers hold the index lock
                    repairs.removed += _rebuild_damaged_cache(ws.root)
                # Looked for under the lock: what was found before it may have been a live writer's.
                for item in find_leftovers(ws.root, git):
                    if item.lock == lock_name:
                        _remove(item.path)
                        repairs.removed.append(_shown(item.path, ws.root))
        except LockTimeout:
            reason = f"the {lock_name} lock is held by a running ee: run ee doctor --fix again later"
            repairs.skipped += [
                {"path": _shown(item.path, ws.root), "reason": reason}
                for item in find_leftovers(ws.root, git)
                if item.lock == lock_name
            ]
    return repairs


def _rebuild_damaged_cache(root: Path) -> list[str]:
    """Start a damaged derived cache afresh, and clear the note of an earlier rebuild (this run of
    ``doctor`` reports it). The paths removed."""
    from ee.index.cache import REBUILT_NOTE, check, reset
    from ee.index.freshness import CACHE_PATH

    path = root / CACHE_PATH
    note = path.parent / REBUILT_NOTE
    removed = [_shown(note, root)] if note.exists() else []
    damage = check(path)
    if damage is not None:
        reset(path, damage)
        removed.append(CACHE_PATH)
    note.unlink(missing_ok=True)
    return removed


def sweep_memory_temporaries(root: Path) -> int:
    """Remove ``.ee-tmp-*`` files below ``memories/``: the caller holds the workspace lock, so each is a
    killed writer's. Returns how many."""
    temps = memory_temporaries(root)
    for path in temps:
        _remove(path)
    return len(temps)


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _age(path: Path, now: float) -> float:
    try:
        return now - path.lstat().st_mtime
    except OSError:
        return 0.0


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------ the import journal


def begin_import(root: Path, files: dict[str, str], subject: str, trailers: dict[str, str]) -> None:
    """Record, before the first file is written, every path an import writes and its blob id (the
    caller holds the workspace lock: one writer, so a fixed temporary name is safe; and no
    ``atomic_write``, whose crash points count memory files)."""
    journal = {
        "version": 1,
        "pid": os.getpid(),
        "started": time.time(),
        "subject": subject,
        "trailers": trailers,
        "files": files,
    }
    path = root / JOURNAL
    tmp = path.with_name(path.name + ".tmp")
    with open(open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as handle:
        handle.write(json.dumps(journal, ensure_ascii=False).encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    crash_point("import.journal")


def end_import(root: Path) -> None:
    """The import is committed (or rolled back): nothing is left to recover."""
    (root / JOURNAL).unlink(missing_ok=True)


def has_journal(root: Path) -> bool:
    return (root / JOURNAL).exists()


def damaged_journal(root: Path) -> str | None:
    """Why the import journal cannot be trusted, or None when it is sound (or absent)."""
    if not has_journal(root):
        return None
    try:
        _read_journal(root)
    except ValueError as exc:
        return str(exc)
    return None


def journal_problem(root: Path) -> Problem | None:
    """``ee doctor``'s report of an interrupted import, or None. An error: until it is finished or undone
    (by ``doctor --fix`` or by the next write), the store holds files no commit accounts for."""
    if not has_journal(root):
        return None
    try:
        count = len(_read_journal(root)["files"])
    except ValueError as exc:
        return Problem(
            "import_journal_damaged",
            "error",
            str(exc),
            JOURNAL,
            repair=f"look at `git status {MEMORIES}`, then: rm {JOURNAL}",
        )
    return Problem(
        "import_interrupted",
        "error",
        f"an import of {count} memories was killed before its commit; its files may be in {MEMORIES}/, "
        "uncommitted",
        JOURNAL,
        repair="ee doctor --fix  # commits them if all were written, else removes the ones it wrote",
    )


def _read_journal(root: Path) -> dict[str, Any]:
    try:
        with open(open_regular(root / JOURNAL, os.O_RDONLY), encoding="utf-8") as handle:
            journal = json.loads(handle.read())
    except (OSError, ValueError) as exc:
        raise ValueError(f"the import journal cannot be read: {exc}") from None
    files = journal.get("files") if isinstance(journal, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(k, str)
        and k.startswith(MEMORIES + "/")
        and ".." not in k.split("/")
        and isinstance(v, str)
        for k, v in files.items()
    ):
        raise ValueError("the import journal is damaged (no valid list of files)")
    return journal


def recover_import(ws: Workspace, by: str) -> dict[str, Any] | None:
    """Finish or undo an import that was killed before its commit (the caller holds the workspace lock).

    All its files written, each still as the import wrote it: they are committed (the import lands
    whole). Otherwise the ones that still hold what the import wrote are removed (it lands not at all).
    A file that holds something else (a person changed it since), or that someone staged or committed,
    is left as it is and named. None when there is no journal; a damaged journal is left for a person.
    """
    root = ws.root
    if not has_journal(root):
        return None
    try:
        journal = _read_journal(root)
    except ValueError:
        return None  # `ee doctor` names it; nothing in it can be trusted to prove a file is ee's
    files: dict[str, str] = journal["files"]
    head = ws.git.ls_tree("HEAD") if ws.git.head() is not None else {}
    status = ws.git.status_paths(MEMORIES)
    committed: list[str] = []
    written: list[str] = []
    staged: list[str] = []
    missing: list[str] = []
    kept: list[str] = []
    for rel, blob in sorted(files.items()):
        if head.get(rel) == blob:
            committed.append(rel)
            continue
        data = _read_file(root / rel)
        code = status.get(rel, "??")
        if data is None:
            missing.append(rel)
        elif blob_id(data) != blob or code not in ("??", "A "):
            kept.append(rel)  # changed by someone since: not provably the import's any more
        else:
            (written if code == "??" else staged).append(rel)
    out: dict[str, Any] = {
        "by": by,
        "files": len(files),
        "already_committed": len(committed),
        "committed": [],
        "removed": [],
        "kept": kept,
        "commit": None,
    }
    if (written or staged) and not missing and not kept:
        # Complete: the import lands whole. (Staged as written: the killed import had begun its commit.)
        from ee.git.repo import format_message

        ours = sorted(written + staged)
        trailers = {**journal.get("trailers", {}), "Ee-Recovered": f"interrupted import, completed by {by}"}
        out["commit"] = ws.git.commit_paths(ours, format_message(str(journal.get("subject")), trailers))
        out |= {"committed": ours, "action": "committed"}
    else:
        # Incomplete: the import lands not at all. ee stages an import's files only once all are written,
        # as its commit begins. So with one missing, a staged one was staged by a person, who keeps it;
        # with none missing (incomplete because a person changed one since), what git's index holds as
        # the import wrote it was staged by the killed commit: it leaves the index, and the files still
        # as written go with the rest (a changed one stays, untracked).
        if not missing:
            index = ws.git.index_blobs(MEMORIES)
            ours = sorted(rel for rel, blob in files.items() if rel not in head and index.get(rel) == blob)
            ws.git.unstage(ours)
            written, staged = sorted(written + staged), []
        for rel in written:
            (root / rel).unlink(missing_ok=True)
        out["removed"] = written
        out["kept"] = sorted(kept + staged)
        out["action"] = "removed" if written else ("already_committed" if committed else "nothing_written")
    out["temporaries_removed"] = sweep_memory_temporaries(root)
    end_import(root)
    return out


def _read_file(path: Path) -> bytes | None:
    """The bytes of a regular file; None when there is nothing at ``path``, b"" for anything else there
    (a link, a folder: not what an import wrote)."""
    if path.is_symlink():
        return b""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return b""
