"""Start a git process with ``os.posix_spawn``, for the commands ee runs while it holds a lock of git's.

``subprocess`` costs a fresh process ~4 ms of imports (locale, threading, selectors) before it runs
anything; ``ee remember`` needs just two git processes (``update-index`` and ``update-ref``), both with
a few lines of output. A child started here runs in a session of its own (a kill of ee's process group
never stops it half way, leaving ``index.lock`` or ``HEAD.lock`` behind), in ``cwd`` through ``git -C``
(``posix_spawn`` has no working-folder action before Python 3.13), with SIGPIPE and SIGXFSZ at their
defaults as ``subprocess`` restores them, and no descriptor of ee's but the three it is given (Python
opens every other one non-inheritable).
"""

from __future__ import annotations

import contextlib
import os

try:  # the signal numbers without the signal module's enums (~0.7 ms of a fresh process)
    from _signal import SIGPIPE, SIGXFSZ
except ImportError:  # pragma: no cover - another Python
    from signal import SIGPIPE, SIGXFSZ

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping


class Child:
    """A started process with its standard output and error on pipes: :meth:`communicate` as ``Popen``'s
    (``returncode`` is set once it has ended)."""

    def __init__(self, pid: int, stdin: int | None, stdout: int, stderr: int, data: bytes | None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._stdin, self._stdout, self._stderr = stdin, stdout, stderr
        self._data = data or b""

    def communicate(self) -> tuple[bytes, bytes]:
        """Feed the input, read both outputs to their end, wait for the process. Interrupted (Ctrl-C), it
        still waits for the process to end (milliseconds), so no lock of git's is left behind. Called
        again once it has ended: nothing more to read (b"", b"")."""
        if self._stdout == -1:
            self._wait()
            return b"", b""
        try:
            return self._communicate()
        except BaseException:
            self._close()
            self._wait()
            raise

    def _communicate(self) -> tuple[bytes, bytes]:
        import select

        out_fd, err_fd = self._stdout, self._stderr
        chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
        poller = select.poll()
        for fd in chunks:
            poller.register(fd, select.POLLIN | select.POLLPRI)
        data, written = memoryview(self._data), 0
        if self._stdin is not None:
            if data:
                poller.register(self._stdin, select.POLLOUT)
            else:
                os.close(self._stdin)
                self._stdin = None
        open_fds = len(chunks) + (self._stdin is not None)
        while open_fds:
            for fd, event in poller.poll():
                if fd == self._stdin:
                    try:  # (non-blocking: a full pipe never stalls the reading of git's output)
                        written += os.write(fd, data[written : written + 65536])
                    except BlockingIOError:
                        pass
                    except BrokenPipeError:
                        written = len(data)  # the process stopped reading: its message follows
                    if written >= len(data):
                        poller.unregister(fd)
                        os.close(fd)
                        self._stdin = None
                        open_fds -= 1
                    continue
                chunk = (
                    os.read(fd, 65536) if event & (select.POLLIN | select.POLLPRI | select.POLLHUP) else b""
                )
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    poller.unregister(fd)
                    open_fds -= 1
        self._close()
        self._wait()
        return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])

    def _close(self) -> None:
        for fd in (self._stdin, self._stdout, self._stderr):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._stdin = None
        self._stdout = self._stderr = -1

    def _wait(self) -> None:
        while self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                self.returncode = -1  # reaped elsewhere: nothing to report
                return
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            self.returncode = os.waitstatus_to_exitcode(status)


def start(
    args: list[str],
    cwd: str,
    *,
    data: bytes | None = None,
    stdin_fd: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Child:
    """Start ``git -C cwd ARGS[1:]`` (``args[0]`` is ``git``) with ``data`` on its standard input (or the
    descriptor ``stdin_fd``, which the caller closes; neither: /dev/null). Raises FileNotFoundError when
    git is not installed."""
    if args[0] != "git":
        raise ValueError("ee.spawn starts git only")
    argv = ["git", "-C", cwd, *args[1:]]
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    in_write: int | None = None
    opened: list[int] = [out_read, out_write, err_read, err_write]
    own_stdin = stdin_fd is None
    try:
        if stdin_fd is None:
            if data is None:
                stdin_fd = os.open(os.devnull, os.O_RDONLY)
            else:
                stdin_fd, in_write = os.pipe()
                opened.append(in_write)
                os.set_blocking(in_write, False)
            opened.append(stdin_fd)
        actions = [
            (os.POSIX_SPAWN_DUP2, stdin_fd, 0),
            (os.POSIX_SPAWN_DUP2, out_write, 1),
            (os.POSIX_SPAWN_DUP2, err_write, 2),
        ]
        pid = os.posix_spawnp(
            "git",
            argv,
            dict(os.environ if env is None else env),
            file_actions=actions,
            setsid=True,
            setsigdef=(SIGPIPE, SIGXFSZ),
        )
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise
    for fd in (out_write, err_write, *([stdin_fd] if own_stdin else [])):
        os.close(fd)
    return Child(pid, in_write, out_read, err_read, data)
