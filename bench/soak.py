"""Reliability soak: the long form of tests/reliability, with its figures printed.

Run from the repository root::

    python -m bench.soak [--writers 8] [--ops 200] [--kills 50] [--import-size 2000] [--skip-pytest]

1. **Writers.** ``--writers`` processes x ``--ops`` mixed operations (remember, tags on shared memories,
   outcome, a 5-line import; every 4th through a real ``python -m ee``), plus one impatient writer (10 ms
   lock timeout: it must fail cleanly, exit 8 with a hint), two people's editors writing their own files,
   two readers parsing every file and opening the index in a loop, and ``ee watch``. Then: zero lost
   memories, tags and events, ``git fsck`` clean, nothing of the people's committed, the index equal to a
   fresh rebuild.
2. **Kills.** ``--kills`` kill -9 points spread over remember, tags edit, an import of ``--import-size``
   memories and an index build/update: every labelled crash point (``EE_CRASH_AT``) and random delays,
   killing the ee process alone or its whole process group. After each: fsck clean, no partial file, no
   committed memory lost, git's index never undoing an ee commit, the index repaired by the next command.
3. **Bad input and secrets.** The hostile-input corpus, the secret corpus and the injection corpus of the
   test suite (run through pytest), counted.
4. **The warm server's memory** (``--server-memory``, on its own: ``python -m bench.soak --server-memory``).
   One server of this user (a runtime folder of the soak's own) for ``--workspaces`` workspaces, each a
   copy of this repository's ``memories/``, touched in turn, each until the transformer arm answers it
   (its vectors are embedded while the server is idle, as a person's would be): its RSS (``VmRSS``, models
   included) after each; target ≤ 250 MB for ten. Then ``--queries`` distinct searches (every tenth a
   context pack) over those workspaces: RSS after 1,000 and after all of them; target: within 50 MB of
   each other.

Exit status 0 when every figure is clean.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.reliability.harness import (  # noqa: E402 - after the path set-up
    CRASH_LABELS,
    IDENTITY,
    CrashFigures,
    CrashLab,
    run_concurrency,
)


def hermetic(base: Path) -> None:
    """No global git config, a fixed identity, no inherited ee settings (as tests/conftest.py does)."""
    home = base / "home"
    home.mkdir()
    os.environ.update(IDENTITY)
    os.environ.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "EE_NO_SERVER": "1",
            "HF_HUB_OFFLINE": "1",
        }
    )
    for var in ("EE_WORKSPACE", "EE_AGENT", "EE_MODEL", "EE_FORMAT", "EE_LOCK_TIMEOUT", "EE_CRASH_AT"):
        os.environ.pop(var, None)


def writers(base: Path, count: int, ops: int) -> list[str]:
    print(
        f"== writers: {count} x {ops} mixed operations (+1 impatient, 2 editors, 2 readers, ee watch)",
        flush=True,
    )
    report = run_concurrency(
        base / "writers", writers=count, ops=ops, readers=2, hands=2, impatient=1, seed=11
    )
    print(report.line(), flush=True)
    for failure in report.failures[:20]:
        print("  FAIL", failure[:400])
    return report.failures


def kills(base: Path, total: int, import_size: int) -> list[str]:
    ops = ["remember", "tags", "import", "index"]
    labels = sum(len(CRASH_LABELS[op]) for op in ops)
    random_each = max(0, math.ceil((total - labels) / len(ops)))
    print(
        f"== kills: {labels} labelled points + {random_each} random kills per operation "
        f"(import and index of {import_size} memories)",
        flush=True,
    )
    lab = CrashLab(base / "kills", import_size=import_size, index_size=import_size, seed=3)
    problems: list[str] = []
    figures: list[CrashFigures] = []
    for op in ops:
        started = time.monotonic()
        result = lab.run(op, labels=True, random_kills=random_each)
        figures.append(result)
        print(f"{result.line()} ({time.monotonic() - started:.0f} s)", flush=True)
        problems += result.problems
    points = sum(f.trials for f in figures)
    killed = sum(f.killed for f in figures)
    survived = points - sum(f.failed for f in figures)
    print(
        f"kills total: {points} kill points ({killed} landed mid-operation), {survived} survived with "
        f"git fsck clean, no partial file, nothing lost and the index repaired; {len(problems)} problems",
        flush=True,
    )
    for problem in problems[:20]:
        print("  FAIL", problem[:400])
    return problems


class _Outcomes:
    """A pytest plugin counting outcomes per test module."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        module = report.nodeid.split("::")[0].rsplit("/", 1)[-1]
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        bucket = self.counts.setdefault(module, {})
        bucket[outcome] = bucket.get(outcome, 0) + 1
        if outcome == "failed":
            self.failed.append(report.nodeid)


