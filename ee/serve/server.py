"""The per-user warm server: library operations for every workspace of its user, over one socket.

One process per user (:mod:`ee.serve.protocol` says where it listens and whom it answers). A request names
an operation of :data:`ee.operations.OPERATIONS`, a workspace and the arguments; the server answers with
:func:`ee.operations.run` on its own :class:`~ee.workspace.Workspace` of that folder — the same method the
command runs in-process — and the client renders the result. Nothing process-wide changes per request (no
working directory, umask, environment or time zone is swapped): an operation's arguments are all it reads
from the client, and a client whose ``EE_MODEL`` differs from the server's is told to run it itself.

**Workspaces** open lazily, on their first request: a :class:`~ee.serve.watch.Watcher` keeps the index
current, and the view last opened stays in memory (:class:`ee.index.view.Hold`, one per workspace). Before
each request the watcher's barrier proves whether any memory file changed since; if none did, the answer
comes from that view without a stat of every file (the proof: :mod:`ee.serve.watch`). Whether git tracks
files under ``.ee/`` (which a command checks before opening a workspace) is checked here for the client,
again only when git's index file changed (:meth:`Open.check_untracked`). At most :data:`MAX_WORKSPACES`
are open (the least recently used is closed first), and one without a request for its ``[server]
idle_timeout`` is closed. The model is loaded once for all of them (:func:`ee.index.view._cached_embedder`
keeps one). A folder that is gone, or whose ``.ee/`` is not this user's alone, is never opened.

**Lifetime.** Started on demand (``python -P -m ee.serve.server --on-demand FD``, by
:func:`ee.serve.client.autostart`), it stops once no workspace is open any more; ``ee watch`` runs it in
the foreground until a signal. :meth:`Server.idle_tick` runs every few seconds: it closes idle workspaces
and is the place for background work done while no client waits.

**One thing at a time.** Operations and the watchers' index updates run under one lock: the library's
process-wide caches (the generations, the model) are then never used by two at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ee.serve import protocol
from ee.serve.watch import Log, Watcher, on_signals, restore_signals, stderr_log

MAX_CLIENTS = 32  # connections handled at once; more are told to run in-process
READ_TIMEOUT = 10.0  # seconds a client has to send its whole request (not each byte: no slowloris)
MAX_WORKSPACES = 4  # workspaces open at once (each keeps its generation and a watcher)
TICK = 1.0  # seconds between two idle ticks
FIRST_WAIT = 60.0  # seconds a server started on demand waits for its first workspace


class Open:
    """A workspace the server serves: its watcher (which holds its ``Workspace``, :meth:`Watcher.workspace`)
    and the watcher's thread, its identity, when it was last asked."""

    __slots__ = ("git_index", "identity", "idle_timeout", "thread", "untracked_at", "used", "watcher")

    def __init__(self, watcher: Any, identity: tuple[int, ...], idle_timeout: float) -> None:
        self.watcher, self.identity, self.idle_timeout = watcher, identity, idle_timeout
        self.thread: threading.Thread | None = None
        self.used = time.monotonic()
        self.git_index: Path | None = None  # the repository's index file: what git ls-files reads
        self.untracked_at: tuple[int, ...] | None = None  # its stamp when .ee/ was last found untracked

    def check_untracked(self) -> None:
        """:func:`ee.discovery.check_state_untracked` for this request (the client leaves it to the
        server): run again only when git's index file changed, which is all that check reads."""
        from ee.discovery import check_state_untracked

        try:
            st = os.stat(self.git_index) if self.git_index is not None else None
        except OSError:
            st = None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size) if st is not None else None
        if stamp is None or stamp != self.untracked_at:
            self.untracked_at = None
            check_state_untracked(self.watcher.root)
            self.untracked_at = stamp


