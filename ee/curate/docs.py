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

import errno
import hashlib
import os
import re
from typing import TYPE_CHECKING, Any

from ee.curate.model import Candidate, EvidenceRef, NewMemory
from ee.errors import NotRegularFile

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
# A rule prescribes: it starts with an imperative or holds a modal ("always", "never", "must", "do not", …).
_IMPERATIVE_RE = re.compile(
    r"^(?:always|never|don't|do not|use|prefer|avoid|run|keep|make sure|ensure|only|write|add|put|name|"
    r"call|check|test|commit|open|remove|follow|wrap|pin)\b",
    re.IGNORECASE,
)
_MODAL_RE = re.compile(
    r"\b(?:always|never|must|mustn't|must not|should|shouldn't|do not|don't|is required|are required|"
    r"is forbidden|are forbidden)\b",
    re.IGNORECASE,
)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*])")
_HEREDOC_RE = re.compile(r"<<-?\s*['\"]?(?P<end>\w+)['\"]?")
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
    text, _problem = open_doc(root, rel)
    return text


def open_doc(root: os.PathLike[str] | str, rel: str) -> tuple[str | None, str | None]:
    """(a doc's text, None), or (None, why it is not read): missing, not a regular file, a link, larger
    than :data:`MAX_DOC_BYTES`, binary (a NUL byte), or in a folder that leads out of the repository."""
    from ee.config import open_file

    path = os.path.join(root, rel)
    try:
        fd, info = open_file(path)  # (never through a link, never waiting on a FIFO)
    except FileNotFoundError:
        return None, "no such file"
    except NotRegularFile as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symbolic link (never followed)"
        return None, "not a regular file"
    except OSError as exc:
        if os.path.islink(path):
            return None, "a symbolic link (never followed)"
        return None, f"cannot be read ({exc.strerror or exc})"
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > MAX_DOC_BYTES:
            return None, f"{info.st_size} bytes, more than {MAX_DOC_BYTES} (not a doc one reads)"
        data = handle.read(MAX_DOC_BYTES + 1)
    parent = os.path.realpath(os.path.dirname(path))
    if not (parent + os.sep).startswith(os.path.realpath(root) + os.sep):
        return None, "in a folder that is a link out of the repository"
    if b"\0" in data:
        return None, "binary (it holds NUL bytes), not text"
    return data.decode("utf-8", "replace"), None


def extract(text: str) -> list[tuple[int, str, str]]:
    """(line number, kind, text) of each rule and command in a Markdown text: each sentence of a paragraph
    or list item (wrapped lines joined) that prescribes, and each line of a shell code block (a heredoc's
    text is data, not a command)."""
    out: list[tuple[int, str, str]] = []
    for number, block in _blocks(text):
        if block.startswith("\0"):
            out.append((number, "command", block[1:]))
            continue
        for sentence in _SENTENCE_RE.split(block):
            said = _MARKUP_RE.sub("", sentence).strip()
            if (
                len(said.split()) < MIN_WORDS
                or len(said) > 400
                or said.startswith(("#", ">", "|", "<", "[!"))
            ):
                continue
            if _IMPERATIVE_RE.match(said) or _MODAL_RE.search(said):
                out.append((number, "convention" if _STYLE_RE.search(said) else "rule", said))
    return out


