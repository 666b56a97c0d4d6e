"""``ee mcp serve``: the tools of :mod:`ee.mcp.tools` over stdio, on the official ``mcp`` SDK (low-level
``Server``, ``mcp>=2.3``). The only module of ee that imports ``mcp``; ``eidetic-engine[mcp]`` installs it.

Errors follow the MCP specification: an unknown tool is a JSON-RPC error (invalid params); arguments that
break the input schema, and every failing command, are a tool result with ``isError`` set and the
``ee.error.v1`` envelope as its content, so the agent reads the repair and can correct itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ee import __version__
from ee.commands import Command
from ee.mcp.invoke import call_tool
from ee.mcp.mapping import available_tools, manifest_entry
from ee.policy.secrets import mask_text

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

INSTRUCTIONS = """\
ee is this project's long-term memory: rules, decisions, known failures and commands that earlier sessions \
(and people) recorded, versioned in git. At the start of a task call `context` with the task in one \
sentence and follow its authoritative items. Use `search` for a specific question. When you learn \
something durable (a convention, a decision and its reason, a fix for a failure), call `remember` with one \
self-contained statement. When a memory helped or misled you, call `outcome` so ranking learns. Every tool \
returns the ee.response.v1 JSON envelope (or ee.error.v1 with a repair hint on failure)."""

FALLBACK_AGENT = "mcp"


def build_server(workspace: str, agent: str | None = None) -> Server[Any]:
    """The MCP server for one workspace. ``agent`` names writers when a call gives none (else the MCP
    client's name from its handshake, else "mcp")."""
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    tools = {tool.name: tool for tool in available_tools()}
    listed = [_mcp_tool(tool) for tool in tools.values()]

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:  # (its name quoted as every value in an error is: masked)
            named = mask_text(params.name)
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {named!r}", {"tools": sorted(tools)})
        writer = agent or client_agent(ctx)
        outcome = await anyio.to_thread.run_sync(call_tool, tool, params.arguments or {}, workspace, writer)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)],
            structured_content=outcome.document,
            is_error=not outcome.ok,
        )

    return Server(
        "ee",
        version=__version__,
        title="ee — Eidetic Engine memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call,
    )


def _mcp_tool(tool: Command) -> Any:
    """The manifest entry (the same dictionary `ee mcp manifest` prints) as the SDK's Tool."""
    from mcp import types

    entry = manifest_entry(tool)
    entry.pop("cli")
    return types.Tool.model_validate(entry)


def client_agent(ctx: Any) -> str:
    """The connected client's name as an agent name ("Claude Code" → "claude-code"), else "mcp"."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    name = re.sub(r"[^a-z0-9._-]+", "-", str(getattr(info, "name", "") or "").lower()).strip("-.")
    return name[:64] or FALLBACK_AGENT


def serve_stdio(workspace: str, agent: str | None = None) -> None:
    """Serve until the client closes standard input."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(workspace, agent)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
