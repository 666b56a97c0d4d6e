"""Where a served ``ee search`` spends its time: the fresh process's floor, ee's part, and the server's.

    python -m bench.client_floor STORE [--runs 20]

STORE is a workspace (the kept 10k store of ``python -m bench --keep DIR``: ``DIR/store-10000``). The script
starts ``ee watch`` on it with its own runtime folder (so the server is this script's), then prints one
Markdown row per process, each the median of ``--runs`` fresh processes (user + system CPU from ``wait4``,
and wall): the interpreter alone, plus click, plus the modules a served search imports, the served search
and context commands themselves; then the server's share, from this process calling
``ee.serve.client.call`` in a loop (no interpreter start: the server's CPU from ``/proc``, and the wall of
each exchange). The figures and what they mean: ``ee/serve/client.py``'s docstring, bench/README.md (stop 39).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.__main__ import TASKS, process_cpu
from bench.common import compile_ee, ee_argv, git_environment, machine, run_process

CLIENT_MODULES = (
    "import ee.cli.query_cmds, ee.render.results, ee.results.search, ee.serve.client, ee.discovery"
)


def rows(store: Path) -> list[tuple[str, list[str]]]:
    task = TASKS[0]
    return [
        ("interpreter: `python -c pass`", [sys.executable, "-c", "pass"]),
        ("+ click: `python -c 'import click'`", [sys.executable, "-c", "import click"]),
        ("+ the modules a served search imports (import only)", [sys.executable, "-c", CLIENT_MODULES]),
        ("served `ee search TASK --json`", ee_argv("--workspace", str(store), "search", task, "--json")),
        (
            "served `ee context TASK --max-tokens 4000 --json`",
            ee_argv("--workspace", str(store), "context", task, "--max-tokens", "4000", "--json"),
        ),
    ]


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_floor", description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    store = args.store.resolve()
    compile_ee()
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"ee-client-floor-{os.getpid()}"
    env = git_environment(home, server=True)
    log = home / "watch.log"
    with open(log, "wb") as sink:
        server = subprocess.Popen(
            ee_argv("--workspace", str(store), "watch"), env=env, stdout=sink, stderr=sink
        )
    try:
        deadline = time.monotonic() + 300
        while f"watching {store}" not in log.read_text(errors="replace"):
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ee watch did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        load = os.getloadavg()
        print(f"{machine()['cpu']}; load {load[0]:.2f}; {args.runs} runs each (medians)\n")
        print("| process | CPU | wall |\n|---|---|---|")
        for label, command in rows(store):
            cpu, wall = [], []
            for i in range(args.runs + 2):  # (two untimed: the server opens the store, the page cache warms)
                done = run_process(command, store, env)
                if i >= 2:
                    cpu.append(done.cpu)
                    wall.append(done.seconds)
            print(f"| {label} | {median_ms(cpu)} | {median_ms(wall)} |")
        print()
        for op in ("search", "context"):
            print(served_loop(server.pid, store, op, env, args.runs * 3))
        print(f"\nload after: {os.getloadavg()[0]:.2f}")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    return 0


def served_loop(pid: int, store: Path, op: str, env: dict[str, str], runs: int) -> str:
    """The server's share of ``op``: ``runs`` requests from this process, the server's CPU per request
    and the median wall of one exchange."""
    from bench.common import environment
    from ee.query.document import from_arguments
    from ee.serve import client

    def request(i: int) -> dict[str, object]:
        query = from_arguments(TASKS[i % len(TASKS)], max_tokens=4000 if op == "context" else None)
        out: dict[str, object] = {"query": query.doc, "query_notes": list(query.notes), "min_relevance": None}
        return out | ({"quotas": None} if op == "context" else {})

    with environment(env):
        for i in range(3):
            if client.call(op, store, request(i)) is None:
                raise SystemExit(f"the server did not answer {op}")
        walls = []
        before = process_cpu(pid)
        for i in range(runs):
            started = time.perf_counter()
            client.call(op, store, request(i))
            walls.append(time.perf_counter() - started)
        server_ms = (process_cpu(pid) - before) * 1000 / runs
    return f"server's share of a served {op}: {server_ms:.1f} ms CPU per request, {median_ms(walls)} wall"


if __name__ == "__main__":
    sys.exit(main())
