"""The Claude Code session hooks' own time: what the agent waits for at ``SessionEnd`` / ``PreCompact``.

Run from the repository root::

    python -m bench.session_hook_bench [--runs 10] [--turns 400]

A workspace, and a Claude Code transcript of TURNS turns in ``$HOME/.claude/projects/<workspace>/``; each run
appends a few turns to it (a session going on) and runs the hook command ``ee import session --from-hook``
with the hook's JSON on stdin, as Claude Code does. ``hook`` is that process, spawn to exit: all the agent
waits for. ``job`` is how long the detached import took to finish after the hook returned (nobody waits for
it; it bounds how soon the evidence is searchable).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import compile_ee, ee_argv, git_environment, load_average, percentile, run_process
from bench.sessions_bench import cc_line, turn_text

CWD_FOLDER = "ws"


def lines(rng: Any, sid: str, start: int, count: int, cwd: str) -> str:
    out = []
    for n in range(start, start + count):
        role = "user" if n % 2 == 0 else "assistant"
        when = f"2026-11-{1 + n // 1000:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00.000Z"
        out.append(cc_line(sid, n, role, turn_text(rng, "deploy", 100), when, cwd))
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def run(runs: int, turns: int) -> dict[str, Any]:
    import random

    compile_ee()
    with tempfile.TemporaryDirectory(prefix="ee-hook-bench-") as tmp:
        base = Path(tmp)
        env = git_environment(base / "home")
        root = base / CWD_FOLDER
        root.mkdir()
        run_process(["git", "init", "-q"], root, env)
        run_process(ee_argv("init"), root, env)
        project = base / "home" / ".claude" / "projects" / str(root).replace("/", "-")
        project.mkdir(parents=True)
        transcript = project / "5f0c9a6e-bench.jsonl"
        rng = random.Random(7)
        transcript.write_text(lines(rng, "5f0c9a6e-bench", 0, turns, str(root)), encoding="utf-8")
        done = root / ".ee" / "sessions" / "hook.done"
        hooks, cpus, jobs = [], [], []
        for i in range(runs):
            with transcript.open("a", encoding="utf-8") as file:
                file.write(lines(rng, "5f0c9a6e-bench", turns + 4 * i, 4, str(root)))
            event = {
                "session_id": "5f0c9a6e-bench",
                "transcript_path": str(transcript),
                "cwd": str(root),
                "hook_event_name": "PreCompact" if i % 2 else "SessionEnd",
            }
            before = done.read_text() if done.exists() else ""
            finished = run_process(
                ee_argv("import", "session", "--from-hook"), root, env, json.dumps(event).encode()
            )
            returned = time.perf_counter()
            hooks.append(finished.seconds)
            cpus.append(finished.cpu)
            deadline = returned + 300
            while (not done.exists() or done.read_text() == before) and time.perf_counter() < deadline:
                time.sleep(0.01)
            jobs.append(time.perf_counter() - returned)
        sessions = run_process(ee_argv("sessions", "list", "--json"), root, env)
        evidence = json.loads(sessions.stdout)["data"]["sessions"][0]["evidence"]

    def ms(values: list[float]) -> dict[str, float]:
        return {
            "median": round(statistics.median(values) * 1000, 1),
            "p95": round(percentile(values, 0.95) * 1000, 1),
        }

    return {
        "runs": runs,
        "turns": turns,
        "evidence": evidence,
        "hook_wall_ms": ms(hooks),
        "hook_cpu_ms": ms(cpus),
        "job_after_hook_ms": ms(jobs),
        "load_average": load_average(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args(argv)
    json.dump(run(args.runs, args.turns), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
