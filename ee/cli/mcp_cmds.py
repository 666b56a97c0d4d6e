"""``ee mcp serve`` and ``ee mcp manifest``: ee's commands as Model Context Protocol tools."""

from __future__ import annotations

import os
from typing import Any

import click

from ee.cli import Output, json_option, workspace
from ee.errors import ConfigError

MCP_REQUIREMENT = "mcp>=2.3,<3"


@click.group("mcp")
def mcp_group() -> None:
    """Serve ee's commands as MCP tools: context, search, remember, outcome, why, memory show/list/history."""


@mcp_group.command("serve")
@click.option(
    "--workspace",
    "-W",
    "serve_workspace",
    metavar="DIR",
    default=None,
    type=click.Path(),
    help="The workspace to serve (default: ee's --workspace, $EE_WORKSPACE, else found from here up).",
)
@click.option(
    "--agent",
    default=None,
    help="Agent name for writes that give none (default: $EE_AGENT, else the MCP client's name).",
)
@click.pass_context
def serve_cmd(ctx: click.Context, serve_workspace: str | None, agent: str | None) -> None:
    """Serve MCP over stdio (stdin/stdout) until the client disconnects. Needs the mcp extra.

    Example: ee mcp serve --workspace .
    """
    from ee.workspace import Workspace

    root = Workspace.discover(serve_workspace or ctx.find_root().params.get("workspace")).root
    require_sdk()
    from ee.mcp.server import serve_stdio

    click.echo(f"ee mcp: serving {root} over stdio", err=True)
    serve_stdio(os.fspath(root), agent or os.environ.get("EE_AGENT") or None)


def require_sdk() -> None:
    """The ``mcp`` SDK, present and of the major version ee speaks, or a configuration error saying how."""
    from importlib import metadata

    from ee.install import INSTALL_MCP as INSTALL_HINT

    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        raise ConfigError(
            "`ee mcp serve` needs the MCP Python SDK, which is not installed", INSTALL_HINT
        ) from None
    major, _, rest = version.partition(".")
    minor = rest.partition(".")[0]
    if not (major.isdigit() and minor.isdigit() and major == "2" and int(minor) >= 3):
        raise ConfigError(f"`ee mcp serve` needs {MCP_REQUIREMENT}; mcp {version} is installed", INSTALL_HINT)


@mcp_group.command("manifest")
@json_option
@click.pass_context
def manifest_cmd(ctx: click.Context, as_json: bool | None) -> None:
    """The MCP tools `ee mcp serve` offers: names, descriptions, input schemas, the command each runs,
    and the snippet that registers it with a client for this workspace (when run in one).

    Example: ee mcp manifest --human
    """
    from ee.errors import WorkspaceNotFound
    from ee.mcp.mapping import available_tools, manifest_entry

    try:
        root: str | None = str(workspace(ctx).root)
    except WorkspaceNotFound:  # (outside a workspace the tools are the same; the snippet names none)
        root = None
    tools = [manifest_entry(tool) for tool in available_tools()]
    data = manifest_data(tools, root)
    Output(as_json).emit(data, lambda: manifest_text(data))


def manifest_data(tools: list[dict[str, Any]], root: str | None = None) -> dict[str, Any]:
    """The server (started by the absolute path of this ee: an MCP client's PATH may not hold it), the
    workspace it would serve from here (``root``, None outside one) and its tools."""
    from ee import __version__
    from ee.install import ee_command

    return {
        "server": {
            "name": "ee",
            "version": __version__,
            "transport": "stdio",
            "command": [*ee_command(), "mcp", "serve"],
            "workspace": root,
        },
        "tools": tools,
    }


def manifest_text(data: dict[str, Any]) -> str:
    import json
    import shlex

    lines = []
    for tool in data["tools"]:
        command = " ".join(tool["cli"]["command"])
        lines.append(f"{tool['name']:<16} {tool['title']}  ({command})")
    program, *args = data["server"]["command"]
    root = data["server"]["workspace"] or "/path/to/repo"  # (outside a workspace: the user names it)
    config = {"mcpServers": {"ee": {"command": program, "args": [*args, "--workspace", root]}}}
    lines += [
        "",
        "Claude Code:    claude mcp add --scope project ee -- " + shlex.join(data["server"]["command"]),
        "Desktop/Cursor: " + json.dumps(config),
    ]
    return "\n".join(lines)
