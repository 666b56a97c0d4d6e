"""``ee memory resolve``: settle a memory that a sync (:mod:`ee.ops.sync`) left holding several versions of
its text, and the list of such memories a sync reports (:func:`conflicted_memories`), each version labelled
as this clone's own or the remote's (:func:`local_commits`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ee.errors import ConflictError, EeError, UsageError
from ee.git.repo import Git, format_message
from ee.ops.sync_session import refuse_in_progress
from ee.store.files import MEMORIES

if TYPE_CHECKING:
    from ee.policy.trust import Actor
    from ee.workspace import Workspace


def conflicted_memories(ws: Workspace) -> list[dict[str, Any]]:
    """The memories that hold several versions of their text, each with its versions (which one is this
    clone's own) and the command that settles it. One ``git grep`` finds the candidates."""
    from ee.git.merge import is_conflicted, side_of, versions_of

    out = ws.git.run(
        "grep",
        "-l",
        "-z",
        "-E",
        "-e",
        r"^conflict: *true",
        "-e",
        "^<!-- ee:conflict: ",
        "-e",
        "^<{7} ",
        "--",
        ws.git.repo_path(MEMORIES),
        cwd=ws.git.toplevel,
        check=False,
    )
    found = []
    for repo_path in sorted(p for p in out.split("\0") if p):
        rel = ws.git.workspace_path(repo_path)
        try:
            memory, _problems = ws.store.read(rel)
        except EeError:
            continue
        if not is_conflicted(memory):
            continue
        versions = versions_of(memory.body) or []
        local = local_commits(ws.git, versions)
        found.append(
            {
                "id": memory.id,
                "path": rel,
                "title": memory.title,
                "versions": [
                    {"author": v.author, "commit": v.commit, "date": v.date, "side": side_of(v, local)}
                    for v in versions
                ],
                "resolve": f"ee memory resolve {memory.id} --pick local|remote|both",
            }
        )
    return found


_MADE_HERE = ("commit", "ee:", "cherry-pick", "revert", "am:")
_REPLAYED = ("(pick)", "(continue)", "(squash)", "(fixup)", "(reword)", "(edit)")


def local_commits(git: Git, versions: list[Any]) -> set[str]:
    """The versions' commits (as labelled) that were made in this clone — "local": this clone's own change,
    whatever git's "ours" and "theirs" meant in the rebase or merge that kept both texts.

    The HEAD reflog says so: a commit made here (``git commit``, ee's writes, a cherry-pick) or a commit of
    this clone's replayed by a rebase; a commit that only arrived (a fast-forward, the upstream a rebase
    started from) is not. Past the reflog's expiry (90 days) nothing is local: pick by commit then."""
    wanted = {v.commit for v in versions if v.commit}
    if not wanted:
        return set()
    out = git.run("log", "-g", "--format=%H%x09%gs", "HEAD", "--", check=False)
    found: set[str] = set()
    for line in out.splitlines():
        sha, _tab, subject = line.partition("\t")
        made = subject.startswith(_MADE_HERE) or "Merge made by" in subject
        if made or any(step in subject.split(":", 1)[0] for step in _REPLAYED):
            found.update(c for c in wanted if sha.startswith(c))
    return found


def resolve_memory(
    ws: Workspace,
    memory_id: str,
    pick: str | None = None,
    text: str | None = None,
    actor: Actor | None = None,
) -> tuple[Any, str]:
    """Settle a conflicted memory: keep the ``local`` version, the ``remote`` one, ``both``, the one of a
    commit or an author (see :func:`ee.git.merge.choose`), or a given text; one commit."""
    from ee.git.merge import choose, is_conflicted, resolve_text, side_of, versions_of
    from ee.git.repo import blob_id
    from ee.policy.trust import Actor
    from ee.store import frontmatter
    from ee.store.fields import check_text, guard_memory

    if pick is not None and text is not None:
        raise UsageError("say how to resolve, once", "pass --pick or --text FILE, not both")
    actor = actor or Actor.from_env()
    body = guard_memory({}, check_text(text))[1] if text is not None else None
    refuse_in_progress(ws.git)
    with ws.lock():
        memory = ws.get(memory_id)
        if not is_conflicted(memory):
            raise UsageError(
                f"{memory_id} has no conflict to resolve", f"edit {memory.path} by hand if needed"
            )
        data = ws.store.read_bytes(memory.path)
        head = ws.git.run("rev-parse", "-q", "--verify", f"HEAD:{ws.git.repo_path(memory.path)}", check=False)
        if head.strip() != blob_id(data):
            raise ConflictError(
                f"{memory.path} has changes that are not committed",
                f"commit them (git add {memory.path} && git commit) or undo them "
                f"(git checkout -- {memory.path}), then run the command again",
            )
        chosen = None
        if body is None:
            versions = versions_of(memory.body)
            if versions is None:
                raise UsageError(
                    f"the versions in {memory.path} are not well formed",
                    "pass --text FILE with the text to keep",
                )
            local = local_commits(ws.git, versions)
            if pick is None:
                shown = "; ".join(f"{v.label()} ({side_of(v, local)})" for v in versions)
                raise UsageError(
                    f"{memory_id} holds {len(versions)} versions: {shown}",
                    f"keep one: ee memory resolve {memory_id} --pick local|remote|both|<commit>, "
                    "or pass --text FILE",
                )
            chosen = choose(versions, pick, local)
        new_text = resolve_text(frontmatter.decode(data, memory.path), chosen, body, memory.path)
        try:
            updated, _ = frontmatter.parse(new_text, memory.path)
        except EeError:
            raise UsageError(
                f"the {pick} version of {memory_id} is empty", "pick another, or pass --text FILE"
            ) from None
        ws.store.write(memory.path, new_text)
        sha = ws.git.commit_paths(
            [memory.path],
            format_message(
                f"ee: resolve {updated.title}",
                {"Ee-Op": "resolve", "Ee-Memory": memory.id, "Ee-Actor": actor.label},
            ),
        )
    from ee.policy.secrets import mask_memory

    return mask_memory(updated), sha  # (as output shows it: a hand-typed secret masked)
