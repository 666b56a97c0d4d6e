"""Before / after on a shared machine: fresh served ``ee search`` and ``ee context`` processes of two ee
trees, taken in turn, so both sides meet the same load.

    python -m bench.alternate BEFORE_TREE BEFORE_STORE AFTER_STORE [--runs 40]

BEFORE_TREE is a folder holding another ee's ``ee/`` package (e.g. ``git archive main | tar -x -C DIR``); it
runs with ``PYTHONPATH`` set to it, and the after side is the ee this interpreter imports. Each side gets
its own ``ee watch`` (its own runtime folder) on its own copy of the store (two servers on one store would
answer each other's index work): BEFORE_STORE and AFTER_STORE, e.g. two copies of the kept 10k store of
``python -m bench --keep DIR``. Prints, per command and side, the median of ``--runs`` processes (two
untimed first): user + system CPU from ``wait4``, and wall. Where the time goes within one side:
``python -m bench.client_floor``; the figures: bench/README.md (stop 40, session 2).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.__main__ import TASKS
from bench.common import compile_ee, ee_argv, git_environment, machine, run_process

COMMANDS = {
    "search": lambda store, task: ee_argv("--workspace", str(store), "search", task, "--json"),
    "context": lambda store, task: ee_argv(
        "--workspace", str(store), "context", task, "--max-tokens", "4000", "--json"
    ),
}


def start_server(store: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as sink:
        server = subprocess.Popen(
            ee_argv("--workspace", str(store), "watch"), env=env, stdout=sink, stderr=sink
        )
    deadline = time.monotonic() + 300
    while f"watching {store}" not in log.read_text(errors="replace"):
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"ee watch did not start: {log.read_text(errors='replace')[-2000:]}")
        time.sleep(0.1)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.alternate", description=__doc__.split("\n")[0])
    parser.add_argument("before_tree", type=Path)
    parser.add_argument("before_store", type=Path)
    parser.add_argument("after_store", type=Path)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    tree = args.before_tree.resolve()
    if not (tree / "ee" / "__init__.py").is_file():
        raise SystemExit(f"{tree} holds no ee/ package")
    compile_ee()
    compileall.compile_dir(str(tree / "ee"), quiet=1)
    home = Path(tempfile.mkdtemp(prefix="ee-alternate-"))
    sides = {"before": args.before_store.resolve(), "after": args.after_store.resolve()}
    envs = {side: git_environment(home / side, server=True) for side in sides}
    envs["before"]["PYTHONPATH"] = str(tree)
    envs["after"].pop("PYTHONPATH", None)
    servers: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for side, store in sides.items():
            servers[side] = start_server(store, envs[side], home / side / "watch.log")
        print(f"{machine()['cpu']}; load {os.getloadavg()[0]:.2f}; {args.runs} runs each, alternated\n")
        taken: dict[tuple[str, str], tuple[list[float], list[float]]] = {
            (op, side): ([], []) for op in COMMANDS for side in sides
        }
        for i in range(args.runs + 2):
            for op, command in COMMANDS.items():
                for side, store in sides.items():
                    done = run_process(command(store, TASKS[i % len(TASKS)]), store, envs[side])
                    if i >= 2:
                        taken[(op, side)][0].append(done.cpu)
                        taken[(op, side)][1].append(done.seconds)
        print("| served, 10k | CPU | wall |\n|---|---|---|")
        for (op, side), (cpu, wall) in taken.items():
            print(
                f"| `ee {op}` {side} | {statistics.median(cpu) * 1000:.1f} ms "
                f"| {statistics.median(wall) * 1000:.1f} ms |"
            )
        print(f"\nload after: {os.getloadavg()[0]:.2f}")
    finally:
        for server in servers.values():
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
