"""Session memory, measured: the baseline of issue 34 on a session set, beside ``ee eval sessions``.

Run from the repository root::

    python -m bench.sessions_bench baseline [DIR] [--json] [--misses]
    python -m bench.sessions_bench scale [--sessions 1000] [--turns 300] [--queries 20] [--keep DIR]
    python -m bench.sessions_bench throughput [--sessions 200]
    python -m bench.sessions_bench big [--megabytes 10]
    python -m bench.sessions_bench phases [--megabytes 10]

``baseline`` is the issue's reference point: every exchange of every transcript (a person's message and all
that follows it up to the next one: the agent's words, its tool calls and their results) becomes one memory
through ``ee import jsonl`` — no session import, no evidence — and the questions of ``DIR/questions.jsonl``
are judged by the same code as ``ee eval sessions DIR`` (:func:`ee.eval.sessions.evaluate`), so the two
tables compare like with like. ``DIR`` defaults to the dev set, ``tests/fixtures/sessions``.

The exchanges come from the small reader below, not from ``ee.sessions``: the baseline is what a team would
do without ee's session support, and it must not move when ee's readers improve. It reads the three formats
of the dev set (Claude Code JSONL, a generic ``{role, content}`` JSON array or JSONL, Codex rollouts) and
keeps each memory's session in ``derived_from``, which is how the judge tells a memory's session.

``scale``, ``throughput`` and ``big`` are the issue's performance rows, on generated Claude Code transcripts
(deterministic: :func:`scale_sessions`). ``scale`` writes SESSIONS transcripts of TURNS turns of ~100 words
(1,000 × 300 = 300k by default), imports them with one ``ee import session`` process, prints the size of
``.ee/sessions/`` (evidence database, index and vectors) beside the size of the turns' text, times one
more ``ee import session`` of a four-turn session into that store (the index is updated, not built again)
and fresh ``ee search`` processes served by ``ee watch`` (and the same search in-process). ``throughput``
times one ``ee import session`` of SESSIONS four-turn sessions; ``big`` one of a single transcript of
MEGABYTES MB; ``phases`` imports that transcript in-process (model load included, process start not) and
prints the CPU time of each phase (reading, the secret scanner, the injection guard, ee's tokenizer,
storing, the index update and, within it, the static model's embedding).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import (
    compile_ee,
    ee_argv,
    environment,
    folder_size,
    git_environment,
    percentile,
    run_process,
)

DEV_SET = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sessions"
MAX_BODY = 16_000  # characters of one memory: an exchange with a huge tool output is cut there


@dataclass
class Exchange:
    session: str
    number: int
    time: str | None
    parts: list[str]

    def body(self) -> str:
        text = "\n".join(p for p in self.parts if p.strip())
        return text if len(text) <= MAX_BODY else text[:MAX_BODY] + "\n[cut]"


def block_text(content: Any) -> str:
    """The text of a message's content: a string, or blocks of text / tool_use / tool_result."""
    if isinstance(content, str):
        return content
    pieces = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text"):
            pieces.append(str(block.get("text", "")))
        elif kind == "tool_use":
            pieces.append(f"[{block.get('name')}] {json.dumps(block.get('input'), ensure_ascii=False)}")
        elif kind == "tool_result":
            pieces.append(block_text(block.get("content")))
    return "\n".join(pieces)


