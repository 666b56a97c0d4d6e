"""The warm server of ``ee watch``: read-only commands and ``ee remember`` run in-process over a Unix socket.

``.ee/serve.sock`` (mode 0600, and each client's uid is checked: only the server's own user is served;
never TCP). A request is ``{argv, cwd, env, stdin, tty}`` (and ``umask`` for a write); the answer is the
exit code, stdout and stderr of ``ee.cli.main(argv)`` run here with the client's working directory and
the part of its environment :func:`ee.serve.client.is_passed` names, so the bytes are those an in-process run
prints. The process keeps its imports, the loaded embedding model and the last index view warm, which is
the point; while :mod:`ee.serve.sentinel` proves the store unchanged, a query does not even stat it. Commands
run one at a time (they swap process-wide state: standard streams, environment, working directory,
umask) under the lock the watcher's updates take too.

Served: the read-only commands of :data:`ee.serve.client.READ_ONLY`, and the writes of
:data:`ee.serve.client.WRITES`. A write runs with the client's git identity, dates, configuration and
repository places, ``HOME``, ``PATH``, ``TZ`` and ``EE_*`` in place of ours, and its umask, under the
workspace write lock as in-process, so its commit and files are the ones the client would have made. The
client runs the rest.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ee.serve.client import (
    PROTOCOL,
    SOCKET,
    is_passed,
    is_read_only,
    is_served_write,
    parse_argv,
    peer_uid,
    recv_frame,
    send_frame,
    socket_address,
)

MAX_CLIENTS = 32  # connections handled at once; more are told to run in-process
READ_TIMEOUT = 10.0  # seconds a client has to send its whole request (not each byte: no slowloris)


class Server:
    def __init__(self, root: Path, *, exec_lock: Any = None, log: Any = None) -> None:
        self.root = root
        self.path = root / SOCKET
        self.exec_lock = exec_lock or threading.RLock()
        self.log = log or (lambda line: None)
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self._closing = threading.Event()
        self.served = 0
        self._last_request = time.monotonic()
        self._active = 0  # clients being served now
        self._activity = threading.Lock()
        self.voucher: Any = None
        self._settled: int | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self, warm: bool = True) -> None:
        """Listen on ``.ee/serve.sock`` (replacing a stale one: the caller holds the watch lock)."""
        self._listener, self._inode = _listen(self.path)
        self._vouch()
        threading.Thread(target=self._accept_loop, name="ee-serve", daemon=True).start()
        if warm:
            threading.Thread(target=self._warm_up, name="ee-serve-warm", daemon=True).start()

    def _vouch(self) -> None:
        """Let ``open_index`` answer from the view it holds while the sentinel proves it exact."""
        import ee.index.view
        from ee.serve.sentinel import Voucher

        if ee.index.view.VOUCHER is None:
            self.voucher = ee.index.view.VOUCHER = Voucher(self.root)

    def close(self) -> None:
        """Stop listening and remove the socket (only if it is still ours)."""
        self._closing.set()
        if self.voucher is not None:
            import ee.index.view

            if ee.index.view.VOUCHER is self.voucher:
                ee.index.view.VOUCHER = None
            self.voucher.close()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self._inode:
                self.path.unlink()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._closing.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                if self._closing.is_set():
                    return
                continue
            if not self._own_user(conn):
                continue
            if not self._slots.acquire(blocking=False):
                _answer_fallback(conn)
                continue
            threading.Thread(target=self._connection, args=(conn,), name="ee-serve-conn", daemon=True).start()

    def _own_user(self, conn: socket.socket) -> bool:
        """Is the client at the other end of ``conn`` this server's user? If not, the connection is closed
        unanswered (not even told to run in-process): the socket's mode says so too, this is the second
        lock. Checked as soon as it is accepted, before anything is sent to it."""
        try:
            uid = peer_uid(conn)
        except OSError:
            uid = None
        if uid == os.geteuid():
            return True
        self.log(f"serve: refused a client of uid {uid}")
        conn.close()
        return False

    def idle_seconds(self) -> float:
        """Seconds since a client was last answered; 0 while one is being served."""
        with self._activity:
            return 0.0 if self._active else time.monotonic() - self._last_request

    def _connection(self, conn: socket.socket) -> None:
        with self._activity:
            self._active += 1
        try:
            with conn:
                request = json.loads(recv_frame(conn, time.monotonic() + READ_TIMEOUT))
                conn.settimeout(None)
                answer = self.answer(request)
                if answer is None:
                    _answer_fallback(conn)
                    return
                code, out, err = answer
                send_frame(conn, json.dumps({"code": code}).encode())
                send_frame(conn, out)
                send_frame(conn, err)
            self.settle()
        except (OSError, ValueError, struct.error, RecursionError) as exc:  # (JSON nested too deeply)
            if not isinstance(exc, ConnectionError | TimeoutError):  # (a client gone: it runs it itself)
                self.log(f"serve: a request failed: {exc!r}")
        finally:
            with self._activity:
                self._active -= 1
                self._last_request = time.monotonic()
            self._slots.release()

    # ---------------------------------------------------------------- requests

    def answer(self, request: Any) -> tuple[int, bytes, bytes] | None:
        """Run one request; None when the client should run it itself (not ours to serve)."""
        if not _acceptable(request):
            return None
        argv = list(request["argv"])
        _workspace, command = parse_argv(argv)
        write = is_served_write(command)
        if not (write or is_read_only(command)) or not os.path.isdir(request["cwd"]):
            return None
        umask = request.get("umask")
        if write and not (isinstance(umask, int) and 0 <= umask <= 0o777):
            return None  # an older client: it would not send what a write depends on
        tty = bool((request.get("tty") or {}).get("stdout"))
        client_env = request.get("env") or {}
        env = _environment(client_env, write=write)
        stdin = request.get("stdin")
        from ee.index.segment import no_gc

        with self.exec_lock, no_gc():  # no cyclic collection in the middle of a request (see settle)
            result = run_in_process(
                argv, str(request["cwd"]), env, stdin, tty, umask=umask if write else None
            )
        self.served += 1
        return result

    def settle(self) -> None:
        """After an answer was sent: when a new index view was opened since the last time, collect once
        and freeze what survives. The process holds ~10^5 long-lived objects (records, state, the
        model) that every full collection would otherwise walk again, in the middle of some request;
        frozen, they are still freed by reference counting when a newer view replaces them."""
        opened = getattr(self.voucher, "opened", None)
        if opened is None or opened == self._settled:
            return
        with self.exec_lock:
            self._settled = opened
            gc.collect()
            gc.freeze()

    def _warm_up(self) -> None:
        """Import the query and pack paths and load the model now, so the first real query is warm too;
        where ee's git hooks are installed, run both warm hooks' checks too, so the first commit finds
        the hook table loaded (a first served pre-commit check cost ~75 ms, later ones ~25; building the
        table of a 10k store keeps the server busy ~1.5 s, which a repository without the hooks skips)."""
        from ee.hooks.warm import change_text

        root = os.fspath(self.root)
        change = change_text(["README.md"], "warm up\n")  # a staged change, as a warm hook sends one
        commands: list[tuple[list[str], str | None]] = [
            (["search", "warm up", "--limit", "1", "--json"], None),
            (["context", "warm up", "--max-tokens", "200", "--json"], None),
        ]
        if _hooks_installed(self.root):
            commands += [
                (["hook-check", "pre-commit"], change),
                (["hook-check", "prepare-commit-msg"], change),
            ]
        for command, stdin in commands:
            try:
                self.answer(
                    {
                        "protocol": PROTOCOL,
                        "version": _version(),
                        "cwd": root,
                        "env": {},
                        "argv": ["--workspace", root, *command],
                        "stdin": stdin,
                    }
                )
            except Exception as exc:  # warming is an optimisation: never let it take the server down
                self.log(f"serve: warm-up failed: {exc!r}")


def _hooks_installed(root: Path) -> bool:
    """Whether git runs ee's pre-commit or prepare-commit-msg hook in the repository of ``root``."""
    from ee.hooks import wiring

    try:
        folder = wiring.hooks_dir(wiring.work_tree_top(root))
    except Exception:  # (a git problem: the warm-up is an optimisation)
        return False
    return wiring.is_ours(folder / "pre-commit") or wiring.is_ours(folder / "prepare-commit-msg")


