"""A tool call run exactly as the CLI runs it: ``ee.cli.main(argv)`` in this process, streams captured.

There is no second implementation of any command: the tool's arguments become argv (:mod:`ee.mcp.tools`),
the command prints its ``--json`` envelope into a buffer, and that text is the tool's result. Standard
streams are process-wide, so commands run one at a time under a lock.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ee.errors import EeError
from ee.mcp.mapping import check_arguments, invocation
from ee.mcp.tools import Tool

_RUN_LOCK = threading.Lock()
STDERR_TAIL = 2000  # characters of a failed command's stderr kept in an internal error's details


@dataclass(frozen=True, slots=True)
class Captured:
    code: int
    out: str
    err: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """A tool's answer: the envelope as the CLI printed it (``text``) and parsed (``document``)."""

    ok: bool
    text: str
    document: dict[str, Any]


def call_tool(tool: Tool, arguments: dict[str, Any], workspace: str, agent: str | None = None) -> Outcome:
    """Check the arguments, run the command, and return its envelope (``ok`` False for ee.error.v1)."""
    try:
        check_arguments(tool, arguments)
    except EeError as exc:
        return failure(exc.to_dict())
    if agent and "agent" not in arguments and any(p.name == "agent" for p in tool.params):
        arguments = arguments | {"agent": agent}
    call = invocation(tool, arguments, workspace)
    return outcome_of(run_captured(call.argv, call.stdin))


def run_captured(argv: list[str], stdin: str = "") -> Captured:
    """``ee.cli.main(argv)`` with ``stdin`` as standard input and its output captured (stderr is also
    passed on to ours, where an MCP client keeps the server's log)."""
    from ee.cli import main

    with _RUN_LOCK:
        with _streams(stdin) as (out, err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:  # a bug in a command: report it as an internal error, keep serving
                traceback.print_exc()
                code = 1
        captured = Captured(code, _text(out), _text(err))
    if captured.err:
        sys.stderr.write(captured.err)
        sys.stderr.flush()
    return captured


def outcome_of(captured: Captured) -> Outcome:
    document = _envelope(captured.out)
    if document is None:
        lines = captured.err.strip().splitlines()
        return failure(
            {
                "code": "internal",
                "message": lines[-1] if lines else f"ee exited {captured.code} without a JSON answer",
                "repair": "this is a bug in ee: please report it with the server's stderr",
                "details": {"exit_code": captured.code, "stderr": captured.err[-STDERR_TAIL:]},
            }
        )
    ok = captured.code == 0 and document.get("success") is True
    return Outcome(ok, captured.out.strip(), document)


def failure(error: dict[str, Any]) -> Outcome:
    from ee.render import dumps, error_envelope

    document = error_envelope(error)
    return Outcome(False, dumps(document), document)


def _envelope(text: str) -> dict[str, Any] | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if not isinstance(document, dict) or document.get("schema") not in ("ee.response.v1", "ee.error.v1"):
        return None
    return document


@contextlib.contextmanager
def _streams(stdin: str) -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    """Swap in text streams over byte buffers (as a terminal-less process has), restore them after."""
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    swapped = (
        io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", write_through=True),
    )
    sys.stdin, sys.stdout, sys.stderr = swapped
    try:
        yield out, err
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for stream in swapped:
            stream.flush()
            stream.detach()  # a collected wrapper would close the buffer we still read


def _text(buffer: io.BytesIO) -> str:
    return buffer.getvalue().decode("utf-8", "replace")
