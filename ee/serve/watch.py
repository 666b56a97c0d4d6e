"""Keep the index of one workspace current while files change (the server runs one per open workspace).

A watchdog observer reports changes below ``memories/`` (memory files, ``.events/*.jsonl``, folders) and
to the git refs (``HEAD``, ``refs/…``, ``packed-refs``: a commit, checkout or pull). Events only mark the
index dirty; after a quiet period (150 ms, at most 2 s after the first event) the watcher calls
:func:`ee.index.view.open_index`, which stats the store and updates incrementally. So editor save patterns
(temp file + rename, ``~`` backups, ``.swp`` and ``4913`` probes), renames and mass changes from git all
end the same way: one update that sees the files as they are. A file broken mid-edit is reported and
skipped by the index; the watcher logs it and goes on. Memory stays bounded: events are coalesced into a
capped set of dirty paths, never queued. watchdog shares one inotify instance among all the observers of
a process, so one server watching ten workspaces holds one instance, not ten.

**Why an answer is never stale (the freshness proof, in one place).** Every operation opens the index
through :func:`ee.index.view.open_index`. In a command's own process it stats every memory file, the
events files, HEAD and the model, compares them with the manifest of the generation it holds, and catches
up before answering when anything differs. The server skips the stat of the memory and events files
(~30 ms at 10,000 memories) only when the watcher *proves* that none changed since the view it keeps
(:class:`ee.index.view.Hold`) was opened; HEAD, the model, the size limit and the manifest file are still
read on every request (a few stats), and ``.ee/config.toml`` and ``.ee/config.local.toml`` too
(:meth:`Watcher.workspace`). The proof:

1. *Counting.* Every relevant event below ``memories/`` (a memory file, an events file, a folder, a lost
   event queue) adds one to :attr:`Dirty.count`. A view is kept with the count read *before* the stat pass
   it came from, so a change the pass may have missed was counted after it, and the view is not used.
2. *The barrier.* An event is counted some time after the write (watchdog reads inotify in one thread,
   queues, and dispatches in another). So before each request the server causes an event itself: a no-op
   ``chmod`` of ``memories/`` to its own mode, which gives ``IN_ATTRIB`` on the watched folder, seen as a
   ``DirAttribEvent`` of ``memories/`` itself (a change below it never gives that event: its events name
   the file, and the folder's own are ``DirModifiedEvent``). :meth:`Watcher.prove` waits until the handler
   has seen it. Every event of the recursive watch of ``memories/`` comes through one inotify file
   descriptor, in the kernel's order, into that watch's queue (``InotifyWatchGroup`` in watchdog 7), which
   is first in, first out — an unpaired ``IN_MOVED_FROM`` held back for half a second holds back every
   event behind it (``DelayedQueue``) — then through the observer's one queue to its one dispatching
   thread. So once the probe is seen, every write that finished before the request was sent has been
   counted, and an unchanged count proves that the kept view holds the files as they are.
3. *Otherwise, the stat pass.* No proof, and the full check as in a command's own process, when: the
   probe is not seen within :data:`PROOF_WAIT` (a lost event), ``memories/`` is not the folder being
   watched (replaced: :meth:`Watcher._check_observer` watches it again), the observer is not inotify's
   (polling gives no order), or the ``chmod`` is refused (a folder of another owner).

A probe that came too late for its request still counts as sent, so it never ends a later request's wait.
Left open, each a change inotify does not report as one below ``memories/`` (and so a stat pass would
catch where the proof does not): another process's ``chmod``/``touch`` of ``memories/`` itself whose event
is still queued when a probe is sent (it ends that wait early; nothing ee or git runs does that); a write
to a memory file through a hard link outside ``memories/``; a write made on another machine to a network
file system. Set ``EE_NO_SERVER=1`` for a workspace written in those ways.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ee.config import CONFIG_PATH, LOCAL_CONFIG_PATH
from ee.errors import EeError
from ee.store.files import EVENTS, MEMORIES

QUIET = 0.15  # seconds without events before an update
MAX_WAIT = 2.0  # an update at the latest this long after the first pending event
EMBED_SLICE = 0.2  # seconds of transformer embedding between two looks at the files
EMBED_AFTER_IDLE = 1.0  # ... done only once the server has answered no client of this workspace for this long
SAFETY = 30.0  # an idle watcher still checks this often (missed events, a re-created memories/)
MAX_DIRTY = 2048  # paths remembered for the log; beyond that only a count
PROOF_WAIT = 1.0  # seconds the barrier waits for its probe before the request stats the files instead
_GIT_NAMES = frozenset({"HEAD", "packed-refs"})

Log = Callable[[str], None]


def stderr_log(line: str) -> None:
    """A line of the server's log (stderr: a file for a server started on demand). A problem it logs
    quotes file names, which may hold a secret, a newline or an escape sequence: each masked, and
    escaped to stay one line."""
    from ee.policy.secrets import redact
    from ee.policy.shown import log_line

    print(time.strftime("%H:%M:%S ") + log_line(redact(line)), file=sys.stderr, flush=True)


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
        self.count = 0  # relevant events ever (never reset: the proof compares two readings)
        self.probes = 0  # probe events seen (Watcher.prove)
        self.sent = 0  # probes caused
        self.probed = threading.Condition(self.lock)

    def add(self, path: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.count += 1
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

    def changes(self) -> int:
        with self.lock:
            return self.count

    def probe_seen(self) -> None:
        with self.lock:
            self.probes += 1
            self.probed.notify_all()

    def wait_probe(self, seen: int, sent: int, timeout: float) -> bool:
        """Whether, within ``timeout`` seconds, a probe event came after the ``seen`` first ones and as
        many as ``sent`` arrived in all (a probe that came too late for its own request is not taken for
        a later one's)."""
        with self.lock:
            return self.probed.wait_for(lambda: self.probes > seen and self.probes >= sent, timeout)

    def take(self) -> tuple[list[str], int]:
        with self.lock:
            paths, dropped = sorted(self.paths), self.dropped
            self.paths, self.dropped, self.first = set(), 0, None
        return paths, dropped


def make_handler(relevant: Relevance, dirty: Dirty, memories: str) -> Any:
    """Counts relevant events into ``dirty``; the attribute event of ``memories`` itself is a probe."""
    from watchdog.events import DirAttribEvent, EventsLostEvent, FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: Any) -> None:
            if isinstance(event, DirAttribEvent) and os.fsdecode(event.src_path) == memories:
                dirty.probe_seen()
                return
            if isinstance(event, EventsLostEvent):
                dirty.add(memories)
                return
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
        ev.DirAttribEvent,  # (the barrier's probe)
        ev.EventsLostEvent,
    ]


