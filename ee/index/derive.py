"""One memory version's derived data: parse, secret masking, injection flags, tokens (no I/O)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from ee.errors import MemoryFormatError
from ee.git.conflict import git_marker_line, has_git_markers, is_conflicted
from ee.index.cache import Derived
from ee.index.tokenize import lead, tokenize
from ee.store import frontmatter
from ee.store.frontmatter import CONFLICT_KEY

PARALLEL_MIN = 1500  # memories to derive before worker processes pay off (each takes ~0.3 s to start)
_CHUNK = 250  # memories per batch sent to a worker
LEAD_REPEAT = 2  # extra times BM25 counts a memory's lead (see index_tokens)


def derive(data: bytes, path: str) -> Derived:
    """Parse ``data`` (the bytes of a memory file at ``path``) into what the index keeps.

    Secrets found in any field (a hand edit can add one to the body, ``source``, ``tags``, ``paths``,
    ``links`` or an extra key) are masked before anything is tokenised, embedded or shown; the file itself
    is never changed. An unreadable file gives a record with ``error`` set, so the error is cached too and
    reported without parsing again.
    """
    from ee.policy.secrets import scan_memory

    try:
        text = frontmatter.decode(data, path)
        parsed, problems = frontmatter.parse(text, path)
    except MemoryFormatError as exc:
        errors = [{"message": e.reason, "line": e.line, "key": e.key, "repair": e.hint} for e in exc.each()]
        return Derived({"error": errors[0], "errors": errors}, "", [], None)
    if has_git_markers(parsed.body):  # a text merge that stopped: broken, never a hit titled "<<<<<<< HEAD"
        error = {
            "code": "memory_conflicted",
            "message": "git's conflict markers from a merge: both sides are in the text",
            "line": git_marker_line(text),
            "key": None,
            "repair": f"keep one version in {path} and delete the marker lines (<<<<<<<, =======, >>>>>>>), "
            "then commit it; ee doctor names the sides (after the merge commit: ee memory resolve ID --pick)",
        }
        return Derived({"error": error, "errors": [error]}, "", [], None)
    memory, secrets = scan_memory(parsed)
    body = memory.body
    secret_classes = sorted({f.cls for f in secrets})
    record: dict[str, Any] = {
        "id": memory.id,
        "id_from_path": not _has_id_key(parsed, data),
        "level": memory.level,
        "kind": memory.kind,
        "tags": list(memory.tags),
        "trust": memory.trust,
        "confidence": memory.confidence,
        "utility": memory.utility,
        "importance": memory.importance,
        "created": memory.created,
        "valid_from": memory.valid_from,
        "valid_to": memory.valid_to,
        "source": list(memory.source),
        "links": [[link.type, link.to] for link in memory.links],
        "paths": list(memory.paths),
        "redacted": list(parsed.redacted),
        "extra": dict(memory.extra),
        "has_frontmatter": memory.has_frontmatter,
        "body_line": memory.body_line,
        "secrets": secret_classes,
        "injection": _injection(memory),
        "warnings": [p.to_dict() for p in problems],
        "conflict": is_conflicted(memory.body, dict(memory.extra).get(CONFLICT_KEY)),
    }
    return Derived(record, body, index_tokens(body, memory.tags, memory.kind, memory.paths), None)


def derive_all(items: dict[str, tuple[bytes, str]], progress: Any = None) -> dict[str, Derived]:
    """``derive`` each ``(bytes, path)``, keyed as given (by blob id). A large batch (a full build: ~1.5 ms a
    memory) is shared with worker processes, one per core; the results are the same either way.

    ``progress("parse", done, total)`` is called as batches finish."""
    report = progress or (lambda phase, done, total: None)
    if len(items) >= PARALLEL_MIN and _cores() > 1:
        from concurrent.futures import BrokenExecutor

        try:
            return _derive_in_workers(items, report)
        except (OSError, BrokenExecutor):  # no processes here (a sandbox), or one died: go on alone
            pass
    out: dict[str, Derived] = {}
    for done, (key, (data, path)) in enumerate(items.items(), 1):
        out[key] = derive(data, path)
        if done % _CHUNK == 0 or done == len(items):
            report("parse", done, len(items))
    return out


def _derive_in_workers(items: dict[str, tuple[bytes, str]], report: Any) -> dict[str, Derived]:
    """The batches of ``items`` derived by a ``ProcessPoolExecutor`` of fresh interpreters ("spawn": no
    fork of a process running threads, as the warm server is), one per core."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    keys = list(items)
    batches = [keys[start : start + _CHUNK] for start in range(0, len(keys), _CHUNK)]
    out: dict[str, Derived] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=_cores(), mp_context=context) as pool:
        derived = pool.map(_derive_batch, ([items[k] for k in batch] for batch in batches))
        for batch, results in zip(batches, derived, strict=True):
            for key, (record, body, tokens) in zip(batch, results, strict=True):
                out[key] = Derived(record, body, tokens, None)
            report("parse", len(out), len(keys))
    return out


