"""Bulk import and export of memories as JSON Lines: one commit for a whole import."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ee._crash import crash_point
from ee.curate.similar import normalise
from ee.errors import ConflictError, EeError, SecretFound, UsageError
from ee.git.repo import blob_id, format_message
from ee.model import Link, Memory, Progress
from ee.ops.recovery import (
    begin_import,
    end_import,
    has_journal,
    memory_temporaries,
    sweep_memory_temporaries,
)
from ee.policy.trust import Actor, capped
from ee.schemas import unwritable
from ee.store import frontmatter
from ee.store.fields import build_fields, check_text, guard_memory, parse_link
from ee.store.files import flush_to_disk
from ee.store.ids import new_id
from ee.values import KNOWN_KEYS, TRUST_CLASSES

if TYPE_CHECKING:
    from ee.workspace import Workspace

MAX_LINE_CHARS = 4 * 1024 * 1024  # far above any memory (the file cap is 256 KiB by default)
MAX_DEPTH = 32
PROGRESS_STEP = 500  # lines checked / files written between two progress reports
_ALLOWED = {*KNOWN_KEYS, "body", "text", "extra", "path"}


@dataclass(slots=True)
class ImportReport:
    imported: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)  # {line, duplicate_of}: not written
    merge_candidates: list[str] = field(default_factory=list)  # close pairs proposed for review
    commit: str | None = None
    recovered: dict[str, Any] | None = None  # an earlier import, killed before its commit, dealt with first

    def to_dict(self) -> dict[str, Any]:
        out = {
            "imported": len(self.imported),
            "skipped": self.skipped,
            "duplicates": self.duplicates,
            "merge_candidates": self.merge_candidates,
            "commit": self.commit,
            "ids": self.imported,
        }
        return out | ({"recovered": self.recovered} if self.recovered else {})


def export_records(memories: Iterable[Memory]) -> Iterator[dict[str, Any]]:
    """One JSON-ready record per memory, sorted by id; ``import_jsonl`` reads them back unchanged."""
    for memory in sorted(memories, key=lambda m: m.id):
        record = memory.to_dict()
        record.pop("path")
        yield record


def import_jsonl(
    ws: Workspace,
    lines: Iterable[str],
    *,
    skip_invalid: bool = False,
    redact: bool = False,
    actor: Actor | None = None,
    source_name: str = "<stdin>",
    progress: Progress | None = None,
) -> ImportReport:
    """Validate every line, then write all memories and commit them once.

    A bad line aborts the whole import (naming its line number) unless ``skip_invalid``.
    ``progress(phase, done, total)`` hears of the lines checked ("check", total unknown: 0) and the files
    written ("write").
    """
    report_progress = progress or (lambda phase, done, total: None)
    actor = actor or Actor.from_env()
    report = ImportReport()
    _recover(ws, report)
    snapshot = ws.store.snapshot().memories
    existing = set(snapshot)
    # The same text as a memory already there (or an earlier line) is a duplicate: no new file, so an import
    # repeated changes nothing (ee.curate.similar.normalise: case, punctuation and spacing ignored).
    known = {normalise(m.body): m.id for m in snapshot.values()}
    planned: dict[str, tuple[str, str]] = {}  # id → (path, text)
    numbers: dict[str, int] = {}  # id → its line
    taken_paths: set[str] = set()
    errors: list[dict[str, Any]] = []
    explicit: set[str] = set()  # ids given by the file: another writer may add the same id meanwhile
    secret_classes: set[str] = set()
    for number, raw in enumerate(_bounded(lines, source_name), start=1):
        if number % PROGRESS_STEP == 0:
            report_progress("check", number, 0)
        if not raw.strip():
            continue
        try:
            memory_id, rel, text, given_id = _prepare(ws, raw, actor, redact)
            key = normalise(frontmatter.split(text)[1])
            same = known.get(key)
            if same is not None and (same == memory_id or not given_id):
                report.duplicates.append({"line": number, "duplicate_of": same})
                continue
            if memory_id in existing or memory_id in planned:
                raise UsageError(
                    f"id {memory_id} is already in the store"
                    if memory_id in existing
                    else f"id {memory_id} appears twice in the file",
                    "drop the line, or give it another id (or none: ee picks one)",
                )
            while rel in taken_paths or (ws.root / rel).exists():
                rel = rel.removesuffix(".md") + "-1.md"
            taken_paths.add(rel)
            planned[memory_id] = (rel, text)
            numbers[memory_id] = number
            known.setdefault(key, memory_id)
            if given_id:
                explicit.add(memory_id)
        except EeError as exc:
            errors.append({"line": number, "message": exc.message, "repair": exc.hint})
            if isinstance(exc, SecretFound):
                secret_classes.update(exc.details.get("classes", []))
    if errors and not skip_invalid:
        raise _refusal(errors, secret_classes, source_name)
    report.skipped = errors
    merges = _drop_near_duplicates(ws, snapshot.values(), planned, explicit, numbers, report)
    if not planned:
        return report
    report.commit = _write_and_commit(ws, planned, explicit, actor, source_name, report_progress)
    report.imported = list(planned)
    report.merge_candidates = _propose_merges(ws, merges, source_name)
    return report


def _propose_merges(ws: Workspace, merges: list[tuple[Memory, Memory, str]], source_name: str) -> list[str]:
    """A ``merge`` candidate for each pair of close memories the import found (a line and a memory of the
    store, or two lines), as ``ee remember`` proposes one: a person decides, nothing is merged here."""
    from ee.curate.state import merge_candidate, propose

    found = f"when {source_name} was imported"
    candidates = [merge_candidate(older, newer, why, found) for older, newer, why in merges]
    return [candidate.id for candidate in propose(ws, candidates)] if candidates else []


def _refusal(errors: list[dict[str, Any]], secret_classes: set[str], source_name: str) -> EeError:
    """The error of an import with bad lines: the first named, with how many more and the fix."""
    first = errors[0]
    more = f" (and {len(errors) - 1} more bad lines)" if len(errors) > 1 else ""
    # A secret is refused by policy (exit 6) wherever it is found, as `ee remember` does.
    error_class = SecretFound if secret_classes else UsageError
    fix = "pass --redact to store the secrets masked" if secret_classes else first["repair"] or "fix it"
    return error_class(
        f"{source_name}:{first['line']}: {first['message']}{more}; nothing was imported",
        f"{fix}; or pass --skip-invalid to import the good lines",
        {"errors": errors[:100], "classes": sorted(secret_classes)},
    )


def _write_and_commit(
    ws: Workspace,
    planned: dict[str, tuple[str, str]],
    explicit: set[str],
    actor: Actor,
    source_name: str,
    report_progress: Progress,
) -> str | None:
    """Write the planned files and commit them once, under the workspace lock: all or nothing."""
    subject = f"ee: import {len(planned)} memories from {source_name}"
    trailers = {"Ee-Op": "import", "Ee-Count": str(len(planned)), "Ee-Actor": actor.label}
    with ws.lock():
        _refuse_taken(ws, planned, explicit)
        # Killed from here to the commit, the files are on disk and not in git: the journal lets the next
        # import or `ee doctor --fix` commit or remove exactly them (see ee.ops.recovery).
        datas = {rel: text.encode("utf-8") for rel, text in planned.values()}
        begin_import(ws.root, {rel: blob_id(data) for rel, data in datas.items()}, subject, trailers)
        written: list[str] = []
        try:
            for rel, text in planned.values():
                ws.store.write(rel, text, durable=False)
                written.append(rel)
                if len(written) % PROGRESS_STEP == 0 or len(written) == len(planned):
                    report_progress("write", len(written), len(planned))
            flush_to_disk()  # one sync for the batch instead of an fsync pair per file
            commit = ws.git.commit_paths(written, format_message(subject, trailers))
            crash_point("import.committed")
        except BaseException:
            for rel in written:  # all or nothing
                (ws.root / rel).unlink(missing_ok=True)
            end_import(ws.root)
            raise
        end_import(ws.root)
    return commit


def _drop_near_duplicates(
    ws: Workspace,
    stored: Iterable[Memory],
    planned: dict[str, tuple[str, str]],
    explicit: set[str],
    numbers: dict[str, int],
    report: ImportReport,
) -> list[tuple[Memory, Memory, str]]:
    """Leave out the lines (without an id of their own) near-identical by embedding to a memory of the
    store or to an earlier line: the ``duplicate`` bar of :data:`ee.curate.similar.NEAR_BARS`, as ``ee
    remember`` applies it. The (earlier, later, why) of the pairs between the bars: merges to propose.

    Two texts that open with other words are never near (:func:`ee.curate.similar.near_relation`), so
    only the lines that open as another line or a memory of the store does, and those memories, are
    embedded, with the static model the index uses (:func:`ee.curate.near.static_encoder`): no index is
    needed, so a repeated import is judged the same before and after the store's first search."""
    from ee.curate.similar import opening

    if all(memory_id in explicit for memory_id in planned):
        return []
    lines = {memory_id: opening(frontmatter.split(text)[1]) for memory_id, (_rel, text) in planned.items()}
    wanted = {lines[memory_id] for memory_id in planned if memory_id not in explicit}
    store = sorted((m for m in stored if opening(m.body) in wanted), key=lambda m: m.id)
    count = Counter([*lines.values(), *(opening(m.body) for m in store)])
    shared = {head for head in wanted if count[head] > 1}
    before = [m for m in store if opening(m.body) in shared]
    mine = [frontmatter.parse(text, rel)[0] for i, (rel, text) in planned.items() if lines[i] in shared]
    dropped, merges = _near_pairs(ws, [*before, *mine], len(before), explicit)
    for memory_id, (other, why) in dropped.items():
        where = f", as line {numbers[other]} of this file" if other in numbers else ""
        report.duplicates.append({"line": numbers[memory_id], "duplicate_of": other, "reason": why + where})
        del planned[memory_id]
    report.duplicates.sort(key=lambda entry: entry["line"])
    return [(a, b, why) for a, b, why in merges if a.id not in dropped and b.id not in dropped]