def run_in_process(
    argv: list[str],
    cwd: str,
    env: dict[str, str | None],
    stdin: str | None,
    tty: bool,
    umask: int | None = None,
) -> tuple[int, bytes, bytes]:
    """``ee.cli.main(argv)`` with captured streams, ``env`` applied and ``cwd`` as working directory
    (and ``umask``, when given, as the file mode mask); ``tty`` says whether the client's stdout is a
    terminal (:data:`ee.cli.SERVED_TERMINAL`: human output by default, indented JSON).

    The caller serialises calls: streams, environment, working directory and umask are process-wide."""
    from click.testing import CliRunner

    from ee.cli import SERVED_TERMINAL, main

    previous = os.getcwd()
    os.chdir(cwd)
    old_mask = os.umask(umask) if umask is not None else None
    other_tz = "TZ" in env and env["TZ"] != os.environ.get("TZ")  # (local time, as the client has it)
    try:
        with CliRunner().isolation(input=stdin, env=env, color=tty) as (out, err, _mixed):
            if other_tz:
                time.tzset()
            served = SERVED_TERMINAL.set(tty)  # what the output looks like: human text, indented JSON
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:
                traceback.print_exc(file=sys.stderr)
                code = 1
            finally:
                SERVED_TERMINAL.reset(served)
                sys.stdout.flush()
                sys.stderr.flush()
            return int(code or 0), out.getvalue(), err.getvalue()
    finally:
        os.chdir(previous)
        if old_mask is not None:
            os.umask(old_mask)
        if other_tz:
            time.tzset()


