"""Everything git.

Every read and write runs git's plumbing through :mod:`ee.git.runner`. A commit builds its tree in ee's
own index file (``update-index`` + ``write-tree``), then ``commit-tree``, an ``update-index`` of git's own
index for ee's paths, and ``update-ref`` (atomic: it names the old HEAD). History, asOf and sync read
git's objects through the same runner (``cat-file --batch``, ``log``, ``config``): ee does not use
GitPython.

Commits made here never touch the user's staging area beyond ee's own paths: the tree is built from
``HEAD`` plus the given paths in a separate index file, and only those paths are then refreshed in the
real index, so a user's staged and unstaged work stays exactly as it was.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ee._crash import crash_point
from ee.errors import ConflictError, GitError, NotFound, StorageError, UsageError
from ee.git import runner
from ee.text import cut_at_word

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

_FALLBACK_IDENTITY = {
    "GIT_AUTHOR_NAME": "ee",
    "GIT_AUTHOR_EMAIL": "ee@localhost",
    "GIT_COMMITTER_NAME": "ee",
    "GIT_COMMITTER_EMAIL": "ee@localhost",
}
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_AUTO_GC_LOOSE = (6700 + 255) // 256  # git's estimate: more loose objects than this in objects/17
BULK_PATHS = 200  # from this many paths a commit packs their blobs with fast-import


def blob_id(data: bytes) -> str:
    """The id git gives ``data`` as a blob (SHA-1 of ``blob <len>\\0<data>``), computed without git."""
    import hashlib  # lazily: a query does not need it (~3 ms: OpenSSL, whose SHA-1 is ~10x CPython's own)

    digest = hashlib.sha1(b"blob %d\x00" % len(data))  # noqa: S324 - git's object id, not security
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One commit of :meth:`Git.log`."""

    sha: str
    date: str
    author: str
    email: str
    message: str
    trailers: Mapping[str, str]