def _near_pairs(
    ws: Workspace, memories: list[Memory], first_line: int, explicit: set[str]
) -> tuple[dict[str, tuple[str, str]], list[tuple[Memory, Memory, str]]]:
    """Over ``memories`` (the store's, then the lines' from ``first_line`` on, in file order): {later line
    id: (earlier id, why)} of the near-identical lines to leave out, and the pairs to propose for a merge
    (a line is compared with what comes before it; two memories of the store are a scan's to judge)."""
    from ee.curate.near import close_pairs, embed, static_encoder
    from ee.curate.similar import NEAR_BARS, Features, relate

    encoder = static_encoder(ws) if len(memories) > 1 else None
    if encoder is None:
        return {}, []  # (without a model only the same text is looked for, as ee remember does)
    matrix = embed(
        encoder, [m.body for m in memories], [list(m.tags) for m in memories], [m.kind for m in memories]
    )
    features = [Features.of(m.body) for m in memories]
    dropped: dict[str, tuple[str, str]] = {}
    merges: list[tuple[Memory, Memory, str]] = []
    for earlier, later, cosine in close_pairs(matrix, NEAR_BARS["static"].merge):
        a, b = memories[earlier], memories[later]
        if later < first_line or b.id in explicit or b.id in dropped or a.id in dropped:
            continue  # (a line left out is compared no further)
        relation = relate(features[earlier], features[later], cosine, "static")
        if relation is not None and relation.type == "duplicate":
            dropped[b.id] = (a.id, relation.reason)
        elif relation is not None and relation.type == "merge":
            merges.append((a, b, relation.reason))
    return dropped, merges