class Server:
    """``start()`` (listen), ``run()`` (block until ``stop()``; ticks), ``close()``."""

    def __init__(self, *, log: Log = stderr_log, stay: bool = False, watch: bool = True) -> None:
        self.log = log
        self.stay = stay  # ee watch in the foreground: runs until a signal, not until idle
        self.watch = watch
        self.lock = threading.RLock()  # one operation or index update at a time
        self.open: OrderedDict[str, Open] = OrderedDict()
        self.path = protocol.runtime_dir() / protocol.SOCKET
        self.served = 0
        self.stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._inode: int | None = None
        self._slots = threading.BoundedSemaphore(MAX_CLIENTS)
        self._identity = protocol.identity()
        self._model = os.environ.get("EE_MODEL") or None
        self._born = time.monotonic()
        self._closed_any = False  # a workspace was closed: with none left, the server's work is done

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Listen on the user's socket (replacing a stale one: the caller holds the pid lock)."""
        self._listener, self._inode = _listen(self.path)
        threading.Thread(target=self._accept_loop, name="ee-serve", daemon=True).start()

    def run(self) -> None:
        while not self.stopping.wait(TICK):
            self.idle_tick()

    def stop(self) -> None:
        self.stopping.set()

    def close(self) -> None:
        """Stop listening, remove the socket (only if it is still ours), close every workspace."""
        self.stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self._inode:
                self.path.unlink()
        with self.lock:
            for root in list(self.open):
                self._close(root)

    def idle_tick(self) -> None:
        """Every :data:`TICK` seconds: close the workspaces that are gone or idle past their
        ``[server] idle_timeout``, and stop (unless ``stay``) when none is left open. Background work
        done while no client waits belongs here too."""
        now = time.monotonic()
        with self.lock:
            for root, served in list(self.open.items()):
                if _identity(Path(root)) != served.identity:
                    self.log(f"{root} is gone: closing it")
                    self._close(root)
                elif now - served.used >= served.idle_timeout:
                    self.log(f"{root}: no client for {served.idle_timeout:g} s: closing it")
                    self._close(root)
            waited = self._closed_any or now - self._born >= FIRST_WAIT
            if not self.open and not self.stay and waited:
                self.log("no workspace open: stopping")
                self.stop()

    # ---------------------------------------------------------------- workspaces

    def workspace(self, root: str) -> Open | None:
        """The open workspace at ``root`` (an absolute, resolved path), opened now if need be; None when
        it is not one to serve (gone, not a workspace, its ``.ee/`` not this user's alone)."""
        served = self.open.get(root)
        if served is not None:
            self.open.move_to_end(root)
            served.used = time.monotonic()
            return served
        return self._open(root)

    def _open(self, root: str) -> Open | None:
        from ee.discovery import find_root
        from ee.errors import EeError
        from ee.workspace import Workspace

        path = Path(root)
        identity = _identity(path)
        if identity is None or not _own_state_dir(path):
            return None
        try:
            if find_root(path) != path:
                return None
            ws = Workspace(path)
            idle = float(ws.config.get("server.idle_timeout"))
        except EeError:
            return None
        served = Open(Watcher(ws, log=self.log, exec_lock=self.lock), identity, idle)
        with contextlib.suppress(EeError):  # (no index file known: the check runs for every request)
            from ee.git.repo import Git

            served.git_index = Git(path).git_dir / "index"
        served.watcher.idle = lambda: time.monotonic() - served.used  # (background work waits for quiet)
        if self.watch:
            try:
                served.watcher.start()
            except Exception as exc:  # (no git, a folder gone): the queries catch up by themselves
                self.log(f"{root}: not watching it ({exc!r})")
            else:
                served.thread = threading.Thread(target=served.watcher.run, name="ee-watch", daemon=True)
                served.thread.start()
        self.open[root] = served
        self.log(f"watching {root}")
        while len(self.open) > MAX_WORKSPACES:
            oldest = next(iter(self.open))
            self.log(f"{oldest}: closed to make room ({MAX_WORKSPACES} workspaces at most)")
            self._close(oldest)
        return served

    def _close(self, root: str) -> None:
        from ee.index.generations import forget_warm

        served = self.open.pop(root)
        self._closed_any = True
        served.watcher.stop()
        if served.thread is not None:
            served.thread.join(timeout=10)
        served.watcher.close()
        forget_warm(Path(root))

    # ---------------------------------------------------------------- requests

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                if self.stopping.is_set():
                    return
                continue
            if not self._own_user(conn):
                continue
            if not self._slots.acquire(blocking=False):
                _send(conn, {"fallback": "busy"})
                conn.close()
                continue
            threading.Thread(target=self._connection, args=(conn,), name="ee-serve-conn", daemon=True).start()

    def _own_user(self, conn: socket.socket) -> bool:
        """Is the client at the other end of ``conn`` this server's user? If not, the connection is closed
        unanswered. Checked as soon as it is accepted, before anything is read from it."""
        try:
            uid = protocol.peer_uid(conn)
        except OSError:
            uid = None
        if uid == os.geteuid():
            return True
        self.log(f"refused a client of uid {uid}")
        conn.close()
        return False

    def _connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                request = json.loads(protocol.recv_frame(conn, time.monotonic() + READ_TIMEOUT))
                conn.settimeout(None)
                _send(conn, self.answer(request))
        except (OSError, ValueError, RecursionError) as exc:  # (JSON nested too deeply)
            if not isinstance(exc, ConnectionError | TimeoutError):  # (a client gone: it runs it itself)
                self.log(f"a request failed: {exc!r}")
        finally:
            self._slots.release()

    def answer(self, request: Any) -> dict[str, Any]:
        """``{"result": …}`` of one request, or ``{"fallback": why}``: the client runs it itself."""
        from ee.operations import OPERATIONS, run

        why = self._refusal(request)
        if why is not None:
            return {"fallback": why}
        op, args = request["op"], request["args"]
        if "query" in args and not _valid_query(args["query"]):
            return {"fallback": "query"}  # the client's own run says what is wrong with it
        with self.lock:
            served = self.workspace(request["workspace"])
            if served is None:
                return {"fallback": "workspace"}
            try:
                ws = served.watcher.workspace()  # (its settings as they are now)
                served.idle_timeout = float(ws.config.get("server.idle_timeout"))
                served.check_untracked()
                served.watcher.hold.proven = served.watcher.prove()  # (ee.serve.watch: the proof)
                result = run(ws, OPERATIONS[op].name, args)
            except Exception as exc:  # an ee error (or a bug): the client's own run reports it the same
                self.log(f"{op} in {request['workspace']} answered in-process: {exc!r}")
                return {"fallback": "error"}
            finally:
                served.watcher.hold.proven = False
                served.used = time.monotonic()
            self.served += 1
        return {"result": result}

    def _refusal(self, request: Any) -> str | None:
        """Why ``request`` is not one to answer (the client then runs it itself), or None."""
        from ee.operations import OPERATIONS

        if not isinstance(request, dict) or request.get("protocol") != protocol.PROTOCOL:
            return "protocol"
        if request.get("ee") != self._identity:
            if not self.stay:  # another ee: make way, so its next command starts a server of its own
                self.log(f"a client of another ee ({request.get('ee')!r}): stopping")
                self.stop()
            return "version"
        op, root, args = request.get("op"), request.get("workspace"), request.get("args")
        operation = OPERATIONS.get(op) if isinstance(op, str) else None
        if operation is None or not operation.served:
            return "operation"
        if not (isinstance(args, dict) and set(args) <= set(operation.params)):
            return "arguments"
        if not (isinstance(root, str) and "\0" not in root and os.path.isabs(root)):
            return "workspace"  # (a NUL: no path; realpath would raise)
        if os.path.realpath(root) != root:
            return "workspace"
        if request.get("model") != self._model:
            return "model"
        return None


