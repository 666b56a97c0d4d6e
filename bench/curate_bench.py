"""Review-queue benchmark: ``ee curate scan`` time, the just-in-time citation check's cost in a pack, and the
duplicate scan's precision on a real corpus.

Run from the repository root::

    python -m bench.curate_bench [--n 10000] [--vim DIR] [--sample 20] [--keep DIR] [--json]

* **scan, N memories**: ``ee.curate.scan.scan`` in-process over ``bench.index_bench.make_store``'s store
  (index built first, as a warm store has it), and ``ee curate scan --json`` as a fresh process. Target
  ≤ 10 s at 10k.
* **scan, this repository**: the same over this repository's own ``memories/``. Target ≤ 1 s.
* **citation check in a pack, N memories**: what the marks of :mod:`ee.curate.marks` add to a context pack
  (``ee.pack.items.review_marks`` over the pack's candidate pool, up to 200 memories), with one in seven
  pool memories citing a real line range (as ~15 % of the generated store has code paths) and, the worst
  case, every one; the scan's candidates on disk; against the pack itself (``ee.pack.build_pack``,
  in-process as the warm server runs it). Target ≤ 5 ms.
* **duplicates on the Vim dev set** (``--vim DIR``: the folder ``/work/shared/eval/make-dev-set.sh`` builds;
  skipped without it): its 6,398 help chunks written as memory files, then the pair scan (duplicate,
  merge, contradiction, update) with the index's vectors (the near-duplicate bars of
  ``ee.curate.similar.NEAR_BARS``). Reports how many memories a duplicate/merge flag touches (target ≤ 0.5 %)
  and prints ``--sample`` flagged pairs for a person to judge, and as many ``contradiction`` pairs.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ee_argv

REPO = Path(__file__).resolve().parent.parent
CITING_SHARE = 1 / 7  # the generated store gives ~15 % of its memories code paths
TASKS = (
    "the build fails when the cache is cold",
    "run migrations inside a transaction and check the schema version",
    "flaky snapshot tests with nondeterministic ordering",
)


def _time(func: Any, repeat: int) -> tuple[float, Any]:
    """(median wall seconds, the last result)."""
    wall, _cpu, result = _times(func, repeat)
    return wall, result


def _times(func: Any, repeat: int) -> tuple[float, float, Any]:
    """(median wall seconds, median CPU seconds of this process, the last result): on a loaded machine
    the CPU time is the figure that says what the code costs."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        result = func()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls), statistics.median(cpus), result


def scan_store(root: Path, repeat: int) -> dict[str, Any]:
    from ee.curate.scan import scan
    from ee.index.view import open_index
    from ee.workspace import Workspace

    ws = Workspace.discover(root)
    open_index(ws)  # a warm store has its index
    seconds, cpu, (report, _degraded) = _times(lambda: scan(ws), repeat)
    data = report.to_json()
    started, children = time.perf_counter(), _children_cpu()
    subprocess.run(
        ee_argv("--workspace", str(root), "curate", "scan", "--json"), check=True, capture_output=True
    )
    fresh = time.perf_counter() - started
    return {
        "memories": data["memories"],
        "candidates": data["scanned"],
        "by_type": data["by_type"],
        "in_process_s": round(seconds, 3),
        "in_process_cpu_s": round(cpu, 3),
        "fresh_process_s": round(fresh, 3),
        "fresh_process_cpu_s": round(_children_cpu() - children, 3),
    }


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def citation_cost(root: Path, repeat: int) -> dict[str, Any]:
    """The marks' cost over a pack's candidate pool, every candidate citing 20 lines of a real file."""
    from ee.curate.citations import cite_hash
    from ee.pack import build_pack
    from ee.pack.items import review_marks
    from ee.query import open_view
    from ee.query.document import from_arguments
    from ee.query.engine import prepare, rank
    from ee.store.frontmatter import CITES_KEY
    from ee.workspace import Workspace

    ws = Workspace.discover(root)
    cited = root / "src" / "cited.py"
    cited.parent.mkdir(exist_ok=True)
    cited.write_text("".join(f"def handler_{i}(request):\n    return {i}\n" for i in range(200)))
    entry = "src/cited.py:10-30"
    digest = cite_hash(root, entry)
    marks_s: list[float] = []
    realistic_s: list[float] = []
    marks_cpu: list[float] = []
    realistic_cpu: list[float] = []
    pack_s: list[float] = []
    pools: list[int] = []
    for task in TASKS:
        query = from_arguments(task, max_tokens=4000)
        view, reference = open_view(ws, None)
        ctx = prepare(view, query, reference, False, 0.0)
        ranked, _total = rank(ctx)
        records = [view.gen.records[s.pos] for s in ranked[: query.pool]]
        pools.append(len(records))
        for share, samples, cpus in ((1.0, marks_s, marks_cpu), (CITING_SHARE, realistic_s, realistic_cpu)):
            step = round(1 / share)
            pool = [
                dict(r) | {"paths": [entry], "extra": {CITES_KEY: [f"{entry} {digest}"]}}
                if k % step == 0
                else r
                for k, r in enumerate(records)
            ]

            def marks(ctx: Any = ctx, pool: list[dict[str, Any]] = pool) -> list[tuple[str, ...]]:
                of = review_marks(ctx)
                return [of(record) for record in pool]

            seconds, cpu, _ = _times(marks, repeat)
            samples.append(seconds)
            cpus.append(cpu)
        seconds, _ = _time(lambda query=query: build_pack(ws, query), repeat)
        pack_s.append(seconds)
    return {
        "pool_median": statistics.median(pools),
        "marks_ms_every_candidate_cites": round(statistics.median(marks_s) * 1000, 2),
        "marks_cpu_ms_every_candidate_cites": round(statistics.median(marks_cpu) * 1000, 2),
        "marks_ms_one_in_seven_cites": round(statistics.median(realistic_s) * 1000, 2),
        "marks_cpu_ms_one_in_seven_cites": round(statistics.median(realistic_cpu) * 1000, 2),
        "pack_ms": round(statistics.median(pack_s) * 1000, 1),
    }


