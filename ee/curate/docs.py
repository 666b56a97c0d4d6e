"""Bootstrap from what the repository already says: rules, commands and conventions in its docs.

``ee curate scan --docs`` reads AGENTS.md, CLAUDE.md, CONTRIBUTING.md, README and similar files (only
regular files inside the repository: a link is never followed) and proposes each rule or command it finds
as a ``docs`` candidate with its ``file:line``. A person accepts the ones worth remembering; each becomes
an ordinary memory whose ``source`` names that line.

The rules are plain and explainable: a list item or sentence that prescribes (``always``, ``never``,
``must``, ``don't``, ``use``, ``prefer``, ``avoid``, ``run``, …) is a ``rule`` (``convention`` when it
speaks of style or naming); a line of a shell code block is a ``command``.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from typing import TYPE_CHECKING

from ee.curate.model import Candidate, EvidenceRef, NewMemory

if TYPE_CHECKING:
    from ee.model import Memory
    from ee.workspace import Workspace

DOC_FILES = (
    "AGENTS.md",
    "CLAUDE.md",
    "GEMINI.md",
    "CONTRIBUTING.md",
    "README.md",
    "README",
    ".github/copilot-instructions.md",
    ".cursorrules",
    "docs/CONTRIBUTING.md",
)
MAX_DOC_BYTES = 512 * 1024
MAX_PER_FILE = 200
_RULE_RE = re.compile(
    r"\b(?:always|never|must|mustn't|must not|should|shouldn't|do not|don't|avoid|prefer|use|run|keep|"
    r"make sure|required?|forbidden|only)\b",
    re.IGNORECASE,
)
_STYLE_RE = re.compile(
    r"\b(?:style|format|naming|name|indent|commit message|convention|snake_case|camelcase)\w*", re.IGNORECASE
)
_ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?P<text>.+)$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)\s*(?P<lang>[\w+-]*)")
_SHELL = {"sh", "bash", "shell", "console", "zsh", ""}
_MARKUP_RE = re.compile(r"\*\*|__|`|(?<!\w)[*_]|[*_](?!\w)")  # emphasis and code marks, not snake_case
MIN_WORDS = 4


def read_doc(root: os.PathLike[str] | str, rel: str) -> str | None:
    """A doc's text: a regular file inside the repository, not a link, not too large; else None."""
    path = os.path.join(root, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_DOC_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read()
    finally:
        os.close(fd)
    parent = os.path.realpath(os.path.dirname(path))
    if not (parent + os.sep).startswith(os.path.realpath(root) + os.sep):
        return None  # (a folder on the way is a link out of the repository)
    return data.decode("utf-8", "replace")


def extract(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, text) of each rule and command in a Markdown text."""
    out: list[tuple[int, str, str]] = []
    fence: str | None = None
    shell = False
    for number, raw in enumerate(text.splitlines(), start=1):
        opening = _FENCE_RE.match(raw)
        if opening:
            if fence is None:
                fence, shell = opening.group(1), opening.group("lang").lower() in _SHELL
            elif raw.strip().startswith(fence):
                fence = None
            continue
        line = raw.strip()
        if fence is not None:
            command = line.removeprefix("$ ").strip()
            if shell and command and not command.startswith("#") and len(command) <= 200:
                out.append((number, "command", command))
            continue
        item = _ITEM_RE.match(raw)
        candidate = _MARKUP_RE.sub("", item.group("text") if item else line).strip()
        if candidate.startswith(("#", ">", "|", "<", "[!")) or len(candidate.split()) < MIN_WORDS:
            continue
        if len(candidate) > 400 or not _RULE_RE.search(candidate):
            continue
        kind = "convention" if _STYLE_RE.search(candidate) else "rule"
        out.append((number, kind, candidate))
    return out


def docs_candidates(ws: Workspace, memories: list[Memory], now: str) -> list[Candidate]:
    from ee.curate.model import ACTIONS
    from ee.curate.similar import normalise
    from ee.policy.secrets import find_secrets

    known = {normalise(m.body) for m in memories}
    out: list[Candidate] = []
    for rel in DOC_FILES:
        text = read_doc(ws.root, rel)
        if text is None:
            continue
        for number, kind, said in extract(text)[:MAX_PER_FILE]:
            if normalise(said) in known or find_secrets(said):
                continue  # already remembered; a secret is never proposed
            digest = hashlib.sha256(normalise(said).encode("utf-8")).hexdigest()[:12]
            where = f"{rel}:{number}"
            out.append(
                Candidate.make(
                    "docs",
                    [f"docs:{rel}#{digest}"],
                    title=f"{kind} from {where}: {said[:100]}",
                    reason=f"{rel} states it at line {number}",
                    evidence=[EvidenceRef("file", where, said, {"file": rel, "line": number})],
                    default_action=ACTIONS["docs"][0],
                    actions=ACTIONS["docs"],
                    new_memory=NewMemory(said, kind, ("docs",), (where,), f"file://{rel}#L{number}"),
                    created=now,
                )
            )
    return out
