"""``ee sync``: share a memory store through any git remote.

Under the workspace lock: commit pending changes of ee's own paths (``memories/``, ``.ee/config.toml``),
fetch the branch from the remote, integrate it (rebase or merge; memory files merge through
``ee merge-driver``, events files through git's ``union`` driver), push, and on a lost push race fetch,
integrate and push again. The store may live inside a larger code repository: only ee's paths are
committed, and the user's uncommitted work elsewhere is stashed around the integration (staged and
unstaged changes restored as they were) — or, when incoming changes touch the same files, left alone
with a clear refusal.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.config import CONFIG_PATH
from ee.discovery import check_state_untracked
from ee.errors import ConfigError, ConflictError, EeError, GitError, UsageError
from ee.git import runner
from ee.git.progress import Operation, in_progress
from ee.git.repo import EMPTY_TREE, Git, format_message
from ee.model import Problem
from ee.store.files import EVENTS, MEMORIES

if TYPE_CHECKING:
    from ee.policy.trust import Actor
    from ee.workspace import Workspace

MAX_ATTEMPTS = 6
# Written under .ee/ before ee starts a rebase or a merge, removed once it ended: a kill -9 in between leaves
# it, so `ee doctor` can tell the half-done operation ee started from one a person started.
STARTED = ".ee/sync-started.json"
_AUTH_SIGNS = (
    "authentication failed",
    "permission denied",
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "403",
    "401",
    "access denied",
)
_RACE_SIGNS = ("fetch first", "non-fast-forward", "failed to update ref", "cannot lock ref", "failed to lock")


@dataclass(slots=True)
class Changes:
    """What one side received: commits, and the memory ids added / changed / removed, events changed.

    A file that does not parse is named by its path instead of an id.
    """

    commits: list[dict[str, str]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class SyncReport:
    remote: str
    url: str
    branch: str
    strategy: str
    committed: str | None = None
    integration: str = "up-to-date"  # up-to-date | fast-forward | rebase | merge
    pushed: bool = False
    ahead: int = 0  # commits the remote does not have (after the push: 0)
    attempts: int = 0
    head: str | None = None
    incoming: Changes = field(default_factory=Changes)
    outgoing: Changes = field(default_factory=Changes)
    conflicted: list[dict[str, Any]] = field(default_factory=list)  # every memory left to resolve
    skipped: list[Problem] = field(default_factory=list)
    index: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["incoming"], out["outgoing"] = self.incoming.to_dict(), self.outgoing.to_dict()
        out["skipped"] = [p.to_dict() for p in self.skipped]
        return out


def sync(
    ws: Workspace,
    remote: str | None = None,
    strategy: str | None = None,
    push: bool = True,
    actor: Actor | None = None,
) -> SyncReport:
    """Commit, fetch, integrate, push (retrying a lost push race). See the module docstring."""
    remote = remote or str(ws.config.get("sync.remote"))
    strategy = strategy or str(ws.config.get("sync.strategy"))
    if strategy not in ("rebase", "merge"):
        raise UsageError(f"unknown strategy {strategy!r}", "use --strategy rebase or --strategy merge")
    with ws.lock():
        session = Session(ws, remote)
        refuse_in_progress(ws.git)
        report = SyncReport(remote, session.url, session.branch, strategy)
        report.committed, report.skipped = commit_pending(ws, actor)
        start = ws.git.head()
        upstream = _integrate_and_push(session, report, strategy, push)
        report.head = ws.git.head()
        if report.head != start:  # (what it pulled may track files under .ee/: nothing more is opened)
            check_state_untracked(ws.root)
        _fill_changes(session, report, start, upstream)
        report.conflicted = conflicted_memories(ws)
    if report.head != start:
        report.index = catch_up_index(ws, start, report.head)
    return report


def _integrate_and_push(session: Session, report: SyncReport, strategy: str, push: bool) -> str | None:
    for attempt in range(1, MAX_ATTEMPTS + 1):
        report.attempts = attempt
        upstream = session.fetch()
        mode = session.integrate(upstream, strategy)
        if report.integration == "up-to-date":
            report.integration = mode
        report.ahead = session.ahead(upstream)
        if not push or report.ahead == 0:
            return upstream
        refuse_outgoing_secrets(session.git, upstream)
        if session.push():
            report.pushed, report.ahead = True, 0
            return upstream
        time.sleep(min(2.0, 0.1 * 2**attempt) * random.uniform(0.5, 1.5))
    raise ConflictError(
        f"lost the push race to {session.remote}/{session.remote_branch} {MAX_ATTEMPTS} times "
        "(others keep pushing); your commits are safe locally",
        "run `ee sync` again in a moment",
    )


def _fill_changes(session: Session, report: SyncReport, start: str | None, upstream: str | None) -> None:
    git = session.git
    head = report.head
    if head and start and head != start:
        report.incoming = memory_changes(git, start, head, session.commits(start, upstream))
    if report.pushed and head:
        report.outgoing = memory_changes(git, upstream or EMPTY_TREE, head, session.commits(upstream, head))


def memory_changes(git: Git, old: str, new: str, commits: list[dict[str, str]]) -> Changes:
    """The memory files that differ between two commits, as ids (one ``git diff`` and one ``cat-file``)."""
    out = git.run(
        "diff",
        "--raw",
        "-z",
        "--no-renames",
        "--no-abbrev",
        old,
        new,
        "--",
        git.repo_path(MEMORIES),
        cwd=git.toplevel,
    )
    fields = out.split("\0")
    entries = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        _old_mode, _new_mode, old_blob, new_blob, status = meta.lstrip(":").split()
        entries.append((status[0], old_blob if status[0] == "D" else new_blob, git.workspace_path(path)))
    blobs = git.read_blobs(blob for _s, blob, rel in entries if _is_memory_file(rel))
    changes = Changes(commits=commits)
    gone: dict[str, str] = {}
    for status, blob, rel in entries:
        if _is_event_file(rel) and rel.endswith(".jsonl"):
            changes.events.append(rel.rsplit("/", 1)[1].removesuffix(".jsonl"))
            continue
        if not _is_memory_file(rel):
            continue
        memory_id = _identify(blobs.get(blob, b""), rel)
        if status == "D":
            gone[memory_id] = rel
            continue
        (changes.added if status == "A" else changes.changed).append(memory_id)
    moved = [i for i in changes.added if i in gone]  # a rename: removed at one path, added at another
    changes.added = [i for i in changes.added if i not in gone]
    changes.changed += moved
    changes.removed = [i for i in gone if i not in moved]
    for name in ("added", "changed", "removed", "events"):
        setattr(changes, name, sorted(set(getattr(changes, name))))
    return changes


def _identify(data: bytes, rel: str) -> str:
    from ee.store import frontmatter

    try:
        memory, _ = frontmatter.parse(frontmatter.decode(data, rel), rel)
    except EeError:
        return rel
    return memory.id


def catch_up_index(ws: Workspace, before: str | None, after: str | None) -> dict[str, Any] | None:
    """Bring the derived index up to date with what sync changed between commits ``before`` and ``after``.

    ``open_index`` does the work incrementally (only the changed files are read; derived data is reused
    by blob id). Returns its sync report, or None when HEAD did not move.
    """
    if before == after:
        return None
    from ee.index.view import open_index

    view = open_index(ws)
    return view.report.to_dict() if view.report else {"rebuilt": False, "seconds": 0.0}


# ---------------------------------------------------------------------------------------------- committing


def commit_pending(ws: Workspace, actor: Actor | None = None) -> tuple[str | None, list[Problem]]:
    """Commit changes of ee's own paths; a memory file that does not parse is left out and reported."""
    from ee.policy.trust import Actor

    actor = actor or Actor.from_env()
    paths, skipped = pending_paths(ws)
    if not paths:
        return None, skipped
    refuse_pending_secrets(ws, paths)
    before = ws.git.head()
    sha = ws.git.commit_paths(
        paths,
        format_message(
            f"ee: sync {len(paths)} pending change(s)",
            {"Ee-Op": "sync", "Ee-Count": str(len(paths)), "Ee-Actor": actor.label},
        ),
    )
    return (sha if sha and sha != before else None), skipped


