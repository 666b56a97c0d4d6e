"""Imported agent sessions (ee.sessions, private evidence under ``.ee/sessions/``): :class:`Session`,
:class:`SessionEvidence` of :class:`EvidencePiece`; what an import and a forget did (:class:`SessionImport`,
:class:`SessionForgotten`). See :mod:`ee.results`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar

from ee.results import Degradation, JsonObject, Result


@dataclass(frozen=True, slots=True)
class Session(Result):
    """One imported session (``ee sessions list``): how many pieces of evidence, from when to when, from
    which transcripts, in which folder and branch."""

    TUPLES = frozenset({"transcripts"})

    session_id: str = ""
    evidence: int = 0
    first: str | None = None
    last: str | None = None
    transcripts: tuple[str, ...] = ()
    cwd: str | None = None
    branch: str | None = None
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EvidencePiece(Result):
    """One piece of session evidence: its id, its text (secrets masked), where it was said, its flags
    (secret_masked, quarantined, sidechain)."""

    TUPLES = frozenset({"flags"})

    id: str = ""
    text: str = ""
    provenance: JsonObject = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionEvidence(Result):
    """A session's evidence, or one piece of it (``ee sessions show``)."""

    NESTED: ClassVar[Mapping[str, type[Result]]] = {"evidence": EvidencePiece}

    session_id: str = ""
    evidence: tuple[EvidencePiece, ...] = ()
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SessionImport(Result):
    """``ee import session``: one line per transcript (``files``: path, status, evidence added, session),
    the transcripts that failed (``errors``, each with its code, message and repair), the evidence added
    and pruned, the evidence now held; ``degraded`` (a retention only a tracked config sets, not applied;
    the envelope carries it beside ``data``); ``candidates`` (found, proposed), once the front end
    proposed them to the review queue (:meth:`with_candidates`)."""

    TUPLES = frozenset({"files", "errors", "degraded"})

    files: tuple[JsonObject, ...] = ()
    errors: tuple[JsonObject, ...] = ()
    added: int = 0
    pruned: int = 0
    evidence: int = 0
    degraded: tuple[Degradation, ...] = ()
    candidates: JsonObject | None = None
    shown: tuple[str, ...] = ()

    def with_candidates(self, candidates: JsonObject) -> SessionImport:
        """This report with what the review queue was proposed from it (shown last)."""
        return replace(self, candidates=candidates, shown=(*self.shown, "candidates"))


@dataclass(frozen=True, slots=True)
class SessionForgotten(Result):
    """``ee sessions forget``: the session (or piece) forgotten and how many pieces of evidence went."""

    forgotten: str = ""
    evidence: int = 0
    shown: tuple[str, ...] = ()
