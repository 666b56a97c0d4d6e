"""Shared helpers of the benchmarks: timing statistics, fresh ``ee`` processes with their peak RSS, an
isolated git environment, a generated store with a long git history, and a description of the machine.

Everything here is standard library (numpy is not needed to time things), so importing it costs nothing
that a measurement would see.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# ------------------------------------------------------------------------------------------ statistics


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in [0, 1]) of ``values``; the single value of one sample."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@dataclass(slots=True)
class Samples:
    """Timings of one measurement (wall seconds), with the CPU seconds and peak RSS (KiB) when known.

    CPU time (user + system, of the process and what it waited for) is what a noisy, shared machine
    distorts least: wall time there includes waiting for a core.
    """

    seconds: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    note: str = ""

    def add(self, seconds: float, rss_kb: int | None = None, cpu: float | None = None) -> None:
        self.seconds.append(seconds)
        if rss_kb is not None:
            self.rss_kb.append(rss_kb)
        if cpu is not None:
            self.cpu.append(cpu)

    def add_run(self, done: Finished) -> None:
        self.add(done.seconds, cpu=done.cpu)

    def summary(self) -> dict[str, Any]:
        """``{median_ms, p95_ms, min_ms, runs}`` (+ ``cpu_median_ms``, ``peak_rss_mb``, ``note``)."""
        if not self.seconds:
            return {"runs": 0}
        ms = [s * 1000 for s in self.seconds]
        out: dict[str, Any] = {
            "median_ms": round(statistics.median(ms), 3),
            "p95_ms": round(percentile(ms, 0.95), 3),
            "min_ms": round(min(ms), 3),
            "runs": len(ms),
        }
        if self.cpu:
            out["cpu_median_ms"] = round(statistics.median(self.cpu) * 1000, 3)
        if self.rss_kb:
            out["peak_rss_mb"] = round(max(self.rss_kb) / 1024, 1)
        if self.note:
            out["note"] = self.note
        return out


def time_each(func: Callable[[int], Any], runs: int, warmup: int = 1) -> Samples:
    """``func(i)`` for ``i`` in ``range(warmup)`` untimed, then for ``range(runs)`` timed (wall and CPU)."""
    for i in range(warmup):
        func(i)
    samples = Samples()
    for i in range(runs):
        started, cpu = time.perf_counter(), time.process_time()
        func(i)
        samples.add(time.perf_counter() - started, cpu=time.process_time() - cpu)
    return samples


# ------------------------------------------------------------------------------------------ processes


@dataclass(slots=True)
class Finished:
    seconds: float
    cpu: float  # user + system seconds of the process and the children it waited for
    returncode: int
    stdout: bytes
    stderr: bytes


def run_process(
    args: Sequence[str], cwd: Path, env: dict[str, str], stdin: bytes | None = None, check: bool = True
) -> Finished:
    """Run one process, timed from spawn to exit, with its CPU time from ``wait4``.

    Output goes to temporary files rather than pipes, so nothing reads while the clock runs and the
    child can be reaped with ``wait4`` (``communicate`` would reap it first and lose its rusage). Its
    ``ru_maxrss`` is not used: Linux carries the parent's high-water mark over the fork + exec, so it
    would report this (large) process; :func:`peak_rss_kb` measures RSS instead.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        if stdin is not None:
            inp.write(stdin)
            inp.seek(0)
        started = time.perf_counter()
        proc = subprocess.Popen(list(args), cwd=cwd, env=env, stdin=inp, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        finished = Finished(seconds, cpu, proc.returncode, out.read(), err.read())
    if check and finished.returncode != 0:
        tail = finished.stderr.decode(errors="replace")[-3000:]
        raise RuntimeError(f"{' '.join(args[:8])} exited {finished.returncode}:\n{tail}")
    return finished


def peak_rss_kb(args: Sequence[str], cwd: Path, env: dict[str, str]) -> int | None:
    """The peak RSS (KiB) of one run of ``args``, measured by ``/usr/bin/time`` (a small parent, so the
    figure is the command's own); None where there is no GNU time."""
    timer = shutil.which("time", path="/usr/bin:/bin")
    if timer is None:
        return None
    with tempfile.NamedTemporaryFile("r") as report:
        proc = subprocess.run(
            [timer, "-f", "%M", "-o", report.name, *args], cwd=cwd, env=env, capture_output=True, check=False
        )
        text = report.read().strip().splitlines()
    if proc.returncode != 0 or not text or not text[-1].isdigit():
        return None
    return int(text[-1])


def ee_argv(*args: str) -> list[str]:
    """``ee ARGS`` as users run it: the console script installed beside this interpreter (server first,
    then CLI). Without one (ee not installed, only importable), ``python -m ee ARGS``, which also pays for
    runpy (~6 ms)."""
    script = Path(sys.executable).parent / "ee"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), *args]
    return [sys.executable, "-m", "ee", *args]


