"""Pack sections and profiles: which kinds go where, and how much of the budget each section may take.

A profile's ``shares`` are per-section caps, as fractions of the item budget (``max_tokens`` minus the
pack's title line). They may add up to more than 1: a cap bounds a section, it does not reserve room.
``advisory_share`` caps the advisory items (agent-written, imported) the same way. When ``spill`` is on,
budget the capped sections left unused goes, in a second pass, to the best remaining candidates of any
section (the advisory cap still holds).

The ``custom`` profile starts from ``base`` (default ``balanced``) and takes its settings from
``[pack.custom]`` in ``.ee/config.toml`` and from ``output.quotas`` in a query document (the document
wins), e.g.::

    [pack.custom]
    base = "compact"
    procedural = 0.6        # any section name: its share of the item budget, 0..1
    evidence = 0.0
    advisory_share = 0.2
    max_item_tokens = 200
    diversity = "facility_location"   # or "mmr"
    mmr_lambda = 0.6
    spill = false

There is no per-profile floor: what is relevant enough to pack is the calibrated relevance floor
(``[query] min_relevance``, ``--min-relevance``; see ee.query.relevance), the same for every profile.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ee import values
from ee.errors import ConfigError, UsageError

SECTIONS: tuple[str, ...] = ("procedural", "decisions", "failures", "evidence", "artifacts")
SECTION_TITLES: dict[str, str] = {
    "procedural": "Procedural rules",
    "decisions": "Decisions",
    "failures": "Failures, anti-patterns and risks",
    "evidence": "Evidence",
    "artifacts": "Artifacts",
    "sessions": "Session evidence (from agent transcripts)",  # ee.sessions: not a memory section
}
SECTION_OF_KIND: dict[str, str] = {
    "rule": "procedural",
    "convention": "procedural",
    "command": "procedural",
    "playbook-step": "procedural",
    "preference": "procedural",
    "decision": "decisions",
    "failure": "failures",
    "anti-pattern": "failures",
    "risk": "failures",
    "fact": "evidence",
    "observation": "evidence",
    "question": "evidence",
    "artifact": "artifacts",
}
DIVERSITY = ("mmr", "facility_location")


def section_of(kind: str) -> str:
    """The section a memory kind belongs to; a kind ee does not know counts as evidence."""
    return SECTION_OF_KIND.get(kind, "evidence")


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    purpose: str
    shares: Mapping[str, float]
    advisory_share: float = 1.0
    max_item_tokens: int = 300
    diversity: str = "mmr"
    mmr_lambda: float = 0.7
    spill: bool = True
    cost_exponent: float = 0.5  # facility location: gain / tokens ** cost_exponent
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "purpose": self.purpose,
            "shares": {s: self.shares.get(s, 0.0) for s in SECTIONS},
            "advisory_share": self.advisory_share,
            "max_item_tokens": self.max_item_tokens,
            "diversity": self.diversity,
            "spill": self.spill,
        }
        if self.diversity == "mmr":
            out["mmr_lambda"] = self.mmr_lambda
        else:
            out["cost_exponent"] = self.cost_exponent
        return out


def _shares(
    procedural: float, decisions: float, failures: float, evidence: float, artifacts: float
) -> dict[str, float]:
    return dict(zip(SECTIONS, (procedural, decisions, failures, evidence, artifacts), strict=True))


PROFILES: dict[str, Profile] = {
    "compact": Profile(
        "compact",
        "tight prompts and hooks: rules and known failures first, short items, no spill",
        _shares(0.45, 0.15, 0.30, 0.10, 0.0),
        advisory_share=0.3,
        max_item_tokens=120,
        mmr_lambda=0.75,
        spill=False,
    ),
    "balanced": Profile(
        "balanced",
        "the default: every section represented, unused room spills to the best of the rest",
        _shares(0.35, 0.20, 0.20, 0.15, 0.10),
    ),
    "grounding": Profile(
        "grounding",
        "checking facts before acting: evidence and decisions first, mostly authoritative",
        _shares(0.15, 0.25, 0.10, 0.40, 0.10),
        advisory_share=0.25,
        max_item_tokens=400,
        mmr_lambda=0.8,
    ),
    "orientation": Profile(
        "orientation",
        "getting to know an area: conventions, decisions and artifacts, short varied items",
        _shares(0.30, 0.30, 0.10, 0.15, 0.15),
        max_item_tokens=150,
        mmr_lambda=0.5,
    ),
    "wide": Profile(
        "wide",
        "breadth: as many distinct memories as fit, shortest items, strongest diversity",
        _shares(0.25, 0.25, 0.25, 0.25, 0.25),
        max_item_tokens=80,
        mmr_lambda=0.4,
    ),
    "thorough": Profile(
        "thorough",
        "deep work: long items kept whole, weak diversity",
        _shares(0.30, 0.20, 0.25, 0.25, 0.15),
        max_item_tokens=1200,
        mmr_lambda=0.85,
    ),
    "submodular": Profile(
        "submodular",
        "the set that best covers the candidates (facility location, lazy greedy per token)",
        _shares(0.35, 0.20, 0.20, 0.15, 0.10),
        diversity="facility_location",
    ),
}


CONFIG_WHERE = "[pack.custom] in .ee/config.toml"


def resolve_profile(
    name: str,
    config: Mapping[str, Any] | None = None,
    document: Mapping[str, Any] | None = None,
    where: str = "output.quotas",
) -> Profile:
    """The named profile; ``custom`` merges the config table, then ``document`` (the query document's
    ``output.quotas`` or the CLI's ``--quota`` pairs, named by ``where``) over its base."""
    if name != "custom":
        try:
            return PROFILES[name]
        except KeyError:
            raise UsageError(
                f"unknown profile {name!r}", f"use one of: {', '.join(values.PROFILES)}"
            ) from None
    settings = dict(config or {})
    settings.update(document or {})
    return custom_profile(settings, where if document else CONFIG_WHERE)


def custom_profile(settings: Mapping[str, Any], where: str) -> Profile:
    base_name = settings.get("base", "balanced")
    if base_name not in PROFILES:
        raise _error(where)(
            f"{where}: base {base_name!r} is not a profile", f"set base to one of: {', '.join(PROFILES)}"
        )
    base = PROFILES[base_name]
    shares = dict(base.shares)
    changes: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "base":
            continue
        if key in SECTIONS:
            shares[key] = _fraction(where, key, value)
        elif key == "floor":
            raise _error(where)(
                f"{where}: floor is no longer a profile setting",
                "drop it: the relevance floor is [query] min_relevance in .ee/config.toml (--min-relevance)",
            )
        elif key in ("advisory_share", "mmr_lambda"):
            changes[key] = _fraction(where, key, value)
        elif key == "max_item_tokens":
            changes[key] = _count(where, key, value)
        elif key == "cost_exponent":
            changes[key] = _number(where, key, value, 0.0, 2.0)
        elif key == "spill":
            if not isinstance(value, bool):
                raise _error(where)(
                    f"{where}: spill = {value!r} is not true/false", "set spill = true or false"
                )
            changes[key] = value
        elif key == "diversity":
            if value not in DIVERSITY:
                raise _error(where)(f"{where}: diversity = {value!r}", f"use one of: {', '.join(DIVERSITY)}")
            changes[key] = value
        else:
            allowed = [
                *SECTIONS,
                "base",
                "advisory_share",
                "max_item_tokens",
                "diversity",
                "mmr_lambda",
                "spill",
                "cost_exponent",
            ]
            raise _error(where)(f"{where}: unknown key {key!r}", f"use: {', '.join(allowed)}")
    purpose = f"custom quotas from {where} over {base_name}"
    return dataclasses.replace(base, name="custom", purpose=purpose, shares=shares, **changes)


def _error(where: str) -> type[UsageError] | type[ConfigError]:
    """A bad query document is a usage error; a bad config file a configuration error."""
    return ConfigError if where == CONFIG_WHERE else UsageError


def _number(where: str, key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _error(where)(
            f"{where}: {key} = {value!r} is not a number from {low:g} to {high:g}",
            f"set {key} to a number from {low:g} to {high:g}",
        )
    return float(value)


def _fraction(where: str, key: str, value: Any) -> float:
    return _number(where, key, value, 0.0, 1.0)


def _count(where: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 20:
        raise _error(where)(
            f"{where}: {key} = {value!r} is not a whole number ≥ 20", f"set {key} to e.g. 300"
        )
    return value
