"""What each command takes, described once for every front end: :data:`COMMANDS`.

For each command (``ee <command>`` on the command line, the MCP tool of the same name) its arguments, each a
:class:`Param`: its kind (:data:`Kind`), allowed values, bounds, default and help. The click options
(:mod:`ee.cli.options`) and the MCP tools' input schemas (:mod:`ee.mcp.mapping`) are both generated from it,
so the allowed values live here, in the library, and neither front end can drift from the other; and
:func:`ee.operations.check` holds the arguments of an operation asked for by name to the same description.
Nothing here runs an operation (:mod:`ee.operations` does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from ee.values import (
    CANDIDATE_TYPES,
    FIELDS,
    LEVELS,
    MODES,
    PROFILES,
    SIGNALS,
    SPEEDS,
    TRUST_CLASSES,
)

# What an argument holds, and so how each front end takes it:
#   text     a string                        --flag VALUE (or the positional argument)
#   words    a string, on the command line   the positional argument, as several words (TASK…)
#   integer  an integer                      --flag N
#   number   a number                        --flag X
#   switch   true or false                   --flag when true
#   texts    a list of strings               --flag A --flag B
#   tags     a list of tags                  --flag A,B
#   pairs    an object of settings           --flag KEY=VALUE per entry
#   document a JSON document (``document``)  --flag FILE ('-': standard input)
#   records  a list of JSON objects          --flag FILE ('-': standard input)
Kind = Literal[
    "text", "words", "integer", "number", "switch", "texts", "tags", "pairs", "document", "records"
]


# What a value of each kind is, as an error message says it.
WANTED: dict[str, str] = {
    "text": "text",
    "words": "text",
    "integer": "a whole number",
    "number": "a number",
    "switch": "true or false",
    "texts": "a list of strings",
    "tags": "a list of strings",
    "pairs": "an object of settings",
    "document": "a JSON object",
    "records": "a list of JSON objects",
}

UNSET = ("switch", "texts", "tags", "records")  # kinds whose value not given is their own (false, empty)


@dataclass(frozen=True, slots=True)
class Param:
    """One argument of a command, as every front end offers it.

    ``name`` is the MCP property; ``dest`` the command function's keyword when that differs. ``help``
    is the line ``--help`` shows a person (None: no line); ``describe`` what an agent reads in the MCP
    tool's schema (default: ``help``). ``choices``, ``minimum``/``maximum`` and ``default`` are the
    allowed values both front ends enforce. ``document`` names a shipped schema the value must follow.
    """

    name: str
    kind: Kind
    help: str | None
    flag: str = ""  # "--mode"; empty for the positional argument
    describe: str = ""
    dest: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    default: str | int | float | None = None
    show_default: bool = False
    required: bool = False
    metavar: str | None = None
    document: str = ""

    @property
    def keyword(self) -> str:
        return self.dest or self.name

    def wanted(self) -> str:
        """What a value of this argument is, in words: ``a whole number of 1 or more``."""
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"{WANTED[self.kind]} between {low:g} and {high:g}"
        if low is not None:
            return f"{WANTED[self.kind]} of {low:g} or more"
        if high is not None:
            return f"{WANTED[self.kind]} of {high:g} or less"
        return WANTED[self.kind]

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is of this argument's kind and within its bounds (not its choices)."""
        if self.kind in ("integer", "number"):
            whole = self.kind == "integer"
            if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
                return False
            if isinstance(value, float) and not math.isfinite(value):  # (NaN compares false with any bound)
                return False
            return (self.minimum is None or value >= self.minimum) and (
                self.maximum is None or value <= self.maximum
            )
        if self.kind == "switch":
            return isinstance(value, bool)
        if self.kind in ("texts", "tags"):
            return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
        if self.kind == "pairs":  # (each setting's own value is its owner's to check: the pack's quotas)
            return isinstance(value, dict) and all(isinstance(key, str) for key in value)
        if self.kind == "records":
            return isinstance(value, list | tuple) and all(isinstance(item, dict) for item in value)
        if self.kind == "document":
            return isinstance(value, dict)
        return isinstance(value, str)  # text, words

    @property
    def description(self) -> str:
        return self.describe or self.help or ""