def git_environment(home: Path, *, server: bool = False) -> dict[str, str]:
    """A child environment with its own git identity, no user settings and its own runtime folder (so
    the user's warm server is the benchmark's); ``server`` False sets ``EE_NO_SERVER=1`` so a stray
    server never answers a measurement meant to run in-process."""
    home.mkdir(parents=True, exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = Bench\n\temail = bench@example.com\n"
        "[gc]\n\tauto = 0\n"
    )
    # PYTHONDONTWRITEBYTECODE would have every fresh process compile the modules edited since their .pyc
    # was written: an installed ee has its .pyc files (see compile_ee).
    env = {k: v for k, v in os.environ.items() if not k.startswith("EE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_CONFIG_NOSYSTEM": "1",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    runtime = home / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    if not server:
        env["EE_NO_SERVER"] = "1"
    return env


def compile_ee() -> None:
    """Byte-compile ee's modules now, as pip does at install, so no measured process compiles them."""
    import compileall

    import ee

    compileall.compile_dir(str(Path(ee.__file__).parent), quiet=1)


@contextlib.contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """Run this process under ``env`` for a while (in-process measurements call git too)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# ------------------------------------------------------------------------------------------ machine


def machine() -> dict[str, Any]:
    """nproc, memory, CPU model, Python and the load average: what a reader needs to weigh the figures."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        first = Path("/proc/meminfo").read_text().splitlines()[0]
        mem_gb = round(int(first.split()[1]) / 2**20, 1)
    return {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": mem_gb,
        "cpu": cpu or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


# ------------------------------------------------------------------------------------------ the store


HISTORY_COMMITS = 600  # edit commits after the store is built: asOf HEAD~500 lands inside them
ADD_COMMITS = 100  # commits that add the memories (n / 100 each)
_LINK_TYPES = ("supports", "related", "supersedes", "derived_from", "contradicts")
_ID_RE = re.compile(r"^id: (mem_[0-9A-Z]{26})$", re.M)


@dataclass(slots=True)
class StoreInfo:
    root: Path
    memories: int
    commits: int
    seconds: float
    ids: list[str]


def make_store(
    root: Path, n: int, env: dict[str, str], history: int = HISTORY_COMMITS, seed: int = 7
) -> StoreInfo:
    """A workspace of ``n`` memories at HEAD with ``ADD_COMMITS + history`` commits behind it.

    The memories are those of :func:`bench.index_bench.memory_text` (varied levels, kinds, tags, trust,
    lengths and code identifiers), plus links between them (~20 %), code paths (~15 %) and expiry dates
    (~5 %). They are added over ``ADD_COMMITS`` commits, then ``history`` commits edit the store one to
    three files at a time (an appended sentence, new tags, a new confidence; every tenth commit deletes a
    memory and adds another, so HEAD still holds ``n``), with ee's commit trailers and hourly commit dates.
    The history is written with one ``git fast-import`` (seconds, where 700 ``git commit`` runs over a
    10k-file index take minutes), then checked out.
    """
    from bench.index_bench import memory_text
    from ee.workspace import Workspace

    started = time.perf_counter()
    rng = random.Random(seed)
    deletes = history // 10
    total = n + deletes
    texts = [memory_text(rng, i) for i in range(total)]
    ids = [m.group(1) if (m := _ID_RE.search(t)) else "" for t in texts]
    texts = [_decorate(rng, t, ids, i) for i, t in enumerate(texts)]
    paths = [_path_of(i) for i in range(total)]
    # Commit dates advance an hour per commit and end about now (asOf by time sees them in order).
    first = int(time.time()) - 3600 * (ADD_COMMITS + history + 2)
    stamp = f"@{first} +0000"
    with environment(env | {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}):
        Workspace.init(root)
    branch = _git(root, env, "symbolic-ref", "HEAD").strip()
    stream = _FastImport(branch, first + 3600)
    per = max(1, -(-n // ADD_COMMITS))
    for start in range(0, n, per):
        batch = range(start, min(n, start + per))
        stream.commit(
            f"bench: add memories {start}..{batch[-1]}",
            "import",
            [(paths[i], texts[i].encode()) for i in batch],
            [],
            ids[start],
        )
    live = list(range(n))
    current = {i: texts[i] for i in range(n)}
    next_new = n
    for c in range(history):
        changes: list[tuple[str, bytes]] = []
        removed: list[str] = []
        if c % 10 == 9 and next_new < total:
            gone = live.pop(rng.randrange(len(live)))
            removed.append(paths[gone])
            del current[gone]
            live.append(next_new)
            current[next_new] = texts[next_new]
            changes.append((paths[next_new], texts[next_new].encode()))
            next_new += 1
            op, mid = "forget", ids[gone]
        else:
            op = rng.choice(("edit", "tags", "outcome"))
            for i in rng.sample(live, rng.randint(1, 3)):
                current[i] = _edit(rng, current[i], c, op)
                changes.append((paths[i], current[i].encode()))
            mid = ids[i]
        stream.commit(f"bench: {op} ({c})", op, changes, removed, mid)
    proc = subprocess.run(
        ["git", "fast-import", "--quiet", "--force"],
        cwd=root,
        env=env,
        input=stream.data(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"git fast-import failed: {proc.stderr.decode(errors='replace')[-2000:]}")
    _git(root, env, "reset", "-q", "--hard", "HEAD")
    commits = int(_git(root, env, "rev-list", "--count", "HEAD").strip())
    return StoreInfo(root, len(live), commits, time.perf_counter() - started, [ids[i] for i in sorted(live)])


def _path_of(i: int) -> str:
    folder = f"memories/area-{i % 20:02d}/" if i % 3 == 0 else "memories/"
    return f"{folder}memory-{i:06d}.md"


def _decorate(rng: random.Random, text: str, ids: list[str], i: int) -> str:
    """Add links, code paths and validity windows to some memories (before the frontmatter's end)."""
    extra = []
    if rng.random() < 0.2 and i > 0:
        targets = {ids[rng.randrange(i)] for _ in range(rng.randint(1, 3))}
        links = ", ".join(f"{{type: {rng.choice(_LINK_TYPES)}, to: {t}}}" for t in sorted(targets))
        extra.append(f"links: [{links}]")
    if rng.random() < 0.15:
        extra.append(f"paths: [src/{rng.choice(('ci', 'db', 'api', 'cli'))}/**]")
    if rng.random() < 0.05:
        extra.append("valid_to: 2026-06-01T00:00:00Z")
    if not extra:
        return text
    return text.replace("\n---\n", "\n" + "\n".join(extra) + "\n---\n", 1)


_SENTENCES = (
    "Confirmed again after the last release.",
    "The workaround is to pin the toolchain version in `rust-toolchain.toml`.",
    "Update: the flaky step now retries once with backoff.",
    "Seen on the staging cluster too; see `kubectl rollout undo`.",
)


def _edit(rng: random.Random, text: str, commit: int, op: str) -> str:
    if op == "tags":
        return re.sub(
            r"^tags: \[(.*)\]$",
            lambda m: f"tags: [{m.group(1) + ', ' if m.group(1) else ''}edited-{commit % 7}]",
            text,
            count=1,
            flags=re.M,
        )
    if op == "outcome":
        return re.sub(
            r"^confidence: .*$", f"confidence: {rng.choice((0.55, 0.7, 0.8, 0.9))}", text, count=1, flags=re.M
        )
    return text.rstrip("\n") + f"\n\n{rng.choice(_SENTENCES)} (edit {commit})\n"


class _FastImport:
    """A ``git fast-import`` stream: commits with inline blobs, continuing the branch ``ee init`` made."""

    def __init__(self, branch: str, start: int) -> None:
        self.branch = branch
        self.start = start
        self.parts: list[bytes] = []
        self.count = 0

    def commit(
        self, subject: str, op: str, changes: list[tuple[str, bytes]], removed: list[str], memory_id: str
    ) -> None:
        when = self.start + 3600 * self.count
        actor = "agent:bench" if self.count % 3 else "human"
        message = f"{subject}\n\nEe-Op: {op}\nEe-Memory: {memory_id}\nEe-Actor: {actor}\n".encode()
        head = (
            f"commit {self.branch}\ncommitter Bench <bench@example.com> {when} +0000\ndata {len(message)}\n"
        ).encode()
        self.parts += [head, message]
        if self.count == 0:
            self.parts.append(f"from {self.branch}^0\n".encode())
        for path in removed:
            self.parts.append(f"D {path}\n".encode())
        for path, data in changes:
            self.parts.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode())
            self.parts += [data, b"\n"]
        self.parts.append(b"\n")
        self.count += 1

    def data(self) -> bytes:
        return b"".join(self.parts)


def _git(root: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout.decode()


def git(root: Path, env: dict[str, str], *args: str) -> str:
    """``git ARGS`` in ``root``; its stdout (raises on failure)."""
    return _git(root, env, *args)


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
