"""``ee eval sessions DIR``: how well session memory answers questions about past sessions.

``DIR/sessions/`` holds transcripts in any format ``ee import session`` reads; ``DIR/questions.jsonl``
one ``{id, type, question, answer, sessions, abstain}`` a line. The transcripts are imported into a fresh
temporary workspace, then every question is asked with ``ee search`` (the top 10) and ``ee context
--max-tokens 2000``, through the same library calls the commands make.

A hit *is* a session when it is an evidence hit whose provenance names the session, or a memory whose
``derived_from`` points into it. Per question, the first hit that is one of the question's sessions gives its
rank. The report (all over answerable questions, unless said otherwise):

- ``hit@1``, ``hit@5``, ``hit@10``: the share with a right session at rank ≤ k; ``mrr``: the mean of 1/rank;
- ``answerable_no_hit``: the share that get no hit at all; ``unanswerable_no_hit``: the share of the
  ``abstain`` questions that get none (the right answer to them);
- ``newest_first``: over knowledge updates naming two or more sessions (the newest first, by convention), the
  share whose first right hit is that newest session;
- ``pack_terms``: the share whose 2,000-token pack holds at least 60 % of the answer's key terms (content
  words: stop words aside, words of 4+ letters, capitalised words and numbers; an answer without any is left
  out).

How the transcripts get into the workspace is the ``importer``'s business: ``ee import session`` by default;
the baseline of ``bench/sessions_bench.py`` imports one memory per exchange instead, measured the same way.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.errors import NotFound, StorageError, UsageError
from ee.model import Progress

if TYPE_CHECKING:
    from ee.results.pack import Pack
    from ee.workspace import Workspace

K = 10
CUTS = (1, 5, 10)
MAX_TOKENS = 2000
PACK_SHARE = 0.6
QUESTION_KEYS = ("id", "type", "question", "answer", "sessions", "abstain")

# Imports ``paths`` (the transcripts) into the workspace; ``progress(phase, done, total)`` may hear of it. It
# returns the files it could not import, each ``{path, message}``: the report lists them.
Importer = Callable[["Workspace", list[Path], Progress | None], list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    type: str
    question: str
    answer: str
    sessions: tuple[str, ...]
    abstain: bool


# ---- reading the set -----------------------------------------------------------------------------------


def read_questions(path: Path) -> list[Question]:
    """The questions of ``path``; a line that is not one question object is an error naming ``file:line``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(
            f"{path} does not exist",
            "write one {id, type, question, answer, sessions, abstain} object a line in DIR/questions.jsonl",
        ) from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text: {exc.reason}", "save the file as UTF-8") from None
    except OSError as exc:
        raise StorageError(
            f"cannot read {path}: {exc.strerror or exc}", "check the path and its permissions"
        ) from None
    questions: list[Question] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        question = parse_question(line, where)
        if question.id in seen:
            raise UsageError(
                f"{where}: the id {question.id!r} is used twice", "give every question its own id"
            )
        seen.add(question.id)
        questions.append(question)
    if not questions:
        raise UsageError(f"{path} holds no question", "write one question object a line")
    return questions


def parse_question(line: str, where: str) -> Question:
    hint = 'each line is {"id", "type", "question", "answer", "sessions": [ids], "abstain": true|false}'
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not JSON ({exc.msg})", hint) from None
    if not isinstance(row, dict):
        raise UsageError(f"{where}: not a JSON object", hint)
    missing = [key for key in QUESTION_KEYS if key not in row]
    if missing:
        raise UsageError(f"{where}: missing {', '.join(missing)}", hint)
    for key in ("id", "type", "question", "answer"):
        if not isinstance(row[key], str):
            raise UsageError(f"{where}: {key} must be a string", hint)
    if not row["question"].strip():
        raise UsageError(f"{where}: the question is empty", hint)
    sessions = row["sessions"]
    if not isinstance(sessions, list) or not all(isinstance(s, str) and s for s in sessions):
        raise UsageError(f"{where}: sessions must be a list of session ids", hint)
    if not isinstance(row["abstain"], bool):
        raise UsageError(f"{where}: abstain must be true or false", hint)
    if row["abstain"] and sessions:
        raise UsageError(
            f"{where}: an abstain question names no session", "empty its sessions, or drop abstain"
        )
    if not row["abstain"] and not sessions:
        raise UsageError(f"{where}: an answerable question names the sessions that hold its answer", hint)
    return Question(row["id"], row["type"], row["question"], row["answer"], tuple(sessions), row["abstain"])


def transcripts(folder: Path) -> list[Path]:
    """The files under ``folder``, sub-folders too (Codex keeps its rollouts in YYYY/MM/DD/), sorted, hidden
    ones aside: whatever ``ee import session`` should read."""
    if not folder.is_dir():
        raise NotFound(f"{folder} is not a folder", "put the transcripts in DIR/sessions/")
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    if not files:
        raise UsageError(f"{folder} holds no transcript", "put the transcripts in DIR/sessions/")
    return files


# ---- scoring one question ------------------------------------------------------------------------------

