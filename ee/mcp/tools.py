"""The one table of ee's MCP tools: what each is for, its parameters, and the command it mirrors.

``ee mcp serve`` lists these and answers them through the workspace façade (:mod:`ee.mcp.invoke`);
``ee mcp manifest`` prints them (through :mod:`ee.mcp.mapping`, which turns a row into an input schema
whose choices and defaults come from the mirrored command's click options, and shows the equivalent
command line). Nothing here imports ``mcp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# How one argument appears on the equivalent command line (the manifest's "cli" entry):
#   argument  the command's positional argument (placed after ``--``, so a leading '-' stays text)
#   option    ``--flag VALUE``
#   switch    ``--flag`` when true, nothing when false
#   repeat    ``--flag A --flag B`` for a list
#   comma     ``--flag A,B`` for a list
#   pairs     ``--flag KEY=VALUE`` per entry of an object
#   stdin     ``--flag -`` with the value as JSON on standard input
Style = Literal["argument", "option", "switch", "repeat", "comma", "pairs", "stdin"]

STRING: dict[str, Any] = {"type": "string", "minLength": 1}
STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string", "minLength": 1}}
INTEGER: dict[str, Any] = {"type": "integer"}
NUMBER: dict[str, Any] = {"type": "number"}
TAG_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string", "pattern": "^[^,]+$"}}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
QUOTAS: dict[str, Any] = {"type": "object", "additionalProperties": {"type": ["number", "string", "boolean"]}}


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    style: Style
    schema: dict[str, Any]
    description: str
    flag: str = ""  # the CLI option ("--mode"); empty for the positional argument
    required: bool = False
    document: str = ""  # a shipped schema id the value must follow (embedded in the input schema)


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    command: tuple[str, ...]  # ("memory", "show") for `ee memory show`
    title: str
    description: str
    params: tuple[Param, ...]
    read_only: bool = True


MEMORY_ID = Param(
    "memory_id",
    "argument",
    STRING,
    "The memory's id (mem_…), as returned by search or context.",
    required=True,
)
AS_OF = Param(
    "as_of",
    "option",
    STRING,
    "Answer as the store was at this time (RFC 3339) or git commit-ish (HEAD~5, a tag).",
    flag="--as-of",
)
AGENT = Param(
    "agent",
    "option",
    STRING,
    "Your agent name, recorded as the actor (default: the server's --agent, else the MCP client's "
    "name). Agent-written memories start with trust agent_assertion.",
    flag="--agent",
)
TAGS_ALL = Param("tags", "repeat", STRINGS, "Only memories carrying every one of these tags.", flag="--tag")
EXPLAIN = Param(
    "explain", "switch", BOOLEAN, "Add the full scoring trace and standing to each result.", flag="--explain"
)
FIELDS = Param("fields", "option", {"type": "string"}, "How much of each memory to return.", flag="--fields")
MODE = Param(
    "mode",
    "option",
    {"type": "string"},
    "hybrid (words + meaning), lexical (words), semantic (meaning) or exact (literal phrase).",
    flag="--mode",
)
SPEED = Param(
    "speed",
    "option",
    {"type": "string"},
    "instant (lexical only, fastest), default, or quality (larger candidate pools).",
    flag="--speed",
)


def query_document(what: str) -> Param:
    return Param(
        "query",
        "stdin",
        {"type": "object"},
        f"A full ee.query.v1 document instead of {what} (plain words here are taken as the {what}): "
        "filters over frontmatter, tags require/requireAny/exclude, time window, asOf, trust, temporal "
        "validity, graph expansion from seed memories, budget, pagination cursor. Give either this or "
        f"{what}, not both; the other arguments given override the document's settings.",
        flag="--query-file",
        document="ee.query.v1",
    )


TOOLS: tuple[Tool, ...] = (
    Tool(
        "context",
        ("context",),
        "Context pack for a task",
        "Call this first when you start a task (a bug, a feature, a review, a refactor): describe the task "
        "in a sentence and get back the project's memories that matter for it — procedural rules, decisions, "
        "known failures and anti-patterns, evidence — as one token-budgeted pack to keep in mind while you "
        "work. Returns the ee.response.v1 envelope; data holds the pack: sections of items (each with the "
        "memory's text, id, provenance and why it was chosen), the candidates left out and why, counts and "
        "a pack_hash. Authoritative items are rules to follow; advisory ones are hints to check.",
        (
            Param("task", "argument", STRING, "What you are about to do, in plain words."),
            query_document("task"),
            Param(
                "max_tokens",
                "option",
                INTEGER,
                "Token budget of the pack (default 4000).",
                flag="--max-tokens",
            ),
            Param(
                "profile",
                "option",
                {"type": "string"},
                "Section quotas and diversity: compact for a short pack, balanced (default), thorough or "
                "wide for more, submodular for maximum coverage, custom with quota.",
                flag="--profile",
            ),
            Param(
                "quota",
                "pairs",
                QUOTAS,
                'Custom-profile settings, e.g. {"procedural": 0.5} (implies profile custom).',
                flag="--quota",
            ),
            MODE,
            SPEED,
            TAGS_ALL,
            FIELDS,
            EXPLAIN,
            AS_OF,
        ),
    ),
    Tool(
        "search",
        ("search",),
        "Search memories",
        "Look up memories when you need a specific fact, command, convention, decision or past failure "
        "(e.g. 'how do we run the integration tests', 'why did we drop Redis'). Give text plus options, or "
        "query with a full ee.query.v1 document for precise filters. Returns the ee.response.v1 envelope; "
        "data.hits is ranked best first, each hit with id, title, body, level, kind, tags, trust and "
        "posture, a one-line why, component scores (lexical, semantic, fused), standing factors and "
        "provenance (file, commit, author, date); data.truncated (with truncated_reason) says a budget or "
        "limit cut the page, and data.next_cursor pages on. Use context instead to prime "
        "a whole task.",
        (
            Param(
                "text", "argument", STRING, "What to look for: words, a question, or a phrase (exact mode)."
            ),
            query_document("text"),
            MODE,
            Param("limit", "option", INTEGER, "At most this many hits (default 100).", flag="--limit"),
            TAGS_ALL,
            Param("level", "option", {"type": "string"}, "Only memories of this level.", flag="--level"),
            Param(
                "kind",
                "option",
                STRING,
                "Only memories of this kind (rule, fact, decision, failure, …).",
                flag="--kind",
            ),
            SPEED,
            FIELDS,
            EXPLAIN,
            AS_OF,
        ),
    ),
    Tool(
        "remember",
        ("remember",),
        "Remember something",
        "Store one durable lesson for future sessions when you learn something worth keeping: a rule or "
        "convention of this codebase, a decision and its reason, a command that works, a failure and its "
        "cause. One self-contained statement per call; do not store secrets (they are refused) or "
        "transient chatter. Writes one Markdown file under memories/ in one git commit. Returns the "
        "ee.response.v1 envelope; data is the new memory (id, path, level, kind, tags, trust, confidence, "
        "body).",
        (
            Param(
                "text",
                "argument",
                STRING,
                "The memory itself, written so it makes sense on its own later.",
                required=True,
            ),
            Param(
                "level",
                "option",
                {"type": "string"},
                "procedural for how-to rules and commands, semantic for facts and decisions, episodic for "
                "what happened in one session, working for short-lived notes.",
                flag="--level",
            ),
            Param(
                "kind",
                "option",
                STRING,
                "rule, fact, decision, failure, command, convention, anti-pattern, risk, playbook-step, …",
                flag="--kind",
            ),
            Param("tags", "comma", TAG_LIST, 'Short topic tags, e.g. ["ci", "rust"].', flag="--tags"),
            Param(
                "confidence",
                "option",
                NUMBER,
                "Your prior confidence (default by trust class).",
                flag="--confidence",
            ),
            Param(
                "source",
                "repeat",
                STRINGS,
                "Provenance URIs (file://…, https://…, an issue).",
                flag="--source",
            ),
            Param("valid_from", "option", STRING, "Start of validity (RFC 3339).", flag="--valid-from"),
            Param("valid_to", "option", STRING, "End of validity (RFC 3339).", flag="--valid-to"),
            Param(
                "links",
                "repeat",
                STRINGS,
                "Links to other memories as TYPE:ID, e.g. supports:mem_….",
                flag="--link",
            ),
            Param("paths", "repeat", STRINGS, "Code paths (globs) this memory is about.", flag="--path"),
            AGENT,
            Param(
                "redact",
                "switch",
                BOOLEAN,
                "Store detected secrets as [REDACTED:<class>] instead of refusing the memory.",
                flag="--redact",
            ),
        ),
        read_only=False,
    ),
    Tool(
        "outcome",
        ("outcome",),
        "Report whether a memory helped",
        "After you acted on a memory, report what it did: helpful, harmful (wrong or misleading), "
        "confirmation, contradiction, stale, inaccurate or outdated. This moves its effective confidence "
        "(harmful weighs more than helpful) so future searches and packs rank it better or worse. Appends "
        "one feedback event in its own commit. Returns the ee.response.v1 envelope; data has the event, "
        "effective_confidence before and after, whether it was applied or held back, and the feedback "
        "counts.",
        (
            MEMORY_ID,
            Param(
                "signal",
                "option",
                {"type": "string"},
                "What the memory did for you.",
                flag="--signal",
                required=True,
            ),
            Param(
                "reason",
                "option",
                STRING,
                "One sentence on what happened (stored in the repository).",
                flag="--reason",
            ),
            AGENT,
        ),
        read_only=False,
    ),
    Tool(
        "why",
        ("why",),
        "Explain a memory's standing",
        "Explain why a memory ranks where it does before you rely on or dispute it: its standing "
        "(confidence, freshness, trust and posture), feedback, links, validity, injection flags and history; "
        "with query, also its rank for that query and the pack's decision about it. Returns the "
        "ee.response.v1 envelope with that explanation in data.",
        (
            MEMORY_ID,
            Param(
                "query",
                "option",
                STRING,
                "Also explain its rank and pack decision for this query text.",
                flag="--query",
            ),
            Param(
                "profile",
                "option",
                {"type": "string"},
                "The pack profile whose decision query reports (default balanced; needs query).",
                flag="--profile",
            ),
            AS_OF,
        ),
    ),
    Tool(
        "memory_show",
        ("memory", "show"),
        "Show one memory",
        "Read one memory in full when a search hit or pack item needs its complete text and fields. "
        "Returns the ee.response.v1 envelope; data is the memory (id, path, level, kind, tags, trust, "
        "confidence, validity, source, links, paths, body; with as_of also the commit it was read from).",
        (MEMORY_ID, AS_OF),
    ),
    Tool(
        "memory_list",
        ("memory", "list"),
        "List memories",
        "List memories by level, kind or tag (sorted by id) to survey what the store holds, e.g. every "
        "procedural rule or every memory tagged ci. Not ranked; use search to find by content. Returns the "
        "ee.response.v1 envelope; data has count and memories (full records); degraded lists files that "
        "could not be read.",
        (
            Param("level", "option", {"type": "string"}, "Only memories of this level.", flag="--level"),
            Param("kind", "option", STRING, "Only memories of this kind.", flag="--kind"),
            TAGS_ALL,
            Param("limit", "option", INTEGER, "At most this many memories.", flag="--limit"),
        ),
    ),
    Tool(
        "memory_history",
        ("memory", "history"),
        "A memory's history",
        "Every version of one memory from git, oldest to newest: commit, date, actor, message and the fields "
        "that changed. Use it to see who wrote or changed a memory and when. Returns the ee.response.v1 "
        "envelope; data has id and versions.",
        (MEMORY_ID,),
    ),
    Tool(
        "curate_list",
        ("curate", "list"),
        "List the review queue",
        "The candidates waiting for a person's review: duplicates, contradictions, updates, stale memories, "
        "agents' writes, proposed memories. Returns the ee.response.v1 envelope; data has count, by_type "
        "and candidates (id, type, subjects, title, reason, evidence, default_action, actions, proposed_by).",
        (Param("type", "option", {"type": "string"}, "Only candidates of this type.", flag="--type"),),
    ),
    Tool(
        "curate_show",
        ("curate", "show"),
        "Show a review candidate",
        "One candidate of the review queue: its evidence, its status (pending, accepted, rejected, snoozed) "
        "and exactly what accepting it would change (would_change: summary, files, a unified diff).",
        (
            Param("candidate_id", "argument", STRING, "The candidate's id (cand_…).", required=True),
            Param("action", "option", STRING, "Preview this action instead of the default.", flag="--action"),
        ),
    ),
    Tool(
        "curate_propose",
        ("curate", "propose"),
        "Propose a change for review",
        "Propose candidates for a person to review instead of changing the store yourself: a new memory "
        "(type session, with new_memory {body, kind, tags, derived_from}), or a duplicate, contradiction, "
        "update or stale memory (subjects: the memory ids). Each needs type, subjects, title and reason. "
        "Nothing changes until a person accepts it. Returns the candidates now pending.",
        (
            Param(
                "candidates",
                "stdin",
                {"type": "array", "items": {"type": "object"}, "minItems": 1},
                "The candidates, each {type, subjects, title, reason, evidence?, new_memory?}.",
                flag="--candidates",
                required=True,
            ),
            AGENT,
        ),
        read_only=False,
    ),
    *(
        Tool(
            f"curate_{verb}",
            ("curate", verb),
            f"{verb.capitalize()} a review candidate (a person only)",
            f"Only a person may {verb} a review candidate: an agent's call is refused with exit 6 "
            "(policy_denied). Ask the person to run `ee curate list` and decide.",
            (Param("candidate_id", "argument", STRING, "The candidate's id (cand_…).", required=True),),
            read_only=False,
        )
        for verb in ("accept", "reject", "snooze")
    ),
)


def find_tool(name: str) -> Tool | None:
    return next((tool for tool in TOOLS if tool.name == name), None)