@dataclass(frozen=True, slots=True)
class Command:
    """An operation as the front ends offer it: ``ee <path…>`` on the command line, the MCP tool
    ``name`` (``title``/``description``: what an agent reads), and its arguments."""

    name: str
    path: tuple[str, ...]  # ("memory", "show") for `ee memory show`
    title: str
    description: str
    params: tuple[Param, ...]
    read_only: bool = True

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)


MEMORY_ID = Param(
    "memory_id",
    "text",
    None,
    describe="The memory's id (mem_…), as returned by search or context.",
    required=True,
)
CANDIDATE_ID = Param("candidate_id", "text", None, describe="The candidate's id (cand_…).", required=True)
AS_OF = Param(
    "as_of",
    "text",
    None,
    flag="--as-of",
    metavar="TIME|COMMIT",
    describe="Answer as the store was at this time (RFC 3339) or git commit-ish (HEAD~5, a tag).",
)
AGENT = Param(
    "agent",
    "text",
    None,
    flag="--agent",
    describe="Your agent name, recorded as the actor (default: the server's --agent, else the MCP client's "
    "name). Agent-written memories start with trust agent_assertion.",
)
TAGS_ALL = Param(
    "tags",
    "texts",
    "Only memories with this tag (repeatable: all required).",
    flag="--tag",
    describe="Only memories carrying every one of these tags.",
)
EXPLAIN = Param(
    "explain",
    "switch",
    None,
    flag="--explain",
    describe="Add the full scoring trace and standing to each result.",
)
FIELDS_PARAM = Param(
    "fields", "text", None, flag="--fields", choices=FIELDS, describe="How much of each memory to return."
)
MODE = Param(
    "mode",
    "text",
    "How to rank (default hybrid).",
    flag="--mode",
    choices=MODES,
    describe="hybrid (words + meaning), lexical (words), semantic (meaning) or exact (literal phrase).",
)
SPEED = Param(
    "speed",
    "text",
    None,
    flag="--speed",
    choices=SPEEDS,
    describe="instant (lexical only, fastest), default, or quality (larger candidate pools).",
)
LEVEL = Param("level", "text", None, flag="--level", choices=LEVELS, describe="Only memories of this level.")
MIN_RELEVANCE = Param(
    "min_relevance",
    "number",
    "Drop hits whose calibrated relevance is below R ([query] min_relevance, 0.8; 0 = off).",
    flag="--min-relevance",
    metavar="R",
    minimum=0.0,
    maximum=1.0,
    describe="Drop results whose calibrated relevance is below this (default: the workspace's [query] "
    "min_relevance, 0.8; 0 turns the floor off).",
)


def query_document(what: str, shown: str) -> Param:
    return Param(
        "query",
        "document",
        shown,
        flag="--query-file",
        dest="query_file",
        metavar="FILE",
        describe=f"A full ee.query.v1 document instead of {what} (plain words here are taken as the {what}): "
        "filters over frontmatter, tags require/requireAny/exclude, time window, asOf, trust, temporal "
        "validity, graph expansion from seed memories, budget, pagination cursor. Give either this or "
        f"{what}, not both; the other arguments given override the document's settings.",
        document="ee.query.v1",
    )


