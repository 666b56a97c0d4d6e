"""Git hooks and agent-harness hooks: memory reaches people and agents without anyone asking.

* :mod:`ee.hooks.wiring` — ``ee hooks install | uninstall | status``: shims in the repository's hooks
  folder (``core.hooksPath`` honoured), a user's existing hook chained (``NAME.ee-chained``) and restored
  byte-for-byte on uninstall.
* ``hooks/ee-hook-run`` (shipped as ``ee/hooks_scripts``) — the shell runner: the chained hook first, then
  ee's hook within ``[hooks] timeout``; fails open.
* :mod:`ee.hooks.run` — ``ee hook NAME`` (and ``python -P -m ee.hooks NAME``): what each hook does
  (pre-commit warnings, blocks and the secret check; prepare-commit-msg comments; index and
  ``.ee/context.md`` upkeep).
* :mod:`ee.hooks.warm` — with the user's server running, a hook sends the staged change it read to it,
  and the server answers it as its ``hook_check`` operation (:meth:`ee.workspace.Workspace.hook_check`).
* :mod:`ee.ops.risks` (below the façade) — the hook table, the path / word matching behind the warnings
  and a change's query words: the same functions checked warm by the server and cold by a hook.
* :mod:`ee.hooks.tasks` — the task of ``ee context --for-staged / --for-paths / --for-branch / -``, and the
  query of ``--for-session``.
* :mod:`ee.hooks.agents` — Claude Code ``SessionStart`` / ``UserPromptSubmit`` entries.

**Exit codes of ``ee hook``:** 0 (done or skipped) and :data:`ee.hooks.run.BLOCKED` = 40 (the commit must
stop: a secret in a staged memory file, or a memory that blocks). The runner maps 40 to 1 for git and
reports anything else (a timeout, a crash, ee missing) as ``ee: hook skipped (…)``, exiting 0.

Importing this package imports nothing (``ee context`` imports :mod:`ee.hooks.tasks` from here).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BLOCKED", "HOOK_NAMES", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ee.hooks import run

        return getattr(run, name)
    raise AttributeError(name)