WORD = re.compile(r"[0-9A-Za-z][0-9A-Za-z_]*(?:[.\-+/][0-9A-Za-z_]+)*")


def key_terms(answer: str) -> list[str]:
    """The answer's content words, each once: stop words aside, words of 4+ letters, capitalised words and
    numbers (``1.81``, ``5433``)."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    terms: list[str] = []
    for word in WORD.findall(answer):
        folded = word.casefold()
        if folded in STOPWORDS_EN_PLUS or folded in (t.casefold() for t in terms):
            continue
        if len(word) >= 4 or word[0].isupper() or word[0].isdigit():
            terms.append(word)
    return terms


def holds(text: str, term: str) -> bool:
    """Whether ``term`` is in ``text`` as a word of its own (case aside)."""
    return re.search(rf"(?<![0-9A-Za-z_]){re.escape(term)}(?![0-9A-Za-z_])", text, re.IGNORECASE) is not None


def hit_sessions(hit: dict[str, Any], known: Iterable[str]) -> set[str]:
    """The sessions among ``known`` that a search hit or pack item stands for: an evidence hit's provenance
    session, the session a memory accepted from a session candidate names in its ``source``
    (``session:ID``, as ``ee curate accept`` writes it), or the sessions a memory's ``derived_from`` (field,
    extra field or link) points into."""
    provenance = hit.get("provenance") or {}
    named: set[str] = set()
    for source in (hit, provenance):
        for key in ("session", "session_id", "sessionId"):
            if isinstance(source.get(key), str):
                named.add(source[key])
    memory = hit.get("memory") or {}
    sources = memory.get("source") or []
    named |= {s.removeprefix("session:") for s in sources if isinstance(s, str) and s.startswith("session:")}
    pointers: list[Any] = [hit.get("derived_from"), provenance.get("derived_from")]
    pointers += [memory.get("derived_from"), (memory.get("extra") or {}).get("derived_from")]
    pointers += [link.get("to") for link in memory.get("links") or [] if link.get("type") == "derived_from"]
    texts = list(strings(pointers))
    return {s for s in known if s in named or any(s in text for text in texts)}


def strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def pack_text(pack: Pack) -> str:
    """What a pack puts in front of the agent: each item's title and text."""
    return "\n".join(f"{item.title}\n{item.body}" for item in pack.items)


