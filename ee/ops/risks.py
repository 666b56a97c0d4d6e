"""The memories a commit is checked against, and the check: ``Workspace.hook_check``'s use case.

The git hooks (:mod:`ee.hooks.run`) read the staged change with git and ask for the check: the user's
warm server answers it as its ``hook_check`` operation (:meth:`ee.workspace.Workspace.hook_check`, over the
index view it keeps), and a hook without a server runs the same functions here (:func:`warnings`,
:func:`message_memories`) without opening a workspace: this module imports only ``marshal`` and ``os`` up
front, so a hook's cold start pays for nothing it does not use.

**The hook table** (``.ee/hooks/table.marshal``, derived like every index) holds, for each memory that
names code paths (frontmatter ``paths``) or is a failure / anti-pattern / risk, what a hook needs: id,
kind, title, file, path globs, whether it blocks, its validity window and — for the risky kinds — its
*signature*: its :data:`SIGNATURE` index tokens of highest idf (BM25's idf over the whole store) with
those weights; plus two lookups, so a check decodes only the rows a change can match: postings
(signature token → rows) and globs (path glob → rows; a store has few distinct globs, shared by many
memories). A hook reads this one file instead of opening the index. The table is keyed by the index
generation it was built from and rebuilt from the index when that moved (incrementally: a row whose file
blob did not change is kept, unless the store's size changed by more than a fifth). Its freshness is
proved by a stat of every memory file (as every query does), or by an index view opened just before
(``ee watch``'s server checks a warm hook's change over its own view), never by the manifest alone.

**Warnings** (pre-commit). A risky memory is about the staged change when

* a staged path (repository-relative; added, modified, deleted or either side of a rename) matches one of
  its ``paths`` globs — ``fnmatch`` rules (``*`` also crosses ``/``), where ``dir/**/x`` also matches
  ``dir/x`` and a glob without wildcards names that file or everything below that folder (a citation of
  lines, ``src/app.py:10-20``, names its file: :mod:`ee.curate.citations`); or
* the lines the change adds match it strongly: at least :data:`MIN_MATCHED` of its signature tokens are
  among the added lines' tokens, carrying at least :data:`STRONG_MATCH` of the signature's weight. (Memory
  files are left out of that diff, so committing a memory does not match it against itself.)

A warning **blocks** when the memory's tags include ``block`` or its frontmatter says ``block: true``, or
when ``[hooks] block = true`` in ``.ee/config.toml`` — and only when a person wrote or reviewed the memory
(the trust ee grants it is ``human_explicit`` or ``peer_human_attested``): an agent's memory warns, so one
``remember`` by an agent cannot stop every commit.
"""

from __future__ import annotations

import marshal
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from _typeshed import StrPath

    from ee.query.document import Query
    from ee.results.search import SearchResult

TABLE = ".ee/hooks/table.marshal"
MANIFEST = ".ee/index/manifest.json"
TABLE_FORMAT = 8
RISK_KINDS = frozenset({"failure", "anti-pattern", "risk"})
SIGNATURE = 12
STRONG_MATCH = 0.45
MIN_MATCHED = 3
MAX_QUERY_TERMS = 40
MESSAGE_HITS = 5  # memories a commit message names at most
_RESIZE = 0.2  # a store grown or shrunk by more than this recomputes every signature (idf moved)

# A row: (id, kind, title, path, paths, blocks, valid_from, valid_to, blob, tokens, weights, human)
_PATHS, _BLOB, _TOKENS = 4, 8, 9


class Entry:
    """One memory of the table (see the module's docstring)."""

    __slots__ = (
        "blob",
        "blocks",
        "human",
        "id",
        "kind",
        "path",
        "paths",
        "title",
        "tokens",
        "valid_from",
        "valid_to",
        "weights",
    )

    def __init__(self, row: Sequence[Any]) -> None:
        (
            self.id,
            self.kind,
            self.title,
            self.path,
            paths,
            self.blocks,
            self.valid_from,
            self.valid_to,
            self.blob,
            tokens,
            weights,
            self.human,
        ) = row
        self.paths: tuple[str, ...] = tuple(paths)
        self.tokens: tuple[str, ...] = tuple(tokens)
        self.weights: tuple[float, ...] = tuple(weights)

    def valid_now(self, now: _Now) -> bool:
        return _at_or_before(self.valid_from, now, True) and not _at_or_before(self.valid_to, now, False)


