"""Deterministic crash points for the reliability suite (``tests/reliability/test_crash.py``).

``EE_CRASH_AT=<label>`` makes the process kill itself with SIGKILL the first time it reaches
``crash_point(<label>)``; ``EE_CRASH_AT=<label>:<n>`` the n-th time (e.g. the 1,000th file of an import).
Nothing is cleaned up, flushed or unwound: it is ``kill -9`` at a known place. Unset, a call costs one
environment look-up.

Labels: ``write.temp`` (temporary file written and synced, not yet renamed), ``write.renamed`` (renamed
into place), ``git.tree`` (tree written, no commit yet), ``git.commit`` (commit object written, HEAD not
moved), ``git.index`` (git's index refreshed, HEAD not yet moved), ``index.generation`` (generation folder
saved, state not yet written), ``index.manifest`` (new manifest written to its temporary name, not yet
replaced), ``index.segment`` (half of a generation's files written), ``import.journal`` (an import's
journal written, no memory file yet), ``import.committed`` (an import committed, its journal not yet
removed).
"""

from __future__ import annotations

import os

_seen: dict[str, int] = {}


def crash_point(label: str) -> None:
    spec = os.environ.get("EE_CRASH_AT")
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != label:
        return
    _seen[label] = _seen.get(label, 0) + 1
    if _seen[label] >= int(nth or 1):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)
