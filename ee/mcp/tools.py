"""ee's MCP tools: the library's commands (:data:`ee.commands.COMMANDS`, where each is described once,
for the command line and for MCP alike), and the decisions of the review queue, which an agent may not take.

``ee mcp serve`` lists these and answers them through the workspace façade (:mod:`ee.mcp.invoke`);
``ee mcp manifest`` prints them (through :mod:`ee.mcp.mapping`, which turns a command into an input schema
and shows the equivalent command line). Nothing here imports ``mcp``.
"""

from __future__ import annotations

from ee.commands import CANDIDATE_ID, COMMANDS, Command

# Only a person accepts, rejects or snoozes a candidate: an agent's call is a refusal that says so.
REFUSED = tuple(
    Command(
        f"curate_{verb}",
        ("curate", verb),
        f"{verb.capitalize()} a review candidate (a person only)",
        f"Only a person may {verb} a review candidate: an agent's call is refused with exit 6 "
        "(policy_denied). Ask the person to run `ee curate list` and decide.",
        (CANDIDATE_ID,),
        read_only=False,
    )
    for verb in ("accept", "reject", "snooze")
)

TOOLS: tuple[Command, ...] = (*COMMANDS.values(), *REFUSED)