def _recover(ws: Workspace, report: ImportReport) -> None:
    """Before planning: finish or undo an import that was killed before its commit (its files would
    otherwise count as taken ids and paths), and remove the temporaries killed writers left."""
    if has_journal(ws.root) or memory_temporaries(ws.root):
        with ws.lock():  # which finishes or undoes the import
            report.recovered = ws.recovered_import
            sweep_memory_temporaries(ws.root)


def _bounded(lines: Iterable[str], source_name: str) -> Iterator[str]:
    """The lines of a file, read at most :data:`MAX_LINE_CHARS` + 1 characters at a time: a file without
    line breaks (/dev/zero, a huge minified dump) is refused instead of filling memory."""
    readline = getattr(lines, "readline", None)
    if readline is None:
        yield from lines
        return
    number = 0
    while line := readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise UsageError(
                f"{source_name}:{number}: the line is longer than {MAX_LINE_CHARS} characters; "
                "nothing was imported",
                "write one memory per line (JSON Lines)",
            )
        yield line


def _refuse_taken(ws: Workspace, planned: dict[str, tuple[str, str]], explicit: set[str]) -> None:
    """Under the lock: a path or id planned before it was taken may have been taken meanwhile (another
    import of the same file, a hand edit). Writing anyway would replace that memory's file."""
    taken = [rel for rel, _text in planned.values() if (ws.root / rel).exists()]
    if not taken and explicit:
        present = set(ws.store.snapshot().memories)
        taken = [planned[memory_id][0] for memory_id in sorted(explicit & present)]
    if taken:
        raise ConflictError(
            f"{len(taken)} memory file(s) of this import appeared while it was prepared (e.g. {taken[0]}); "
            "nothing was imported",
            "run the import again: ids already in the store are then reported line by line",
        )


