"""What a git hook needs to know about the repository: the staged change, the branch, a rebase in progress.

Plain ``git`` processes and the standard library only: this runs on every commit, so nothing heavy is
imported here. Every command inherits the hook's environment, so ``GIT_INDEX_FILE`` (``git commit -a``,
``git commit PATH``) and ``GIT_DIR`` are honoured as git set them.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

MAX_DIFF_BYTES = 512 * 1024  # a larger staged diff is read up to here: a query needs its gist
MAX_QUERY_TERMS = 40
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-/][A-Za-z_][A-Za-z0-9_]*)*")
_KEYWORDS = (
    "def class return import from self none true false null let const var function public private static "
    "void int str bool if else elif for while try except finally with pass break continue new this end "
    "and or not in is as of to the a an be do"
)
_CODE_WORDS = frozenset(_KEYWORDS.split())
BUSY_MARKERS = ("rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "REVERT_HEAD")


def git(*args: str, cwd: Path | None = None, check: bool = True) -> str:
    """Run git; its stdout as text. ``check``: raise ``RuntimeError`` (with git's message) on failure."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
        raise RuntimeError(f"git {args[0]}: {message}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def git_dir(cwd: Path) -> Path:
    """The git folder of the work tree at ``cwd``: ``$GIT_DIR``, ``.git`` (a folder, or a ``gitdir:`` file
    as in linked worktrees) without a process, else ``git rev-parse``."""
    env = os.environ.get("GIT_DIR")
    if env:
        return (cwd / env).resolve()
    dot = cwd / ".git"
    if dot.is_dir():
        return dot
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = dot.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            return (cwd / text[7:].strip()).resolve()
    return Path(git("rev-parse", "--absolute-git-dir", cwd=cwd).strip())


def busy(git_folder: Path) -> str | None:
    """The operation in progress (a rebase, cherry-pick or revert) when hooks should stay quiet, else None."""
    for marker in BUSY_MARKERS:
        if (git_folder / marker).exists():
            return marker
    return None


def staged_paths(cwd: Path | None = None) -> list[str]:
    """Repository-relative paths the staged change adds, modifies or deletes (a rename is both paths)."""
    out = git("diff", "--cached", "--name-only", "--no-renames", "-z", cwd=cwd)
    return [p for p in out.split("\0") if p]


def staged_added_text(cwd: Path | None = None, exclude: Sequence[str] = ()) -> str:
    """The lines the staged change adds (without the ``+``), up to :data:`MAX_DIFF_BYTES`.

    ``exclude``: repository-relative folders left out (the memory files themselves, so a commit adding a
    memory is not matched against that memory)."""
    specs = [f":(top,exclude){folder}" for folder in exclude]
    args = ["git", "diff", "--cached", "-U0", "--no-color", "--no-ext-diff", "--no-renames", "--", *specs]
    with subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        data = proc.stdout.read(MAX_DIFF_BYTES)
        proc.kill()
    lines = data.decode("utf-8", "replace").splitlines()
    return "\n".join(line[1:] for line in lines if line.startswith("+") and not line.startswith("+++"))


def staged_blobs(paths: Iterable[str], cwd: Path | None = None) -> dict[str, bytes]:
    """The staged content (``git show :PATH``) of each path, read by one ``git cat-file --batch``."""
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return {}
    request = "".join(f":{p}\n" for p in wanted).encode("utf-8", "surrogateescape")
    proc = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=cwd, input=request, capture_output=True, check=True
    )
    out: dict[str, bytes] = {}
    data, pos = proc.stdout, 0
    for path in wanted:
        end = data.index(b"\n", pos)
        header = data[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] == b"missing":
            continue
        size = int(header[2])
        out[path] = data[pos : pos + size]
        pos += size + 1
    return out


def terms_of(paths: Sequence[str], text: str = "") -> list[str]:
    """Query words for a change: each path whole, its file stem and its last folder names, then the
    identifiers and words of ``text`` (added lines) by frequency, without keywords every language shares.
    Deterministic; at most :data:`MAX_QUERY_TERMS`."""
    terms: list[str] = []
    for path in paths:
        parts = [p for p in path.replace(os.sep, "/").split("/") if p and p != "."]
        if parts:
            leaf = parts[-1]
            terms += ["/".join(parts), leaf.rsplit(".", 1)[0] if "." in leaf[1:] else leaf, *parts[:-1][-2:]]
    counts = Counter(m.group(0) for m in _IDENT.finditer(text))
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    terms += [word for word, _n in ranked if len(word) > 2 and word.lower() not in _CODE_WORDS]
    seen: set[str] = set()
    out: list[str] = []
    for term in terms:
        if term.lower() not in seen:
            seen.add(term.lower())
            out.append(term)
    return out[:MAX_QUERY_TERMS]


def branch_name(cwd: Path | None = None) -> str:
    return git("rev-parse", "--abbrev-ref", "HEAD", cwd=cwd, check=False).strip() or "HEAD"


def recent_subjects(cwd: Path | None = None, count: int = 5) -> list[str]:
    """The subjects of the last commits, without ee's own (``ee: …``) and merges."""
    out = git("log", f"-{count * 3}", "--no-merges", "--format=%s", cwd=cwd, check=False)
    subjects = [s.strip() for s in out.splitlines() if s.strip() and not s.startswith("ee:")]
    return subjects[:count]


def branch_task(cwd: Path | None = None) -> str:
    """The task a branch stands for: its name in words, then its recent commit subjects."""
    branch = branch_name(cwd)
    words = " ".join(w for w in re.split(r"[/_\-.]+", branch) if w and w != "HEAD")
    parts = [words] if words else []
    parts += recent_subjects(cwd)
    return "; ".join(parts)


def message_settings(cwd: Path | None = None) -> tuple[str, str]:
    """(commit.cleanup, core.commentChar) as configured ('' when unset)."""
    out = git("config", "-z", "--get-regexp", r"^(commit\.cleanup|core\.commentchar)$", cwd=cwd, check=False)
    values = {"commit.cleanup": "", "core.commentchar": ""}
    for item in out.split("\0"):
        key, _sep, value = item.partition("\n")
        if key.lower() in values:
            values[key.lower()] = value.strip()
    return values["commit.cleanup"].lower(), values["core.commentchar"]


def workspace_root(cwd: Path) -> Path | None:
    """The ee workspace a hook running in ``cwd`` (the work tree's top) serves: ``cwd`` itself when it holds
    ``.ee/`` or ``memories/``, else the folder ``git config ee.workspace`` names (set by ``ee hooks install``
    for a workspace in a sub-folder), else None. ``$EE_WORKSPACE`` is ignored on purpose: hooks serve the
    repository being committed to, not a store the shell happens to point at."""
    if (cwd / ".ee").is_dir() or (cwd / "memories").is_dir():
        return cwd
    sub = git("config", "--get", "ee.workspace", cwd=cwd, check=False).strip()
    if sub:
        root = (cwd / sub).resolve()
        if (root / ".ee").is_dir() or (root / "memories").is_dir():
            return root
    return None


def relative_prefix(root: Path, top: Path) -> str:
    """The workspace's folder inside the work tree, '' at the top, else ending with '/'."""
    rel = os.path.relpath(root.resolve(), top.resolve()).replace(os.sep, "/")
    return "" if rel == "." else rel.rstrip("/") + "/"
