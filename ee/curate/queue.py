"""The review queue: pending candidates, a person's decisions, and what accepting one does.

Where each thing lives (DESIGN.md §2, "Everything else is derived or private"):

- **Decisions** (accept, reject, snooze) are shared: ``memories/.curate/decisions.jsonl``
  (:mod:`ee.curate.decisions`), committed, union-merged. A rejected candidate never comes back for the same
  subjects, in any clone; a snoozed one comes back when its time is up.
- **Candidates from scans** (duplicates, staleness, …) are derived: ``ee curate scan`` recomputes them into
  ``.ee/curate/scan.json``, replacing the last scan's.
- **Candidates from agents and sessions** are private: ``.ee/curate/proposals.json`` (:func:`propose`), kept
  until decided; they may rest on private evidence, so they are never pushed.

Accepting is ONE commit (``Ee-Op: curate``, ``Ee-Candidate``, ``Ee-Actor``) holding the change and the
decision line together; only a person accepts, rejects or snoozes (an agent is refused, exit 6).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ee.curate.decisions import DECISIONS, Decision, append_decision, read_decisions
from ee.curate.model import ACTIONS, PROPOSED_ONLY, TYPES, Candidate, offered
from ee.curate.state import PROPOSALS_FILE, SCAN_FILE, propose, read_state
from ee.errors import NotFound, PolicyError, UsageError
from ee.results import Change, Queue, Review

if TYPE_CHECKING:
    from pathlib import Path

    from ee.model import Memory
    from ee.policy.trust import Actor
    from ee.workspace import Workspace


ACTION_HELP = {
    "forget": "delete the memory file (the newer one, for a pair); history keeps it",
    "link": "link the pair (the newer memory gets a link to the older one)",
    "expire": "end the memory's validity now (valid_to)",
    "expire-older": "end the older memory's validity and mark the newer as superseding it",
    "expire-newer": "end the newer memory's validity: the older one stands",
    "keep": "keep the memory as it is (the decision is recorded, nothing else changes)",
    "refresh": "the memory is still true: record the cited code's new hash",
    "attest": "a person vouches for the agent's memory: trust peer_human_attested",
    "write": "write the proposed memory as an ordinary memory file",
    "tags": "add and remove the tags the agent proposed",
    "supersede": "write the agent's proposed memory with its supersedes link (or, when the agent's memory "
    "exists, add the link and review that memory up to the target's trust)",
    "outcome": "record the agent's feedback event (its source is the agent)",
}
PROPOSED_HELP = {"link": "add the link the agent proposed", "expire": "end the memory's validity as proposed"}


@dataclass(slots=True)
class Plan:
    """What accepting a candidate with an action would change: each file's new text (None: deleted)."""

    action: str
    summary: list[str] = field(default_factory=list)
    changes: dict[str, str | None] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)
    editable: str | None = None  # the file --edit opens
    memory: str | None = None  # the memory the commit is about (Ee-Memory)
    review: bool = False  # the commit is also a person's trust review (Ee-Op: trust)
    events: list[dict[str, Any]] = field(default_factory=list)  # feedback events the commit appends

    def files(self) -> list[str]:
        """Every file the commit changes: the rewritten ones and the events files appended to."""
        from ee.store.feedback import events_path

        return sorted({*self.changed(), *(events_path(e["memory"]) for e in self.events)})

    def changed(self) -> dict[str, str | None]:
        """The files whose text the plan changes (a file kept as it is, for --edit, is not one)."""
        return {rel: text for rel, text in self.changes.items() if text != self.before.get(rel, "")}

    def preview(self) -> str:
        """A unified diff of every change, as `git diff` would show it after the commit."""
        parts: list[str] = []
        for rel, new in sorted(self.changed().items()):
            old = self.before.get(rel)
            parts.extend(
                difflib.unified_diff(
                    (old or "").splitlines(keepends=True),
                    (new or "").splitlines(keepends=True),
                    fromfile=f"a/{rel}" if old is not None else "/dev/null",
                    tofile=f"b/{rel}" if new is not None else "/dev/null",
                )
            )
        import json

        from ee.store.feedback import events_path

        for event in self.events:
            rel = events_path(event["memory"])
            parts += [f"--- a/{rel}\n", f"+++ b/{rel}\n", "@@ appended @@\n"]
            parts.append("+" + json.dumps(event, ensure_ascii=False, sort_keys=True, default=str) + "\n")
        return "".join(line if line.endswith("\n") else line + "\n" for line in parts)


