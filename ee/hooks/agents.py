"""Agent harness hooks: Claude Code's ``SessionStart`` and ``UserPromptSubmit`` call ``ee context``;
``SessionEnd`` and ``PreCompact`` import the session's transcript in the background (ee.hooks.sessions).

``ee hooks agent claude-code`` prints the entries; ``--write`` merges them into the project's
``.claude/settings.json`` (other settings and other hooks kept, key order kept, idempotent: an ee entry
already there is updated in place, never duplicated). The shape is Claude Code's documented one::

    {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "…", "timeout": 10}]}]}}

Each command prints ``--format hook`` JSON (``hookSpecificOutput.additionalContext``). An agent hook never
gets in the harness's way: with ``--format hook`` an ee error prints an empty context (exit 0) and the
error on stderr — Claude Code treats exit 2 of a UserPromptSubmit hook as "block this prompt", and 2 is
ee's usage-error code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SETTINGS = ".claude/settings.json"
TIMEOUT = 10  # seconds Claude Code gives the command
PACK = "--format hook --profile compact --max-tokens 1200"
ARGUMENTS = {
    "SessionStart": f"context --for-session {PACK}",
    "UserPromptSubmit": f"context - {PACK}",
    # The session's transcript → evidence, in the background (ee.hooks.sessions): the agent never waits.
    "SessionEnd": "import session --from-hook",
    "PreCompact": "import session --from-hook",
}


def commands() -> dict[str, str]:
    """Each event's command line. ee is named by its absolute path (see :func:`ee.install.ee_command`):
    the harness runs hooks with a PATH of its own, where a bare ``ee`` fails without a word."""
    from ee.install import ee_shell_command

    ee = ee_shell_command()
    return {event: f"EE_HOOK_EVENT={event} {ee} {args}" for event, args in ARGUMENTS.items()}


def claude_code_hooks() -> dict[str, Any]:
    """The ``hooks`` part of ``.claude/settings.json`` that ee adds."""
    return {"hooks": {event: [{"hooks": [_entry(command)]}] for event, command in commands().items()}}


def is_ee_entry(hook: Any) -> bool:
    command = hook.get("command", "") if isinstance(hook, dict) else ""
    if not isinstance(command, str):
        return False
    return (
        "ee context" in command and "--format hook" in command
    ) or "ee import session --from-hook" in command


def merge_claude_settings(settings: dict[str, Any]) -> bool:
    """Add or update ee's entries in ``settings`` (in place); True when something changed."""
    from ee.errors import ConfigError

    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f'{SETTINGS}: "hooks" is not an object', f"fix {SETTINGS} by hand, then run again")
    changed = False
    for event, command in commands().items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ConfigError(f"{SETTINGS}: hooks.{event} is not a list", f"fix {SETTINGS} by hand")
        changed |= _merge_event(groups, _entry(command))
    return changed


def _merge_event(groups: list[Any], entry: dict[str, Any]) -> bool:
    placed = False
    changed = False
    for group in groups:
        items = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(items, list):
            continue
        for index in reversed(range(len(items))):
            if not is_ee_entry(items[index]):
                continue
            if placed:  # a duplicate left by hand: one ee entry per event
                del items[index]
                changed = True
            else:
                changed |= items[index] != entry
                items[index] = entry
                placed = True
    groups[:] = [g for g in groups if not (isinstance(g, dict) and g.get("hooks") == [] and len(g) == 1)]
    if not placed:
        groups.append({"hooks": [entry]})
        changed = True
    return changed


def write_claude_settings(folder: Path) -> dict[str, Any]:
    """Merge ee's entries into ``folder/.claude/settings.json`` (created when missing)."""
    from ee.errors import ConfigError
    from ee.store.files import atomic_write

    path = folder / SETTINGS
    try:
        settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc})", "fix it by hand, then run again") from None
    if not isinstance(settings, dict):
        raise ConfigError(f"{path} does not hold a JSON object", "fix it by hand, then run again")
    changed = merge_claude_settings(settings)
    if changed:
        atomic_write(path, (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return {"path": str(path), "changed": changed, "hooks": commands()}


CODEX_CONFIG = ".codex/config.toml"  # in the home folder: Codex's notify is one program for every session
CODEX_FLAG = "--from-codex-notify"


def codex_notify() -> list[str]:
    """Codex CLI's ``notify`` program: ee, importing the turn's rollout (Codex appends its JSON argument)."""
    from ee.install import ee_command

    return [*ee_command(), "import", "session", CODEX_FLAG]


def codex_notify_line() -> str:
    """The ``notify = [...]`` line of ``~/.codex/config.toml`` (TOML basic strings: JSON's escapes)."""
    return "notify = [" + ", ".join(json.dumps(word) for word in codex_notify()) + "]"


def write_codex_config(home: Path) -> dict[str, Any]:
    """Set ``notify`` in ``home/.codex/config.toml`` (created when missing; the rest of the file kept as
    it is). Another program already there is left alone: Codex runs one, so the person chooses."""
    import re
    import tomllib

    from ee.errors import ConfigError
    from ee.store.files import atomic_write

    path = home / CODEX_CONFIG
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        current = tomllib.loads(text).get("notify")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc})", "fix it by hand, then run again") from None
    line = codex_notify_line()
    data = {"path": str(path), "notify": codex_notify()}
    if current == data["notify"]:
        return data | {"changed": False}
    if current is None:
        updated = f"{line}\n{text}"  # (a top-level key goes before any [table])
    else:
        mine = isinstance(current, list) and CODEX_FLAG in current
        old = re.compile(r"^notify\s*=\s*\[[^\n]*\][ \t]*$", re.MULTILINE)
        if not mine or len(old.findall(text)) != 1:
            raise ConfigError(
                f"{path} already sets notify to another program: {current!r}",
                f"Codex runs one notify program: replace it with {line} (or call ee from yours)",
            )
        updated = old.sub(lambda _m: line, text)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, updated.encode("utf-8"))
    return data | {"changed": True}


def never_block(fmt: str | None, run: Callable[[], int]) -> int:
    """Run an ``ee context`` command; with ``--format hook`` an ee error becomes an empty context, exit 0."""
    if fmt != "hook":
        return run()
    from ee.errors import EeError
    from ee.render.results import render
    from ee.results.pack import Pack

    try:
        return run()
    except EeError as exc:
        print(f"ee: no context ({exc.message}; repair: {exc.hint})", file=sys.stderr, flush=True)
        sys.stdout.write(render(Pack.from_json({"sections": []}), "hook"))
        sys.stdout.flush()
        return 0


def _entry(command: str) -> dict[str, Any]:
    return {"type": "command", "command": command, "timeout": TIMEOUT}
