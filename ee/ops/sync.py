"""``ee sync``: share a memory store through any git remote.

Under the workspace lock: commit pending changes of ee's own paths (``memories/``, ``.ee/config.toml``),
fetch the branch from the remote, integrate it (rebase or merge; memory files merge through
``ee merge-driver``, events files through git's ``union`` driver), push, and on a lost push race fetch,
integrate and push again. The store may live inside a larger code repository: only ee's paths are
committed, and the user's uncommitted work elsewhere is stashed around the integration (staged and
unstaged changes restored as they were) — or, when incoming changes touch the same files, left alone
with a clear refusal.

This module holds the command's flow (:func:`sync`, its :class:`SyncReport`) and what it commits and
refuses to share (a secret in a file or a commit); the git steps are :mod:`ee.ops.sync_session`'s, the
memories a merge left with several versions :mod:`ee.ops.resolve`'s.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ee.config import CONFIG_PATH
from ee.discovery import check_state_untracked
from ee.errors import ConflictError, EeError, UsageError
from ee.git.repo import EMPTY_TREE, Git, format_message
from ee.model import Problem
from ee.ops.resolve import conflicted_memories
from ee.ops.sync_session import Session, refuse_in_progress
from ee.store.files import EVENTS, MEMORIES

if TYPE_CHECKING:
    from ee.policy.trust import Actor
    from ee.workspace import Workspace

MAX_ATTEMPTS = 6


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