class _Now:
    """The time of a check, taken (and ``datetime`` imported) only when a validity stamp needs it."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Any = None

    def __call__(self) -> Any:
        if self.value is None:
            from datetime import UTC, datetime

            self.value = datetime.now(UTC)
        return self.value


class Finding:
    """Why ``entry`` is about the change: the staged paths its globs match, or the tokens it shares."""

    __slots__ = ("entry", "paths", "share", "words")

    def __init__(
        self, entry: Entry, paths: Sequence[str] = (), words: Sequence[str] = (), share: float = 0.0
    ) -> None:
        self.entry, self.paths, self.words, self.share = entry, tuple(paths), tuple(words), share

    def reason(self) -> str:
        if self.paths:
            more = f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
            return "this change touches " + ", ".join(self.paths[:3]) + more
        return (
            f"the added lines match its words ({', '.join(self.words[:6])}; {self.share:.0%} of its weight)"
        )


class Table:
    """A loaded hook table."""

    __slots__ = ("_entries", "data")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self._entries: dict[int, Entry] = {}

    @property
    def risky(self) -> int:
        """How many failure / anti-pattern / risk memories the store has."""
        return int(self.data["risky"])

    def entry(self, index: int) -> Entry:
        if index not in self._entries:
            self._entries[index] = Entry(_row_at(self.data, index))
        return self._entries[index]

    def findings(
        self, paths: Sequence[str], added_text: str | None, kinds: frozenset[str] | None = RISK_KINDS
    ) -> list[Finding]:
        """The memories of ``kinds`` (None: any kind) about a change of ``paths`` that adds ``added_text``
        (None: paths only), valid now; path matches first, then by strength, ties by id."""
        now = _Now()
        out: dict[int, Finding] = {}
        for index, hit in self._touched(paths).items():
            entry = self.entry(index)
            if (kinds is None or entry.kind in kinds) and entry.valid_now(now):
                out[index] = Finding(entry, paths=hit)
        tokens = self._added_tokens(added_text)
        for index in self._candidates(tokens):
            if index in out:
                continue
            entry = self.entry(index)
            if (kinds is not None and entry.kind not in kinds) or not entry.valid_now(now):
                continue
            words, share = word_match(entry, tokens)
            if share >= STRONG_MATCH and len(words) >= MIN_MATCHED:
                out[index] = Finding(entry, words=words, share=share)
        return sorted(out.values(), key=lambda f: (not f.paths, -f.share, f.entry.id))

    def _touched(self, paths: Sequence[str]) -> dict[int, tuple[str, ...]]:
        """Row → the staged paths its globs name (in ``paths`` order), each distinct glob tried once."""
        named: dict[int, set[str]] = {}
        for glob, indexes in self.data["globs"].items():
            hit = [p for p in paths if path_matches(glob, p)]
            for index in indexes if hit else ():
                named.setdefault(index, set()).update(hit)
        return {index: tuple(p for p in paths if p in hit) for index, hit in sorted(named.items())}

    def _added_tokens(self, added_text: str | None) -> set[str]:
        postings = self.data["postings"]
        if not added_text or not postings:
            return set()
        return {token for token in tokenizer()(added_text) if token in postings}

    def _candidates(self, tokens: set[str]) -> list[int]:
        """Rows sharing at least :data:`MIN_MATCHED` signature tokens with ``tokens``."""
        counts: dict[int, int] = {}
        for token in tokens:
            for index in self.data["postings"][token]:
                counts[index] = counts.get(index, 0) + 1
        return sorted(index for index, n in counts.items() if n >= MIN_MATCHED)


# ------------------------------------------------------------------------------------------ building


def build_table(view: Any, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The hook table of an index view (``ee.index.view.open_index``), reusing ``previous``'s unchanged
    rows."""
    gen = view.gen
    n_docs = max(int(gen.lexical.n_docs), 1)
    reuse: dict[tuple[str, str], Any] = {}
    if previous and abs(previous.get("n_docs", 0) - n_docs) <= _RESIZE * n_docs:
        old = (_row_at(previous, i) for i in range(len(previous["offsets"]) - 1))
        reuse = {(row[0], row[_BLOB]): row for row in old}
    rows = []
    for position, record in enumerate(gen.records):
        kind, paths = record.get("kind", ""), [str(p) for p in record.get("paths") or []]
        if kind in RISK_KINDS or paths:
            known = reuse.get((record["id"], record["blob"]))
            row = known or _row(gen, position, record, kind, paths, n_docs)
            # who wrote it is history, not the blob: decided afresh for a kept row too
            rows.append((*row[:-1], _by_a_person(view.state, record)))
    postings: dict[str, list[int]] = {}
    globs: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        for token in row[_TOKENS]:
            postings.setdefault(token, []).append(index)
        # a citation of lines (src/app.py:10-20) is about its file
        for glob in dict.fromkeys(_cited(p) for p in row[_PATHS]):
            globs.setdefault(glob, []).append(index)
    # The rows as one byte string (each decoded only when a change may match it): one object to load,
    # not thousands.
    encoded = [marshal.dumps(row) for row in rows]
    offsets = [0]
    for data in encoded:
        offsets.append(offsets[-1] + len(data))
    return {
        "format": TABLE_FORMAT,
        "generation": view.manifest["generation"],
        "n_docs": n_docs,
        "rows": b"".join(encoded),
        "offsets": offsets,
        "postings": postings,
        "globs": globs,
        "risky": sum(1 for row in rows if row[1] in RISK_KINDS),
    }