def _prepare(ws: Workspace, raw: str, actor: Actor, redact: bool) -> tuple[str, str, str, bool]:
    if len(raw) > MAX_LINE_CHARS:
        raise UsageError(
            f"the line is {len(raw)} characters (at most {MAX_LINE_CHARS})", "split the memory into several"
        )
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"not JSON: {exc.msg} at column {exc.colno}", "write one JSON object per line"
        ) from None
    except RecursionError:
        record = None
    if record is None or _nested_deeper(record, MAX_DEPTH):  # rendering and YAML recurse per level
        raise UsageError(f"the line is nested more than {MAX_DEPTH} levels deep", "write flatter JSON")
    if not isinstance(record, dict):
        raise UsageError("a line must be a JSON object", 'write e.g. {"body": "…", "kind": "rule"}')
    bad = unwritable(record)
    if bad is not None:  # "\udcff" (no file or commit takes it), NaN or 1e400 (no strict JSON export)
        raise UsageError(f"{bad[0]}: {bad[1]}", "write UTF-8 text and finite numbers")
    unknown = sorted(set(record) - _ALLOWED)
    if unknown:
        raise UsageError(f"unknown field(s): {', '.join(unknown)}", f"use: {', '.join(sorted(_ALLOWED))}")
    body = record.get("body", record.get("text"))
    if not isinstance(body, str):
        raise UsageError("'body' (or 'text') must be a string", 'add "body": "…"')
    body = check_text(body)
    memory_id = record.get("id") or new_id()
    links = [_link(item) for item in _list(record, "links")]
    trust = record.get("trust") or (
        "legacy_import" if record.get("id") is None and actor.agent else actor.trust
    )
    if trust not in TRUST_CLASSES:
        raise UsageError(f"unknown trust {trust!r}", f"use one of: {', '.join(TRUST_CLASSES)}")
    trust = capped(trust, by_agent=actor.agent is not None)  # an agent's claim is not a review
    fields = build_fields(
        memory_id=str(memory_id),
        level=record.get("level") or "semantic",
        kind=record.get("kind") or "fact",
        tags=_texts(record, "tags"),
        trust=trust,
        confidence=_number(record, "confidence"),
        source=_texts(record, "source"),
        valid_from=record.get("valid_from"),
        valid_to=record.get("valid_to"),
        links=links,
        paths=_texts(record, "paths"),
        redacted=_texts(record, "redacted"),
        created=_created(record.get("created")),
        utility=_number(record, "utility", 0.5),
        importance=_number(record, "importance", 0.5),
    )
    extra = record.get("extra") or {}
    if not isinstance(extra, dict):
        raise UsageError("'extra' must be an object", "remove it or make it {}")
    fields, body, extra = guard_memory(fields, body, extra, redact=redact)
    text = frontmatter.render_new(fields, body, extra)
    size = len(text.encode("utf-8"))
    if size > ws.store.max_body_bytes:
        raise UsageError(
            f"the memory would be {size} bytes, more than the limit of {ws.store.max_body_bytes}",
            "split it into several memories, or raise store.max_body_bytes in .ee/config.toml",
        )
    rel = ws.store.new_path(fields["id"], body)
    if "\\" in text.partition("\n---\n")[0] or extra:
        # What we write must read back. The emitter writes a value plain only when YAML reads it back as
        # that text, else as a JSON string (valid YAML); escapes and extra keys are checked by a real parse.
        frontmatter.parse(text, rel)
    return fields["id"], rel, text, record.get("id") is not None


def _nested_deeper(value: Any, limit: int) -> bool:
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= limit:
                return True
            stack.extend((item, depth + 1) for item in (node.values() if isinstance(node, dict) else node))
    return False


def _created(value: Any) -> str | None:
    if value is None:
        return None
    from ee.store.fields import normalise_time

    return normalise_time(str(value), "created")


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise UsageError(f"'{key}' must be a list", f'write e.g. "{key}": ["a", "b"]')
    return value


def _texts(record: dict[str, Any], key: str) -> list[str]:
    """A list of short texts (numbers are taken as text); a nested list or object is an error."""
    out = []
    for item in _list(record, key):
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise UsageError(
                f"'{key}' holds {json.dumps(item)[:40]}, not text", f'write e.g. "{key}": ["a", "b"]'
            )
        out.append(str(item))
    return out


def _number(record: dict[str, Any], key: str, default: float | None = None) -> Any:
    value = record.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"'{key}' must be a number from 0 to 1", f'write e.g. "{key}": 0.5')
    return float(value)


def _link(item: Any) -> Link:
    if isinstance(item, str):
        return parse_link(item)
    if isinstance(item, dict) and isinstance(item.get("type"), str) and isinstance(item.get("to"), str):
        return parse_link(f"{item['type']}:{item['to']}")
    raise UsageError(f"link {item!r} is not {{type, to}}", 'write e.g. {"type": "supports", "to": "mem_…"}')
