"""Claude Code's ``SessionEnd`` and ``PreCompact`` hooks: import the session's transcript, in the background.

The hook runs ``ee import session --from-hook``, which reads the hook's JSON on stdin (``transcript_path``,
``cwd``, ``hook_event_name``, ``session_id``), checks it, starts a detached job and returns at once: the
agent never waits for the import (``bench/`` measures the hook's own time). It imports only

* a ``.jsonl`` file inside Claude Code's own transcript folder (``~/.claude/projects/``, links not
  followed out of it), and
* when the hook's ``cwd`` and the ``cwd`` the transcript itself records are this workspace (or a folder
  inside it), and ``[sessions] import`` is on.

Anything else is skipped with a line on stderr, exit 0: a hook never gets in the harness's way. The job's
output goes to ``.ee/sessions/hook.log``; it writes its token to ``.ee/sessions/hook.done`` when it ends.

Codex CLI has no session-end hook; what it offers is ``notify`` in ``~/.codex/config.toml``: a program it
runs after each agent turn, with a JSON argument (``{"type": "agent-turn-complete", "thread-id", "cwd",
…}``). ``ee hooks agent codex --write`` sets it to ``ee import session --from-codex-notify``, which the same
way imports, in the background, the rollout of that thread (``~/.codex/sessions/YYYY/MM/DD/
rollout-*-<thread-id>.jsonl``, links not followed) when the turn's ``cwd`` is an ee workspace with
``[sessions] import`` on and the rollout's own ``cwd`` is in it. The setting is global (one program for
every Codex session), so the payload's ``cwd`` says which workspace, if any, the turn belongs to.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.results.sessions import SessionImport

LOG = ".ee/sessions/hook.log"
DONE = ".ee/sessions/hook.done"
TIME_LIMIT = 600
_JOB = "import sys; from ee.hooks.sessions import job; sys.exit(job(sys.argv[1:]))"


def _skip(why: str) -> int:
    _log(f"session not imported ({why})")
    return 0


def projects_folder() -> Path:
    return Path(os.path.expanduser("~")) / ".claude" / "projects"


def checked_transcript(raw: Any) -> Path | None:
    """The transcript path when it is a regular ``.jsonl`` file inside Claude Code's projects folder."""
    if not isinstance(raw, str) or not raw.endswith(".jsonl"):
        return None
    folder = projects_folder().resolve()
    path = Path(raw)
    real = path.resolve()
    if not real.is_relative_to(folder) or path.is_symlink() or not real.is_file():
        return None
    return real


def codex_sessions_folder() -> Path:
    return Path(os.path.expanduser("~")) / ".codex" / "sessions"


def importing_root(where: str) -> tuple[Path | None, str]:
    """The root of the workspace at ``where`` when it imports sessions, else (None, why not)."""
    from ee.errors import EeError
    from ee.workspace import Workspace

    try:
        ws = Workspace.discover(where)
        if not ws.config.get("sessions.import"):
            return None, "[sessions] import = false"
    except EeError as exc:
        return None, exc.message
    return ws.root.resolve(), ""


def from_codex_notify(workspace: str | None, argument: str) -> int:
    """Check a Codex ``notify`` payload and start the import of its thread's rollout; always 0."""
    import re

    from ee.sessions.ops import in_workspace, transcript_cwd

    try:
        data = json.loads(argument)
    except ValueError:
        return _skip("the notify argument is not JSON")
    if not isinstance(data, dict) or data.get("type") != "agent-turn-complete":
        return _skip("not an agent-turn-complete notification")
    thread, cwd = data.get("thread-id"), data.get("cwd")
    if not isinstance(thread, str) or not re.fullmatch(r"[0-9A-Za-z-]{8,64}", thread):
        return _skip("the notification names no thread-id")
    if not isinstance(cwd, str) or not cwd:
        return _skip("the notification names no cwd")
    root, why = importing_root(workspace or cwd)
    if root is None:
        return _skip(why)
    folder = codex_sessions_folder().resolve()
    for path in sorted(folder.glob(f"*/*/*/rollout-*{thread}.jsonl"), reverse=True):
        real = path.resolve()
        if path.is_symlink() or not real.is_relative_to(folder) or not real.is_file():
            continue
        where = transcript_cwd(real, "codex")
        if not in_workspace(where, root):
            return _skip(f"the rollout's cwd {where!r} is not this workspace")
        return start(root, real, "codex")
    return _skip(f"no rollout of thread {thread} in ~/.codex/sessions/")