COMMANDS: dict[str, Command] = {
    command.name: command
    for command in (
        Command(
            "context",
            ("context",),
            "Context pack for a task",
            "Call this first when you start a task (a bug, a feature, a review, a refactor): describe the "
            "task in a sentence and get back the project's memories that matter for it — procedural rules, "
            "decisions, known failures and anti-patterns, evidence — as one token-budgeted pack to keep in "
            "mind while you work. Returns the ee.response.v1 envelope; data holds the pack: sections of "
            "items (each with the memory's text, id, provenance and why it was chosen), the candidates left "
            "out and why, counts and a pack_hash. Authoritative items are rules to follow; advisory ones "
            "are hints to check.",
            (
                Param("task", "words", None, describe="What you are about to do, in plain words."),
                query_document(
                    "task", "An ee.query.v1 document ('-' reads stdin) instead of TASK; options override it."
                ),
                Param(
                    "max_tokens",
                    "integer",
                    "Token budget of the pack (default 4000).",
                    flag="--max-tokens",
                    minimum=1,
                ),
                Param(
                    "profile",
                    "text",
                    "Section quotas and diversity (default balanced).",
                    flag="--profile",
                    choices=PROFILES,
                    describe="Section quotas and diversity: compact for a short pack, balanced (default), "
                    "thorough or wide for more, submodular for maximum coverage, custom with quota.",
                ),
                Param(
                    "quota",
                    "pairs",
                    "A custom-profile setting, e.g. procedural=0.5 (repeatable; implies --profile custom).",
                    flag="--quota",
                    dest="quotas",
                    metavar="KEY=VALUE",
                    describe='Custom-profile settings, e.g. {"procedural": 0.5} (implies profile custom).',
                ),
                MODE,
                SPEED,
                TAGS_ALL,
                FIELDS_PARAM,
                replace(EXPLAIN, help="Add each item's selection trace and standing."),
                replace(AS_OF, help="Pack the memories as they were then."),
                MIN_RELEVANCE,
                Param(
                    "for_staged",
                    "switch",
                    "Pack for the staged change (the memories about its files).",
                    flag="--for-staged",
                    describe="Pack for the change staged in git (the memories about its files and added"
                    " code), not a task.",
                ),
                Param(
                    "for_paths",
                    "switch",
                    "Pack for the paths given as arguments (TASK… are paths).",
                    flag="--for-paths",
                    describe="The task is file paths (space-separated, repository-relative): pack the"
                    " memories about those files.",
                ),
                Param(
                    "for_branch",
                    "switch",
                    "Pack for the branch (its name and recent commit subjects).",
                    flag="--for-branch",
                    describe="Pack for the current git branch (its name and recent commit subjects), "
                    "instead of a task.",
                ),
                Param(
                    "for_session",
                    "switch",
                    "Pack for a session's start: the project's rules, conventions, commands and "
                    "anti-patterns, on any branch (no relevance floor unless --min-relevance).",
                    flag="--for-session",
                    describe="Pack for a session's start: the project's rules, conventions, commands and "
                    "anti-patterns (no task; no relevance floor unless min_relevance).",
                ),
            ),
        ),
        Command(
            "search",
            ("search",),
            "Search memories",
            "Look up memories when you need a specific fact, command, convention, decision or past failure "
            "(e.g. 'how do we run the integration tests', 'why did we drop Redis'). Give text plus options, "
            "or query with a full ee.query.v1 document for precise filters. Returns the ee.response.v1 "
            "envelope; data.hits is ranked best first, each hit with id, title, body, level, kind, tags, "
            "trust and posture, a one-line why, component scores (lexical, semantic, fused), standing "
            "factors and provenance (file, commit, author, date); data.truncated (with truncated_reason) "
            "says a budget or limit cut the page, and data.next_cursor pages on. Use context instead to "
            "prime a whole task.",
            (
                Param(
                    "text",
                    "text",
                    None,
                    describe="What to look for: words, a question, or a phrase (exact mode).",
                ),
                query_document("text", "An ee.query.v1 document ('-' reads stdin); options override it."),
                MODE,
                Param(
                    "limit",
                    "integer",
                    "At most this many hits (default 100).",
                    flag="--limit",
                    minimum=1,
                ),
                TAGS_ALL,
                LEVEL,
                Param(
                    "kind",
                    "text",
                    None,
                    flag="--kind",
                    describe="Only memories of this kind (rule, fact, decision, failure, …).",
                ),
                SPEED,
                FIELDS_PARAM,
                replace(EXPLAIN, help="Add matched terms and the full standing to each hit."),
                replace(AS_OF, help="Search the memories as they were then."),
                MIN_RELEVANCE,
            ),
        ),
        Command(
            "remember",
            ("remember",),
            "Remember something",
            "Store one durable lesson for future sessions when you learn something worth keeping: a rule or "
            "convention of this codebase, a decision and its reason, a command that works, a failure and "
            "its cause. One self-contained statement per call; do not store secrets (they are refused) or "
            "transient chatter. Writes one Markdown file under memories/ in one git commit. Returns the "
            "ee.response.v1 envelope; data is the new memory (id, path, level, kind, tags, trust, "
            "confidence, body).",
            (
                Param(
                    "text",
                    "text",
                    None,
                    describe="The memory itself, written so it makes sense on its own later.",
                    required=True,
                ),
                Param(
                    "level",
                    "text",
                    "Memory level.",
                    flag="--level",
                    choices=LEVELS,
                    default="semantic",
                    show_default=True,
                    describe="procedural for how-to rules and commands, semantic for facts and decisions, "
                    "episodic for what happened in one session, working for short-lived notes.",
                ),
                Param(
                    "kind",
                    "text",
                    "rule, fact, decision, failure, command, …",
                    flag="--kind",
                    default="fact",
                    show_default=True,
                    describe="rule, fact, decision, failure, command, convention, anti-pattern, risk, "
                    "playbook-step, …",
                ),
                Param(
                    "tags",
                    "tags",
                    "Comma-separated tags, e.g. ci,rust.",
                    flag="--tags",
                    default="",
                    describe='Short topic tags, e.g. ["ci", "rust"].',
                ),
                Param(
                    "confidence",
                    "number",
                    "Prior confidence (default by trust: 0.85 / 0.5).",
                    flag="--confidence",
                    minimum=0,
                    maximum=1,
                    describe="Your prior confidence (default by trust class).",
                ),
                Param(
                    "source",
                    "texts",
                    "Provenance URI (repeatable).",
                    flag="--source",
                    metavar="URI",
                    describe="Provenance URIs (file://…, https://…, an issue).",
                ),
                Param(
                    "valid_from", "text", "Start of validity (RFC 3339).", flag="--valid-from", metavar="TIME"
                ),
                Param("valid_to", "text", "End of validity (RFC 3339).", flag="--valid-to", metavar="TIME"),
                Param(
                    "links",
                    "texts",
                    "Link to another memory (repeatable).",
                    flag="--link",
                    metavar="TYPE:ID",
                    describe="Links to other memories as TYPE:ID, e.g. supports:mem_….",
                ),
                Param(
                    "paths",
                    "texts",
                    "Code path this memory is about (repeatable).",
                    flag="--path",
                    metavar="GLOB",
                    describe="Code paths (globs) this memory is about.",
                ),
                replace(AGENT, help="Write as this agent (default: $EE_AGENT; otherwise a human)."),
                Param(
                    "redact",
                    "switch",
                    "Store secrets as [REDACTED:<class>] instead of refusing.",
                    flag="--redact",
                    describe="Store detected secrets as [REDACTED:<class>] instead of refusing the memory.",
                ),
            ),
            read_only=False,
        ),
        Command(
            "outcome",
            ("outcome",),
            "Report whether a memory helped",
            "After you acted on a memory, report what it did: helpful, harmful (wrong or misleading), "
            "confirmation, contradiction, stale, inaccurate or outdated. This moves its effective "
            "confidence (harmful weighs more than helpful) so future searches and packs rank it better or "
            "worse. Appends one feedback event in its own commit. Returns the ee.response.v1 envelope; data "
            "has the event, effective_confidence before and after, whether it was applied or held back, and "
            "the feedback counts.",
            (
                MEMORY_ID,
                Param(
                    "signal",
                    "text",
                    "What the memory did for you.",
                    flag="--signal",
                    choices=SIGNALS,
                    required=True,
                ),
                Param(
                    "reason",
                    "text",
                    "A sentence on what happened (stored in the repository).",
                    flag="--reason",
                    metavar="TEXT",
                    describe="One sentence on what happened (stored in the repository).",
                ),
                replace(AGENT, help="Record as this agent (default: $EE_AGENT, else human)."),
            ),
            read_only=False,
        ),
        Command(
            "why",
            ("why",),
            "Explain a memory's standing",
            "Explain why a memory ranks where it does before you rely on or dispute it: its standing "
            "(confidence, freshness, trust and posture), feedback, links, validity, injection flags and "
            "history; with query, also its rank for that query and the pack's decision about it. Returns the "
            "ee.response.v1 envelope with that explanation in data.",
            (
                MEMORY_ID,
                Param(
                    "query",
                    "text",
                    "Explain its rank (and pack decision) for this query.",
                    flag="--query",
                    dest="query_text",
                    metavar="TEXT",
                    describe="Also explain its rank and pack decision for this query text.",
                ),
                Param(
                    "profile",
                    "text",
                    "The pack profile whose decision --query reports (default balanced; needs --query).",
                    flag="--profile",
                    choices=PROFILES,
                    describe="The pack profile whose decision query reports (default balanced; needs query).",
                ),
                replace(AS_OF, help="Explain the memory as it stood then."),
            ),
        ),
        Command(
            "memory_show",
            ("memory", "show"),
            "Show one memory",
            "Read one memory in full when a search hit or pack item needs its complete text and fields. "
            "Returns the ee.response.v1 envelope; data is the memory (id, path, level, kind, tags, trust, "
            "confidence, validity, source, links, paths, body; with as_of also the commit it was read from).",
            (MEMORY_ID, replace(AS_OF, help="Show the memory as it was at a time or commit.")),
        ),
        Command(
            "memory_list",
            ("memory", "list"),
            "List memories",
            "List memories by level, kind or tag (sorted by id) to survey what the store holds, e.g. every "
            "procedural rule or every memory tagged ci. Not ranked; use search to find by content. Returns "
            "the ee.response.v1 envelope; data has count and memories (full records); degraded lists files "
            "that could not be read.",
            (
                replace(LEVEL, help="Only this level."),
                Param(
                    "kind",
                    "text",
                    "Only this kind (rule, fact, decision, failure, …).",
                    flag="--kind",
                    describe="Only memories of this kind.",
                ),
                replace(TAGS_ALL, help="Only memories with this tag (repeatable: all must match)."),
                Param("limit", "integer", "At most this many memories.", flag="--limit", minimum=1),
                Param(
                    "agent",
                    "text",
                    "Only memories this agent wrote (not reviewed since).",
                    flag="--agent",
                    metavar="NAME",
                    describe="Only memories this agent wrote and no person has reviewed since.",
                ),
                Param(
                    "trust",
                    "text",
                    "Only memories ee grants this trust class.",
                    flag="--trust",
                    choices=TRUST_CLASSES,
                ),
                Param(
                    "since",
                    "text",
                    "Only memories created at or after TIME (RFC 3339).",
                    flag="--since",
                    metavar="TIME",
                ),
                Param(
                    "quarantined",
                    "switch",
                    "Only memories the injection guard quarantines.",
                    flag="--quarantined",
                    describe="Only memories the injection guard quarantines (instruction-like text from an "
                    "agent or another non-human source).",
                ),
            ),
        ),
        Command(
            "memory_history",
            ("memory", "history"),
            "A memory's history",
            "Every version of one memory from git, oldest to newest: commit, date, actor, message and the "
            "fields that changed. Use it to see who wrote or changed a memory and when. Returns the "
            "ee.response.v1 envelope; data has id and versions.",
            (MEMORY_ID,),
        ),
        Command(
            "curate_list",
            ("curate", "list"),
            "List the review queue",
            "The candidates waiting for a person's review: duplicates, contradictions, updates, stale "
            "memories, agents' writes, proposed memories. Returns the ee.response.v1 envelope; data has "
            "count, by_type and candidates (id, type, subjects, title, reason, evidence, default_action, "
            "actions, proposed_by).",
            (
                Param(
                    "type",
                    "text",
                    "Only candidates of this type.",
                    flag="--type",
                    dest="kind",
                    choices=CANDIDATE_TYPES,
                ),
            ),
        ),
        Command(
            "curate_show",
            ("curate", "show"),
            "Show a review candidate",
            "One candidate of the review queue: its evidence, its status (pending, accepted, rejected, "
            "snoozed) and exactly what accepting it would change (would_change: summary, files, a unified "
            "diff).",
            (
                CANDIDATE_ID,
                Param(
                    "action",
                    "text",
                    "Preview this action instead of the default one.",
                    flag="--action",
                    describe="Preview this action instead of the default.",
                ),
            ),
        ),
        Command(
            "curate_propose",
            ("curate", "propose"),
            "Propose a change for review",
            "Propose candidates for a person to review instead of changing the store yourself: a new memory "
            "(type session, with new_memory {body, kind, tags, derived_from}), or a duplicate, "
            "contradiction, update or stale memory (subjects: the memory ids). Each needs type, subjects, "
            "title and reason. Nothing changes until a person accepts it. Returns the candidates now "
            "pending.",
            (
                Param(
                    "candidates",
                    "records",
                    "A JSON file of candidates (a list, or one object); - reads stdin.",
                    flag="--candidates",
                    dest="file",
                    describe="The candidates, each {type, subjects, title, reason, evidence?, new_memory?}.",
                    required=True,
                ),
                replace(AGENT, help="Act as this agent (default: $EE_AGENT, else human)."),
            ),
            read_only=False,
        ),
        Command(
            "curate_scan",
            ("curate", "scan"),
            "Look for what to review",
            "Look over the whole store for what a person should review: duplicates and near-duplicates, "
            "contradictions, updates, memories whose paths or cited code changed, expired, harmful or unused "
            "memories, agents' unreviewed writes; with docs, also rules and commands the repository's docs "
            "state (AGENTS.md, CLAUDE.md, README, …). Changes no memory: the candidates wait for a person; "
            "an undecided proposal whose text the store now holds is retired. "
            "Returns the ee.response.v1 envelope; data has count, by_type, candidates and retired.",
            (
                Param(
                    "docs",
                    "switch",
                    "Also propose memories from AGENTS.md, CLAUDE.md, README, ….",
                    flag="--docs",
                    describe="Also propose memories from the usual docs (AGENTS.md, CLAUDE.md, "
                    "CONTRIBUTING.md, README, …), each with its file:line.",
                ),
            ),
            read_only=False,
        ),
        Command(
            "import_docs",
            ("import", "docs"),
            "Propose memories from docs",
            "Propose the rules, commands and conventions that docs of this repository already state "
            "(AGENTS.md, CONTRIBUTING.md, docs/style.md, …) as candidate memories, each with its file:line, "
            "for a person to review. Nothing is written to the store: a person accepts the ones worth "
            "keeping. A file that is missing, outside the repository, a link, binary or too large is refused "
            "and nothing is proposed. Returns the ee.response.v1 envelope; data has files, found, count, "
            "by_type and candidates (each with new_memory: body, kind, tags, source).",
            (
                Param(
                    "files",
                    "texts",
                    None,
                    describe="Markdown or text files of the repository, relative to its top folder (or "
                    'absolute), e.g. ["AGENTS.md", "docs/style.md"].',
                    required=True,
                ),
            ),
            read_only=False,
        ),
    )
}