def refuse_pending_secrets(ws: Workspace, paths: list[str]) -> None:
    """``ee sync`` never commits a memory or events file holding a secret, whatever git hooks are
    installed."""
    from ee.policy.secrets import file_secrets

    found = {}
    for rel in paths:
        path = ws.root / rel
        # (a symlink is committed as its target's name: never read through it)
        if _holds_text(rel) and path.is_file() and not path.is_symlink():
            text = path.read_bytes().decode("utf-8", "replace")
            if hits := file_secrets(text, rel):
                found[("", rel)] = hits
    if found:
        raise _secret_refusal(
            found,
            "nothing was committed or pushed",
            "remove the secret from the file (or write [REDACTED:<class>] in its place), rotate it, "
            "then run `ee sync` again",
        )


def refuse_outgoing_secrets(git: Git, upstream: str | None) -> None:
    """Nor pushes one: every memory and events file version in the commits the remote lacks (a hand
    commit made without ee's hooks, or with ``--no-verify``) is scanned before the push, and so is each
    of those commits' message, author and committer (:func:`refuse_secret_messages`)."""
    from ee.policy.secrets import file_secrets

    spec = [f"{upstream}..HEAD"] if upstream else ["HEAD"]
    refuse_secret_messages(git, spec)
    out = git.run(
        "log", "--no-renames", "--raw", "--no-abbrev", "--format=commit %H", *spec, "--",
        git.repo_path(MEMORIES), cwd=git.toplevel,
    )  # fmt: skip
    versions: dict[str, tuple[str, str]] = {}  # blob → (commit, path)
    commit = ""
    for line in out.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line.startswith(":"):
            meta, _tab, path = line.partition("\t")
            blob = meta.split()[3]
            rel = git.workspace_path(path)
            if set(blob) != {"0"} and _holds_text(rel):
                versions.setdefault(blob, (commit, rel))
    blobs = git.read_blobs(versions)
    found = {}
    for blob, (commit, rel) in versions.items():
        if hits := file_secrets(blobs.get(blob, b"").decode("utf-8", "replace"), rel):
            found[(f"commit {commit[:12]}: ", rel)] = hits
    if found:
        raise _secret_refusal(
            found,
            "nothing was pushed",
            "take the secret out of those commits (git rebase -i, or git commit --amend for the last one), "
            "rotate it, then run `ee sync` again",
        )


