"""The transformer semantic arm's costs (issue 35): what it adds to a process, how fast it embeds in the
background, and what a search pays once it answers.

    python -m bench.transformer_bench --size 10000          # a generated store of 10k memories
    python -m bench.transformer_bench --size 2000 --keep /tmp/ee-tr-bench

Rows: loading the model (wall and CPU time, the RSS it adds), embedding the store's memories as the warm
server does (``embed_pending``, batches of 8, 2 threads: memories/s by wall clock and by CPU time), one
query's encoding, and fresh ``ee search`` processes (no server) with the static arm (before the vectors
are complete) and with the transformer arm (after), and their peak RSS. Prints the load average: on a
shared machine compare CPU time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    ee_argv,
    environment,
    git_environment,
    load_average,
    make_store,
    peak_rss_kb,
    run_process,
)

TASKS = (
    "the flaky upload test keeps failing after the cache went stale",
    "how do we cut a release",
    "which lint rules are errors in CI",
)


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the generated store here")
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()}")
    base = Path(tempfile.mkdtemp(prefix="ee-tr-bench-")) if args.keep is None else args.keep
    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = git_environment(home) | {"EE_NO_SERVER": "1"}
    root = base / f"store-{args.size}"
    try:
        with environment(env):
            if not (root / ".ee").is_dir():
                make_store(root, args.size, env, history=0)
            from ee.index.transformer import embed_pending, load_transformer
            from ee.index.view import open_index
            from ee.workspace import Workspace

            view = open_index(Workspace(root))
            before = rss_mb()
            cpu, wall = time.process_time(), time.perf_counter()
            model = load_transformer(view.transformer_folder)
            print(
                f"transformer load: {1000 * (time.perf_counter() - wall):.0f} ms wall, "
                f"{1000 * (time.process_time() - cpu):.0f} ms CPU, +{rss_mb() - before:.0f} MB RSS"
            )
            cpu, wall = time.process_time(), time.perf_counter()
            done, total = embed_pending(view)
            assert done == total
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(
                f"embed {total} memories (background work): {total / wall:.0f}/s wall, "
                f"{total / cpu:.0f}/s per CPU-second ({cpu:.1f} s CPU on 2 threads); "
                f"RSS +{rss_mb() - before:.0f} MB after, process peak "
                f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
            )
            samples = []
            for task in TASKS * 10:
                started = time.perf_counter()
                model.encode([task])
                samples.append(1000 * (time.perf_counter() - started))
            print(f"query encode: median {statistics.median(samples):.1f} ms")
        for arm in ("static", "transformer"):
            if arm == "static":  # what answers until the vectors are complete: the config turns it off
                (root / ".ee" / "config.toml").write_text("[model]\ntransformer = false\n", encoding="utf-8")
            else:
                (root / ".ee" / "config.toml").write_text("", encoding="utf-8")
            times, cpus = [], []
            for run in range(args.runs + 1):
                done_run = run_process(ee_argv("search", TASKS[run % len(TASKS)], "--json"), root, env)
                if run:  # (the first run warms the page cache)
                    times.append(1000 * done_run.seconds)
                    cpus.append(1000 * done_run.cpu)
                assert f'"semantic_arm": "{arm}"'.encode() in done_run.stdout, done_run.stdout[:300]
            rss = peak_rss_kb(ee_argv("search", TASKS[0], "--json"), root, env)
            print(
                f"fresh ee search, {arm} arm, {args.size} memories: median {statistics.median(times):.0f} ms "
                f"(CPU {statistics.median(cpus):.0f} ms), max {max(times):.0f} ms; "
                f"peak RSS {(rss or 0) / 1024:.0f} MB"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
