"""``ee hooks install | uninstall | status``: ee's git hooks in a repository, beside the user's own.

**Where.** The folder git runs hooks from: ``git rev-parse --git-path hooks``, so ``core.hooksPath`` (and
linked worktrees) are honoured. Created when missing.

**What.** One shim per hook (``exec "${0%/*}/ee-hook-run" NAME "$@"``: no ``dirname`` process) and the runner
``ee-hook-run`` beside them (the time limit, the chaining and the fail-open rules; see ``hooks/``). Every
file ee writes carries the line ``ee-managed-hook``; that is how ee recognises its own files.

**Chaining.** A hook already there is never overwritten: it is renamed ``NAME.ee-chained`` (a rename keeps
its bytes, mode and symlink-ness) and the runner runs it first with the same arguments and stdin, keeping
its exit status (a failing pre-commit still stops the commit). ``uninstall`` renames it back, so the folder
is byte-for-byte what it was. Install is idempotent: a second run changes nothing.

**States** (``status``): ``installed`` (ee's shim), ``chained`` (ee's shim with the user's hook behind it),
``missing`` (no hook), ``foreign`` (a hook ee did not write and has not chained: a later install chains it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ee.hooks.gitinfo import git, relative_prefix
from ee.hooks.run import HOOK_NAMES

MARKER = b"ee-managed-hook"
RUNNER = "ee-hook-run"
CHAINED = ".ee-chained"
PYTHON_PLACEHOLDER = b"@PYTHON@"
TIMEOUT_PLACEHOLDER = b"@HOOK_TIMEOUT@"
MAX_TIMEOUT_PLACEHOLDER = b"@HOOK_TIMEOUT_MAX@"
CONFIG_BYTES_PLACEHOLDER = b"@CONFIG_BYTES@"


@dataclass(frozen=True, slots=True)
class HookState:
    name: str
    state: str  # installed | chained | missing | foreign
    current: bool  # ee's shim is this version's
    action: str = ""  # what install / uninstall just did

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def hooks_dir(top: Path) -> Path:
    """The folder git runs this repository's hooks from (``core.hooksPath`` honoured)."""
    return (top / git("rev-parse", "--git-path", "hooks", cwd=top).strip()).resolve()


def work_tree_top(root: Path) -> Path:
    return Path(git("rev-parse", "--show-toplevel", cwd=root).strip())


