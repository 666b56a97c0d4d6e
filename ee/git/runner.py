"""The one way ee runs a git command: ``subprocess``, through :func:`run` (to the end) or :func:`start`.

Every git process of ee starts here (the repository layer :mod:`ee.git.repo`, the hooks, team sync, the
merge driver).

Two rules live here, so no caller has to remember them:

* a read runs with ``--no-optional-locks``: a ``git status`` never takes ``index.lock`` to refresh stale
  stat data, so a kill of ee's process group cannot leave one behind (required locks are still taken);
* a command that takes a lock of git's own (``holds_lock``: its index, a ref) runs in a session of its
  own and is always waited for, even when ee is interrupted: a kill of ee's process group (a supervisor,
  a terminal's Ctrl-C) would otherwise leave ``index.lock`` or ``HEAD.lock`` behind, blocking every
  later git command until someone deletes it by hand.
"""

from __future__ import annotations

import os
import selectors
import subprocess
from typing import TYPE_CHECKING

from ee.errors import GitError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from _typeshed import StrPath

# What opens each record of a ``git log --format``: NUL then \x1e. No field of git's holds a NUL, but a
# hand commit's message may hold \x1e: cut at \x1e alone, one commit read as two (a history an internal
# error, an agent's edit unseen by the provenance walk).
RECORD = "%x00%x1e"


def records(out: str) -> list[str]:
    """The records of ``git log`` output whose format opens with :data:`RECORD` (the first is '')."""
    return out.split("\x00\x1e")


def _argv(args: Sequence[str], holds_lock: bool) -> list[str]:
    return ["git", *args] if holds_lock else ["git", "--no-optional-locks", *args]


def _env(env: Mapping[str, str] | None) -> dict[str, str] | None:
    return {**os.environ, **env} if env else None


def start(
    args: Sequence[str],
    cwd: StrPath | None,
    *,
    env: Mapping[str, str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
    holds_lock: bool = False,
) -> subprocess.Popen[bytes]:
    """``git ARGS`` started and left running, its output and error on pipes (``env`` adds variables)."""
    try:
        return subprocess.Popen(
            _argv(args, holds_lock),
            cwd=cwd,
            env=_env(env),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=holds_lock,
        )
    except FileNotFoundError:
        raise GitError.not_installed() from None


def read_output(
    proc: subprocess.Popen[bytes], enough: Callable[[bytearray], bool] | None = None
) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of a git :func:`start` ed. ``enough(stdout so far)`` true: stop
    reading; git dies of the closed pipe on its next write (as with ``head``), and the status is 0. Two
    processes started before either is read run side by side (a hook's diff beside its ``git config``)."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    out, err = bytearray(), bytearray()
    stopped = False
    # selectors (epoll here), not select.select: select cannot watch a descriptor above 1023, and a
    # process that has opened many files (the warm server, a test run) gets such numbers.
    with selectors.DefaultSelector() as selector:
        selector.register(out_fd, selectors.EVENT_READ)
        selector.register(err_fd, selectors.EVENT_READ)
        try:
            while selector.get_map() and not stopped:
                for key, _events in selector.select():
                    fd = key.fd
                    data = os.read(fd, 65536)
                    if not data:
                        selector.unregister(fd)
                    elif fd == out_fd:
                        out += data
                        stopped = enough is not None and enough(out)
                    else:
                        err += data
        finally:
            proc.stdout.close()
            proc.stderr.close()
    status = proc.wait()
    return (0 if stopped else status), bytes(out), bytes(err)


def run(
    args: Sequence[str],
    cwd: StrPath | None,
    *,
    input: bytes | None = None,  # noqa: A002 - mirrors subprocess
    env: Mapping[str, str] | None = None,
    holds_lock: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` run to its end in ``cwd``: its exit code, output and error (``check`` is the caller's)."""
    stdin = subprocess.DEVNULL if input is None else subprocess.PIPE
    proc = start(args, cwd, env=env, stdin=stdin, holds_lock=holds_lock)
    try:
        out, err = proc.communicate(input)
    except BaseException:
        if holds_lock:
            _finish(proc)  # git still finishes (milliseconds), so it never leaves its lock behind
        else:
            proc.kill()
            proc.wait()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _finish(proc: subprocess.Popen[bytes]) -> None:
    """Wait for ``proc`` to end, whatever interrupts the wait (a second Ctrl-C)."""
    while True:
        try:
            proc.communicate()
            return
        except KeyboardInterrupt:
            continue
        except (OSError, ValueError):  # its pipes are gone: wait for the process alone
            proc.wait()
            return


def read_objects(specs: Iterable[str], cwd: StrPath | None) -> dict[str, bytes | None]:
    """The content of each object named in ``specs`` (``<commit-ish>:<path>``, ``:<path>`` for git's
    index, a blob id), None where there is none: one ``git cat-file --batch`` for them all.

    That batch reads one name a line, so a name holding a newline (a file may be called so) would be read
    as two other names, and the answers of every later name would shift: such a name is asked for alone,
    as an argument (``git cat-file blob``). A staged memory file named so must not escape the secret check."""
    wanted = list(dict.fromkeys(specs))
    out: dict[str, bytes | None] = {}
    batch = [spec for spec in wanted if "\n" not in spec]
    if batch:
        request = "".join(spec + "\n" for spec in batch).encode("utf-8", "surrogateescape")
        proc = run(["cat-file", "--batch"], cwd, input=request)
        if proc.returncode != 0:
            raise GitError(
                "git cat-file failed: " + proc.stderr.decode("utf-8", "replace").strip(),
                "run `ee doctor --full` to check the repository",
            )
        data, pos = proc.stdout, 0
        for spec in batch:
            end = data.index(b"\n", pos)
            header = data[pos:end].split()
            pos = end + 1
            if len(header) != 3 or header[1] == b"missing":
                out[spec] = None
                continue
            size = int(header[2])
            out[spec] = data[pos : pos + size]
            pos += size + 1
    for spec in wanted:
        if spec not in out:
            alone = run(["cat-file", "blob", spec], cwd)
            out[spec] = alone.stdout if alone.returncode == 0 else None
    return out
