"""The store's speed: `ee remember` latency over fresh processes, bulk import / export of 10,000 memories.

Run from the repository root: ``python -m bench.store_bench [--runs 30] [--count 10000] [--json]``.
Everything happens in a temporary folder with its own git configuration. Each ``ee remember`` is a new
process (``python -m ee``), timed from spawn to exit, as an agent or a hook would call it.
Targets on the reference machine (2 cores): remember ≤ 60 ms median, import of 10,000 memories ≤ 20 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ee_argv

REMEMBER_TARGET_MS = 60.0
IMPORT_TARGET_S = 20.0

_TOPICS = [
    ("ci", "the CI pipeline", ["ci", "github-actions"]),
    ("rust", "cargo and clippy", ["rust", "lint"]),
    ("python", "pytest and ruff", ["python", "tests"]),
    ("deploy", "the staging deploy", ["deploy", "ops"]),
    ("db", "database migrations", ["db", "migrations"]),
    ("cache", "the build cache", ["build", "cache"]),
    ("api", "the public HTTP API", ["api", "compat"]),
    ("git", "git hooks and merges", ["git"]),
    ("docs", "the documentation site", ["docs"]),
    ("perf", "startup latency", ["perf", "latency"]),
]
_KINDS = [
    ("rule", "procedural"),
    ("fact", "semantic"),
    ("decision", "semantic"),
    ("failure", "episodic"),
    ("command", "procedural"),
    ("convention", "procedural"),
    ("anti-pattern", "procedural"),
    ("risk", "semantic"),
    ("observation", "episodic"),
]
_SENTENCES = [
    "Always run {tool} before pushing; the pipeline rejects anything it would flag.",
    "We chose {tool} over the alternatives because it keeps the feedback loop under a second.",
    "Last time {tool} failed, the cause was a stale lockfile left by an interrupted install.",
    "Never edit generated files by hand: regenerate them with {tool} and commit the result.",
    "The flaky test in {tool} is a timing race; retrying hides it, the fix is to wait on the event.",
    "Keep secrets out of {tool} configuration: read them from the environment at run time.",
    "When {tool} is slow, check whether the cache key changed; a new key rebuilds everything.",
    "Reviewers expect a short note explaining why {tool} was touched, not just what changed.",
]


def realistic_records(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` memories that look like a real store: varied kinds, levels, tags and lengths."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        topic, tool, tags = _TOPICS[rng.randrange(len(_TOPICS))]
        kind, level = _KINDS[rng.randrange(len(_KINDS))]
        sentences = [rng.choice(_SENTENCES).format(tool=tool) for _ in range(rng.choice([1, 1, 2, 3, 5, 12]))]
        body = f"{topic.upper()} note {n}: " + " ".join(sentences)
        if rng.random() < 0.2:
            body += f"\n\n```sh\nmake {topic}-check N={n}\n```"
        record: dict[str, Any] = {
            "body": body,
            "kind": kind,
            "level": level,
            "tags": sorted(
                set(tags + rng.sample(["team-a", "team-b", "legacy", "urgent", "q3"], rng.randrange(3)))
            ),
            "confidence": round(rng.uniform(0.3, 0.95), 2),
            "source": [f"file://docs/{topic}.md"] if rng.random() < 0.5 else [],
        }
        if rng.random() < 0.1:
            record["valid_to"] = "2030-01-01T00:00:00Z"
        if rng.random() < 0.3:
            record["paths"] = [f"src/{topic}/**"]
        out.append(record)
    return out


def environment(home: Path) -> dict[str, str]:
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = Bench\n\temail = bench@example.com\n"
    )
    env = dict(os.environ)
    env.update({"HOME": str(home), "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1"})
    # PYTHONDONTWRITEBYTECODE would recompile every module on every run: an installed ee has its .pyc files.
    for var in ("EE_WORKSPACE", "EE_AGENT", "EE_FORMAT", "EE_CRASH_AT", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    return env


CPU: list[float] = []  # CPU seconds (user + system, git children included) of each run, in order


def run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Run a command; its wall time, and (appended to CPU) its CPU time: on a busy machine wall time
    measures the neighbours too, CPU time only ee."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:6])} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed, proc.stdout


def ee(*args: str) -> list[str]:
    return ee_argv(*args)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def bench(runs: int, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ee-store-bench-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = environment(root / "home")
        ws = root / "ws"
        run(ee("init", str(ws), "--json"), root, env)
        run(ee("remember", "Warm-up: the first run fills the OS caches.", "--json"), ws, env)
        samples, cpu = [], []
        for n in range(runs):
            text = f"Remember number {n}: run the linter before pushing, CI rejects warnings."
            elapsed, _ = run(ee("remember", text, "--kind", "rule", "--tags", "ci,lint", "--json"), ws, env)
            samples.append(elapsed * 1000)
            cpu.append(CPU[-1] * 1000)
        startup, _ = run(ee("--version"), ws, env)
        startup_cpu = CPU[-1]
        python_only, _ = run([sys.executable, "-c", "pass"], ws, env)

        big = root / "big"
        run(ee("init", str(big), "--json"), root, env)
        source = root / "memories.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in realistic_records(count)))
        t_import, out = run(ee("import", "jsonl", str(source), "--json"), big, env)
        cpu_import = CPU[-1]
        imported = json.loads(out)["data"]["imported"]
        t_export, _ = run(ee("export", "jsonl", "--output", str(root / "out.jsonl")), big, env)
        exported = sum(1 for _ in (root / "out.jsonl").open())
        t_list, _ = run(ee("memory", "list", "--limit", "1", "--json"), big, env)
    median = statistics.median(samples)
    return {
        "remember_runs": runs,
        "remember_median_ms": round(median, 1),
        "remember_p95_ms": round(percentile(samples, 0.95), 1),
        "remember_min_ms": round(min(samples), 1),
        "remember_cpu_median_ms": round(statistics.median(cpu), 1),
        "load_average": round(os.getloadavg()[0], 2),
        "python_startup_ms": round(python_only * 1000, 1),
        "ee_version_ms": round(startup * 1000, 1),
        "ee_version_cpu_ms": round(startup_cpu * 1000, 1),
        "import_count": count,
        "imported": imported,
        "import_s": round(t_import, 2),
        "import_cpu_s": round(cpu_import, 2),
        "export_s": round(t_export, 2),
        "exported": exported,
        "list_all_s": round(t_list, 2),
        "remember_ok": median <= REMEMBER_TARGET_MS,
        "import_ok": t_import <= IMPORT_TARGET_S and imported == count == exported,
    }


def table(result: dict[str, Any]) -> str:
    def ok(flag: bool) -> str:
        return "ok" if flag else "MISSED"

    rows = [
        ("metric", "value", "target"),
        (
            f"ee remember, median of {result['remember_runs']} fresh processes",
            f"{result['remember_median_ms']:.1f} ms",
            f"≤ {REMEMBER_TARGET_MS:.0f} ms  {ok(result['remember_ok'])}",
        ),
        ("ee remember, p95", f"{result['remember_p95_ms']:.1f} ms", ""),
        ("ee remember, median CPU time (with git)", f"{result['remember_cpu_median_ms']:.1f} ms", ""),
        ("ee remember, fastest", f"{result['remember_min_ms']:.1f} ms", ""),
        ("  of which: python -c pass", f"{result['python_startup_ms']:.1f} ms", ""),
        ("  of which: ee --version (imports)", f"{result['ee_version_ms']:.1f} ms", ""),
        ("  ee --version, CPU time", f"{result['ee_version_cpu_ms']:.1f} ms", ""),
        (
            f"ee import jsonl, {result['import_count']:,} memories (one commit)",
            f"{result['import_s']:.2f} s",
            f"≤ {IMPORT_TARGET_S:.0f} s  {ok(result['import_ok'])}",
        ),
        ("ee import jsonl, CPU time (with git)", f"{result['import_cpu_s']:.2f} s", ""),
        (f"ee export jsonl, {result['exported']:,} memories", f"{result['export_s']:.2f} s", ""),
        (f"ee memory list over {result['imported']:,} memories", f"{result['list_all_s']:.2f} s", ""),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append(
        f"(load average during the run: {result['load_average']}; wall times include the neighbours)"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=30, help="fresh `ee remember` processes to time (default 30)"
    )
    parser.add_argument(
        "--count", type=int, default=10_000, help="memories to import and export (default 10000)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object too")
    args = parser.parse_args()
    result = bench(args.runs, args.count)
    print(table(result))
    if args.json:
        print(json.dumps(result))
    return 0 if result["remember_ok"] and result["import_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
