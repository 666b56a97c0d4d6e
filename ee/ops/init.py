"""``ee init``: make (or adopt) a git repository and lay out an ee workspace in it, idempotently.

Bound by :meth:`ee.workspace.Workspace.init`. The lines ee owns in ``.gitignore`` and ``.gitattributes``
live here (``ee doctor`` checks them), and so does the registration of the memory merge driver.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.config import CONFIG_PATH, DEFAULT_CONFIG_TEXT, load_config
from ee.discovery import check_state_untracked
from ee.errors import ConfigError, StorageError, UsageError
from ee.git.repo import Git, check_own_folder, format_message
from ee.store.files import EVENTS, MEMORIES, STATE_DIR, atomic_write

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ee.workspace import Workspace

# ee's derived folder (but its settings), and the temporary files of atomic writes a kill -9 may leave.
GITIGNORE_LINES = (".ee/*", "!.ee/config.toml", ".ee-tmp-*")
GITATTRIBUTES_LINES = (
    "memories/**/*.md merge=ee-memory",
    "memories/.events/*.jsonl merge=union",
    "memories/.curate/*.jsonl merge=union",
)


def init(ws: Workspace, branch: str | None = None) -> dict[str, Any]:
    """Make ``ws`` (its folder already checked by :func:`workspace_folder`) an ee workspace: the report
    ``ee init`` prints (what was created and registered, the commit, the memory branch)."""
    root = ws.root
    code = Git(root)  # (ws.git is the memory branch's worktree once there is one)
    created: list[str] = []
    if not code.is_repo():
        code.init()
        created.append(".git")
    config = load_config(root)
    configured = str(config.get("store.branch"))
    branch = chosen_branch(code, branch, configured)
    with ws.lock():
        registered = ["merge driver (git config merge.ee-memory)"] if register_merge_driver(code) else []
        created += lay_out(root, code, branch, configured, str(config.get("sync.remote")))
        commit = commit_init(root, code, branch, created)
    report = {"root": str(root), "created": created, "registered": registered, "commit": commit}
    return report | {"branch": branch}


def workspace_folder(path: str | os.PathLike[str]) -> Path:
    """The folder ``ee init`` makes a workspace of, created if need be, and checked: ``memories/`` and
    ``.ee/`` must not link out of it, and no state file of ``.ee/`` may be a link a clone brought."""
    root = Path(path).expanduser().resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(
            f"cannot create the workspace folder {root}: {exc.strerror or exc}",
            "choose a folder you can write to",
        ) from None
    for folder in (MEMORIES, STATE_DIR):  # (init would write memories/.events/, .ee/ through a link)
        check_own_folder(root, folder)
    check_state_untracked(root)  # (a clone's .ee/lock linked out: init would write through it)
    return root


def chosen_branch(code: Git, branch: str | None, configured: str) -> str | None:
    """The memory branch: the one asked for (which must agree with the config's), else the config's."""
    from ee.git import memory_branch

    if branch and configured and branch != configured:
        raise ConfigError(
            f"this workspace keeps its memories on the branch {configured!r}",
            f"keep it (ee init --branch {configured}), or edit [store] branch in {CONFIG_PATH}",
        )
    if branch:
        return memory_branch.valid_name(code, branch)
    if not configured:
        return None
    try:  # (a cloned repository's config: "--force" would reach git as an option, "HEAD" make a branch)
        return memory_branch.valid_name(code, configured)
    except UsageError:
        raise ConfigError(
            f"{CONFIG_PATH}: [store] branch = {configured!r} is not a valid branch name",
            f"set [store] branch to a name such as ee/memories in {CONFIG_PATH}, or remove it",
        ) from None


def lay_out(root: Path, code: Git, branch: str | None, configured: str, remote: str) -> list[str]:
    """The memory branch's worktree (if any), ``memories/``, its events folder and the config: what was
    created."""
    from ee.git import memory_branch

    created: list[str] = []
    if branch:
        created += memory_branch.set_up(root, code, branch, remote)
    for folder in (MEMORIES, EVENTS):
        if not (root / folder).is_dir():
            (root / folder).mkdir(parents=True)
            created.append(folder + "/")
    keep = root / EVENTS / ".gitkeep"
    if not keep.exists():
        keep.write_text("")
    config_text = (root / CONFIG_PATH).read_text() if (root / CONFIG_PATH).exists() else None
    if config_text is None or (branch and branch != configured):
        atomic_write(root / CONFIG_PATH, with_branch(config_text or DEFAULT_CONFIG_TEXT, branch).encode())
        created.append(CONFIG_PATH)
    return created


def commit_init(root: Path, code: Git, branch: str | None, created: list[str]) -> str | None:
    """Commit ee's own files and, of ``.gitignore`` / ``.gitattributes``, only ee's lines (a user's
    uncommitted edits to them stay uncommitted, staged or not); the new commit, or None. ``created``
    gains the shared files written."""
    from ee.git import memory_branch

    head, _tree = code.head_state()
    own = [CONFIG_PATH] if branch else [CONFIG_PATH, f"{EVENTS}/.gitkeep"]
    shared: dict[str, tuple[str, ...]] = {
        ".gitignore": GITIGNORE_LINES,
        ".gitattributes": GITATTRIBUTES_LINES,
    }
    if branch:  # the memory branch has its own .gitattributes; the code branch ignores memories/
        shared = {".gitignore": (*GITIGNORE_LINES, memory_branch.IGNORE_LINE)}
    specs = [f"{prefix}:{code.repo_path(name)}" for name in (*own, *shared) for prefix in ("HEAD", "")]
    stored = code.read_specs(specs) if head else {}

    def committed(name: str) -> bytes | None:
        return stored.get(f"HEAD:{code.repo_path(name)}")

    paths = [name for name in own if committed(name) is None]
    if CONFIG_PATH in created and CONFIG_PATH not in paths:  # (its memory branch was just set)
        paths.append(CONFIG_PATH)
    blobs: dict[str, str] = {}
    index_blobs: dict[str, str] = {}
    for name, lines in shared.items():
        work_path = root / name
        work = work_path.read_bytes() if work_path.exists() else None
        if with_lines(work, lines) != work:
            atomic_write(work_path, with_lines(work, lines))
            created.append(name)
        before = committed(name)
        if with_lines(before, lines) == before:
            continue
        blobs[name] = code.hash_object(with_lines(before, lines))
        staged = stored.get(f":{code.repo_path(name)}")
        if staged is not None and staged != before:  # the user staged a change: keep it staged
            index_blobs[name] = code.hash_object(with_lines(staged, lines))
    if not (paths or blobs):
        return None
    message = format_message("ee: initialise workspace", {"Ee-Op": "init", "Ee-Actor": "human"})
    after = code.commit_paths(paths, message, blobs=blobs, index_blobs=index_blobs)
    return after if after and after != head else None


def register_merge_driver(git: Git) -> bool:
    """Register the memory merge driver in this clone's git config (git config is not cloned, so a
    fresh clone needs it); True when it was not registered (or named a Python that is gone).

    The command names this Python by absolute path, so git finds the driver even where ``ee`` is not
    on the PATH git sees (an IDE, a GUI client); ``ee init`` re-registers it when that Python is gone, or
    when an older ee registered it without ``-P``.
    """
    import shlex
    import sys

    current = git.run("config", "--get", "merge.ee-memory.driver", check=False).strip()
    words = shlex.split(current) if current else [""]
    unsafe = words[1:3] == ["-m", "ee"]  # (an older ee's: imports ee from the work tree git runs it in)
    if current and not unsafe and (words[0] == "ee" or Path(words[0]).exists()):
        return False
    git.run("config", "merge.ee-memory.name", "ee memory file merge")
    # -P: git runs the driver in the work tree, and `python -m` would import an ee/ folder the
    # repository ships before the installed ee (code of the repository's, run by a merge).
    command = f"{shlex.quote(sys.executable)} -P -m ee merge-driver %O %A %B %P"
    git.run("config", "merge.ee-memory.driver", command)
    return True


def with_branch(config_text: str, branch: str | None) -> str:
    """The config text with ``[store] branch = BRANCH`` (the first ``[store]`` table gets the line)."""
    if not branch:
        return config_text
    line = f'branch = "{branch}"                # memories/ is a worktree of this branch (ee init --branch)\n'
    lines = config_text.splitlines(keepends=True)
    for i, text in enumerate(lines):
        if text.strip() == "[store]":
            return "".join([*lines[: i + 1], line, *lines[i + 1 :]])
    return config_text.rstrip("\n") + "\n\n[store]\n" + line


def with_lines(data: bytes | None, lines: Sequence[str]) -> bytes:
    """A text file's bytes (None: absent) with the missing ``lines`` appended, in the file's line ending."""
    text = data or b""
    have = {line.rstrip(b"\r") for line in text.split(b"\n")}
    missing = [line.encode("utf-8") for line in lines if line.encode("utf-8") not in have]
    if not missing:
        return text
    newline = b"\r\n" if b"\r\n" in text else b"\n"
    if text and not text.endswith(b"\n"):
        text += newline
    return text + newline.join(missing) + newline
