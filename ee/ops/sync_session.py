"""The git steps of one ``ee sync`` (:mod:`ee.ops.sync`): :class:`Session` fetches the shared branch,
integrates it (rebase or merge, the user's uncommitted work put aside around it) and pushes; its git
processes' environment (:func:`sync_env`); the refusal to step into a git operation someone else left in
progress (:func:`refuse_in_progress`); and the record that tells a rebase or merge a killed sync left from
one a person started (:data:`STARTED`, :func:`interrupted`, :func:`abort_interrupted`: ``ee doctor``).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import ConfigError, ConflictError, GitError, UsageError
from ee.git import runner
from ee.git.progress import Operation, in_progress
from ee.git.repo import Git
from ee.store.files import MEMORIES

if TYPE_CHECKING:
    from ee.workspace import Workspace

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
