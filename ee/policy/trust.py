"""The trust table of DESIGN.md §5: where a memory came from decides how much ee believes it at first
and how a context pack presents it.

| trust class          | initial confidence | pack posture     | human |
|----------------------|-------------------:|------------------|-------|
| human_explicit       | 0.85               | authoritative    | yes   |
| peer_human_attested  | 0.75               | authoritative    | yes   |
| agent_validated      | 0.65               | authoritative    | no    |
| agent_assertion      | 0.50               | advisory         | no    |
| cass_evidence        | 0.45               | advisory         | no    |
| legacy_import        | 0.30               | legacy_evidence  | no    |

``rank`` counts from the strongest class: ``rank("human_explicit") == 0`` and a larger rank means less trust,
so ``at_least(cls, min_cls)`` is ``rank(cls) <= rank(min_cls)``.

Every function raises :class:`UnknownTrustClass` (a ``ValueError`` that is also an ee usage error, so the CLI
reports it with exit code 2) for a name not in the table; the message lists the allowed names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from ee.errors import PolicyError, UsageError
from ee.schemas import is_utf8
from ee.values import TRUST_CLASSES

Posture = Literal["authoritative", "advisory", "legacy_evidence"]


_INITIAL: dict[str, float] = {
    "human_explicit": 0.85,
    "peer_human_attested": 0.75,
    "agent_validated": 0.65,
    "agent_assertion": 0.50,
    "cass_evidence": 0.45,
    "legacy_import": 0.30,
}

_POSTURE: dict[str, Posture] = {
    "human_explicit": "authoritative",
    "peer_human_attested": "authoritative",
    "agent_validated": "authoritative",
    "agent_assertion": "advisory",
    "cass_evidence": "advisory",
    "legacy_import": "legacy_evidence",
}

_HUMAN: frozenset[str] = frozenset({"human_explicit", "peer_human_attested"})


class UnknownTrustClass(UsageError, ValueError):
    """A trust class name that is not in the table."""

    code = "unknown_trust_class"


def _check(cls: str) -> str:
    if cls not in _INITIAL:
        allowed = ", ".join(TRUST_CLASSES)
        raise UnknownTrustClass(
            f"unknown trust class {cls!r}; expected one of: {allowed}",
            hint=f"use one of: {allowed}",
            details={"value": cls, "allowed": list(TRUST_CLASSES)},
        )
    return cls


def initial_confidence(cls: str) -> float:
    """The prior confidence a new memory of this class starts with, e.g. 0.85 for ``human_explicit``."""
    return _INITIAL[_check(cls)]


def posture(cls: str) -> Posture:
    """How a pack presents memories of this class: ``authoritative``, ``advisory`` or ``legacy_evidence``."""
    return _POSTURE[_check(cls)]


def rank(cls: str) -> int:
    """Position in :data:`TRUST_CLASSES`: 0 for the strongest class, 5 for ``legacy_import``."""
    return TRUST_CLASSES.index(_check(cls))


def at_least(cls: str, min_cls: str) -> bool:
    """True when ``cls`` is as trusted as ``min_cls`` or more (``trust.minClass`` in ee.query.v1)."""
    return rank(cls) <= rank(min_cls)


AGENT_CEILING = "agent_assertion"
"""The strongest class an agent's own write can give a memory: trust is decided by ee, not claimed."""


def capped(cls: str, by_agent: bool) -> str:
    """``cls``, or :data:`AGENT_CEILING` when an agent wrote the memory and ``cls`` claims more than that.

    An agent's import or hand-written file may say ``trust: agent_validated`` or ``human_explicit``; only
    a person's explicit review (``ee memory trust``) raises a memory above what its writer may claim.
    A weaker claim (``cass_evidence``, ``legacy_import``) is kept.
    """
    if by_agent and rank(cls) < rank(AGENT_CEILING):
        return AGENT_CEILING
    return cls


def is_human(cls: str) -> bool:
    """True for the classes a person wrote or confirmed (``human_explicit``, ``peer_human_attested``)."""
    return _check(cls) in _HUMAN


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is writing: a person, or an agent by name."""

    agent: str | None = None

    def __post_init__(self) -> None:
        # The name reaches commit trailers, events files, history and search output: a field like any other.
        if self.agent is not None:
            from ee.policy.secrets import guard

            guard(
                {"agent": self.agent},
                what="the agent name",
                repair="name the agent with a short word, e.g. 'codex'",
            )

    @classmethod
    def from_env(cls, agent: str | None = None) -> Actor:
        name = agent if agent is not None else os.environ.get("EE_AGENT") or None
        if name is not None and (not name.strip() or any(c in name for c in "\n\r\0") or not is_utf8(name)):
            given = "" if agent is not None else " ($EE_AGENT)"
            raise UsageError(
                f"agent name {name!r}{given} is not usable",
                "use a short UTF-8 name such as 'codex'",
            )
        return cls(agent=name.strip() if name else None)

    @property
    def label(self) -> str:
        return f"agent:{self.agent}" if self.agent else "human"

    @property
    def trust(self) -> str:
        return "agent_assertion" if self.agent else "human_explicit"


# ------------------------------------------------------------------------ who may change whose memory

HIDING_LINKS = frozenset({"supersedes"})
"""Link types that hide or demote their target (a superseded memory leaves packs)."""


def may_act_on(actor_trust: str, target_trust: str) -> bool:
    """The one rule for changing a memory: whoever hides, demotes, retires, re-tags or deletes a memory (or a
    memory whose link does) must be trusted at least as much as it. An agent (``agent_assertion``) may
    change an agent's memory, never a person's; a person may change any."""
    return rank(actor_trust) <= rank(target_trust)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A change ee refused to carry out for want of trust: what a person may accept later (review queue)."""

    op: str  # "forget", "expire", "tags", "link", "supersede", "outcome"
    target: str  # the memory id it would change
    actor: str  # "agent:codex"
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "target": self.target, "actor": self.actor, "arguments": dict(self.arguments)}


_VERBS = {
    "tags": "change the tags of",
    "link": "add a link to",
    "outcome": "report a demoting outcome on",
    "supersede": "supersede",
}
"""How a refusal names each proposed change (an op missing here is its own verb: forget, expire)."""


class NeedsPerson(PolicyError):
    """An agent's change to a memory more trusted than itself: refused (exit 6), ``proposal`` the change."""

    code = "needs_a_person"

    def __init__(self, proposal: Proposal, actor_trust: str, target_trust: str) -> None:
        super().__init__(
            f"{proposal.actor} may not {_VERBS.get(proposal.op, proposal.op)} {proposal.target}: it is "
            f"{target_trust}, the change "
            f"carries {actor_trust}, and only an equal or better may change it; nothing was changed",
            "a person must make this change (the same command without EE_AGENT or --agent), or first "
            "review the memory behind it (ee memory trust ID --class CLASS)",
            {"proposal": proposal.to_dict(), "actor_trust": actor_trust, "target_trust": target_trust},
        )
        self.proposal = proposal


def require_may_act_on(actor_trust: str, target_trust: str, proposal: Proposal) -> None:
    """Raise :class:`NeedsPerson` unless :func:`may_act_on`."""
    if not may_act_on(actor_trust, target_trust):
        raise NeedsPerson(proposal, actor_trust, target_trust)


def weaker(a: str, b: str) -> str:
    """The less trusted of two classes."""
    return a if rank(a) >= rank(b) else b
