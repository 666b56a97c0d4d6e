"""``ee watch``: keep the index current while files change, and serve queries (and ``ee remember``) warm.

A watchdog observer reports changes below ``memories/`` (memory files, ``.events/*.jsonl``, folders) and
to the git refs (``HEAD``, ``refs/…``, ``packed-refs``: a commit, checkout or pull). Events only mark the
index dirty; after a quiet period (150 ms, at most 2 s after the first event) the watcher calls
:func:`ee.index.view.open_index`, which stats the store and updates incrementally. So editor save patterns
(temp file + rename, ``~`` backups, ``.swp`` and ``4913`` probes), renames and mass changes from git all
end the same way: one update that sees the files as they are. A file broken mid-edit is reported and
skipped by the index; the watcher logs it and goes on. Nothing here is needed for correctness (every
query catches up by itself): the watcher makes the first query after a change fast.

Memory stays bounded: events are coalesced into a capped set of dirty paths, never queued. One watcher
per workspace: ``.ee/watch.pid`` holds its pid under an ``flock``.

A watcher ends on SIGINT / SIGTERM / SIGHUP, and by itself when its workspace disappears (the folder or
its ``.ee/`` deleted or moved). One started on demand by a command (:func:`ee.serve.client.autostart`) ends
too when no client asked it anything for ``[server] idle_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ee.config import open_regular
from ee.errors import ConflictError, EeError, NotRegularFile, StorageError
from ee.store.files import EVENTS, MEMORIES, STATE_DIR

PID_FILE = f"{STATE_DIR}/watch.pid"
QUIET = 0.15  # seconds without events before an update
MAX_WAIT = 2.0  # an update at the latest this long after the first pending event
EMBED_SLICE = 0.2  # seconds of transformer embedding between two looks at the files
EMBED_AFTER_IDLE = 1.0  # ... done only once the server has answered no client for this long
SAFETY = 30.0  # an idle watcher still checks this often (missed events, a re-created memories/)
LIFETIME_CHECK = 5.0  # seconds between two looks at whether the workspace is still there (and used)
MAX_DIRTY = 2048  # paths remembered for the log; beyond that only a count
_GIT_NAMES = frozenset({"HEAD", "packed-refs"})

Log = Callable[[str], None]


def stderr_log(line: str) -> None:
    # The process's own stderr, not sys.stderr: the query server swaps that while it runs a request.
    # A problem it logs quotes file names, which may hold a secret, a newline or an escape sequence; an
    # on-demand server's log is a file (.ee/serve.log): each masked, and escaped to stay one line.
    from ee.policy.secrets import redact
    from ee.render import log_line

    stream = sys.__stderr__ or sys.stderr
    print(time.strftime("%H:%M:%S ") + log_line(redact(line)), file=stream, flush=True)


# ------------------------------------------------------------------------------------------ pid lock


@contextlib.contextmanager
def watch_lock(root: Path) -> Iterator[None]:
    """Hold ``.ee/watch.pid`` (pid inside, ``flock`` on it) or raise ConflictError naming the holder."""
    path = root / PID_FILE
    path.parent.mkdir(exist_ok=True)
    while True:
        try:
            fd = open_regular(path, os.O_RDWR | os.O_CREAT)
        except NotRegularFile as exc:  # a FIFO, a device, a link (never followed), another's: not ours
            try:
                path.unlink()  # (the link itself, never its target)
            except FileNotFoundError:  # (the trouble is not the file but .ee/ itself: never loop on it)
                raise StorageError(
                    f"cannot hold {path}: {exc.filename}: {exc.strerror}",
                    f"make {root / STATE_DIR} a folder of your own, then run ee watch again",
                ) from None
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            pid = watcher_pid(root)
            raise ConflictError(
                f"ee watch is already running for {root}" + (f" (pid {pid})" if pid else ""),
                f"stop it first (kill {pid or '<pid>'}), or just use it: queries are served by it",
            ) from None
        # The previous holder may have unlinked the file between our open and our lock: use the live one.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # while still locked: a new watcher never finds a stale pid
        os.close(fd)


def watcher_pid(root: Path) -> int | None:
    """The pid of the watcher running for ``root``, or None (a leftover file without its lock is stale)."""
    path = root / PID_FILE
    try:
        fd = open_regular(path, os.O_RDONLY)  # (a FIFO there must not block every command; a link: no)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:  # held: a watcher is alive
            with contextlib.suppress(OSError, ValueError):
                return int(os.read(fd, 32).decode().strip())
            return -1
        return None
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------------ events


class Relevance:
    """Which paths matter: memory files, events files and folders below ``memories/``, and git refs."""

    def __init__(self, root: Path, git_dirs: list[Path]) -> None:
        self.memories = os.path.join(os.fspath(root), MEMORIES) + os.sep
        self.events = os.path.join(os.fspath(root), EVENTS) + os.sep
        self.git_dirs = [os.fspath(d) + os.sep for d in git_dirs]

    def __call__(self, path: str, is_directory: bool) -> bool:
        if path.startswith(self.events):
            name = path[len(self.events) :]
            return name.endswith(".jsonl") and "/" not in name and not name.startswith(".")
        if path.startswith(self.memories):
            parts = path[len(self.memories) :].split(os.sep)
            if any(part.startswith(".") for part in parts):  # .swp, .#lock, hidden folders
                return False
            return is_directory or parts[-1].endswith(".md")  # not foo.md~, 4913, foo.md.tmp123
        for git_dir in self.git_dirs:
            if path.startswith(git_dir):
                rest = path[len(git_dir) :]
                return (rest in _GIT_NAMES or rest.startswith("refs" + os.sep)) and not rest.endswith(".lock")
        return False


class Dirty:
    """Pending changes, coalesced: a capped set of paths plus the times of the first and last event."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: set[str] = set()
        self.dropped = 0
        self.first: float | None = None
        self.last = 0.0
        self.wake = threading.Event()

    def add(self, path: str) -> None:
        now = time.monotonic()
        with self.lock:
            if len(self.paths) < MAX_DIRTY:
                self.paths.add(path)
            else:
                self.dropped += 1
            self.first = self.first if self.first is not None else now
            self.last = now
        self.wake.set()

    def due(self, quiet: float, max_wait: float) -> float | None:
        """Seconds until the pending changes should be indexed (<= 0: now), None when nothing is pending."""
        with self.lock:
            if self.first is None:
                return None
            return min(self.last + quiet, self.first + max_wait) - time.monotonic()

    def take(self) -> tuple[list[str], int]:
        with self.lock:
            paths, dropped = sorted(self.paths), self.dropped
            self.paths, self.dropped, self.first = set(), 0, None
        return paths, dropped


