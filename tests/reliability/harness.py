"""Machinery shared by the reliability tests and ``bench/soak.py``: real ``ee`` processes, ``kill -9``, and
the checks that must hold afterwards (git fsck, no partial file, no lost memory, an index equal to a fresh
rebuild).

Run as a script it is one worker of the concurrency suite (``python tests/reliability/harness.py worker
SPEC.json``). Only ee and the standard library are imported, so a worker starts fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve()
IDENTITY = {
    "GIT_AUTHOR_NAME": "Reliability Person",
    "GIT_AUTHOR_EMAIL": "reliability@example.com",
    "GIT_COMMITTER_NAME": "Reliability Person",
    "GIT_COMMITTER_EMAIL": "reliability@example.com",
}
WORDS = [
    "cache",
    "lock",
    "retry",
    "deploy",
    "schema",
    "migration",
    "runner",
    "flaky",
    "timeout",
    "merge",
    "rebase",
    "release",
    "token",
    "budget",
    "index",
    "vector",
    "lexical",
    "commit",
    "branch",
    "hook",
    "watcher",
    "socket",
    "pipeline",
    "artifact",
    "docker",
    "cluster",
    "staging",
]


# ------------------------------------------------------------------------------------------ processes


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an ee child process: ours, a git identity, no crash point unless asked."""
    env = dict(os.environ)
    for key, value in IDENTITY.items():
        env.setdefault(key, value)
    env.setdefault("EE_NO_SERVER", "1")
    env.pop("EE_CRASH_AT", None)
    env.update(extra or {})
    return env


