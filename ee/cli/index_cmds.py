"""``ee index status|rebuild`` and ``ee watch``."""

from __future__ import annotations

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
    from ee.serve.client import server_pid

    data, degraded = workspace(ctx).index_status().envelope_parts()
    pid = server_pid()  # this user's server, which serves every workspace of theirs
    data["watcher"] = {
        "running": pid is not None,
        "pid": pid if pid and pid > 0 else None,
        "serving": pid is not None,
    }
    Output(as_json).emit(data, lambda: status_text(data), degraded)


@index_group.command("rebuild")
@json_option
@click.pass_context
def rebuild_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """Build the index again from the memory files (derived data is reused by content).

    Example: ee index rebuild
    """
    from ee.cli.progress import progress_on_a_terminal

    with progress_on_a_terminal() as bar:
        report, degraded = workspace(ctx).rebuild_index(progress=bar)
    data = report.to_dict()
    Output(as_json).emit(data, lambda: rebuild_text(data), list(degraded))


@click.command("watch")
@click.option("--no-serve", is_flag=True, help="Only keep this workspace's index current; serve nothing.")
@click.pass_context
def watch_cmd(ctx: click.Context, no_serve: bool) -> None:
    """Run your warm server in the foreground: it keeps the index of each workspace it serves current as
    files change, and answers read-only commands of every workspace of yours, this one opened at once.

    Runs until Ctrl-C / SIGTERM; logs go to stderr. One server per user. (ee starts one in the background
    by itself, which stops once no workspace was used for its [server] idle_timeout.)

    Example: ee watch
    """
    ws = workspace(ctx)
    if no_serve:
        from ee.serve.watch import watch_only

        watch_only(ws)
        return
    from ee.serve.server import serve

    serve(stay=True, first=ws.root)


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
    if data.get("transformer"):
        lines.append("transformer: " + vectors_text(data["transformer"], data.get("semantic_arm")))
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
    text += f"\nmoved: {moved}" if moved else ""
    vectors = data.get("transformer")
    if vectors:
        text += "\ntransformer: " + vectors_text(vectors)
        if vectors["state"] in ("complete", "pending"):
            text += (
                f" (computed {vectors['computed']}, reused {vectors['reused']} in {vectors['seconds']:.2f} s)"
            )
    return text


def vectors_text(vectors: dict[str, Any], arm: str | None = None) -> str:
    """One line on the transformer arm's vectors (``ee.index.transformer.VectorReport``'s JSON)."""
    size, done = vectors["memories"], vectors["done"]
    state = vectors["state"]
    if state == "off":
        why = "off ([model] transformer = false)"
    elif state == "above_max_memories":
        why = f"not used: {size} memories, above [model] transformer_max_memories = {vectors['max_memories']}"
    elif state == "unavailable":
        why = "not used: the model is not installed"
    elif state == "empty":
        why = "no memory to embed"
    elif state == "complete":
        return f"{done} of {size} vectors" + (f", the {arm} arm answers" if arm else "")
    else:
        answers = f"the {arm} arm answers" if arm else "the static arm answers"
        return (
            f"{done} of {size} vectors ({answers} until all are done: ee index rebuild, or the warm server)"
        )
    return why + "; the static arm answers"
