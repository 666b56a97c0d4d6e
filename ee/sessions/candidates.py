"""Candidate memories from session evidence, found by fixed patterns (no model, no network).

* **decisions**: a sentence saying what the team will use or switched to ("we'll use X", "let's go with",
  "switched from A to B because …", "decided to"); one that only points back ("let's go with that") is
  read with the sentence said before it (:func:`points_back`);
* **preferences and conventions** the person stated (a user's sentence with "always", "never", "I prefer",
  "don't", "make sure to", "from now on");
* **error → fix**: a command that failed and later in the session ran again and passed; the candidate names
  the error's first line and the files changed in between;
* **commands that worked**: a build, test or run command that passed after failing, or a setup command.

Each candidate is a ``session`` candidate of the review queue (``ee curate``), with its evidence (the
pieces, their session and turns) and the memory it would write if a person accepts it (``derived_from``
the evidence ids). Its id is stable (:func:`ee.curate.model.candidate_id` over its subjects), so importing
the same session twice proposes nothing new.
"""

from __future__ import annotations

import re
from typing import Any

from ee.sessions.evidence import Evidence

# A sentence ends at . ! or ? before a space: not at the dot of "Fly.io", "3.12" or "setup.py".
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
DECISION = re.compile(
    r"\b(we'?ll use|we will use|let'?s (use|go with|switch to)|"
    r"we('re| are) (going with|switching to|moving to)|"
    r"(we |I )?(decided|chose|agreed) to|switch(ed|ing) (from [\w.+-]+ )?to|we use [\w.+-]+ (for|instead))\b",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\b(always|never|I prefer|we prefer|please don'?t|don'?t (ever )?|do not|make sure (to|that)|"
    r"from now on|"
    r"our convention|the convention is)\b",
    re.IGNORECASE,
)
_TOOLS = re.compile(
    r"^(uv |pip |python -m |pytest|npm |pnpm |yarn |cargo |go (test|build|run)|make\b|just |tox|nox|"
    r"ruff|mypy|"
    r"docker (compose|build)|alembic|poetry |bundle |mvn |gradle|dotnet )"
)
MAX_SENTENCE = 300
# The words of a decision that points back at what was said before it rather than naming a choice.
_POINTING_WORDS = (
    "ok okay yes yeah yep sure fine good great sounds alright right so then well and now for please it "
    "that this them those these one ones the first second last other option approach idea plan proposal "
    "suggestion your yours same too also instead go"
)
POINTING = frozenset(_POINTING_WORDS.split())


def extract(evidence: list[Evidence]) -> list[Any]:
    """The candidates of these pieces of evidence (one session's or several), in a stable order."""
    try:
        from ee.curate import model
    except ImportError:  # the review queue is not in this build
        return []
    out: dict[str, Any] = {}
    before: tuple[Evidence, str] | None = None  # the sentence said last in the session, and its piece
    for piece in sorted(evidence, key=lambda e: (e.session_id, e.time, e.turn)):
        if before is not None and before[0].session_id != piece.session_id:
            before = None
        if piece.flagged or piece.sidechain:
            continue  # instruction-like text or a sub-agent's side trip: not a person's statement
        for number, (role, sentence) in enumerate(_sentences(piece.text), start=1):
            where = f"{piece.id}:{number}"  # the piece and the sentence in it, as "file:line" names a line
            if DECISION.search(sentence):
                body, pieces = sentence, [piece]
                if points_back(sentence):  # "let's go with that": what it chose was said just before
                    if before is None or DECISION.search(before[1]):
                        before = (piece, sentence)
                        continue  # nothing before it, or a decision proposed already
                    body, pieces = f"{before[1]} {sentence}", [before[0], piece]
                _add(out, model, "decision", body, pieces, "a decision stated in a session", where)
            elif role == "user" and PREFERENCE.search(sentence):
                reason = "a preference or convention the person stated"
                _add(out, model, "preference", sentence, [piece], reason, where)
            before = (piece, sentence)
    for failed, fixed, files in _fixes(evidence):
        command = fixed.commands[0][0] if fixed.commands else ""
        body = f"`{_command_in(failed, fixed)}` failed with: {_error_of(failed)}"
        if files:
            body += f"\nFixed by changing {', '.join(files[:5])}; then it passed."
        else:
            body += "\nIt passed when run again after the fix in the session."
        reason = "an error followed by the change that made it pass"
        _add(out, model, "failure", body, [failed, fixed], reason, f"{failed.id}:fix")
        if command and _TOOLS.match(command):
            body = f"`{command}` works here (it passed after the fix)."
            _add(out, model, "command", body, [fixed], "a command that worked", f"{fixed.id}:command")
    return [out[k] for k in sorted(out)]


def points_back(sentence: str) -> bool:
    """Does this decision sentence say nothing of its own ("Let's go with that.", "OK, we'll use it
    then.")? Its words, without the decision's own and :data:`POINTING`, leave no word of 2 or more
    letters."""
    rest = DECISION.sub(" ", sentence)
    return not any(w.lower() not in POINTING for w in re.findall(r"[^\W_]{2,}", rest))


def _sentences(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        role, _, said = line.partition(": ")
        if role not in ("user", "assistant"):
            continue
        for sentence in map(str.strip, _SENTENCE_END.split(said)):
            if 12 <= len(sentence) <= MAX_SENTENCE:
                out.append((role, sentence))
    return out


def _fixes(evidence: list[Evidence]) -> list[tuple[Evidence, Evidence, list[str]]]:
    """(the piece where a command failed, the later piece where it passed, the files changed between)."""
    ordered = sorted(evidence, key=lambda e: (e.session_id, e.time, e.turn))
    out = []
    for i, piece in enumerate(ordered):
        for command, failed in piece.commands:
            if not failed:
                continue
            files: list[str] = []
            for later in ordered[i:]:
                if later.session_id != piece.session_id:
                    break
                files.extend(f for f in later.files if f not in files)
                if any(c == command and f is False for c, f in later.commands):
                    out.append((piece, later, files))
                    break
    return out


def _command_in(failed: Evidence, fixed: Evidence) -> str:
    passed = {c for c, f in fixed.commands if f is False}
    return next((c for c, f in failed.commands if f and c in passed), "")


def _error_of(piece: Evidence) -> str:
    for line in piece.text.splitlines():
        if "→ failed: " in line:
            return line.split("→ failed: ", 1)[1][:200]
    return "an error"


def _add(
    out: dict[str, Any], model: Any, kind: str, body: str, pieces: list[Evidence], reason: str, where: str
) -> None:
    """One candidate; its subjects are its pieces' ids and ``where`` (the sentence, or the fix, in them)."""
    pieces = list({p.id: p for p in pieces}.values())  # (an error fixed within one exchange: one piece)
    evidence_ids = tuple(sorted({p.id for p in pieces}))
    subjects = tuple(sorted({*evidence_ids, where}))
    key = model.candidate_id("session", subjects)
    if key in out:
        return
    refs = tuple(model.EvidenceRef("evidence", p.id, p.text[:280], p.provenance()) for p in pieces)
    first = pieces[0]
    out[key] = model.Candidate(
        id=key,
        type="session",
        subjects=subjects,
        title=f"{kind}: {body.splitlines()[0][:100]}",
        reason=f"{reason} (session {first.session_id}, turn {first.turn}, {first.time})",
        evidence=refs,
        default_action="write",  # the queue's one action for a session candidate (reject: a decision)
        actions=("write",),
        new_memory=model.NewMemory(
            body=body,
            kind=kind,
            tags=("session",),
            derived_from=evidence_ids,
            source=f"session:{first.session_id}",
        ),
        created=first.time,
    )
