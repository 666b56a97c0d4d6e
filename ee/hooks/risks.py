"""The memories a commit is checked against, and the check.

**The hook table** (``.ee/hooks/table.marshal``, derived like every index) holds, for each memory that
names code paths (frontmatter ``paths``) or is a failure / anti-pattern / risk, what a hook needs: id,
kind, title, file, path globs, whether it blocks, its validity window and — for the risky kinds — its
*signature*: its :data:`SIGNATURE` index tokens of highest idf (BM25's idf over the whole store) with
those weights. A hook reads this one small file instead of opening the index. The table is keyed by the
index generation it was built from and rebuilt from the index when that moved (incrementally: an entry
whose file blob did not change is kept, unless the store's size changed by more than a fifth). Without
``ee watch`` the index's freshness is checked first (a stat of every memory file, as every query does);
with the watcher running its manifest is trusted (it catches up within ~0.2 s of a change).

**Warnings** (pre-commit). A risky memory is about the staged change when

* a staged path (repository-relative; added, modified, deleted or either side of a rename) matches one of
  its ``paths`` globs — ``fnmatch`` rules (``*`` also crosses ``/``), where ``dir/**/x`` also matches
  ``dir/x`` and a glob without wildcards names that file or everything below that folder; or
* the lines the change adds match it strongly: at least :data:`MIN_MATCHED` of its signature tokens are
  among the added lines' tokens, carrying at least :data:`STRONG_MATCH` of the signature's weight. (Memory
  files are left out of that diff, so committing a memory does not match it against itself.)

A warning **blocks** when the memory's tags include ``block`` or its frontmatter says ``block: true``, or
when ``[hooks] block = true`` in ``.ee/config.toml``.
"""

from __future__ import annotations

import fnmatch
import marshal
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TABLE = ".ee/hooks/table.marshal"
MANIFEST = ".ee/index/manifest.json"
TABLE_FORMAT = 2
RISK_KINDS = frozenset({"failure", "anti-pattern", "risk"})
SIGNATURE = 12
STRONG_MATCH = 0.45
MIN_MATCHED = 3
_RESIZE = 0.2  # a store grown or shrunk by more than this recomputes every signature (idf moved)


class Entry:
    """One memory of the table (see the module's docstring)."""

    __slots__ = (
        "blob",
        "blocks",
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
        ) = row
        self.paths: tuple[str, ...] = tuple(paths)
        self.tokens: tuple[str, ...] = tuple(tokens)
        self.weights: tuple[float, ...] = tuple(weights)

    @property
    def risky(self) -> bool:
        return self.kind in RISK_KINDS

    def valid_now(self, now: Any) -> bool:
        return _at_or_before(self.valid_from, now, True) and not _at_or_before(self.valid_to, now, False)


class Finding:
    """Why ``entry`` is about the change: the staged paths its globs match, or the tokens it shares."""

    __slots__ = ("entry", "paths", "share", "words")

    def __init__(
        self, entry: Entry, paths: Sequence[str] = (), words: Sequence[str] = (), share: float = 0.0
    ):
        self.entry, self.paths, self.words, self.share = entry, tuple(paths), tuple(words), share

    def reason(self) -> str:
        if self.paths:
            more = f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
            return "this change touches " + ", ".join(self.paths[:3]) + more
        return (
            f"the added lines match its words ({', '.join(self.words[:6])}; {self.share:.0%} of its weight)"
        )


# ------------------------------------------------------------------------------------------ the table


def build_table(view: Any, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The hook table of an index view (``ee.index.open_index``), reusing ``previous``'s unchanged rows."""
    gen = view.gen
    n_docs = max(int(gen.lexical.n_docs), 1)
    reuse: dict[tuple[str, str], Any] = {}
    if previous and abs(previous.get("n_docs", 0) - n_docs) <= _RESIZE * n_docs:
        reuse = {(row[0], row[8]): row for row in previous["rows"]}
    rows = []
    for position, record in enumerate(gen.records):
        kind, paths = record.get("kind", ""), [str(p) for p in record.get("paths") or []]
        if kind not in RISK_KINDS and not paths:
            continue
        row = reuse.get((record["id"], record["blob"])) or _row(gen, position, record, kind, paths, n_docs)
        rows.append(row)
    return {"format": TABLE_FORMAT, "generation": view.manifest["generation"], "n_docs": n_docs, "rows": rows}


def _row(gen: Any, position: int, record: dict[str, Any], kind: str, paths: list[str], n_docs: int) -> tuple:
    from ee.index.tokenize import tokenize
    from ee.query.explain import title_of

    body = gen.body(position)
    tokens: list[str] = []
    weights: list[float] = []
    if kind in RISK_KINDS:
        idf = {}
        for token in set(tokenize(body)):
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
    )


