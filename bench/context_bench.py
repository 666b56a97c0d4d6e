"""Context-pack benchmark: ``ee context`` latency for a 4,000-token pack against ``ee search`` latency.

Run from the repository root::

    python -m bench.context_bench [--n 10000] [--repeat 7] [--processes 3] [--keep DIR] [--json]

It generates a store with ``bench.index_bench.make_store`` (the same realistic 10k store the index
benchmark uses), builds its index once, then times, for a handful of coding-agent tasks:

* in-process: ``ee.query.search`` (the ``ee search`` default: hybrid, up to 100 hits) and
  ``ee.pack.build_pack`` (``ee context``: balanced profile, 4,000 tokens), each call opening the index as a
  command does (the freshness check included), median over ``--repeat`` rounds of every task;
* fresh process: ``python -m ee search TASK --json`` and ``python -m ee context TASK --json``
  (imports, index open and model load included), median over ``--processes`` runs of every task.

Target: context ≤ 2.5x search.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ee_argv

TASKS = (
    "the build fails when the cache is cold",
    "run migrations inside a transaction and check the schema version",
    "flaky snapshot tests with nondeterministic ordering",
    "database connections leak when a handler raises",
    "release pipeline tags every merge commit",
)
MAX_TOKENS = 4000


def in_process(root: Path, repeat: int) -> dict[str, Any]:
    from ee.pack import build_pack
    from ee.query import search
    from ee.query.document import from_arguments
    from ee.workspace import Workspace

    ws = Workspace.discover(root)
    timings: dict[str, list[float]] = {"search": [], "context": []}
    sizes: list[int] = []
    for task in TASKS:  # warm: page cache, imports
        search(ws, from_arguments(task))
        build_pack(ws, from_arguments(task, max_tokens=MAX_TOKENS))
    for _ in range(repeat):
        for task in TASKS:
            started = time.perf_counter()
            search(ws, from_arguments(task))
            timings["search"].append(time.perf_counter() - started)
            started = time.perf_counter()
            pack = build_pack(ws, from_arguments(task, max_tokens=MAX_TOKENS))
            timings["context"].append(time.perf_counter() - started)
            sizes.append(pack["counts"]["items"])
            assert pack["budget"]["used_tokens"] <= MAX_TOKENS
    return _medians(timings) | {"items_median": statistics.median(sizes)}


def fresh_process(root: Path, processes: int) -> dict[str, Any]:
    timings: dict[str, list[float]] = {"search": [], "context": []}
    for _ in range(processes):
        for task in TASKS:
            for command, extra in (("search", []), ("context", ["--max-tokens", str(MAX_TOKENS)])):
                started = time.perf_counter()
                subprocess.run(
                    ee_argv("--workspace", str(root), command, task, *extra, "--json"),
                    check=True,
                    capture_output=True,
                )
                timings[command].append(time.perf_counter() - started)
    return _medians(timings)


def _medians(timings: dict[str, list[float]]) -> dict[str, Any]:
    search_ms = statistics.median(timings["search"]) * 1000
    context_ms = statistics.median(timings["context"]) * 1000
    return {
        "search_ms": round(search_ms, 1),
        "context_ms": round(context_ms, 1),
        "ratio": round(context_ms / search_ms, 2),
    }


def run(n: int, repeat: int, processes: int, keep: Path | None) -> dict[str, Any]:
    from bench.index_bench import make_store
    from ee.index.view import open_index
    from ee.workspace import Workspace

    base = keep or Path(tempfile.mkdtemp(prefix="ee-context-bench-"))
    root = base / f"store-{n}"
    results: dict[str, Any] = {"n": n, "max_tokens": MAX_TOKENS, "tasks": len(TASKS)}
    try:
        if not (root / "memories").is_dir():
            make_store(root, n)
        started = time.perf_counter()
        view = open_index(Workspace.discover(root))
        results["index_open_s"] = round(time.perf_counter() - started, 2)
        results["degraded"] = [d["code"] for d in view.degraded]
        results["in_process"] = in_process(root, repeat)
        results["fresh_process"] = fresh_process(root, processes)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the generated store")
    parser.add_argument("--repeat", type=int, default=7, help="in-process rounds over the tasks")
    parser.add_argument("--processes", type=int, default=3, help="fresh-process rounds over the tasks")
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the store under this folder")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    results = run(args.n, args.repeat, args.processes, args.keep)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"store: {results['n']:,} memories, {results['tasks']} tasks, pack {MAX_TOKENS} tokens "
        f"(index open/build {results['index_open_s']:.2f} s; "
        f"degraded: {', '.join(results['degraded']) or 'none'})"
    )
    for name in ("in_process", "fresh_process"):
        row = results[name]
        verdict = "ok" if row["ratio"] <= 2.5 else "OVER TARGET"
        extra = f", {row['items_median']:g} items" if "items_median" in row else ""
        print(
            f"{name.replace('_', '-'):<14} search {row['search_ms']:>7.1f} ms   "
            f"context {row['context_ms']:>7.1f} ms   "
            f"ratio {row['ratio']:.2f}x (target <= 2.5x: {verdict}){extra}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
