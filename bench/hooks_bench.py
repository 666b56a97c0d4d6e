"""Hooks benchmark: the wall time each git hook adds to git, on a 10k store, cold and with ``ee watch``.

Run from the repository root::

    python -m bench.hooks_bench [--n 10000] [--runs 10] [--keep DIR] [--json]

It builds the store of :mod:`bench.index_bench` (``--keep DIR`` reuses one built there), adds a little code
and a few memories that name code paths (two anti-patterns among them), builds the index, installs ee's
hooks, and then times each installed hook script as git runs it (``.git/hooks/NAME ARGS`` in the work
tree), after the git operation that precedes it in real use:

* pre-commit / prepare-commit-msg: a staged change touching a path an anti-pattern names, plus code lines;
* post-commit: right after a commit (made with ``EE_HOOKS=0``): the index catches up with the moved HEAD;
* post-checkout: right after ``git checkout -b``; writes ``.ee/context.md``;
* post-merge: right after a new commit arrived; writes ``.ee/context.md``;
* post-rewrite: right after ``git commit --amend``.

**cold**: no watcher (``EE_NO_SERVER=1``), the index built before. **warm**: ``ee watch`` runs (its
server checks the staged change pre-commit and prepare-commit-msg send it, ``hook_check``, and
answers the other hooks' queries; it keeps the index current, so a hook trusts its manifest). The report
says whether the server ran the checks (an ee whose server does not leaves them to the hook).
Targets: ≤ 300 ms cold, ≤ 50 ms warm, on the median wall time; each row prints the median and p95 of
wall and CPU time and the verdict. The floor (the shell runner and a Python start doing nothing) is
printed too: no hook can be faster than that.

ee's modules are compiled first and the hooks run without ``PYTHONDONTWRITEBYTECODE``, so they load
from ``.pyc`` files as an installed ee does (compiling a module on every start is not what users see).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BIN = str(Path(sys.executable).parent)
TARGET_MS = {"cold": 300, "warm": 50}
TEMPLATE = (
    "\n# Please enter the commit message for your changes. Lines starting\n"
    "# with '#' will be ignored, and an empty message aborts the commit.\n#\n"
)
PATH_MEMORIES = {
    "memories/hooks/migrations-in-tx.md": (
        "anti-pattern",
        "db/migrations/*.sql",
        "Never run schema migrations outside a transaction: a half-applied migration broke prod.",
    ),
    "memories/hooks/upload-retry.md": (
        "anti-pattern",
        "src/upload/**",
        "Never call `retry_upload` without `backoff_jitter`: it hammered the storage API in an outage.",
    ),
    "memories/hooks/api-style.md": (
        "convention",
        "src/api/*.py",
        "API handlers return problem+json errors; never raise bare exceptions.",
    ),
}


def environment(warm: bool, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EE_NO_SERVER", "PYTHONDONTWRITEBYTECODE")}
    env.update(
        {
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
            "EE_HOOK_TIMEOUT": "60",
            "GIT_AUTHOR_NAME": "Bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "Bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
        }
    )
    if not warm:
        env["EE_NO_SERVER"] = "1"
    env.update(extra)
    return env


def git(root: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        text=True,
        input=stdin,
        env=environment(False, EE_HOOKS="0"),
        check=True,
    )
    return proc.stdout


def prepare(root: Path, n: int) -> None:
    """The 10k store with code, path memories, a built index and ee's hooks installed."""
    from bench.common import compile_ee
    from bench.index_bench import make_store
    from ee.hooks.wiring import install
    from ee.index.view import open_index
    from ee.workspace import Workspace

    compile_ee()
    if not (root / ".ee/index/manifest.json").exists():
        print(f"building a {n}-memory store in {root} (once; --keep reuses it)", file=sys.stderr)
        make_store(root, n)
    files = {
        rel: f"---\nkind: {kind}\npaths: [{glob}]\n---\n{body}\n"
        for rel, (kind, glob, body) in PATH_MEMORIES.items()
    }
    files |= {
        "src/upload/client.py": "def send(blob):\n    return blob\n",
        "db/migrations/0001_init.sql": "CREATE TABLE t (id int);\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:  # a reused store stays as it was
            path.write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    if git(root, "status", "--porcelain"):
        git(root, "commit", "-q", "-m", "bench: code and path memories")
    open_index(Workspace(root))
    install(root)


def stage_change(root: Path, i: int) -> None:
    (root / "db/migrations" / f"{i:04d}_change.sql").write_text(
        "ALTER TABLE t ADD c int;\n", encoding="utf-8"
    )
    (root / "src/upload/client.py").write_text(
        f"def send(blob):\n    # change {i}\n    return retry_upload(blob, backoff_jitter=True, n={i})\n",
        encoding="utf-8",
    )
    git(root, "add", "-A", "db", "src")


def time_hook(
    root: Path,
    warm: bool,
    name: str,
    args: list[str],
    setup: Callable[[int], Any],
    runs: int,
    stdin: str | None = None,
) -> dict[str, Any]:
    """Median wall and CPU time of the hook script (what git waits for), and for the post-* hooks the time
    until their background job is done."""
    from ee.hooks.refresh import done_token

    wall, cpu, background, notes = [], [], [], set()
    for i in range(runs):
        extra = setup(i) or []
        before, usage = done_token(root), resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(
            [str(root / ".git/hooks" / name), *args, *extra],
            cwd=root,
            input=stdin,
            capture_output=True,
            text=True,
            env=environment(warm),
            check=False,
        )
        wall.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime)
        if name.startswith("post-"):
            background.append(wait_for_job(root, before) - started)
        notes.update(line for line in proc.stderr.splitlines() if "skipped" in line or "Traceback" in line)
    out = {
        "hook": name,
        "wall_ms": ms(wall),
        "wall_p95_ms": p95(wall),
        "wall_max_ms": round(max(wall) * 1000),
        "cpu_ms": ms(cpu),
        "cpu_p95_ms": p95(cpu),
        "runs": runs,
        "problems": sorted(notes),
    }
    if background:
        out["background_ms"] = ms(background)
    return out


