"""``ee sync`` and ``ee merge-driver`` (git calls it); ``ee memory resolve`` is in memory_cmds."""

from __future__ import annotations

from typing import Any

import click

from ee.cli import Output, json_option, workspace


@click.command("sync")
@click.option(
    "--remote", metavar="NAME", default=None, help="The git remote (default: [sync] remote, origin)."
)
@click.option(
    "--strategy",
    type=click.Choice(["rebase", "merge"]),
    default=None,
    help="How to integrate the remote's commits (default: [sync] strategy, rebase).",
)
@click.option("--no-push", "no_push", is_flag=True, help="Commit, fetch and integrate, but do not push.")
@click.option("--agent", default=None, help="Commit pending changes as this agent.")
@json_option
@click.pass_context
def sync_cmd(
    ctx: click.Context,
    remote: str | None,
    strategy: str | None,
    no_push: bool,
    agent: str | None,
    as_json: bool | None,
) -> None:
    """Share memories through the git remote: commit pending memory changes, fetch, integrate, push.

    Example: ee sync --remote origin --strategy rebase
    """
    from ee.policy.trust import Actor

    report = workspace(ctx).sync(remote, strategy, push=not no_push, actor=Actor.from_env(agent))
    data = report.to_dict()
    degraded = [
        {"code": p.code, "severity": p.severity, "message": f"{p.path}: {p.message}", "repair": p.repair}
        for p in report.skipped
    ]
    degraded += [
        {
            "code": "memory_conflicted",
            "severity": "warning",
            "message": f"{item['id']} holds {len(item['versions'])} versions of its text from a merge",
            "repair": item["resolve"],
        }
        for item in report.conflicted
    ]
    Output(as_json).emit(data, lambda: _human(data), degraded)


def _human(data: dict[str, Any]) -> str:
    def side(changes: dict[str, Any]) -> str:
        counts = [f"{len(changes[k])} {k}" for k in ("added", "changed", "removed") if changes[k]]
        if changes["events"]:
            counts.append(f"{len(changes['events'])} with new events")
        return f"{len(changes['commits'])} commit(s)" + (f" ({', '.join(counts)})" if counts else "")

    where = f"{data['remote']}/{data['branch']}"
    lines = [f"sync with {where}"]
    if data["committed"]:
        lines.append(f"committed pending changes: {data['committed'][:10]}")
    if data["incoming"]["commits"]:
        lines.append(f"pulled: {side(data['incoming'])}, by {data['integration']}")
    else:
        lines.append("pulled: nothing new")
    if data["pushed"]:
        lines.append("pushed: " + side(data["outgoing"]))
    elif data["ahead"]:
        lines.append(f"not pushed: {data['ahead']} commit(s) ahead of {where}")
    else:
        lines.append("pushed: nothing (the remote has every commit)")
    if data["conflicted"]:
        lines.append(f"to resolve ({len(data['conflicted'])}): both versions of the text are kept")
        for item in data["conflicted"]:
            versions = "; ".join(
                f"{v['author']}, {(v['commit'] or 'no commit')[:10]}, {v['side']}" for v in item["versions"]
            )
            lines.append(f'  {item["id"]}  "{item["title"]}"  ({versions})')
            lines.append(f"    {item['resolve']}")
    return "\n".join(lines)


@click.command("merge-driver")
@click.argument("base", type=click.Path(exists=True, dir_okay=False))
@click.argument("ours", type=click.Path(exists=True, dir_okay=False))
@click.argument("theirs", type=click.Path(exists=True, dir_okay=False))
@click.argument("path", default="", type=click.Path())
def merge_driver_cmd(base: str, ours: str, theirs: str, path: str) -> int:
    """Merge a memory file (git calls this: `ee merge-driver %O %A %B %P`); the result goes into OURS.

    Exit 0: merged (a body both sides changed is kept twice, flagged `conflict: true`);
    exit 1: a side does not parse, git's text merge is in OURS and git reports a conflict.

    Example: ee merge-driver %O %A %B %P   (git runs it: ee init registers it)
    """
    from ee.git.merge import merge_driver

    result = merge_driver(base, ours, theirs, path)
    name = path or ours
    if result.conflict:
        click.echo(
            f"ee: {name}: cannot merge field by field ({result.reason}); git's text merge used", err=True
        )
        return 1
    if result.body_conflict:
        click.echo(
            f"ee: {name}: both sides changed the text; both versions kept, labelled by author and "
            "commit (then: `ee memory resolve <id> --pick local|remote|both`)",
            err=True,
        )
    return 0
