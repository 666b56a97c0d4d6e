"""The merge driver for memory files: three texts in, one text out, nothing lost.

git calls ``ee merge-driver %O %A %B %P`` for every ``memories/**/*.md`` changed on both sides
(``.gitattributes``, written by ``ee init``). The rules, field by field:

- **Lists** (``tags``, ``links``, ``source``, ``paths``, ``redacted``): a three-way set merge. Entries
  added on either side are kept (ours' order, then the new entries of theirs); an entry removed on one
  side and untouched on the other stays removed.
- **Scalars**: the side that changed wins. When both changed to different values a symmetric rule decides
  (the result does not depend on which side git calls "ours": in a rebase "ours" is the upstream):
  ``valid_to`` the earlier (a set expiry beats none), ``valid_from`` the later, ``created`` the earlier,
  ``confidence`` the lower and ``trust`` the weaker class (caution), ``utility`` / ``importance`` the
  higher, anything else the value whose JSON text sorts first. The value not kept is recorded under the
  frontmatter key ``ee_merge`` (a list of ``key=<JSON value>`` entries) so it stays visible;
  ``ee memory resolve`` removes the key (git history keeps it).
- **Body**: one side changed → that side; both changed → git's line merge of the two bodies; if that
  conflicts (or a side already holds several versions), the body keeps every version whole, each under a
  label naming its author and commit (:mod:`ee.git.conflict`; never git's ``<<<<<<<`` markers), and the
  frontmatter gets ``conflict: true``. The file still parses, the merge completes, the memory's title reads
  cleanly, packs treat it as advisory, ``ee doctor`` and ``ee sync`` list it, and ``ee memory resolve``
  keeps one version (by ``local`` / ``remote``, commit or author: see :func:`choose`) or all of them.
- A side that does not parse, or two different ids (two memories added at one path): git's own text
  merge (``git merge-file``) and exit 1, a conflict git reports as usual.

The result is written as an edit of OURS through :func:`ee.store.frontmatter.update`, so the human layout of
OURS survives outside the keys that changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ee.errors import EeError, GitError, UsageError
from ee.git import conflict, runner
from ee.git.conflict import Version
from ee.model import Memory
from ee.store import frontmatter
from ee.store.files import MEMORIES, STATE_DIR
from ee.store.frontmatter import CONFLICT_KEY, MERGE_KEY
from ee.values import KNOWN_KEYS, TRUST_CLASSES

LIST_KEYS = ("tags", "links", "source", "paths", "redacted")
LABELS = ("ours", "base", "theirs")
_MISSING: Any = None  # an absent key reads as None (scalars) or () (lists)
_OPEN_RE = re.compile(r"^<{7}(?: |$)")
_BASE_RE = re.compile(r"^\|{7}(?: |$)")
_SEP_RE = re.compile(r"^={7}[ \t]*$")
_CLOSE_RE = re.compile(r"^>{7}(?: |$)")


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged text; ``conflict`` means git must be told (exit 1); ``body_conflict`` that both
    bodies were kept with markers (a clean merge for git, flagged in the file)."""

    text: bytes
    conflict: bool = False
    body_conflict: bool = False
    kept_aside: tuple[str, ...] = ()  # scalar keys whose other value went to ee_merge
    reason: str = ""  # why a field-by-field merge was not possible