def corpora() -> list[str]:
    import pytest

    print("== bad input, secrets, injection (the test suite's corpora, through pytest)", flush=True)
    collector = _Outcomes()
    modules = ["test_hostile_input.py", "test_secrets_e2e.py", "test_injection_e2e.py", "test_network.py"]
    args = [str(REPO / "tests" / "reliability" / m) for m in modules]
    pytest.main(
        [*args, "-q", "-p", "no:cacheprovider", "-m", "not slow", "--no-header", "-s"], plugins=[collector]
    )
    from tests.reliability.corpus import injection_corpus, secret_corpus, total_cases

    positives, lookalikes = secret_corpus()
    flagged, benign = injection_corpus()
    for module, counts in collector.counts.items():
        print(f"{module}: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    print(
        f"bad input: {total_cases()} hostile cases in the corpus; secrets: {len(positives)} true positives, "
        f"{len(lookalikes)} look-alikes; injection: {len(flagged)} instruction-like texts, {len(benign)} "
        f"look-alikes",
        flush=True,
    )
    return collector.failed


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def transformer_arm(client: Any, root: Path, query: dict[str, Any], wait: float = 120.0) -> str:
    """Search ``root`` until the transformer arm answers (its vectors are embedded while the server has
    no client of that workspace for ``EMBED_AFTER_IDLE``: so ask, then leave it idle), as a person's
    workspace is answered once the server has had a moment; the arm that answered last."""
    from ee.serve.watch import EMBED_AFTER_IDLE

    deadline = time.monotonic() + wait
    while True:
        answer = client.call("search", root, {"query": query})
        assert answer is not None, f"{root} was not served"
        arm = str(answer["query"].get("semantic_arm"))
        if arm == "transformer" or time.monotonic() > deadline:
            return arm
        time.sleep(EMBED_AFTER_IDLE + 0.5)


def server_memory(base: Path, workspaces: int, queries: int) -> list[str]:
    """Section 4 of the module's docstring; the failures (targets missed)."""
    import random
    import shutil
    import subprocess

    from ee.query.document import from_arguments
    from ee.serve import client
    from ee.workspace import Workspace

    runtime = base / "run"
    runtime.mkdir(mode=0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    os.environ.pop("EE_NO_SERVER", None)
    roots = []
    for i in range(workspaces):
        root = base / f"ws{i}"
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        Workspace.init(root)
        shutil.rmtree(root / "memories")
        shutil.copytree(REPO / "memories", root / "memories")
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "memories"], check=True)
        roots.append(root)
    words = sorted(
        {w.lower() for p in (REPO / "memories").glob("*.md") for w in p.read_text().split() if w.isalpha()}
    )
    print(
        f"== server memory: {workspaces} workspaces of {len(list((REPO / 'memories').glob('*.md')))} "
        f"memories, {queries} distinct queries",
        flush=True,
    )
    client.autostart()
    deadline = time.monotonic() + 120
    while client.call("search", roots[0], {"query": from_arguments("warm up").doc}) is None:
        if time.monotonic() > deadline:
            return ["the server did not start"]
        time.sleep(0.2)
    pid = client.server_pid()
    if pid is None or pid <= 0:
        return ["no server pid"]
    failures: list[str] = []
    for i, root in enumerate(roots, start=1):
        arm = transformer_arm(client, root, from_arguments("release checklist").doc)
        print(f"  {i} workspaces open or touched ({arm} arm): server RSS {rss_mb(pid):.0f} MB", flush=True)
    touched = rss_mb(pid)
    print(f"server for {workspaces} workspaces touched in turn: RSS {touched:.0f} MB (target <= 250 MB)")
    if workspaces >= 10 and touched > 250:
        failures.append(f"server RSS {touched:.0f} MB for {workspaces} workspaces (> 250 MB)")
    rng = random.Random(7)
    marks: dict[int, float] = {}
    started = time.monotonic()
    for n in range(1, queries + 1):
        text = " ".join(rng.sample(words, 3)) + f" q{n}"  # distinct: a token of its own
        root = roots[n % len(roots)]
        op = "context" if n % 10 == 0 else "search"
        args: dict[str, Any] = {"query": from_arguments(text).doc}
        if client.call(op, root, args) is None:
            failures.append(f"query {n} ({op}) was not served")
            break
        if n in (1000, queries) or n % 2000 == 0:
            marks[n] = rss_mb(pid)
            print(
                f"  after {n} queries: server RSS {marks[n]:.0f} MB ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    if 1000 in marks and queries in marks:
        grew = marks[queries] - marks[1000]
        print(
            f"server RSS after 1,000 queries {marks[1000]:.0f} MB, after {queries:,} "
            f"{marks[queries]:.0f} MB: {grew:+.0f} MB (target within 50 MB)"
        )
        if abs(grew) > 50:
            failures.append(f"server RSS grew {grew:.0f} MB from 1,000 to {queries} queries (> 50 MB)")
    os.kill(pid, 15)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--import-size", type=int, default=2000)
    parser.add_argument("--skip-pytest", action="store_true", help="Skip the corpora (run through pytest).")
    parser.add_argument("--server-memory", action="store_true", help="Only the warm server's memory (4).")
    parser.add_argument("--workspaces", type=int, default=10)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument(
        "--keep", metavar="DIR", help="Work in DIR and keep it (default: a temporary folder)."
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ee-soak-") as tmp:
        base = Path(args.keep) if args.keep else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        hermetic(base)
        if args.server_memory:
            failures = server_memory(base, args.workspaces, args.queries)
            print(f"== server memory: {failures or 'clean'}", flush=True)
            return 0 if not failures else 1
        failures = writers(base, args.writers, args.ops)
        failures += kills(base, args.kills, args.import_size)
        if not args.skip_pytest:
            failures += corpora()
    verdict = "clean" if not failures else f"{len(failures)} FAILURES"
    print(f"== soak {verdict} in {time.monotonic() - started:.0f} s", flush=True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
