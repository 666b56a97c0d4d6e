"""``ee status``: the state of a workspace on one screen, and the next thing to do.

It gathers what other commands report one by one (the memories as search sees them, the index, git's
view of ``memories/``, the git and agent hooks, the warm server) and changes no memory file; the index may
catch up, as before any query. Each part is read by the function that owns it, so ``ee status`` shows the
same values as ``ee memory list``, ``ee index status`` and ``ee hooks status``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.workspace import Workspace


UNREADABLE = ("memory_invalid", "memory_conflicted")  # the index's problems of a file it leaves out


def status(ws: Workspace) -> dict[str, Any]:
    """The ``data`` of ``ee status`` (every key always present)."""
    memories, problems = _memories(ws)  # (opening the index first: it catches up, as a query's would)
    memories["pending_review"] = _pending_review(ws)
    index = ws.index_status()
    data: dict[str, Any] = {
        "workspace": str(ws.root),
        "branch": _branch(ws),
        "memories": memories,
        "uncommitted": sorted(ws.git.status_paths("memories")),
        "index": {
            "state": index.state,
            "memories": index.memories,
            "built": index.built,
            "model": index.model,
            "semantic": index.semantic,
        },
        "hooks": {"git": _git_hooks(ws.root), "agent": _agent_hooks(ws.root)},
        "server": server_state(ws.root),
        "sessions": _sessions(ws),
    }
    data["next"] = next_steps(data, problems)
    return data


def _branch(ws: Workspace) -> dict[str, Any]:
    """Where memories live: on the code branch checked out (the default), or on a memory branch."""
    from ee.git import memory_branch
    from ee.git.repo import Git

    remote = str(ws.config.get("sync.remote"))
    code, default = memory_branch.code_branches(Git(ws.root), remote)
    folder = memory_branch.worktree(ws.root)
    if folder is None:
        return {"mode": "code_branch", "branch": code, "default": default, "memory_branch": None}
    memories, _ = memory_branch.code_branches(ws.git, remote)
    return {"mode": "memory_branch", "branch": code, "default": default, "memory_branch": memories}


def _memories(ws: Workspace) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Counts as search sees the store: kind, the trust class ee grants, quarantined (the injection guard
    flagged a memory no person wrote), conflicted (a merge kept two texts); and the files that do not load."""
    from ee.index.provenance import writer_of
    from ee.index.view import open_index
    from ee.policy import trust
    from ee.query.standing import resolve_trust

    view = open_index(ws)
    kinds: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    quarantined = conflicted = 0
    for record in view.gen.records.all():
        cls = resolve_trust(record, writer_of(view.state, record["path"], record["id"]))
        kinds[record["kind"]] += 1
        classes[cls] += 1
        quarantined += bool(record.get("injection", {}).get("flagged")) and not trust.is_human(cls)
        conflicted += bool(record.get("conflict"))
    broken = [  # the files the index could not read, as search reports them (no second parse of the store)
        {"path": p["path"], "line": p.get("line"), "message": p["message"], "repair": p.get("repair", "")}
        for p in view.state.get("problems", [])
        if p.get("code") in UNREADABLE
    ]
    counts = {
        "total": sum(kinds.values()),
        "by_kind": dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))),
        "by_trust": dict(sorted(classes.items(), key=lambda kv: trust.TRUST_CLASSES.index(kv[0]))),
        "quarantined": quarantined,
        "conflicted": conflicted,
        "broken": len(broken),
    }
    return counts, broken


def _sessions(ws: Workspace) -> dict[str, Any]:
    """The imported agent sessions (``ee sessions list``): how many, when the newest one ended, and when
    the last import ran."""
    found = ws.sessions()
    newest = max((s.last for s in found if s.last), default=None)
    return {"imported": len(found), "newest": newest, "last_import": ws.last_session_import()}


def _pending_review(ws: Workspace) -> int:
    """How many candidates wait in the review queue (``ee curate list``)."""
    from ee.curate.queue import pending

    candidates, _problems = pending(ws)
    return len(candidates)


