"""A context pack as text: the Markdown an agent pastes (and ``--format hook`` injects), and a terminal view;
and the terminal views of ``ee why`` and ``ee outcome``.

The Markdown is built from *pieces* (:mod:`ee.pack.pieces`), and the pack's token budget is counted over
exactly these pieces: the title line, one heading per block (authoritative, advisory) and per section
inside a block, and one block of text per item (:func:`item_text`). ``pack_markdown`` with ``fields``
standard or full is the concatenation of those pieces, so ``count_tokens(markdown) <= used_tokens <=
max_tokens``; minimal and summary print less of each item, never more. The terminal view (``human``)
adds a status line, reasons and an omitted summary for people; it is not what the budget measures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ee.pack.pieces import block_piece, body_text, cut_bytes, item_text, section_piece, title_piece
from ee.pack.profiles import SECTION_TITLES
from ee.results.search import Hit

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ee.results.outcome import OutcomeReport
    from ee.results.pack import Pack, PackItem
    from ee.results.search import Omitted
    from ee.results.why import Explanation


def _summary_text(item: PackItem) -> str:
    return (
        f"- **{item.kind}** {item.title}\n"
        f"  `{item.id}` · {item.trust} · confidence {float(item.confidence or 0):.2f}\n"
    )


def _minimal_text(item: PackItem) -> str:
    kind = f"**{item.kind}** " if item.kind else ""
    return f"- {kind}{item.title} `{item.id}`\n"


def rendered_item(item: PackItem, light: bool = False) -> str:
    """The item's Markdown for the fields it carries (full text when the body is there). ``light`` (the
    hook's): the item's line and its id only; the block heading says whether it is authoritative."""
    if light:
        text = body_text(item.body or "") or item.title
        kind = f"**{item.kind}** " if item.kind else ""
        lines = text.splitlines() or [""]
        rest = [f"  {line}" if line.strip() else "" for line in lines[1:]]
        warned = "".join(f"  ⚠ {mark}\n" for mark in item.marks)
        return "\n".join([f"- {kind}{lines[0].strip()}", *rest]) + f" `{item.id}`\n" + warned
    if "body" in item.shown and "kind" in item.shown:
        return item_text(item.kind, item.body, item.id, item.trust, float(item.confidence or 0), item.marks)
    if "trust" in item.shown:
        return _summary_text(item)
    return _minimal_text(item)


def blocks(pack: Pack) -> Iterator[tuple[bool, list[tuple[str, list[PackItem]]]]]:
    """(authoritative, [(section, items)]) for each non-empty block, authoritative first."""
    for authoritative in (True, False):
        sections = []
        for section in pack.sections:
            items = [i for i in section.items if i.authoritative is authoritative]
            if items:
                sections.append((section.name, items))
        if sections:
            yield authoritative, sections


def pack_markdown(pack: Pack, light: bool = False) -> str:
    """The pack's Markdown; ``light`` (what ``--format hook`` injects) names each item by its id alone,
    without the trust and confidence line (see :func:`rendered_item`): never longer than the Markdown."""
    titled = pack.budget.title_tokens > 0  # 0: the budget could not hold the title
    pieces = [title_piece(pack.task)] if titled else []
    for authoritative, sections in blocks(pack):
        pieces.append(block_piece(authoritative))
        for section, items in sections:
            pieces.append(section_piece(section))
            pieces.extend(rendered_item(item, light) for item in items)
    return "".join(pieces)


def pack_human(pack: Pack) -> str:
    budget, counts = pack.budget, pack.counts
    head = (
        f"ee context: {pack.task}\n"
        f"  profile {pack.profile.get('name', '?')} · {budget.used_tokens}/{budget.max_tokens} tokens · "
        f"{counts.items} items · {counts.omitted} omitted · {pack.pack_hash[:19]}"
    )
    lines = [head]
    for authoritative, sections in blocks(pack):
        lines += [
            "",
            "AUTHORITATIVE" if authoritative else "ADVISORY: written by agents or imported; verify first",
        ]
        for section, items in sections:
            lines.append(f"  {SECTION_TITLES[section]}")
            for item in items:
                lines += _human_item(item)
    if not counts.items:
        from ee.render.results import nothing_found

        lines += ["", f"  {nothing_found(pack)}"]
    lines += _omitted_lines(pack.omitted, counts.omitted_by_reason)
    return "\n".join(lines)


OMITTED_SHOWN = 10  # the human view lists this many omitted candidates, best first; json lists all


def _omitted_lines(omitted: Sequence[Omitted], by_reason: Mapping[str, int]) -> list[str]:
    """What the pack left out and why: the counts by reason, then the best candidates, one line each (those
    below the relevance floor only counted: they are what nobody asked for)."""
    if not omitted and not by_reason:
        return []
    reasons = ", ".join(f"{n} {reason}" for reason, n in by_reason.items())
    lines = ["", f"omitted: {reasons}" if reasons else "omitted:"]
    omitted = [item for item in omitted if item.reason != "below_relevance_floor"]
    for item in omitted[:OMITTED_SHOWN]:
        where = ", ".join(str(x) for x in (item.section, item.reason) if x)
        size = f", {item.tokens} tokens" if item.tokens else ""
        title = f"  {cut_bytes(item.title, 70)}" if item.title else ""
        lines.append(f"  - {item.id} ({where}{size}){title}")
    if len(omitted) > OMITTED_SHOWN:
        lines.append(f"  … {len(omitted) - OMITTED_SHOWN} more (--format json lists each one)")
    return lines


def _human_item(item: PackItem) -> list[str]:
    text = item.body or item.title
    first, *rest = text.strip().splitlines() or [""]
    kind = f"[{item.kind}] " if item.kind else ""
    out = [f"    • {kind}{first}"]
    out += [f"      {line}" for line in rest]
    meta = [item.id]
    if "trust" in item.shown:
        meta.append(f"{item.trust} · confidence {float(item.confidence or 0):.2f}")
    if item.flags:
        meta.append(", ".join(item.flags))
    out.append(f"      {' · '.join(meta)}")
    if item.why:
        out.append(f"      why: {item.why}")
    out += explain_lines(item, "      ")
    return out


def explain_lines(item: Hit | PackItem, indent: str) -> list[str]:
    """What ``--explain`` adds to a hit or a pack item, for people: the matched terms, the score's
    arithmetic, and (in a pack) how the item was selected."""
    explanation: Mapping[str, Any] = item.explanation or {}
    out = []
    if explanation.get("matched_terms"):
        out.append(f"{indent}matched: {', '.join(explanation['matched_terms'])}")
    if explanation.get("final"):
        out.append(f"{indent}score: {explanation['final']}")
    injection = explanation.get("injection") or {}
    if injection.get("flagged"):
        out.append(f"{indent}injection: flagged ({', '.join(injection.get('signals', []))})")
    selection = None if isinstance(item, Hit) else item.selection
    if selection:
        figures = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in selection.items() if k != "objective")
        out.append(f"{indent}selected: {selection.get('objective', '')} ({figures})")
    return out


def why_human(why: Explanation) -> str:
    st = why.standing
    fb = st["feedback"]
    lines = [
        f"{why.id}  {why.level}/{why.kind}  {why.title}",
        f"  trust        {st['trust']} ({st['posture']}{', QUARANTINED' if st['quarantined'] else ''})",
        f"  confidence   {st['effective_confidence']:.4f} effective (prior {st['prior_confidence']:.4f}; "
        f"{fb['helpful']} helpful, {fb['harmful']} harmful, {fb['stale']} stale applied, "
        f"{len(fb['held_back'])} held back)",
        f"  freshness    {st['freshness']:.4f} (half-life {st['half_life_days']:g} d, "
        f"created {st['created']})",
        f"  utility      {st['utility']}   importance {st['importance']}",
        f"  validity     {st['validity']}",
    ]
    lines += [f"  note         {note}" for note in fb["notes"]]
    for event in st["events"]:
        lines.append(
            f"  event        {event['at']} {event['signal']:<13} {event['source']:<16} {event['status']}"
            + (f"  {event['reason']}" if event.get("reason") else "")
        )
    injection = why.injection
    if injection.get("flagged"):
        lines.append(f"  injection    flagged ({', '.join(injection.get('signals', []))})")
    for link in why.links["outbound"]:
        lines.append(f"  link →       {link['type']} {link['to']}" + ("" if link["exists"] else " (missing)"))
    for link in why.links["inbound"]:
        lines.append(f"  link ←       {link['type']} from {link['from']}")
    history = why.history
    if history.get("versions"):
        lines.append(
            f"  history      {history['versions']} version(s), first {history['first']['commit'][:10]} "
            f"{history['first']['date']}, last {history['last']['commit'][:10]} {history['last']['date']}"
        )
    if why.query:
        lines.append("")
        lines.append(_why_query_line(why.query))
    return "\n".join(lines)


def relevance_evidence(found: Mapping[str, Any]) -> str:
    """A relevance explanation's evidence on one line: coverage, cosine and z (and what the best of the
    store's memories reaches by chance), the part it came from."""
    evidence = f"coverage {found.get('coverage', 0):.2f}"
    if "cosine" in found:
        best = found.get("best_null")
        chance = f"; best of {best['memories']} by chance {best['z']:.2f}" if best else ""
        evidence += f", cosine {found['cosine']:.2f} (z {found.get('z', 0):.2f}{chance})"
    return evidence + (f", from the part {found['from_part']!r}" if found.get("from_part") else "")


def _why_query_line(query: Mapping[str, Any]) -> str:
    head = f"for {query['text']!r}: "
    if not query["retrieved"]:
        return head + f"not retrieved ({query['reason']})"
    if query["rank"] is None:  # retrieved, but below the relevance floor: no rank, no score
        out = head + f"no answer: {query['reason']} ({relevance_evidence(query['relevance'])})"
    else:
        out = (
            head
            + f"rank {query['rank']} of {query['total']}, score {query['score']:.4f}\n  why: {query['why']}"
        )
    pack = query.get("pack") or {}
    if pack.get("selected"):
        out += f"\n  pack ({pack['profile']}): selected in {pack['section']}"
    elif pack:
        out += f"\n  pack ({pack['profile']}): omitted, {pack['reason']}"
    return out


def outcome_human(report: OutcomeReport) -> str:
    conf = report.effective_confidence
    event = report.event
    text = (
        f"recorded {event['signal']} for {report.memory['id']} by {event['source']} "
        f"(commit {report.commit[:10]})\n"
        f"effective confidence {conf['before']:.4f} → {conf['after']:.4f} "
        f"(prior {report.prior_confidence:.4f})"
    )
    if report.held_back:
        text += f"\n{report.message}"
    return text
