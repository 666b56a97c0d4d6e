"""The opt-in memory branch: ``memories/`` as a ``git worktree`` of its own branch (``ee init --branch``).

By default memories live on the code branch: they travel with it, merge with its pull requests, and a
lesson (or a feedback event) recorded on a feature branch is seen on ``main`` only once that branch merges.
With a memory branch, ``memories/`` is the work tree of a dedicated branch (say ``ee/memories``), checked
out next to the code and ignored by it (``/memories/`` in ``.gitignore``). Memories and feedback events
are then the same whatever the code checkout, editable in place, with asOf over that branch's history;
``ee sync`` shares that branch, and every ee write commits to it (:class:`ee.git.repo.Git` runs in the
worktree: the one commit path, pointed elsewhere).

The branch's tree holds what the default mode keeps under ``memories/``, at its top: ``*.md`` memory
files, ``.events/*.jsonl``, and its own ``.gitattributes`` (the merge drivers) and ``.gitignore``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ee.errors import ConfigError, ConflictError, GitError, UsageError
from ee.git.repo import Git, format_message
from ee.store.files import EVENTS, MEMORIES

BRANCH_FILES = {
    ".gitattributes": "*.md merge=ee-memory\n.events/*.jsonl merge=union\n.curate/*.jsonl merge=union\n",
    ".gitignore": ".ee-tmp-*\n",
    ".events/.gitkeep": "",
}
IGNORE_LINE = f"/{MEMORIES}/"  # in the code branch's .gitignore


def worktree(root: Path) -> Path | None:
    """``memories/`` when it is a memory branch's worktree (its ``.git`` is a file), else None."""
    folder = root / MEMORIES
    return folder if (folder / ".git").is_file() else None


def code_branches(git: Git, remote: str) -> tuple[str | None, str | None]:
    """(the code branch checked out, the remote's default branch), read from git's files (no process); None
    for what is not known (a detached HEAD; a remote that never said, e.g. cloned while empty)."""

    def named(path: Path, prefix: str) -> str | None:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return text.removeprefix("ref: " + prefix) if text.startswith("ref: " + prefix) else None

    try:
        git_dir = git.git_dir
    except GitError:
        return None, None
    head = named(git_dir / "HEAD", "refs/heads/")
    default = named(git.common_dir / "refs" / "remotes" / remote / "HEAD", f"refs/remotes/{remote}/")
    return head, default


def valid_name(code: Git, branch: str) -> str:
    if code.run("check-ref-format", "--branch", branch, check=False).strip() != branch:
        raise UsageError(f"{branch!r} is not a valid branch name", "use a name such as ee/memories")
    return branch


def set_up(root: Path, code: Git, branch: str, remote: str) -> list[str]:
    """Make ``memories/`` the worktree of ``branch``: the local branch if there is one, else the remote's
    (fetched), else a new branch — seeded with the memories the code branch holds, which then leave it.
    Returns what it did, for ``ee init`` to say."""
    folder = root / MEMORIES
    done: list[str] = []
    if worktree(root) is not None:
        current = Git(root, folder).branch()
        if current != branch:
            raise ConfigError(
                f"memories/ is already the worktree of branch {current!r}, not {branch!r}",
                f"keep it (ee init --branch {current}), or set [store] branch in .ee/config.toml",
            )
        return done
    ref = f"refs/heads/{branch}"
    held = folder.exists() and any(folder.iterdir())
    if not _exists(code, ref):
        if remote in code.run("remote", check=False).split():
            code.run("fetch", "--quiet", remote, f"+{ref}:refs/remotes/{remote}/{branch}", check=False)
        if _exists(code, f"refs/remotes/{remote}/{branch}"):
            if held:
                raise _both_hold(branch)
            code.run("branch", "--quiet", "--track", branch, f"{remote}/{branch}")
            done.append(f"branch {branch} (from {remote}/{branch})")
        else:
            code.run("update-ref", ref, _first_commit(code, branch))
            done.append(f"branch {branch}" + (" (from the memories of this code branch)" if held else ""))
    elif held:
        raise _both_hold(branch)
    if held:
        _move_out(root, code, branch)
        done.append(f"{MEMORIES}/ removed from the code branch (now on {branch})")
    if folder.exists():
        shutil.rmtree(folder)  # (empty, or every file of it is in the branch's first commit)
    code.run("worktree", "add", "--quiet", str(folder), branch)
    done.append(f"{MEMORIES}/ (worktree of {branch})")
    return done