class _Fallback(Exception):
    """A side cannot be merged field by field: use git's text merge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------- entry points


Origins = Callable[[], tuple[Version, Version]]


def unknown_origins() -> tuple[Version, Version]:
    return Version("unknown (ours)", None, "", ""), Version("unknown (theirs)", None, "", "")


def merge_memory(
    base: bytes, ours: bytes, theirs: bytes, path: str = "", origins: Origins = unknown_origins
) -> MergeResult:
    """Merge three versions of a memory file (``base`` empty when both sides added the file).

    ``origins()`` names who wrote each side and in which commit (asked only when both bodies are kept)."""
    if ours == theirs or base == theirs:
        return MergeResult(ours)
    if base == ours:
        return MergeResult(theirs)
    try:
        return _merge_fields(base, ours, theirs, path, origins)
    except _Fallback as exc:
        reason = exc.reason
    except Exception as exc:  # a bug must not cost a merge: git's text merge, reported as a conflict
        reason = f"internal error: {exc!r}"
    text, _conflicts = merge_text(base, ours, theirs)
    return MergeResult(text, conflict=True, reason=reason)


def is_memory_path(path: str, top: Path) -> bool:
    """Is ``path`` (git's ``%P``, relative to the work tree's ``top``) a memory file, as ee's own
    ``.gitattributes`` name them: a ``.md`` file below a ``memories/`` folder, or any ``.md`` file of the
    memory branch's work tree (``memories/`` itself, beside ``.ee/``)? A cloned repository's attributes
    may give the driver any file (``* merge=ee-memory``); only these are merged as memories."""
    parts = Path(path).parts
    if not path.endswith(".md") or ".." in parts:
        return False
    return MEMORIES in parts[:-1] or (top.name == MEMORIES and (top.parent / STATE_DIR).is_dir())


def merge_driver(base_path: str, ours_path: str, theirs_path: str, path: str = "") -> MergeResult:
    """The file wrapper git calls (in the work tree's top folder): read the three files, write the
    result into ``ours_path``. A file that is no memory (:func:`is_memory_path`) gets git's own text
    merge, a conflict git reports as usual: never both versions under ee's labels, which git would
    commit as a clean merge."""
    from ee.policy.secrets import file_refusal

    base, ours, theirs = (Path(p).read_bytes() for p in (base_path, ours_path, theirs_path))
    if path and not is_memory_path(path, Path.cwd()):
        text, conflicts = merge_text(base, ours, theirs)
        if text != ours:
            Path(ours_path).write_bytes(text)
        return MergeResult(text, conflict=conflicts > 0, reason="not a memory file: ee merges only those")
    result = merge_memory(base, ours, theirs, path, lambda: side_origins(path))
    refused = file_refusal(result.text.decode("utf-8", "replace"), path or ours_path)
    if refused:  # a secret never enters a merge commit: git reports a conflict, and ee says why
        result = MergeResult(merge_text(base, ours, theirs)[0], conflict=True, reason=refused)
    if result.text != ours:
        Path(ours_path).write_bytes(result.text)
    return result


def merge_text(
    base: bytes, ours: bytes, theirs: bytes, labels: tuple[str, ...] = LABELS
) -> tuple[bytes, int]:
    """git's line merge (``git merge-file -p``): the text and the number of conflicting hunks."""
    with tempfile.TemporaryDirectory(prefix="ee-merge-") as tmp:
        files = []
        for name, data in zip(LABELS, (ours, base, theirs), strict=True):
            file = Path(tmp) / name
            file.write_bytes(data)
            files.append(str(file))
        args = ["merge-file", "-p"]
        for label in labels:
            args += ["-L", label]
        proc = runner.run([*args, *files], None)
    if not 0 <= proc.returncode < 128:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git merge-file failed: {message}", "run `git merge-file` by hand to see why")
    return proc.stdout, proc.returncode


# ---------------------------------------------------------------------------------------------- field merge


@dataclass(frozen=True, slots=True)
class _Side:
    text: str
    memory: Memory
    body: str

    def value(self, key: str) -> Any:
        if key in KNOWN_KEYS:
            value = getattr(self.memory, key)
            return tuple(value) if isinstance(value, tuple) else value
        return dict(self.memory.extra).get(key, _MISSING)

    def keys(self) -> list[str]:
        return [k for k in KNOWN_KEYS if k != "id"] + [k for k, _ in self.memory.extra]


def _read_side(data: bytes, path: str) -> _Side:
    try:
        text = frontmatter.decode(data, path)
        memory, _problems = frontmatter.parse(text, path)
    except EeError as exc:
        raise _Fallback(f"a side does not parse: {exc.message}") from None
    _fm, body, _line = frontmatter.split(text)
    return _Side(text, memory, body)


def _merge_fields(
    base_data: bytes, ours_data: bytes, theirs_data: bytes, path: str, origins: Origins
) -> MergeResult:
    ours, theirs = _read_side(ours_data, path), _read_side(theirs_data, path)
    base = _read_side(base_data, path) if base_data.strip() else None
    changes: dict[str, Any] = {}
    aside: dict[str, Any] = {}
    keys = list(dict.fromkeys(["id", *ours.keys(), *theirs.keys(), *(base.keys() if base else [])]))
    for key in keys:
        if key in (MERGE_KEY, CONFLICT_KEY):
            continue
        b = base.value(key) if base else _empty(key)
        merged, lost = merge_value(key, b, ours.value(key), theirs.value(key))
        if lost is not _NOTHING:
            aside[key] = _plain(lost)
        if merged != ours.value(key):
            changes[key] = _for_update(key, merged)
    body, body_conflict = merge_body(
        base.body if base else "", ours.body, theirs.body, ours.memory.id, origins
    )
    _merge_bookkeeping(base, ours, theirs, aside, conflict.is_conflicted(body), changes)
    text = frontmatter.update(ours.text, changes, path) if changes else ours.text
    text = replace_body(text, body)
    return MergeResult(text.encode("utf-8"), body_conflict=body_conflict, kept_aside=tuple(aside))


_NOTHING: Any = object()


def _empty(key: str) -> Any:
    return () if key in LIST_KEYS else _MISSING


def merge_value(key: str, base: Any, ours: Any, theirs: Any) -> tuple[Any, Any]:
    """One field, three ways → (merged value, the value set aside or ``_NOTHING``)."""
    if key in LIST_KEYS:
        return merge_list(base, ours, theirs), _NOTHING
    if ours == theirs or theirs == base:
        return ours, _NOTHING
    if ours == base:
        return theirs, _NOTHING
    if key == "id":
        raise _Fallback("the sides have different ids")  # two memories at one path: a person decides
    winner = pick_scalar(key, ours, theirs)
    return winner, (theirs if winner == ours else ours)


def merge_list(base: Any, ours: Any, theirs: Any) -> tuple[Any, ...]:
    """Three-way set merge: additions of both sides kept, a removal on one side honoured."""
    base_set, ours_set = set(base or ()), set(ours or ())
    removed_by_theirs = base_set - set(theirs or ())
    out = [item for item in ours or () if item not in removed_by_theirs]
    out += [item for item in theirs or () if item not in base_set and item not in ours_set]
    return tuple(dict.fromkeys(out))


def _sort_text(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False)


def _earlier(a: Any, b: Any) -> Any:
    """The earlier of two times; a set time beats None (an open end)."""
    if a is None or b is None:
        return b if a is None else a
    return min(a, b)


def _later(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return b if a is None else a
    return max(a, b)


def _weaker_trust(a: Any, b: Any) -> Any:
    order = {name: rank for rank, name in enumerate(TRUST_CLASSES)}
    return max((a, b), key=lambda t: (order.get(t, -1), _sort_text(t)))


def _numeric(choose: Callable[[float, float], float]) -> Callable[[Any, Any], Any]:
    def rule(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return b if a is None else a
        return choose(a, b)

    return rule


_SCALAR_RULES: Mapping[str, Callable[[Any, Any], Any]] = {
    "valid_to": _earlier,
    "valid_from": _later,
    "created": _earlier,
    "confidence": _numeric(min),
    "utility": _numeric(max),
    "importance": _numeric(max),
    "trust": _weaker_trust,
}


def pick_scalar(key: str, ours: Any, theirs: Any) -> Any:
    """Both sides changed ``key`` differently: the symmetric rule (see the module docstring)."""
    rule = _SCALAR_RULES.get(key)
    if rule is not None:
        return rule(ours, theirs)
    return min((ours, theirs), key=_sort_text)


def merge_body(
    base: str, ours: str, theirs: str, memory_id: str = "", origins: Origins = unknown_origins
) -> tuple[str, bool]:
    """The merged body and whether it keeps several versions (see :mod:`ee.git.conflict`)."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    if not any(conflict.parse(text) for text in (base, ours, theirs)):
        b, o, t = (_with_newline(text).encode("utf-8") for text in (base, ours, theirs))
        merged, conflicts = merge_text(b, o, t)
        if conflicts == 0:
            return merged.decode("utf-8"), False
    ours_origin, theirs_origin = origins()
    versions = conflict.unite(
        conflict.flatten(ours, replace(ours_origin, body=ours)),
        conflict.flatten(theirs, replace(theirs_origin, body=theirs)),
    )
    if len(versions) == 1:  # the same text, but for blank lines around it
        return ours, False
    return conflict.render(memory_id, versions), True


def _merge_bookkeeping(
    base: _Side | None,
    ours: _Side,
    theirs: _Side,
    aside: dict[str, Any],
    conflicted: bool,
    changes: dict[str, Any],
) -> None:
    """The ``conflict`` flag (set while the merged body holds several versions) and the ``ee_merge`` record
    of values set aside (``key=<JSON value>`` entries, merged like a list: a side that resolved and cleared
    it wins over one that did not touch it)."""
    flag = True if conflicted else None
    if flag != ours.value(CONFLICT_KEY):
        changes[CONFLICT_KEY] = frontmatter.DELETE if flag is None else flag
    sides = [_entries(side.value(MERGE_KEY)) if side else () for side in (base, ours, theirs)]
    record = list(merge_list(*sides))
    for key, value in aside.items():
        entry = f"{key}={json.dumps(value, ensure_ascii=False)}"
        if entry not in record:
            record.append(entry)
    if tuple(record) != sides[1]:
        changes[MERGE_KEY] = record or frontmatter.DELETE


def _entries(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


def _for_update(key: str, value: Any) -> Any:
    if value is None:
        return frontmatter.DELETE
    if key in LIST_KEYS:
        return list(value)
    return value


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def replace_body(text: str, body: str) -> str:
    """``text`` with everything after its frontmatter replaced by ``body``."""
    fm, _old, body_line = frontmatter.split(text)
    if fm is None:
        return body
    head = "".join(text.splitlines(keepends=True)[: body_line - 1])
    return head + body


# ---------------------------------------------------------------------------------------------- origins


def side_origins(path: str) -> tuple[Version, Version]:
    """Who wrote each side git hands the driver, and in which commit: (ours, theirs).

    git runs the driver at the top level of the work tree, mid-operation. "ours" is ``HEAD``'s version
    (in a rebase: the upstream, plus what was replayed so far); "theirs" is the commit being replayed (a
    rebase names it in ``rebase-merge/done``), merged (``GITHEAD_<sha>`` in the environment) or picked.
    Anything unknown is named so; the merge goes on either way."""
    return _origin("HEAD", path, "ours"), _origin(_incoming_commit(), path, "theirs")


def _incoming_commit() -> str | None:
    for key in os.environ:
        if key.startswith("GITHEAD_") and _is_sha(key[8:]):
            return key[8:]
    git_dir = _git("rev-parse", "--absolute-git-dir").strip()
    if not git_dir:
        return None
    folder = Path(git_dir)
    with contextlib.suppress(OSError):
        steps = [ln.split() for ln in (folder / "rebase-merge" / "done").read_text().splitlines()]
        steps = [step for step in steps if len(step) >= 2 and _is_sha(step[1])]
        if steps:
            return steps[-1][1]
    for name in ("rebase-apply/original-commit", "CHERRY_PICK_HEAD", "REVERT_HEAD"):
        with contextlib.suppress(OSError):
            sha = (folder / name).read_text().strip()
            if _is_sha(sha):
                return sha
    return None


def _origin(commit: str | None, path: str, fallback: str) -> Version:
    if commit:
        fields = "--format=%H%x00%an%x00%aI"
        out = _git("log", "-1", fields, commit, "--", path) if path else ""
        out = out or _git("log", "-1", fields, commit)
        parts = out.strip().split("\0")
        if len(parts) == 3 and _is_sha(parts[0]):
            return Version(parts[1] or "unknown", parts[0][:12], parts[2], "")
    return Version(f"unknown ({fallback})", None, "", "")


def _git(*args: str) -> str:
    """A read-only git command's output, or "" when it fails (an origin is a label: never a failure)."""
    try:
        proc = runner.run(args, None)
    except (GitError, OSError):
        return ""
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else ""


def _is_sha(text: str) -> bool:
    return 4 <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)


# ---------------------------------------------------------------------------------------------- resolving


PICKS = ("local", "remote", "both")


def versions_of(body: str) -> list[Version] | None:
    """The versions a conflicted body holds: ee's labelled versions, or the two sides of git's markers
    (a text merge of an older ee, or by hand), labelled by the marker's text."""
    versions = conflict.parse(body)
    if versions is not None:
        return versions
    legacy = split_conflict(body)
    if legacy is None:
        return None
    names = _marker_labels(body)
    return [
        Version(name, None, "", legacy.pick(side))
        for name, side in zip(names, ("ours", "theirs"), strict=True)
    ]


def choose(versions: list[Version], pick: str, local: set[str]) -> list[Version]:
    """The versions ``pick`` names: ``both`` (all of them), ``local`` (the one committed in this clone:
    ``local`` holds those commits), ``remote`` (the one that was not), or a commit (a prefix of 4+
    characters) or an author shown in the labels. Exactly one must match."""
    if pick == "both":
        return versions
    if pick in ("local", "remote"):
        mine = [v for v in versions if v.commit and v.commit in local]
        found = mine if pick == "local" else [v for v in versions if v not in mine]
    else:
        wanted = pick.strip().lower()
        found = [
            v
            for v in versions
            if (v.commit and len(wanted) >= 4 and v.commit.startswith(wanted)) or v.author.lower() == wanted
        ]
    if len(found) == 1:
        return found
    shown = "; ".join(f"{v.label()} ({side_of(v, local)})" for v in versions)
    how = "none" if not found else f"{len(found)}"
    raise UsageError(
        f"--pick {pick} names {how} of the versions ({shown})",
        "pick one by its commit or author (--pick <commit>), keep all with --pick both, or pass --text FILE",
    )


def side_of(version: Version, local: set[str]) -> str:
    return "local" if version.commit and version.commit in local else "remote"


def resolve_text(
    text: str, chosen: list[Version] | None = None, body: str | None = None, path: str = ""
) -> str:
    """A conflicted memory's text with one body (the chosen versions', or ``body``) and no conflict
    bookkeeping."""
    if body is None:
        body = "\n".join(_with_newline(v.body.strip("\n")) for v in chosen or ())
    fm, _old, _line = frontmatter.split(text)
    if fm is not None:
        text = frontmatter.update(
            text, {CONFLICT_KEY: frontmatter.DELETE, MERGE_KEY: frontmatter.DELETE}, path
        )
    return replace_body(text, _with_newline(body.strip()))


def is_conflicted(memory: Memory) -> bool:
    return conflict.is_conflicted(memory.body, dict(memory.extra).get(CONFLICT_KEY))


@dataclass(frozen=True, slots=True)
class _Markers:
    """A body split at git's conflict markers: common text and (ours, theirs) hunks, in order."""

    parts: tuple[str | tuple[str, str], ...]

    def pick(self, side: str) -> str:
        return "".join(part if isinstance(part, str) else part[side == "theirs"] for part in self.parts)


def _marker_labels(body: str) -> tuple[str, str]:
    opening = next((ln for ln in body.splitlines() if _OPEN_RE.match(ln)), "")
    closing = next((ln for ln in body.splitlines() if _CLOSE_RE.match(ln)), "")
    return (opening[8:].strip() or "ours", closing[8:].strip() or "theirs")


def split_conflict(body: str) -> _Markers | None:
    """Parse ``<<<<<<<`` / ``|||||||`` / ``=======`` / ``>>>>>>>`` blocks (any labels); None if there are
    none or they are not well formed."""
    parts: list[str | tuple[str, str]] = []
    common: list[str] = []
    ours: list[str] = []
    theirs: list[str] = []
    state = "common"
    for line in body.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if state == "common" and _OPEN_RE.match(bare):
            parts.append("".join(common))
            common, ours, theirs, state = [], [], [], "ours"
        elif state == "ours" and _BASE_RE.match(bare):
            state = "base"
        elif state in ("ours", "base") and _SEP_RE.match(bare):
            state = "theirs"
        elif state == "theirs" and _CLOSE_RE.match(bare):
            parts.append(("".join(ours), "".join(theirs)))
            state = "common"
        elif state == "common":
            common.append(line)
        elif state == "ours":
            ours.append(line)
        elif state == "theirs":
            theirs.append(line)
    if state != "common" or not any(isinstance(p, tuple) for p in parts):
        return None
    parts.append("".join(common))
    return _Markers(tuple(p for p in parts if p != ""))
