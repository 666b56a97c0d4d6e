"""Session memory, measured: the baseline of issue 34 on a session set, beside ``ee eval sessions``.

Run from the repository root::

    python -m bench.sessions_bench baseline [DIR] [--json] [--misses]

``baseline`` is the issue's reference point: every exchange of every transcript (a person's message and all
that follows it up to the next one: the agent's words, its tool calls and their results) becomes one memory
through ``ee import jsonl`` — no session import, no evidence — and the questions of ``DIR/questions.jsonl``
are judged by the same code as ``ee eval sessions DIR`` (:func:`ee.eval.sessions.evaluate`), so the two
tables compare like with like. ``DIR`` defaults to the dev set, ``tests/fixtures/sessions``.

The exchanges come from the small reader below, not from ``ee.sessions``: the baseline is what a team would
do without ee's session support, and it must not move when ee's readers improve. It reads the three formats
of the dev set (Claude Code JSONL, a generic ``{role, content}`` JSON array or JSONL, Codex rollouts) and
keeps each memory's session in ``derived_from``, which is how the judge tells a memory's session.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def baseline_importer(ws: Any, paths: list[Path], progress: Any = None) -> None:
    """One memory per exchange through ``ee import jsonl`` (one commit), its session in ``derived_from``."""
    from ee.policy.trust import Actor
    from ee.store.transfer import import_jsonl

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


def run_baseline(folder: Path, as_json: bool, misses: bool) -> int:
    from ee.eval.sessions import evaluate, table

    result = evaluate(folder, baseline_importer)
    result["system"] = "baseline: one memory per exchange (ee import jsonl)"
    print(json.dumps(result, indent=1) if as_json else table(result, misses=misses))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sessions_bench", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    base = sub.add_parser("baseline", help="one memory per exchange, judged like ee eval sessions")
    base.add_argument("folder", nargs="?", type=Path, default=DEV_SET)
    base.add_argument("--json", action="store_true")
    base.add_argument("--misses", action="store_true")
    args = parser.parse_args(argv)
    return run_baseline(args.folder, args.json, args.misses)


if __name__ == "__main__":
    sys.exit(main())
