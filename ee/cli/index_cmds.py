"""``ee index status|rebuild`` and ``ee watch``."""

from __future__ import annotations

import os
from typing import Any

import click

from ee.cli import Output, json_option, workspace


@click.group("index")
def index_group() -> None:
    """The derived search indexes under .ee/index (rebuildable at any time)."""


@index_group.command("status")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """ready / stale / missing / corrupt, with counts, model, generation and problems (changes nothing).

    Example: ee index status --human
    """
    from ee.index.view import status
    from ee.serve.watch import watcher_pid

    ws = workspace(ctx)
    data = status(ws)
    pid = watcher_pid(ws.root)
    data["watcher"] = {
        "running": pid is not None,
        "pid": pid if pid and pid > 0 else None,
        "serving": pid is not None and (ws.root / ".ee" / "serve.sock").exists(),
    }
    degraded = data.pop("degraded")
    Output(as_json).emit(data, lambda: status_text(data), degraded)


@index_group.command("rebuild")
@json_option
@click.pass_context
def rebuild_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """Build the index again from the memory files (derived data is reused by content).

    Example: ee index rebuild
    """
    from ee.cli.progress import progress_on_a_terminal
    from ee.index.view import rebuild

    with progress_on_a_terminal() as bar:
        report, degraded = rebuild(workspace(ctx), progress=bar)
    data = report.to_dict()
    Output(as_json).emit(data, lambda: rebuild_text(data), degraded)


@click.command("watch")
@click.option("--no-serve", is_flag=True, help="Only keep the index current; do not serve queries.")
@click.option("--on-demand", "lock_fd", type=int, hidden=True, help="(started by ee.serve.client.autostart)")
@click.pass_context
def watch_cmd(ctx: click.Context, no_serve: bool, lock_fd: int | None) -> None:
    """Keep the index current as files change, and answer read-only commands warm over .ee/serve.sock.

    Runs until Ctrl-C / SIGTERM, or until the workspace is deleted or moved. One watcher per workspace;
    logs go to stderr. (ee starts one in the background by itself, logging to .ee/serve.log, which stops
    after [server] idle_timeout without a client.)

    Example: ee watch --no-serve
    """
    from ee.serve.watch import run_watch

    ws = workspace(ctx)
    if lock_fd is None:
        run_watch(ws, serve=not no_serve)
        return
    # Started on demand: the starter's lock (.ee/serve.lock) is held for this process's whole life; no
    # git process it starts may inherit it.
    os.set_inheritable(lock_fd, False)
    run_watch(ws, serve=not no_serve, idle_timeout=ws.config.get("server.idle_timeout"))


def status_text(data: dict[str, Any]) -> str:
    lines = [f"index: {data['state']}"]
    if data["memories"] is not None:
        lines.append(f"memories: {data['memories']} indexed of {data['files']} files")
    else:
        lines.append(f"files: {data['files']}")
    if data["generation"]:
        built = f" (built {data['built']})" if data["built"] else ""
        lines.append(f"generation: {data['generation']}{built}")
    search = "semantic + lexical" if data["semantic"] else "lexical only"
    if data.get("semantic_arm"):
        search += f", {data['semantic_arm']} arm"
    lines.append(f"model: {data['model'] or 'none'} ({search})")
    watcher = data["watcher"]
    if watcher["running"]:
        serving = ", serving queries" if watcher["serving"] else ""
        lines.append(f"watcher: running (pid {watcher['pid']}){serving}")
    else:
        lines.append("watcher: not running (start one with: ee watch)")
    for problem in data["problems"]:
        where = problem["path"] + (f":{problem['line']}" if problem.get("line") else "")
        lines.append(f"problem: {where}: {problem['message']}")
    if data["repair"]:
        lines.append(f"repair: {data['repair']}")
    return "\n".join(lines)


def rebuild_text(data: dict[str, Any]) -> str:
    moved = ", ".join(f"{m['from']} → {m['to']}" for m in data["moved"])
    rows = [
        ("new", len(data["new"])),
        ("modified", len(data["modified"])),
        ("deleted", len(data["deleted"])),
        ("moved", len(data["moved"])),
    ]
    text = "rebuilt: " + ", ".join(f"{n} {name}" for name, n in rows) + f" in {data['seconds']:.2f} s"
    return text + (f"\nmoved: {moved}" if moved else "")
