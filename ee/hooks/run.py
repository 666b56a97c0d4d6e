"""``ee hook NAME ARGS``: what each git hook does, and the guard that keeps git working whatever happens.

The shell runner (``hooks/ee-hook-run``) calls this with git's arguments, in the work tree's top folder.
Outcomes: exit 0 (done, or skipped with a one-line ``ee: hook skipped (…)`` notice on stderr), or
:data:`BLOCKED` (40), which the runner turns into a failed hook so git stops. Nothing else: an error of
any kind becomes the notice and exit 0, so a broken config or a bug never stops a commit — but for
pre-commit's secret check, which fails closed (:func:`pre_commit_main`): a commit is never let through
unchecked.

Quiet cases (exit 0, no output): outside an ee workspace, and while a rebase, cherry-pick or revert is in
progress (``rebase-merge``, ``rebase-apply``, ``CHERRY_PICK_HEAD``, ``REVERT_HEAD`` in the git folder).

Only a few standard modules and small ee modules are imported up front (not ``typing``, ``pathlib`` or
``subprocess``: a hook's start is most of its time); the index, the query engine and the pack builder are
imported on the paths that use them, and not at all when ``ee watch`` answers.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from typing import TYPE_CHECKING, Any

from ee.hooks import gitinfo, warm
from ee.ops import risks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ee.results.search import SearchResult

BLOCKED = 40
HOOK_NAMES = (
    "post-checkout",
    "post-merge",
    "prepare-commit-msg",
    "commit-msg",
    "pre-commit",
    "post-commit",
    "post-rewrite",
)
MEMORIES = "memories"
MESSAGE_HITS = risks.MESSAGE_HITS
_SKIP_SOURCES = frozenset({"message", "commit", "merge", "squash"})  # no editor, or git's own message


class Hook:
    """One hook run: its name and arguments, the work tree's top, the workspace and its settings."""

    __slots__ = ("args", "name", "prefix", "root", "said", "top", "warm")

    def __init__(self, name: str, args: list[str], top: str, root: str, warm: bool) -> None:
        self.name, self.args, self.top, self.root = name, args, top, root
        self.prefix = gitinfo.relative_prefix(root, top)  # the workspace's folder in the work tree
        self.warm = warm  # the user's server runs: ask it
        self.said: list[str] | None = None  # (in the server: what the hook says, sent back to it)

    @classmethod
    def open(cls, name: str, args: list[str]) -> Hook | None:
        """The hook in the current folder, or None when it has nothing to do here (no workspace, a rebase)."""
        top = os.getcwd()
        root = gitinfo.workspace_root(top)
        if root is None or gitinfo.busy(gitinfo.git_dir(top)):
            return None
        alive = warm.server_alive()
        if not alive:  # this hook runs cold; the next ones find the server warm
            from ee.serve.client import autostart, autostart_configured

            if autostart_configured(root):
                autostart()
        return cls(name, args, top, root, alive)

    def setting(self, key: str) -> Any:
        """A setting of ``.ee/config.toml``, read when first needed (a broken file is reported then, and
        the hook skipped: git goes on)."""
        from pathlib import Path

        from ee.config import load_config

        return load_config(Path(self.root)).get(key)

    @property
    def memories(self) -> str:
        return self.prefix + MEMORIES

    def say(self, line: str) -> None:
        from ee.policy.secrets import redact  # a file name it quotes may hold a secret: masked, as ee prints
        from ee.policy.shown import visible  # and a control character, shown rather than obeyed

        if self.said is not None:
            self.said.append(visible(redact(line)))
        else:
            print(visible(redact(line)), file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ pre-commit


def pre_commit_main(args: list[str]) -> int:
    """pre-commit fails closed: the secret check of the staged memory files runs first, with no time
    limit (the runner sets none for it); if it cannot run (a crash, a workspace ee refuses), the commit is
    blocked, naming the reason and the ``git commit --no-verify`` escape. The rest (the risky memories, a
    warning) then has the rest of ``$EE_HOOK_LIMIT`` seconds ([hooks] timeout), and fails open."""
    import time

    started = time.monotonic()
    try:
        hook = Hook.open("pre-commit", args)
        if hook is None:
            return 0
        paths, added = gitinfo.StagedChange(hook.top, exclude=[hook.memories]).read()
        if not paths:
            return 0
        if refuse_secrets(hook, paths):
            return BLOCKED
    except Exception as exc:
        print(
            "ee: commit blocked: ee's check of the staged memory files for secrets could not run "
            f"({describe(exc)}). Fix it (run: ee doctor), or commit without ee's checks: "
            "git commit --no-verify",
            file=sys.stderr,
        )
        return BLOCKED
    try:
        with _time_limit(started):
            return pre_commit(hook, paths, added)
    except HookTimeout as exc:  # the warnings are advice: the commit goes on
        print(
            f"ee: hook skipped (pre-commit took over {exc.args[0]:g}s; run `ee watch` to keep ee warm, or "
            "raise [hooks] timeout in .ee/config.toml)",
            file=sys.stderr,
        )
        return 0
    except Exception as exc:
        print(f"ee: hook skipped (pre-commit: {describe(exc)})", file=sys.stderr)
        return 0


class HookTimeout(Exception):
    """The rest of pre-commit ran out of ``[hooks] timeout`` (its only argument: that limit)."""


@contextlib.contextmanager
def _time_limit(started: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the block once ``$EE_HOOK_LIMIT`` seconds from ``started`` passed."""
    import signal
    import time

    try:
        limit = float(os.environ.get("EE_HOOK_LIMIT") or "nan")
    except ValueError:
        limit = math.nan
    if not 0 < limit < math.inf:
        yield
        return

    def expire(_signum: int, _frame: Any) -> None:
        raise HookTimeout(limit)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(limit - (time.monotonic() - started), 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def pre_commit(hook: Hook, paths: list[str], added: str) -> int:
    """Warn (or block) on a staged memory file ee cannot read and on risky memories about the change
    (after :func:`pre_commit_main` refused secrets).

    With the user's server running, it checks the change (its ``hook_check`` operation,
    :meth:`ee.workspace.Workspace.hook_check`): it has the tokenizer imported and the hook table loaded,
    which cost this process more than the rest of the hook."""
    if broken_files(hook, paths):
        return BLOCKED
    served = warm.check(hook.root, hook.name, paths, added) if hook.warm else None
    if served is not None:
        for line in served.said:
            hook.say(line)
        return BLOCKED if served.blocked else 0
    return check_change(hook, paths, added)


def check_change(hook: Hook, paths: list[str], added: str) -> int:
    """Warn about the risky memories about a change of ``paths`` adding ``added`` (:func:`ee.ops.risks.
    warnings`, in this process): 0, or :data:`BLOCKED`."""
    blocked, said = risks.warnings(
        hook.root, paths, added, lambda: bool(hook.setting("hooks.block")), lambda: index_at(hook.root)
    )
    for line in said:
        hook.say(line)
    return BLOCKED if blocked else 0


def index_at(root: str) -> Any:
    """The workspace's index, opened afresh (:func:`ee.hooks.refresh.index_at`): when the hook table
    must be rebuilt."""
    from ee.hooks.refresh import index_at

    return index_at(root)


def broken_files(hook: Hook, paths: list[str]) -> bool:
    """Say each staged memory file ee cannot read (broken YAML, git's conflict markers, …) with its
    ``file:line`` and repair, read as the index reads it (:func:`ee.index.derive.derive`), so it never lands
    silently; True (block) when ``[hooks] block = true``."""
    folder = hook.memories + "/"
    wanted = [p for p in paths if p.startswith(folder) and p.endswith(".md") and "/.events/" not in p]
    if not wanted:
        return False
    from ee.index.derive import derive, errors_of

    said = []
    for path, data in sorted(gitinfo.staged_blobs(wanted, hook.top).items()):
        record = derive(data, path).record
        if "error" in record:
            for error in errors_of(record):
                where = f"{path}:{error['line']}" if error.get("line") else path
                said.append(f"{where}: {error['message']} (repair: {error['repair']})")
    if not said:
        return False
    block = bool(hook.setting("hooks.block"))
    for line in said:
        hook.say(f"ee: {'blocked' if block else 'warning'}: {line}")
    if block:
        hook.say(
            "ee: commit blocked ([hooks] block = true in .ee/config.toml): fix the file, then git add it; "
            "commit anyway: git commit --no-verify"
        )
    else:
        hook.say("ee: committed as it is, but ee leaves it out of search until it is fixed")
    return block


def refuse_secrets(hook: Hook, paths: list[str]) -> bool:
    """Print each staged memory or events file holding a secret; True when there is one."""
    folder = hook.memories + "/"
    events = folder + ".events/"
    wanted = [p for p in paths if p.startswith(folder) and p.endswith(".md")]
    wanted += [p for p in paths if p.startswith(events) and p.endswith(".jsonl")]
    if not wanted:
        return False
    from ee.policy.secrets import file_secrets, rename_command

    refused = False
    for path, data in sorted(gitinfo.staged_blobs(wanted, hook.top).items()):
        found = file_secrets(data.decode("utf-8", "replace"), path)
        if not found:
            continue
        refused = True
        classes = ", ".join(sorted({f.cls for f in found}))
        lines = ", ".join(f"{f.line} ({f.field})" for f in found[:5])
        renamed = rename_command(path)  # the name itself holds one: printed masked, so say how to rename it
        hook.say(
            f"ee: refusing to commit {path}: it holds a secret ({classes}; line {lines}). "
            + (
                f"Rename it ({renamed}) and rotate the secret"
                if renamed
                else f"Remove it (or write [REDACTED:{found[0].cls}] in its place), then: git add {path}"
            )
        )
    return refused


# ------------------------------------------------------------------------------------- prepare-commit-msg


def prepare_commit_msg(hook: Hook) -> int:
    """Add ``# ee: <title> (<id>)`` lines for the memories about the staged change to the message file.

    Skipped when git will not strip them: a message given with -m/-F, reused with -c/-C/--amend, a merge
    or squash message, ``commit.cleanup`` other than strip/default, or ``core.commentChar = auto``."""
    if not hook.args or (hook.args[1] if len(hook.args) > 1 else "") in _SKIP_SOURCES:
        return 0
    # Both git processes run side by side, and without ee watch the index opens meanwhile: the search
    # needs it whatever git says (git runs this hook only when something is staged).
    settings = gitinfo.MessageSettings(hook.top)
    change = gitinfo.StagedChange(hook.top, exclude=[hook.memories])
    view = None if hook.warm else open_view(hook)
    cleanup, char = settings.read()
    paths, added = change.read()
    if cleanup not in ("", "default", "strip") or char == "auto" or len(char) > 1 or not paths:
        return 0
    chosen = served_memories(hook, paths, added) if hook.warm else None
    if chosen is None:
        chosen = message_memories(hook, paths, added, view)
    lines = [f"{char or '#'} ee: {_one_line(title)} ({memory_id})" for memory_id, title in chosen]
    if lines:
        add_comment_lines(hook.args[0], lines, char or "#")
    return 0


def message_memories(hook: Hook, paths: list[str], added: str, view: Any = None) -> list[tuple[str, str]]:
    """The memories the commit message names (:func:`ee.ops.risks.message_memories`), in this process.

    Without the server the index is opened anyway (for the search; ``view``, when the caller opened it
    already), and opening it catches it up with the files: so it is opened first, and its generation
    tells whether the hook table is current — no second stat of every memory file. With the server, the
    search is its ``search`` operation."""
    if view is None and not hook.warm:
        view = open_view(hook)
    generation = None if view is None else view.manifest.get("generation")

    def index() -> Any:
        nonlocal view
        if view is None:  # (the server answered no check: its search may still answer, weighed here)
            view = open_view(hook)
        return view

    def search(text: str) -> list[tuple[str, str]]:
        served = (
            warm.call(hook.root, "search", {"query": risks.message_query(text).doc}) if hook.warm else None
        )
        if served is not None:
            from ee.operations import answer

            return risks.named(answer("search", served))
        return risks.named(search_here(hook, text, MESSAGE_HITS, view))

    return risks.message_memories(
        hook.root, paths, added, search, lambda: index_at(hook.root), generation, index
    )


def served_memories(hook: Hook, paths: list[str], added: str) -> list[tuple[str, str]] | None:
    """:func:`message_memories` as the user's server finds them (its ``hook_check``), or None."""
    served = warm.check(hook.root, hook.name, paths, added)
    if served is None:
        return None
    return [(str(memory_id), str(title)) for memory_id, title in served.memories]


def open_view(hook: Hook) -> Any:
    """The workspace's index, caught up with the files (as ``ee.query.search`` opens it)."""
    from pathlib import Path

    from ee.query import open_view
    from ee.workspace import Workspace

    return open_view(Workspace(Path(hook.root)), None)[0]


def search_here(hook: Hook, text: str, limit: int, view: Any = None) -> SearchResult:
    """The search of :func:`message_query` in this process, over ``view`` (else the index opened now):
    ``Workspace.search``, as the server's ``search`` operation answers it, so a warm and a cold hook
    find the same hits."""
    from pathlib import Path

    from ee.workspace import Workspace

    views: dict[str | None, Any] | None = {None: (view, None)} if view is not None else None
    return Workspace(Path(hook.root)).search(risks.message_query(text, limit), None, views)


def add_comment_lines(path: str, lines: list[str], char: str) -> None:
    """Put ``lines`` before git's scissors line (``git commit -v``) or at the end; replace earlier ones."""
    with open(path, encoding="utf-8", errors="surrogateescape") as file:
        text = file.read()
    kept = [line for line in text.splitlines() if not line.startswith(f"{char} ee: ")]
    scissors = next(
        (i for i, line in enumerate(kept) if line.startswith(f"{char} ---") and ">8" in line), len(kept)
    )
    block = ["", *lines] if scissors and kept[scissors - 1].strip() else lines
    kept[scissors:scissors] = block
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as file:
        file.write("\n".join(kept) + "\n")


# ------------------------------------------------------------------------------------------ commit-msg


def commit_msg(hook: Hook) -> int:
    """With ``EE_AGENT`` set, stamp ``Ee-Actor: agent:<name>`` on the commit, replacing an ``Ee-Actor`` the
    message claims: a file an agent wrote with its own file tool and committed with ``git commit`` is the
    agent's (:mod:`ee.index.provenance` reads the trailer), whatever the file or the message say."""
    agent = os.environ.get("EE_AGENT", "")
    if not agent.strip() or not hook.args:
        return 0
    from ee.errors import EeError
    from ee.policy.trust import Actor

    try:
        label = Actor.from_env().label
    except EeError:  # a name ee would refuse (a line break, a secret): still an agent
        label = "agent:unnamed"
    gitinfo.git(
        "interpret-trailers", "--in-place", "--if-exists", "replace",
        "--trailer", f"Ee-Actor: {label}", hook.args[0], cwd=hook.top,
    )  # fmt: skip
    return 0


# ------------------------------------------------------------------------------------------ post-* hooks


def post_checkout(hook: Hook) -> int:
    if len(hook.args) >= 3 and hook.args[2] == "0":  # a file checkout: the branch did not change
        return 0
    from ee.hooks import refresh

    return refresh.start(hook.name, hook.top, hook.root, write_context=True)


def post_merge(hook: Hook) -> int:
    from ee.hooks import refresh

    return refresh.start(hook.name, hook.top, hook.root, write_context=True)


def post_commit(hook: Hook) -> int:
    """post-commit and post-rewrite: the index and the hook table catch up (in the background)."""
    from ee.hooks import refresh

    return refresh.start(hook.name, hook.top, hook.root, write_context=False)


# ------------------------------------------------------------------------------------------ entry


# (pre-commit is run by pre_commit_main, which fails closed)
HOOKS: dict[str, Callable[[Hook], int]] = {
    "prepare-commit-msg": prepare_commit_msg,
    "commit-msg": commit_msg,
    "post-checkout": post_checkout,
    "post-merge": post_merge,
    "post-commit": post_commit,
    "post-rewrite": post_commit,
}


def main_and_exit(argv: list[str]) -> None:
    """:func:`main`, then the process ends with its exit code (what the hook runner calls)."""
    from ee.config import one_blas_thread

    one_blas_thread()
    sys.exit(main(argv))


def main(argv: list[str]) -> int:
    """``ee hook NAME ARGS…``: 0, or :data:`BLOCKED`; every failure becomes a one-line notice and 0."""
    if not argv or argv[0] not in HOOK_NAMES:
        print(
            f"ee: hook skipped (unknown hook {argv[0] if argv else '(none)'!r}; "
            f"ee runs {', '.join(HOOK_NAMES)})",
            file=sys.stderr,
        )
        return 0
    name = argv[0]
    if name == "pre-commit":
        return pre_commit_main(list(argv[1:]))
    try:
        hook = Hook.open(name, list(argv[1:]))
        return 0 if hook is None else HOOKS[name](hook)
    except Exception as exc:
        print(f"ee: hook skipped ({name}: {describe(exc)})", file=sys.stderr)
        return 0


def describe(exc: BaseException) -> str:
    from ee.errors import EeError

    if isinstance(exc, EeError):
        text = exc.message + (f"; repair: {exc.hint}" if exc.hint else "")
    elif isinstance(exc, RuntimeError | OSError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}; this is a bug in ee, please report it"
    return _one_line(text, 400)


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


if __name__ == "__main__":  # pragma: no cover - `python -m ee.hooks.run pre-commit` for debugging
    sys.exit(main(sys.argv[1:]))
