"""ee's benchmark harness: one table of medians and p95s over generated stores, and the same as JSON.

Run from the repository root::

    python -m bench [--sizes 1000,10000] [--runs 10] [--json OUT] [--skip ROW,...] [--keep DIR]

For each size it generates a store (:func:`bench.common.make_store`: varied memories, links, ~700
commits), then measures, on this machine, what an agent or a hook waits for: remember, import, full
rebuild, incremental update, search in each mode (in-process and as a fresh ``ee search`` process),
context (4,000 tokens), why, asOf search 500 commits back (cold and warm), sync, and — with ``ee watch``
running — fresh ``ee search`` / ``ee context`` / ``ee remember`` end to end (the server's CPU per
request in the row's note); plus the peak RSS of a query process, the index
size on disk, and the cost of the libraries alone on the same data (bm25s with its own index, the
embedder, a numpy cosine, Python and numpy start-up), so the table shows how close to the floor ee runs.
bench/README.md explains every row. ``--skip`` takes row groups: remember, import, rebuild, incremental,
search, context, why, asof, sync, watch, floor.
"""

from __future__ import annotations

import os

# In-process rows run as the `ee` command does: one OpenBLAS thread (ee.cli sets it before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import (
    Samples,
    StoreInfo,
    compile_ee,
    dumps,
    ee_argv,
    environment,
    folder_size,
    git,
    git_environment,
    load_average,
    machine,
    make_store,
    peak_rss_kb,
    run_process,
    time_each,
)

GROUPS = (
    "remember",
    "import",
    "rebuild",
    "incremental",
    "search",
    "context",
    "why",
    "asof",
    "sync",
    "watch",
    "floor",
)
MODES = ("hybrid", "lexical", "semantic", "exact")
MAX_TOKENS = 4000
AS_OF_BACK = 500
TASKS = (
    "the build fails when the cache is cold",
    "run migrations inside a transaction and check the schema version",
    "flaky snapshot tests with nondeterministic ordering",
    "database connections leak when a handler raises",
    "release pipeline tags every merge commit",
)
EXACT = ("the cache is cold", "inside a transaction", "snapshot tests", "connections leak", "merge commit")

BATCH = 100  # queries in one `ee search --batch` run
# key → (label, {size: target in ms}); the table's rows in order. None: the row has no target. The cold
# (fresh process) and served targets are issue 16's: the warm server carries latency, a cold process
# bounds the worst case.
ROWS: tuple[tuple[str, str, dict[int, float] | None], ...] = (
    ("remember", "ee remember (fresh process)", {10_000: 150}),
    ("import", "ee import jsonl, N memories (fresh process, one run)", None),
    ("rebuild_cold", "full rebuild, empty derived cache (ee index rebuild)", {10_000: 15_000}),
    ("rebuild_warm", "full rebuild, warm derived cache", None),
    ("incremental", "incremental update after one edit (open_index)", {10_000: 150}),
    *((f"search_{m}_inproc", f"search {m}, in-process", None) for m in MODES),
    *(
        (
            f"search_{m}_fresh",
            f"search {m}, fresh `ee search`",
            {10_000: 400, 100_000: 1500} if m == "hybrid" else {100_000: 1500} if m == "exact" else None,
        )
        for m in MODES
    ),
    ("search_batch", f"ee search --batch, {BATCH} queries: per query (≤ 20 ms: 50/s)", {10_000: 20}),
    ("context_inproc", "context 4k tokens, in-process", None),
    ("context_fresh", "context 4k tokens, fresh `ee context`", {10_000: 350}),
    ("why_inproc", "why ID, in-process", None),
    ("why_fresh", "why ID, fresh `ee why`", None),
    ("asof_first", f"asOf HEAD~{AS_OF_BACK}, first ever (old versions parsed + embedded)", None),
    ("asof_cold", f"asOf HEAD~{AS_OF_BACK}, cold view (fresh process)", None),
    ("asof_warm_fresh", f"asOf HEAD~{AS_OF_BACK}, warm view (fresh process)", None),
    ("asof_warm_inproc", f"asOf HEAD~{AS_OF_BACK}, warm view, in-process", None),
    ("sync_noop", "ee sync, nothing to do (fresh process)", None),
    ("watch_search", "ee watch running: fresh `ee search` (hybrid)", {10_000: 40, 100_000: 60}),
    ("watch_context", "ee watch running: fresh `ee context` (4k)", {10_000: 90, 100_000: 100}),
    ("watch_remember", "ee watch running: fresh `ee remember`", {10_000: 60}),
    ("floor_python", "floor: python -c pass", None),
    ("floor_numpy", "floor: python -c 'import numpy'", None),
    ("floor_version", "floor: ee --version (CLI imports)", None),
    ("floor_bm25s_retrieve", "floor: bm25s retrieve, own index (in-process)", None),
    ("floor_bm25s_index", "floor: bm25s index the corpus (one run)", None),
    ("floor_encode_query", "floor: embedder encode one query", None),
    ("floor_encode_corpus", "floor: embedder encode the corpus (one run)", None),
    ("floor_cosine", "floor: numpy cosine, N x dim @ query", None),
    ("floor_model_load", "floor: embedder load (fresh process work)", None),
)