def _row_at(table: dict[str, Any], index: int) -> Any:
    start, end = table["offsets"][index], table["offsets"][index + 1]
    return marshal.loads(table["rows"][start:end])  # noqa: S302 - our own derived file


def _row(gen: Any, position: int, record: dict[str, Any], kind: str, paths: list[str], n_docs: int) -> tuple:
    import math

    from ee.query.explain import title_of

    body = gen.body(position)
    tokens: list[str] = []
    weights: list[float] = []
    if kind in RISK_KINDS:
        idf = {}
        for token in set(tokenizer()(body)):
            df = gen.lexical.document_frequency(token)
            idf[token] = round(math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)), 4)
        tokens = sorted(idf, key=lambda t: (-idf[t], t))[:SIGNATURE]
        weights = [idf[t] for t in tokens]
    extra = record.get("extra") or {}
    blocks = "block" in (record.get("tags") or []) or extra.get("block") is True
    return (
        record["id"],
        kind,
        title_of(body),
        record["path"],
        paths,
        blocks,
        record.get("valid_from"),
        record.get("valid_to"),
        record["blob"],
        tokens,
        weights,
        False,  # human: set by build_table
    )


def _by_a_person(state: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether a person wrote or reviewed the memory (the trust ee grants it): only such a memory blocks."""
    from ee.index.provenance import writer_of
    from ee.policy.trust import is_human
    from ee.query.standing import resolve_trust

    return is_human(resolve_trust(record, writer_of(state, record["path"], record["id"])))


# ------------------------------------------------------------------------------------------ storing


def manifest_generation(root: StrPath) -> str | None:
    import json

    from ee.config import read_settings_file  # (a FIFO in its place must not block the hook)

    try:
        generation = json.loads(read_settings_file(os.path.join(root, MANIFEST))).get("generation")
    except (OSError, ValueError, AttributeError):
        return None
    return generation if isinstance(generation, str) else None


# The last table this process loaded, by file, with the stat it was read at: ``ee watch``'s server
# checks every warm hook's change (``Workspace.hook_check``) and need not decode the same ~2 MB each time
# (~2-8 ms). The file is only ever replaced whole (:func:`save_table`), so a new stat means a new table.
_LOADED: dict[str, tuple[tuple[int, ...], dict[str, Any]]] = {}


def load_table(root: StrPath) -> dict[str, Any] | None:
    """The saved table, or None (missing, torn or of another format). Shared: never change it in place."""
    from ee.config import open_regular  # (never through a link a repository committed)

    path = os.path.join(root, TABLE)
    try:
        with open(open_regular(path, os.O_RDONLY), "rb") as file:
            st = os.fstat(file.fileno())
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            known = _LOADED.get(path)
            if known is not None and known[0] == key:
                return known[1]
            data = file.read()
        table = marshal.loads(data)  # noqa: S302 - our own derived file (not marshal.load: ~10x slower)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(table, dict) or table.get("format") != TABLE_FORMAT:
        return None
    _LOADED[path] = (key, table)
    return table


def save_table(root: StrPath, table: dict[str, Any]) -> None:
    """Replace the table atomically (a reader sees the old file or the new one). Not
    ``ee.store.files``'s durable write: importing ``ee.store.files`` costs a hook ~100 ms, and this file is
    derived — one left torn by a crash fails to load and is rebuilt."""
    import time

    from ee.config import open_regular  # (under .ee/: no folder on the way may be a link)

    path = os.path.join(root, TABLE)
    tmp = f"{path}.{os.getpid()}-{time.time_ns()}.tmp"
    fd = open_regular(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(marshal.dumps(table))
            ours = os.fstat(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    # Kept as loaded (the next check in this process need not decode it), under the stat the file has
    # now (the rename changed its ctime) — if it is still ours: another writer's file has another inode.
    try:
        st = os.stat(path)
    except OSError:
        return
    if (st.st_dev, st.st_ino) == (ours.st_dev, ours.st_ino):
        _LOADED[path] = ((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), table)


def refresh_table(root: StrPath, view: Any, digest: str) -> dict[str, Any]:
    """The table for ``view``, rebuilt and saved unless the saved one is for this generation or these files.

    ``digest`` is :func:`memory_digest` taken *before* the view was opened (a file changed meanwhile makes
    the next check rebuild: never a stale table taken for a fresh one).

    A saved table of other files is relabelled (not rebuilt) only when the files were its own both before
    the view was opened (``digest``) and after (a second stat): a memory written in between — an ``ee
    remember`` right after ``git checkout``, while this ran in the post-checkout job — is in the view but
    not in the table, and labelling that table with the view's generation let a blocking memory's commit
    through."""
    table = load_table(root)
    generation = view.manifest["generation"]
    same_files = table is not None and table["digest"] == digest and memory_digest(root) == digest
    if table is None or (table["generation"] != generation and not same_files):
        table = build_table(view, table) | {"digest": digest}
        save_table(root, table)
    elif (table["generation"], table["digest"]) != (generation, digest):  # same files, HEAD moved: relabel
        table = relabelled(table, generation, digest=digest)
        save_table(root, table)
    return table


def current_table(root: StrPath, open_view: Callable[[], Any], generation: str | None = None) -> Table:
    """The hook table for the memory files as they are now (the index catches up first when they moved:
    ``open_view`` opens it, caught up with the files, and is called only then).

    Fresh when the memory files are those it was built from (:func:`memory_digest`, a stat of each), or
    when ``generation`` — that of an index view this process just opened, caught up with the files by the
    opening — is the table's own, which proves the same without a stat. Never on the word of the index
    manifest alone: ``ee watch`` writes it a moment after a change, and a hook that trusted it let a commit
    through right after the blocking memory about it was written."""
    table = load_table(root)
    if table is not None and generation is not None and table["generation"] == generation:
        return Table(table)
    if table is not None and table["digest"] == memory_digest(root):
        if generation is not None:
            # The files are those the table was built from, and were when the view was opened (a change
            # since would show in the stat): the view's generation is this table's too. Relabelled, the
            # next hook that opens the index needs no stat (the index moves on every HEAD move).
            table = relabelled(table, generation)
            save_table(root, table)
        return Table(table)
    digest = memory_digest(root)  # (taken before the index is opened: see refresh_table)
    return Table(refresh_table(root, open_view(), digest))


def relabelled(table: dict[str, Any], generation: str, **labels: Any) -> dict[str, Any]:
    """``table`` for ``generation``: the same rows, found to be that generation's."""
    return table | {"generation": generation, **labels}


def memory_digest(root: StrPath) -> str:
    """A digest of every memory file's path and stat (mtime, ctime, size, inode): what the table is built
    from. The same files as the index scans (:func:`ee.store.walk.memory_files`)."""
    import hashlib

    from ee.store.walk import memory_files

    lines = [
        f"{rel}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_size}\0{st.st_ino}"
        for rel, st in memory_files(root)
    ]
    lines.sort()
    return hashlib.sha1("\n".join(lines).encode("utf-8", "surrogateescape")).hexdigest()  # noqa: S324


# ------------------------------------------------------------------------------------------ matching


def path_matches(pattern: str, path: str) -> bool:
    """Does the glob ``pattern`` (from a memory's ``paths``) name the repository-relative ``path``?"""
    pattern = pattern.strip().removeprefix("./")
    if not pattern:
        return False
    if not any(c in pattern for c in "*?["):
        folder = pattern.rstrip("/")
        return path == folder or path.startswith(folder + "/")
    candidates = {pattern, pattern.replace("**/", ""), pattern.replace("/**", "")}
    # A glob matches only paths starting with its text before the first wildcard: most globs are ruled
    # out by that alone, without fnmatch (and its regular expressions) at all.
    wanted = [p for p in candidates if p and path.startswith(_literal_prefix(p))]
    if not wanted:
        return False
    import fnmatch

    return any(fnmatch.fnmatchcase(path, p) for p in wanted)


def _literal_prefix(pattern: str) -> str:
    end = len(pattern)
    for wildcard in "*?[":
        found = pattern.find(wildcard)
        if 0 <= found < end:
            end = found
    return pattern[:end]


def word_match(entry: Entry, tokens: set[str]) -> tuple[tuple[str, ...], float]:
    """(the signature tokens found in ``tokens``, heaviest first; their share of the signature's weight)."""
    total = sum(entry.weights)
    if not total:
        return (), 0.0
    found = [(t, w) for t, w in zip(entry.tokens, entry.weights, strict=True) if t in tokens]
    return tuple(t for t, _w in found), sum(w for _t, w in found) / total


def tokenizer() -> Any:
    """``ee.index.tokenize.tokenize``, imported on first use (the ``ee.index`` package imports nothing)."""
    from ee.index.tokenize import tokenize

    return tokenize


def _at_or_before(stamp: str | None, now: _Now, if_missing: bool) -> bool:
    """Is ``stamp`` (RFC 3339) at or before ``now``? ``if_missing`` when there is none or it is unreadable."""
    if not stamp:
        return if_missing
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return if_missing
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) <= now()


