"""The one way ee runs a git command: ``subprocess``, through :func:`run` (to the end) or :func:`start`.

Every git process of ee starts here (the repository layer :mod:`ee.git.repo`, the hooks, team sync, the
merge driver); GitPython serves where ee reads many objects (history, sync), through its own processes.

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
import subprocess
from typing import TYPE_CHECKING

from ee.errors import GitError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from _typeshed import StrPath


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