def _settling(log: Callable[[str], None]) -> Callable[[str], None]:
    """``log`` that first writes out the page cache's dirty data (``os.sync``): every row group is logged
    as it starts, so each starts on a settled disk."""

    def settled(line: str) -> None:
        os.sync()
        log(line)

    return settled


class Bench:
    def __init__(self, base: Path, runs: int, skip: set[str]) -> None:
        self.base = base
        self.runs = runs
        self.skip = skip
        self.env = git_environment(base / "home")
        self.server_env = git_environment(base / "home", server=True)

    def wants(self, group: str) -> bool:
        return group not in self.skip

    # ------------------------------------------------------------------------------------ one size

    def size(self, n: int, log: Callable[[str], None]) -> dict[str, Any]:
        root = self.base / f"store-{n}"
        out: dict[str, Any] = {}
        if (root / "memories").is_dir():  # kept from an earlier run (--keep)
            info = StoreInfo(root, n, int(git(root, self.env, "rev-list", "--count", "HEAD")), 0.0, [])
        else:
            log(f"[{n}] generating the store")
            info = make_store(root, n, self.env)
        meta = {"memories": info.memories, "commits": info.commits, "generate_s": round(info.seconds, 1)}
        as_of = git(root, self.env, "rev-parse", f"HEAD~{AS_OF_BACK}").strip()
        samples: dict[str, Samples] = {}
        if self.wants("rebuild"):
            log(f"[{n}] full rebuild")
            samples |= self.rebuild(root)
        else:
            run_process(ee_argv("index", "rebuild", "--json"), root, self.env)
        meta |= self.sizes_on_disk(root)
        # Each group of rows starts with the page cache's dirty data written out (os.sync): otherwise the
        # first rows pay for the writeback of the generator's and the rebuild's ~100 MB (a 10k store),
        # which made a fresh `ee remember` ~10 ms slower than on a settled disk.
        log = _settling(log)
        with environment(self.env):
            if self.wants("search") or self.wants("context") or self.wants("why"):
                log(f"[{n}] queries in-process and fresh")
                samples |= self.queries(root)
            if self.wants("asof"):
                log(f"[{n}] asOf {as_of[:10]}")
                samples |= self.as_of(root, as_of)
            if self.wants("watch"):
                log(f"[{n}] with ee watch running")
                w_samples, served = self.watch(root)
                samples |= w_samples
                meta["watch_served"] = served
            if self.wants("incremental"):
                log(f"[{n}] incremental updates")
                samples["incremental"] = self.incremental(root)
            if self.wants("remember"):
                log(f"[{n}] remember")
                samples["remember"] = self.remember(root)
            if self.wants("sync"):
                log(f"[{n}] sync")
                samples["sync_noop"] = self.sync_noop(root)
            if self.wants("import"):
                log(f"[{n}] import")
                samples["import"] = self.import_(n)
            if self.wants("floor"):
                log(f"[{n}] library floors")
                samples |= self.floors(root)
        out = {key: s.summary() for key, s in samples.items()}
        return {"store": meta, "rows": out}

    # ------------------------------------------------------------------------------------ rows

    def fresh(
        self,
        root: Path,
        args: list[str],
        runs: int | None = None,
        server: bool = False,
        vary: Callable[[int], list[str]] | None = None,
        rss: bool = False,
    ) -> Samples:
        """``ee ARGS`` (or ``ee vary(i)``) as fresh processes: one untimed, then ``runs`` timed."""
        samples = Samples()
        env = self.server_env if server else self.env
        run_process(ee_argv(*(vary(0) if vary else args)), root, env)  # warm the page cache
        if rss and (peak := peak_rss_kb(ee_argv(*(vary(0) if vary else args)), root, env)) is not None:
            samples.rss_kb.append(peak)
        for i in range(runs or self.runs):
            done = run_process(ee_argv(*(vary(i) if vary else args)), root, env)
            samples.add_run(done)
        return samples

    def rebuild(self, root: Path) -> dict[str, Samples]:
        shutil.rmtree(root / ".ee" / "cache", ignore_errors=True)
        shutil.rmtree(root / ".ee" / "index", ignore_errors=True)
        cold = Samples()
        done = run_process(ee_argv("index", "rebuild", "--json"), root, self.env)
        cold.add_run(done)
        warm = Samples()
        for _ in range(2):
            done = run_process(ee_argv("index", "rebuild", "--json"), root, self.env)
            warm.add_run(done)
        return {"rebuild_cold": cold, "rebuild_warm": warm}

    def sizes_on_disk(self, root: Path) -> dict[str, Any]:
        manifest = json.loads((root / ".ee" / "index" / "manifest.json").read_text())
        gen = root / ".ee" / "index" / manifest["generation"]
        return {
            "index_mb": round(folder_size(gen) / 2**20, 2),
            "cache_mb": round(folder_size(root / ".ee" / "cache") / 2**20, 2),
        }

    def queries(self, root: Path) -> dict[str, Samples]:
        from ee.index.view import open_index
        from ee.ops.why import why
        from ee.pack import build_pack
        from ee.query import search
        from ee.query.document import from_arguments
        from ee.workspace import Workspace

        ws = Workspace.discover(root)
        records = open_index(ws).gen.records
        memory_id = sorted(r["id"] for r in records)[len(records) // 2]
        out: dict[str, Samples] = {}
        rounds = max(1, self.runs // 2)

        def over_tasks(func: Callable[[int], Any]) -> Samples:
            return time_each(lambda i: func(i % len(TASKS)), rounds * len(TASKS), warmup=len(TASKS))

        def text(mode: str, i: int) -> str:
            return EXACT[i % len(EXACT)] if mode == "exact" else TASKS[i % len(TASKS)]

        if self.wants("search"):
            for mode in MODES:
                out[f"search_{mode}_inproc"] = over_tasks(
                    lambda i, m=mode: search(ws, from_arguments(text(m, i), mode=m))
                )
                out[f"search_{mode}_fresh"] = self.fresh(
                    root, [], vary=lambda i, m=mode: ["search", text(m, i), "--mode", m, "--json"], rss=True
                )
        if self.wants("search"):
            out["search_batch"] = self.batch(root)
        if self.wants("context"):
            out["context_inproc"] = over_tasks(
                lambda i: build_pack(ws, from_arguments(TASKS[i], max_tokens=MAX_TOKENS))
            )
            out["context_fresh"] = self.fresh(
                root,
                [],
                vary=lambda i: ["context", TASKS[i % len(TASKS)], "--max-tokens", str(MAX_TOKENS), "--json"],
                rss=True,
            )
        if self.wants("why"):  # few runs: `ee why` reads the memory's git history
            out["why_inproc"] = time_each(lambda i: why(ws, memory_id), min(3, self.runs))
            out["why_fresh"] = self.fresh(root, ["why", memory_id, "--json"], runs=min(3, self.runs))
        return out

    def batch(self, root: Path) -> Samples:
        """A fresh ``ee search --batch`` of :data:`BATCH` queries, per query: the whole run (Python's start,
        the index opened once, every query) divided by the number of queries."""
        batch = root.parent / f"{root.name}-batch.jsonl"
        batch.write_text("".join(TASKS[i % len(TASKS)] + "\n" for i in range(BATCH)), encoding="utf-8")
        whole = self.fresh(root, ["search", "--batch", str(batch)], runs=min(3, self.runs))
        rate = BATCH / statistics.median(whole.seconds)
        per_query = Samples(note=f"{BATCH} queries a run: {rate:.0f} queries/s")
        for seconds, cpu in zip(whole.seconds, whole.cpu or [None] * len(whole.seconds), strict=True):
            per_query.add(seconds / BATCH, cpu=None if cpu is None else cpu / BATCH)
        return per_query

    def as_of(self, root: Path, commit: str) -> dict[str, Samples]:
        from ee.query import search
        from ee.query.document import from_arguments
        from ee.workspace import Workspace

        views = root / ".ee" / "index" / "asof"
        args = ["search", TASKS[0], "--as-of", commit, "--json"]
        shutil.rmtree(views, ignore_errors=True)
        first = Samples()
        done = run_process(ee_argv(*args), root, self.env)
        first.add_run(done)
        cold = Samples()
        for _ in range(3):
            shutil.rmtree(views, ignore_errors=True)
            done = run_process(ee_argv(*args), root, self.env)
            cold.add_run(done)
        warm = self.fresh(
            root, [], vary=lambda i: ["search", TASKS[i % len(TASKS)], "--as-of", commit, "--json"], rss=True
        )
        ws = Workspace.discover(root)
        inproc = time_each(
            lambda i: search(ws, from_arguments(TASKS[i % len(TASKS)], as_of=commit)), self.runs
        )
        return {"asof_first": first, "asof_cold": cold, "asof_warm_fresh": warm, "asof_warm_inproc": inproc}

    def watch(self, root: Path) -> tuple[dict[str, Samples], bool]:
        log = self.base / "watch.log"
        with open(log, "wb") as sink:
            proc = subprocess.Popen(ee_argv("watch"), cwd=root, env=self.server_env, stdout=sink, stderr=sink)
        try:
            deadline = time.monotonic() + 120
            socket = Path(self.server_env["XDG_RUNTIME_DIR"]) / "ee" / "serve.sock"
            while not socket.exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"ee watch did not start: {log.read_text()[-2000:]}")
                time.sleep(0.05)
            served = self._served(root)
            while not served and time.monotonic() < deadline:  # the server warms up before it answers
                time.sleep(0.2)
                served = self._served(root)
            rows: dict[str, Samples] = {}
            for key, vary in (
                ("watch_search", lambda i: ["search", TASKS[i % len(TASKS)], "--json"]),
                (
                    "watch_context",
                    lambda i: ["context", TASKS[i % len(TASKS)], "--max-tokens", str(MAX_TOKENS), "--json"],
                ),
                ("watch_remember", lambda i: self._remember_args(f"served {i}")),
            ):
                if key == "watch_remember" and not self.wants("remember"):
                    continue
                cpu_before = process_cpu(proc.pid)
                rows[key] = self.fresh(root, [], server=True, vary=vary)
                # The client's CPU is in the row; the server's (the watch process, all threads) is here.
                server_ms = (process_cpu(proc.pid) - cpu_before) * 1000 / (self.runs + 1)
                rows[key].note = f"server cpu {server_ms:.1f} ms per request (mean, /proc ticks)"
            if not served:
                for samples in rows.values():
                    samples.note = "NOT served by the watcher (fell back in-process)"
            elif "watch_remember" in rows:  # writes are not served: the row is a fresh in-process write
                rows["watch_remember"].note = "not served (writes run in-process)"
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return rows, served

    def _served(self, root: Path, command: list[str] | None = None) -> bool:
        """Whether a fresh ``ee COMMAND`` (a search by default) was answered by the server: numpy (which
        every in-process search imports) was never imported."""
        command = command or ["search", TASKS[0], "--json"]
        entry = ee_argv(*command)
        entry = entry[1:] if entry[0] == sys.executable else entry  # the script, or -m ee
        args = [sys.executable, "-X", "importtime", *entry]
        done = run_process(args, root, self.server_env)
        numpy_imported = re.search(rb"\|\s+numpy\s*$", done.stderr, re.MULTILINE)
        return numpy_imported is None and b'"success": true' in done.stdout

    def incremental(self, root: Path) -> Samples:
        from ee.index.view import open_index
        from ee.workspace import Workspace

        ws = Workspace.discover(root)
        open_index(ws)
        samples = Samples()
        files = sorted((root / "memories").glob("*.md"))
        for i in range(self.runs):  # as bench.index_bench does: one hand edit, then the next query's catch-up
            path = files[(i * 37) % len(files)]
            path.write_text(
                path.read_text(encoding="utf-8") + f"\nBench edit {i}: cache_key_{i}.\n", encoding="utf-8"
            )
            started, cpu_started = time.perf_counter(), time.process_time()
            view = open_index(ws)
            samples.add(time.perf_counter() - started, cpu=time.process_time() - cpu_started)
            assert view.report is not None, "the edit was not seen"
            assert view.report.modified, "the edit was not seen"
        return samples

    def remember(self, root: Path) -> Samples:
        return self.fresh(root, [], vary=lambda i: self._remember_args(str(i)))

    @staticmethod
    def _remember_args(tag: str) -> list[str]:
        return [
            "remember",
            f"Bench note {tag}: run the linter before pushing, CI rejects warnings.",
            "--kind",
            "rule",
            "--tags",
            "ci,lint",
            "--json",
        ]

    def sync_noop(self, root: Path) -> Samples:
        remote = self.base / f"remote-{root.name}.git"
        if not remote.exists():
            git(root, self.env, "clone", "-q", "--bare", str(root), str(remote))
            git(root, self.env, "remote", "add", "origin", str(remote))
        run_process(ee_argv("sync", "--json"), root, self.env)  # commits the bench's edits, pushes
        return self.fresh(root, ["sync", "--json"], runs=max(3, self.runs // 2))

    def import_(self, n: int) -> Samples:
        from bench.store_bench import realistic_records

        target = self.base / f"import-{n}"
        shutil.rmtree(target, ignore_errors=True)
        run_process(ee_argv("init", str(target), "--json"), self.base, self.env)
        source = self.base / f"import-{n}.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in realistic_records(n)))
        done = run_process(ee_argv("import", "jsonl", str(source), "--json"), target, self.env)
        imported = json.loads(done.stdout)["data"]["imported"]
        samples = Samples()
        samples.add_run(done)
        samples.note = f"{imported} imported"
        shutil.rmtree(target, ignore_errors=True)
        return samples

    def floors(self, root: Path) -> dict[str, Samples]:
        out: dict[str, Samples] = {}
        out["floor_python"] = self._fresh_raw(root, [sys.executable, "-c", "pass"])
        # As ee runs it: one OpenBLAS thread (ee.cli sets it before numpy loads).
        out["floor_numpy"] = self._fresh_raw(
            root, [sys.executable, "-c", "import numpy"], {"OPENBLAS_NUM_THREADS": "1"}
        )
        out["floor_version"] = self._fresh_raw(root, ee_argv("--version"))
        out |= library_floors(root, self.runs)
        return out

    def _fresh_raw(self, root: Path, args: list[str], extra: dict[str, str] | None = None) -> Samples:
        samples = Samples()
        env = self.env | (extra or {})
        run_process(args, root, env)
        for _ in range(self.runs):
            done = run_process(args, root, env)
            samples.add_run(done)
        return samples


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread, the dead ones too, and the children it waited for: the
    git processes of a served ``ee remember``) a running process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def library_floors(root: Path, runs: int) -> dict[str, Samples]:
    """The libraries alone on the same memories: bm25s with its own tokenizer and index, the embedder ee
    ships (model2vec's encode), and the numpy product the semantic arm is."""
    import bm25s
    import numpy as np

    from ee.index.embedder import load_embedder
    from ee.index.segment import Generation
    from ee.index.view import open_index
    from ee.workspace import Workspace

    ws = Workspace.discover(root)
    view = open_index(ws)
    folder = root / ".ee" / "index" / view.manifest["generation"]
    bodies = Generation.load(folder, for_update=True).bodies
    out: dict[str, Samples] = {}
    started = time.perf_counter()
    corpus_tokens = bm25s.tokenize(bodies, stopwords="en", show_progress=False)
    retriever = bm25s.BM25(method="lucene")
    retriever.index(corpus_tokens, show_progress=False)
    out["floor_bm25s_index"] = Samples([time.perf_counter() - started])
    k = min(100, len(bodies))

    def retrieve(i: int) -> None:
        query = bm25s.tokenize([TASKS[i % len(TASKS)]], stopwords="en", show_progress=False)
        retriever.retrieve(query, k=k, show_progress=False)

    out["floor_bm25s_retrieve"] = _over(retrieve, runs)
    load = Samples()
    for _ in range(3):
        started = time.perf_counter()
        embedder = load_embedder(view.model_folder)
        load.add(time.perf_counter() - started)
    out["floor_model_load"] = load
    out["floor_encode_query"] = _over(lambda i: embedder.encode([TASKS[i % len(TASKS)]]), runs)
    started = time.perf_counter()
    matrix = embedder.encode(bodies).astype(np.float32)
    out["floor_encode_corpus"] = Samples([time.perf_counter() - started])
    query = embedder.encode([TASKS[0]])[0].astype(np.float32)
    out["floor_cosine"] = _over(lambda i: np.argpartition(-(matrix @ query), k - 1)[:k], runs)
    return out


def _over(func: Callable[[int], Any], runs: int) -> Samples:
    return time_each(func, runs * 3, warmup=3)


# ------------------------------------------------------------------------------------------ output


def table(results: dict[str, Any]) -> str:
    """One Markdown table: per size, the wall-clock median / p95 and the CPU median; then the targets."""
    sizes = [int(s) for s in results["sizes"]]
    head = ["measurement"]
    for n in sizes:
        head += [f"{n:,}: median / p95", f"{n:,}: cpu"]
    head.append("target (size)")
    rows = [head]
    for key, label, targets in ROWS:
        cells = []
        for n in sizes:
            cells += _cells(results["sizes"][str(n)]["rows"].get(key))
        if all(c == "" for c in cells):
            continue
        target = ""
        if targets:
            target = ", ".join(
                f"≤ {_ms(v)} ({_k(s)}){_verdict(results, s, key, v)}" for s, v in targets.items()
            )
        rows.append([label, *cells, target])
    rss, disk = ["query process peak RSS (fresh hybrid search)"], ["index on disk (+ derived cache)"]
    for n in sizes:
        size = results["sizes"][str(n)]
        row = size["rows"].get("search_hybrid_fresh", {})
        rss += [f"{row['peak_rss_mb']:.0f} MB" if "peak_rss_mb" in row else "", ""]
        store = size["store"]
        disk += [f"{store['index_mb']:.1f} MB (+ {store['cache_mb']:.1f} MB)", ""]
    rows += [[*rss, "≤ 1.5 GB (100k)"], [*disk, ""]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _cells(row: dict[str, Any] | None) -> list[str]:
    if not row or not row.get("runs"):
        return ["", ""]
    wall = _ms(row["median_ms"]) if row["runs"] == 1 else f"{_ms(row['median_ms'])} / {_ms(row['p95_ms'])}"
    return [wall, _ms(row["cpu_median_ms"]) if "cpu_median_ms" in row else ""]


def _ms(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.1f} s"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.0f} ms"
    if value >= 1:
        return f"{value:.1f} ms"
    return f"{value * 1000:.0f} µs"


def _k(n: int) -> str:
    return f"{n // 1000}k"


def _verdict(results: dict[str, Any], size: int, key: str, target: float) -> str:
    row = results["sizes"].get(str(size), {}).get("rows", {}).get(key)
    if not row or not row.get("runs"):
        return ""
    return " ok" if row["median_ms"] <= target else " MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="store sizes, comma-separated (e.g. 100000)")
    parser.add_argument("--runs", type=int, default=10, help="timed runs per row (fresh processes)")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON to this file")
    parser.add_argument("--skip", default="", help=f"row groups to leave out: {', '.join(GROUPS)}")
    parser.add_argument("--keep", type=Path, help="keep (and reuse) the generated stores under this folder")
    args = parser.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if unknown := skip - set(GROUPS):
        parser.error(f"unknown --skip group(s): {', '.join(sorted(unknown))}")
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    base = args.keep or Path(tempfile.mkdtemp(prefix="ee-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "command": " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine(),
        "load_before": load_average(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sizes": {},
    }

    def log(line: str) -> None:
        print(f"{time.perf_counter() - started:6.1f}s {line}", file=sys.stderr, flush=True)

    compile_ee()
    bench = Bench(base, args.runs, skip)
    try:
        for n in sizes:
            results["sizes"][str(n)] = bench.size(n, log)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    results["load_after"] = load_average()
    results["seconds"] = round(time.perf_counter() - started, 1)
    m = results["machine"]
    print(
        f"ee benchmark: {m['cpu']}, {m['nproc']} cores, {m['memory_gb']} GB, Python {m['python']}; "
        f"load {results['load_before']} → {results['load_after']}; {results['seconds']:.0f} s"
    )
    for n in sizes:
        store = results["sizes"][str(n)]["store"]
        print(
            f"store {n:,}: {store['memories']:,} memories, {store['commits']} commits"
            + (", watcher served" if store.get("watch_served") else "")
        )
    print(table(results))
    for n in sizes:
        for key, row in results["sizes"][str(n)]["rows"].items():
            if key.startswith("watch_") and row.get("note"):
                print(f"{n:,} {key}: {row['note']}")
    if args.json:
        Path(args.json).write_text(dumps(results) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