# ------------------------------------------------------------------------------------ state


def _now() -> str:
    from ee.store.ids import now_text

    return now_text()


# ------------------------------------------------------------------------------------ reading


def pending(ws: Workspace, type: str | None = None) -> tuple[list[Candidate], list[dict[str, Any]]]:  # noqa: A002
    """The candidates waiting for a person (scans' and proposals', less what was decided), newest
    proposal first within each type; and ``degraded`` (unreadable decision lines)."""
    if type is not None and type not in TYPES:
        raise UsageError(f"unknown candidate type {type!r}", f"use one of: {', '.join(TYPES)}")
    decisions, problems = read_decisions(ws.root)
    now = _now()
    merged = {**read_state(ws.root, SCAN_FILE), **read_state(ws.root, PROPOSALS_FILE)}
    out = [
        c
        for c in merged.values()
        if (type is None or c.type == type) and not (c.id in decisions and decisions[c.id].hides(now))
    ]
    out.sort(key=lambda c: (TYPES.index(c.type), c.title, c.id))
    return out, problems


def find(ws: Workspace, candidate_id: str) -> Candidate:
    """A candidate by id (pending or not, if a scan or a proposal still holds it), else NotFound."""
    merged = {**read_state(ws.root, SCAN_FILE), **read_state(ws.root, PROPOSALS_FILE)}
    if candidate_id in merged:
        return merged[candidate_id]
    raise NotFound(
        f"no candidate {candidate_id} in the review queue",
        "run `ee curate list` to see the candidates (`ee curate scan` to look for new ones)",
    )


def status_of(ws: Workspace, candidate: Candidate) -> dict[str, Any]:
    decisions, _ = read_decisions(ws.root)
    decision = decisions.get(candidate.id)
    if decision is None:
        return {"status": "pending"}
    if decision.verdict == "snooze" and not decision.hides(_now()):
        return {"status": "pending", "decision": decision.to_dict()}
    verdict = {"accept": "accepted", "reject": "rejected", "snooze": "snoozed"}[decision.verdict]
    return {"status": verdict, "decision": decision.to_dict()}


def show(ws: Workspace, candidate_id: str, action: str | None = None) -> Review:
    """A candidate, its status, and exactly what accepting it (with ``action``) would change."""
    candidate = find(ws, candidate_id)
    status = status_of(ws, candidate)
    proposed = {a: PROPOSED_HELP[a] for a in (candidate.default_action,) if a in PROPOSED_HELP}
    helps = ACTION_HELP | (proposed if candidate.arguments else {})
    review = Review(
        candidate,
        status["status"],
        status.get("decision"),
        {a: helps[a] for a in candidate.actions if a in helps},
    )
    try:
        plan = make_plan(ws, candidate, action or candidate.default_action)
    except (NotFound, UsageError) as exc:
        return replace(review, cannot_accept=exc.message)
    change = Change(plan.action, tuple(plan.summary), tuple(plan.files()), plan.preview())
    return replace(review, would_change=change)


# ------------------------------------------------------------------------------------ deciding


def refuse_agent(actor: Actor, verb: str) -> None:
    if actor.agent:
        raise PolicyError(
            f"an agent ({actor.agent}) cannot {verb} a review candidate: only a person decides",
            "ask a person to run `ee curate list` and decide, without EE_AGENT or --agent",
            {"agent": actor.agent},
        )


def reject(ws: Workspace, candidate_id: str, reason: str | None, actor: Actor) -> dict[str, Any]:
    """Record a rejection (one commit of the decisions file): never proposed again for these subjects."""
    from ee.policy.secrets import check_reason

    refuse_agent(actor, "reject")
    reason = check_reason(reason)
    candidate = find(ws, candidate_id)
    return _decide(ws, candidate, "reject", actor, reason=reason)


def snooze(ws: Workspace, candidate_id: str, until: str, actor: Actor) -> dict[str, Any]:
    """Hide a candidate until ``until`` (RFC 3339, or a duration such as ``7d``, ``12h``)."""
    refuse_agent(actor, "snooze")
    stamp = parse_until(until)
    candidate = find(ws, candidate_id)
    return _decide(ws, candidate, "snooze", actor, until=stamp)


