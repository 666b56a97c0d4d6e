"""The human view of the review queue (``ee curate``): what matters at a glance; ``--json`` has it all."""

from __future__ import annotations

from typing import Any


def queue_human(data: dict[str, Any]) -> str:
    """One line per candidate: id, type, title, and what accepting does by default."""
    candidates = data["candidates"]
    if not candidates:
        return "nothing to review (ee curate scan looks for duplicates, stale memories and more)"
    counts = ", ".join(f"{count} {kind}" for kind, count in data["by_type"].items())
    lines = [f"{data['count']} to review: {counts}"]
    width = max(len(c["type"]) for c in candidates)
    for c in candidates:
        who = "" if c["proposed_by"] == "ee" else f"  [by {c['proposed_by']}]"
        lines.append(f"  {c['id']}  {c['type']:<{width}}  {c['title']}  → {c['default_action']}{who}")
    lines.append("next: ee curate show ID · accept ID · reject ID · snooze ID --until 7d")
    return "\n".join(lines)


def candidate_human(data: dict[str, Any]) -> str:
    lines = [
        f"{data['id']}  {data['type']}  ({data['status']})",
        f"  {data['title']}",
        f"  why: {data['reason']}",
    ]
    if data.get("decision"):
        decision = data["decision"]
        lines.append(f"  decided: {decision['verdict']} by {decision['actor']} at {decision['at']}")
    if data.get("arguments"):
        proposed = ", ".join(f"{key}={value!r}" for key, value in sorted(data["arguments"].items()))
        lines.append(f"  proposed by {data['proposed_by']}: {proposed[:400]}")
    elif data.get("proposed_by", "ee") != "ee":
        lines.append(f"  proposed by {data['proposed_by']}")
    if data["evidence"]:
        lines.append("evidence:")
        for ref in data["evidence"]:
            excerpt = " ".join(ref["excerpt"].split())
            lines.append(f"  {ref['kind']} {ref['ref']}: {excerpt[:160]}")
    actions = ", ".join(f"{a}{' (default)' if a == data['default_action'] else ''}" for a in data["actions"])
    lines.append(f"actions: {actions}")
    for action, text in data.get("action_help", {}).items():
        lines.append(f"  {action}: {text}")
    change = data.get("would_change")
    if change is None:
        lines.append(f"cannot accept: {data.get('cannot_accept', '')}")
    else:
        lines.append(f"accepting ({change['action']}) would:")
        lines.extend(f"  - {item}" for item in change["summary"])
        if change["diff"]:
            lines.append(change["diff"].rstrip("\n"))
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


def scan_human(data: dict[str, Any]) -> str:
    counts = ", ".join(f"{count} {kind}" for kind, count in data["by_type"].items()) or "nothing"
    head = f"scanned {data['memories']} memories: {data['count']} candidate(s) pending ({counts})"
    return head + "\nnext: ee curate list"


def proposed_human(data: dict[str, Any]) -> str:
    return f"{data['count']} candidate(s) pending in the review queue" + "".join(
        f"\n  {c['id']}  {c['type']}  {c['title']}" for c in data["candidates"]
    )
