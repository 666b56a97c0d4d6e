"""Which commit last touched each memory file, who may have written it since a person last vouched for it,
and the blob each path has at HEAD.

Computed when HEAD moves (one ``git ls-tree`` and one ``git log`` walk, incremental when the old HEAD is an
ancestor of the new one) and saved with the index generation, so the read path spawns no git process
while nothing changes.

**Writer since review.** Trust does not follow the last committer (a person's tag edit on an agent's memory
would launder it): each path also records the newest agent (``agent:<name>``) that committed it after the
newest human trust review (a commit with ``Ee-Op: trust`` by a person, ``ee memory trust``), or ``""`` when
no agent did — counting from the commit that created the file, and following renames (``git mv`` of an
agent's file is no review either), and counting an agent's commit the review cannot reach (a branch merged
after it). :func:`ee.query.standing.resolve_trust` caps a memory with such a writer at ``agent_assertion``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ee.errors import GitError
from ee.git.runner import RECORD, records
from ee.policy.secrets import mask_text
from ee.store.files import MEMORIES

_FORMAT = (
    f"{RECORD}%H%x00%aI%x00%an%x00%s%x00%(trailers:key=Ee-Actor,valueonly,separator=%x2C)"
    "%x00%(trailers:key=Ee-Op,valueonly,separator=%x2C)"
)
REVIEW_OP = "trust"  # the Ee-Op of `ee memory trust`: a person's explicit review of a memory's trust


def provenance(git: Any, old_state: dict[str, Any], commit: str | None = None) -> dict[str, Any]:
    """``{"head_commit", "head_blobs": {path: blob},
    "provenance": {path: [commit, date, author, subject, actor, writer]},
    "agent_memories": {path: [blob, memory id, writer]}, "agent_ids": {memory id: writer}}``.

    ``writer`` is the agent who committed the file since its last human review (module doc), else ``""``.
    ``agent_memories`` lists the files at HEAD with a writer, ``agent_ids`` their memory ids (see
    :func:`writer_of`). For HEAD, or for ``commit`` (an asOf view).
    """
    head = commit or git.head()
    if head is None:
        return {
            "head_commit": None,
            "head_blobs": {},
            "provenance": {},
            "agent_memories": {},
            "agent_ids": {},
        }
    head_blobs = _ls_tree(git, head)
    old_head = old_state.get("head_commit")
    old: dict[str, list[str]] = {}
    walk = head
    if old_head and old_head != head and _is_ancestor(git, old_head, head):
        old = dict(old_state.get("provenance", {}))
        walk = f"{old_head}..{head}"
    elif old_head == head and "agent_memories" in old_state and "agent_ids" in old_state:
        return {
            "head_commit": head,
            "head_blobs": head_blobs,
            "provenance": old_state.get("provenance", {}),
            "agent_memories": old_state["agent_memories"],
            "agent_ids": old_state["agent_ids"],
        }
    # core.quotePath=false: a path with non-ASCII letters is printed as it is, not C-quoted (which would
    # never match a path of ls-tree and leave the file without provenance).
    out = git.run(
        "-c",
        "core.quotePath=false",
        "log",
        f"--format={_FORMAT}",
        "--name-status",
        "-M",
        walk,
        "--",
        git.repo_path(MEMORIES),
        cwd=git.toplevel,
    )
    walker = _Walk(set(head_blobs))
    for record in records(out):
        if record.strip():
            walker.commit(record, git.offset)
    for path, review in walker.reviewed.items():
        if walker.writer.get(path) == "":
            walker.writer[path] = _agent_since(git, review, head, path)
    prov: dict[str, list[str]] = {}
    for path in head_blobs:
        last = walker.last.get(path)
        before = old.get(walker.first_name.get(path, path)) if path not in walker.created else None
        if last is None and before is None:
            continue
        writer = walker.writer.get(path)
        if writer is None:  # nothing decisive in this walk: what the older history said
            writer = _writer_of(before) if before else ""
        prov[path] = [*(last or before or [])[:5], writer]
    agents = _agent_memories(git, prov, head_blobs, old_state.get("agent_memories") or {})
    return {
        "head_commit": head,
        "head_blobs": head_blobs,
        "provenance": dict(sorted(prov.items())),
        "agent_memories": agents,
        "agent_ids": agent_ids(agents),
    }


def writer_of(state: Mapping[str, Any], path: str, memory_id: str) -> str:
    """The agent who wrote this memory since a person last reviewed it, else ``""``: what decides whether
    its ``trust:`` key is capped (:func:`ee.query.standing.resolve_trust`).

    The writer of its path at HEAD, or else of its id: a memory keeps its id when its file is copied or
    moved, so a copy of an agent's memory under a new name, or a move not committed yet, is still the
    agent's memory, whatever its new file says. (A ``git mv`` that was committed is followed by the walk.)
    """
    prov = state.get("provenance", {}).get(path)
    own = _writer_of(prov) if prov else ""
    return own or state.get("agent_ids", {}).get(memory_id, "")


def agent_ids(agents: Mapping[str, list[str]]) -> dict[str, str]:
    """Memory id → its writer, from ``agent_memories``."""
    return {memory_id: writer for _blob, memory_id, writer in agents.values()}


def _agent_memories(
    git: Any, prov: Mapping[str, list[str]], head_blobs: Mapping[str, str], old: Mapping[str, list[str]]
) -> dict[str, list[str]]:
    """Path → ``[blob, memory id, writer]`` of each file at HEAD that an agent wrote since its last review.

    A file's id is in its frontmatter (or derived from its path): read from the blob at HEAD, once per path
    and blob (the old state's entries are kept while their blob is the same). A blob that does not parse
    names no id (the index reports the file)."""
    from ee.errors import EeError
    from ee.store.frontmatter import decode, parse

    out: dict[str, list[str]] = {}
    unknown: dict[str, tuple[str, str]] = {}  # path → (blob, writer)
    for path, entry in prov.items():
        writer = _writer_of(entry)
        blob = head_blobs.get(path)
        if not writer or blob is None:
            continue
        kept = old.get(path)
        if kept and kept[0] == blob:
            out[path] = [blob, kept[1], writer]
        else:
            unknown[path] = (blob, writer)
    if unknown:
        datas = git.read_blobs(blob for blob, _writer in unknown.values())
        for path, (blob, writer) in unknown.items():
            try:
                memory_id = parse(decode(datas.get(blob, b""), path), path)[0].id
            except (EeError, ValueError):
                continue
            out[path] = [blob, memory_id, writer]
    return dict(sorted(out.items()))


def _agent_since(git: Any, review: str, head: str, path: str) -> str:
    """The newest agent that committed ``path`` in ``review..head``, else ``""``.

    The walk goes by commit date, so an agent's commit on a branch merged after the review can come
    later in it than the review while the review never saw it; what ``review`` cannot reach is what the
    person did not review (one ``git log`` per reviewed file: reviews are rare).
    """
    out = git.run(
        "log",
        "--follow",
        "--format=%(trailers:key=Ee-Actor,valueonly,separator=%x2C)",
        f"{review}..{head}",
        "--",
        git.repo_path(path),
        cwd=git.toplevel,
    )
    return next((actor for line in out.splitlines() if (actor := actor_of(line)).startswith("agent:")), "")


def actor_of(values: str) -> str:
    """The actor of a commit from its ``Ee-Actor`` values (comma-separated): an agent when any value names
    one — a message may carry a forged ``Ee-Actor: human`` beside the one ee's commit-msg hook stamps —
    else the first value, else ``human`` (a commit without the trailer)."""
    parts = [part.strip() for part in values.split(",") if part.strip()]
    return next((part for part in parts if part.startswith("agent:")), parts[0] if parts else "human")


def _writer_of(record: list[str]) -> str:
    if len(record) > 5:
        return record[5]
    return record[4] if record[4].startswith("agent:") else ""


class _Walk:
    """One newest-first walk of ``git log --name-status -M`` over the memory files at HEAD."""

    def __init__(self, at_head: set[str]) -> None:
        self.at_head = at_head
        self.last: dict[str, list[str]] = {}  # path at HEAD → its newest commit's fields
        self.writer: dict[str, str] = {}  # path at HEAD → decided writer ("" when a review came first)
        self.alias: dict[str, str] = {}  # an older name → the path at HEAD it was renamed to
        self.first_name: dict[str, str] = {}  # path at HEAD → its oldest name seen (for the older state)
        self.created: set[str] = set()  # paths at HEAD whose creating commit the walk reached
        self.reviewed: dict[str, str] = {}  # path at HEAD → the review commit that decided its writer

    def commit(self, record: str, offset: tuple[str, str]) -> None:
        inner, outer = offset
        head_part, _, names = record.partition("\n")
        fields = head_part.split("\x00")
        if len(fields) < 6:
            return
        sha, date, author, subject, actor, op = fields[:6]
        actor = actor_of(actor)
        # git's words: a hand commit's author and subject, and its trailers, never met ee's write guard;
        # masked here, once per commit walked, so every answer shows them masked (the walk's own test
        # of the actor reads a masked one the same: "agent:" stays)
        author, subject, actor = mask_text(author), mask_text(subject), mask_text(actor)
        for line in names.split("\n"):  # (a name printed unquoted may hold U+2028)
            parts = line.split("\t")
            if len(parts) < 2:
                continue
            status, name = parts[0], outer + parts[-1].removeprefix(inner)
            path = self.alias.get(name, name)
            if path not in self.at_head or path in self.created:
                continue
            self.last.setdefault(path, [sha, date, author, subject, actor])
            if path not in self.writer:
                if actor.startswith("agent:"):
                    self.writer[path] = actor
                elif REVIEW_OP in (value.strip() for value in op.split(",")):  # (curate attest: two Ee-Op)
                    self.writer[path] = ""
                    self.reviewed[path] = sha
            if status.startswith("R") and len(parts) == 3:
                older = outer + parts[1].removeprefix(inner)
                self.alias[older] = path
                self.first_name[path] = older
            elif status.startswith(("A", "C")):
                self.created.add(path)  # older commits of this name were another file
                self.writer.setdefault(path, "")


def _ls_tree(git: Any, commit: str) -> dict[str, str]:
    """``Git.ls_tree(commit, MEMORIES)`` (same rules: ``*.md`` blobs, no hidden parts), each path mapped
    by string operations (:attr:`Git.offset`)."""
    inner, outer = git.offset
    out = git.run("ls-tree", "-r", "-z", "--full-tree", commit, "--", git.repo_path(MEMORIES))
    files: dict[str, str] = {}
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        if not path.endswith(".md"):
            continue
        mode, kind, sha = meta.split()
        rel = outer + path.removeprefix(inner)
        hidden = any(part.startswith(".") for part in rel.removeprefix(MEMORIES).split("/"))
        if kind == "blob" and mode in ("100644", "100755") and not hidden:
            files[rel] = sha
    return files


def _is_ancestor(git: Any, old: str, new: str) -> bool:
    try:
        git.run("merge-base", "--is-ancestor", old, new)
    except GitError:
        return False
    return True
