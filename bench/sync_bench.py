"""How long ``ee sync`` takes to carry 1,000 new memories from one clone to another.

Run from the repository root: ``python -m bench.sync_bench [--count N]``. Everything happens in a
temporary folder with its own git configuration: a bare remote, clone A (imports the memories with
``ee import jsonl`` and pushes them with ``ee sync``) and clone B (receives them with ``ee sync``).
Target: B's sync ≤ 10 s for 1,000 memories.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ee_argv

TARGET_SECONDS = 10.0
WORDS = [
    "cargo",
    "clippy",
    "pytest",
    "ruff",
    "docker",
    "kubectl",
    "terraform",
    "migrations",
    "cache",
    "retries",
    "timeout",
    "flaky",
    "deploy",
    "staging",
    "release",
    "rollback",
    "schema",
    "index",
    "lockfile",
    "vendored",
    "toolchain",
    "nightly",
    "feature",
    "flag",
    "metrics",
    "tracing",
]


def records(count: int) -> str:
    lines = []
    for n in range(count):
        words = " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(12))
        lines.append(
            json.dumps(
                {
                    "body": f"Memory {n}: when working on {words}, check the {WORDS[n % len(WORDS)]} first.",
                    "kind": ("rule", "fact", "decision", "failure")[n % 4],
                    "level": ("semantic", "procedural", "episodic")[n % 3],
                    "tags": [WORDS[n % len(WORDS)], WORDS[(n * 3) % len(WORDS)]],
                }
            )
        )
    return "\n".join(lines) + "\n"


def environment(home: Path) -> dict[str, str]:
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        "[init]\n\tdefaultBranch = main\n[user]\n\tname = Bench\n\temail = bench@example.com\n"
    )
    env = dict(os.environ)
    env.update({"HOME": str(home), "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1"})
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    for var in ("EE_WORKSPACE", "EE_AGENT", "EE_FORMAT"):
        env.pop(var, None)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed, proc.stdout


def ee(*args: str) -> list[str]:
    return ee_argv(*args)


def bench(count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ee-sync-bench-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        env = environment(root / "home")
        run(["git", "init", "-q", "--bare", "remote.git"], root, env)
        for name in ("a", "b"):
            run(["git", "clone", "-q", "remote.git", name], root, env)
            run(ee("init", name, "--json"), root, env)
            run(ee("-W", name, "sync", "--json"), root, env)
        a, b = root / "a", root / "b"
        t_import, _ = run(ee("import", "jsonl", "-", "--json"), a, env, stdin=records(count))
        t_push, _ = run(ee("sync", "--json"), a, env)
        t_pull, out = run(ee("sync", "--json"), b, env)
        report = json.loads(out)["data"]
        received = len(report["incoming"]["added"])
        t_catch_up, index = catch_up(b, report)
        _, listing = run(ee("memory", "list", "--json"), b, env)
        present = json.loads(listing)["data"]["count"]
    return {
        "memories": count,
        "import_s": round(t_import, 3),
        "push_s": round(t_push, 3),
        "sync_in_s": round(t_pull, 3),
        "received": received,
        "present_in_b": present,
        "index_catch_up_s": t_catch_up,
        "index": index,
        "target_s": TARGET_SECONDS,
        "ok": t_pull <= TARGET_SECONDS and received == count and present == count,
    }


def catch_up(clone: Path, report: dict[str, Any]) -> tuple[float | None, Any]:
    """Time ``ee.ops.sync.catch_up_index`` over what the sync brought in (None while there is no index)."""
    from ee.ops.sync import catch_up_index
    from ee.workspace import Workspace

    start = time.perf_counter()
    before = report["incoming"]["commits"][-1]["commit"] + "~1" if report["incoming"]["commits"] else None
    result = catch_up_index(Workspace(clone), before, report["head"])
    elapsed = time.perf_counter() - start
    return (round(elapsed, 3) if result is not None else None), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="memories to import and sync (default 1000)")
    args = parser.parse_args()
    result = bench(args.count)
    print(
        f"ee sync: {result['received']} new memories into a second clone in {result['sync_in_s']:.2f} s "
        f"(target ≤ {TARGET_SECONDS:.0f} s: {'ok' if result['ok'] else 'MISSED'}); "
        f"import {result['import_s']:.2f} s, push {result['push_s']:.2f} s"
    )
    if result["index"] is None:
        print("index catch-up: not measured (ee.ops.sync.catch_up_index is not wired to the index yet)")
    else:
        print(f"index catch-up: {result['index_catch_up_s']:.2f} s {json.dumps(result['index'])}")
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
