"""ee over the Model Context Protocol: the library's commands as MCP tools, with the CLI's JSON.

- :mod:`ee.mcp.tools` — the tools: the commands of :data:`ee.commands.COMMANDS` (described once, for
  the command line too) and the review decisions an agent may not take; no ``mcp`` import.
- :mod:`ee.mcp.mapping` — a tool's input schema, the check of a call's arguments, its command line.
- :mod:`ee.mcp.invoke` — a tool call → one ``Workspace`` method, its data in the ee.response.v1 envelope.
- :mod:`ee.mcp.server` — the stdio server on the official ``mcp`` SDK (the optional extra
  ``eidetic-engine[mcp]``).
"""
