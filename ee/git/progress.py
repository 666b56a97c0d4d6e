"""A git operation started and not finished (a rebase, a merge, a cherry-pick, a revert, a bisect): the one
table of what git leaves in its folder meanwhile, read by ee's commit path, ``ee sync``, the git hooks and
``ee doctor``.

Which of them ee itself started (``ee sync``'s rebase or merge, killed half-way) is recorded by
:mod:`ee.ops.sync_session` before it starts one; this module only says what is in progress.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath


@dataclass(frozen=True, slots=True)
class Operation:
    marker: str  # what git leaves in its folder while it is in progress
    name: str
    # Its abort (or reset) moves HEAD back where it was: a commit made meanwhile would be dropped.
    leaves_head: bool
    # ee's hooks stay quiet while it replays commits (they ran when those commits were first made).
    quiet_hooks: bool
    finish: str
    abort: str


CHERRY_ABORT = "git cherry-pick --abort"
OPERATIONS = (
    Operation("rebase-merge", "rebase", True, True, "git rebase --continue", "git rebase --abort"),
    Operation("rebase-apply", "rebase", True, True, "git rebase --continue", "git rebase --abort"),
    Operation("MERGE_HEAD", "merge", False, False, "git commit", "git merge --abort"),
    Operation("CHERRY_PICK_HEAD", "cherry-pick", False, True, "git cherry-pick --continue", CHERRY_ABORT),
    Operation("REVERT_HEAD", "revert", False, True, "git revert --continue", "git revert --abort"),
    Operation("BISECT_LOG", "bisect", True, False, "git bisect reset", "git bisect reset"),
)


def in_progress(git_dir: StrPath) -> Operation | None:
    """The operation in progress in the repository whose git folder is ``git_dir``, or None."""
    for operation in OPERATIONS:
        if os.path.lexists(os.path.join(git_dir, operation.marker)):
            return operation
    return None
