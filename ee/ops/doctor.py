"""``ee doctor``: every check of a workspace, each problem with a repair command; ``--fix`` repairs what a
killed process left (see :mod:`ee.ops.recovery`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.config import CONFIG_PATH, load_config, withheld_problems
from ee.errors import ConfigError, EeError, GitError
from ee.model import Memory, Problem
from ee.ops.init import GITATTRIBUTES_LINES, GITIGNORE_LINES
from ee.store.files import EVENTS, MEMORIES, Store, lock_is_held

if TYPE_CHECKING:
    from ee.workspace import Workspace


def doctor(ws: Workspace, full: bool = False, fix: bool = False) -> dict[str, Any]:
    """Run every check; ``full`` adds ``git fsck``. Returns counts, problems and a verdict.

    ``fix`` first repairs what killed processes left (an interrupted import, temporary files), then checks:
    the problems are those that remain, and ``fixed`` says what was done.
    """
    from ee.ops.recovery import repair
    from ee.policy.secrets import mask_output

    repairs = repair(ws) if fix else None
    if repairs is not None:
        _abort_killed_sync(ws, repairs)
    problems: list[Problem] = _check_install()
    problems += _check_git(ws, full)
    problems += _check_git_operation(ws)
    problems += _check_layout(ws)
    try:
        problems += withheld_problems(load_config(ws.root))
    except ConfigError as exc:
        where = exc.details.get("path", CONFIG_PATH)  # (the file in error: config.toml or config.local.toml)
        what = exc.message.removeprefix(f"{where}: ")  # (the finding's path names it)
        problems.append(Problem("config_invalid", "error", what, where, repair=exc.hint))
    holder = lock_is_held(ws.root)
    if holder:
        problems.append(
            Problem(
                "lock_held",
                "info",
                f"the workspace lock is held by pid {holder} (a write is running)",
                ".ee/lock",
                repair="wait for it; a killed holder releases the lock by itself",
            )
        )
    try:
        store = ws.store
    except ConfigError:  # reported above; read the memories with the default settings
        store = Store(ws.root)
    snap = store.snapshot()
    problems += snap.problems
    problems += _extra_checks(ws, snap)
    problems += _check_leftovers(ws, bool(lock_is_held(ws.root)))
    problems += _check_cache(ws)
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = sum(1 for p in problems if p.severity == "warning")
    out = {
        "root": str(ws.root),
        "memories": len(snap.memories),
        "errors": errors,
        "warnings": warnings,
        "healthy": errors == 0,
        "problems": mask_output([p.to_dict() for p in problems]),  # (they quote file names)
    }
    if repairs is not None:
        out["fixed"] = repairs.to_dict()
    return out


def _check_leftovers(ws: Workspace, writing: bool) -> list[Problem]:
    """An import killed before its commit, and the temporary files killed processes left. While a writer
    holds a lock (``writing``: the workspace lock), what it may be using is not reported: it is no
    leftover yet."""
    from ee.ops.recovery import find_leftovers, index_busy, journal_problem

    out: list[Problem] = []
    interrupted = None if writing else journal_problem(ws.root)
    if interrupted is not None:
        out.append(interrupted)
    git = ws.git if ws.git.is_repo() else None
    found = find_leftovers(ws.root, git)
    busy = {"workspace": writing, "index": any(i.lock == "index" for i in found) and index_busy(ws.root)}
    return out + [item.problem(ws.root) for item in found if not busy[item.lock]]


def _check_cache(ws: Workspace) -> list[Problem]:
    """The derived cache (:mod:`ee.index.cache`): damaged now (an error until ``--fix`` rebuilds it; a
    query would rebuild it too), or found damaged and rebuilt since the last ``doctor --fix``."""
    from ee.index.cache import REBUILT_NOTE, check, rebuilt_note
    from ee.index.freshness import CACHE_PATH

    path = ws.root / CACHE_PATH
    out: list[Problem] = []
    damage = check(path)
    if damage is not None:
        out.append(
            Problem(
                "derived_cache_corrupt",
                "error",
                f"the derived cache is damaged ({damage}); queries rebuild it from the memories",
                CACHE_PATH,
                repair="ee doctor --fix  # rebuilds it (derived data only: no memory is touched)",
            )
        )
    note = rebuilt_note(path)
    if note is not None:
        out.append(
            Problem(
                "derived_cache_rebuilt",
                "info",
                f"the derived cache was found damaged at {note['at']} and rebuilt ({note['reason']})",
                f"{Path(CACHE_PATH).parent.as_posix()}/{REBUILT_NOTE}",
                repair="nothing to do (ee doctor --fix clears this note); if it recurs, check the disk",
            )
        )
    return out


def _check_install() -> list[Problem]:
    """Another distribution's ``ee`` package in this environment (Google Earth Engine's earthengine-api
    installs one): the two overwrite or shadow each other."""
    from ee.install import DISTRIBUTION, TOOL_INSTALL, foreign_ee_packages

    out = []
    for other in foreign_ee_packages():
        name, path = other["distribution"], other["path"]
        if other["imported"]:
            message = (
                f"{name} installed its own `ee` package where ee's is ({path}): "
                "the two overwrite each other's files"
            )
        else:
            message = (
                f"{name} installs another `ee` package ({path}): `import ee` gets whichever comes first "
                "on sys.path, and the other breaks"
            )
        out.append(
            Problem(
                "import_name_clash",
                "error" if other["imported"] else "warning",
                message,
                repair=f"install ee in an environment of its own: {TOOL_INSTALL}; "
                f"then `pip uninstall {DISTRIBUTION}` here",
            )
        )
    return out


def _check_git(ws: Workspace, full: bool) -> list[Problem]:
    if not ws.git.is_repo():
        return [Problem("git_missing", "error", "the workspace is not in a git repository", repair="ee init")]
    out: list[Problem] = []
    if ws.git.head() is None:
        out.append(
            Problem("git_no_commits", "warning", "the repository has no commits yet", repair="ee init")
        )
    driver = ws.git.run("config", "--get", "merge.ee-memory.driver", check=False).strip()
    if not driver:
        out.append(
            Problem(
                "merge_driver_missing",
                "warning",
                "the memory merge driver is not registered in this clone's git config",
                repair="ee init",
            )
        )
    out += _stale_git_lock(ws)
    if full:
        try:
            ws.git.run("fsck", "--no-progress")
        except GitError as exc:
            out.append(
                Problem(
                    "git_fsck", "error", exc.message, repair="git fsck --full  # then restore from a clone"
                )
            )
    return out


def _abort_killed_sync(ws: Workspace, repairs: Any) -> None:
    """``--fix``: abort the rebase or merge a killed ``ee sync`` left (never one a person started), under
    the workspace lock, which a live ``ee sync`` holds."""
    from ee.errors import LockTimeout
    from ee.ops.recovery import LOCK_WAIT
    from ee.ops.sync_session import STARTED, abort_interrupted, interrupted
    from ee.store.files import workspace_lock

    if not ws.git.is_repo() or (interrupted(ws) is None and not (ws.root / STARTED).exists()):
        return  # (nothing to do: no lock to wait for)
    try:
        with workspace_lock(ws.root, LOCK_WAIT):
            repairs.git = abort_interrupted(ws)
    except LockTimeout:
        repairs.skipped.append(
            {
                "path": ".git",
                "reason": "the workspace lock is held by a running ee: run ee doctor --fix again",
            }
        )
    except EeError as exc:  # a person's operation, or one git cannot abort: reported below, with a repair
        repairs.skipped.append({"path": ".git", "reason": exc.message})


def _check_git_operation(ws: Workspace) -> list[Problem]:
    """A rebase, merge, cherry-pick, revert or bisect in progress: ee's writes wait until it ends. Whether
    a killed ``ee sync`` started it (``ee doctor --fix`` aborts that one) or a person did (left to them)."""
    from ee.ops.sync_session import interrupted

    if not ws.git.is_repo():
        return []
    found = interrupted(ws)
    if found is None:
        return []
    operation = found.operation
    if found.by_ee:
        return [
            Problem(
                "git_operation_interrupted",
                "error",
                f"a git {operation.name} that ee sync started was interrupted (the process was killed): ee "
                "cannot commit until it ends",
                repair="ee doctor --fix  # aborts it: your commits stay as they were; then ee sync again",
            )
        ]
    return [
        Problem(
            "git_operation_in_progress",
            "error",
            f"a git {operation.name} is in progress (not one ee started): ee cannot commit until it ends",
            repair=f"finish it ({operation.finish}) or abort it ({operation.abort})",
        )
    ]


def _stale_git_lock(ws: Workspace, age: float = 600.0) -> list[Problem]:
    """git's own ``index.lock``, ``age`` seconds old: a git command killed while it held it blocks every
    commit, ee's included. Not removed by ``--fix``: no lock says whether a git command is still running."""
    import time

    path = ws.git.git_dir / "index.lock"
    try:
        old = time.time() - path.stat().st_mtime
    except OSError:
        return []
    if old < age:
        return []
    return [
        Problem(
            "git_index_lock_stale",
            "warning",
            f"git's index.lock is {old / 60:.0f} minutes old: git (and ee) cannot commit while it exists",
            repair=f"rm {path}  # once you are sure no git command is running",
        )
    ]