class Git:
    """A git work tree holding an ee workspace at ``workspace`` (which may be a sub-folder of it), or — with
    ``repo`` — the work tree at ``repo`` inside the workspace (the memory branch's worktree, ``memories/``:
    its files are the workspace's ``memories/…``). Every git command runs in ``repo``."""

    def __init__(self, workspace: Path, repo: Path | None = None) -> None:
        self.workspace = workspace
        self.repo = repo or workspace
        self._offset: tuple[str, str] | None = None
        self._toplevel: Path | None = None
        self._git_dir: Path | None = None

    # ------------------------------------------------------------------------------------ plumbing

    def run(
        self,
        *args: str,
        input: bytes | None = None,  # noqa: A002 - mirrors subprocess
        env: Mapping[str, str] | None = None,
        check: bool = True,
        cwd: Path | None = None,
        holds_lock: bool = False,
    ) -> str:
        """``git ARGS``'s standard output. ``holds_lock``: the command takes a lock of git's own (its index,
        a ref): see :mod:`ee.git.runner`."""
        proc = runner.run(args, cwd or self.repo, input=input, env=env, holds_lock=holds_lock)
        if check and proc.returncode != 0:
            self._failed(args, proc.stderr)
        return proc.stdout.decode("utf-8", "surrogateescape")

    def _failed(self, args: tuple[str, ...], stderr: bytes) -> NoReturn:
        """Raise the GitError of ``git ARGS`` that ended with ``stderr`` and a non-zero exit code."""
        name = args[2] if args[0] == "-c" and len(args) > 2 else args[0]
        message = stderr.decode("utf-8", "replace").strip() or f"git {name} failed"
        if "not a git repository" in message:
            raise GitError(f"{self.repo} is not in a git repository", f"run: ee init {self.workspace}")
        raise GitError(f"git {name}: {message}", "run `ee doctor` to check the repository")

    @property
    def toplevel(self) -> Path:
        if self._toplevel is None:
            out = self.run("rev-parse", "--show-toplevel", "--absolute-git-dir")
            top, git_dir = out.split("\n")[:2]  # (one path a line: a path may hold U+2028, \x1c…)
            self._toplevel = Path(top)
            self._git_dir = Path(git_dir)
        return self._toplevel

    @property
    def git_dir(self) -> Path:
        if self._git_dir is None:
            _ = self.toplevel
        assert self._git_dir is not None
        return self._git_dir

    @property
    def offset(self) -> tuple[str, str]:
        """``(inner, outer)``: a repository path is ``inner + rest`` where its workspace path is
        ``outer + rest``. ``("sub/", "")`` for a workspace in a sub-folder of the work tree, ``("",
        "memories/")`` for the memory branch's worktree, ``("", "")`` when they are one folder."""
        if self._offset is None:
            top, workspace = self.toplevel.resolve(), self.workspace.resolve()
            if workspace.is_relative_to(top):
                inner = workspace.relative_to(top).as_posix()
                self._offset = ("" if inner == "." else inner + "/", "")
            else:
                self._offset = ("", top.relative_to(workspace).as_posix() + "/")
        return self._offset

    def repo_path(self, workspace_path: str) -> str:
        """A workspace-relative path → the path git uses (relative to the top level, '/'-separated)."""
        inner, outer = self.offset
        if not outer:
            return inner + workspace_path
        if workspace_path + "/" == outer:
            return "."
        if not workspace_path.startswith(outer):
            raise UsageError(
                f"{workspace_path} is outside the memory branch's worktree ({outer})",
                "only memories/ is kept on the memory branch",
            )
        return workspace_path[len(outer) :]

    def workspace_path(self, repo_path: str) -> str:
        inner, outer = self.offset
        return outer + repo_path.removeprefix(inner)

    def holds(self, workspace_path: str) -> bool:
        """Whether this repository keeps ``workspace_path`` (with a memory branch: only ``memories/``)."""
        outer = self.offset[1]
        return not outer or workspace_path.startswith(outer) or workspace_path + "/" == outer

    def is_repo(self) -> bool:
        proc = runner.run(["rev-parse", "--is-inside-work-tree"], self.repo)
        return proc.returncode == 0 and proc.stdout.strip() == b"true"

    def init(self) -> None:
        self.run("init", "-q")
        self._toplevel = None

    def head(self) -> str | None:
        """The commit HEAD points at, or None in a repository without commits."""
        out = self.run("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip()
        return out or None

    def head_ref(self) -> str:
        """What HEAD names, read from the file: the cheap freshness key (no process)."""
        try:
            text = (self.git_dir / "HEAD").read_text().strip()
        except OSError:
            return ""
        if not text.startswith("ref: "):
            return text
        ref = text[5:]
        refs = self.common_dir  # (a linked worktree's branches live in the main repository's folder)
        try:
            return ref + "@" + (refs / ref).read_text().strip()
        except OSError:
            return ref + "@packed:" + str(_mtime(refs / "packed-refs"))

    @property
    def common_dir(self) -> Path:
        """The folder holding the refs and objects: ``git_dir``, or for a linked worktree (the memory
        branch's) the main repository's, named by its ``commondir`` file."""
        try:
            named = (self.git_dir / "commondir").read_text().strip()
        except OSError:
            return self.git_dir
        return (self.git_dir / named).resolve()

    def branch(self) -> str:
        return self.run("rev-parse", "--abbrev-ref", "HEAD", check=False).strip() or "HEAD"

    # ------------------------------------------------------------------------------------ writing

    def head_state(self) -> tuple[str | None, str]:
        """(HEAD's commit or None in a repository without commits, its tree) in one git process.

        Also learns the top level and git folder, so a commit costs no separate look-up for them.
        """
        args = ["rev-parse", "--show-toplevel", "--absolute-git-dir", "HEAD", "HEAD^{tree}", "--"]
        out = self.run(*args, check=False).split("\n")  # (see toplevel)
        if len(out) >= 2 and self._toplevel is None:
            self._toplevel, self._git_dir = Path(out[0]), Path(out[1])
        if len(out) >= 4 and all(len(line) >= 40 and _is_hex(line) for line in out[2:4]):
            return out[2], out[3]
        head = self.head()  # no commit yet, or something odd: ask the careful way
        if head is None:
            return None, EMPTY_TREE
        return head, self.run("rev-parse", f"{head}^{{tree}}").strip()

    def commit_paths(
        self,
        paths: Iterable[str],
        message: str,
        *,
        blobs: Mapping[str, str] | None = None,
        index_blobs: Mapping[str, str] | None = None,
    ) -> str:
        """Commit the working-tree state of ``paths`` (workspace-relative; missing → deleted), nothing else.

        ``blobs`` (path → blob id) commits those paths with that content instead of the working file's;
        ``index_blobs`` says what git's index then holds for them (default: the committed blob), so a
        user's staged or unstaged change to such a file stays staged or unstaged.
        Returns the new commit id (HEAD's when nothing changed). The caller holds the workspace lock.
        """
        parent, parent_tree = self.head_state()  # first: it also learns the top level, for repo_path
        self._refuse_leaving_head()
        fixed = {self.repo_path(p): sha for p, sha in (blobs or {}).items()}
        repo_paths = sorted({self.repo_path(p) for p in paths} - set(fixed))
        if not repo_paths and not fixed:
            raise UsageError("nothing to commit", "name at least one path")
        staged = {self.repo_path(p): sha for p, sha in (index_blobs or {}).items()}
        tree = self._build_tree(parent, parent_tree, repo_paths, fixed)
        if tree == parent_tree:
            return parent or ""  # nothing changed
        crash_point("git.tree")
        sha = self._commit_tree(tree, parent, message)
        crash_point("git.commit")
        moved = False
        try:
            # git's index before HEAD: killed in between, ee's paths are left staged as the new version (a
            # plain `git commit` commits them). The other order left them staged as the *old* version, and
            # the user's next `git commit` silently undid ee's commit (deleting a new memory).
            if repo_paths:
                self._retry_index_lock(lambda: self._update_index(repo_paths, {}))
            if fixed:
                self._retry_index_lock(
                    lambda: self._set_index_blobs({p: staged.get(p, b) for p, b in fixed.items()}, {})
                )
            crash_point("git.index")
            # The old value makes the update atomic: if HEAD moved meanwhile (a user's commit), git refuses.
            old = parent or "0" * 40
            self.run(
                "update-ref", "-m", "ee: " + message.splitlines()[0][:60], "HEAD", sha, old, holds_lock=True
            )
            moved = True
        except BaseException:
            if not moved:
                # HEAD did not move: ee's paths go back to HEAD's version in git's index (a user's staged
                # one stays).
                self._reset_index([*repo_paths, *(p for p in fixed if p not in staged)], check=False)
            raise
        self._auto_gc()
        return sha

    def _refuse_leaving_head(self) -> None:
        """No commit on a HEAD a rebase or a bisect in progress will leave: its abort (or reset) would
        drop ee's commit, and with it the memory, after ee had said it was saved. (A merge, cherry-pick or
        revert keeps one: aborting resets to the current HEAD.)"""
        from ee.git.progress import in_progress

        operation = in_progress(self.git_dir)
        if operation is not None and operation.leaves_head:
            end = operation.finish + ("" if operation.finish == operation.abort else ", or --abort")
            raise ConflictError(
                f"a git {operation.name} is in progress in this repository: a commit made now would be "
                "dropped when it ends",
                f"end it first ({end}; `ee doctor` says whether ee started it), then run the command again",
            )

    def _auto_gc(self) -> None:
        """What ``git commit`` does once it has committed: ``git gc --auto``. ee commits with plumbing,
        which never packs, so a repository only ee writes to would gather loose objects without end (a
        remember in a 10k-memory store writes a ~190 KB tree). git's own cheap estimate comes first (the
        loose objects in ``objects/17``, times 256, against ``gc.auto``'s default 6700); only above it is
        ``git gc --auto`` run, which reads ``gc.auto`` itself (0: never) and packs in the background."""
        try:
            loose = sum(1 for name in os.listdir(self.git_dir / "objects" / "17") if len(name) == 38)
        except OSError:
            return
        if loose <= _AUTO_GC_LOOSE:
            return
        with contextlib.suppress(GitError, OSError):  # maintenance: never a reason for a commit to fail
            self.run("gc", "--auto", "--quiet", cwd=self.toplevel, holds_lock=True)

    def private_index(self) -> Path:
        """The index file ee keeps for this workspace's commits (``.git/ee/index-<workspace>``)."""
        return self.git_dir / "ee" / ("index-" + re.sub(r"[^A-Za-z0-9]+", "-", self.repo_path("memories")))

    def _build_tree(
        self, parent: str | None, parent_tree: str, repo_paths: list[str], fixed: Mapping[str, str]
    ) -> str:
        """The tree of HEAD with ``repo_paths`` (as in the working tree) and ``fixed`` blobs: built in ee's
        own index file, never git's, so nothing the user staged can slip in.

        That file is kept (``.git/ee/index-<workspace>``) with a note of the tree it holds. When HEAD's tree
        is still that tree (ee made the last commit), the next commit starts from it instead of reading
        HEAD's whole tree again: ``read-tree`` is the slowest step in a large repository (~0.1-0.2 s at
        20,000 files). The caller holds the workspace lock, so no other ee uses the file meanwhile.
        """
        index = self.private_index()
        index.parent.mkdir(exist_ok=True)
        note = index.with_name(index.name + ".tree")
        env = {"GIT_INDEX_FILE": str(index)}
        # A split index: the ~1 MB of a 10,000-file store's entries sit in a shared file (.git/sharedindex.*)
        # written once; each commit reads it and writes only the few changed entries, so update-index and
        # write-tree cost ~10 ms instead of ~30 (else git writes and checksums the whole file each time).
        # Given as config, not --split-index, which would write a new shared file every time.
        own = ("-c", "core.splitIndex=true")
        try:
            held = note.read_text().strip()
        except OSError:
            held = ""
        # Without the note the file counts as holding anything until rebuilt; a .lock left beside it is a
        # killed ee's (we hold the workspace lock).
        for stale in (note, index.with_name(index.name + ".lock")):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        reuse = held == parent_tree and index.exists()
        # The blobs go into the object store, not the index: packed once, whatever happens to the index.
        packed = self._pack_blobs(repo_paths) if len(repo_paths) >= BULK_PATHS else {}
        rest = [p for p in repo_paths if p not in packed]
        while True:
            if not reuse:
                with contextlib.suppress(FileNotFoundError):
                    index.unlink()
                if parent:
                    self.run(*own, "read-tree", parent, env=env, cwd=self.toplevel)
            try:
                if rest:
                    self._update_index(rest, env, own)
                if fixed or packed:
                    self._set_index_blobs({**packed, **fixed}, env, own)
                tree = self.run(*own, "write-tree", env=env, cwd=self.toplevel).strip()
                break
            except GitError:
                if not reuse:
                    raise
                reuse = False  # the kept file is damaged: build it again from HEAD
        with contextlib.suppress(OSError):
            note.write_text(tree + "\n")
        return tree

    def _pack_blobs(self, repo_paths: list[str]) -> dict[str, str]:
        """Store the regular files among ``repo_paths`` as blobs in one pack (``git fast-import``): for a bulk
        import, ~4x faster than ``update-index`` writing 10,000 loose objects. Path → blob id; what is not a
        plain regular file (deleted, a symlink, executable) is left out, for ``update-index`` to handle."""
        import subprocess

        found: dict[str, str] = {}
        proc = runner.start(["fast-import", "--quiet"], self.toplevel, stdin=subprocess.PIPE)
        assert proc.stdin is not None
        try:
            for path in repo_paths:
                full = self.toplevel / path
                try:
                    info = os.lstat(full)
                    if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o111:
                        continue
                    data = full.read_bytes()
                except OSError:
                    continue
                try:
                    proc.stdin.write(b"blob\ndata %d\n%s\n" % (len(data), data))
                except BrokenPipeError:  # fast-import stopped: its message follows
                    break
                found[path] = blob_id(data)
            _, err = proc.communicate()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if proc.returncode != 0:
            raise GitError(
                "git fast-import: " + err.decode("utf-8", "replace").strip(),
                "run `ee doctor --full` to check the repository",
            )
        return found

    def _update_index(
        self, repo_paths: list[str], env: Mapping[str, str], config: tuple[str, ...] = ()
    ) -> None:
        # --stdin takes any number of paths; --remove drops entries whose file is gone.
        data = "".join(p + "\0" for p in repo_paths).encode("utf-8", "surrogateescape")
        self.run(
            *config,
            "update-index",
            "--add",
            "--remove",
            "-z",
            "--stdin",
            input=data,
            env=env,
            cwd=self.toplevel,
            holds_lock="GIT_INDEX_FILE" not in env,  # git's own index (ee's own: ee removes a stale lock)
        )

    def _set_index_blobs(
        self, blobs: Mapping[str, str], env: Mapping[str, str], config: tuple[str, ...] = ()
    ) -> None:
        data = "".join(f"100644 {sha}\t{path}\0" for path, sha in sorted(blobs.items()))
        self.run(
            *config,
            "update-index",
            "-z",
            "--index-info",
            input=data.encode("utf-8", "surrogateescape"),
            env=env,
            cwd=self.toplevel,
            holds_lock="GIT_INDEX_FILE" not in env,
        )

    def hash_object(self, data: bytes) -> str:
        """Store ``data`` as a blob in the object database; its id."""
        return self.run("hash-object", "-w", "--stdin", input=data).strip()

    def read_specs(self, specs: Iterable[str]) -> dict[str, bytes | None]:
        """``<commit-ish>:<path>`` (or ``:<path>`` for git's index, or a blob id) → bytes, None if missing.

        One ``git cat-file --batch`` process for all of them.
        """
        return runner.read_objects(specs, self.toplevel)

    def _commit_tree(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-F", "-"]
        if parent:
            args[2:2] = ["-p", parent]
        data = message.encode("utf-8")
        try:
            return self.run(*args, input=data).strip()
        except GitError as exc:
            if "tell me who you are" not in exc.message and "empty ident" not in exc.message:
                raise
            return self.run(*args, input=data, env=_FALLBACK_IDENTITY).strip()

    def _retry_index_lock(self, action: Callable[[], None]) -> None:
        """Run an update of git's own index, waiting while another git process holds ``index.lock``."""
        for attempt in range(50):
            try:
                action()
                return
            except GitError as exc:
                if "index.lock" not in exc.message or attempt == 49:
                    raise GitError(
                        "could not update git's index (nothing was committed): " + exc.message,
                        "try again; if no git command is running, a killed one left its lock behind: "
                        f"rm {self.git_dir / 'index.lock'}",
                    ) from None
                time.sleep(0.1)

    # ------------------------------------------------------------------------------------ reading

    def resolve(self, spec: str) -> str:
        """A commit-ish → a full commit id, or NotFound. An option, or a range (``A..B``, ``A...B``,
        ``^A``: git reads it as several commits, or none), is a UsageError."""
        if spec.startswith("-"):
            raise UsageError(f"{spec!r} is not a commit-ish", "name a commit, tag, branch or HEAD~N")
        if not is_commitish(spec):  # (no ref name holds "..": it is a range before git sees it)
            raise UsageError(f"{spec!r} is a range, not one commit", "name a commit, tag, branch or HEAD~N")
        out = self.run("rev-parse", "-q", "--verify", spec + "^{commit}", check=False).split()
        if len(out) == 1 and len(out[0]) >= 40 and _is_hex(out[0]):
            return out[0]
        if out:  # a range (A..B, A...B, ^A): rev-parse prints its ends, and fails
            raise UsageError(f"{spec!r} is a range, not one commit", "name a commit, tag, branch or HEAD~N")
        raise NotFound(f"no commit {spec!r} in this repository", "see `git log --oneline` for commits")

    def commit_at_or_before(self, when_epoch: int) -> str | None:
        """The last commit on the current history at or before a time (committer date), or None."""
        if self.head() is None:
            return None
        out = self.run("rev-list", "-1", "--first-parent", f"--before={when_epoch}", "HEAD").strip()
        return out or None

    def ls_tree(self, commit: str, folder: str = "memories", suffix: str = ".md") -> dict[str, str]:
        """Workspace-relative paths of the ``suffix`` files below ``folder`` at ``commit`` → blob ids.

        Hidden folders (``memories/.events``) are skipped unless ``folder`` names one.
        """
        repo_folder = self.repo_path(folder)
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit, "--", repo_folder)
        files: dict[str, str] = {}
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, _, path = entry.partition("\t")
            mode, kind, sha = meta.split()
            rel = self.workspace_path(path)
            hidden = any(part.startswith(".") for part in rel.removeprefix(folder).split("/"))
            if kind == "blob" and mode in ("100644", "100755") and path.endswith(suffix) and not hidden:
                files[rel] = sha
        return files

    def read_blobs(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        """Blob contents through one ``git cat-file --batch`` process."""
        wanted = list(dict.fromkeys(blob_ids))
        if not wanted:
            return {}
        proc = runner.run(
            ["cat-file", "--batch"], self.repo, input="".join(b + "\n" for b in wanted).encode()
        )
        if proc.returncode != 0:
            raise GitError(
                "git cat-file failed: " + proc.stderr.decode("utf-8", "replace").strip(),
                "run `ee doctor --full` to check the repository",
            )
        return _parse_batch(proc.stdout)

    def log(self, *paths: str, max_count: int | None = None, follow: bool = False) -> list[LogEntry]:
        """Commits touching ``paths`` (workspace-relative), newest first."""
        args = ["log", f"--format={runner.RECORD}%H%x00%aI%x00%an%x00%ae%x00%B"]
        if max_count:
            args.append(f"-n{max_count}")
        if follow:
            args.append("--follow")
        args.append("--")
        args.extend(self.repo_path(p) for p in paths)
        if self.head() is None:
            return []
        out = self.run(*args, cwd=self.toplevel)
        entries = []
        for record in runner.records(out):
            record = record.strip("\n")
            if not record:
                continue
            sha, date, author, email, body = record.split("\x00")
            entries.append(LogEntry(sha, date, author, email, body.strip(), parse_trailers(body)))
        return entries

    def index_blobs(self, folder: str) -> dict[str, str]:
        """Workspace paths below ``folder`` in git's index → their staged blob id."""
        out = self.run("ls-files", "--stage", "-z", "--", self.repo_path(folder))
        staged: dict[str, str] = {}
        for entry in out.split("\0"):
            info, tab, path = entry.partition("\t")
            if tab:
                staged[self.workspace_path(path)] = info.split(" ")[1]
        return staged

    def unstage(self, paths: Iterable[str]) -> None:
        """Put workspace ``paths`` back to HEAD's version in git's index (a path HEAD lacks leaves the
        index); the working files are not touched. The caller holds the workspace lock."""
        self._reset_index([self.repo_path(p) for p in paths], check=True)

    def _reset_index(self, repo_paths: list[str], *, check: bool) -> None:
        if not repo_paths:
            return
        self.run(
            "reset",
            "-q",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            check=check,
            input="".join(p + "\0" for p in repo_paths).encode("utf-8", "surrogateescape"),
            cwd=self.toplevel,
            holds_lock=True,
        )

    def status_paths(self, folder: str) -> dict[str, str]:
        """Paths below ``folder`` that differ from HEAD (staged or not) → porcelain code."""
        out = self.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", self.repo_path(folder)
        )
        changed: dict[str, str] = {}
        for entry in out.split("\0"):
            if len(entry) > 3:
                changed[self.workspace_path(entry[3:])] = entry[:2]
        return changed


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def parse_trailers(message: str) -> dict[str, str]:
    """``Key: value`` lines of the last paragraph of a commit message."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if not paragraphs:
        return {}
    trailers: dict[str, str] = {}
    for line in paragraphs[-1].split("\n"):  # (as git: U+2028 or \x1c do not end a trailer's line)
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key:
            trailers[key] = value.strip()
    return trailers


def format_message(subject: str, trailers: Mapping[str, str], body: str = "") -> str:
    """The message of every commit ee writes: a subject of at most 72 characters, a body, ``Key: value``
    trailers; every part masked (:func:`ee.policy.secrets.mask_text`). A subject quotes a memory's title
    and a hand-written file can hold a token that no write guard saw: pushed, it would publish it.
    Masked before the cut, so a token the cut would split is still recognised. A title's control characters
    and bidirectional overrides are written as escapes (``git log`` in a terminal shows them, not obeys
    them), and a trailer's value stays on its line (a newline in it cannot add a trailer)."""
    from ee.policy.secrets import mask_text
    from ee.policy.shown import log_line, visible

    parts = [_cut_subject(visible(" ".join(mask_text(" ".join(subject.split())).split())))]
    if body:
        parts.append(visible(mask_text(body.strip())))
    parts.append("\n".join(f"{k}: {log_line(mask_text(v))}" for k, v in trailers.items()))
    return "\n\n".join(parts) + "\n"


SUBJECT_MAX = 72  # git's and most forges' advice for a commit subject


def _cut_subject(subject: str) -> str:
    """``subject`` within :data:`SUBJECT_MAX` characters: a longer one ends at the last whole word that
    fits, followed by ``...`` (ASCII, so the cut reads as a cut and not as the title's own last word)."""
    if len(subject) <= SUBJECT_MAX:
        return subject
    return cut_at_word(subject, SUBJECT_MAX - len("..."), "...", strip=" :,;-")


def _parse_batch(data: bytes) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    pos = 0
    while pos < len(data):
        header_end = data.index(b"\n", pos)
        header = data[pos:header_end].decode()
        pos = header_end + 1
        parts = header.split()
        if len(parts) == 2 and parts[1] == "missing":
            continue
        sha, _kind, size = parts[0], parts[1], int(parts[2])
        out[sha] = data[pos : pos + size]
        pos += size + 1
    return out


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def is_commitish(spec: str) -> bool:
    """Can ``spec`` name one commit? Not an option (``-…``) nor a range (``A..B``, ``A...B``)."""
    return not spec.startswith("-") and ".." not in spec


def check_own_folder(root: Path | str, folder: str = "memories") -> None:
    """A StorageError when ``root/folder`` (``memories`` or ``.ee``) is a symlink that git tracks and that
    leads out of the repository.

    git checks a committed link out as a link: a teammate's commit could point ``memories`` at ``..``, a
    home folder or ``/``, and ee would read, index and hand to agents every ``*.md`` below it (and walk
    all of ``/``); or point ``.ee`` at a folder where ee's index, lock, logs and ``context.md`` would
    overwrite what is there. Every lister of memory files, and every way into a workspace, calls this
    first: one ``lstat`` when the folder is no link. A link a person made here and git does not track
    (the store kept elsewhere on this machine) is theirs, and is followed.
    """
    path = os.path.join(root, folder)
    if not os.path.islink(path):
        return
    target = Path(os.path.realpath(path))
    if target.is_relative_to(os.path.realpath(root)):
        return  # (a link inside the workspace, or a loop: each holds nothing ee would read from outside)
    listed = runner.run(["ls-files", "--stage", "--", folder], root).stdout.decode("utf-8", "replace")
    if not any(line.startswith("120000 ") and line.endswith(f"\t{folder}") for line in listed.splitlines()):
        return
    top = runner.run(["rev-parse", "--show-toplevel"], root).stdout.decode("utf-8", "replace").strip()
    if top and target.is_relative_to(os.path.realpath(top)):
        return
    raise StorageError(
        f"{folder}/ is a symlink, committed to git, to a folder outside the repository; ee reads and "
        "writes nothing through it",
        f"replace the link with a folder of its own: git rm {folder} && git commit -m '{folder}: a "
        f"folder, not a link', then ee init; `git log -- {folder}` names the commit that made it a link",
    )


def holds_nothing(exc: OSError) -> bool:
    """Is ``exc`` (from opening a folder) a folder that is not there, is not a folder, or is a symlink loop
    (``memories -> memories``)? Each holds no files."""
    return isinstance(exc, FileNotFoundError | NotADirectoryError) or exc.errno == errno.ELOOP