def scripts_dir() -> Path:
    """The shipped scripts: ``ee/hooks_scripts`` in a wheel, ``hooks/`` in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    for folder in (package / "hooks_scripts", package.parent / "hooks"):
        if (folder / RUNNER).is_file():
            return folder
    from ee.errors import StorageError
    from ee.install import REINSTALL

    raise StorageError("ee's hook scripts are missing from this installation", f"reinstall ee: {REINSTALL}")


def shim(name: str) -> bytes:
    return (scripts_dir() / name).read_bytes()


def runner() -> bytes:
    """The runner, naming the Python that installed it (it imports ee.hooks.run, not the CLI; and the
    hooks work when ``ee`` is not on the PATH git runs them with, as from an IDE), and the default of
    ``[hooks] timeout`` (:mod:`ee.config` holds it; the runner reads the setting itself, before any ee
    process starts, so that a hung ee is stopped on time), with the bounds ee.config sets: the longest
    limit, and the largest settings file (a UTF-8 character is at most 4 bytes) the runner reads."""
    from ee.config import MAX_CONFIG_CHARS, MAX_HOOK_SECONDS, default

    quoted = sys.executable.replace("'", "'\\''").encode("utf-8", "surrogateescape")
    values = {
        PYTHON_PLACEHOLDER: quoted,
        TIMEOUT_PLACEHOLDER: f"{default('hooks.timeout'):g}".encode(),
        MAX_TIMEOUT_PLACEHOLDER: str(MAX_HOOK_SECONDS).encode(),
        CONFIG_BYTES_PLACEHOLDER: str(4 * MAX_CONFIG_CHARS).encode(),
    }
    script = (scripts_dir() / RUNNER).read_bytes()
    for placeholder, value in values.items():
        script = script.replace(placeholder, value)
    return script


def is_ours(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return MARKER in handle.read(512)
    except OSError:
        return False


def state_of(folder: Path, name: str) -> HookState:
    path = folder / name
    if not path.exists() and not path.is_symlink():
        return HookState(name, "missing", False)
    if not is_ours(path):
        return HookState(name, "foreign", False)
    chained = folder / (name + CHAINED)
    state = "chained" if chained.exists() or chained.is_symlink() else "installed"
    return HookState(name, state, path.read_bytes() == shim(name))


def status(root: Path) -> dict[str, Any]:
    top = work_tree_top(root)
    folder = hooks_dir(top)
    hooks = [state_of(folder, name) for name in HOOK_NAMES]
    return {
        "hooks_dir": str(folder),
        "runner": (folder / RUNNER).is_file(),
        "hooks": [h.to_dict() for h in hooks],
    }


def install(root: Path) -> dict[str, Any]:
    """Wire every hook (chaining the user's), write the runner, remember a sub-folder workspace."""
    top = work_tree_top(root)
    folder = hooks_dir(top)
    folder.mkdir(parents=True, exist_ok=True)
    runner_path = folder / RUNNER
    if runner_path.exists() and not is_ours(runner_path):
        from ee.errors import ConflictError

        raise ConflictError(
            f"{runner_path} exists and is not ee's", "rename or remove it, then: ee hooks install"
        )
    changed = _write(runner_path, runner())
    results = [_install_one(folder, name) for name in HOOK_NAMES]
    prefix = relative_prefix(root, top).rstrip("/")
    if prefix and git("config", "--get", "ee.workspace", cwd=top, check=False).strip() != prefix:
        git("config", "ee.workspace", prefix, cwd=top)
        changed = True
    changed = changed or any(r.action not in ("unchanged", "skipped") for r in results)
    return {"hooks_dir": str(folder), "changed": changed, "hooks": [r.to_dict() for r in results]}


def _install_one(folder: Path, name: str) -> HookState:
    path, chained = folder / name, folder / (name + CHAINED)
    before = state_of(folder, name)
    if before.state == "foreign":
        if chained.exists() or chained.is_symlink():
            return HookState(name, "foreign", False, f"skipped: {chained.name} exists; move one of them away")
        os.replace(path, chained)
        _write(path, shim(name))
        return HookState(name, "chained", True, "chained")
    if before.state != "missing" and before.current:
        return HookState(name, before.state, True, "unchanged")
    _write(path, shim(name))
    state = "installed" if before.state == "missing" else before.state
    return HookState(name, state, True, "installed" if before.state == "missing" else "updated")


def uninstall(root: Path) -> dict[str, Any]:
    """Remove ee's shims, put chained hooks back, and remove the runner when no shim is left."""
    top = work_tree_top(root)
    folder = hooks_dir(top)
    results = [_uninstall_one(folder, name) for name in HOOK_NAMES]
    runner_path = folder / RUNNER
    if is_ours(runner_path) and not any(is_ours(folder / name) for name in HOOK_NAMES):
        runner_path.unlink()
    if git("config", "--get", "ee.workspace", cwd=top, check=False).strip():
        git("config", "--unset", "ee.workspace", cwd=top, check=False)
    changed = any(r.action not in ("", "left") for r in results)
    return {"hooks_dir": str(folder), "changed": changed, "hooks": [r.to_dict() for r in results]}


def _uninstall_one(folder: Path, name: str) -> HookState:
    path, chained = folder / name, folder / (name + CHAINED)
    has_chained = chained.exists() or chained.is_symlink()
    before = state_of(folder, name)
    if before.state == "foreign":  # not ee's (replaced after install?): leave it, and any chained hook
        return HookState(name, "foreign", False, "left")
    if has_chained:
        os.replace(chained, path)
        return HookState(name, "foreign", False, "restored")
    if before.state == "missing":
        return HookState(name, "missing", False, "")
    path.unlink()
    return HookState(name, "missing", False, "removed")


def _write(path: Path, data: bytes) -> bool:
    """Write an executable file atomically; False when it already held ``data``."""
    with contextlib.suppress(OSError):
        if path.read_bytes() == data and os.access(path, os.X_OK):
            return False
    fd, tmp = tempfile.mkstemp(prefix=".ee-tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, (0o777 & ~umask) | stat.S_IXUSR)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True
