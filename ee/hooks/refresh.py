"""After git moved (commit, amend, rebase, checkout, merge): the index, the hook table and the branch's
context file catch up — off git's path.

post-commit, post-rewrite, post-checkout and post-merge start a detached job and return at once: nothing
waits for this work (every query catches the index up by itself; the job makes the next one fast and keeps
the hook table and ``.ee/context.md`` current). The job

* runs under ``.ee/hooks/refresh.lock``: jobs run one at a time, in order, and a later one finds the index
  fresh and costs little;
* works on the repository as it is when it runs (HEAD, branch), so a job that waited behind a later
  checkout writes that later branch's context, never an older one;
* stops after :data:`TIME_LIMIT` seconds whatever happens; its output goes to ``.ee/hooks/refresh.log``;
* writes its token to ``.ee/hooks/refresh.done`` when it ends (the tests and the benchmark wait on it).

``.ee/context.md`` is the pack (``--profile balanced --max-tokens 2000``) for the branch's task: its name in
words and the subjects of its own commits (:func:`ee.hooks.gitinfo.branch_task`), built by ``ee watch``'s
server when it runs, else in the job.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ee.hooks import gitinfo, warm
from ee.ops import risks

if TYPE_CHECKING:
    from pathlib import Path

    from _typeshed import StrPath

LOCK = ".ee/hooks/refresh.lock"
LOG = ".ee/hooks/refresh.log"
DONE = ".ee/hooks/refresh.done"
CONTEXT_FILE = ".ee/context.md"
CONTEXT_PROFILE = "balanced"
CONTEXT_TOKENS = 2000
TIME_LIMIT = 120
_JOB = "import sys; from ee.hooks.refresh import job; sys.exit(job(sys.argv[1:]))"


def start(name: str, top: StrPath, root: StrPath, write_context: bool) -> int:
    """Start the job for hook ``name`` detached (:func:`ee.spawn.spawn_detached`) and return 0 at once:
    it runs in the work tree's top, with /dev/null as stdin and the log as stdout and stderr."""
    import time
    from pathlib import Path

    from ee.spawn import spawn_detached

    log_path = Path(root, LOG)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    argv = ["-c", _JOB, name, "1" if write_context else "0", str(time.time_ns())]
    spawn_detached(argv, log_path, cwd=os.fspath(top), append=False)
    return 0


def job(argv: list[str]) -> int:
    """The detached job: ``NAME WRITE_CONTEXT TOKEN`` (see the module's docstring)."""
    import signal
    from pathlib import Path

    name, write_context, token = argv[0], argv[1] == "1", argv[2]
    signal.alarm(TIME_LIMIT)
    top = Path.cwd()
    found = gitinfo.workspace_root(top)
    if found is None:
        return 0
    root = Path(found)
    lock = None
    try:
        lock = _lock(root / LOCK)
        refresh(name, top, root, write_context)
    except Exception as exc:  # one line in the log, escaped (a message may quote a hostile file name)
        from ee.hooks.run import describe
        from ee.policy.shown import log_line

        print(log_line(f"ee: refresh after {name} failed: {describe(exc)}"), file=sys.stderr, flush=True)
        return 1
    finally:
        if lock is not None:
            os.close(lock)
        _write(root / DONE, token + "\n")
    return 0


def refresh(name: str, top: Path, root: Path, write_context: bool) -> None:
    """Catch the index up, rebuild the hook table if it moved, and write the branch's context if asked."""
    alive = warm.server_alive()
    digest = risks.memory_digest(root)  # one stat pass, taken before anything opens the index
    if not (alive and caught_up_by_server(root, digest)):
        risks.refresh_table(root, index_at(root), digest)
    if write_context:
        write_branch_context(name, top, root, alive)


def index_at(root: StrPath) -> Any:
    """The index of the workspace at ``root``, opened (caught up with HEAD and the files) by a
    ``Workspace`` of its own: what a hook without the user's server checks its table against."""
    from pathlib import Path

    from ee.index.view import open_index
    from ee.workspace import Workspace

    return open_index(Workspace(Path(root)))


# A query that makes the server open the index (catching it up with HEAD and the files) and answers fast.
_CATCH_UP = {"version": "ee.query.v1", "query": {"text": "ee", "mode": "lexical"}, "speed": "instant"}


def caught_up_by_server(root: Path, digest: str) -> bool:
    """With the user's server: it catches the index up (any query opens it), and the hook table, when
    the memory files are those it was built from, is relabelled with the new generation — without
    opening the index here (numpy and the whole index: ~0.5 s of CPU after every commit, beside a
    watcher that does the same). False when the table must be rebuilt or the server did not answer.

    ``digest`` (:func:`ee.ops.risks.memory_digest`) is taken before the server opens the index, and
    the files are stat'ed again once the new generation is read: the table is that generation's only if
    they were its own throughout (a memory written meanwhile is in the generation, not in the table)."""
    table = risks.load_table(root)
    if table is None or table["digest"] != digest:
        return False
    if warm.call(root, "search", {"query": _CATCH_UP | {"budget": {"maxResults": 1}}}) is None:
        return False
    generation = risks.manifest_generation(root)
    if generation is None or risks.memory_digest(root) != digest:
        return False
    if generation != table["generation"]:
        risks.save_table(root, risks.relabelled(table, generation))
    return True


def write_branch_context(name: str, top: Path, root: Path, alive: bool) -> None:
    """``.ee/context.md``: the pack for the branch's task (its name and its own commits' subjects)."""
    task = gitinfo.branch_task(top)
    if not task:
        return
    from ee.query.document import from_arguments
    from ee.render.results import render

    query = from_arguments(task, max_tokens=CONTEXT_TOKENS, profile=CONTEXT_PROFILE)
    served = warm.call(root, "context", {"query": query.doc}) if alive else None
    if served is not None:
        from ee.operations import answer

        pack = answer("context", served)
    else:
        from ee.workspace import Workspace

        pack = Workspace(root).context(query)
    text = render(pack, "markdown")
    from ee.pack.pieces import inert

    task_line = inert(" ".join(task.split()))  # a subject's "-->" must not close the comment
    header = (
        f"<!-- ee: context for branch {inert(gitinfo.branch_name(top))}, written after {name}. Task: "
        f"{task_line}. Again: ee context --for-branch --format markdown -->\n\n"
    )
    _write(root / CONTEXT_FILE, header + text)


def done_token(root: StrPath) -> str:
    """The token of the last job that ended ('' when none has)."""
    from ee.config import open_regular

    try:
        with open(open_regular(os.path.join(root, DONE), os.O_RDONLY), encoding="utf-8") as file:
            return file.read().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _lock(path: Path) -> int:
    """The descriptor of ``path``, exclusively locked (closing it unlocks)."""
    import fcntl

    from ee.config import open_regular

    fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write(path: Path, text: str) -> None:
    from ee.store.files import atomic_write

    atomic_write(path, text.encode("utf-8"))