def messages(path: Path) -> tuple[str, list[tuple[str, str, str | None]]]:
    """(session id, [(role, text, time)]) of a transcript; role "user" marks a person's message."""
    text = path.read_text(encoding="utf-8")
    session = path.stem
    out: list[tuple[str, str, str | None]] = []
    if path.suffix == ".json":
        rows = json.loads(text)
    else:
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    for row in rows:
        if "role" in row and "type" not in row:  # generic messages
            role = "user" if row["role"] == "user" else "other"
            out.append((role, block_text(row.get("content")), row.get("timestamp")))
        elif row.get("type") in ("user", "assistant"):  # Claude Code
            session = row.get("sessionId", session)
            content = row.get("message", {}).get("content")
            person = row["type"] == "user" and isinstance(content, str) and not row.get("isSidechain")
            out.append(("user" if person else "other", block_text(content), row.get("timestamp")))
        elif row.get("type") == "session_meta":  # Codex
            session = row["payload"].get("id", session)
        elif row.get("type") == "response_item":
            payload = row["payload"]
            if payload.get("type") == "message":
                body = block_text(payload.get("content"))
                if body.startswith("<environment_context>"):
                    continue
                out.append(("user" if payload.get("role") == "user" else "other", body, row.get("timestamp")))
            elif payload.get("type") == "function_call":
                out.append(
                    ("other", f"[{payload.get('name')}] {payload.get('arguments')}", row.get("timestamp"))
                )
            elif payload.get("type") == "function_call_output":
                out.append(("other", str(payload.get("output")), row.get("timestamp")))
    return session, out


def exchanges(path: Path) -> Iterator[Exchange]:
    session, rows = messages(path)
    current: Exchange | None = None
    for role, text, when in rows:
        if role == "user" or current is None:
            if current:
                yield current
            current = Exchange(session, 1 if current is None else current.number + 1, when, [])
        current.parts.append(text)
    if current:
        yield current


def baseline_importer(ws: Any, paths: list[Path], progress: Any = None) -> list[dict[str, Any]]:
    """One memory per exchange through ``ee import jsonl`` (one commit), its session in ``derived_from``."""
    from ee.ops.transfer import import_jsonl
    from ee.policy.trust import Actor

    lines = []
    for path in paths:
        for exchange in exchanges(path):
            record: dict[str, Any] = {
                "body": exchange.body() or "(empty)",
                "kind": "fact",
                "source": f"session://{exchange.session}/{exchange.number}",
                "extra": {"derived_from": f"evidence:{exchange.session}:{exchange.number}"},
            }
            if exchange.time:
                record["created"] = exchange.time
            lines.append(json.dumps(record, ensure_ascii=False))
    # Transcripts quote keys and passwords; the baseline keeps them as placeholders, as a careful team would.
    import_jsonl(ws, lines, redact=True, actor=Actor(), source_name="exchanges.jsonl", progress=progress)
    return []


def run_baseline(folder: Path, as_json: bool, misses: bool) -> int:
    from ee.eval.sessions import evaluate, table

    result = evaluate(folder, baseline_importer)
    result["system"] = "baseline: one memory per exchange (ee import jsonl)"
    print(json.dumps(result, indent=1) if as_json else table(result, misses=misses))
    return 0


# ---- generated transcripts -----------------------------------------------------------------------------

TOPICS = (
    "migration schema alembic postgres index vacuum replica",
    "cache redis eviction ttl warmup stampede memcached",
    "auth token jwt refresh cookie session oauth",
    "build cargo clippy linker musl target release",
    "frontend bundle esbuild vitest pnpm typescript react",
    "queue worker retry backoff arq celery cron",
    "deploy fly docker healthcheck region rollback canary",
    "logging tracing span metrics prometheus grafana alert",
    "payments stripe webhook signature idempotency refund invoice",
    "parser tokenizer grammar ast regex unicode escape",
)
FILLER_TEXT = (
    "the a we then it this that so and but with for to of in on when after before because which test file "
    "function module config error fix change run check update handler request response value default path"
)
FILLER = tuple(FILLER_TEXT.split())
QUERIES = (
    "why does the postgres migration lock the invoices table",
    "redis cache stampede after deploy",
    "refresh token rotation cookie settings",
    "musl linker error cross build release",
    "vitest cannot find module in the bundle",
    "worker retry backoff for failed jobs",
    "fly healthcheck failing after rollback",
    "prometheus alert on tracing span latency",
    "stripe webhook signature idempotency",
    "regex tokenizer unicode escape bug",
)