_MESSAGE_FIELDS = ("author name", "author email", "committer name", "committer email", "message")


def refuse_secret_messages(git: Git, spec: list[str]) -> None:
    """Refuse to push commits whose message, author or committer holds a secret: ee masks the messages it
    writes (:func:`ee.git.repo.format_message`), a hand commit (``git commit -m "use ghp_…"``) is not."""
    from ee.errors import SecretFound
    from ee.policy.secrets import find_secrets

    out = git.run("log", "-z", "--format=%H%x00%an%x00%ae%x00%cn%x00%ce%x00%B", *spec, cwd=git.toplevel)
    fields = out.split("\0")
    found: list[tuple[str, str, list[str]]] = []  # (commit, field, classes)
    for start in range(0, len(fields) - 5, 6):
        commit, *values = fields[start : start + 6]
        for name, value in zip(_MESSAGE_FIELDS, values, strict=True):
            if hits := find_secrets(value):
                found.append((commit.strip(), name, sorted({h.cls for h in hits})))
    if not found:
        return
    where = "; ".join(f"commit {c[:12]} {name} ({', '.join(cls)})" for c, name, cls in found[:5])
    raise SecretFound(
        f"ee sync will not push a secret, found in {where}; nothing was pushed",
        "reword those commits without the secret (git commit --amend for the last one, git rebase -i "
        f"{spec[0].partition('..')[0] if '..' in spec[0] else '--root'} for older ones; an author: "
        "git commit --amend --reset-author), rotate the secret, then run `ee sync` again",
        {
            "classes": sorted({c for _commit, _name, cls in found for c in cls}),
            "commits": sorted({c for c, _name, _cls in found}),
        },
    )


def _secret_refusal(found: dict[tuple[str, str], Any], outcome: str, repair: str) -> EeError:
    from ee.errors import SecretFound
    from ee.policy.secrets import refusal, rename_command

    where = "; ".join(f"{commit}{refusal(rel, hits)}" for (commit, rel), hits in list(found.items())[:5])
    classes = sorted({f.cls for hits in found.values() for f in hits})
    # A name that holds a secret is printed masked: the rename finds the file with ? wildcards.
    renames = sorted({r for _commit, rel in found if (r := rename_command(rel))})
    if renames:
        repair += "; a file or folder name holds one, rename it: " + "; ".join(renames[:5])
        repair += " (mv while git does not track it yet)"
    return SecretFound(
        f"ee sync will not commit or push a secret, found in {where}; {outcome}",
        repair,
        {"classes": classes, "files": sorted({rel for _commit, rel in found})},
    )


def pending_paths(ws: Workspace) -> tuple[list[str], list[Problem]]:
    """Workspace paths of ee's that differ from HEAD: memory files, events files, the config."""
    paths: list[str] = []
    skipped: list[Problem] = []
    config = _status(ws, CONFIG_PATH) if ws.git.holds(CONFIG_PATH) else []  # (not on a memory branch)
    for rel in _status(ws, MEMORIES) + config:
        if rel == CONFIG_PATH or _is_event_file(rel):
            paths.append(rel)
        elif _is_memory_file(rel):
            problem = _unreadable(ws, rel)
            if problem is None:
                paths.append(rel)
            else:
                skipped.append(problem)
    return paths, skipped


def _status(ws: Workspace, path: str) -> list[str]:
    out = ws.git.run(
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--no-renames",
        "--",
        ws.git.repo_path(path),
        cwd=ws.git.toplevel,
    )
    return [ws.git.workspace_path(entry[3:]) for entry in out.split("\0") if len(entry) > 3]


def _is_event_file(rel: str) -> bool:
    name = rel.removeprefix(EVENTS + "/")
    return (
        rel.startswith(EVENTS + "/") and "/" not in name and (name.endswith(".jsonl") or name == ".gitkeep")
    )