def _valid_query(doc: Any) -> bool:
    from ee.errors import EeError
    from ee.query.document import validate

    try:
        validate(doc)
    except EeError:
        return False
    return True


def _send(conn: socket.socket, answer: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        protocol.send_frame(conn, json.dumps(answer, ensure_ascii=False).encode("utf-8"))


def _identity(root: Path) -> tuple[int, ...] | None:
    """(device, inode) of the workspace folder and of its ``.ee/``, or None when either is missing."""
    try:
        top, state = os.stat(root), os.stat(root / ".ee")
    except OSError:
        return None
    return (top.st_dev, top.st_ino, state.st_dev, state.st_ino)


def _own_state_dir(root: Path) -> bool:
    """Whether ``ROOT/.ee`` is this user's and not writable by others (else nothing is served there)."""
    import stat

    try:
        info = os.stat(root / ".ee")
    except OSError:
        return False
    writable = info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not writable


def _listen(path: Path) -> tuple[socket.socket, int]:
    """Bind under a temporary name, restrict it to the owner, then rename it into place."""
    tmp = path.with_name(f".serve-{os.getpid()}.sock")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with protocol.socket_address(os.fspath(tmp)) as address:
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


# ------------------------------------------------------------------------------------------ running it


@contextlib.contextmanager
def pid_lock() -> Iterator[Path]:
    """Hold ``serve.pid`` in the user's runtime folder (pid inside, ``flock`` on it), or raise
    ConflictError naming the server that holds it."""
    from ee.config import NotRegularFile, open_regular
    from ee.errors import ConflictError, StorageError
    from ee.serve.client import locked_pid

    try:
        folder = protocol.checked_dir(create=True)
    except protocol.Untrusted as exc:
        raise StorageError(*exc.args) from None
    assert folder is not None
    path = folder / protocol.PID_FILE
    while True:
        try:
            fd = open_regular(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except (NotRegularFile, OSError):  # a FIFO, a device, a link: not ours to write
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = locked_pid(path)
            raise ConflictError(
                "ee's server is already running" + (f" (pid {pid})" if pid else ""),
                f"stop it first (kill {pid or '<pid>'}), or just use it: it serves every workspace of yours",
            ) from None
        try:  # the previous holder may have unlinked the file between our open and our lock
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # while still locked: a new server never finds a stale pid
        os.close(fd)


def serve(*, stay: bool, first: Path | None = None, log: Log = stderr_log) -> int:
    """Hold the pid lock, listen, and serve until a signal (or, unless ``stay``, until no workspace is
    open any more). ``first``: a workspace to open at once (``ee watch`` run in it)."""
    with pid_lock():
        server = Server(log=log, stay=stay)
        previous = on_signals(server.stop)
        try:
            server.start()
            log(f"ee's server (pid {os.getpid()}) listening on {server.path}; stop it with Ctrl-C")
            if first is not None:
                with server.lock:
                    opened = server.workspace(os.fspath(first))
                if opened is None:
                    log(f"{first}: not served (not a workspace, or its .ee/ is not yours alone)")
            server.run()
        finally:
            server.close()
            restore_signals(previous)
    log("stopped")
    return 0


def main(argv: list[str]) -> int:
    """``python -m ee.serve.server --on-demand FD``: the server a command started in the background; FD
    is the start lock it holds for its whole life (see :func:`ee.serve.client.autostart`)."""
    from ee.config import one_blas_thread
    from ee.errors import EeError

    one_blas_thread()
    if len(argv) != 2 or argv[0] != "--on-demand" or not argv[1].isdigit():
        print("usage: python -m ee.serve.server --on-demand FD (ee starts it by itself)", file=sys.stderr)
        return 2
    os.set_inheritable(int(argv[1]), False)
    try:
        return serve(stay=False)
    except EeError as exc:  # another server won the race, or the folder is not ours: nothing to do
        stderr_log(exc.message)
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
