"""The allowed values of ee's fields and arguments: levels, kinds, trust classes, link types, query modes,
speeds, output fields, pack profiles, formats, review candidate types, outcome signals, the git hooks whose
staged change ee checks, and the frontmatter keys ee knows.

Tuples of names only, kept apart from the dataclasses of :mod:`ee.model`: the command line's argument
table (:mod:`ee.commands`) offers these values, and a served ``ee search`` (a fresh process that sends
its query to the warm server) need not build the data classes to say which values it accepts.
"""

from __future__ import annotations

LEVELS = ("working", "episodic", "semantic", "procedural")
KINDS = (
    "rule",
    "fact",
    "decision",
    "failure",
    "command",
    "convention",
    "anti-pattern",
    "risk",
    "playbook-step",
    "preference",
    "observation",
    "artifact",
    "question",
)
TRUST_CLASSES = (  # strongest first (DESIGN.md §5; the rules of each are in ee.policy.trust)
    "human_explicit",
    "peer_human_attested",
    "agent_validated",
    "agent_assertion",
    "cass_evidence",
    "legacy_import",
)
LINK_TYPES = ("supports", "contradicts", "derived_from", "supersedes", "related", "co_tag", "co_mention")

# What a query may ask for (ee.query.v1's query.mode, budget speed, output.fields, the pack profile), and the
# formats an answer can be rendered in: the allowed values every front end offers.
MODES = ("hybrid", "lexical", "semantic", "exact")
SPEEDS = ("instant", "default", "quality")
FIELDS = ("minimal", "summary", "standard", "full")
PROFILES = ("compact", "balanced", "grounding", "orientation", "wide", "thorough", "submodular", "custom")
CHECKED_HOOKS = ("pre-commit", "prepare-commit-msg")  # the git hooks whose staged change ee checks
FORMATS = ("human", "json", "jsonl", "compact", "markdown", "toon", "hook")
# The review queue's candidate types (ee.curate.model: each one's actions; `ee curate list --type`).
CANDIDATE_TYPES = (
    "duplicate",
    "merge",
    "contradiction",
    "update",
    "stale-path",
    "stale-citation",
    "expired",
    "harmful",
    "unused",
    "agent-write",
    "session",
    "docs",
)

# The frontmatter keys ee knows, in the order ee writes them.
KNOWN_KEYS = (
    "id",
    "level",
    "kind",
    "tags",
    "trust",
    "confidence",
    "utility",
    "importance",
    "created",
    "valid_from",
    "valid_to",
    "source",
    "links",
    "paths",
    "redacted",
)

# The outcome signals of ``ee outcome`` (how each moves confidence: ee.policy.feedback).
SIGNALS: tuple[str, ...] = (
    "helpful",
    "harmful",
    "confirmation",
    "contradiction",
    "stale",
    "inaccurate",
    "outdated",
)