def manifest_generation(root: Path) -> str | None:
    import json

    try:
        generation = json.loads((root / MANIFEST).read_text(encoding="utf-8")).get("generation")
    except (OSError, ValueError, AttributeError):
        return None
    return generation if isinstance(generation, str) else None


def load_table(root: Path) -> dict[str, Any] | None:
    try:
        table = marshal.loads((root / TABLE).read_bytes())  # noqa: S302 - our own derived file
    except (OSError, ValueError, EOFError, TypeError):
        return None
    ok = (
        isinstance(table, dict)
        and table.get("format") == TABLE_FORMAT
        and isinstance(table.get("rows"), list)
    )
    return table if ok else None


def save_table(root: Path, table: dict[str, Any]) -> None:
    from ee.store import atomic_write

    atomic_write(root / TABLE, marshal.dumps(table))


def refresh_table(root: Path, view: Any) -> dict[str, Any]:
    """The table for ``view``, rebuilt and saved when the saved one is for another generation."""
    table = load_table(root)
    if table is None or table.get("generation") != view.manifest["generation"]:
        table = build_table(view, table)
        save_table(root, table)
    return table


def current_entries(root: Path, trust_manifest: bool) -> list[Entry]:
    """The table's entries for the store as it is now (catching the index up first when it moved)."""
    table = load_table(root)
    generation = manifest_generation(root)
    fresh = table and generation and table.get("generation") == generation
    if not (fresh and (trust_manifest or _index_fresh(root))):
        from ee.index import open_index
        from ee.workspace import Workspace

        table = refresh_table(root, open_index(Workspace(root)))
    assert table is not None
    return [Entry(row) for row in table["rows"]]


def _index_fresh(root: Path) -> bool:
    from ee.index import model_folder
    from ee.index.sync import is_fresh, read_manifest, scan
    from ee.workspace import Workspace

    ws = Workspace(root)
    _folder, model_key, _problem = model_folder(ws)
    files, events = scan(root)
    return is_fresh(read_manifest(root), ws.git.head_ref(), files, events, model_key or None)


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
    return any(fnmatch.fnmatchcase(path, p) for p in candidates if p)


def touched(entry: Entry, paths: Sequence[str]) -> tuple[str, ...]:
    return tuple(p for p in paths if any(path_matches(g, p) for g in entry.paths))


def word_match(entry: Entry, tokens: set[str]) -> tuple[tuple[str, ...], float]:
    """(the signature tokens found in ``tokens``, heaviest first; their share of the signature's weight)."""
    total = sum(entry.weights)
    if not total:
        return (), 0.0
    found = [(t, w) for t, w in zip(entry.tokens, entry.weights, strict=True) if t in tokens]
    return tuple(t for t, _w in found), sum(w for _t, w in found) / total


def findings(
    entries: Iterable[Entry], paths: Sequence[str], added_text: str | None, kinds: frozenset[str] = RISK_KINDS
) -> list[Finding]:
    """The memories of ``kinds`` that are about a change of ``paths`` adding ``added_text`` (None: no
    word match), path matches first, then by strength; ties by id."""
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    chosen = [e for e in entries if e.kind in kinds and e.valid_now(now)]
    tokens: set[str] = set()
    if added_text and any(e.weights for e in chosen):
        from ee.index.tokenize import tokenize

        tokens = set(tokenize(added_text))
    out = []
    for entry in chosen:
        hit = touched(entry, paths)
        if hit:
            out.append(Finding(entry, paths=hit))
        elif tokens:
            words, share = word_match(entry, tokens)
            if share >= STRONG_MATCH and len(words) >= MIN_MATCHED:
                out.append(Finding(entry, words=words, share=share))
    return sorted(out, key=lambda f: (not f.paths, -f.share, f.entry.id))


def _at_or_before(stamp: str | None, now: Any, if_missing: bool) -> bool:
    """Is ``stamp`` (RFC 3339) at or before ``now``? ``if_missing`` when there is none or it is unreadable."""
    if not stamp:
        return if_missing
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return if_missing
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) <= now
