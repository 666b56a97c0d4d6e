"""Ask the per-user warm server for a library operation, and start that server on demand.

:func:`call` is what a front end calls once it has parsed its arguments (``ee.cli.call``, the git hooks):
it connects to the server of this user (:mod:`ee.serve.protocol`: the runtime folder, the socket and
the peer checked), sends ``{op, workspace, args}`` and returns the operation's result. It returns None —
run it in-process — when there is no server (after starting one in the background, so the next command
is served), when the server answers ``fallback``, or on any trouble with the exchange: a served operation
only reads, so running it again here is always safe. A folder, socket or server of another user is
reported on stderr and ignored: nothing is sent, and no server is started there.

**Why a served search takes more than 40 ms (issue 32's target, kept with its measured reason).** A served
``ee search`` is a fresh Python process that parses its arguments with click, sends the request here, and
renders the answer; the server's part is the smaller one. ``python -m bench.client_floor DIR/store-10000
--runs 20`` (the kept 10k bench store; 2026-12-05, stop 39, 2 cores, load 4.1 → 3.7), medians of fresh
processes, user + system CPU from ``wait4`` / wall:

=============================================================  ========  ========
process                                                        CPU       wall
=============================================================  ========  ========
``python -c pass`` (the interpreter)                           8.6 ms    8.9 ms
``python -c "import click"``                                   35.2 ms   35.9 ms
plus the modules a served search imports (ee's own part)       54.2 ms   55.3 ms
``ee search TASK --json``, served (the whole command)          67.4 ms   85.2 ms
``ee context TASK --max-tokens 4000 --json``, served           73.5 ms   100.8 ms
=============================================================  ========  ========

The server's share, from one process calling :func:`call` in a loop (no interpreter start): 15.2 ms of the
server's CPU and 16.5 ms wall per search (ranking 10k memories, the transformer arm's query encoding, 100
hits with their explanations, JSON both ways: the socket itself is ~1 ms), 25.3 / 26.4 ms per context. So
the floor of a served search here is ~36 ms of interpreter and click before ee runs a line, plus ~15 ms of
server: over 40 ms wall whatever ee imports. What ee adds (~19 ms of imports: the argument table of
:mod:`ee.operations`, the result types, the socket; ~13 ms of work: JSON, ``from_json``, rendering) was cut
where it was not needed (tests/test_startup.py pins what a served read must not import); the rest is the
one parser and the typed results the design asks for, and no trick (``os._exit``, a second parser, a
hand-written dataclass) is used to go lower.

Since stop 40 (session 2; bench/README.md) the answer's result types are imported while the server
computes (``meanwhile``: 4.9 ms of a search's client, 9.2 ms of a context's, at load ~10), so a served
command's wall is the interpreter, click and ee's modules up to the request, then the longer of the server
and those imports, then the answer's JSON and rendering. A served context no longer imports tomllib, and
its server part fell from 42.2 to 26.2 ms of CPU (the loop above, load ~5, against main 0ef9fe1: a pack's
word cut searched from the end again, the contradiction pairs kept per generation); its client from 84.6
to 81.5 ms of CPU (``python -m bench.alternate``, 40 runs each, load 5.8 → 5.3).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ee.serve import protocol
from ee.serve.protocol import Untrusted

CONNECT_TIMEOUT = 0.25  # seconds: a live server accepts at once
ANSWER_TIMEOUT = 150.0  # seconds: longer than the index lock wait, so the server's answer wins


def call(
    op: str,
    root: Path | str,
    args: dict[str, Any],
    timeout: float = ANSWER_TIMEOUT,
    meanwhile: Callable[[], object] | None = None,
) -> Any:
    """The result of operation ``op`` with ``args`` on the workspace at ``root`` (an absolute path), as
    the warm server answers it; None to run it in-process. ``meanwhile`` runs once the request is sent,
    while the server computes: what the caller needs for any answer (the command line imports the
    answer's result types there, so that time overlaps the server's rather than adding to it)."""
    if protocol.server_disabled():
        return None
    try:
        sock = connect()
    except Untrusted as exc:
        protocol.warn(exc)
        return None
    if sock is None:
        if autostart_configured(root):
            autostart()
        return None
    request = {
        "protocol": protocol.PROTOCOL,
        "ee": protocol.identity(),
        "op": op,
        "workspace": os.fspath(root),
        "args": args,
        "model": os.environ.get("EE_MODEL") or None,
    }
    with sock:
        try:
            data = json.dumps(request, ensure_ascii=False).encode("utf-8")
            sock.settimeout(timeout)
            protocol.send_frame(sock, data)
            if meanwhile is not None:
                meanwhile()
            answer = json.loads(protocol.recv_frame(sock))
        except (OSError, ValueError):  # (a text that is not UTF-8, a server gone: run it here)
            return None
    return answer.get("result") if isinstance(answer, dict) else None


def connect() -> socket.socket | None:
    """A connection to this user's server that passed every check, or None when none listens (no
    folder, no socket, a stale one). Raises :class:`Untrusted` (nothing sent) for a folder, socket or
    server that is not this user's."""
    folder = protocol.checked_dir(create=False)
    if folder is None:
        return None
    path = os.fspath(folder / protocol.SOCKET)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    uid = os.geteuid()
    problem = protocol.socket_problem(info, uid)
    if problem == "is not a socket":
        return None  # a leftover file of ours: no server (a new one replaces it)
    if problem is None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            with protocol.socket_address(path) as address:
                sock.connect(address)
            problem = protocol.peer_problem(protocol.peer_uid(sock), uid)
        except OSError:  # refused (stale: its server was killed) or not accepting
            sock.close()
            return None
        if problem is None:
            return sock
        sock.close()
    raise Untrusted(
        f"{path} {problem}: ignoring it, running here instead",
        f"remove it (rm {path}) and check who can write {os.path.dirname(path)}",
    )