def _check_layout(ws: Workspace) -> list[Problem]:
    out: list[Problem] = []
    if not (ws.root / MEMORIES).is_dir():
        out.append(Problem("memories_missing", "error", "memories/ does not exist", repair="ee init"))
    if not (ws.root / EVENTS).is_dir():
        out.append(Problem("events_missing", "warning", f"{EVENTS}/ does not exist", repair="ee init"))
    from ee.git import memory_branch

    expected: tuple[tuple[str, tuple[str, ...]], ...] = (
        (".gitignore", GITIGNORE_LINES),
        (".gitattributes", GITATTRIBUTES_LINES),
    )
    if memory_branch.worktree(ws.root) is not None:  # the memory branch carries its merge drivers
        attributes = tuple(memory_branch.BRANCH_FILES[".gitattributes"].splitlines())
        expected = (
            (".gitignore", (*GITIGNORE_LINES, memory_branch.IGNORE_LINE)),
            (f"{MEMORIES}/.gitattributes", attributes),
        )
    for name, lines in expected:
        path = ws.root / name
        have = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        missing = [line for line in lines if line not in have]
        if missing:
            out.append(
                Problem(
                    f"{name.rsplit('/', 1)[-1][1:]}_incomplete",
                    "warning",
                    f"{name} lacks: {', '.join(missing)}",
                    name,
                    repair="ee init",
                )
            )
    return out


