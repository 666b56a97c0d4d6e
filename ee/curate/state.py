"""The review queue's private state under ``.ee/curate/``: the last scan's candidates (``scan.json``, derived)
and the proposals of agents and sessions (``proposals.json``, kept until a person decides; :func:`propose`,
which :mod:`ee.curate.queue` exports as the queue's API). Never shared."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ee.curate.decisions import read_decisions
from ee.curate.model import ACTIONS, Candidate, EvidenceRef
from ee.errors import StorageError, UsageError
from ee.store.ids import now_text

if TYPE_CHECKING:
    from pathlib import Path

    from ee.model import Memory
    from ee.workspace import Workspace

STATE = ".ee/curate"
SCAN_FILE = f"{STATE}/scan.json"
PROPOSALS_FILE = f"{STATE}/proposals.json"
EXCERPT_CHARS = 240


def read_state(root: Path, rel: str) -> dict[str, Candidate]:
    """The candidates of one private state file, by id; a broken file is a StorageError naming it."""
    from ee.config import open_regular

    path = root / rel
    try:
        with open(open_regular(path, os.O_RDONLY | os.O_NOFOLLOW), encoding="utf-8") as handle:
            raw = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # (nested too deep)
        raise StorageError(
            f"{rel} cannot be read: {exc}",
            f"remove it (rm {rel}); `ee curate scan` rebuilds the scan, agents propose again",
        ) from None
    try:
        found = [Candidate.from_dict(item) for item in raw["candidates"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise StorageError(f"{rel} is not a candidate list: {exc}", f"remove it (rm {rel})") from None
    return {c.id: c for c in found if not c.problems()}


def write_state(root: Path, rel: str, candidates: Iterable[Candidate]) -> None:
    from ee.store.files import atomic_write, make_state_folder

    make_state_folder(root / STATE)
    items = sorted(candidates, key=lambda c: c.id)
    data = json.dumps({"candidates": [c.to_dict() for c in items]}, ensure_ascii=False, sort_keys=True)
    atomic_write(root / rel, data.encode("utf-8"))


MAX_PROPOSALS = 10_000  # private state an agent fills: bounded, so a loop cannot grow it without end


def masked(candidate: Candidate) -> Candidate:
    """Every text of a candidate with its secrets masked: what the queue stores and shows."""
    from ee.curate.model import EvidenceRef
    from ee.policy.secrets import mask_output, mask_text

    new = candidate.new_memory
    if new is not None:
        new = replace(new, body=mask_text(new.body))
    return replace(
        candidate,
        title=mask_text(candidate.title),
        reason=mask_text(candidate.reason),
        evidence=tuple(
            EvidenceRef(e.kind, e.ref, mask_text(e.excerpt), mask_output(dict(e.provenance)))
            for e in candidate.evidence
        ),
        new_memory=new,
        arguments=mask_output(dict(candidate.arguments)),
    )


# ------------------------------------------------------------------------------------ proposing


def propose(ws: Workspace, candidates: Iterable[Candidate]) -> list[Candidate]:
    """Store ``candidates`` as pending proposals (private, under ``.ee/``), idempotently: one already
    pending, or decided (rejected, accepted, or snoozed until later), is skipped. The candidates that are
    pending after the call, in the order given. A malformed candidate is a UsageError naming its problem."""
    given = list(candidates)
    for candidate in given:
        problems = candidate.problems()
        if problems:
            raise UsageError(
                f"candidate {candidate.id or '(no id)'} is not valid: {'; '.join(problems)}",
                "build it with Candidate.make(type, subjects, …) (ee.curate.model)",
            )
        unknown = [a for a in candidate.actions if a not in ACTIONS[candidate.type]]
        if unknown:
            raise UsageError(
                f"candidate {candidate.id}: {candidate.type} offers no action {unknown[0]!r}",
                f"use: {', '.join(ACTIONS[candidate.type])}",
            )
    now = now_text()
    with ws.lock():
        decisions, _ = read_decisions(ws.root)
        stored = read_state(ws.root, PROPOSALS_FILE)
        out: list[Candidate] = []
        changed = False
        for candidate in given:
            decision = decisions.get(candidate.id)
            if decision is not None and decision.hides(now):
                continue
            if candidate.id not in stored:
                stored[candidate.id] = masked(replace(candidate, created=candidate.created or now))
                changed = True
            out.append(stored[candidate.id])
        if len(stored) > MAX_PROPOSALS:
            raise UsageError(
                f"the review queue holds {len(stored)} proposals (at most {MAX_PROPOSALS})",
                "review or reject some first: ee curate list",
            )
        if changed:
            write_state(ws.root, PROPOSALS_FILE, stored.values())
    return out


def store_texts(memories: Iterable[Memory]) -> dict[str, str]:
    """The store's memory texts as intake compares them (:func:`ee.curate.similar.normalise`: spacing and a
    final full stop aside) → the id of the memory saying each."""
    from ee.curate.similar import normalise

    return {normalise(m.body): m.id for m in memories}


def said_by(candidate: Candidate, texts: dict[str, str]) -> str | None:
    """The id of the memory (of :func:`store_texts`) that already says what ``candidate`` would write, or
    None: such a candidate is not proposed (a session's, a doc's), or is retired by a scan."""
    from ee.curate.similar import normalise

    return None if candidate.new_memory is None else texts.get(normalise(candidate.new_memory.body))


def retire_said(ws: Workspace, memories: Iterable[Memory]) -> list[tuple[Candidate, str]]:
    """Drop from the proposals the undecided ones (pending, or snoozed) whose memory the store now holds
    (:func:`said_by`: it gained the same text since they were proposed); (candidate, memory id) of each.
    A decided proposal is kept: ``ee curate show`` still finds what a person accepted or rejected. The
    caller holds the workspace lock."""
    stored = read_state(ws.root, PROPOSALS_FILE)
    if not stored:
        return []
    texts = store_texts(memories)
    decisions, _ = read_decisions(ws.root)
    retired = []
    for candidate in stored.values():
        decision = decisions.get(candidate.id)
        memory_id = said_by(candidate, texts)
        if memory_id is not None and (decision is None or decision.verdict == "snooze"):
            retired.append((candidate, memory_id))
    if retired:
        gone = {candidate.id for candidate, _ in retired}
        write_state(ws.root, PROPOSALS_FILE, [c for c in stored.values() if c.id not in gone])
    return retired


REFUSED_OPS = ("expire", "forget", "tags", "link", "supersede", "outcome")  # what the queue carries out
VERBS = {"tags": "retag", "outcome": "report feedback on"}  # an op's words in a candidate's title


def arguments_digest(arguments: dict[str, Any]) -> str | None:
    """A short stable digest of a proposed change's arguments (None when it has none): two different tag
    changes to one memory are two candidates, the same change proposed again is the same one."""
    import hashlib

    kept = {key: value for key, value in arguments.items() if value not in (None, [], "")}
    if not kept:  # (forget, expire now: the ids candidates had before arguments counted)
        return None
    text = json.dumps(kept, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def propose_refusal(ws: Workspace, target: Any, proposal: Any) -> Candidate | None:
    """An agent's change to a person's memory that ee refused (:class:`ee.policy.trust.NeedsPerson`), kept
    as an ``agent-write`` candidate a person may accept: its default action carries out ``proposal.op`` with
    the arguments the agent gave (masked). None for a refusal that is not an agent's (a person's link from
    an unreviewed memory: the repair is to review that memory)."""
    from ee.curate.model import EvidenceRef
    from ee.policy.secrets import mask_output, mask_text

    if proposal.op not in REFUSED_OPS or not proposal.actor.startswith("agent:"):
        return None
    arguments = mask_output(dict(proposal.arguments))  # (what is stored, shown and carried out)
    subjects = [target.id, f"{proposal.op}:{proposal.actor}"]
    digest = arguments_digest(arguments)
    if digest is not None:
        subjects.append(f"args:{digest}")
    body = " ".join(target.body.split())
    verb = VERBS.get(proposal.op, proposal.op)
    candidate = Candidate.make(
        "agent-write",
        subjects,
        title=f"{proposal.actor} asks to {verb} {target.title}{_what(proposal.op, arguments)}",
        reason=f"{proposal.actor} may not {verb} a memory more trusted than itself: a person decides",
        evidence=[EvidenceRef("memory", target.id, mask_text(body[:240]), {"path": target.path})],
        default_action=proposal.op,
        actions=(proposal.op, "attest", "expire", "forget"),
        proposed_by=proposal.actor,
        arguments=arguments,
    )
    found = propose(ws, [candidate])
    return found[0] if found else None


def _what(op: str, arguments: dict[str, Any]) -> str:
    """The proposed change in a few words, for the candidate's title."""
    if op == "tags":
        parts = [f"+{t}" for t in arguments.get("add") or ()]
        parts += [f"-{t}" for t in arguments.get("remove") or ()]
        return f" ({' '.join(parts)})" if parts else ""
    if op in ("link", "supersede") and arguments.get("link"):
        return f" ({arguments['link']})"
    if op == "outcome" and arguments.get("signal"):
        return f" ({arguments['signal']})"
    return ""


def merge_candidate(older: Memory, newer: Memory, why: str, found: str) -> Candidate:
    """A ``merge`` candidate for two close memories (``ee remember`` and ``ee import`` find them: ``found``
    says when, e.g. "when X was written"): a person decides, nothing is merged here."""
    return Candidate.make(
        "merge",
        [older.id, newer.id],
        title=f"{newer.title}  ⟷  {older.title}",
        reason=f"{why} (found {found})",
        evidence=[memory_ref(older), memory_ref(newer)],
        default_action=ACTIONS["merge"][0],
        actions=ACTIONS["merge"],
        proposed_by="ee",
    )


def memory_ref(memory: Memory) -> EvidenceRef:
    from ee.policy.secrets import mask_text

    body = " ".join(memory.body.split())
    excerpt = body if len(body) <= EXCERPT_CHARS else body[: EXCERPT_CHARS - 1] + "…"
    return EvidenceRef(
        "memory",
        memory.id,
        mask_text(excerpt),
        {"path": memory.path, "created": memory.created, "trust": memory.trust},
    )