def turn_text(rng: random.Random, topic: str, words: int = 100) -> str:
    """~``words`` words: a third from the session's topic, the rest filler, with an identifier or two."""
    vocabulary = topic.split()
    out = [rng.choice(vocabulary) if rng.random() < 0.33 else rng.choice(FILLER) for _ in range(words)]
    out.insert(rng.randrange(words), f"{rng.choice(vocabulary)}_{rng.randrange(10_000)}")
    return " ".join(out) + "."


def cc_line(sid: str, n: int, role: str, text: str, when: str, cwd: str) -> str:
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    return json.dumps(
        {
            "parentUuid": f"{sid}-{n - 1}" if n else None,
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": sid,
            "version": "2.0.37",
            "gitBranch": "main",
            "type": role,
            "message": {"role": role, "content": content},
            "uuid": f"{sid}-{n}",
            "timestamp": when,
        }
    )


def scale_sessions(
    folder: Path, sessions: int, turns: int, cwd: str, words: int = 100, seed: int = 34
) -> int:
    """Write ``sessions`` Claude Code transcripts of ``turns`` turns each into ``folder``; the text's size."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    text_bytes = 0
    for s in range(sessions):
        sid = f"00000000-0000-4000-8000-{s:012d}"
        topic = TOPICS[s % len(TOPICS)]
        day = 1 + s * 60 // max(sessions, 1)  # spread over two months
        lines = []
        for n in range(turns):
            text = turn_text(rng, topic, words)
            text_bytes += len(text.encode())
            when = f"2026-{9 + day // 31:02d}-{1 + day % 30:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00.000Z"
            lines.append(cc_line(sid, n, "user" if n % 2 == 0 else "assistant", text, when, cwd))
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return text_bytes


def big_transcript(path: Path, megabytes: int, cwd: str) -> int:
    """One Claude Code transcript of about ``megabytes`` MB: long turns with tool calls and bulky results."""
    rng = random.Random(10)
    lines, size, n = [], 0, 0
    sid = "00000000-0000-4000-8000-b16b16b16b16"
    while size < megabytes * 1_000_000:
        text = turn_text(rng, TOPICS[n % len(TOPICS)], 120)
        if n % 4 == 3:  # a tool result with a bulky output (a test log)
            text = "\n".join(turn_text(rng, TOPICS[0], 20) for _ in range(60))
        line = cc_line(sid, n, "user" if n % 2 == 0 else "assistant", text, "2026-11-01T10:00:00.000Z", cwd)
        lines.append(line)
        size += len(line) + 1
        n += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return size


# ---- the rows ------------------------------------------------------------------------------------------


def new_workspace(base: Path, env: dict[str, str]) -> Path:
    root = base / "ws"
    root.mkdir(parents=True)
    run_process(ee_argv("init", "--json"), root, env)
    return root


def timed_import(root: Path, paths: list[Path], env: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """One fresh ``ee import session PATHS --json``: (wall seconds, CPU seconds, its report)."""
    done = run_process(ee_argv("import", "session", *map(str, paths), "--json"), root, env)
    return done.seconds, done.cpu, json.loads(done.stdout)["data"]


def run_scale(sessions: int, turns: int, queries: int, keep: Path | None) -> dict[str, Any]:
    from ee.query.document import from_arguments
    from ee.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="ee-sessions-bench-") as tmp:
        base = keep or Path(tmp)
        env = git_environment(base / "home")
        server_env = git_environment(base / "home", server=True)
        started = time.perf_counter()
        text_bytes = scale_sessions(base / "transcripts", sessions, turns, str(base / "ws"))
        generated = time.perf_counter() - started
        root = new_workspace(base, env)
        files = sorted((base / "transcripts").glob("*.jsonl"))
        seconds, cpu, report = timed_import(root, files, env)
        evidence_dir = root / ".ee" / "sessions"
        parts = {
            str(p.relative_to(evidence_dir)): p.stat().st_size for p in evidence_dir.rglob("*") if p.is_file()
        }
        out: dict[str, Any] = {
            "sessions": sessions,
            "turns": sessions * turns,
            "evidence": report["evidence"],
            "generate_seconds": round(generated, 1),
            "import_seconds": round(seconds, 1),
            "import_cpu_seconds": round(cpu, 1),
            "turns_per_second": round(sessions * turns / seconds),
            "text_bytes": text_bytes,
            "transcript_bytes": sum(p.stat().st_size for p in files),
            "sessions_dir_bytes": folder_size(evidence_dir),
            "sessions_dir_files": parts,
        }
        out["sessions_dir_vs_text"] = round(out["sessions_dir_bytes"] / text_bytes, 2)
        # One more four-turn session into the full store: the index is updated, not built again.
        scale_sessions(base / "more", 1, 4, str(base / "ws"), seed=35)
        more = [p.rename(p.with_name("more-" + p.name)) for p in sorted((base / "more").glob("*.jsonl"))]
        seconds, cpu, _report = timed_import(root, more, env)
        out["one_more_session"] = {"import_seconds": round(seconds, 2), "import_cpu_seconds": round(cpu, 2)}
        out["search"] = served_search(root, server_env, queries)
        with environment(env):
            ws = Workspace(root)
            ws.search(from_arguments(QUERIES[0], limit=10))  # the first query opens the indexes
            times = []
            for i in range(queries):
                t0 = time.perf_counter()
                ws.search(from_arguments(QUERIES[i % len(QUERIES)], limit=10))
                times.append(time.perf_counter() - t0)
        out["search_in_process_ms"] = summary_ms(times)
    return out


def served_search(root: Path, env: dict[str, str], queries: int) -> dict[str, Any]:
    """Fresh ``ee search`` processes while ``ee watch`` serves the workspace: median and p95 in ms."""
    log = root.parent / "watch.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(ee_argv("watch"), cwd=root, env=env, stdout=sink, stderr=sink)
    try:
        deadline = time.monotonic() + 300
        socket = Path(env["XDG_RUNTIME_DIR"]) / "ee" / "serve.sock"  # (the per-user server)
        while not socket.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ee watch did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        run_process(ee_argv("search", QUERIES[0], "--json"), root, env)  # warm the server's indexes
        times, cpus = [], []
        for i in range(queries):
            done = run_process(
                ee_argv("search", QUERIES[i % len(QUERIES)], "--limit", "10", "--json"), root, env
            )
            times.append(done.seconds)
            cpus.append(done.cpu)
        hits = json.loads(done.stdout)["data"]["returned"]
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {"wall_ms": summary_ms(times), "client_cpu_ms": summary_ms(cpus), "last_hits": hits}


def summary_ms(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values) * 1000, 1),
        "p95": round(percentile(values, 0.95) * 1000, 1),
        "n": len(values),
    }


def run_throughput(sessions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ee-sessions-bench-") as tmp:
        base = Path(tmp)
        env = git_environment(base / "home")
        scale_sessions(base / "transcripts", sessions, 4, str(base / "ws"), seed=4)
        root = new_workspace(base, env)
        seconds, cpu, report = timed_import(root, sorted((base / "transcripts").glob("*.jsonl")), env)
    return {
        "sessions": sessions,
        "turns": sessions * 4,
        "evidence": report["evidence"],
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
        "sessions_per_second": round(sessions / seconds, 1),
    }


def run_big(megabytes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ee-sessions-bench-") as tmp:
        base = Path(tmp)
        env = git_environment(base / "home")
        path = base / "big.jsonl"
        size = big_transcript(path, megabytes, str(base / "ws"))
        root = new_workspace(base, env)
        seconds, cpu, report = timed_import(root, [path], env)
    return {
        "bytes": size,
        "evidence": report["evidence"],
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu, 2),
    }


# What ``phases`` times: (module, function, label). Each is timed where the import calls it (the
# importer and the index look these names up on their modules at call time).
PHASES = (
    ("ee.sessions.read", "read_transcript", "read the transcript"),
    ("ee.policy.secrets", "find_secrets", "secret scanner"),
    ("ee.policy.secrets", "redact", "secret redaction"),
    ("ee.policy.injection", "scan_injection", "injection guard"),
    ("ee.index.tokenize", "tokenize", "ee tokenizer"),
    ("ee.sessions.store", "add", "store the pieces"),
    ("ee.sessions.index", "build", "index update (with embedding)"),
)


def run_phases(megabytes: int) -> dict[str, Any]:
    """The in-process import of the ``big`` transcript, with the CPU time (``time.process_time``) of each
    of :data:`PHASES` (the model's embedding is timed on its own too: ``encode_documents``)."""
    import importlib

    from ee.index.embedder import Embedder
    from ee.workspace import Workspace

    spent: dict[str, float] = {}

    def timed(function: Any, label: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - started

        return wrapper

    originals = [(importlib.import_module(m), name) for m, name, _label in PHASES]
    saved = [getattr(module, name) for module, name in originals]
    embed = Embedder.encode_documents
    with tempfile.TemporaryDirectory(prefix="ee-sessions-bench-") as tmp:
        base = Path(tmp)
        path = base / "big.jsonl"
        size = big_transcript(path, megabytes, str(base / "ws"))
        ws, _ = Workspace.init(base / "ws")
        for (module, name), (_m, _n, label), function in zip(originals, PHASES, saved, strict=True):
            setattr(module, name, timed(function, label))
        Embedder.encode_documents = timed(embed, "embedding (static model)")  # type: ignore[method-assign]
        try:
            started = time.process_time()
            report = ws.import_sessions([path])
            total = time.process_time() - started
        finally:
            for (module, name), function in zip(originals, saved, strict=True):
                setattr(module, name, function)
            Embedder.encode_documents = embed  # type: ignore[method-assign]
    return {
        "bytes": size,
        "evidence": report.evidence,
        "cpu_seconds": {label: round(value, 2) for label, value in spent.items()},
        "import_cpu_seconds": round(total, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sessions_bench", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    base = sub.add_parser("baseline", help="one memory per exchange, judged like ee eval sessions")
    base.add_argument("folder", nargs="?", type=Path, default=DEV_SET)
    base.add_argument("--json", action="store_true")
    base.add_argument("--misses", action="store_true")
    scale = sub.add_parser("scale", help="import many generated sessions; index size and served search")
    scale.add_argument("--sessions", type=int, default=1000)
    scale.add_argument("--turns", type=int, default=300, help="turns per session")
    scale.add_argument("--queries", type=int, default=20)
    scale.add_argument("--keep", type=Path, help="generate and keep everything in this (new) folder")
    rate = sub.add_parser("throughput", help="one ee import session of many four-turn sessions")
    rate.add_argument("--sessions", type=int, default=200)
    big = sub.add_parser("big", help="one ee import session of a single large Claude Code transcript")
    big.add_argument("--megabytes", type=int, default=10)
    phases = sub.add_parser("phases", help="the big import in-process, CPU time per phase")
    phases.add_argument("--megabytes", type=int, default=10)
    args = parser.parse_args(argv)
    if args.command == "baseline":
        return run_baseline(args.folder, args.json, args.misses)
    compile_ee()
    if args.command == "scale":
        result = run_scale(args.sessions, args.turns, args.queries, args.keep)
    elif args.command == "throughput":
        result = run_throughput(args.sessions)
    elif args.command == "phases":
        result = run_phases(args.megabytes)
    else:
        result = run_big(args.megabytes)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