def _holds_text(rel: str) -> bool:
    """A file of ee's whose text is shared and must hold no secret: a memory file or an events file (a
    hand edit of one, or another tool's, can put one in a ``reason``)."""
    return _is_memory_file(rel) or (_is_event_file(rel) and rel.endswith(".jsonl"))


def _is_memory_file(rel: str) -> bool:
    inner = rel.removeprefix(MEMORIES + "/").split("/")
    return rel.endswith(".md") and not any(part.startswith(".") for part in inner)


def _unreadable(ws: Workspace, rel: str) -> Problem | None:
    from ee.errors import MemoryFormatError, NotFound
    from ee.git.conflict import has_git_markers
    from ee.store.files import problem_from_error

    if not (ws.root / rel).exists():
        return None  # a deletion
    try:
        memory, _problems = ws.store.read(rel)
    except (MemoryFormatError, NotFound) as exc:
        problem = problem_from_error(exc, rel)
        return Problem(
            "sync_skipped",
            "warning",
            f"not committed (does not parse): {problem.message}",
            rel,
            problem.line,
            problem.key,
            problem.repair + "; then run `ee sync` again",
        )
    if has_git_markers(memory.body):  # (a text merge by hand, stopped): never shared as is
        return Problem(
            "sync_skipped",
            "warning",
            "not committed: the text holds git's conflict markers (<<<<<<< … >>>>>>>)",
            rel,
            repair=f"edit {rel} to the text to keep (or undo: git checkout -- {rel}), "
            "then run `ee sync` again",
        )
    return None


# ---------------------------------------------------------------------------------------------- git session


