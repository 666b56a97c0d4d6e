"""A team's review decisions: ``memories/.curate/decisions.jsonl``, append-only, one JSON object a line.

The decisions are shared, as the memories are: committed with the change they make, merged by git's
``union`` driver (``.gitattributes``) so two clones deciding at once never conflict, read without following
a link (:func:`ee.store.feedback.open_events`), and every text in them is masked for secrets when read (a
hand edit could put one there) and guarded when written. The candidates themselves are not shared: scans
recompute them, and proposals from agents and sessions stay private under ``.ee/`` (:mod:`ee.curate.queue`).

A decision names its candidate by id (stable: type + subjects) and keeps the type and subjects, so it still
reads when the candidate is gone. The last decision on a candidate wins (by time, then id):

- ``reject``: never proposed again for the same subjects;
- ``accept``: done (the same commit made the change);
- ``snooze``: hidden until ``until``, then pending again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ee.errors import StorageError
from ee.store.feedback import open_events

FOLDER = "memories/.curate"
DECISIONS = f"{FOLDER}/decisions.jsonl"
VERDICTS = ("accept", "reject", "snooze")
# Far above a team's decisions (a line is ~300 bytes): a larger file, a hostile one, is not read at all.
MAX_DECISIONS_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Decision:
    id: str  # dec_<ulid>
    candidate: str  # cand_…
    type: str
    subjects: tuple[str, ...]
    verdict: str  # accept | reject | snooze
    actor: str  # "human" (only a person decides; an agent's decision is refused before it is written)
    at: str  # RFC 3339
    until: str | None = None  # snooze: pending again from then
    action: str | None = None  # accept: the action carried out
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "candidate": self.candidate,
            "type": self.type,
            "subjects": list(self.subjects),
            "verdict": self.verdict,
            "actor": self.actor,
            "at": self.at,
        }
        for key in ("until", "action", "reason"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def hides(self, now: str) -> bool:
        """Whether the candidate stays out of the queue at ``now`` (RFC 3339 UTC, compared as text)."""
        if self.verdict == "snooze":
            return self.until is not None and self.until > now
        return True


def read_decisions(root: Path) -> tuple[dict[str, Decision], list[dict[str, Any]]]:
    """The last decision on each candidate, by candidate id, and a problem for each unreadable line."""
    path = root / DECISIONS
    try:
        with os.fdopen(open_events(path, DECISIONS, os.O_RDONLY, FOLDER), "rb") as handle:
            data = handle.read(MAX_DECISIONS_BYTES + 1)
        if len(data) > MAX_DECISIONS_BYTES:
            return {}, [
                _problem(
                    None,
                    f"larger than {MAX_DECISIONS_BYTES} bytes: not read, no decision in it counts",
                    f"check what {DECISIONS} holds (git log -p {DECISIONS}); ee writes one short line a "
                    "decision",
                )
            ]
        text = data.decode("utf-8")
    except FileNotFoundError:
        return {}, []
    except StorageError as exc:
        return {}, [_problem(None, exc.message, exc.hint)]
    except (OSError, UnicodeDecodeError) as exc:
        return {}, [_problem(None, f"unreadable decisions file: {exc}")]
    return parse_decisions(text)


def parse_decisions(text: str) -> tuple[dict[str, Decision], list[dict[str, Any]]]:
    from ee.policy.secrets import mask_text

    seen: dict[str, Decision] = {}
    problems: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            decision = _decision(raw)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, RecursionError) as exc:
            problems.append(_problem(number, f"not a decision: {exc}"))
            continue
        if decision.reason is not None:  # a hand edit is never guarded: mask what it says
            decision = replace(decision, reason=mask_text(decision.reason))
        seen.setdefault(decision.id, decision)  # a union merge may duplicate a line: count it once
    latest: dict[str, Decision] = {}
    for decision in sorted(seen.values(), key=lambda d: (d.at, d.id)):
        latest[decision.candidate] = decision
    return latest, problems


def append_decision(root: Path, decision: Decision) -> str:
    """Append one decision line (O_APPEND); the caller holds the workspace lock and commits the file."""
    path = root / DECISIONS
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(decision.to_dict(), ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = open_events(path, DECISIONS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FOLDER)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return DECISIONS


def _decision(raw: Any) -> Decision:
    if not isinstance(raw, Mapping):
        raise TypeError("a line must be a JSON object")
    texts = {key: raw[key] for key in ("id", "candidate", "type", "verdict", "actor", "at")}
    if not all(isinstance(value, str) for value in texts.values()):
        raise TypeError("id, candidate, type, verdict, actor and at must be strings")
    if texts["verdict"] not in VERDICTS:
        raise ValueError(f"verdict {texts['verdict']!r} is not one of {', '.join(VERDICTS)}")
    if texts["actor"] != "human":  # ee refuses an agent's decision before writing it: such a line is forged
        raise ValueError(f"actor {texts['actor'][:80]!r}: only a person decides, this line does not count")
    subjects = raw.get("subjects") or []
    if not isinstance(subjects, list) or not all(isinstance(s, str) for s in subjects):
        raise TypeError("subjects must be a list of strings")
    until, action, reason = (_optional(raw, key) for key in ("until", "action", "reason"))
    if texts["verdict"] == "snooze" and not until:
        raise ValueError("a snooze needs until")
    for key, value in (("at", texts["at"]), ("until", until)):
        if value is not None:
            _time(key, value)
    return Decision(**texts, subjects=tuple(subjects), until=until, action=action, reason=reason)


def _time(key: str, value: str) -> None:
    """A decision's times are compared as text: one that is no RFC 3339 UTC time (``"9999"``, ``"z"``)
    would hide its candidate for ever."""
    from ee.store.ids import format_time, parse_time

    if format_time(parse_time(value)) != value:
        raise ValueError(f"{key} {value[:40]!r} is not an RFC 3339 UTC time like 2026-01-31T12:00:00Z")


def _optional(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{key} must be a string")
    return value


def _problem(line: int | None, message: str, repair: str = "") -> dict[str, Any]:
    where = f"{DECISIONS}:{line}" if line else DECISIONS
    return {
        "code": "decision_invalid",
        "severity": "warning",
        "message": f"{where}: {message}",
        "repair": repair
        or f"fix or delete the line in {DECISIONS} (git log -p {DECISIONS} shows who wrote it)",
    }
