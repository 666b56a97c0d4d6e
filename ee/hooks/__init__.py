"""Git hooks and agent-harness hooks: memory reaches people and agents without anyone asking.

* :mod:`ee.hooks.wiring` — ``ee hooks install | uninstall | status``: shims in the repository's hooks
  folder (``core.hooksPath`` honoured), a user's existing hook chained (``NAME.ee-chained``) and restored
  byte-for-byte on uninstall.
* ``hooks/ee-hook-run`` (shipped as ``ee/hooks_scripts``) — the shell runner: the chained hook first, then
  ``ee hook NAME`` within ``[hooks] timeout``; fails open.
* :mod:`ee.hooks.run` — ``ee hook NAME``: what each hook does (pre-commit warnings, blocks and the secret
  check; prepare-commit-msg comments; index and ``.ee/context.md`` upkeep).
* :mod:`ee.hooks.risks` — the hook table and the path / word matching behind the warnings.
* :mod:`ee.hooks.tasks` — the task text of ``ee context --for-staged / --for-paths / --for-branch / -``.
* :mod:`ee.hooks.agents` — Claude Code ``SessionStart`` / ``UserPromptSubmit`` entries.

**Exit codes of ``ee hook``:** 0 (done or skipped) and :data:`BLOCKED` = 40 (the commit must stop: a
secret in a staged memory file, or a memory that blocks). The runner maps 40 to 1 for git and reports
anything else (a timeout, a crash, ee missing) as ``ee: hook skipped (…)``, exiting 0.

Importing this package imports nothing heavy.
"""

from __future__ import annotations

from ee.hooks.run import BLOCKED, HOOK_NAMES, main

__all__ = ["BLOCKED", "HOOK_NAMES", "main"]