def _conflicted(ws: Workspace, memory: Memory) -> Problem:
    """A memory a merge left several versions of. git's own markers (a merge without ee's driver) are
    named at the line of the first, with a repair that works for them: they carry git's labels, not this
    clone's commits, so ``--pick local|remote`` cannot tell the sides apart."""
    import shlex

    from ee.git.conflict import git_marker_line, has_git_markers
    from ee.git.merge import versions_of

    if not has_git_markers(memory.body):
        return Problem(
            "memory_conflicted",
            "error",
            f"{memory.id} holds several versions of its text from a merge",
            memory.path,
            repair=f"ee memory resolve {memory.id} --pick local|remote|both",
        )
    try:
        line = git_marker_line(ws.store.read_bytes(memory.path).decode("utf-8", "replace"))
    except EeError:  # (gone or unreadable since the snapshot read it)
        line = None
    labels = [shlex.quote(v.author) for v in versions_of(memory.body) or []]
    after = f"ee memory resolve {memory.id} --pick {'|'.join([*labels, 'both'])}" if labels else "commit it"
    return Problem(
        "memory_conflicted",
        "error",
        f"{memory.id} holds git's conflict markers from a merge",
        memory.path,
        line=line,
        repair=f"keep one version in {memory.path} and delete the marker lines (during a merge: then "
        f"git add it and finish the merge); once the merge is committed: {after}",
    )


