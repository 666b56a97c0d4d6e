"""The task text ``ee context`` packs for, when it is not typed: from the staged change, from paths, from
the branch, or from an agent harness's JSON on stdin.

* ``--for-staged``: the words that name the memories about the staged change (memory files left out),
  by the rule the commit template follows (:meth:`ee.workspace.Workspace.change_task`): the ``paths``
  globs of the memories citing a staged file, the signature words of a risky memory the added lines
  strongly match, then the staged files' own names as the index weighs them — not their folders, nor
  the project's name.
* ``--for-paths PATH…``: the same words for the given paths (repository-relative; their contents are not
  read, so no added lines).
* ``--for-branch``: the branch name in words, then the subjects of its own commits, those the default
  branch does not hold (:func:`ee.hooks.gitinfo.branch_task`; what the post-checkout hook packs into
  ``.ee/context.md``).
* ``-`` as the task: standard input; a JSON object with a ``prompt`` field (Claude Code's
  ``UserPromptSubmit`` input) gives that field, anything else is the task as text.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ee.query.document import Query

NOTHING_ABOUT_IT = (
    "no memory is about these files: none cites them in its paths, and the store holds no word of their "
    "names that tells them apart"
)

# What a session starts with, on any branch: the memories that say how to work in the whole project.
SESSION_KINDS = ("rule", "convention", "command", "anti-pattern")


def task_query(
    root: Path | None,
    words: Sequence[str],
    min_relevance: float | None,
    *,
    for_staged: bool = False,
    for_paths: bool = False,
    for_branch: bool = False,
    for_session: bool = False,
) -> tuple[Query, float | None]:
    """The query of ``ee context`` (and of the MCP tool ``context``) for a task given as ``words`` or by
    one of the ``for_*`` sources, and the relevance floor it is packed with: a session's start
    (:func:`session_query`, of the workspace at ``root``, else of this folder) has none unless
    ``min_relevance`` says so. ``root`` is needed for ``for_staged`` and ``for_paths``: their words are
    weighed by that workspace's index."""
    from ee.errors import UsageError
    from ee.query.document import from_arguments

    if for_session:
        if words or for_staged or for_paths or for_branch:
            raise UsageError(
                "--for-session packs the project's rules: it takes no task nor another --for-…",
                "drop the others (or drop --for-session)",
            )
        floor = 0.0 if min_relevance is None else min_relevance  # (nothing is asked yet)
        return session_query(root or Path.cwd()), floor
    task = resolve_task(words, root, for_staged=for_staged, for_paths=for_paths, for_branch=for_branch)
    return from_arguments(task), min_relevance


def resolve_task(
    words: Sequence[str],
    root: Path | None = None,
    *,
    for_staged: bool = False,
    for_paths: bool = False,
    for_branch: bool = False,
    read_stdin: Callable[[], str] | None = None,
) -> str:
    """The task for ``ee context``: ``words`` joined, or from exactly one of the other sources (those of
    a change need the workspace at ``root``: :func:`change_task`)."""
    from ee.errors import QueryError, UsageError

    sources = [
        name
        for name, on in (
            ("--for-staged", for_staged),
            ("--for-paths", for_paths),
            ("--for-branch", for_branch),
        )
        if on
    ]
    if len(sources) > 1:
        raise UsageError(f"{' and '.join(sources)} do not go together", "pick one of them")
    if for_paths:
        if not words:
            raise UsageError(
                "--for-paths needs at least one PATH", "ee context --for-paths src/db/migrate.py"
            )
        paths = [path.removeprefix("./") for path in words]
        return _checked(change_task(root, paths, ""), NOTHING_ABOUT_IT)
    if sources and words:
        raise UsageError(f"give TASK or {sources[0]}, not both", f"drop the task, or drop {sources[0]}")
    if for_staged:
        paths, added = staged_change(Path.cwd())
        if not paths:
            return _checked("", "nothing is staged: git add the change first")
        return _checked(change_task(root, paths, added), NOTHING_ABOUT_IT)
    if for_branch:
        from ee.hooks import gitinfo

        return _checked(gitinfo.branch_task(Path.cwd()), "no branch or commits to describe")
    if list(words) == ["-"]:
        return _checked(task_from_input((read_stdin or sys.stdin.read)()), "standard input gave no task")
    if not " ".join(words).strip():
        raise QueryError(
            "nothing to pack for: the task is empty" if words else "nothing to pack for",
            'describe the task: ee context "fix the flaky upload test" (or --for-staged)',
        )
    return " ".join(words)


def session_query(cwd: Path) -> Query:
    """The pack a session starts with (Claude Code's SessionStart, ``ee context --for-session``): the
    project's rules, conventions, commands and anti-patterns (:data:`SESSION_KINDS`), whatever the branch,
    those that name the branch's words first. Nothing is asked yet, so no relevance floor applies (the
    caller turns it off); the budget and the profile decide what fits."""
    from ee.hooks import gitinfo
    from ee.query.document import Query, from_arguments

    words = gitinfo.branch_words(cwd) if gitinfo.workspace_root(str(cwd)) is not None else ""
    query = from_arguments(" ".join(["project rule convention command anti-pattern", words]).strip())
    return Query(query.doc | {"filters": {"kind": {"in": list(SESSION_KINDS)}}}, query.notes)


def staged_change(cwd: Path) -> tuple[list[str], str]:
    """(the staged paths, repository-relative; the lines the staged change adds), memory files left out."""
    from ee.hooks import gitinfo

    top = gitinfo.git("rev-parse", "--show-toplevel", cwd=cwd).strip()
    root = gitinfo.workspace_root(top)
    exclude = [gitinfo.relative_prefix(root, top) + "memories"] if root is not None else []
    return gitinfo.StagedChange(cwd, exclude=exclude).read()


def change_task(root: Path | None, paths: list[str], added: str) -> str:
    """The words that name the memories about a change (:meth:`ee.workspace.Workspace.change_task`), in
    the workspace at ``root`` (None: the one this folder is in)."""
    from ee.workspace import Workspace

    return (Workspace(root) if root is not None else Workspace.discover(None)).change_task(paths, added)


def task_from_input(text: str) -> str:
    """A harness's hook input (JSON with ``prompt``) or plain text → the task (a long one is shortened by
    the rule every query text follows: :func:`ee.query.document.shortened`)."""
    task = text
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            prompt = doc.get("prompt")
            task = prompt if isinstance(prompt, str) else ""
    return task.strip()


def _checked(task: str, why: str) -> str:
    if not task.strip():
        from ee.errors import QueryError

        raise QueryError(f"no task: {why}", 'or describe the task: ee context "…"')
    return task
