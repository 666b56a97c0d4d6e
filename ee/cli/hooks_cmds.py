"""``ee hooks install | uninstall | status | agent`` and the hidden ``ee hook NAME`` the git hooks call."""

from __future__ import annotations

from typing import Any

import click

from ee.cli import Output, json_option, workspace


@click.group("hooks")
def hooks_group() -> None:
    """Git hooks that bring memories to commits and checkouts, and agent harness hooks."""


@hooks_group.command("install")
@json_option
@click.pass_context
def install_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """Wire ee into this repository's git hooks (core.hooksPath honoured; existing hooks chained, kept).

    Example: ee hooks install
    """
    from ee.hooks.wiring import install

    data = install(workspace(ctx).root)
    Output(as_json).emit(
        data, lambda: hooks_human(data, "installed" if data["changed"] else "already installed")
    )


@hooks_group.command("uninstall")
@json_option
@click.pass_context
def uninstall_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """Remove ee's git hooks and put back the hooks they chained, byte for byte.

    Example: ee hooks uninstall
    """
    from ee.hooks.wiring import uninstall

    data = uninstall(workspace(ctx).root)
    Output(as_json).emit(
        data, lambda: hooks_human(data, "uninstalled" if data["changed"] else "nothing to do")
    )


@hooks_group.command("status")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """Each hook: installed, chained (your hook runs first), missing, or foreign (not ee's).

    Example: ee hooks status --human
    """
    from ee.hooks.wiring import status

    data = status(workspace(ctx).root)
    Output(as_json).emit(data, lambda: hooks_human(data, ""))


@hooks_group.command("agent")
@click.argument("harness", type=click.Choice(["claude-code", "codex"]))
@click.option(
    "--write",
    is_flag=True,
    help="Merge the entries into .claude/settings.json, or Codex's notify into ~/.codex/config.toml.",
)
@json_option
@click.pass_context
def agent_cmd(ctx: click.Context, harness: str, write: bool, as_json: bool | None) -> None:
    """Hook entries for an agent harness (Claude Code: SessionStart and UserPromptSubmit → ee context,
    SessionEnd and PreCompact → import the transcript; Codex: notify → import the turn's rollout).

    Example: ee hooks agent claude-code --write   (or: ee hooks agent codex --write)
    """
    from ee.hooks.agents import claude_code_hooks, write_claude_settings
    from ee.hooks.wiring import work_tree_top
    from ee.render import dumps

    if harness == "codex":
        _codex_agent(write, as_json)
        return
    if not write:
        if as_json is False:  # --human: say where the entries go
            click.echo("Merge these entries into .claude/settings.json (or run again with --write):")
        click.echo(dumps(claude_code_hooks()))
        return
    data = write_claude_settings(work_tree_top(workspace(ctx).root))
    Output(as_json).emit(
        data, lambda: f"{'updated' if data['changed'] else 'already up to date'}: {data['path']}"
    )


def _codex_agent(write: bool, as_json: bool | None) -> None:
    import os
    from pathlib import Path

    from ee.hooks.agents import CODEX_CONFIG, codex_notify_line, write_codex_config

    if not write:
        if as_json is False:
            click.echo(f"Add this line to ~/{CODEX_CONFIG}, before any [table] (or run again with --write):")
        click.echo(codex_notify_line())
        return
    data = write_codex_config(Path(os.path.expanduser("~")))
    Output(as_json).emit(
        data, lambda: f"{'updated' if data['changed'] else 'already up to date'}: {data['path']}"
    )


@click.command("hook", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_cmd(name: str, args: tuple[str, ...]) -> int:
    """Run one git hook (called by the scripts `ee hooks install` writes): exit 0, or 40 to block.

    Example: ee hook pre-commit   (the scripts ee hooks install writes run it)
    """
    from ee.hooks import main

    return main([name, *args])


def hooks_human(data: dict[str, Any], headline: str) -> str:
    lines = [f"{headline}: {data['hooks_dir']}" if headline else f"hooks folder: {data['hooks_dir']}"]
    for hook in data["hooks"]:
        note = {
            "chained": "ee's, your hook runs first",
            "foreign": "not ee's",
            "missing": "",
            "installed": "ee's",
        }[hook["state"]]
        if hook["state"] in ("installed", "chained") and not hook["current"]:
            note += "; out of date: ee hooks install"
        action = f"  [{hook['action']}]" if hook.get("action") else ""
        lines.append(f"  {hook['name']:<20} {hook['state']:<10} {note}{action}".rstrip())
    return "\n".join(lines)