class Session:
    """One sync's view of the repository, its remote and the branch being shared."""

    def __init__(self, ws: Workspace, remote: str) -> None:
        self.ws = ws
        self.git = ws.git
        self.remote = remote
        self.env = sync_env(ws)
        self.url, self.branch, self.remote_branch = self._describe(remote)
        self.tracking = f"refs/remotes/{remote}/{self.remote_branch}"

    def _describe(self, remote: str) -> tuple[str, str, str]:
        from ee.policy.secrets import mask_text

        names = self.checked("remote").split()
        if remote not in names:
            have = f" (this repository has: {', '.join(names)})" if names else ""
            raise ConfigError(
                f"no git remote named {remote!r}{have}",
                f"add it: git remote add {remote} <url>  (or pass --remote NAME, or set [sync] remote "
                "in .ee/config.toml)",
            )
        # Shown in every report and error: a token or password in the URL (https://user:TOKEN@host/…,
        # as CI sets up) is masked here, where the value comes from.
        urls = self.run("config", "--get-all", f"remote.{remote}.url").stdout.splitlines()
        url = mask_text(urls[0] if urls else "")
        head = self.run("symbolic-ref", "-q", "--short", "HEAD")
        if head.returncode != 0:
            raise UsageError(
                "HEAD is detached: ee sync shares a branch", "check out a branch: git switch main"
            )
        name = head.stdout.strip()
        # The branch it tracks, as git's config says (branch.NAME.remote / .merge), on this remote only.
        tracks = self.run("config", f"branch.{name}.remote").stdout.strip()
        merge = self.run("config", f"branch.{name}.merge").stdout.strip()
        remote_branch = merge.removeprefix("refs/heads/") if tracks == remote and merge else name
        return url, name, remote_branch

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = runner.run(args, self.git.toplevel, env=env or self.env)
        out, err = (data.decode("utf-8", "surrogateescape") for data in (proc.stdout, proc.stderr))
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def checked(self, *args: str) -> str:
        proc = self.run(*args)
        if proc.returncode != 0:
            raise GitError(f"git {args[0]}: {proc.stderr.strip()}", "run `ee doctor` to check the repository")
        return proc.stdout

    # --------------------------------------------------------------------------------- remote I/O

    def fetch(self) -> str | None:
        """Fetch the shared branch; its commit, or None when the remote does not have it yet."""
        refspec = f"+refs/heads/{self.remote_branch}:{self.tracking}"
        proc = self.run("fetch", "--quiet", "--no-tags", self.remote, refspec, env=self._c_env())
        if proc.returncode != 0:
            if "couldn't find remote ref" in proc.stderr.lower():
                return None
            raise self._remote_error("fetch from", proc.stderr)
        return self.upstream()

    def upstream(self) -> str | None:
        out = self.run("rev-parse", "-q", "--verify", self.tracking + "^{commit}").stdout.strip()
        return out or None

    def push(self) -> bool:
        """Push HEAD; False when the remote moved on meanwhile (the race: fetch and try again)."""
        target = f"HEAD:refs/heads/{self.remote_branch}"
        proc = self.run("push", "--porcelain", self.remote, target, env=self._c_env())
        if proc.returncode == 0:
            return True
        rejected = [line for line in proc.stdout.splitlines() if line.startswith("!")]
        text = " ".join(rejected).lower()
        if rejected and any(sign in text for sign in _RACE_SIGNS):
            return False
        if rejected:
            raise GitError(
                f"the remote {self.remote!r} refused the push: {rejected[0].split(chr(9))[-1]}",
                "see the remote's rules (protected branch, hooks); push by hand to see more: git push",
            )
        raise self._remote_error("push to", proc.stderr)

    def _c_env(self) -> dict[str, str]:
        return {**self.env, "LC_ALL": "C"}  # English messages, so failures can be classified

    def _remote_error(self, what: str, stderr: str) -> GitError:
        lowered = stderr.lower()
        reason = "auth" if any(sign in lowered for sign in _AUTH_SIGNS) else "unreachable"
        first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "no message from git")
        if reason == "auth":
            hint = (
                f"check your access to {self.url}: `git fetch {self.remote}` must work on its own "
                "(ssh-add your key, a credential helper, or a token), then run `ee sync` again"
            )
        else:
            hint = (
                f"check the URL (git remote get-url {self.remote}) and the network: "
                f"`git fetch {self.remote}` must work on its own, then run `ee sync` again"
            )
        return GitError(
            f"cannot {what} {self.remote!r} ({self.url}): {first}",
            hint,
            {"remote": self.remote, "url": self.url, "reason": reason},
        )

    # --------------------------------------------------------------------------------- integrating

    def integrate(self, upstream: str | None, strategy: str) -> str:
        head = self.git.head()
        if upstream is None or upstream == head or (head and self._is_ancestor(upstream, head)):
            return "up-to-date"
        mode = "fast-forward" if head is None or self._is_ancestor(head, upstream) else strategy
        self._refuse_overlap(upstream)
        with self._stashed():
            self._apply(mode, upstream)
        return mode

    def _apply(self, mode: str, upstream: str) -> None:
        if mode == "fast-forward":
            args = ["merge", "--ff-only", "--quiet", upstream]
        elif mode == "rebase":
            args = ["rebase", "--quiet", "--no-autostash", upstream]
        else:
            message = f"ee: sync merge {self.remote}/{self.remote_branch}"
            args = ["merge", "--no-edit", "--quiet", "-m", message, upstream]
        if mode == "fast-forward":  # (nothing half-done to leave: a fast-forward moves HEAD at once)
            proc = self.run(*args)
            if proc.returncode != 0:
                self._abort_stopped(mode, proc)
            return
        with started_by_ee(self.ws, mode, self.git.head(), upstream):
            proc = self.run(*args)
            if proc.returncode != 0 and not self._settle(mode):
                self._abort_stopped(mode, proc)

    def _abort_stopped(self, mode: str, proc: subprocess.CompletedProcess[str]) -> None:
        """Abort a rebase or merge that stopped on a conflict ee cannot settle, and say so."""
        conflicted = [
            p for p in self.run("diff", "--name-only", "-z", "--diff-filter=U").stdout.split("\0") if p
        ]
        with contextlib.suppress(GitError):
            self._abort()
        last = (proc.stderr.strip().splitlines() or ["git failed"])[-1]
        verb = "git pull --rebase" if mode == "rebase" else "git pull --no-rebase"
        raise ConflictError(
            f"integrating {self.remote}/{self.remote_branch} stopped ({mode}) on: "
            f"{', '.join(conflicted[:10]) or last}; nothing was changed",
            f"merge by hand: {verb} {self.remote} {self.remote_branch}, fix what `git status` names, "
            "finish the merge, then run `ee sync` again",
            {"paths": conflicted, "git": proc.stderr.strip()[-2000:]},
        )

    def _settle(self, mode: str) -> bool:
        """Finish a stopped rebase or merge whose only conflicts are ee files deleted on one side and
        changed on the other: the changed version is kept (nothing lost; forget it again if need be)."""
        prefix = self.git.repo_path(MEMORIES) + "/"
        for _ in range(1000):
            stages: dict[str, set[str]] = {}
            for entry in self.run("ls-files", "-u", "-z").stdout.split("\0"):
                if entry:
                    meta, _tab, path = entry.partition("\t")
                    stages.setdefault(path, set()).add(meta.split()[2])
            if not stages or not all(
                path.startswith(prefix) and ("2" in kept) != ("3" in kept) for path, kept in stages.items()
            ):
                return False
            self.checked("add", "--", *stages)
            if mode == "merge":
                return self.run("commit", "--no-edit", "--quiet").returncode == 0
            step = "--skip" if self.run("diff", "--cached", "--quiet").returncode == 0 else "--continue"
            if self.run("rebase", step).returncode == 0:
                return True
        return False

    def _abort(self) -> None:
        """Abort the rebase or merge this sync started and could not finish (ee.git.progress says which)."""
        operation = in_progress(self.git.git_dir)
        if operation is not None and operation.name in ("rebase", "merge"):
            self.checked(*operation.abort.split()[1:])  # ("git rebase --abort": run through self.git)

    def _is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer).returncode == 0

    def _dirty(self) -> list[str]:
        out = self.checked("status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames")
        return [entry[3:] for entry in out.split("\0") if len(entry) > 3]

    def _refuse_overlap(self, upstream: str) -> None:
        """Uncommitted work in files the incoming commits change: stop before touching anything."""
        dirty = set(self._dirty())
        if not dirty:
            return
        incoming = set(self.checked("diff", "--name-only", "-z", f"HEAD...{upstream}").split("\0"))
        overlap = sorted(dirty & incoming)
        if overlap:
            raise ConflictError(
                f"uncommitted changes in {', '.join(overlap[:5])} overlap changes coming from "
                f"{self.remote}/{self.remote_branch}; nothing was changed",
                "commit or stash those changes (git stash), then run `ee sync` again",
                {"paths": overlap},
            )

    @contextlib.contextmanager
    def _stashed(self) -> Iterator[None]:
        """Put the user's uncommitted work aside for the integration; restore it, index included."""
        if not self._dirty():
            yield
            return
        before = self._stash_top()
        self.checked("stash", "push", "--quiet", "-m", "ee sync: uncommitted changes put aside")
        stash = self._stash_top()
        if stash == before:  # nothing could be stashed (e.g. a dirty submodule): let git judge
            yield
            return
        try:
            yield
        except BaseException:
            self._unstash(stash, quiet=True)
            raise
        self._unstash(stash)

    def _stash_top(self) -> str:
        return self.run("rev-parse", "-q", "--verify", "refs/stash").stdout.strip()

    def _unstash(self, stash: str, quiet: bool = False) -> None:
        applied = any(
            self.run("stash", "apply", *flags, stash).returncode == 0 for flags in (["--index"], [])
        )
        if applied and self._stash_top() == stash:
            self.run("stash", "drop", "--quiet")
        if not applied and not quiet:
            raise ConflictError(
                "your uncommitted changes could not be put back after the sync; they are safe in the stash",
                f"see them: git stash show -p {stash[:12]}; restore them: git stash apply {stash[:12]}",
            )

    def ahead(self, upstream: str | None) -> int:
        head = self.git.head()
        if head is None:
            return 0
        spec = f"{upstream}..{head}" if upstream else head
        return int(self.checked("rev-list", "--count", spec).strip() or 0)

    def commits(self, since: str | None, until: str | None) -> list[dict[str, str]]:
        if not until or since == until:
            return []
        spec = f"{since}..{until}" if since else until
        # (fields end with NUL, records with SOH: a message may hold any other character)
        out = self.checked("log", "--max-count=100", "--format=%H%x00%cI%x00%an%x00%B%x00%x01", spec)
        commits = []
        for record in out.split("\x01"):
            fields = record.lstrip("\n").split("\x00")
            if len(fields) < 4:
                continue
            sha, date, author, message = fields[:4]
            commits.append(
                {"commit": sha, "date": date, "author": author, "subject": message.split("\n", 1)[0]}
            )
        return commits