def from_hook(workspace: str | None, text: str) -> int:
    """Check the hook's input and start the import job; always 0."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return _skip("the hook's input is not JSON")
    if not isinstance(data, dict):
        return _skip("the hook's input is not a JSON object")
    transcript = checked_transcript(data.get("transcript_path"))
    if transcript is None:
        return _skip("transcript_path is not a transcript in ~/.claude/projects/")
    given = data.get("cwd")
    cwd = given if isinstance(given, str) else os.getcwd()
    root, why = importing_root(workspace or cwd)
    if root is None:
        return _skip(why)
    from ee.sessions.ops import in_workspace, transcript_cwd

    if not in_workspace(cwd, root):
        return _skip(f"the session's cwd {cwd!r} is not this workspace")
    recorded = transcript_cwd(transcript, "claude-code")  # the file's own claim must agree: another
    if not in_workspace(recorded, root):  # project's transcript stays out
        return _skip(f"the transcript's cwd {recorded!r} is not this workspace")
    return start(root, transcript)


def start(root: Path, transcript: Path, fmt: str = "claude-code") -> int:
    """Start the job detached (:func:`ee.spawn.spawn_detached`: its own session, no terminal, git's
    one-command variables left out) and return 0 at once."""
    import time

    from ee.sessions.store import connect
    from ee.spawn import spawn_detached

    with connect(root, create=True):  # (the folder, created and checked here: the log goes there)
        pass
    spawn_detached(["-c", _JOB, str(root), str(transcript), str(time.time_ns()), fmt], root / LOG, cwd=root)
    return 0


def propose_candidates(ws: Any, report: SessionImport) -> dict[str, Any]:
    """The candidates of the sessions an import added to, proposed to the review queue (``ee curate``):
    ``{"found": N, "proposed": [ids pending now]}``. Nothing becomes a memory until a person accepts it."""
    from ee.sessions.ops import session_candidates

    candidates = session_candidates(ws, report)
    out: dict[str, Any] = {"found": len(candidates), "proposed": []}
    if not candidates:
        return out
    try:
        from ee.curate.queue import propose
    except ImportError:  # a build without the review queue: the evidence is kept, nothing is proposed
        return out
    out["proposed"] = [c.id for c in propose(ws, candidates)]
    return out


def _log(text: str) -> None:
    """One line of ``.ee/sessions/hook.log``: a transcript's name is untrusted (a secret, a newline that
    would forge a line, an escape a terminal would obey), so masked and escaped like every log line."""
    from ee.policy.secrets import mask_text
    from ee.policy.shown import log_line

    print(f"ee: {log_line(mask_text(text))}", file=sys.stderr, flush=True)


def job(argv: list[str]) -> int:
    """The detached job: ``ROOT TRANSCRIPT TOKEN [FORMAT]``."""
    import signal

    from ee.errors import EeError
    from ee.workspace import Workspace

    root, transcript, token = Path(argv[0]), Path(argv[1]), argv[2]
    fmt = argv[3] if len(argv) > 3 else "claude-code"
    signal.alarm(TIME_LIMIT)
    try:
        ws = Workspace(root)
        report = ws.import_sessions([transcript], fmt)
        propose_candidates(ws, report)
        for error in report.errors:
            _log(f"{error['path']}: {error['message']}")
        for note in report.degraded:  # (a retention a tracked config sets: not applied, said)
            _log(f"{note['message']} (repair: {note['repair']})")
        _log(f"{transcript.name}: {report.added} new piece(s) of evidence")
    except EeError as exc:
        _log(f"{transcript.name}: {exc.message}")
    finally:
        from ee.config import open_regular

        tmp = root / f"{DONE}.{os.getpid()}.tmp"
        with open(open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
            file.write(token + "\n")
        os.replace(tmp, root / DONE)
    return 0