def judge(question: Question, ranked: Sequence[set[str]], pack: str | None) -> dict[str, Any]:
    """One question's outcome, from the sessions of its ranked hits (best first) and the text of its pack."""
    rank = next((n for n, found in enumerate(ranked, start=1) if found & set(question.sessions)), None)
    first = ranked[rank - 1] if rank else set()
    row: dict[str, Any] = {
        "id": question.id,
        "type": question.type,
        "abstain": question.abstain,
        "hits": len(ranked),
        "rank": rank,
        "top_sessions": sorted(ranked[0]) if ranked else [],
    }
    if question.type == "knowledge-update" and len(question.sessions) > 1:
        row["newest_first"] = question.sessions[0] in first
    terms = key_terms(question.answer) if pack is not None and not question.abstain else []
    if terms:  # an answer without key terms (a short lower-case word) gives a pack nothing to be checked for
        found = [t for t in terms if holds(pack or "", t)]
        row["pack_terms"] = {
            "found": len(found),
            "of": len(terms),
            "missing": [t for t in terms if t not in found],
        }
        row["pack_ok"] = len(found) >= PACK_SHARE * len(terms)
    return row


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The metrics of a set of judged questions (see the module's docstring); None where nothing counts."""
    answerable = [r for r in rows if not r["abstain"]]
    unanswerable = [r for r in rows if r["abstain"]]
    updates = [r for r in answerable if "newest_first" in r]
    packs = [r for r in answerable if "pack_ok" in r]

    def share(items: Sequence[dict[str, Any]], test: Callable[[dict[str, Any]], bool]) -> float | None:
        return round(sum(1 for r in items if test(r)) / len(items), 4) if items else None

    out: dict[str, Any] = {"answerable": len(answerable), "unanswerable": len(unanswerable)}
    for cut in CUTS:
        out[f"hit@{cut}"] = share(answerable, ranked_within(cut))
    out["mrr"] = (
        round(sum(1 / r["rank"] for r in answerable if r["rank"]) / len(answerable), 4)
        if answerable
        else None
    )
    out["answerable_no_hit"] = share(answerable, lambda r: r["hits"] == 0)
    out["unanswerable_no_hit"] = share(unanswerable, lambda r: r["hits"] == 0)
    out["newest_first"] = share(updates, lambda r: r["newest_first"])
    out["newest_first_questions"] = len(updates)
    out["pack_terms"] = share(packs, lambda r: r["pack_ok"])
    return out


def ranked_within(cut: int) -> Callable[[dict[str, Any]], bool]:
    return lambda row: row["rank"] is not None and row["rank"] <= cut


def report(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Overall and per-type metrics, and the misses: answerable questions without a right session in the top
    10, unanswerable ones with hits, knowledge updates whose newest session is not first, packs that miss."""
    types = sorted({r["type"] for r in rows})
    misses = [
        r
        for r in rows
        if (r["rank"] is None if not r["abstain"] else r["hits"] > 0)
        or r.get("newest_first") is False
        or r.get("pack_ok") is False
    ]
    return {
        "overall": summarise(rows),
        "by_type": {t: summarise([r for r in rows if r["type"] == t]) for t in types},
        "misses": misses,
    }


# ---- the run -------------------------------------------------------------------------------------------


def evaluate(
    folder: Path,
    importer: Importer | None = None,
    *,
    max_tokens: int = MAX_TOKENS,
    min_relevance: float | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import ``folder``'s transcripts into a temporary workspace and judge every question of its
    questions.jsonl (the first ``limit`` only, if given)."""
    from ee.query.document import from_arguments
    from ee.workspace import Workspace

    if not folder.is_dir():
        raise NotFound(f"{folder} is not a folder", "pass a folder holding sessions/ and questions.jsonl")
    files = transcripts(folder / "sessions")
    questions = read_questions(folder / "questions.jsonl")[:limit]
    known = sorted({s for q in questions for s in q.sessions})
    importer = importer or import_sessions
    out: dict[str, Any] = {
        "dataset": str(folder),
        "transcripts": len(files),
        "questions": len(questions),
        "k": K,
        "max_tokens": max_tokens,
    }
    with tempfile.TemporaryDirectory(prefix="ee-eval-sessions-") as tmp:
        ws, _ = Workspace.init(Path(tmp) / "ws")
        started = time.perf_counter()
        out["import_errors"] = importer(ws, files, progress)
        out["import_seconds"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        rows = []
        for done, question in enumerate(questions, start=1):
            found = ws.search(from_arguments(question.question, limit=K, fields="full"), min_relevance)
            ranked = [hit_sessions(hit.to_json(), known) for hit in found.hits]
            pack = ws.context(
                from_arguments(question.question, max_tokens=max_tokens), min_relevance=min_relevance
            )
            row = judge(question, ranked, pack_text(pack))
            row["question"] = question.question
            row["sessions"] = list(question.sessions)
            rows.append(row)
            if progress and (done % 20 == 0 or done == len(questions)):
                progress("questions", done, len(questions))
        out["query_seconds"] = round(time.perf_counter() - started, 2)
        out["min_relevance"] = found.min_relevance if questions else None
    return out | report(rows)


def import_sessions(ws: Workspace, paths: list[Path], progress: Progress | None) -> list[dict[str, Any]]:
    """``ee import session PATH...``: the library call the command makes."""
    report = ws.import_sessions(paths)
    return [{"path": e.get("path"), "message": e.get("message")} for e in report.errors]


# ---- the table -----------------------------------------------------------------------------------------

COLUMNS = (
    ("hit@1", "hit@1"),
    ("hit@5", "hit@5"),
    ("hit@10", "hit@10"),
    ("mrr", "MRR"),
    ("answerable_no_hit", "no hit"),
    ("unanswerable_no_hit", "abstain"),
    ("newest_first", "newest"),
    ("pack_terms", "pack"),
)


def table(result: dict[str, Any], misses: bool = False) -> str:
    overall = result["overall"]
    lines = [
        f"{result['transcripts']} transcripts, {result['questions']} questions "
        f"({overall['answerable']} answerable, {overall['unanswerable']} unanswerable), "
        f"k={result['k']}, packs of {result['max_tokens']} tokens, "
        f"min_relevance {result['min_relevance']}",
        f"{'':<18}{'n':>4}" + "".join(f"{title:>9}" for _, title in COLUMNS),
    ]
    for name, row in [("all", overall), *result["by_type"].items()]:
        n = row["answerable"] + row["unanswerable"]
        cells = "".join(f"{'-' if row[key] is None else format(row[key], '.3f'):>9}" for key, _ in COLUMNS)
        lines.append(f"{name:<18}{n:>4}{cells}")
    lines.append(
        "no hit: answerable questions with no hit; abstain: unanswerable ones with none; newest: knowledge "
        f"updates whose newest session ranks first ({overall['newest_first_questions']}); "
        "pack: packs holding ≥ 60 % of the answer's key terms"
    )
    for error in result.get("import_errors", []):
        lines.append(f"not imported: {error['path']}: {error['message']}")
    if misses:
        lines.append(f"\nmisses ({len(result['misses'])}):")
        lines += [describe(row) for row in result["misses"]]
    return "\n".join(lines)


def describe(row: dict[str, Any]) -> str:
    what = []
    if row["abstain"]:
        what.append(f"unanswerable, {row['hits']} hit(s)")
    elif row["rank"] is None:
        what.append("no right session in the top 10" if row["hits"] else "no hit")
    else:
        what.append(f"rank {row['rank']}")
    if row.get("newest_first") is False:
        what.append("newest session not first")
    if row.get("pack_ok") is False:
        terms = row["pack_terms"]
        what.append(
            f"pack holds {terms['found']}/{terms['of']} key terms (missing {', '.join(terms['missing'])})"
        )
    return f"  {row['id']} [{row['type']}] {row['question']}  →  {'; '.join(what)}"
