"""The memories a commit is checked against, and the check.

**The hook table** (``.ee/hooks/table.json``, derived like every index) holds, for each memory that names
code paths (frontmatter ``paths``) or is a failure / anti-pattern / risk, what a hook needs: id, kind,
title, file, path globs, whether it blocks, its validity window and — for the risky kinds — the weight of
each of its index tokens (BM25's idf over the whole store). It is keyed by the index generation it was
built from, so a hook reads one small file instead of opening the index. It is rebuilt from the index
when the generation moved; without ``ee watch`` the index's freshness is checked first (a stat of every
memory file, as every query does), with the watcher running its manifest is trusted (the watcher brings it
up to date within ~0.2 s of a change).

**Warnings** (pre-commit). A risky memory is about the staged change when

* a staged path (repository-relative; added, modified, deleted or either side of a rename) matches one of
  its ``paths`` globs — ``fnmatch`` rules (``*`` also crosses ``/``), where ``dir/**/x`` also matches
  ``dir/x`` and a glob without wildcards names that file or everything below that folder; or
* the lines the change adds match it strongly: the idf-weighted share of its distinct index tokens found
  in the added lines' tokens is at least :data:`STRONG_MATCH`, with at least :data:`MIN_MATCHED` tokens.
  (Memory files are left out of that diff, so committing a memory does not match it against itself.)

A warning **blocks** when the memory's tags include ``block`` or its frontmatter says ``block: true``, or
when ``[hooks] block = true`` in ``.ee/config.toml``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TABLE = ".ee/hooks/table.json"
MANIFEST = ".ee/index/manifest.json"
TABLE_FORMAT = 1
RISK_KINDS = frozenset({"failure", "anti-pattern", "risk"})
STRONG_MATCH = 0.45
MIN_MATCHED = 3


@dataclass(frozen=True, slots=True)
class Entry:
    id: str
    kind: str
    title: str
    path: str
    paths: tuple[str, ...]
    blocks: bool
    valid_from: str | None
    valid_to: str | None
    weights: dict[str, float]

    @property
    def risky(self) -> bool:
        return self.kind in RISK_KINDS

    def valid_now(self, now: datetime) -> bool:
        return _before(self.valid_from, now, True) and not _before(self.valid_to, now, False)


@dataclass(frozen=True, slots=True)
class Finding:
    """Why ``entry`` is about the change: the staged paths its globs match, or the words it shares."""

    entry: Entry
    paths: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    share: float = 0.0

    def reason(self) -> str:
        if self.paths:
            more = f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
            return "this change touches " + ", ".join(self.paths[:3]) + more
        words = ", ".join(self.words[:6])
        return f"the added lines match its words ({words}; {self.share:.0%} of its weight)"


# ------------------------------------------------------------------------------------------ the table


def build_table(view: Any) -> dict[str, Any]:
    """The hook table of an index view (``ee.index.open_index``)."""
    from ee.index.tokenize import tokenize
    from ee.query.explain import title_of

    gen = view.gen
    lexical = gen.lexical
    n_docs = max(int(lexical.n_docs), 1)
    entries = []
    for position, record in enumerate(gen.records):
        kind, paths = record.get("kind", ""), list(record.get("paths") or [])
        if kind not in RISK_KINDS and not paths:
            continue
        body = gen.body(position)
        weights: dict[str, float] = {}
        if kind in RISK_KINDS:
            for token in sorted(set(tokenize(body))):
                df = lexical.document_frequency(token)
                weights[token] = round(math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)), 4)
        extra = record.get("extra") or {}
        entries.append(
            {
                "id": record["id"],
                "kind": kind,
                "title": title_of(body),
                "path": record["path"],
                "paths": [str(p) for p in paths],
                "blocks": "block" in (record.get("tags") or []) or extra.get("block") is True,
                "valid_from": record.get("valid_from"),
                "valid_to": record.get("valid_to"),
                "weights": weights,
            }
        )
    return {"format": TABLE_FORMAT, "generation": view.manifest["generation"], "entries": entries}


def manifest_generation(root: Path) -> str | None:
    try:
        generation = json.loads((root / MANIFEST).read_text(encoding="utf-8")).get("generation")
    except (OSError, ValueError, AttributeError):
        return None
    return generation if isinstance(generation, str) else None


def load_table(root: Path) -> dict[str, Any] | None:
    try:
        table = json.loads((root / TABLE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = (
        isinstance(table, dict)
        and table.get("format") == TABLE_FORMAT
        and isinstance(table.get("entries"), list)
    )
    return table if ok else None


def save_table(root: Path, table: dict[str, Any]) -> None:
    path = root / TABLE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".table-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(table, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def refresh_table(root: Path, view: Any) -> dict[str, Any]:
    """The table for ``view``, rebuilt and saved when the saved one is for another generation."""
    table = load_table(root)
    if table is None or table.get("generation") != view.manifest["generation"]:
        table = build_table(view)
        save_table(root, table)
    return table


def current_entries(root: Path, trust_manifest: bool) -> list[Entry]:
    """The table's entries for the store as it is now (catching the index up first when it moved)."""
    table = load_table(root)
    generation = manifest_generation(root)
    if not (
        table
        and generation
        and table.get("generation") == generation
        and (trust_manifest or _index_fresh(root))
    ):
        from ee.index import open_index
        from ee.workspace import Workspace

        table = refresh_table(root, open_index(Workspace(root)))
    return [_entry(item) for item in table["entries"]]