def _git_hooks(root: Path) -> dict[str, Any]:
    from ee.hooks.wiring import status as wiring

    try:
        hooks = wiring(root)["hooks"]
    except (RuntimeError, OSError):  # (git could not say: reported as not installed)
        hooks = []
    ours = [h for h in hooks if h["state"] in ("installed", "chained")]
    return {
        "installed": len(ours),
        "of": len(hooks),
        "current": bool(ours) and all(h["current"] for h in ours),
        "missing": [h["name"] for h in hooks if h["state"] not in ("installed", "chained")],
    }


def _agent_hooks(root: Path) -> dict[str, Any]:
    """Claude Code's hooks in ``.claude/settings.json``: installed (ee's entries there) and current (the
    entries ``ee hooks agent claude-code --write`` would write now)."""
    import copy

    from ee.hooks.agents import SETTINGS, is_ee_entry, merge_claude_settings
    from ee.hooks.wiring import work_tree_top

    try:
        path = work_tree_top(root) / SETTINGS
        settings = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        settings = {}
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    installed = isinstance(hooks, dict) and any(
        is_ee_entry(hook)
        for groups in hooks.values()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict) and isinstance(group.get("hooks"), list)
        for hook in group["hooks"]
    )
    current = installed and not merge_claude_settings(copy.deepcopy(settings))
    return {"claude_code": {"installed": installed, "current": current}}


def server_state(root: Path) -> dict[str, Any]:
    """The user's warm server (which serves this workspace among others): running or not, its pid and
    since when (the one place ``ee status`` reads it)."""
    from ee.serve.client import server_pid
    from ee.serve.protocol import PID_FILE, runtime_dir

    pid = server_pid()
    since = None
    if pid is not None:
        try:
            started = (runtime_dir() / PID_FILE).stat().st_mtime
            since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))
        except OSError:
            since = None
    return {"running": pid is not None, "pid": pid if pid and pid > 0 else None, "since": since}


def next_steps(data: dict[str, Any], broken: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What to do next, most pressing first: each a command and why."""
    steps: list[dict[str, str]] = []
    memories = data["memories"]

    def add(do: str, why: str) -> None:
        steps.append({"do": do, "why": why})

    if broken:
        first = broken[0]
        where = f"{first['path']}:{first['line']}" if first["line"] else first["path"]
        add("ee doctor", f"{_count(len(broken), 'memory file')} cannot be read ({where}: {first['message']})")
    if memories["conflicted"]:
        add(
            "ee sync  # lists them, each with its ee memory resolve command",
            f"{_count(memories['conflicted'], 'memory')} kept two texts from a merge",
        )
    if memories["quarantined"]:
        add(
            "ee memory list --json  # then: ee why ID",
            f"{_count(memories['quarantined'], 'memory')} read like instructions to an agent (quarantined)",
        )
    if memories["pending_review"]:
        waiting = memories["pending_review"]
        verb = "waits" if waiting == 1 else "wait"
        add("ee curate list", f"{_count(waiting, 'candidate')} {verb} for a review")
    if data["uncommitted"]:
        add(
            "git add memories && git commit",
            f"{_count(len(data['uncommitted']), 'memory file')} not committed",
        )
    if data["index"]["state"] in ("missing", "corrupt") and memories["total"]:
        add("ee index rebuild", f"the index is {data['index']['state']}")
    git_hooks = data["hooks"]["git"]
    if git_hooks["of"] and (git_hooks["missing"] or not git_hooks["current"]):
        add(
            "ee hooks install", "git hooks are not installed" if git_hooks["missing"] else "git hooks are old"
        )
    agent = data["hooks"]["agent"]["claude_code"]
    if agent["installed"] and not agent["current"]:
        add("ee hooks agent claude-code --write", "Claude Code's hooks are old")
    unreviewed = memories["by_trust"].get("agent_assertion", 0)
    if unreviewed:
        add(
            "ee memory trust ID --class human_explicit",
            f"{_count(unreviewed, 'memory')} only advisory (agent_assertion: an agent wrote it, or no commit "
            "vouches for it yet) until a person reviews it",
        )
    if not memories["total"]:
        add('ee remember "<a rule of this project>" --kind rule', "the store holds no memory yet")
    if not steps:
        add('ee context "<task>"', "all is well: agents get a pack before work")
    return steps


def _count(n: int, noun: str) -> str:
    from ee.render.text import plural

    return plural(n, noun, "memories" if noun == "memory" else noun + "s")