# ------------------------------------------------------------------------------------------ the check


def warnings(
    root: StrPath,
    paths: Sequence[str],
    added: str,
    block_all: Callable[[], bool],
    open_view: Callable[[], Any],
    generation: str | None = None,
) -> tuple[bool, list[str]]:
    """The risky memories about a change of ``paths`` adding ``added``: (whether the commit is blocked,
    one line each to tell the person, then the block's). ``block_all``: ``[hooks] block`` (read only when
    something is found). ``open_view`` and ``generation`` as :func:`current_table` takes them:
    ``generation`` that of an index view the caller opened (caught up with the files), which the table
    is checked against rather than against a stat of every file."""
    table = current_table(root, open_view, generation)
    if not table.risky:
        return False, []
    found = table.findings(paths, added)
    every = bool(found) and block_all()
    # only a memory a person wrote or reviewed blocks: an agent's warns (issue 31)
    blocking = [f for f in found if f.entry.human and (every or f.entry.blocks)]
    said = []
    for finding in found:
        entry = finding.entry
        label = "blocked" if finding in blocking else "warning"
        agents = (
            "" if entry.human or not entry.blocks else "; an agent's memory: it warns, only a person's blocks"
        )
        said.append(
            f'ee: {label}: {entry.kind} {entry.id} "{entry.title}": {finding.reason()} ({entry.path}{agents})'
        )
    if blocking:
        why = "[hooks] block = true in .ee/config.toml" if every else "its tags or frontmatter say block"
        said.append(
            f"ee: commit blocked ({why}). Read it: ee memory show {blocking[0].entry.id}; "
            "commit anyway: git commit --no-verify"
        )
    return bool(blocking), said


