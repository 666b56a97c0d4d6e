"""The one way ee starts work in the background: a detached Python process of this ee.

Used by the command that starts the per-user server (:func:`ee.serve.client.autostart`) and by the git
hooks' refresh job (:func:`ee.hooks.refresh.start`). The child gets its own session and process group (a
terminal's Ctrl-C or a hook's end does not reach it), ``/dev/null`` as standard input, and a log file as
standard output and error; it inherits no descriptor but ``pass_fds`` (a lock it holds for its life), and
none of git's variables that belong to the one git command that ran a hook (a hook's temporary index
file, its prefix): the child outlives that command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

MAX_LOG = 2**20  # a log past this size is started again by the next child
# Git's variables for one command (a hook's index file, its repository and prefix).
ONE_COMMAND_GIT_ENV = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_QUARANTINE_PATH",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_EDITOR",
        "GIT_REFLOG_ACTION",
    }
)


def spawn_detached(
    args: Sequence[str],
    log: Path,
    pass_fds: Sequence[int] = (),
    cwd: Path | str | None = None,
    *,
    append: bool = True,
) -> bool:
    """``python ARGS`` detached, logging to ``log`` (appended to, restarted past :data:`MAX_LOG`; or
    replaced when ``append`` is False); whether it started. A log that is not a regular file of this
    user (a link, a FIFO, a device) raises :class:`ee.config.NotRegularFile` before anything starts:
    nothing is written through it, and the caller never waits on it."""
    from ee.config import open_regular

    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = open_regular(log, flags, 0o600)
    try:
        if os.fstat(fd).st_size > MAX_LOG:
            os.ftruncate(fd, 0)
        subprocess.Popen(
            [sys.executable, "-P", *args],  # -P: no module from the folder it runs in (a repository's)
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            pass_fds=tuple(pass_fds),
            start_new_session=True,
            env={k: v for k, v in os.environ.items() if k not in ONE_COMMAND_GIT_ENV},
        )
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