def make_handler(relevant: Relevance, dirty: Dirty) -> Any:
    from watchdog.events import FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            for path in (event.src_path, event.dest_path):
                if path and relevant(os.fsdecode(path), event.is_directory):
                    dirty.add(os.fsdecode(path))

    return Handler()


def event_filter() -> list[Any]:
    """The events asked of the kernel: no open / close-without-write (the index reads files itself)."""
    from watchdog import events as ev

    return [
        ev.FileCreatedEvent,
        ev.FileModifiedEvent,
        ev.FileDeletedEvent,
        ev.FileMovedEvent,
        ev.FileClosedEvent,
        ev.FileAttribEvent,
        ev.DirCreatedEvent,
        ev.DirDeletedEvent,
        ev.DirMovedEvent,
    ]


# ------------------------------------------------------------------------------------------ the watcher


class Watcher:
    """Observer + debounced updates: ``start()``, ``run()`` (blocks until ``stop()``), ``close()``."""

    def __init__(
        self,
        ws: Any,
        *,
        log: Log = stderr_log,
        quiet: float = QUIET,
        max_wait: float = MAX_WAIT,
        safety: float = SAFETY,
        exec_lock: Any = None,
    ) -> None:
        self.ws = ws
        self.root: Path = ws.root
        self.log = log
        self.quiet, self.max_wait, self.safety = quiet, max_wait, safety
        self.exec_lock = exec_lock or threading.RLock()  # shared with the query server: one thing at a time
        self.dirty = Dirty()
        self.stopping = threading.Event()
        self.observer: Any = None
        self.updates = 0
        self._failures = 0
        self.view: Any = None  # the last update's view (its transformer vectors are embedded when idle)
        self._embedding = False
        self._embedded = -1
        self.idle: Callable[[], float] | None = None  # seconds since the server last answered a client
        self._retry_at: float | None = None
        self._problems: set[str] = set()
        self._watched: tuple[int, int] | None = None  # (device, inode) of the memories/ folder watched
        self._config: tuple[int, int] | None = self._config_stamp()

    # ---------------------------------------------------------------- observer

    def start(self) -> None:
        """Start observing, then catch up once (changes made before the observer ran are seen too)."""
        from watchdog.observers import Observer

        git_dirs = self._git_dirs()
        self._relevant = Relevance(self.root, git_dirs)
        _on_overflow(lambda: self.dirty.add(os.fspath(self.root / MEMORIES)))
        try:
            self.observer = self._schedule(Observer(), git_dirs)
        except OSError as exc:  # e.g. the inotify watch limit: poll instead (slower, same results)
            from watchdog.observers.polling import PollingObserver

            self.log(
                f"inotify unavailable ({exc}); polling every second instead "
                "(raise fs.inotify.max_user_watches to fix)"
            )
            self.observer = self._schedule(PollingObserver(timeout=1.0), git_dirs)
        self.update()

    def _schedule(self, observer: Any, git_dirs: list[Path]) -> Any:
        handler, kinds = make_handler(self._relevant, self.dirty), event_filter()
        memories = self.root / MEMORIES
        memories.mkdir(exist_ok=True)
        st = memories.stat()
        self._watched = (st.st_dev, st.st_ino)
        observer.schedule(handler, os.fspath(memories), recursive=True, event_filter=kinds)
        for git_dir in git_dirs:
            observer.schedule(handler, os.fspath(git_dir), recursive=False, event_filter=kinds)
            if (git_dir / "refs").is_dir():
                observer.schedule(handler, os.fspath(git_dir / "refs"), recursive=True, event_filter=kinds)
        observer.daemon = True
        observer.start()
        return observer

    def _git_dirs(self) -> list[Path]:
        """The git dir (HEAD) and the common dir (refs, packed-refs; differs in a linked worktree)."""
        git = self.ws.git
        common = git.run("rev-parse", "--git-common-dir", check=False).strip()
        dirs = [git.git_dir]
        if common:
            dirs.append((self.root / common).resolve() if not os.path.isabs(common) else Path(common))
        return list(dict.fromkeys(dirs))

    def _check_observer(self) -> None:
        """Re-arm the observer when memories/ was replaced (deleted and re-created) or its thread died."""
        try:
            st = (self.root / MEMORIES).stat()
            current: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            current = None
        alive = self.observer is not None and self.observer.is_alive()
        if alive and current == self._watched:
            return
        self.log("memories/ was replaced: watching it again")
        self._stop_observer()
        self.observer = self._schedule(type(self.observer)(), self._git_dirs()) if current else None
        self.dirty.add(os.fspath(self.root / MEMORIES))

    def _stop_observer(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)

    # ---------------------------------------------------------------- loop

    def run(self) -> None:
        last_check = time.monotonic()
        while not self.stopping.is_set():
            wait = self.dirty.due(self.quiet, self.max_wait)
            if self._retry_at is not None:
                retry = self._retry_at - time.monotonic()
                wait = retry if wait is None else min(wait, max(retry, 0.0))
            if wait is not None and wait <= 0:
                self._retry_at = None
                self.update()
                continue
            if wait is None and self._embedding:
                quiet = self.idle() if self.idle is not None else EMBED_AFTER_IDLE
                if quiet >= EMBED_AFTER_IDLE:
                    self.embed_idle()  # (a slice of the transformer vectors; then look at the files again)
                    continue
                wait = EMBED_AFTER_IDLE - quiet  # (clients are being answered: look again then)
            timeout = self.safety - (time.monotonic() - last_check)
            self.dirty.wake.wait(max(0.0, timeout if wait is None else min(wait, timeout)))
            self.dirty.wake.clear()
            if time.monotonic() - last_check >= self.safety and not self.stopping.is_set():
                last_check = time.monotonic()
                self._safety_tick()

    def _safety_tick(self) -> None:
        try:
            self._check_observer()
        except OSError as exc:
            self.log(f"cannot watch {self.root / MEMORIES}: {exc}")
        self.update()

    def stop(self) -> None:
        self.stopping.set()
        self.dirty.wake.set()

    def close(self) -> None:
        self._stop_observer()

    # ---------------------------------------------------------------- updates

    def update(self) -> None:
        """Bring the index up to date now; log what changed and new / fixed problems. Never raises."""
        from ee.index.view import open_index

        self.dirty.take()
        started = time.perf_counter()
        try:
            with self.exec_lock:
                view = open_index(self._workspace())
        except EeError as exc:
            self._failed(f"{exc.message}" + (f" (next: {exc.hint})" if exc.hint else ""))
            return
        except Exception as exc:  # a watcher must outlive a bug: log it, retry later
            self._failed(f"internal error, please report it: {exc!r}")
            return
        self._failures = 0
        self.updates += 1
        self.view = view
        self._embedding = bool(view.transformer_key) and view.transformer_vectors is None
        self._embedded = -1
        report = view.report
        if report is not None and report.changed:
            self.log(
                f"indexed {describe(report)} → {view.gen.size} memories "
                f"in {(time.perf_counter() - started) * 1000:.0f} ms"
            )
        self._log_problems(view.degraded)

    def embed_idle(self) -> None:
        """Embed a slice (:data:`EMBED_SLICE` seconds) of the transformer vectors the current view lacks,
        outside the lock queries take: a query never waits for them (the static arm answers until they
        are complete, ee.index.transformer). Never raises."""
        from ee.index.transformer import embed_pending

        view = self.view
        before = self._embedded
        try:
            done, total = embed_pending(view, EMBED_SLICE, lock=self.exec_lock)
        except Exception as exc:  # a model that does not load, a full disk: keep the static arm, say so
            self._embedding = False
            self.log(f"transformer vectors not computed: {exc}")
            return
        self._embedded = done
        if done >= total:
            self._embedding = False
            from ee.index import view as index_view

            if index_view.VOUCHER is not None:  # (it holds a view of the static arm: open a new one)
                index_view.VOUCHER.forget()
            self.log(f"transformer vectors complete: {total} memories (the transformer arm answers)")
        elif done == before:
            self._embedding = False  # (no progress: the generation went away meanwhile; the next update)

    def _failed(self, why: str) -> None:
        self._failures += 1
        delay = min(30.0, 0.5 * 2 ** min(self._failures, 6))
        self._retry_at = time.monotonic() + delay
        self.log(f"index update failed: {why}; retrying in {delay:.0f} s")

    def _log_problems(self, degraded: list[dict[str, Any]]) -> None:
        now = {f"{d['message']} (repair: {d['repair']})" for d in degraded if d["code"] != "index_repaired"}
        for line in sorted(now - self._problems):
            self.log(f"problem: {line}")
        for line in sorted(self._problems - now):
            self.log(f"fixed: {line.split(' (repair: ')[0]}")
        self._problems = now

    def _workspace(self) -> Any:
        """The workspace, re-read when .ee/config.toml changed (a new model path applies at once)."""
        stamp = self._config_stamp()
        if stamp != self._config:
            from ee.workspace import Workspace

            self._config, self.ws = stamp, Workspace(self.root)
        return self.ws

    def _config_stamp(self) -> tuple[int, int] | None:
        try:
            st = (self.root / STATE_DIR / "config.toml").stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)