def parse_until(value: str) -> str:
    """``7d`` / ``12h`` / ``30m`` from now, or an RFC 3339 time; never in the past."""
    import re
    from datetime import timedelta

    from ee.store.fields import normalise_time
    from ee.store.ids import format_time, utcnow

    match = re.fullmatch(r"\s*(\d{1,5})\s*([dhm])\s*", value)
    if match:
        unit = {"d": "days", "h": "hours", "m": "minutes"}[match.group(2)]
        return format_time(utcnow() + timedelta(**{unit: int(match.group(1))}))
    stamp = normalise_time(value, "--until")
    if stamp <= _now():
        raise UsageError(f"--until {value} is not in the future", "give a later time, or a duration like 7d")
    return stamp


def _decide(
    ws: Workspace,
    candidate: Candidate,
    verdict: str,
    actor: Actor,
    *,
    reason: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    from ee.git.repo import format_message
    from ee.store.ids import new_ulid

    decision = Decision(
        id=f"dec_{new_ulid()}",
        candidate=candidate.id,
        type=candidate.type,
        subjects=candidate.subjects,
        verdict=verdict,
        actor=actor.label,
        at=_now(),
        until=until,
        reason=reason,
    )
    with ws.lock():
        path = ws.root / DECISIONS
        size = path.stat().st_size if path.exists() else None
        append_decision(ws.root, decision)
        try:
            commit = ws.git.commit_paths(
                [DECISIONS],
                format_message(
                    f"ee: curate {verdict} {candidate.type}: {candidate.title}",
                    {"Ee-Op": "curate", "Ee-Candidate": candidate.id, "Ee-Actor": actor.label},
                ),
            )
        except BaseException:
            _truncate(path, size)
            raise
    return {"candidate": candidate.to_dict(), "decision": decision.to_dict(), "commit": commit}


def _truncate(path: Path, size: int | None) -> None:
    if size is None:
        path.unlink(missing_ok=True)
        return
    with open(path, "r+b") as handle:
        handle.truncate(size)
        os.fsync(handle.fileno())


Editor = Callable[[str], "str | None"]


def accept(
    ws: Workspace,
    candidate_id: str,
    actor: Actor,
    action: str | None = None,
    edit: Editor | None = None,
) -> dict[str, Any]:
    """Carry out a candidate: its change and the decision in ONE commit (``Ee-Op: curate``). ``edit``
    (``--edit``) gets the text of the file the change writes and returns what to write instead."""
    from ee.git.repo import format_message
    from ee.store.ids import new_ulid

    refuse_agent(actor, "accept")
    _refuse_decided(ws, candidate_id)
    candidate = find(ws, candidate_id)
    chosen = action or candidate.default_action
    with ws.lock():
        _refuse_decided(ws, candidate_id)
        plan = make_plan(ws, candidate, chosen)
        if edit is not None:
            _apply_edit(ws, plan, edit)
            record_citations(ws, plan)  # (the edit may have changed what the memory cites)
        changes = plan.changed()
        for rel in changes:
            if plan.before.get(rel) is not None:
                ws._refuse_dirty(rel)
        decision = Decision(
            id=f"dec_{new_ulid()}",
            candidate=candidate.id,
            type=candidate.type,
            subjects=candidate.subjects,
            verdict="accept",
            actor=actor.label,
            at=_now(),
            action=plan.action,
        )
        path = ws.root / DECISIONS
        size = path.stat().st_size if path.exists() else None
        written: list[str] = []
        appended: list[tuple[Path, int | None]] = []
        try:
            for rel, text in changes.items():
                if text is None:
                    ws.store.delete(rel)
                else:
                    ws.store.write(rel, text)
                written.append(rel)
            for event in plan.events:
                from ee.store.feedback import append_event, events_path

                events_file = ws.root / events_path(event["memory"])
                events_size = events_file.lstat().st_size if events_file.exists() else None
                append_event(ws.root, event)  # (refuses a linked events file: only then undone by size)
                appended.append((events_file, events_size))
            append_decision(ws.root, decision)
            trailers = {"Ee-Op": "curate", "Ee-Candidate": candidate.id, "Ee-Actor": actor.label}
            if plan.memory:
                trailers["Ee-Memory"] = plan.memory
            message = format_message(
                f"ee: curate {plan.action} {candidate.type}: {candidate.title}", trailers
            )
            if plan.review:  # also a person's trust review, which ee.index.provenance counts
                message = message.rstrip("\n") + "\nEe-Op: trust\n"
            commit = ws.git.commit_paths([*plan.files(), DECISIONS], message)
        except BaseException:
            from ee.store.files import atomic_write

            for rel in written:  # a failed accept leaves every file as it was
                old = plan.before.get(rel)
                if old is None:
                    (ws.root / rel).unlink(missing_ok=True)
                else:
                    atomic_write(ws.root / rel, old.encode("utf-8"))
            for events_file, events_size in appended:
                _truncate(events_file, events_size)
            _truncate(path, size)
            raise
    return {
        "candidate": candidate.to_dict(),
        "decision": decision.to_dict(),
        "commit": commit,
        "changed": {"summary": plan.summary, "files": plan.files(), "diff": plan.preview()},
    }


def _refuse_decided(ws: Workspace, candidate_id: str) -> None:
    decisions, _ = read_decisions(ws.root)
    decision = decisions.get(candidate_id)
    if decision is not None and decision.verdict in ("accept", "reject"):
        raise UsageError(
            f"candidate {candidate_id} was already {decision.verdict}ed by {decision.actor} at {decision.at}",
            "nothing to do: `ee curate list` shows what is pending",
        )


def decide_all(
    ws: Workspace,
    verdict: str,
    type: str,  # noqa: A002
    actor: Actor,
    reason: str | None = None,
) -> dict[str, Any]:
    """``accept --all --type T`` / ``reject --all --type T``: each pending candidate of the type, one
    commit each (a failure stops the run, after what was done)."""
    refuse_agent(actor, verdict)
    candidates, _ = pending(ws, type)
    done: list[dict[str, Any]] = []
    for candidate in candidates:
        if verdict == "accept":
            done.append(accept(ws, candidate.id, actor))
        else:
            done.append(reject(ws, candidate.id, reason, actor))
    return {"verdict": verdict, "type": type, "count": len(done), "results": done}


def _apply_edit(ws: Workspace, plan: Plan, edit: Editor) -> None:
    from ee.policy.secrets import file_refusal
    from ee.store import frontmatter

    rel = plan.editable
    if rel is None:
        raise UsageError(
            f"the action {plan.action} writes no file to edit",
            "accept without --edit, or pick another action",
        )
    text = plan.changes.get(rel)
    if text is None:
        raise UsageError(f"the action {plan.action} deletes {rel}: nothing to edit", "pick another action")
    edited = edit(text)
    if edited is None or edited == text:
        return
    frontmatter.parse(edited, rel)  # a MemoryFormatError names file:line and the key
    refusal = file_refusal(edited, rel)
    if refusal:
        raise PolicyError(refusal, "remove the secret in the editor and accept again")
    plan.changes[rel] = edited
    plan.summary.append(f"edited {rel} by hand")


# ------------------------------------------------------------------------------------ plans


def memories_of(ws: Workspace, candidate: Candidate) -> list[Memory]:
    """The memories a candidate is about (its subjects that name one), oldest first."""
    from ee.store.files import check_id

    found: list[Memory] = []
    for subject in candidate.subjects:
        if ":" in subject or "@" in subject or "/" in subject:
            continue
        try:
            check_id(subject)
        except UsageError:
            continue
        try:
            found.append(ws.get(subject))
        except NotFound:
            continue
    found.sort(key=lambda m: (m.created or "", m.id))
    return found


def make_plan(ws: Workspace, candidate: Candidate, action: str) -> Plan:
    """What ``action`` would change for ``candidate``; a UsageError for an action it does not offer, a
    NotFound when what it is about is gone."""
    if action not in candidate.actions or action not in ACTIONS.get(candidate.type, ()):
        raise UsageError(
            f"{candidate.type} candidates offer the actions {', '.join(candidate.actions)}, not {action!r}",
            f"pick one: ee curate accept {candidate.id} --action {candidate.actions[0]}",
        )
    plan = Plan(action)
    if candidate.type in ("session", "docs"):
        _plan_write(ws, candidate, plan)
        return plan
    memories = memories_of(ws, candidate)
    pair = candidate.type in ("duplicate", "merge", "contradiction", "update")
    if not memories or (pair and len(memories) < 2):
        raise NotFound(
            f"the memories of candidate {candidate.id} are gone",
            "reject it (ee curate reject ID) or run `ee curate scan` again",
        )
    older, newer = memories[0], memories[-1]
    target = newer if pair else older
    now = _now()
    if candidate.type == "agent-write" and action in PROPOSED_ONLY:
        _plan_proposed(ws, candidate, plan, target, now)
    elif action == "forget":
        _change(ws, plan, target, None)
        plan.summary.append(f"delete {target.path} ({target.id})")
        if pair:
            plan.editable = _touch(ws, plan, older)
            plan.summary.append(f"keep {older.id}")
    elif action == "link":
        kind = "contradicts" if candidate.type == "contradiction" else "related"
        if candidate.type == "update":
            kind = "supersedes"
        _update(ws, plan, newer, {"links": _with_link(newer, kind, older.id)})
        plan.summary.append(f"{newer.id} gets a {kind} link to {older.id}")
    elif action in ("expire", "expire-older", "expire-newer"):
        gone = newer if action == "expire-newer" else older
        at = candidate.arguments.get("at") if candidate.default_action == "expire" else None
        _update(ws, plan, gone, {"valid_to": str(at) if at else now})
        plan.summary.append(f"{gone.id} expires {'at' if at else 'now'} ({at or now})")
        if action == "expire-older":
            _update(ws, plan, newer, {"links": _with_link(newer, "supersedes", older.id)})
            plan.summary.append(f"{newer.id} supersedes {older.id}")
    elif action == "keep":
        plan.editable = _touch(ws, plan, target)
        plan.summary.append(f"keep {target.id} as it is")
    elif action == "refresh":
        from ee.curate.citations import citation_hashes

        hashes = citation_hashes(ws.root, target)
        _update(ws, plan, target, {"cites": hashes})
        plan.summary.append(f"{target.id}: record the cited code's hash as it is now")
    elif action == "attest":
        from ee.store import frontmatter

        _update(ws, plan, target, {"trust": "peer_human_attested", frontmatter.REVIEW_KEY: now})
        plan.review = True
        plan.summary.append(f"{target.id}: a person vouches for it (trust peer_human_attested)")
    plan.memory = plan.memory or target.id
    record_citations(ws, plan)
    return plan


def record_citations(ws: Workspace, plan: Plan) -> None:
    """A memory a person reviews is checked against its code as it is now: each existing memory file the
    plan edits records its cited texts' hashes (``cites:``), as ``ee remember`` does for a new one. A
    stale citation accepted with ``expire``, a contradiction linked or an agent's memory attested all
    leave the memory's citations current, so the next pack judges the code from that review on."""
    from ee.curate.citations import citation_hashes
    from ee.errors import EeError
    from ee.store import frontmatter

    for rel, text in list(plan.changed().items()):
        if text is None or plan.before.get(rel) is None:
            continue  # (deleted, or a new file: it cites nothing yet)
        try:
            memory, _problems = frontmatter.parse(text, rel)
        except EeError:
            continue  # (an edit that breaks the file is refused by _apply_edit with its file:line)
        hashes = citation_hashes(ws.root, memory)
        old = dict(memory.extra).get(frontmatter.CITES_KEY)
        if (hashes or old) and hashes != old:
            plan.changes[rel] = frontmatter.update(text, {frontmatter.CITES_KEY: hashes}, rel)
            plan.summary.append(f"{memory.id}: record the hash of the code it cites as it is now")


def _plan_proposed(ws: Workspace, candidate: Candidate, plan: Plan, target: Memory, now: str) -> None:
    """An agent's refused change (``candidate.arguments``, :func:`ee.curate.state.propose_refusal`) carried
    out as it proposed it, now that a person accepts it."""
    args = candidate.arguments
    action = plan.action
    if action != candidate.default_action or not args:
        raise UsageError(
            f"candidate {candidate.id} holds no proposed {action} change",
            f"pick another action: {', '.join(a for a in candidate.actions if a not in PROPOSED_ONLY)}",
        )
    if action == "tags":
        add, remove = [str(t) for t in args.get("add") or ()], {str(t) for t in args.get("remove") or ()}
        tags = [t for t in target.tags if t not in remove]
        tags += [t for t in add if t not in tags]
        _update(ws, plan, target, {"tags": tags})
        words = [f"+{t}" for t in add] + [f"-{t}" for t in sorted(remove)]
        plan.summary.append(f"{target.id}: tags {' '.join(words)} (now: {', '.join(tags) or 'none'})")
    elif action == "link":
        link = _proposed_link(ws, args)
        _update(ws, plan, target, {"links": _with_link(target, link.type, link.to)})
        plan.summary.append(f"{target.id} gets a {link.type} link to {link.to}")
    elif action == "supersede":
        _plan_supersede(ws, candidate, plan, target, now)
    elif action == "outcome":
        from ee.policy.feedback import new_event, validate_signal
        from ee.store.ids import new_ulid, utcnow

        signal = str(args.get("signal", ""))
        validate_signal(signal)
        reason = args.get("reason")
        event = new_event(
            event_id=f"evt_{new_ulid()}",
            memory=target.id,
            signal=signal,
            at=utcnow(),
            source=candidate.proposed_by,  # the agent's feedback: a person let it count
            reason=None if reason is None else str(reason),
        )
        plan.events.append(event)
        plan.memory = target.id
        plan.summary.append(f"{target.id}: record {candidate.proposed_by}'s {signal} feedback")


def _proposed_link(ws: Workspace, args: Any) -> Any:
    from ee.store.fields import parse_link

    link = parse_link(str(args.get("link", "")))
    ws.get(link.to)  # the memory it links to must still exist (NotFound: reject the candidate)
    return link


def _plan_supersede(ws: Workspace, candidate: Candidate, plan: Plan, target: Memory, now: str) -> None:
    """The agent's memory that supersedes ``target``: its proposed text as a new memory with the link, or,
    when the agent's memory exists (``ee memory link … --type supersedes``), the link added to it, and that
    memory reviewed up to the target's trust, since a link only hides a memory trusted no more than its
    source (:func:`ee.policy.trust.may_act_on`)."""
    from ee.model import Link
    from ee.policy.trust import may_act_on
    from ee.store import frontmatter
    from ee.store.fields import build_fields, check_text
    from ee.store.ids import new_id

    args = candidate.arguments
    if args.get("source"):
        source = ws.get(str(args["source"]))
        _update(ws, plan, source, {"links": _with_link(source, "supersedes", target.id)})
        plan.memory = source.id
        plan.summary.append(f"{source.id} supersedes {target.id}")
        granted = ws.granted_trust([source, target])
        if not may_act_on(granted[source.id], granted[target.id]):
            _update(ws, plan, source, {"trust": granted[target.id], frontmatter.REVIEW_KEY: now})
            plan.review = True
            plan.summary.append(f"{source.id}: a person reviews it (trust {granted[target.id]})")
        return
    body = check_text(str(args.get("text", "")))
    kind = str(args.get("kind") or "fact")
    fields = build_fields(
        memory_id=new_id(),
        level=str(args.get("level") or "semantic"),
        kind=kind,
        tags=[str(t) for t in args.get("tags") or ()],
        trust="human_explicit",  # a person reviewed and accepted it
        confidence=None,
        source=[],
        valid_from=None,
        valid_to=None,
        links=[Link(type="supersedes", to=target.id)],
        paths=[],
    )
    rel = _plan_new_file(ws, plan, fields, body)
    plan.summary.append(f"write {rel} ({fields['id']}, {kind}) superseding {target.id}")


def _with_link(memory: Memory, kind: str, to: str) -> list[Any]:
    from ee.model import Link

    new = Link(type=kind, to=to)
    return list(memory.links) + ([] if new in memory.links else [new])


def _text(ws: Workspace, rel: str) -> str:
    from ee.store import frontmatter

    data = ws.store.read_bytes(rel)
    text = frontmatter.decode(data, rel)
    return ("\ufeff" + text) if data.startswith(b"\xef\xbb\xbf") else text


def _change(ws: Workspace, plan: Plan, memory: Memory, text: str | None) -> None:
    if memory.path not in plan.before:
        plan.before[memory.path] = _text(ws, memory.path)
    plan.changes[memory.path] = text


def _touch(ws: Workspace, plan: Plan, memory: Memory) -> str:
    """``memory``'s file as a file the plan may change (--edit), unchanged so far."""
    if memory.path not in plan.changes:
        _change(ws, plan, memory, _text(ws, memory.path))
    return memory.path


def _update(ws: Workspace, plan: Plan, memory: Memory, changes: dict[str, Any]) -> None:
    """A round-trip frontmatter edit (only the changed keys change), secrets guarded."""
    from ee.policy.secrets import guard
    from ee.store import frontmatter

    _touch(ws, plan, memory)
    guard(dict(changes), what=f"the change to {memory.id}", repair="remove the secret")
    current = plan.changes[memory.path] or ""
    plan.changes[memory.path] = frontmatter.update(current, changes, memory.path)
    plan.editable = plan.editable or memory.path
    plan.memory = plan.memory or memory.id


def _plan_write(ws: Workspace, candidate: Candidate, plan: Plan) -> None:
    """A session or docs candidate: its ``new_memory`` as an ordinary memory file, with its provenance in
    ``source`` (``evidence:<id>``, ``file://path#Lnn``), through the same checks as ``ee remember``."""
    from ee.store.fields import build_fields, check_text
    from ee.store.ids import new_id

    new = candidate.new_memory
    if new is None:
        raise UsageError(f"candidate {candidate.id} has no memory to write", "reject it")
    body = check_text(new.body)
    source = [new.source] if new.source else []
    source += [_provenance_uri(ref) for ref in new.derived_from]
    fields = build_fields(
        memory_id=new_id(),
        level="procedural" if new.kind in ("rule", "command", "convention") else "semantic",
        kind=new.kind,
        tags=new.tags,
        trust="human_explicit",  # a person reviewed and accepted it
        confidence=None,
        source=list(dict.fromkeys(source)),
        valid_from=None,
        valid_to=None,
        links=[],
        paths=[],
    )
    rel = _plan_new_file(ws, plan, fields, body)
    plan.summary.append(f"write {rel} ({fields['id']}, {new.kind})")


def _plan_new_file(ws: Workspace, plan: Plan, fields: dict[str, Any], body: str) -> str:
    """A new memory file in ``plan`` (the one it edits and is about), after ``ee remember``'s guard, which
    may mask ``fields`` and ``body``; its path."""
    from ee.store import frontmatter
    from ee.store.fields import guard_memory

    fields, body, _extra = guard_memory(fields, body)
    rel = ws.store.new_path(fields["id"], body)
    plan.before[rel] = None
    plan.changes[rel] = frontmatter.render_new(fields, body)
    plan.editable = rel
    plan.memory = fields["id"]
    return rel


def _provenance_uri(ref: str) -> str:
    path, sep, line = ref.rpartition(":")
    if sep and line.isdigit() and path:
        return f"file://{path}#L{line}"
    return ref if ":" in ref else f"evidence:{ref}"


def list_data(candidates: Sequence[Candidate]) -> Queue:
    return Queue(tuple(candidates))


def propose_documents(ws: Workspace, raw: Any, actor: Actor) -> list[Candidate]:
    """``ee curate propose`` / MCP ``curate_propose``: candidates as JSON (one object or a list), each
    with ``type``, ``subjects``, ``title``, ``reason`` and optionally ``evidence``, ``new_memory``,
    ``default_action``; the id is derived, ``proposed_by`` is the caller, whatever the document says."""
    from ee.curate.model import EvidenceRef, NewMemory

    items = raw if isinstance(raw, list) else [raw]
    built: list[Candidate] = []
    for number, item in enumerate(items, start=1):
        try:
            if not isinstance(item, dict):
                raise TypeError("a candidate is a JSON object")
            kind = str(item["type"])
            if kind not in TYPES:
                raise ValueError(f"type {kind!r} is not one of {', '.join(TYPES)}")
            subjects = item["subjects"]
            if not isinstance(subjects, list) or not all(isinstance(s, str) and s for s in subjects):
                raise TypeError("subjects must be a list of non-empty strings")
            new = item.get("new_memory")
            built.append(
                Candidate.make(
                    kind,
                    subjects,
                    title=str(item["title"]),
                    reason=str(item.get("reason", "")),
                    evidence=[EvidenceRef.from_dict(ref) for ref in item.get("evidence") or ()],
                    default_action=str(item.get("default_action") or ACTIONS[kind][0]),
                    actions=offered(kind),
                    new_memory=None if new is None else NewMemory.from_dict(new),
                    proposed_by=actor.label,
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                f"candidate {number}: {exc}",
                "give type, subjects, title and reason (see schemas/ee.curate.v1.json)",
            ) from None
    return propose(ws, built)