def _extra_checks(ws: Workspace, snap: Any) -> list[Problem]:
    """Links to memories that do not exist, and conflicted memories left by a merge."""
    from ee.git.merge import is_conflicted

    out: list[Problem] = []
    granted = _granted_trust(ws, snap)
    for memory in snap.sorted():
        for link in memory.links:
            if link.to not in snap.memories:
                out.append(
                    Problem(
                        "link_dangling",
                        "warning",
                        f"{memory.id} links ({link.type}) to {link.to}, which does not exist",
                        memory.path,
                        key="links",
                        repair=f"edit {memory.path} to drop the link, or restore {link.to}",
                    )
                )
        if is_conflicted(memory):
            out.append(_conflicted(ws, memory))
        out += _policy_checks(memory, granted.get(memory.path) or _granted(memory, ""))
    return out


def _granted_trust(ws: Workspace, snap: Any) -> dict[str, str]:
    """The trust class ee grants each memory (its key capped by who wrote it since a person's last review,
    as the index decides: ee.index.provenance.writer_of, ee.query.standing.resolve_trust)."""
    from ee.index.provenance import provenance, writer_of

    try:
        state = provenance(ws.git, {})
    except GitError:  # no usable git: reported by the git checks
        return {}
    return {m.path: _granted(m, writer_of(state, m.path, m.id)) for m in snap.sorted()}


def _granted(memory: Any, writer: str) -> str:
    from ee.query.standing import resolve_trust

    return resolve_trust({"trust": memory.trust}, writer)


def _policy_checks(memory: Any, granted: str) -> list[Problem]:
    """A secret a hand edit put in a file (masked in every output, but still on disk and in git), a
    quarantined memory: instruction-like text from a non-human source (never authoritative in a pack), and a
    ``trust:`` key claiming more than ee grants (``granted``: what an agent wrote counts as at most
    agent_assertion until a person reviews it)."""
    from ee.policy.injection import scan_memory_injection
    from ee.policy.secrets import memory_secrets, path_secrets, rename_command
    from ee.policy.trust import is_human

    out: list[Problem] = []
    if renamed := rename_command(memory.path):
        classes = ", ".join(sorted({f.cls for f in path_secrets(memory.path)}))
        out.append(
            Problem(
                "secret_in_path",
                "error",
                f"its file or folder name holds secret(s): {classes} (masked in output; "
                "ee sync and the pre-commit hook refuse it)",
                memory.path,
                repair=f"rename it: {renamed} (mv while git does not track it yet), commit, and rotate it",
            )
        )
    secrets = sorted({f.cls for f in memory_secrets(memory)})
    if secrets:
        out.append(
            Problem(
                "secret_in_file",
                "error",
                f"{memory.id} holds secret(s): {', '.join(secrets)} (masked in output)",
                memory.path,
                repair=f"remove the secret from {memory.path}, commit, and rotate it",
            )
        )
    if memory.trust and memory.trust != granted:
        out.append(
            Problem(
                "trust_not_granted",
                "warning",
                f"{memory.id} says trust: {memory.trust}, but an agent wrote it since a person last reviewed "
                f"it: ee counts it as {granted}",
                memory.path,
                key="trust",
                repair=f"once a person has read it: ee memory trust {memory.id} --class {memory.trust}",
            )
        )
    report = scan_memory_injection(memory)
    if report.flagged and not is_human(granted):
        signals = ", ".join(report.signals) or "injection"
        out.append(
            Problem(
                "memory_quarantined",
                "warning",
                f"{memory.id} ({granted}) reads like "
                f"instructions to an agent ({signals}): quarantined, never authoritative",
                memory.path,
                repair=f"ee memory forget {memory.id}  # or, once a person has read it and vouches for "
                f"it: ee memory trust {memory.id} --class peer_human_attested",
            )
        )
    return out