def wait_for_job(root: Path, before: str, timeout: float = 300) -> float:
    """When the post-* hook's background job ended (its token replaced ``before``)."""
    from ee.hooks.refresh import done_token

    deadline = time.monotonic() + timeout
    while done_token(root) == before:
        if time.monotonic() > deadline:
            raise SystemExit("the hooks' background job did not finish (see .ee/hooks/refresh.log)")
        time.sleep(0.005)
    return time.perf_counter()


def ms(values: list[float]) -> int:
    return round(statistics.median(values) * 1000)


def p95(values: list[float]) -> int:
    if len(values) < 2:
        return ms(values)
    return round(statistics.quantiles(values, n=20, method="inclusive")[18] * 1000)


def scenarios(root: Path, warm: bool, runs: int) -> list[dict[str, Any]]:
    msg = Path(tempfile.mkdtemp(prefix="ee-hooks-bench-")) / "COMMIT_EDITMSG"
    counter = itertools.count(time.time_ns() // 1000)  # unique branch and file names across runs

    def staged(_i: int) -> None:
        stage_change(root, next(counter))

    def message(_i: int) -> list[str]:
        msg.write_text(TEMPLATE, encoding="utf-8")
        return [str(msg)]

    def committed(_i: int) -> None:
        stage_change(root, next(counter))
        git(root, "commit", "-q", "-m", "bench change")

    def checked_out(_i: int) -> list[str]:
        old = git(root, "rev-parse", "HEAD").strip()
        git(root, "checkout", "-q", "-b", f"bench/topic-{next(counter)}")
        return [old, old, "1"]

    def amended(_i: int) -> None:
        git(root, "commit", "-q", "--amend", "-m", f"bench amend {next(counter)}")

    results = [
        time_hook(root, warm, "pre-commit", [], staged, runs),
        time_hook(root, warm, "prepare-commit-msg", [], message, runs),
        time_hook(root, warm, "post-commit", [], committed, runs),
        time_hook(root, warm, "post-checkout", [], checked_out, runs),
        time_hook(root, warm, "post-merge", ["0"], committed, runs),
        time_hook(root, warm, "post-rewrite", ["amend"], amended, runs, stdin="a b\n"),
    ]
    git(root, "reset", "-q")
    return results


def floor(root: Path, runs: int) -> dict[str, Any]:
    """Wall (and CPU) ms of the runner alone (``EE_HOOKS=0``) and of a hook that finds nothing to do."""
    git(root, "reset", "-q")
    out = {}
    for label, env in (("runner only", {"EE_HOOKS": "0"}), ("runner + python, nothing staged", {})):
        wall, cpu = [], []
        for _ in range(runs):
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(
                [str(root / ".git/hooks/pre-commit")],
                cwd=root,
                capture_output=True,
                env=environment(False, **env),
                check=False,
            )
            wall.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime)
        out[label] = f"{ms(wall)} ms (cpu {ms(cpu)})"
    return out


