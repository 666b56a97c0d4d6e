"""What ``Workspace.hook_check`` returns: :class:`HookCheck`, a git hook's check of its staged change
(served warm to the hooks, :mod:`ee.hooks.run`). See :mod:`ee.results`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ee.results import Result


@dataclass(frozen=True, slots=True)
class HookCheck(Result):
    """pre-commit: whether the risky memories about the change block the commit (``blocked``) and the
    lines to tell the person (``said``: secrets masked, one per memory, then the block's);
    prepare-commit-msg: the memories the commit message names (``memories``: ``[id, title]`` pairs)."""

    TUPLES = frozenset({"said", "memories"})

    blocked: bool = False
    said: tuple[str, ...] = ()
    memories: tuple[list[str], ...] = ()
    shown: tuple[str, ...] = ()