def refuse_in_progress(git: Git) -> None:
    """A merge, rebase or cherry-pick someone started and did not finish: ee does not step into it."""
    operation = in_progress(git.git_dir)
    if operation is not None:
        raise ConflictError(
            f"a git {operation.name} is in progress in this repository",
            f"finish it (fix the files, git add, then {operation.finish}) or abort it ({operation.abort}), "
            "then run the command again; `ee doctor` says whether a killed ee sync started it "
            "(then `ee doctor --fix` aborts it)",
        )


# ------------------------------------------------------------------------------ a killed sync


@contextlib.contextmanager
def started_by_ee(ws: Workspace, mode: str, head: str | None, upstream: str) -> Iterator[None]:
    """Record in :data:`STARTED` (opened by :func:`ee.config.open_regular`, never through a link) that ee
    starts a ``mode`` (rebase or merge) of ``upstream`` onto ``head``; removed once it ended (kept while
    it is still in progress: a kill, or an abort git refused)."""
    import json

    from ee.config import open_regular

    path = ws.root / STARTED
    record = {"mode": mode, "head": head, "upstream": upstream, "pid": os.getpid()}
    fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    try:
        yield
    finally:
        if in_progress(ws.git.git_dir) is None:  # (an abort that failed leaves it ee's, for ee doctor --fix)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


