"""Which workspace a command, a served request, a git hook or an MCP call works in: the one root finder.

A workspace is a folder holding ``.ee/`` or ``memories/``. Given (``--workspace``, ``$EE_WORKSPACE``, a
hook's ``git config ee.workspace``), it is taken as named. Otherwise ee looks from the current folder up,
and a folder up there is somebody else's to trust, so the search

* stops at the top of the git work tree that holds the current folder (a folder with ``.git``): a
  ``memories/`` planted above the project, say in a shared ``/tmp``, is never adopted;
* never adopts a folder another user owns (the folder, its ``.ee/`` or its ``memories/``);
* refuses a ``.ee/`` or ``memories/`` that is a link committed to git out of the repository
  (:func:`ee.git.repo.check_own_folder`).

Once found, :func:`check_state_untracked` refuses a workspace whose git index tracks anything under
``.ee/`` but ``.ee/config.toml``: ``.ee/`` is ee's private folder of logs, locks, pid files and caches,
and a cloned or pulled link there would make ee write through it.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ee.errors import ConfigError, StorageError, WorkspaceNotFound

STATE_DIR = ".ee"
MEMORIES = "memories"
TRACKED_OK = f"{STATE_DIR}/config.toml"  # the one file of .ee/ a team shares


def find_root(
    explicit: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    *,
    environment: bool = True,
    tracked: bool = True,
) -> Path:
    """The workspace root: ``explicit``, else ``$EE_WORKSPACE`` (when ``environment``), else the nearest
    folder from ``cwd`` up to its git work tree's top that holds ``.ee/`` or ``memories/``.

    WorkspaceNotFound when there is none; a ConfigError for a folder of another user; a StorageError for
    a committed link out of the repository and, when ``tracked``, for files git tracks under ``.ee/``."""
    given = explicit or (os.environ.get("EE_WORKSPACE") if environment else None)
    base = Path(cwd) if cwd is not None else Path.cwd()
    if given:
        root = (base / Path(given).expanduser()).resolve()
        if not root.is_dir():
            raise WorkspaceNotFound(f"workspace {root} does not exist", f"create it with: ee init {root}")
        if not _holds_workspace(root):
            raise WorkspaceNotFound(f"{root} is not an ee workspace", f"run: ee init {root}")
    else:
        root = _search(base.resolve())
    _check_links(root)
    if tracked:
        check_state_untracked(root)
    return root


def _holds_workspace(folder: Path) -> bool:
    return (folder / STATE_DIR).is_dir() or (folder / MEMORIES).is_dir()


def _search(here: Path) -> Path:
    for folder in (here, *here.parents):
        if _holds_workspace(folder):
            _check_owner(folder)
            return folder
        if _is_work_tree_top(folder):
            break
    raise WorkspaceNotFound(
        f"no ee workspace in {here} or any folder above it in its git repository",
        "run `ee init` here, pass --workspace DIR, or set EE_WORKSPACE",
    )


def _is_work_tree_top(folder: Path) -> bool:
    """Does ``folder`` hold ``.git``? (``memories/`` as a memory branch's worktree is part of the workspace
    above it, not a repository of its own to stop in.)"""
    if not os.path.lexists(folder / ".git"):
        return False
    return not (folder.name == MEMORIES and (folder.parent / STATE_DIR).is_dir())


def _check_owner(folder: Path) -> None:
    uid = os.geteuid()
    for path in (folder, folder / STATE_DIR, folder / MEMORIES):
        try:
            owner = path.stat().st_uid
        except OSError:
            continue
        if owner != uid:
            raise ConfigError(
                f"{path} belongs to uid {owner}, not to you (uid {uid}): ee does not adopt another user's "
                "folder as your workspace",
                "run `ee init` in your project, or name the workspace: --workspace DIR (or EE_WORKSPACE)",
            )


def _check_links(root: Path) -> None:
    for name in (STATE_DIR, MEMORIES):
        if os.path.islink(root / name):
            from ee.git.repo import check_own_folder

            check_own_folder(root, name)


def check_state_untracked(root: Path | str) -> None:
    """A StorageError when git's index tracks anything under ``root/.ee/`` but ``.ee/config.toml`` (as a
    file, not a link); nothing to do outside a git repository."""
    from ee.git import runner

    proc = runner.run(["ls-files", "-z", "--stage", "--", f"{STATE_DIR}/"], root)
    if proc.returncode != 0:
        return
    listed = [entry.partition("\t") for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0")]
    # (config.toml too when it is committed as a link: mode 120000)
    names = sorted(
        name for meta, _, name in listed if name and (name != TRACKED_OK or meta.startswith("120000"))
    )
    if not names:
        return
    shown = ", ".join(repr(name) for name in names[:5]) + (", …" if len(names) > 5 else "")
    untrack = " ".join(shlex.quote(name) for name in names) if len(names) <= 20 else f"{STATE_DIR}/"
    raise StorageError(
        f"git tracks {len(names)} file(s) under {STATE_DIR}/ ({shown}): {STATE_DIR}/ is ee's private "
        "folder (locks, logs, caches), and ee opens nothing in a workspace whose repository ships files "
        "there (a link there would make ee write through it)",
        f"untrack them (the files stay on disk): git rm --cached -r -- {untrack} && git commit -m "
        f"'untrack {STATE_DIR}/' (then `ls -la {STATE_DIR}` and delete any link; keep only "
        f"{TRACKED_OK} tracked)",
    )