def _index_fresh(root: Path) -> bool:
    from ee.index import model_folder
    from ee.index.sync import is_fresh, read_manifest, scan
    from ee.workspace import Workspace

    ws = Workspace(root)
    _folder, model_key, _problem = model_folder(ws)
    files, events = scan(root)
    return is_fresh(read_manifest(root), ws.git.head_ref(), files, events, model_key or None)


def _entry(item: dict[str, Any]) -> Entry:
    return Entry(
        item["id"],
        item["kind"],
        item["title"],
        item["path"],
        tuple(item["paths"]),
        bool(item["blocks"]),
        item.get("valid_from"),
        item.get("valid_to"),
        dict(item.get("weights") or {}),
    )


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
    """(the memory's tokens found in ``tokens``, heaviest first; their share of its total weight)."""
    total = sum(entry.weights.values())
    if not total:
        return (), 0.0
    found = sorted((t for t in entry.weights if t in tokens), key=lambda t: (-entry.weights[t], t))
    return tuple(found), sum(entry.weights[t] for t in found) / total


def findings(
    entries: Iterable[Entry], paths: Sequence[str], added_text: str | None, kinds: frozenset[str] = RISK_KINDS
) -> list[Finding]:
    """The memories of ``kinds`` that are about a change of ``paths`` adding ``added_text`` (None: no
    word match), path matches first, then by strength; ties by id."""
    now = datetime.now(UTC)
    chosen = [e for e in entries if e.kind in kinds and e.valid_now(now)]
    tokens: set[str] | None = None
    if added_text and any(e.weights for e in chosen):
        from ee.index.tokenize import tokenize

        tokens = set(tokenize(added_text))
    out = []
    for entry in chosen:
        hit = touched(entry, paths)
        if hit:
            out.append(Finding(entry, paths=hit))
            continue
        if tokens:
            words, share = word_match(entry, tokens)
            if share >= STRONG_MATCH and len(words) >= MIN_MATCHED:
                out.append(Finding(entry, words=words, share=share))
    return sorted(out, key=lambda f: (not f.paths, -f.share, f.entry.id))


def _before(stamp: str | None, now: datetime, if_missing: bool) -> bool:
    """Is ``stamp`` (RFC 3339) at or before ``now``? ``if_missing`` when there is none or it is unreadable."""
    if not stamp:
        return if_missing
    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return if_missing
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when <= now