def server_pid() -> int | None:
    """The pid of this user's running server, or None (a leftover pid file without its lock is stale)."""
    try:
        folder = protocol.checked_dir(create=False)
    except Untrusted:
        return None
    if folder is None:
        return None
    return locked_pid(folder / protocol.PID_FILE)


def locked_pid(path: Path) -> int | None:
    """The pid written in ``path`` while its writer holds an ``flock`` on it, else None (-1: held,
    unreadable)."""
    from ee.config import open_regular

    try:
        fd = open_regular(path, os.O_RDONLY)  # (a FIFO must not block; a link is not followed)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: the server is alive
            with contextlib.suppress(OSError, ValueError):
                return int(os.read(fd, 32).decode().strip())
            return -1
        return None
    finally:
        os.close(fd)


def autostart_configured(root: Path | str) -> bool:
    """Whether the workspace at ``root`` lets its commands start the server (``[server] autostart``)."""
    from ee.config import load_config
    from ee.errors import EeError

    try:
        return bool(load_config(Path(root)).get("server.autostart"))
    except EeError:  # a broken config: the command itself reports it
        return False


def autostart() -> bool:
    """Start this user's server in the background unless one runs or is starting, ``EE_NO_SERVER`` is
    set, or the runtime folder is not this user's alone. Never raises: the caller runs in-process either
    way.

    One server per user, however many commands start at once: the starter takes ``serve.lock`` and hands
    it to the server, which holds it (and ``serve.pid``'s lock) while it lives; a command that finds
    either lock held starts nothing. Both are ``flock`` locks, which die with their holder, so a killed
    server (and its stale socket) never stops the next command from starting a new one."""
    if protocol.server_disabled():
        return False
    try:
        folder = protocol.checked_dir(create=True)
    except Untrusted as exc:
        protocol.warn(exc)
        return False
    except OSError:
        return False
    if folder is None:
        return False
    from ee.config import open_regular

    try:
        fd = open_regular(folder / protocol.START_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # started (or being started) by another command
        if locked_pid(folder / protocol.PID_FILE) is not None:
            return False  # one runs already (`ee watch` in the foreground, say)
        from ee.spawn import spawn_detached

        try:
            return spawn_detached(
                ["-m", "ee.serve.server", "--on-demand", str(fd)], folder / protocol.LOG, (fd,)
            )
        except OSError:  # (a log that is a FIFO or a link: no server, and this command goes on)
            return False
    finally:
        os.close(fd)  # the server's copy keeps the lock