def _derive_batch(batch: list[tuple[bytes, str]]) -> list[tuple[Any, str, list[str]]]:
    """What a worker process answers for one batch of ``(bytes, path)``."""
    derived = [derive(data, path) for data, path in batch]
    return [(d.record, d.body, d.tokens) for d in derived]


def _cores() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(4, cores)


def index_tokens(body: str, tags: Any, kind: str, paths: Any) -> list[str]:
    """What BM25 sees: the body, its lead again LEAD_REPEAT times, then tags, kind and code paths (each
    findable by name).

    Counting the lead's terms again is a simple BM25F, the lead a field weighted three times the rest: a
    memory's opening (its title, its first sentence) says what it is about, so a memory that opens with the
    query's words ranks above one that mentions them further down (tests/test_lexical.py). In a memory no
    longer than its lead every term counts three times, so its term frequencies saturate sooner. On the
    dev set (scripts/tune_retrieval.py, k1 1.5, b 1.0) lexical recall@10 / MRR@10 went from 0.666 / 0.445
    to 0.678 / 0.466 and hybrid from 0.701 / 0.458 to 0.702 / 0.475; the lead counted twice in all gave
    0.673 / 0.459 lexical. (With the lead, k1 2.0 and 2.5 gained another ~0.005 hybrid recall: not taken,
    within what one dev set can tell.) The relevance coefficients were refitted for it.
    """
    extra = " ".join([*tags, kind, *paths])
    return tokenize(body) + tokenize(lead(body)) * LEAD_REPEAT + tokenize(extra)


def embed_text(body: str, tags: Any, kind: str) -> str:
    """What the static model embeds: tags and kind lead, so the model's token cap keeps them."""
    head = " ".join(tags)
    return f"{kind}: {head}\n{body}" if head else f"{kind}: {body}"


def transformer_text(body: str, tags: Any) -> str:
    """What the transformer arm embeds: the tags, then the body, without the kind label.

    The transformer reads a label as content: ``fact:`` at the head of every fact pulls each of them
    towards the others. On the development set (Vim help, every chunk a fact; semantic-only recall@10 /
    MRR@10, bench/README.md "stop 39") the body alone read 0.583 / 0.335 against 0.579 / 0.328 with the
    label, and 0.608 / 0.352 against 0.590 / 0.344 with the lead's vector added (encoded alone; pooled
    from the same run since the "fifth pass": 0.612 / 0.360, :meth:`ee.index.transformer.Transformer
    .encode_documents`)."""
    head = " ".join(tags)
    return f"{head}\n{body}" if head else body


def _has_id_key(memory: Any, data: bytes) -> bool:
    if not memory.has_frontmatter:
        return False
    fm, _body, _line = frontmatter.split(data.decode("utf-8", "replace"))
    return fm is not None and "id" in frontmatter.top_level_key_lines(fm)


def _injection(memory: Any) -> dict[str, Any]:
    scan = _injection_scanner()
    if scan is None:  # pragma: no cover - the guard ships with ee
        return {"score": 0.0, "flagged": False, "signals": []}
    report = scan(memory)
    return {"score": round(report.score, 4), "flagged": report.flagged, "signals": list(report.signals)}


@functools.cache
def _injection_scanner() -> Callable[[Any], Any] | None:
    """The injection guard (:func:`ee.policy.injection.scan_memory_injection`), looked up once (a failed
    import is not cached by Python: retrying it for every memory cost ~0.2 ms each)."""
    try:
        from ee.policy.injection import scan_memory_injection
    except ModuleNotFoundError as exc:
        if exc.name != "ee.policy.injection":
            raise
        return None
    return scan_memory_injection


def errors_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The problems of an unreadable file's record, each with its line (a record cached before ee kept
    them all holds only the first)."""
    return list(record.get("errors") or [record["error"]])
