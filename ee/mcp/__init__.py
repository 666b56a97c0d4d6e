"""ee over the Model Context Protocol: the CLI's commands as MCP tools, with the same JSON.

- :mod:`ee.mcp.tools` — the one table of tools (name, description, parameters, command) that both
  ``ee mcp serve`` and ``ee mcp manifest`` read; no ``mcp`` import.
- :mod:`ee.mcp.invoke` — a tool call → ``ee.cli.main(argv + ["--json"])`` in-process, streams captured.
- :mod:`ee.mcp.server` — the stdio server on the official ``mcp`` SDK (the optional extra
  ``eidetic-engine[mcp]``).
"""
