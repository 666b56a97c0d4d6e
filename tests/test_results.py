"""Typed results (ee.results): what Workspace.search, context and why return, and the one path from each to
its ee.response.v1 JSON. The warm server sends ``to_json()`` and the client rebuilds the result with
``from_json``: both directions must be exact, or a served answer would differ from an in-process one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ee.operations import OPERATIONS, answer, result, run
from ee.query.document import from_arguments
from ee.render import dumps
from ee.results import Result
from ee.results.health import DoctorReport, IndexStatus, InitReport
from ee.results.pack import Pack, PackItem, PackSection
from ee.results.search import Hit, Omitted, SearchResult
from ee.results.sessions import Session, SessionEvidence, SessionForgotten, SessionImport
from ee.results.why import Explanation
from ee.workspace import Workspace
from tests.memory_corpus import shared_store

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "transcripts"
FIELDS = ("minimal", "summary", "standard", "full")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return shared_store(tmp_path_factory)


def assert_round_trips(result: Result) -> None:
    """JSON → result → JSON gives the same bytes, and result → JSON → result the same result."""
    data = result.to_json()
    again = type(result).from_json(json.loads(dumps(data)))
    assert again == result
    assert dumps(again.to_json()) == dumps(data)


@pytest.mark.parametrize("fields", FIELDS)
@pytest.mark.parametrize("explain", [False, True])
def test_a_search_is_typed_and_round_trips(store: dict[str, Any], fields: str, explain: bool) -> None:
    ws = Workspace(store["root"])
    result = ws.search(from_arguments("ci cache curl repair", fields=fields, explain=explain or None))
    assert isinstance(result, SearchResult)
    assert result.hits
    assert all(isinstance(hit, Hit) and hit.type == "memory" for hit in result.hits)
    first = result.hits[0]
    assert first.rank == 1
    assert first.id.startswith("mem_")
    assert first.title
    assert isinstance(first.tags, tuple)
    assert isinstance(first.flags, tuple)
    assert (first.explanation is not None) == explain
    assert (first.memory is not None) == (fields == "full")
    assert ("body" in first.shown) == (fields in ("standard", "full"))
    assert_round_trips(result)


def test_a_key_not_shown_is_not_a_null(store: dict[str, Any]) -> None:
    """--fields minimal leaves ``relevance`` out; that is not the ``null`` of a shown relevance."""
    ws = Workspace(store["root"])
    hit = ws.search(from_arguments("ci cache", fields="minimal")).hits[0]
    assert "relevance" not in hit.to_json()
    assert hit.relevance is None
    shown = Hit.from_json({"id": "mem_x", "relevance": None})
    assert shown.to_json() == {"id": "mem_x", "relevance": None}
    assert Hit.from_json({"id": "mem_x"}).to_json() == {"id": "mem_x"}
    assert shown != Hit.from_json({"id": "mem_x"})


@pytest.mark.parametrize("fields", FIELDS)
def test_a_pack_is_typed_and_round_trips(store: dict[str, Any], fields: str) -> None:
    ws = Workspace(store["root"])
    pack = ws.context(from_arguments("fix the CI cache with the curl repair script", fields=fields))
    assert isinstance(pack, Pack)
    assert pack.sections
    assert pack.fields == fields
    assert all(isinstance(s, PackSection) and s.items for s in pack.sections)
    assert pack.counts.items == len(pack.items) > 0
    assert all(isinstance(item, PackItem) for item in pack.items)
    assert pack.budget.used_tokens <= pack.budget.max_tokens
    assert all(isinstance(o, Omitted) and o.id and o.reason for o in pack.omitted)
    assert_round_trips(pack)


def test_answers_with_session_evidence_round_trip(ws: Workspace) -> None:
    """Answers mixing memories and session evidence (a hit's and an item's two shapes)."""
    ws.remember("Database migrations run in CI before every deploy of the shop service.")
    copies = []
    for name in ("claude-code.jsonl", "codex.jsonl"):
        copies.append(ws.root.parent / name)
        shutil.copyfile(TRANSCRIPTS / name, copies[-1])
    imported = ws.import_sessions(copies)
    assert isinstance(imported, SessionImport)
    assert imported.added > 0
    assert len(imported.files) == 2
    assert_round_trips(imported)
    with_queue = imported.with_candidates({"found": 0, "proposed": []})
    assert list(with_queue.to_json())[-1] == "candidates"  # (shown last, as the command prints it)
    assert_round_trips(with_queue)
    for fields in FIELDS:
        query = from_arguments("database migrations alembic", fields=fields)
        result = ws.search(query, min_relevance=0)
        assert {hit.type for hit in result.hits} == {"memory", "evidence"}
        assert_round_trips(result)
        pack = ws.context(query, min_relevance=0)
        assert "sessions" in {section.name for section in pack.sections}
        assert {item.type for item in pack.items} >= {"evidence"}
        assert_round_trips(pack)
    sessions = ws.sessions()
    assert len(sessions) == 2
    assert all(isinstance(s, Session) and s.evidence > 0 and s.transcripts for s in sessions)
    shown = ws.session(sessions[0].session_id)
    assert len(shown.evidence) == sessions[0].evidence
    assert all(piece.id.startswith("ev_") and piece.text for piece in shown.evidence)
    assert SessionEvidence.from_json(json.loads(dumps(shown.to_json()))) == shown
    forgotten = ws.forget_session(sessions[0].session_id)
    assert isinstance(forgotten, SessionForgotten)
    assert forgotten.evidence == sessions[0].evidence
    assert_round_trips(forgotten)


def test_upkeep_answers_are_typed_and_round_trip(ws: Workspace) -> None:
    """ee init, ee doctor (with --fix) and ee index status return types too, and keep every key."""
    _again, init = Workspace.init(ws.root)
    assert isinstance(init, InitReport)
    assert init.root == str(ws.root)
    assert init.commit is None
    assert_round_trips(init)
    ws.remember("Doctor reads every memory file.")
    report = ws.doctor(fix=True)
    assert isinstance(report, DoctorReport)
    assert report.memories == 1
    assert report.fixed is not None
    assert list(report.to_json())[-1] == "fixed"
    assert_round_trips(report)
    status = ws.index_status()
    assert isinstance(status, IndexStatus)
    assert status.state in ("ready", "stale", "missing")
    assert "degraded" in status.to_json()
    assert "generation" in status.to_json()
    assert_round_trips(status)


# Workspace methods that return a lookup by memory id (not an answer a front end renders): allowed.
BY_ID = {"granted_trust", "standing_facts", "standings"}
# ``export_records``' records are the export format itself (ee.memory JSON Lines, one per line),
# written as they come: no front end reads them as an answer.
EXPORT = {"export_records"}


def test_no_workspace_method_returns_a_json_shaped_dict() -> None:
    """Every public ``Workspace`` method returns a typed result (or a Memory, a tuple of them, ...):
    a return annotated ``dict…`` or holding ``dict[str, Any]`` fails here, but for the commented few."""
    import inspect

    found = []
    for name, member in inspect.getmembers(Workspace, callable):
        if name.startswith("_") or name in BY_ID | EXPORT:
            continue
        returns = str(inspect.signature(member).return_annotation)
        if returns.startswith("dict") or "dict[str, Any]" in returns:
            found.append(f"{name} -> {returns}")
    assert found == []
    assert "dict[str, Any]" in str(inspect.signature(Workspace.export_records).return_annotation)  # (still)


def test_why_is_typed_and_round_trips(store: dict[str, Any]) -> None:
    ws = Workspace(store["root"])
    memory_id = store["records"][0]["id"]
    plain = ws.why(memory_id)
    assert isinstance(plain, Explanation)
    assert plain.id == memory_id
    assert plain.query is None
    assert plain.standing["trust"] == store["records"][0]["trust"]
    assert_round_trips(plain)
    for_query = ws.why(memory_id, "ci cache curl repair")
    assert for_query.query is not None
    assert for_query.query["text"] == "ci cache curl repair"
    assert_round_trips(for_query)


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("search", {"query": {"query": {"text": "ci cache"}}}),
        ("context", {"query": {"query": {"text": "ci cache"}}}),
    ],
)
def test_a_served_answer_is_rebuilt_as_the_same_result(store: dict[str, Any], op: str, args: Any) -> None:
    """What the server sends (``run``: the result's JSON), rebuilt as the command line does, is the
    in-process result."""
    ws = Workspace(store["root"])
    sent = json.loads(json.dumps(run(ws, op, args), ensure_ascii=False))
    assert answer(op, sent) == result(ws, op, args)


def test_memory_show_and_list_are_typed_and_round_trip(store: dict[str, Any]) -> None:
    """``ee memory show`` and ``list`` (served warm): their views carry what the human text reads, and
    a served answer rebuilt is the in-process result."""
    ws = Workspace(store["root"])
    listed = ws.memory_list(limit=3)
    assert listed.count == len(listed.memories) == 3
    assert all(view.title and view.writer for view in listed.memories)
    assert_round_trips(listed)
    first = listed.memories[0].id
    shown = ws.memory_show(first)
    assert shown.id == first
    assert shown.as_of is None
    assert shown.effective_confidence is not None
    assert_round_trips(shown)
    then = ws.memory_show(first, "HEAD")
    assert then.as_of is not None
    assert then.as_of["commit"]
    assert_round_trips(then)
    for op, args in (("memory_show", {"memory_id": first}), ("memory_list", {"limit": 3})):
        sent = json.loads(json.dumps(run(ws, op, args), ensure_ascii=False))
        assert answer(op, sent) == result(ws, op, args)


def test_a_key_no_type_knows_is_refused() -> None:
    with pytest.raises(TypeError, match="Hit has no colour"):
        Hit.from_json({"id": "mem_x", "colour": "blue"})
    with pytest.raises(TypeError, match="PackItem has no nope"):
        Pack.from_json({"sections": [{"name": "evidence", "items": [{"id": "m", "nope": 1}]}]})


def test_every_operation_names_a_result_type_it_returns() -> None:
    """An operation's ``result`` is a dotted name (imported on use): each resolves to a Result type."""
    for operation in OPERATIONS.values():
        found = operation.result_type
        assert issubclass(found, Result), operation.name
        assert found.__module__ == f"ee.results.{operation.result.partition(':')[0]}"


def test_a_served_search_does_not_build_the_other_answers_types() -> None:
    """The client of a served search imports its own result types only (each dataclass costs its
    generated code at import): checked in a fresh interpreter, which has imported nothing yet."""
    import subprocess
    import sys

    code = (
        "import sys; from ee.operations import answer; from ee.render.results import render; "
        "print(sorted(m for m in sys.modules if m.startswith('ee.results')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['ee.results', 'ee.results.search']"


def test_remember_and_curate_scan_answer_typed(ws: Workspace) -> None:
    """``ee remember`` (a new memory, then the same text: a confirmation) and ``ee curate scan`` return
    types whose JSON has the keys the command prints."""
    from ee.curate.intake import remember
    from ee.curate.scan import scan
    from ee.policy.trust import Actor
    from ee.results.curate import ScanReport
    from ee.results.memory import Remembered

    first, _ = remember(ws, "Releases are cut from main on Tuesdays.", Actor.from_env())
    assert isinstance(first, Remembered)
    assert first.written
    assert first.to_json() == ws.get(first.id).to_dict()  # the new file's fields, nothing else
    again, degraded = remember(ws, "Releases are cut from main on Tuesdays.", Actor.from_env())
    assert not again.written
    assert again.id == first.id
    assert [d["code"] for d in degraded] == ["duplicate"]
    data = again.to_json()
    assert (data["duplicate_of"], data["written"]) == (first.id, False)
    assert list(data)[-3:] == ["duplicate_of", "written", "confirmation"]  # (effective_confidence: kept)
    assert set(data["confirmation"]) == {"event", "commit"}
    report, _ = scan(ws)
    assert isinstance(report, ScanReport)
    assert report.memories == 1
    assert list(report.to_json())[:3] == ["memories", "scanned", "count"]
