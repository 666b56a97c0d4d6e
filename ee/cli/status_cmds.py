"""``ee status``: the workspace on one screen, and the next thing to do."""

from __future__ import annotations

from typing import Any

import click

from ee.cli import Output, json_option, workspace


@click.command("status")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """The workspace on one screen: branch mode, memories by kind and trust, uncommitted files, the index
    and model, git and agent hooks, the warm server, and the next thing to do (changes no memory).

    Example: ee status   (or ee status --json for a program)
    """
    from ee.status import status

    data = status(workspace(ctx))
    Output(as_json).emit(data, lambda: status_text(data))


def status_text(data: dict[str, Any]) -> str:
    """One screen, read in five seconds."""
    branch = data["branch"]
    where = f"branch {branch['branch']}" if branch["branch"] else "a detached HEAD"
    if branch["mode"] == "memory_branch":
        mode = f"memories on their own branch {branch['memory_branch']} (code on {where})"
    else:
        mode = f"memories with the code, on {where}"
    m = data["memories"]
    kinds = ", ".join(f"{n} {kind}" for kind, n in m["by_kind"].items()) or "none"
    trusts = ", ".join(f"{n} {cls}" for cls, n in m["by_trust"].items()) or "-"
    flags = [f"{m[key]} {key}" for key in ("quarantined", "conflicted", "broken") if m[key]]
    if m["pending_review"]:
        flags.append(f"{m['pending_review']} pending review (ee curate list)")
    index = data["index"]
    model = (
        f"model {index['model']}" + ("" if index["semantic"] else ", lexical only")
        if index["model"]
        else "no model"
    )
    git_hooks = data["hooks"]["git"]
    hooks = f"{git_hooks['installed']}/{git_hooks['of']} installed"
    if git_hooks["installed"] and not git_hooks["current"]:
        hooks += " (old: ee hooks install)"
    agent = data["hooks"]["agent"]["claude_code"]
    agent_text = "installed" if agent["current"] else ("old" if agent["installed"] else "not installed")
    imported = data["sessions"]
    sessions = (
        f"{imported['imported']} imported, the newest up to {imported['newest']}"
        if imported["imported"]
        else "none imported (ee import session --claude-code)"
    )
    server = data["server"]
    served = f"running since {server['since']} (pid {server['pid']})" if server["running"] else "not running"
    lines = [
        f"workspace    {data['workspace']}",
        f"branch       {mode}",
        f"memories     {m['total']}: {kinds}",
        f"trust        {trusts}" + (f"; {', '.join(flags)}" if flags else ""),
        f"uncommitted  {len(data['uncommitted'])}"
        + (
            f": {', '.join(data['uncommitted'][:3])}{' …' if len(data['uncommitted']) > 3 else ''}"
            if data["uncommitted"]
            else ""
        ),
        f"index        {index['state']}, {model}",
        f"git hooks    {hooks}",
        f"agent hooks  Claude Code {agent_text}",
        f"server       {served}",
        f"sessions     {sessions}",
    ]
    first, *more = data["next"]
    lines.append(f"next         {first['do']}   ({first['why']})")
    lines += [f"             {step['do']}   ({step['why']})" for step in more]
    return "\n".join(lines)
