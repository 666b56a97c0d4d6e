"""A memory's versions through git history: commit, date, actor, message and the fields that changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ee.errors import GitError, MemoryFormatError, NotFound
from ee.git.runner import RECORD, records
from ee.model import Memory, Version
from ee.store import frontmatter
from ee.store.files import MEMORIES, check_id
from ee.values import KNOWN_KEYS

if TYPE_CHECKING:
    from ee.workspace import Workspace

_COMPARED = (*(key for key in KNOWN_KEYS if key != "id"), "extra")


def history(ws: Workspace, memory_id: str, path: str | None = None) -> list[Version]:
    """Every committed version of ``memory_id``, newest first (a deletion is a version too).

    ``path``: the file that holds the memory now, when the caller knows it (``ee why`` has it from the
    index it just brought up to date); otherwise it is looked up.
    """
    check_id(memory_id)
    path = path or _current_or_last_path(ws, memory_id)
    git = ws.git
    try:
        out = git.run(
            "log",
            "--follow",
            "--name-status",
            "-M",
            f"--format={RECORD}%H%x00%aI%x00%an%x00%B%x00",
            "--",
            git.repo_path(path),
            cwd=git.toplevel,
        )
    except GitError:
        if git.head() is not None:
            raise
        out = ""  # a repository without a commit yet (git log fails there): nothing is committed
    commits: list[tuple[str, str, str, str, str, bool]] = []
    for record in records(out):
        if not record.strip():
            continue
        sha, date, author, message, status = record.split("\x00")
        lines = [line for line in status.strip().splitlines() if line.strip()]
        deleted = False
        file_path = git.repo_path(path)
        created = False
        if lines:
            parts = lines[-1].split("\t")
            deleted = parts[0].startswith("D")
            created = parts[0][:1] in ("A", "C")
            file_path = parts[-1]
        commits.append((sha, date, author, message.strip(), file_path, deleted))
        if created:
            # A copy is where this file began: --follow would go on into the file it resembles,
            # which for short memories is often another memory.
            break
    if not commits:
        raise NotFound(f"memory {memory_id} has no committed history", f"commit {path} first")
    specs = [f"{sha}:{p}" for sha, _d, _a, _m, p, deleted in commits if not deleted]
    contents = git.read_specs(specs)
    versions: list[Version] = []
    parsed: list[Memory | None] = []
    for sha, _date, _author, _message, file_path, deleted in commits:
        memory = None
        if not deleted:
            data = contents.get(f"{sha}:{file_path}")
            if data is not None:
                try:
                    memory, _ = frontmatter.parse(
                        data.decode("utf-8", "replace"), git.workspace_path(file_path)
                    )
                except MemoryFormatError:
                    memory = None
        if memory is not None and memory.id != memory_id:
            break  # git's rename guess led to another memory's file: this memory's history ends here
        parsed.append(memory)
    commits = commits[: len(parsed)]
    from ee.policy.secrets import mask_text

    for index, (sha, date, author, message, file_path, deleted) in enumerate(commits):
        older = (
            next((m for m in parsed[index + 1 :] if m is not None), None) if index + 1 < len(parsed) else None
        )
        current = parsed[index]
        trailers = _trailers(message)
        versions.append(
            Version(
                commit=sha,
                date=date,
                author=mask_text(author),  # git's words: no write guard saw a hand commit's
                actor=mask_text(trailers.get("Ee-Actor", f"human:{author}")),
                op=trailers.get("Ee-Op", "edit" if older else "create") if not deleted else "forget",
                message=mask_text(message),
                path=mask_text(git.workspace_path(file_path)),  # (a secret in a file's name)
                changed=_changed(older, current, deleted),
                deleted=deleted,
            )
        )
    return versions


def _changed(older: Memory | None, current: Memory | None, deleted: bool) -> tuple[str, ...]:
    if deleted:
        return ("deleted",)
    if current is None:
        return ("unreadable",)
    if older is None:
        return ("created",)
    fields = [name for name in _COMPARED if getattr(older, name) != getattr(current, name)]
    if older.body != current.body:
        fields.append("body")
    if older.path != current.path:
        fields.append("path")
    return tuple(fields)


def _trailers(message: str) -> dict[str, str]:
    from ee.git.repo import parse_trailers

    return parse_trailers(message)


def _current_or_last_path(ws: Workspace, memory_id: str) -> str:
    # Cheapest first: the file ee named for it, then the index (opening it may update it), then every file.
    named = ws.store.find_named(memory_id)
    if named is not None:
        return named.path
    indexed = indexed_path(ws, memory_id)
    if indexed is not None:
        return indexed
    try:
        return ws.store.find(memory_id).path
    except NotFound:
        pass
    # Forgotten: find the last commit whose diff added or removed the id, then the file it touched.
    git = ws.git
    if git.head() is None:
        raise NotFound(f"no memory {memory_id}", "run `ee memory list` to see the ids")
    out = git.run(
        "log",
        "-n1",
        "--format=%H",
        "--name-only",
        f"-S{memory_id}",
        "--",
        git.repo_path(MEMORIES),
        cwd=git.toplevel,
    )
    names = [line for line in out.splitlines()[1:] if line.strip().endswith(".md")]
    if not names:
        raise NotFound(f"no memory {memory_id}, now or in history", "run `ee memory list` to see the ids")
    return git.workspace_path(names[0])


def indexed_path(ws: Workspace, memory_id: str) -> str | None:
    """The file holding ``memory_id`` by the index (brought up to date first, as a query does), checked
    by reading that one file; None when there is no usable index or it does not say (the caller then
    looks through the files: a store of 10,000 memories costs seconds to parse, the index milliseconds).

    Without a saved index nothing is built here: a first build embeds every memory, far dearer than the
    scan it would save.
    """
    from ee.errors import EeError
    from ee.index.freshness import read_manifest
    from ee.index.view import open_index

    manifest = read_manifest(ws.root)
    if manifest is None or manifest.get("corrupt"):
        return None
    try:
        view = open_index(ws)
    except EeError:
        return None
    pos = view.gen.position(memory_id)
    if pos is None:
        return None
    rel: str = view.gen.records[pos]["path"]
    try:
        memory, _problems = ws.store.read(rel)
    except (MemoryFormatError, NotFound):
        return None  # changed since the index looked (a concurrent edit): the caller looks everywhere
    return rel if memory.id == memory_id else None