def message_memories(
    root: StrPath,
    paths: Sequence[str],
    added: str,
    search: Callable[[str], Iterable[tuple[str, str]]],
    open_view: Callable[[], Any],
    generation: str | None = None,
    index: Callable[[], Any] | None = None,
) -> list[tuple[str, str]]:
    """(id, title) of the memories a commit message names, at most :data:`MESSAGE_HITS`: first those the
    pre-commit check finds about the change, of any kind (:meth:`Table.findings`: ``paths`` naming a
    staged file, or a risky memory the added lines strongly match), then the best lexical matches of the
    changed files' own names (:func:`file_words`, weighed by ``index()``'s lexical index: the index view
    ``search`` runs over). ``search`` runs :func:`message_query` of a text and gives the (id, title) of its
    memory hits (:func:`named`); ``open_view``, ``generation`` as for :func:`current_table`."""
    table = current_table(root, open_view, generation)
    chosen = {f.entry.id: f.entry.title for f in table.findings(paths, added, None)}
    if len(chosen) < MESSAGE_HITS and index is not None:
        text = " ".join(file_words(paths, index().gen.lexical))
        for memory_id, title in search(text) if text else ():
            chosen.setdefault(memory_id, title)
    return list(chosen.items())[:MESSAGE_HITS]


def file_words(paths: Sequence[str], lexical: Any) -> list[str]:
    """The words that say which files a change is about: the index tokens of each path's file name
    without its extension (``tailer`` of ``src/logship/tailer.py``; ``test``, ``state`` of
    ``tests/test_state.py``), each once, kept when the lexical index ``lexical`` gives them weight: held by
    at least one memory and by at most half of them (BM25's idf at least about ln 2). A word most
    memories hold (the project's name) tells nothing about a file, and a word none holds only dilutes
    the others' share of the query; the folders (``src``, ``logship``) name where a file is, not what
    it is. Only tokens the tokenizer gives back unchanged are kept, so the query's own tokens are exactly
    these (a compound such as ``test_state`` is searched by its parts)."""
    tokenize = tokenizer()
    words: dict[str, None] = {}
    for path in paths:
        leaf = path.replace(os.sep, "/").rstrip("/").rsplit("/", 1)[-1]
        stem = leaf.rsplit(".", 1)[0] if "." in leaf[1:] else leaf
        for token in tokenize(stem):
            if tokenize(token) == [token] and 0 < 2 * lexical.document_frequency(token) <= lexical.n_docs:
                words.setdefault(token)
    return list(words)