def _blocks(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph and list item (wrapped lines joined), and of each shell command
    (its text prefixed with NUL)."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    shell = False
    heredoc: str | None = None
    current: list[str] = []
    start = 0

    def flush() -> None:
        if current:
            out.append((start, " ".join(current)))
            current.clear()

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        opening = _FENCE_RE.match(raw)
        if opening and (fence is None or line.startswith(fence)):
            flush()
            fence, shell = (
                (opening.group(1), opening.group("lang").lower() in _SHELL)
                if fence is None
                else (None, False)
            )
            heredoc = None
            continue
        if fence is not None:
            if heredoc is not None:
                heredoc = None if line == heredoc else heredoc
                continue
            command = line.removeprefix("$ ").strip()
            if shell and command and not command.startswith("#") and len(command) <= 200:
                out.append((number, "\0" + command))
                found = _HEREDOC_RE.search(command)
                heredoc = found.group("end") if found else None
            continue
        item = _ITEM_RE.match(raw)
        if not line or line.startswith(("#", "|", ">")) or item:
            flush()
        if item:
            start = number
            current.append(item.group("text").strip())
        elif line and not line.startswith(("#", "|", ">")):
            if not current:
                start = number
            current.append(line)
    flush()
    return out


def docs_candidates(
    ws: Workspace, memories: list[Memory], now: str, files: tuple[str, ...] = DOC_FILES
) -> list[Candidate]:
    """A ``docs`` candidate for each rule and command ``files`` (repository paths; by default the usual
    docs, those present) state that no memory already says."""
    from ee.curate.similar import normalise

    known = {normalise(m.body) for m in memories}
    out: list[Candidate] = []
    for rel in files:
        text = read_doc(ws.root, rel)
        if text is not None:
            out += _candidates(rel, text, known, now)
    return out


def _candidates(rel: str, text: str, known: set[str], now: str) -> list[Candidate]:
    from ee.curate.model import ACTIONS
    from ee.curate.similar import normalise
    from ee.policy.secrets import find_secrets

    out: list[Candidate] = []
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


def import_docs(
    ws: Workspace, files: list[str], base: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """``ee import docs FILE...`` (and MCP ``import_docs``): the rules and commands of ``files`` (paths as
    given: relative to ``base``, by default the current folder, or absolute) proposed to the review queue
    as ``docs`` candidates, by the same rules as ``ee curate scan --docs``; nothing is written to the
    store. Every file is checked first: one that is missing, outside the repository, a link, binary or
    too large is refused with the reason, and nothing is proposed."""
    from ee.curate.similar import normalise
    from ee.curate.state import propose
    from ee.errors import NotFound, UsageError
    from ee.results.curate import Queue
    from ee.store.ids import now_text

    if not files:
        raise UsageError("no file given", "name the docs to read: ee import docs AGENTS.md CONTRIBUTING.md")
    texts: dict[str, str] = {}
    for given in files:
        rel = repository_path(ws.root, given, base)
        text, problem = open_doc(ws.root, rel)
        if text is None:
            error = NotFound if problem == "no such file" else UsageError
            raise error(
                f"{given}: {problem}; nothing was proposed",
                "name a Markdown or text file inside the repository (ee import docs AGENTS.md)",
            )
        texts[rel] = text
    known = {normalise(m.body) for m in ws.store.snapshot().sorted()}
    now = now_text()
    found: list[Candidate] = []
    for rel, text in texts.items():
        found += _candidates(rel, text, known, now)
    unique = list({c.id: c for c in found}.values())
    pending = propose(ws, unique)
    return {"files": list(texts), "found": len(unique)} | Queue(tuple(pending)).to_json()


def repository_path(
    root: os.PathLike[str] | str, given: str, base: str | os.PathLike[str] | None = None
) -> str:
    """``given`` (relative to ``base``, by default the current folder, or absolute) as a path inside the
    repository at ``root``, its folders resolved (a link among them that leads out is refused); a
    UsageError for a path outside."""
    from ee.errors import UsageError

    absolute = os.path.abspath(os.path.join(base, given) if base is not None else given)
    folder = os.path.realpath(os.path.dirname(absolute))
    top = os.path.realpath(root)
    name = os.path.basename(absolute)
    if not (folder + os.sep).startswith(top + os.sep) or not name:
        raise UsageError(
            f"{given} is outside the repository ({top}); nothing was proposed",
            "import docs from the repository the memories live in",
        )
    return os.path.relpath(os.path.join(folder, name), top)
