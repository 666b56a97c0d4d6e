"""The pieces of a context pack's Markdown: the title line, one heading per block (authoritative, advisory)
and per section inside a block, and one block of text per item. The pack counts its token budget over
exactly these pieces; :mod:`ee.render.pack_text` prints them. They live here, below the renderers, so the
pack never imports a renderer (DESIGN.md §2: render reads packs, not the other way round)."""

from __future__ import annotations

from ee.pack.profiles import SECTION_TITLES

TITLE_MAX_BYTES = 100
TRUNCATION_MARK = " […]"
BLOCK_TITLES = {
    True: "Authoritative",
    False: "Advisory (written by agents or imported: verify before relying on it)",
}


def title_piece(task: str) -> str:
    """The title line: the task on one line, its markup escaped (:func:`inert`)."""
    return f"# ee context: {cut_bytes(inert(' '.join(task.split())), TITLE_MAX_BYTES)}\n"


def inert(text: str) -> str:
    """``text`` as Markdown or an HTML comment shows it and never obeys it: ``<``, ``>`` and ``&`` as
    entities (no tag, no comment opened or closed: ``<!--``, ``-->``), and ``--`` broken up (an HTML
    comment may not hold it). A task comes from a prompt, a branch name or commit subjects: anyone's."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    while "--" in text:
        text = text.replace("--", "-\u2010")  # a hyphen, then U+2010 HYPHEN
    return text


def block_piece(authoritative: bool) -> str:
    return f"\n## {BLOCK_TITLES[authoritative]}\n"


def section_piece(section: str) -> str:
    return f"\n### {SECTION_TITLES[section]}\n"


def body_text(body: str) -> str:
    """A memory's body as a pack item shows it, without the marks of a Markdown heading that opens it
    (``# Duplicate lines after a restart``): the item is a list entry, where they would show as text
    (``- **failure** # Duplicate…``), and its title already reads without them (:func:`ee.model.title_of`).
    Only a heading (``#`` marks, then a blank): ``#include`` or ``#123`` stay as written."""
    text = body.strip()
    if text.startswith("#"):
        first, newline, rest = text.partition("\n")
        words = first.lstrip("#")
        if not words or words[0] in " \t":
            text = (words.strip() + newline + rest).strip()
    return text


def item_text(
    kind: str, body: str, memory_id: str, trust: str, confidence: float, marks: tuple[str, ...] = ()
) -> str:
    """One item as the pack shows it: a list entry with the body (continuation lines indented) and a line
    naming the memory (its id is what ``ee outcome`` takes), its trust class and effective confidence; then
    a ``⚠`` line for each mark (:mod:`ee.curate.marks`: a stale citation, an unresolved contradiction)."""
    lines = body_text(body).splitlines() or [""]
    meta = f"  `{memory_id}` · {trust} · confidence {confidence:.2f}"
    warned = "".join(f"  ⚠ {mark}\n" for mark in marks)
    if len(lines) == 1:  # (most bodies; a pack measures each candidate's text several times)
        return f"- **{kind}** {lines[0]}\n{meta}\n{warned}"
    rest = [f"  {line}" if line.strip() else "" for line in lines[1:]]
    return "\n".join([f"- **{kind}** {lines[0].strip()}", *rest, meta]) + "\n" + warned


def cut_bytes(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "…"