# ------------------------------------------------------------------------------------------ the watcher


class Watcher:
    """Observer + debounced updates: ``start()``, ``run()`` (blocks until ``stop()``), ``close()``."""

    def __init__(
        self,
        ws: Any,
        *,
        log: Log,
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
        self.idle: Callable[[], float] | None = None  # seconds since the server last answered a client here
        self._retry_at: float | None = None
        self._problems: set[str] = set()
        self._watched: tuple[int, int] | None = None  # (device, inode) of the memories/ folder watched
        self._config = self._config_stamp()
        self._overflow: Any = None
        self._ordered = False  # an inotify observer: its events come in order (the proof needs it)
        self.hold = self._hold(ws)

    # ---------------------------------------------------------------- observer

    def start(self) -> None:
        """Start observing, then catch up once (changes made before the observer ran are seen too)."""
        from watchdog.observers import Observer

        git_dirs = self._git_dirs()
        self._relevant = Relevance(self.root, git_dirs)
        self._overflow = _on_overflow(lambda: self.dirty.add(os.fspath(self.root / MEMORIES)))
        try:
            self.observer = self._schedule(Observer(), git_dirs)
        except OSError as exc:  # e.g. the inotify watch limit: poll instead (slower, same results)
            from watchdog.observers.polling import PollingObserver

            self.log(
                f"inotify unavailable ({exc}); polling every second instead "
                "(raise fs.inotify.max_user_watches, or max_user_instances, to fix)"
            )
            self.observer = self._schedule(PollingObserver(timeout=1.0), git_dirs)
        self.update()

    def _hold(self, ws: Any) -> Any:
        """The view this watcher's server keeps for ``ws`` (:class:`ee.index.view.Hold`), set on it."""
        from ee.index.view import Hold

        ws.index_hold = Hold(self.dirty.changes)
        return ws.index_hold

    def prove(self) -> bool:
        """The barrier of the freshness proof (the module's docstring): True once every change made below
        ``memories/`` before this call has been counted, False when that cannot be shown."""
        if not self._ordered or self.observer is None or not self.observer.is_alive():
            return False
        memories = self.root / MEMORIES
        try:
            st = memories.stat()
            if (st.st_dev, st.st_ino) != self._watched:
                return False
            with self.dirty.lock:
                seen = self.dirty.probes
            os.chmod(memories, stat.S_IMODE(st.st_mode))
        except OSError:
            return False
        with self.dirty.lock:
            self.dirty.sent += 1
            sent = self.dirty.sent
        if self.dirty.wait_probe(seen, sent, PROOF_WAIT):
            return True
        self.log(f"no probe event from {memories} within {PROOF_WAIT:g} s: checking the files instead")
        return False

    def _schedule(self, observer: Any, git_dirs: list[Path]) -> Any:
        from watchdog.observers.inotify import InotifyObserver

        memories = self.root / MEMORIES
        handler, kinds = make_handler(self._relevant, self.dirty, os.fspath(memories)), event_filter()
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
        self._ordered = isinstance(observer, InotifyObserver)
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
        if self._overflow is not None:
            import logging

            logging.getLogger(_WATCHDOG_LOGGER).removeHandler(self._overflow)
            self._overflow = None

    # ---------------------------------------------------------------- updates

    def update(self) -> None:
        """Bring the index up to date now; log what changed and new / fixed problems. Never raises."""
        from ee.index.view import open_index

        self.dirty.take()
        started = time.perf_counter()
        try:
            with self.exec_lock:
                view = open_index(self.workspace())
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

    def workspace(self) -> Any:
        """The workspace, re-read when .ee/config.toml or .ee/config.local.toml changed (a new model
        path, a new relevance floor: applied at once, to the watcher's updates and to the server's answers
        alike)."""
        stamp = self._config_stamp()
        if stamp != self._config:
            from ee.workspace import Workspace

            self._config, self.ws = stamp, Workspace(self.root)
            self.hold = self._hold(self.ws)  # (the kept view was opened with the old settings)
        return self.ws

    def _config_stamp(self) -> tuple[tuple[int, int] | None, ...]:
        return tuple(_stamp(self.root / name) for name in (CONFIG_PATH, LOCAL_CONFIG_PATH))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


_WATCHDOG_LOGGER = "watchdog.observers.inotify"


def _on_overflow(mark: Callable[[], None]) -> Any:
    """When the kernel drops events (inotify queue overflow), watchdog only logs it: catch up anyway. The
    handler is returned: :meth:`Watcher.close` removes it (the server opens and closes watchers for as
    long as it runs, and a handler left behind would keep its watcher alive)."""
    import logging

    class Overflow(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "overflow" in record.getMessage():
                mark()

    handler = Overflow(logging.WARNING)
    logging.getLogger(_WATCHDOG_LOGGER).addHandler(handler)
    return handler


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


def watch_only(ws: Any, log: Log | None = None) -> int:
    """``ee watch --no-serve``: keep the index of ``ws`` current in the foreground until a signal."""
    log = log or stderr_log
    watcher = Watcher(ws, log=log)
    previous = on_signals(watcher.stop)
    try:
        watcher.start()
        log(f"watching {ws.root} (pid {os.getpid()}); stop with Ctrl-C")
        watcher.run()
    finally:
        watcher.close()
        restore_signals(previous)
    log("stopped")
    return 0


def on_signals(stop: Callable[[], None]) -> dict[int, Any]:
    """SIGINT / SIGTERM / SIGHUP → a clean stop (only the main thread may install handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, lambda _signum, _frame: stop())
    return previous


def restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)
