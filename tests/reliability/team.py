"""A team in miniature: N clones of one store behind a bare remote, mixed operations with ``ee sync`` in
between, then every acknowledged write checked in every clone and every conflict resolved by its label.

Operations (seeded, so a run can be repeated): remember, a tag edit, an outcome, a hand edit (a line
appended to a memory's text, committed by the next sync) and a conflicting body edit (the first line of one
of a few "hot" memories rewritten, which other clones rewrite too). A body edit of a memory that is
conflicted in that clone resolves it by label first (``local``, else ``both``), as a person would. Each
clone syncs after about a third of its operations.

Afterwards, once every clone has synced twice: every memory, tag and feedback event any clone wrote is in
all of them; every line a hand edit added is in its memory's text (in one of the versions a merge kept);
the stores are identical; no file and no commit on the remote holds git's conflict markers. Then each
conflicted memory is resolved by label (``local`` in a clone that wrote one of its versions, ``both``
elsewhere), everyone syncs again: no conflict left, identical stores and identical search results.

Used by ``tests/reliability/test_team.py`` (a small size, both store modes) and ``bench/team_bench.py``
(the target's 3 clones x 200 operations).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ee.git.merge import is_conflicted
from ee.ops.feedback import record_outcome
from ee.ops.resolve import conflicted_memories, resolve_memory
from ee.ops.sync import sync
from ee.policy.trust import Actor
from ee.workspace import Workspace

BRANCH = "ee/memories"
QUERIES = ("deploy", "cache", "tests", "note", "lesson 3")
_WEIGHTS = {"remember": 30, "tags": 20, "outcome": 20, "hand_edit": 15, "body_conflict": 15}


@dataclass
class TeamReport:
    clones: int
    ops: int
    mode: str
    counts: dict[str, int] = field(default_factory=dict)
    syncs: int = 0
    conflicts_seen: int = 0
    resolved: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def line(self) -> str:
        return (
            f"team: {self.clones} clones x {self.ops} ops ({self.mode}): {json.dumps(self.counts)}, "
            f"{self.syncs} syncs, {self.conflicts_seen} conflicted memories, "
            f"resolved {json.dumps(self.resolved)}, "
            f"{len(self.failures)} failures; seconds {json.dumps(self.seconds)}"
        )


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_team(tmp: Path, clones: int, branch: bool) -> tuple[Path, list[Path]]:
    """A bare remote and ``clones`` clones of one code repository with an ee store (on the code branch, or
    on the memory branch ``ee/memories``). Each clone commits as its own person."""
    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    roots = []
    for n in range(clones):
        root = tmp / f"clone{n}"
        subprocess.run(["git", "clone", "-q", str(remote), str(root)], check=True, capture_output=True)
        _git(root, "config", "user.name", f"Person {n}")
        _git(root, "config", "user.email", f"person{n}@example.com")
        if n == 0:
            (root / "README").write_text("code\n")
            _git(root, "add", "README")
            _git(root, "commit", "-q", "-m", "code")
            Workspace.init(root, BRANCH if branch else None)
            _git(root, "push", "-q", "origin", "main")
            sync(Workspace(root))
        else:
            Workspace.init(root)
        roots.append(root)
    return remote, roots


def synced_pair(tmp: Path) -> tuple[Path, Path]:
    """A bare remote and two clones, ``a`` and ``b``, each made a workspace and synced once by a real
    ``ee sync`` process (no traceback, exit 0)."""
    from conftest import run_ee_process

    remote = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    clones = []
    for name in ("a", "b"):
        dest = tmp / name
        subprocess.run(["git", "clone", "-q", str(remote), str(dest)], check=True, capture_output=True)
        Workspace.init(dest)
        proc = run_ee_process("sync", "--json", cwd=dest)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 0, proc.stdout + proc.stderr
        clones.append(dest)
    return clones[0], clones[1]


@dataclass
class _Expected:
    memories: set[str] = field(default_factory=set)
    tags: set[tuple[str, str]] = field(default_factory=set)
    events: set[tuple[str, str]] = field(default_factory=set)
    lines: set[tuple[str, str]] = field(default_factory=set)


def run_team(tmp: Path, clones: int = 3, ops: int = 20, branch: bool = False, seed: int = 1) -> TeamReport:
    """Build the team, run ``ops`` operations in each clone (interleaved), check, resolve, check again."""
    rng = random.Random(seed)
    report = TeamReport(clones, ops, "memory branch" if branch else "code branch")
    started = time.monotonic()
    env_before = {k: os.environ.get(k) for k in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME")}
    try:
        remote, roots = make_team(tmp, clones, branch)
        report.seconds["setup"] = round(time.monotonic() - started, 2)
        expected = _Expected()
        hot: list[str] = []
        started = time.monotonic()
        for step in range(ops):
            for n, root in enumerate(roots):
                _as_person(n)
                op = rng.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()))[0]
                op = _operate(Workspace(root), op, n, step, rng, expected, hot)
                report.counts[op] = report.counts.get(op, 0) + 1
                if rng.random() < 0.3:
                    sync(Workspace(root))
                    report.syncs += 1
        report.seconds["ops"] = round(time.monotonic() - started, 2)
        started = time.monotonic()
        report.syncs += _settle(roots)
        report.seconds["settle"] = round(time.monotonic() - started, 2)
        _check_acknowledged(roots, expected, report)
        _check_same(roots, remote, report, branch)
        conflicted = conflicted_memories(Workspace(roots[0]))
        report.conflicts_seen = len(conflicted)
        started = time.monotonic()
        _resolve_all(roots, conflicted, report)
        report.syncs += _settle(roots)
        report.seconds["resolve"] = round(time.monotonic() - started, 2)
        for root in roots:
            left = conflicted_memories(Workspace(root))
            if left:
                report.failures.append(
                    f"{root.name}: still conflicted after resolving: {[c['id'] for c in left]}"
                )
        _check_same(roots, remote, report, branch, queries=True)
    finally:
        for key, value in env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return report


def _as_person(n: int) -> None:
    """ee commits in-process: its identity comes from the environment (as for any git child)."""
    os.environ["GIT_AUTHOR_NAME"] = os.environ["GIT_COMMITTER_NAME"] = f"Person {n}"


def _operate(
    ws: Workspace, op: str, n: int, step: int, rng: random.Random, expected: _Expected, hot: list[str]
) -> str:
    present = sorted(m.id for m in ws.list()[0] if m.id in expected.memories)
    if op != "remember" and not present:
        op = "remember"
    actor = Actor(None)
    if op == "remember":
        topic = rng.choice(["deploy", "cache", "tests", "lesson"])
        memory = ws.remember(f"{topic} lesson {n}.{step}: written by clone {n}", tags=[f"c{n}"], actor=actor)
        expected.memories.add(memory.id)
        if len(hot) < 3:
            hot.append(memory.id)
    elif op == "tags":
        memory_id = rng.choice(present)
        tag = f"t{n}-{step}"
        ws.edit_tags(memory_id, [tag], [], actor)
        expected.tags.add((memory_id, tag))
    elif op == "outcome":
        memory_id = rng.choice(present)
        data = record_outcome(ws, memory_id, rng.choice(["helpful", "harmful", "stale"]), None, actor)
        expected.events.add((memory_id, data["event"]["id"]))
    else:
        pool = [i for i in hot if i in present] if op == "body_conflict" else present
        memory_id = rng.choice(pool or present)
        memory = ws.get(memory_id)
        if is_conflicted(memory):  # a person resolves it first: this clone's version, else all of them
            (item,) = [c for c in conflicted_memories(ws) if c["id"] == memory_id]
            pick = "local" if [v["side"] for v in item["versions"]].count("local") == 1 else "both"
            resolved, _commit = resolve_memory(ws, memory_id, pick, actor=actor)
            gone = {(i, line) for i, line in expected.lines if i == memory_id and line not in resolved.body}
            expected.lines -= gone  # (the versions not kept were dropped by the person's choice)
            return f"resolve --pick {pick}"
        path = ws.root / memory.path
        text = path.read_text(encoding="utf-8")
        if op == "hand_edit":
            line = f"note {n}.{step}"
            path.write_text(text.rstrip("\n") + f"\n\n{line}\n", encoding="utf-8")
            expected.lines.add((memory_id, line))
        else:
            path.write_text(text.replace(memory.title, f"{memory.title} (clone {n} says {step})", 1))
    return op


def _settle(roots: list[Path]) -> int:
    for _ in range(2):
        for root in roots:
            sync(Workspace(root))
    return 2 * len(roots)


def _check_acknowledged(roots: list[Path], expected: _Expected, report: TeamReport) -> None:
    for root in roots:
        ws = Workspace(root)
        memories = {m.id: m for m in ws.list()[0]}
        for memory_id in expected.memories - memories.keys():
            report.failures.append(f"{root.name}: memory {memory_id} lost")
        for memory_id, tag in expected.tags:
            if tag not in memories[memory_id].tags:
                report.failures.append(f"{root.name}: tag {tag} of {memory_id} lost")
        for memory_id, event_id in expected.events:
            events = root / "memories" / ".events" / f"{memory_id}.jsonl"
            if event_id not in events.read_text():
                report.failures.append(f"{root.name}: event {event_id} of {memory_id} lost")
        for memory_id, line in expected.lines:
            if line not in memories[memory_id].body:
                report.failures.append(f"{root.name}: hand-edited line {line!r} of {memory_id} lost")


def _check_same(
    roots: list[Path], remote: Path, report: TeamReport, branch: bool, queries: bool = False
) -> None:
    def snapshot(root: Path) -> Any:
        memories = Workspace(root).list()[0]
        out: Any = {m.id: (m.body, sorted(m.tags), dict(m.extra)) for m in memories}
        if queries:
            from ee.query import search
            from ee.query.document import from_arguments

            found = [search(Workspace(root), from_arguments(q, mode="lexical"))["hits"] for q in QUERIES]
            out = (out, [[(h["id"], h["score"], h["title"], h["flags"]) for h in hits] for hits in found])
        return out

    first = snapshot(roots[0])
    for root in roots[1:]:
        if snapshot(root) != first:
            report.failures.append(f"{root.name} differs from {roots[0].name}")
    for root in roots:
        for path in (root / "memories").rglob("*.md"):
            text = path.read_text(encoding="utf-8")
            if "\n<<<<<<< " in "\n" + text or "\n>>>>>>> " in "\n" + text:
                report.failures.append(f"{path}: git conflict markers")
    ref = BRANCH if branch else "main"
    found = subprocess.run(
        ["git", "log", "-p", "--format=", ref], cwd=remote, capture_output=True, text=True, check=True
    ).stdout
    if any(line.startswith(("+<<<<<<< ", "+>>>>>>> ")) for line in found.splitlines()):
        report.failures.append("the remote's history holds git conflict markers")


def _resolve_all(roots: list[Path], conflicted: list[dict[str, Any]], report: TeamReport) -> None:
    """Each conflicted memory, in the first clone that wrote one of its versions: ``--pick local``;
    where no clone did (a version from a clone's resolution that merged again): ``--pick both``."""
    for item in conflicted:
        for n, root in enumerate(roots):  # noqa: B007 - n is used after the loop
            here = [c for c in conflicted_memories(Workspace(root)) if c["id"] == item["id"]]
            if here and [v["side"] for v in here[0]["versions"]].count("local") == 1:
                pick = "local"
                break
        else:
            n, root, pick = 0, roots[0], "both"
        _as_person(n)
        resolve_memory(Workspace(root), item["id"], pick)
        report.resolved[pick] = report.resolved.get(pick, 0) + 1
        sync(Workspace(root))