def change_words(table: Table, paths: Sequence[str], added: str, lexical: Any) -> list[str]:
    """The words ``ee context --for-staged`` and ``--for-paths`` pack for: the memories about a change of
    ``paths`` adding ``added``, found by the rule the commit template follows (:func:`message_memories`).
    First the words that name the memories the hook check finds about the change, of any kind
    (:meth:`Table.findings`): the ``paths`` globs citing a changed file (a memory's paths are in the index,
    so it holds every token of its glob), or the signature words a risky memory shares with the added
    lines; then the changed files' own names (:func:`file_words`). Not the folders nor the project's name:
    a pack for ``src/<project>/tailer.py`` was the memories naming ``src`` (QA finding 11). So neither is
    a glob that names a whole top folder or the whole tree (``ee/**``, ``src/**/*.rs``, ``*.py``): it
    cites every file there, and its words are the folder's name. Deterministic; at most
    :data:`MAX_QUERY_TERMS`."""
    words: dict[str, None] = {}
    for finding in table.findings(paths, added or None, None):
        if finding.paths:
            globs = (_cited(glob) for glob in finding.entry.paths)
            words.update(dict.fromkeys(g for g in globs if any(_names_file(g, p) for p in finding.paths)))
        else:
            words.update(dict.fromkeys(finding.words))
    words.update(dict.fromkeys(file_words(paths, lexical)))
    return list(words)[:MAX_QUERY_TERMS]


def _names_file(glob: str, path: str) -> bool:
    """Does ``glob`` name ``path`` by more than its top folder: the file itself, or a place below the
    top (``db/migrations/*.sql``, ``src/logship/state.py``), not ``ee/**`` nor ``**/*.py``?"""
    literal = _literal_prefix(glob.strip().removeprefix("./")).rstrip("/")
    return path_matches(glob, path) and (literal == path or "/" in literal)


def _cited(glob: str) -> str:
    """The glob of a ``paths`` entry (a citation of lines, ``src/app.py:10-20``, names its file)."""
    from ee.curate.citations import is_scope, split_cite

    return glob if is_scope(glob) else split_cite(glob)[0]


def message_query(text: str, limit: int = MESSAGE_HITS) -> Query:
    """The query of a commit message's lexical hits for ``text``."""
    from ee.query.document import from_arguments

    return from_arguments(text, mode="lexical", speed="instant", limit=limit, fields="minimal")


def named(found: SearchResult) -> list[tuple[str, str]]:
    """(id, title) of a search's memory hits: session evidence may rank among them, and a commit message
    names memories."""
    return [(hit.id, hit.title) for hit in found.hits if hit.type == "memory"]