def _both_hold(branch: str) -> ConflictError:
    return ConflictError(
        f"both this code branch's memories/ and the branch {branch} hold memories",
        "export them (ee export jsonl), remove memories/ from the code branch, run "
        f"ee init --branch {branch}, then import them (ee import jsonl)",
    )


def _exists(code: Git, ref: str) -> bool:
    return bool(code.run("rev-parse", "-q", "--verify", ref + "^{commit}", check=False).strip())


def _first_commit(code: Git, branch: str) -> str:
    """The memory branch's first commit: its own files, plus the memories the code branch has (if any)."""
    spec = f"HEAD:{code.repo_path(MEMORIES)}"
    memories_tree = code.run("rev-parse", "-q", "--verify", spec, check=False).strip()
    listing = code.run("ls-tree", "-z", memories_tree) if memories_tree else ""
    have = {entry.partition("\t")[2] for entry in listing.split("\0") if entry}
    for name, text in BRANCH_FILES.items():
        top = name.split("/")[0]
        if top in have:
            continue
        blob = code.run("hash-object", "-w", "--stdin", input=text.encode()).strip()
        if "/" in name:  # (.events/.gitkeep)
            inner = code.run("mktree", input=f"100644 blob {blob}\t{name.split('/')[1]}\n".encode())
            listing += f"040000 tree {inner.strip()}\t{top}\0"
        else:
            listing += f"100644 blob {blob}\t{name}\0"
    tree = code.run("mktree", "-z", input=listing.encode()).strip()
    message = format_message(f"ee: memory branch {branch}", {"Ee-Op": "init", "Ee-Actor": "human"})
    return code.run("commit-tree", tree, "-m", message).strip()


def _move_out(root: Path, code: Git, branch: str) -> None:
    """The code branch's memories leave it (they start the memory branch): one commit removing them."""
    pending = code.run("status", "--porcelain", "--untracked-files=all", "--", code.repo_path(MEMORIES))
    if pending.strip():
        raise ConflictError(
            "memories/ has changes that are not committed; they would not reach the memory branch",
            "commit them first (ee sync --no-push, or git commit), then run ee init --branch again",
        )
    tracked = code.run("ls-files", "-z", "--", code.repo_path(MEMORIES)).split("\0")
    shutil.rmtree(root / MEMORIES)  # (all of it committed: the branch's first commit holds it)
    paths = [code.workspace_path(p) for p in tracked if p]
    message = format_message(f"ee: memories move to branch {branch}", {"Ee-Op": "init", "Ee-Actor": "human"})
    code.commit_paths(paths, message)


def events_elsewhere(git: Git, memory_id: str) -> list[dict[str, object]]:
    """With memories on the code branch: the other branches (local and remote-tracking) whose events file of
    ``memory_id`` holds events this checkout does not — feedback that counts here only once they merge.
    Two git processes (``for-each-ref``, one ``cat-file --batch``)."""
    refs = git.run("for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/remotes", check=False)
    names = [r for r in refs.split() if not r.endswith("/HEAD") and r != git.branch()]
    path = git.repo_path(f"{EVENTS}/{memory_id}.jsonl")
    found = git.read_specs([f"HEAD:{path}", *(f"{name}:{path}" for name in names)])
    here = _event_ids(found.get(f"HEAD:{path}"))
    out: list[dict[str, object]] = []
    for name in names:
        missing = _event_ids(found.get(f"{name}:{path}")) - here
        if missing:
            out.append({"branch": name, "events": len(missing)})
    return out


def _event_ids(data: bytes | None) -> set[str]:
    import json

    ids = set()
    for line in (data or b"").splitlines():
        try:
            ids.add(str(json.loads(line).get("id")))
        except (ValueError, AttributeError):
            continue
    return ids
