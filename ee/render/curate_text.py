"""The human view of the review queue (``ee curate``): what matters at a glance; ``--json`` has it all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.results.curate import Queue, Review, ScanReport


def queue_human(queue: Queue) -> str:
    """One line per candidate: id, type, title, and what accepting does by default."""
    candidates = queue.candidates
    if not candidates:
        return "nothing to review (ee curate scan looks for duplicates, stale memories and more)"
    counts = ", ".join(f"{count} {kind}" for kind, count in queue.by_type.items())
    lines = [f"{len(candidates)} to review: {counts}"]
    width = max(len(c.type) for c in candidates)
    for c in candidates:
        who = "" if c.proposed_by == "ee" else f"  [by {c.proposed_by}]"
        lines.append(f"  {c.id}  {c.type:<{width}}  {c.title}  → {c.default_action}{who}")
    lines.append("next: ee curate show ID · accept ID · reject ID · snooze ID --until 7d")
    return "\n".join(lines)


def candidate_human(review: Review) -> str:
    c = review.candidate
    lines = [f"{c.id}  {c.type}  ({review.status})", f"  {c.title}", f"  why: {c.reason}"]
    if review.decision:
        decision = review.decision
        lines.append(f"  decided: {decision['verdict']} by {decision['actor']} at {decision['at']}")
    if c.arguments:
        proposed = ", ".join(f"{key}={value!r}" for key, value in sorted(c.arguments.items()))
        lines.append(f"  proposed by {c.proposed_by}: {proposed[:400]}")
    elif c.proposed_by != "ee":
        lines.append(f"  proposed by {c.proposed_by}")
    if c.evidence:
        lines.append("evidence:")
        for ref in c.evidence:
            excerpt = " ".join(ref.excerpt.split())
            lines.append(f"  {ref.kind} {ref.ref}: {excerpt[:160]}")
    actions = ", ".join(f"{a}{' (default)' if a == c.default_action else ''}" for a in c.actions)
    lines.append(f"actions: {actions}")
    for action, text in review.action_help.items():
        lines.append(f"  {action}: {text}")
    change = review.would_change
    if change is None:
        lines.append(f"cannot accept: {review.cannot_accept or ''}")
    else:
        lines.append(f"accepting ({change.action}) would:")
        lines.extend(f"  - {item}" for item in change.summary)
        if change.diff:
            lines.append(change.diff.rstrip("\n"))
    return "\n".join(lines)


def decided_human(data: dict[str, Any]) -> str:
    if "results" in data:
        head = f"{data['verdict']}ed {data['count']} {data['type']} candidate(s)"
        return "\n".join([head, *(decided_human(item) for item in data["results"])])
    decision = data["decision"]
    candidate = data["candidate"]
    verb = {"accept": "accepted", "reject": "rejected", "snooze": "snoozed"}[decision["verdict"]]
    line = f"{verb} {candidate['id']} ({candidate['type']}): {candidate['title']}"
    if decision.get("action"):
        line += f"  [{decision['action']}]"
    if decision.get("until"):
        line += f"  until {decision['until']}"
    lines = [line, f"  commit {str(data['commit'])[:10]}"]
    for item in data.get("changed", {}).get("summary", []):
        lines.append(f"  - {item}")
    return "\n".join(lines)


def scan_human(report: ScanReport) -> str:
    counts = ", ".join(f"{count} {kind}" for kind, count in report.queue.by_type.items()) or "nothing"
    head = (
        f"scanned {report.memories} memories: {len(report.queue.candidates)} candidate(s) pending ({counts})"
    )
    retired = "".join(
        f"\nretired {candidate}: the store now says it ({memory})" for candidate, memory in report.retired
    )
    return head + retired + "\nnext: ee curate list"


def proposed_human(queue: Queue) -> str:
    return f"{len(queue.candidates)} candidate(s) pending in the review queue" + "".join(
        f"\n  {c.id}  {c.type}  {c.title}" for c in queue.candidates
    )