def _environment(client: dict[str, Any], *, write: bool = False) -> dict[str, str | None]:
    """The variables a request changes: each one :func:`ee.serve.client.is_passed` names (for a write: also
    git's identity, configuration and places, HOME, PATH, TZ) takes the client's value, or is removed
    for the request when the client has none. Any other variable the client sent is ignored."""
    env: dict[str, str | None] = {k: None for k in os.environ if is_passed(k, write)}
    env.update({str(k): str(v) for k, v in client.items() if is_passed(str(k), write)})
    env.pop("EE_NO_SERVER", None)
    return env


def _acceptable(request: Any) -> bool:
    """A request of this protocol and version, of the shape :func:`ee.serve.client._request` sends
    (anything else is answered with a fallback, never with a traceback in the log)."""
    if not (
        isinstance(request, dict)
        and request.get("protocol") == PROTOCOL
        and request.get("version") == _version()
    ):
        return False
    argv, env, tty = request.get("argv"), request.get("env") or {}, request.get("tty") or {}
    umask = request.get("umask")
    return (
        isinstance(argv, list)
        and all(isinstance(a, str) for a in argv)
        and "--help" not in argv
        and "-h" not in argv
        and isinstance(request.get("cwd"), str)
        and isinstance(env, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        and isinstance(tty, dict)
        and isinstance(request.get("stdin"), str | None)
        and (umask is None or (isinstance(umask, int) and not isinstance(umask, bool)))
    )


def _answer_fallback(conn: socket.socket) -> None:
    with contextlib.suppress(OSError), conn:
        send_frame(conn, json.dumps({"fallback": True}).encode())


def _listen(path: Path) -> tuple[socket.socket, int]:
    """Bind under a temporary name, restrict it to the owner, then rename it into place."""
    tmp = path.with_name(f".serve-{os.getpid()}.sock")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_address(os.fspath(tmp)) as address:
            sock.bind(address)
        os.chmod(tmp, 0o600)
        sock.listen(64)
        os.replace(tmp, path)
    except BaseException:
        sock.close()
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return sock, path.stat().st_ino


def _version() -> str:
    from ee import __version__

    return __version__