def start_watcher(root: Path) -> subprocess.Popen[bytes]:
    log = (root / ".ee/bench-watch.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ee", "--workspace", str(root), "watch"],
        cwd=root,
        stdout=log,
        stderr=log,
        env=environment(True),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        from ee.serve.protocol import SOCKET, runtime_dir

        if (runtime_dir() / SOCKET).exists():
            warmup = subprocess.run(
                [sys.executable, "-m", "ee", "search", "warm up", "--json"],
                cwd=root,
                capture_output=True,
                env=environment(True),
                check=False,
            )
            if warmup.returncode == 0:
                return proc
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit("ee watch did not start serving within 120 s (see .ee/bench-watch.log)")


def served_check(root: Path) -> bool:
    """Does the user's server run the warm hooks' checks (``hook_check``)? Else they run in the hook."""
    from ee.hooks import warm

    return warm.check(root, "pre-commit", ["README.md"], "") is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the store (default 10000)")
    parser.add_argument("--runs", type=int, default=10, help="timed runs per hook (default 10)")
    parser.add_argument("--keep", type=Path, help="build the store here, or reuse the one built here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    root = (args.keep or Path(tempfile.mkdtemp(prefix="ee-hooks-bench-")) / "store").resolve()
    prepare(root, args.n)
    report: dict[str, Any] = {
        "store": str(root),
        "memories": args.n,
        "load_average": os.getloadavg(),
        "floor_ms": floor(root, args.runs),
        "cold": scenarios(root, False, args.runs),
    }
    watcher = start_watcher(root)
    try:
        report["served_check"] = served_check(root)
        report["warm"] = scenarios(root, True, args.runs)
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
    git(root, "checkout", "-q", "-")
    report["load_average_after"] = os.getloadavg()
    for mode, target in TARGET_MS.items():
        for row in report[mode]:
            row["target_ms"], row["meets_target"] = target, row["wall_ms"] <= target
    print(json.dumps(report, indent=2) if args.json else human(report))
    return 0


def human(report: dict[str, Any]) -> str:
    load = " ".join(f"{x:.1f}" for x in report["load_average"])
    after = " ".join(f"{x:.1f}" for x in report["load_average_after"])
    lines = [
        f"ee hooks on {report['memories']} memories ({report['store']}); load average {load} before, "
        f"{after} after; {report['cold'][0]['runs']} runs per hook",
        "floor: " + ", ".join(f"{k} {v}" for k, v in report["floor_ms"].items()),
        "warm pre-commit / prepare-commit-msg checked by the server (hook_check): "
        + ("yes" if report["served_check"] else "no, in the hook (the server did not answer the check)"),
        "wall = what git waits for, cpu = its CPU time (ms, median/p95); job = median ms until the post-*",
        "background job ended; verdict on the median wall: ≤300 cold, ≤50 warm",
        f"{'':<20}{'cold':-^34}  {'warm':-^34}",
        f"{'hook':<20}" + f"{'wall':>9}{'cpu':>9}{'job':>6}{'':>10}  " * 2,
    ]
    for cold, warm in zip(report["cold"], report["warm"], strict=True):
        row = f"{cold['hook']:<20}"
        for r in (cold, warm):
            job = str(r["background_ms"]) if "background_ms" in r else "-"
            verdict = "ok" if r["meets_target"] else "OVER"
            wall, cpu = f"{r['wall_ms']}/{r['wall_p95_ms']}", f"{r['cpu_ms']}/{r['cpu_p95_ms']}"
            row += f"{wall:>9}{cpu:>9}{job:>6}{verdict:>10}  "
        lines.append(row.rstrip())
        lines += [
            f"    {mode}: {note}" for mode, r in (("cold", cold), ("warm", warm)) for note in r["problems"]
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