def _on_overflow(mark: Callable[[], None]) -> None:
    """When the kernel drops events (inotify queue overflow), watchdog only logs it: catch up anyway."""
    import logging

    class Overflow(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "overflow" in record.getMessage():
                mark()

    logging.getLogger("watchdog.observers.inotify").addHandler(Overflow(logging.WARNING))


def describe(report: Any) -> str:
    parts = [
        f"{len(getattr(report, name))} {name}"
        for name in ("new", "modified", "deleted", "moved")
        if getattr(report, name)
    ]
    if report.events_changed:
        parts.append(f"{report.events_changed} events file(s)")
    if report.head_changed:
        parts.append("HEAD moved")
    if report.rebuilt:
        parts.append(f"full build ({report.reason})" if report.reason else "full build")
    return ", ".join(parts) or "no change"


# ------------------------------------------------------------------------------------------ entry point


def run_watch(
    ws: Any, *, serve: bool = True, log: Log = stderr_log, idle_timeout: float | None = None
) -> int:
    """``ee watch``: hold the watch lock, observe, serve (unless ``serve`` is False) until a signal, the
    workspace disappears, or (``idle_timeout``) no client asked anything for that many seconds."""
    with watch_lock(ws.root):
        born = _identity(ws.root)
        watcher = Watcher(ws, log=log)
        previous = _on_signals(watcher.stop)
        server = None
        try:
            watcher.start()
            if serve:
                from ee.serve.server import Server

                server = Server(ws.root, exec_lock=watcher.exec_lock, log=log)
                server.start()
                watcher.idle = server.idle_seconds
            where = f"; serving queries and ee remember on {server.path}" if server else ""
            idle = f"; stops after {idle_timeout:g} s without a client" if idle_timeout else ""
            log(f"watching {ws.root} (pid {os.getpid()}){where}{idle}; stop with Ctrl-C")
            threading.Thread(
                target=_end_of_life,
                args=(ws.root, born, watcher, server, idle_timeout, log),
                name="ee-watch-lifetime",
                daemon=True,
            ).start()
            watcher.run()
        finally:
            if server is not None:
                server.close()
            watcher.close()
            _restore_signals(previous)
    log("stopped")
    return 0


def _end_of_life(
    root: Path,
    born: tuple[int, ...] | None,
    watcher: Watcher,
    server: Any,
    idle_timeout: float | None,
    log: Log,
) -> None:
    """Stop ``watcher`` once its workspace is gone (``born``: its identity when the watcher started), or
    (``idle_timeout``) once ``server`` sat idle that long. (A moved folder is gone too: its commands now
    find no server at the new place and start one.)"""
    period = LIFETIME_CHECK if idle_timeout is None else max(0.1, min(LIFETIME_CHECK, idle_timeout / 4))
    while not watcher.stopping.wait(period):
        now = _identity(root)
        if now is None or now != born:
            log(f"{root} is gone: stopping")
            break
        if idle_timeout is not None and server is not None and server.idle_seconds() >= idle_timeout:
            log(f"no client for {idle_timeout:g} s: stopping")
            break
    watcher.stop()


def _identity(root: Path) -> tuple[int, ...] | None:
    """(device, inode) of the workspace folder and of its ``.ee/``, or None when either is missing."""
    try:
        top, state = os.stat(root), os.stat(root / STATE_DIR)
    except OSError:
        return None
    return (top.st_dev, top.st_ino, state.st_dev, state.st_ino)


def _on_signals(stop: Callable[[], None]) -> dict[int, Any]:
    """SIGINT / SIGTERM / SIGHUP → a clean stop (only the main thread may install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, lambda _signum, _frame: stop())
    return previous


def _restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