def ee_args(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ee", "--workspace", str(root), *args]


def run_ee(
    root: Path,
    *args: str,
    input: str | None = None,  # noqa: A002 - as subprocess.run names it
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``ee ARGS`` as a real process in workspace ``root``."""
    return subprocess.run(
        ee_args(root, *args),
        cwd=root,
        input=input,
        capture_output=True,
        text=True,
        env=child_env(env),
        timeout=timeout,
        check=False,
    )


def doctor_report(stdout: str) -> dict[str, Any]:
    """The report of ``ee doctor --json``: its ``data`` when healthy; when it found errors (exit 4), the
    ``ee.error.v1`` envelope coded ``doctor_found_problems`` carries the whole report in
    ``error.details.report`` (issue 36)."""
    answer = json.loads(stdout)
    if answer["success"]:
        report: dict[str, Any] = answer["data"]
        assert report["healthy"], answer
        return report
    assert answer["error"]["code"] == "doctor_found_problems", answer
    report = answer["error"]["details"]["report"]
    assert not report["healthy"], answer
    return report


@dataclass
class Ran:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def run_inprocess(root: Path, *args: str, input: str | None = None) -> Ran:  # noqa: A002
    """``ee ARGS`` in this process, through the real entry point (exit codes, envelopes); stdout must be
    UTF-8 (an agent's JSON parser would choke otherwise)."""
    from click.testing import CliRunner

    from ee.cli import main

    with CliRunner().isolation(input=input) as (out, err, _mixed):
        code = main(["--workspace", str(root), *args])
        return Ran(code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8", "replace"))


def store_state(root: Path) -> dict[str, str]:
    """Everything a bad input must not change: every entry below memories/ (content hash, link target or
    kind; links not followed), HEAD, and `git status`."""
    state: dict[str, str] = {}
    for folder, dirs, files in os.walk(root / "memories"):
        for name in dirs + files:
            path = Path(folder) / name
            rel = os.fsencode(path.relative_to(root)).decode("utf-8", "backslashreplace")
            st = path.lstat()
            if path.is_symlink():
                state[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                state[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                state[rel] = "dir" if path.is_dir() else f"special:{st.st_mode:o}"
    state["HEAD"] = git(root, "rev-parse", "HEAD").strip()
    state["status"] = git(root, "status", "--porcelain=v1", "-uall")
    return state


def git(root: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=False, env=child_env()
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def ee_commands() -> set[str]:
    """The top-level commands this build of ee has (some land while others are written)."""
    import click

    from ee.cli import cli

    return set(cli.list_commands(click.Context(cli)))


# ------------------------------------------------------------------------------------------ kill -9


@dataclass
class Killed:
    """One process run and killed: where, whether the kill came before it finished, how long it ran."""

    point: str
    killed: bool
    returncode: int
    seconds: float
    stderr: str = ""


def run_killed(
    cmd: list[str], cwd: Path, env: dict[str, str], *, delay: float | None, group: bool, point: str = ""
) -> Killed:
    """Run ``cmd`` and SIGKILL it after ``delay`` seconds: only the ee process (its git children run on,
    as after a real ``kill -9``), or with ``group`` its whole process group. ``delay`` None: the process
    kills itself at a crash point (``EE_CRASH_AT`` in ``env``). Returns once every process of the group
    has exited, so the checks that follow see the final state."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        killed = False
        if delay is not None:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    if group:
                        os.killpg(proc.pid, signal.SIGKILL)
                    else:
                        os.kill(proc.pid, signal.SIGKILL)
                killed = True
        code = proc.wait(timeout=900)
        killed = killed or code == -signal.SIGKILL
        wait_group_gone(proc.pid)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    point = point or (f"{delay:.3f}s" if delay is not None else env.get("EE_CRASH_AT", "end"))
    return Killed(point, killed, code, time.monotonic() - started, text[-2000:])


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def wait_group_gone(pgid: int, timeout: float = 60) -> None:
    """Wait for orphaned children (git processes) of a killed process to finish what they were doing."""
    deadline = time.monotonic() + timeout
    while _group_members(pgid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return
        time.sleep(0.01)


# ------------------------------------------------------------------------------------------ checks


def fsck(root: Path) -> list[str]:
    proc = subprocess.run(
        ["git", "fsck", "--no-progress", "--no-dangling"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode == 0:
        return []
    return [f"git fsck exited {proc.returncode}: {(proc.stdout + proc.stderr).strip()[:800]}"]


def head_memories(root: Path) -> dict[str, str]:
    """id → path of every memory committed at HEAD."""
    from ee.git.repo import Git
    from ee.store import frontmatter

    repo = Git(root)
    if repo.head() is None:
        return {}
    files = repo.ls_tree("HEAD")
    blobs = repo.read_blobs(files.values())
    out: dict[str, str] = {}
    for rel, sha in files.items():
        memory, _ = frontmatter.parse(frontmatter.decode(blobs[sha], rel), rel)
        out[memory.id] = rel
    return out


def unreadable(root: Path, skip: tuple[str, ...] = ("memories/hand/",)) -> list[str]:
    """Memory files in the working tree that do not parse (a half-written file would show here)."""
    from ee.errors import MemoryFormatError, NotFound
    from ee.store.files import Store
    from ee.store.walk import memory_files

    store = Store(root)
    out = []
    for rel, _st in memory_files(root):
        if rel.startswith(skip):
            continue
        try:
            store.read(rel)
        except NotFound:
            continue  # removed since the listing
        except MemoryFormatError as exc:
            out.append(exc.message)
    return out


def staged_reverts(root: Path) -> list[str]:
    """Paths below memories/ whose entry in git's index is older than both HEAD and the working tree: a
    plain ``git commit`` by the user would silently undo an ee commit."""
    from ee.git.repo import blob_id

    out = []
    listing = git(root, "diff", "--cached", "--name-status", "-z", "HEAD", "--", "memories", check=False)
    parts = [p for p in listing.split("\0") if p]
    for status, path in zip(parts[::2], parts[1::2], strict=False):
        head = git(root, "rev-parse", "-q", "--verify", f"HEAD:{path}", check=False).strip()
        file = root / path
        work = blob_id(file.read_bytes()) if file.is_file() else None
        if head and work == head and status in ("D", "M"):
            out.append(f"{status} {path}: git's index holds an older version than HEAD and the file")
    return out


def leftovers(root: Path) -> dict[str, int]:
    """What a killed process can leave behind (none of it may be read as a memory)."""
    git_dir = root / ".git"
    return {
        "tmp_files": sum(1 for _ in (root / "memories").rglob(".ee-tmp-*")),
        "git_index_lock": int((git_dir / "index.lock").exists()),
        "git_tmp_index": sum(1 for _ in git_dir.glob("ee-index-*")),
        "index_tmp": sum(1 for _ in (root / ".ee" / "index").glob("*.tmp")),
        "untracked": len(
            [
                line
                for line in git(root, "status", "--porcelain", "-uall", "--", "memories").splitlines()
                if line.startswith("??") and "/.ee-tmp-" not in line
            ]
        ),
    }


def store_problems(root: Path, committed: dict[str, str]) -> list[str]:
    """Everything that must hold after any crash: fsck clean, no partial file, no committed memory lost
    (in HEAD and in the working tree), no stale git lock, git's index never undoing an ee commit."""
    problems = fsck(root)
    head = head_memories(root)
    for memory_id, rel in sorted(committed.items()):
        if memory_id not in head:
            problems.append(f"lost committed memory {memory_id} ({rel})")
        elif not (root / head[memory_id]).is_file():
            problems.append(f"committed memory {memory_id} is missing from the working tree")
    problems += [f"unreadable: {message}" for message in unreadable(root)]
    problems += staged_reverts(root)
    if (root / ".git" / "index.lock").exists():
        problems.append("a stale .git/index.lock blocks git")
    return problems


def reset_uncommitted(root: Path) -> None:
    """Back to HEAD below memories/ (between crash trials: the next one starts from a clean store)."""
    git(root, "reset", "-q", "--", "memories", check=False)
    git(root, "checkout", "-q", "--", "memories", check=False)
    git(root, "clean", "-fdq", "--", "memories")


# ------------------------------------------------------------------------------------------ the index


def index_signature(root: Path) -> dict[str, Any]:
    """What the index answers with, independent of positions: records, bodies, BM25 scores of a sample of
    the vocabulary, vectors, problems, events. Opening it catches up first (as every query does)."""
    from ee.index.view import open_index
    from ee.workspace import Workspace

    view = open_index(Workspace(root))
    gen = view.gen
    ids = gen.ids
    vocab = sorted(gen.vocab)
    sample = vocab[:: max(1, len(vocab) // 40)]
    scores: dict[str, dict[str, float]] = {}
    if gen.lexical is not None:
        for token in sample:
            row = gen.lexical.scores([token])
            scores[token] = {ids[i]: round(float(row[i]), 4) for i in range(len(ids)) if row[i]}
    vectors = None
    if gen.vectors is not None:
        vectors = {ids[i]: round(float(gen.vectors[i].sum()), 3) for i in range(len(ids))}
    return {
        "records": sorted((r["id"], r["path"], r["blob"], bool(r.get("committed"))) for r in gen.records),
        "bodies": {ids[i]: hashlib.sha1(gen.body(i).encode()).hexdigest() for i in range(len(ids))},
        "scores": scores,
        "vectors": vectors,
        "problems": sorted(
            (p["path"], str(p.get("code")), str(p.get("message"))) for p in view.state.get("problems", [])
        ),
        "events": {k: sorted(e["id"] for e in v) for k, v in view.state.get("events", {}).items()},
    }


def fresh_signature(root: Path) -> dict[str, Any]:
    """The signature of an index built from nothing, in a copy of the workspace (the original is not
    touched: no derived cache, no generation reused)."""
    with tempfile.TemporaryDirectory(prefix="ee-fresh-") as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(root, copy, symlinks=True, ignore=_derived_and_special)
        return index_signature(copy)


def _derived_and_special(folder: str, names: list[str]) -> list[str]:
    """What a fresh copy leaves out: the derived index and cache, and sockets or FIFOs (a watcher's)."""
    skip = []
    for name in names:
        path = os.path.join(folder, name)
        if name in ("index", "cache") or not (
            os.path.isdir(path) or os.path.isfile(path) or os.path.islink(path)
        ):
            skip.append(name)
    return skip


def index_differences(root: Path) -> list[str]:
    """[] when the workspace's index (after the catch-up any query does) equals a fresh rebuild."""
    got, want = index_signature(root), fresh_signature(root)
    out = []
    for key in want:
        if got[key] != want[key]:
            out.append(f"index {key} differ from a fresh rebuild: {_first_difference(got[key], want[key])}")
    return out


def _first_difference(got: Any, want: Any) -> str:
    if isinstance(got, dict) and isinstance(want, dict):
        for key in sorted(set(got) | set(want)):
            if got.get(key) != want.get(key):
                return f"{key}: {str(got.get(key))[:200]} != {str(want.get(key))[:200]}"
    if isinstance(got, list) and isinstance(want, list):
        extra = [x for x in got if x not in want][:3]
        missing = [x for x in want if x not in got][:3]
        return f"extra {extra}, missing {missing}"
    return f"{str(got)[:200]} != {str(want)[:200]}"


# ------------------------------------------------------------------------------------------ workspaces


def new_workspace(path: Path, shared: int = 0, seed: int = 0) -> list[str]:
    """An ee workspace at ``path`` with ``shared`` committed memories; their ids."""
    from ee.workspace import Workspace

    ws, _ = Workspace.init(path)
    rng = random.Random(seed)
    return [
        ws.remember(f"shared memory {i}: " + " ".join(rng.choices(WORDS, k=12)), tags=["shared"]).id
        for i in range(shared)
    ]


def import_lines(count: int, seed: int = 0, prefix: str = "imported") -> list[str]:
    rng = random.Random(seed)
    return [
        json.dumps(
            {
                "body": f"{prefix} {i}: " + " ".join(rng.choices(WORDS, k=rng.randint(8, 40))),
                "tags": [rng.choice(WORDS), "bulk"],
                "kind": rng.choice(["fact", "rule", "decision"]),
            }
        )
        for i in range(count)
    ]


# ------------------------------------------------------------------------------------------ workers


@dataclass
class WorkerSpec:
    root: str
    role: str  # mixed | reader | hand
    name: str
    ops: int
    seed: int
    out: str
    stop: str
    shared: list[str] = field(default_factory=list)  # a person's memories
    agent_shared: list[str] = field(default_factory=list)  # an agent's memories: any agent may re-tag them
    cli_every: int = 4  # every n-th op through a real `python -m ee` (exit codes, envelopes, hints)
    env: dict[str, str] = field(default_factory=dict)


class Worker:
    def __init__(self, spec: WorkerSpec) -> None:
        from ee.workspace import Workspace

        self.spec = spec
        self.root = Path(spec.root)
        self.rng = random.Random(spec.seed)
        self.ws = Workspace(self.root)
        self.out = open(spec.out, "a", encoding="utf-8")  # noqa: SIM115 - closed in run()

    def record(self, item: dict[str, Any]) -> None:
        self.out.write(json.dumps(item) + "\n")
        self.out.flush()

    def run(self) -> None:
        try:
            getattr(self, f"role_{self.spec.role}")()
        finally:
            self.out.close()

    # ------------------------------------------------------------------ writers

    def role_mixed(self) -> None:
        ops = [self.op_remember] * 4 + [self.op_tags] * 2 + [self.op_outcome] * 2 + [self.op_import]
        for i in range(self.spec.ops):
            op = self.rng.choice(ops)
            started = time.monotonic()
            item = self.attempt(op, i)
            item["seconds"] = round(time.monotonic() - started, 3)
            self.record(item)

    def attempt(self, op: Any, i: int) -> dict[str, Any]:
        from ee.errors import EeError

        name = op.__name__.removeprefix("op_")
        try:
            return {"op": name, "ok": True, **op(i)}
        except EeError as exc:
            return {
                "op": name,
                "ok": False,
                "exit": int(exc.exit_code),
                "code": exc.code,
                "message": exc.message,
                "hint": exc.hint,
            }
        except Exception:
            return {"op": name, "ok": False, "exit": 1, "message": traceback.format_exc()[-3000:]}

    def via_cli(self, i: int) -> bool:
        return self.spec.cli_every > 0 and i % self.spec.cli_every == self.spec.cli_every - 1

    def cli(self, *args: str) -> dict[str, Any]:
        from ee.errors import EeError

        proc = run_ee(self.root, *args, "--json", env=self.spec.env)
        doc: dict[str, Any] = {}
        with contextlib.suppress(ValueError):
            doc = json.loads(proc.stdout)
        if proc.returncode == 0 and doc.get("success"):
            return dict(doc["data"])
        error = doc.get("error", {})
        exc = EeError(error.get("message") or proc.stderr[-2000:], error.get("repair", ""))
        exc.exit_code = proc.returncode  # type: ignore[assignment]
        exc.code = error.get("code", "?")
        if "repair:" not in proc.stderr and proc.returncode != 1:
            exc.hint = ""  # a hint in the envelope but not on stderr counts as missing
        raise exc

    def actor(self, i: int) -> Any:
        from ee.policy.trust import Actor

        return Actor(agent=self.spec.name if i % 2 else None)

    def op_remember(self, i: int) -> dict[str, Any]:
        text = f"{self.spec.name} op {i}: " + " ".join(self.rng.choices(WORDS, k=10))
        if self.via_cli(i):
            return {"ids": [self.cli("remember", text, "--tags", f"w,{self.spec.name}")["id"]], "cli": True}
        return {"ids": [self.ws.remember(text, tags=["w", self.spec.name], actor=self.actor(i)).id]}

    def target(self, agent: bool, guarded: bool) -> tuple[str, bool]:
        """(a shared memory to change, whether this actor may): a person, or an agent making a change no rule
        guards, takes a person's; an agent's guarded change (re-tag, complaint) takes an agent's memory half
        the time, else tries a person's and must be refused (an agent may not change a person's memory)."""
        if not (agent and guarded and self.spec.agent_shared):
            return self.rng.choice(self.spec.shared), True
        if self.rng.random() < 0.5:
            return self.rng.choice(self.spec.agent_shared), True
        return self.rng.choice(self.spec.shared), False

    def must_refuse(self, run: Any, what: str) -> None:
        """``run()`` must be refused for want of trust: exit 6, needs_a_person, with a repair."""
        from ee.errors import EeError

        try:
            run()
        except EeError as exc:
            if (int(exc.exit_code), exc.code, bool(exc.hint)) != (6, "needs_a_person", True):
                raise
            return
        raise AssertionError(f"an agent {what}, a person's memory, and was not refused")

    def op_tags(self, i: int) -> dict[str, Any]:
        agent = not self.via_cli(i) and self.actor(i).agent is not None  # (through the CLI: a person)
        memory_id, may = self.target(agent, guarded=True)
        tag = f"{self.spec.name}-t{i}"
        if not may:
            self.must_refuse(lambda: self.ws.edit_tags(memory_id, add=[tag], actor=self.actor(i)), "tagged")
            return {"refused": memory_id, "tag": tag}
        if self.via_cli(i):
            self.cli("memory", "tags", memory_id, "--add", tag)
            return {"tagged": memory_id, "tag": tag, "cli": True}
        self.ws.edit_tags(memory_id, add=[tag], actor=self.actor(i))
        return {"tagged": memory_id, "tag": tag}

    def op_outcome(self, i: int) -> dict[str, Any]:
        from ee.policy.feedback import NEGATIVE_SIGNALS

        signal_name = self.rng.choice(["helpful", "harmful", "confirmation"])
        cli = self.via_cli(i)  # (through the CLI: always as this agent)
        memory_id, may = self.target(cli or self.actor(i).agent is not None, signal_name in NEGATIVE_SIGNALS)
        if cli:
            args = ("outcome", memory_id, "--signal", signal_name, "--agent", self.spec.name)
            if not may:
                self.must_refuse(lambda: self.cli(*args), f"sent {signal_name} about")
                return {"refused": memory_id, "signal": signal_name, "cli": True}
            data = self.cli(*args)
            return {"memory": memory_id, "event": _event_id(data), "cli": True}
        from ee.ops.feedback import record_outcome

        if not may:
            self.must_refuse(
                lambda: record_outcome(self.ws, memory_id, signal_name, actor=self.actor(i)),
                f"sent {signal_name} about",
            )
            return {"refused": memory_id, "signal": signal_name}
        data = record_outcome(self.ws, memory_id, signal_name, actor=self.actor(i))
        return {"memory": memory_id, "event": _event_id(data)}

    def op_import(self, i: int) -> dict[str, Any]:
        from ee.ops.transfer import import_jsonl

        lines = import_lines(5, seed=self.spec.seed * 1000 + i, prefix=f"{self.spec.name} import {i}")
        report = import_jsonl(self.ws, lines, actor=self.actor(i), source_name=f"{self.spec.name}-{i}.jsonl")
        return {"ids": report.imported}

    # ------------------------------------------------------------------ hand edits and readers

    def role_hand(self) -> None:
        """A person's editor: plain (non-atomic) writes of their own notes, never committed by them."""
        for i in range(self.spec.ops):
            rel = f"memories/hand/{self.spec.name}-{i % 3}.md"
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            text = f"hand note {i} by {self.spec.name}: " + " ".join(self.rng.choices(WORDS, k=20)) + "\n"
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text[:20])
                handle.flush()
                time.sleep(0.005)
                handle.write(text[20:])
            self.record(
                {"op": "hand", "ok": True, "path": rel, "sha": hashlib.sha1(text.encode()).hexdigest()}
            )
            time.sleep(self.rng.uniform(0.01, 0.1))

    def role_reader(self) -> None:
        """Parse every ee-written file and open the index, in a loop, until told to stop."""
        from ee.errors import MemoryFormatError, NotFound
        from ee.index.view import open_index
        from ee.store.walk import memory_files

        loops, files_read, torn, index_errors = 0, 0, [], []
        stop = Path(self.spec.stop)
        while not stop.exists() and loops < self.spec.ops:
            for rel, _st in memory_files(self.root):
                if rel.startswith("memories/hand/"):
                    continue
                try:
                    self.ws.store.read(rel)
                    files_read += 1
                except NotFound:
                    continue
                except MemoryFormatError as exc:
                    torn.append(exc.message)
            try:
                view = open_index(self.ws)
                for position in range(view.gen.size):
                    view.gen.body(position)
            except Exception:
                index_errors.append(traceback.format_exc()[-2000:])
            loops += 1
        self.record(
            {
                "op": "reader",
                "ok": not torn and not index_errors,
                "loops": loops,
                "files_read": files_read,
                "torn": torn[:20],
                "index_errors": index_errors[:5],
            }
        )


def _event_id(data: dict[str, Any]) -> str | None:
    event = data.get("event")
    if isinstance(event, dict):
        return str(event.get("id"))
    return None


def worker_main(argv: list[str]) -> int:
    spec = WorkerSpec(**json.loads(Path(argv[0]).read_text()))
    os.environ.update(spec.env)
    Worker(spec).run()
    return 0


# ------------------------------------------------------------------------------------------ concurrency


@dataclass
class ConcurrencyReport:
    writers: int
    ops: int
    attempted: int = 0
    succeeded: int = 0
    conflicts: int = 0  # exit 8 with a retry hint: a clean failure
    memories_written: int = 0
    tags_added: int = 0
    refused: int = 0  # an agent's re-tag or complaint of a person's memory: exit 6 needs_a_person
    events_added: int = 0
    reader_loops: int = 0
    reader_files: int = 0
    hand_writes: int = 0
    watcher: str = "not run"
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"{self.writers} writers x {self.ops} ops: {self.attempted} attempted, {self.succeeded} ok, "
            f"{self.conflicts} clean conflicts (exit 8), {self.memories_written} memories, "
            f"{self.tags_added} tags, {self.events_added} events, "
            f"{self.refused} refused (exit 6); readers {self.reader_loops} loops over "
            f"{self.reader_files} files; {self.hand_writes} hand writes; watcher {self.watcher}; "
            f"{len(self.failures)} failures; {self.seconds:.1f} s"
        )


def run_concurrency(
    base: Path,
    *,
    writers: int,
    ops: int,
    readers: int = 1,
    hands: int = 1,
    impatient: int = 0,
    shared: int = 4,
    seed: int = 0,
    cli_every: int = 4,
    watch: bool = True,
) -> ConcurrencyReport:
    """``writers`` processes x ``ops`` mixed operations (remember, tags on shared memories, outcome, import),
    ``impatient`` more with a 10 ms lock timeout (they must fail cleanly: exit 8 and a hint), ``hands``
    editors writing their own files, ``readers`` parsing every file and opening the index in a loop, and
    ``ee watch`` if this build has it. Then every check."""
    root = base / "ws"
    results = base / "results"
    results.mkdir(parents=True)
    shared_ids = new_workspace(root, shared=shared, seed=seed)
    agent_shared = _agent_memories(root, shared, seed)
    started = time.monotonic()
    watch_log = results / "watch.log"
    watcher = _start_watcher(root, watch_log) if watch and "watch" in ee_commands() else None
    stop = results / "stop"
    procs: list[tuple[str, subprocess.Popen[bytes]]] = []
    roles = (
        [("mixed", {}, ops)] * writers
        + [("mixed", {"EE_LOCK_TIMEOUT": "0.01"}, ops)] * impatient
        + [("hand", {}, ops)] * hands
        + [("reader", {}, 10**6)] * readers
    )
    for n, (role, env, count) in enumerate(roles):
        spec = WorkerSpec(
            root=str(root),
            role=role,
            name=f"{role[0]}{n}",
            ops=count,
            seed=seed * 100 + n,
            out=str(results / f"{n}.jsonl"),
            stop=str(stop),
            shared=shared_ids,
            agent_shared=agent_shared,
            cli_every=cli_every,
            env=env,
        )
        path = results / f"{n}.spec.json"
        path.write_text(json.dumps(spec.__dict__))
        procs.append(
            (
                role,
                subprocess.Popen(
                    [sys.executable, str(HARNESS), "worker", str(path)], env=child_env(env), cwd=root
                ),
            )
        )
    report = ConcurrencyReport(writers=writers + impatient, ops=ops)
    for role, proc in procs:
        if role != "reader" and proc.wait(timeout=3600) != 0:
            report.failures.append(f"a {role} worker exited {proc.returncode}")
    stop.write_text("stop")
    for role, proc in procs:
        if role == "reader" and proc.wait(timeout=600) != 0:
            report.failures.append(f"a reader exited {proc.returncode}")
    if watcher is not None:
        report.watcher = _stop_watcher(watcher, watch_log, report.failures)
    report.seconds = time.monotonic() - started
    items = [json.loads(line) for f in sorted(results.glob("*.jsonl")) for line in f.read_text().splitlines()]
    _verify(root, items, report)
    return report


def _agent_memories(root: Path, count: int, seed: int) -> list[str]:
    """``count`` committed memories an agent wrote (the agents' shared ones); their ids."""
    from ee.policy.trust import Actor
    from ee.workspace import Workspace

    ws, rng, agent = Workspace(root), random.Random(seed + 1), Actor(agent="seed-agent")
    return [
        ws.remember(f"shared agent memory {i}: " + " ".join(rng.choices(WORDS, k=12)), actor=agent).id
        for i in range(count)
    ]


def _start_watcher(root: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as handle:  # a file, not a pipe: a long run's log would fill a pipe and block it
        proc = subprocess.Popen(
            ee_args(root, "watch"),
            cwd=root,
            env=child_env(),
            stdout=subprocess.DEVNULL,
            stderr=handle,
            start_new_session=True,
        )
    time.sleep(1.0)
    return proc


def _stop_watcher(proc: subprocess.Popen[bytes], log: Path, failures: list[str]) -> str:
    if proc.poll() is not None:
        failures.append(f"ee watch died during the run (exit {proc.returncode}): {log.read_text()[-1000:]}")
        return "died"
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        failures.append(f"ee watch did not stop within 20 s of SIGINT: {log.read_text()[-1000:]}")
    return "ran throughout"


def _verify(root: Path, items: list[dict[str, Any]], report: ConcurrencyReport) -> None:
    from ee.policy.feedback import NEGATIVE_SIGNALS
    from ee.store.files import Store

    fail = report.failures
    head = head_memories(root)
    store = Store(root)
    written: list[str] = []
    for item in items:
        if item["op"] == "reader":
            report.reader_loops += item["loops"]
            report.reader_files += item["files_read"]
            fail += [f"a reader saw a half-written file: {m}" for m in item["torn"]]
            fail += [f"open_index failed in a reader: {m}" for m in item["index_errors"]]
            continue
        if item["op"] == "hand":
            report.hand_writes += 1
            continue
        report.attempted += 1
        if not item["ok"]:
            if item["exit"] == 8 and item.get("hint"):
                report.conflicts += 1
            else:
                fail.append(f"{item['op']} failed (exit {item['exit']}): {item['message'][-1500:]}")
            continue
        report.succeeded += 1
        written += item.get("ids", [])
        if "refused" in item:
            report.refused += 1
        elif item["op"] == "tags":
            report.tags_added += 1
        elif item["op"] == "outcome":
            report.events_added += 1
    report.memories_written = len(written)
    fail += [
        f"lost memory {memory_id}: reported written, not in HEAD"
        for memory_id in written
        if memory_id not in head
    ]
    fail += [
        f"memory {memory_id} is not in the working tree"
        for memory_id in written
        if memory_id in head and not (root / head[memory_id]).is_file()
    ]
    final_tags: dict[str, set[str]] = {}
    for item in items:
        if item["op"] == "tags" and item["ok"] and "tagged" in item:
            memory_id = item["tagged"]
            if memory_id not in final_tags:
                final_tags[memory_id] = set(store.find(memory_id).tags)
            if item["tag"] not in final_tags[memory_id]:
                fail.append(f"lost tag {item['tag']} of {memory_id}")
    fail += [
        f"refused tag {item['tag']} of a person's {item['refused']} was written"
        for item in items
        if item["op"] == "tags"
        and item["ok"]
        and "refused" in item
        and item["tag"] in store.find(item["refused"]).tags
    ]
    events_text = "".join(p.read_text() for p in (root / "memories" / ".events").glob("*.jsonl"))
    refused = {item["refused"] for item in items if "refused" in item}
    for line in events_text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            fail.append(f"torn events line: {line[:200]}")
            continue
        source, signal_name = str(event.get("source")), event.get("signal")
        if event.get("memory") in refused and source.startswith("agent:") and signal_name in NEGATIVE_SIGNALS:
            fail.append(f"a refused complaint was written: {line[:200]}")
    fail += [
        f"lost event {item['event']}"
        for item in items
        if item["op"] == "outcome" and item["ok"] and item.get("event") and item["event"] not in events_text
    ]
    swept = git(root, "ls-tree", "-r", "--name-only", "HEAD", "--", "memories/hand").split()
    fail += [f"ee committed a person's uncommitted file: {path}" for path in swept]
    last_hand: dict[str, str] = {}
    for item in items:
        if item["op"] == "hand":
            last_hand[item["path"]] = item["sha"]
    for rel, sha in last_hand.items():
        if hashlib.sha1((root / rel).read_bytes()).hexdigest() != sha:
            fail.append(f"a person's file {rel} was changed by ee")
    fail += store_problems(root, {})
    fail += [
        f"unexpected uncommitted ee change: {line}"
        for line in git(root, "status", "--porcelain", "-uall", "--", "memories").splitlines()
        if "memories/hand/" not in line
    ]
    fail += index_differences(root)


# ------------------------------------------------------------------------------------------ crash trials

CRASH_LABELS = {
    "remember": ["write.temp", "write.renamed", "git.tree", "git.commit", "git.index"],
    "tags": ["write.temp", "write.renamed", "git.tree", "git.commit", "git.index"],
    "import": [
        "write.temp:1",
        "write.temp:{half}",
        "write.renamed:{all}",
        "git.tree",
        "git.commit",
        "git.index",
    ],
    "index": ["index.segment", "index.generation", "index.manifest"],
}


@dataclass
class CrashFigures:
    """What the kills of one operation did, and every problem found after them."""

    op: str
    trials: int = 0
    killed: int = 0  # the kill landed before the process finished
    landed: int = 0  # ... and yet the operation's commit is in HEAD (killed after update-ref)
    failed: int = 0  # trials after which a check failed
    leftovers: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, killed: Killed, landed: bool, left: dict[str, int], problems: list[str]) -> None:
        self.trials += 1
        self.killed += int(killed.killed)
        self.landed += int(landed and killed.killed)
        for key, value in left.items():
            self.leftovers[key] = self.leftovers.get(key, 0) + value
        self.failed += int(bool(problems))
        self.problems += [f"{self.op} killed at {killed.point}: {p}" for p in problems]

    def line(self) -> str:
        left = ", ".join(f"{k} {v}" for k, v in sorted(self.leftovers.items()) if v) or "none"
        return (
            f"{self.op}: {self.trials} kill points, {self.killed} killed mid-way ({self.landed} after their "
            f"commit landed), {len(self.problems)} problems; leftovers: {left}"
        )


class CrashLab:
    """A workspace per operation, killed again and again at chosen points; checked after every kill."""

    def __init__(self, base: Path, *, import_size: int = 2000, index_size: int = 2000, seed: int = 0) -> None:
        self.base = base
        self.import_size = import_size
        self.index_size = index_size
        self.rng = random.Random(seed)
        self.roots: dict[str, Path] = {}
        self.shared: dict[str, list[str]] = {}
        self.counter = 0
        self.durations: dict[str, float] = {}
        base.mkdir(parents=True, exist_ok=True)
        self.import_file = base / "import.jsonl"
        self.import_file.write_text("\n".join(import_lines(import_size, seed=seed)) + "\n")

    def root(self, op: str) -> Path:
        if op not in self.roots:
            root = self.base / op
            self.shared[op] = new_workspace(root, shared=3, seed=len(self.roots))
            if op == "index":
                from ee.ops.transfer import import_jsonl
                from ee.workspace import Workspace

                import_jsonl(Workspace(root), import_lines(self.index_size, seed=99, prefix="indexed"))
                index_signature(root)  # a first index, so that later trials update it
            self.roots[op] = root
        return self.roots[op]

    def command(self, op: str) -> list[str]:
        root = self.root(op)
        self.counter += 1
        if op == "remember":
            return ee_args(
                root, "remember", f"crash trial {self.counter}: " + " ".join(self.rng.choices(WORDS, k=8))
            )
        if op == "tags":
            return ee_args(root, "memory", "tags", self.shared[op][0], "--add", f"k{self.counter}")
        if op == "import":
            return ee_args(root, "import", "jsonl", str(self.import_file))
        if op == "index":
            self._change_for_index(root)
            return ee_args(root, "search", self.rng.choice(WORDS), "--json")
        raise ValueError(op)

    def _change_for_index(self, root: Path) -> None:
        """Every other trial rebuilds from nothing; the others update after 20 edits, committed or not."""
        if self.counter % 2:
            shutil.rmtree(root / ".ee" / "index", ignore_errors=True)
            return
        files = sorted((root / "memories").glob("indexed-*.md"))
        for path in self.rng.sample(files, min(20, len(files))):
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"edited in trial {self.counter}: {self.rng.choice(WORDS)}\n")
        if self.counter % 4 == 0:
            git(root, "add", "memories")
            git(root, "commit", "-q", "-m", f"hand edits {self.counter}")

    def duration(self, op: str) -> float:
        """How long the operation takes when nobody kills it (measured once; the kill delays span it)."""
        if op not in self.durations:
            started = time.monotonic()
            run = run_killed(self.command(op), self.root(op), child_env(), delay=None, group=False)
            assert run.returncode == 0, run.stderr
            self.durations[op] = time.monotonic() - started
            self._restore(op, self._before(op))
        return self.durations[op]

    def _before(self, op: str) -> tuple[str, dict[str, str]]:
        root = self.root(op)
        return git(root, "rev-parse", "HEAD").strip(), head_memories(root)

    def trial(
        self,
        op: str,
        figures: CrashFigures,
        *,
        delay: float | None = None,
        label: str | None = None,
        group: bool = False,
        check_index: bool = False,
    ) -> None:
        root = self.root(op)
        command = self.command(op)  # (for the index: edits, maybe committed, before the state is taken)
        head, committed = self._before(op)
        tags_before = self._tags(root, op)
        left_before = leftovers(root)
        env = child_env()
        if label is not None:
            env["EE_CRASH_AT"] = label.format(half=self.import_size // 2, all=self.import_size)
        killed = run_killed(
            command,
            root,
            env,
            delay=delay,
            group=group,
            point=label or f"{delay:.3f}s{' (group)' if group else ''}",
        )
        if not killed.killed and killed.returncode != 0:
            figures.problems.append(
                f"{op} at {killed.point} failed on its own ({killed.returncode}): {killed.stderr[-800:]}"
            )
        problems = store_problems(root, committed)
        after = head_memories(root)
        new = len(after) - len(committed)
        landed = git(root, "rev-parse", "HEAD").strip() != head
        if op == "import" and new not in (0, self.import_size):
            problems.append(f"an import was cut in half: {new} of {self.import_size} memories in HEAD")
        if op == "tags" and landed and self._tags(root, op) == tags_before:
            problems.append("HEAD moved but the tag is not there")
        left = {k: max(0, v - left_before[k]) for k, v in leftovers(root).items()}
        if op == "index" or check_index:
            problems += index_differences(root)  # the next command repairs the index
        else:
            try:
                index_signature(root)
            except Exception as exc:
                problems.append(f"the index did not open after the kill: {exc!r}")
        figures.add(killed, landed, left, problems)
        if op == "import" and landed:
            git(root, "reset", "-q", "--hard", head)  # keep the store at its size for the next trial
        self._restore(op, (head, committed))

    def _tags(self, root: Path, op: str) -> list[str]:
        if op != "tags":
            return []
        from ee.store.files import Store

        return list(Store(root).find(self.shared[op][0]).tags)

    def _restore(self, op: str, before: tuple[str, dict[str, str]]) -> None:
        root = self.root(op)
        if op == "import" and git(root, "rev-parse", "HEAD").strip() != before[0]:
            git(root, "reset", "-q", "--hard", before[0])
        if op != "index":
            reset_uncommitted(root)
        with contextlib.suppress(FileNotFoundError):
            (root / ".git" / "index.lock").unlink()  # (reported by the trial when it was there)

    def run(
        self, op: str, *, labels: bool = True, random_kills: int = 0, check_index: bool = False
    ) -> CrashFigures:
        figures = CrashFigures(op)
        if labels:
            for label in CRASH_LABELS[op]:
                self.trial(op, figures, label=label, check_index=check_index)
        if random_kills:
            total = self.duration(op)
            for n in range(random_kills):
                delay = self.rng.uniform(0.3 * total, 1.1 * total)
                self.trial(op, figures, delay=delay, group=n % 3 == 2, check_index=check_index)
        return figures


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "worker":
        sys.exit(worker_main(sys.argv[2:]))
    sys.exit("usage: harness.py worker SPEC.json")


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """A hang (a FIFO read, a YAML bomb, a slow pattern) fails the case instead of holding the whole run:
    SIGALRM after ``seconds``, in the main thread."""

    def expire(_signum: int, _frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