def vim_duplicates(vim: Path, base: Path, sample: int) -> dict[str, Any]:
    from ee.curate.near import for_scan
    from ee.curate.scan import pairs
    from ee.store.ids import now_text
    from ee.workspace import Workspace

    root = base / "vim-store"
    if not (root / "memories").is_dir():
        Workspace.init(root)
        folder = root / "memories"
        for line in (vim / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            doc = json.loads(line)
            name = "".join(c if c.isalnum() else "-" for c in doc["_id"])[:80]
            (folder / f"vim-{name}.md").write_text(
                f"---\nid: vim-{name}\nkind: fact\n---\n{doc['text']}\n", encoding="utf-8"
            )
    ws = Workspace.discover(root)
    snap = ws.store.snapshot()
    memories = snap.sorted()
    vectors = for_scan(ws)  # (builds the index the first time, as a scan does)
    started = time.perf_counter()
    found = pairs(memories, now_text(), vectors)
    seconds = time.perf_counter() - started
    by_type: dict[str, int] = {}
    for c in found:
        by_type[c.type] = by_type.get(c.type, 0) + 1
    flagged = {s for c in found if c.type in ("duplicate", "merge") for s in c.subjects}
    dup_pairs = [c for c in found if c.type in ("duplicate", "merge")]
    rng = random.Random(7)
    shown = rng.sample(dup_pairs, min(sample, len(dup_pairs)))
    conflicts = [c for c in found if c.type == "contradiction"]
    shown += rng.sample(conflicts, min(sample, len(conflicts)))
    return {
        "memories": len(memories),
        "unreadable": len(snap.problems),
        "scan_s": round(seconds, 2),
        "by_type": by_type,
        "memories_flagged_duplicate_or_merge": len(flagged),
        "share_flagged": round(len(flagged) / max(1, len(memories)), 4),
        "arm": vectors.arm if vectors else None,
        "pairs_by_embedding": sum(1 for c in dup_pairs if "embedding" in c.reason),
        "pairs_by_words": sum(1 for c in dup_pairs if "embedding" not in c.reason),
        "sample": [
            {
                "type": c.type,
                "reason": c.reason,
                "a": c.evidence[0].excerpt[:160],
                "b": c.evidence[1].excerpt[:160],
            }
            for c in shown
        ],
    }


def run(n: int, repeat: int, vim: Path | None, sample: int, keep: Path | None) -> dict[str, Any]:
    from bench.index_bench import make_store

    base = keep or Path(tempfile.mkdtemp(prefix="ee-curate-bench-"))
    results: dict[str, Any] = {"n": n}
    try:
        root = base / f"store-{n}"
        if not (root / "memories").is_dir():
            make_store(root, n)
        results["scan_store"] = scan_store(root, repeat)
        results["citation_check"] = citation_cost(root, repeat)
        results["scan_this_repository"] = scan_store(REPO, repeat)
        if vim is not None:
            results["vim"] = vim_duplicates(vim, base, sample)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories in the generated store")
    parser.add_argument("--repeat", type=int, default=3, help="in-process runs of each measurement")
    parser.add_argument("--vim", type=Path, help="the Vim dev set folder (corpus.jsonl)")
    parser.add_argument("--sample", type=int, default=20, help="flagged Vim pairs to print for review")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the generated stores here")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    results = run(args.n, args.repeat, args.vim, args.sample, args.keep)
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return 0
    for key, value in results.items():
        if key == "vim":
            for name, item in value.items():
                if name != "sample":
                    print(f"vim {name}: {item}")
            for item in value["sample"]:
                print(f"  [{item['type']}] {item['reason']}\n    A: {item['a']}\n    B: {item['b']}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