@dataclass
class Interrupted:
    """A git operation in progress, and whether a killed ``ee sync`` started it."""

    operation: Operation
    by_ee: bool
    record: dict[str, Any] | None  # what ee recorded before it started (None: no record, or not this one)


def interrupted(ws: Workspace) -> Interrupted | None:
    """The git operation in progress in the workspace's repository, or None. ``by_ee`` only when ee's
    record names this very operation: the commit it started from and the upstream it integrated."""
    operation = in_progress(ws.git.git_dir)
    if operation is None:
        return None
    record = _started_record(ws)
    if record is None or record.get("mode") != operation.name:
        return Interrupted(operation, False, None)
    git_dir = ws.git.git_dir
    if operation.name == "rebase":
        state = git_dir / operation.marker
        seen = {_first_line(state / "orig-head"), _first_line(git_dir / "ORIG_HEAD")} - {None}
        onto = _first_line(state / "onto")
        mine = record.get("head") in seen and onto in (None, record.get("upstream"))
    else:
        mine = _first_line(git_dir / "MERGE_HEAD") == record.get("upstream") and ws.git.head() == record.get(
            "head"
        )
    return Interrupted(operation, mine, record if mine else None)


def _started_record(ws: Workspace) -> dict[str, Any] | None:
    import json

    from ee.config import open_regular

    try:
        with open(open_regular(ws.root / STARTED, os.O_RDONLY), encoding="utf-8") as handle:
            value = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _first_line(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readline().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def abort_interrupted(ws: Workspace) -> dict[str, str] | None:
    """``ee doctor --fix``: abort the rebase or merge a killed ``ee sync`` left (its commits stay, as they
    were before it started: ``ee sync`` again integrates them); a ConflictError for one a person started,
    or when git cannot abort it. None when there is nothing to do. Call under the workspace lock (a live
    ``ee sync`` holds it, so only a dead one's operation is aborted)."""
    found = interrupted(ws)
    if found is None:
        (ws.root / STARTED).unlink(missing_ok=True)  # (killed after its operation ended: a stale record)
        return None
    operation = found.operation
    if not found.by_ee:
        raise ConflictError(
            f"a git {operation.name} someone started is in progress; ee does not touch it",
            f"finish it ({operation.finish}) or abort it ({operation.abort}) by hand",
        )
    proc = runner.run([*operation.abort.split()[1:]], ws.git.toplevel, holds_lock=True)
    if proc.returncode != 0:
        raise ConflictError(
            f"git could not abort the {operation.name} a killed ee sync left: "
            + proc.stderr.decode("utf-8", "replace").strip()[-300:],
            f"abort it by hand ({operation.abort}; if git refuses: git {operation.name} --quit, then "
            f"git reset --keep {found.record.get('head') if found.record else 'ORIG_HEAD'}), then run "
            "ee sync again",
        )
    (ws.root / STARTED).unlink(missing_ok=True)
    return {
        "operation": operation.name,
        "action": "aborted",
        "head": str(found.record and found.record["head"]),
    }


def sync_env(ws: Workspace) -> dict[str, str]:
    """The environment of sync's git processes: never prompt, find ``ee`` for the merge driver."""
    env = dict(os.environ)
    # The merge driver runs as `ee` from PATH: put this ee's own folder first.
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    env["GIT_EDITOR"] = "true"
    env["GIT_MERGE_AUTOEDIT"] = "no"
    if (
        not (env.get("GIT_SSH_COMMAND") or env.get("GIT_SSH"))
        and not ws.git.run("config", "--get", "core.sshCommand", check=False).strip()
    ):
        env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes"
    if ws.git.run("var", "GIT_COMMITTER_IDENT", check=False, env=env).strip() == "":
        env.update(
            {
                "GIT_AUTHOR_NAME": "ee",
                "GIT_AUTHOR_EMAIL": "ee@localhost",
                "GIT_COMMITTER_NAME": "ee",
                "GIT_COMMITTER_EMAIL": "ee@localhost",
            }
        )
    return env


# ---------------------------------------------------------------------------------------------- resolve


def conflicted_memories(ws: Workspace) -> list[dict[str, Any]]:
    """The memories that hold several versions of their text, each with its versions (which one is this
    clone's own) and the command that settles it. One ``git grep`` finds the candidates."""
    from ee.git.merge import is_conflicted, side_of, versions_of

    out = ws.git.run(
        "grep",
        "-l",
        "-z",
        "-E",
        "-e",
        r"^conflict: *true",
        "-e",
        "^<!-- ee:conflict: ",
        "-e",
        "^<{7} ",
        "--",
        ws.git.repo_path(MEMORIES),
        cwd=ws.git.toplevel,
        check=False,
    )
    found = []
    for repo_path in sorted(p for p in out.split("\0") if p):
        rel = ws.git.workspace_path(repo_path)
        try:
            memory, _problems = ws.store.read(rel)
        except EeError:
            continue
        if not is_conflicted(memory):
            continue
        versions = versions_of(memory.body) or []
        local = local_commits(ws.git, versions)
        found.append(
            {
                "id": memory.id,
                "path": rel,
                "title": memory.title,
                "versions": [
                    {"author": v.author, "commit": v.commit, "date": v.date, "side": side_of(v, local)}
                    for v in versions
                ],
                "resolve": f"ee memory resolve {memory.id} --pick local|remote|both",
            }
        )
    return found


_MADE_HERE = ("commit", "ee:", "cherry-pick", "revert", "am:")
_REPLAYED = ("(pick)", "(continue)", "(squash)", "(fixup)", "(reword)", "(edit)")


def local_commits(git: Git, versions: list[Any]) -> set[str]:
    """The versions' commits (as labelled) that were made in this clone — "local": this clone's own change,
    whatever git's "ours" and "theirs" meant in the rebase or merge that kept both texts.

    The HEAD reflog says so: a commit made here (``git commit``, ee's writes, a cherry-pick) or a commit of
    this clone's replayed by a rebase; a commit that only arrived (a fast-forward, the upstream a rebase
    started from) is not. Past the reflog's expiry (90 days) nothing is local: pick by commit then."""
    wanted = {v.commit for v in versions if v.commit}
    if not wanted:
        return set()
    out = git.run("log", "-g", "--format=%H%x09%gs", "HEAD", "--", check=False)
    found: set[str] = set()
    for line in out.splitlines():
        sha, _tab, subject = line.partition("\t")
        made = subject.startswith(_MADE_HERE) or "Merge made by" in subject
        if made or any(step in subject.split(":", 1)[0] for step in _REPLAYED):
            found.update(c for c in wanted if sha.startswith(c))
    return found


def resolve_memory(
    ws: Workspace,
    memory_id: str,
    pick: str | None = None,
    text: str | None = None,
    actor: Actor | None = None,
) -> tuple[Any, str]:
    """Settle a conflicted memory: keep the ``local`` version, the ``remote`` one, ``both``, the one of a
    commit or an author (see :func:`ee.git.merge.choose`), or a given text; one commit."""
    from ee.git.merge import choose, is_conflicted, resolve_text, side_of, versions_of
    from ee.git.repo import blob_id
    from ee.policy.trust import Actor
    from ee.store import frontmatter
    from ee.store.fields import check_text, guard_memory

    if pick is not None and text is not None:
        raise UsageError("say how to resolve, once", "pass --pick or --text FILE, not both")
    actor = actor or Actor.from_env()
    body = guard_memory({}, check_text(text))[1] if text is not None else None
    refuse_in_progress(ws.git)
    with ws.lock():
        memory = ws.get(memory_id)
        if not is_conflicted(memory):
            raise UsageError(
                f"{memory_id} has no conflict to resolve", f"edit {memory.path} by hand if needed"
            )
        data = ws.store.read_bytes(memory.path)
        head = ws.git.run("rev-parse", "-q", "--verify", f"HEAD:{ws.git.repo_path(memory.path)}", check=False)
        if head.strip() != blob_id(data):
            raise ConflictError(
                f"{memory.path} has changes that are not committed",
                f"commit them (git add {memory.path} && git commit) or undo them "
                f"(git checkout -- {memory.path}), then run the command again",
            )
        chosen = None
        if body is None:
            versions = versions_of(memory.body)
            if versions is None:
                raise UsageError(
                    f"the versions in {memory.path} are not well formed",
                    "pass --text FILE with the text to keep",
                )
            local = local_commits(ws.git, versions)
            if pick is None:
                shown = "; ".join(f"{v.label()} ({side_of(v, local)})" for v in versions)
                raise UsageError(
                    f"{memory_id} holds {len(versions)} versions: {shown}",
                    f"keep one: ee memory resolve {memory_id} --pick local|remote|both|<commit>, "
                    "or pass --text FILE",
                )
            chosen = choose(versions, pick, local)
        new_text = resolve_text(frontmatter.decode(data, memory.path), chosen, body, memory.path)
        try:
            updated, _ = frontmatter.parse(new_text, memory.path)
        except EeError:
            raise UsageError(
                f"the {pick} version of {memory_id} is empty", "pick another, or pass --text FILE"
            ) from None
        ws.store.write(memory.path, new_text)
        sha = ws.git.commit_paths(
            [memory.path],
            format_message(
                f"ee: resolve {updated.title}",
                {"Ee-Op": "resolve", "Ee-Memory": memory.id, "Ee-Actor": actor.label},
            ),
        )
    from ee.policy.secrets import mask_memory

    return mask_memory(updated), sha  # (as output shows it: a hand-typed secret masked)
