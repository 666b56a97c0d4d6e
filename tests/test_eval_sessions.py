"""``ee eval sessions``: the metrics on hand-computed rankings, a real run over a tiny set, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.sessions_bench import baseline_importer, exchanges
from ee.errors import NotFound, UsageError
from ee.eval.sessions import (
    Question,
    evaluate,
    hit_sessions,
    judge,
    key_terms,
    read_questions,
    report,
    summarise,
    table,
)
from ee.schemas import validator
from tests.conftest import REPO_ROOT, run_cli

TINY = REPO_ROOT / "tests" / "fixtures" / "sessions-tiny"
DEV_SET = REPO_ROOT / "tests" / "fixtures" / "sessions"
KICKOFF = "5b0f1d2e-1111-4c3a-9d7e-0a1b2c3d4e51"
SWITCH = "0c7a9e44-3333-4f10-8b2d-6e5f4a3b2c13"


def question(qid: str, sessions: list[str], kind: str = "tech-stack", answer: str = "") -> Question:
    return Question(qid, kind, f"question {qid}?", answer, tuple(sessions), not sessions)


# ---- the metrics, on rankings written by hand ----------------------------------------------------------


def test_key_terms_are_content_words_capitalised_words_and_numbers() -> None:
    assert key_terms("Postgres 16 on port 5433, not 5432") == ["Postgres", "16", "port", "5433", "5432"]
    # Short lower-case words and stop words are not key terms; a repeated word counts once.
    assert key_terms("uv, not Poetry; uv is fast and poetry is slow") == ["Poetry", "fast", "slow"]
    assert key_terms("time 0.3.41 requires rustc 1.81") == ["time", "0.3.41", "requires", "rustc", "1.81"]
    assert key_terms("") == []


def test_judge_and_summarise_match_hand_computed_figures() -> None:
    a, b, c = "sess-a", "sess-b", "sess-c"
    cases: list[tuple[Question, list[set[str]], str]] = [
        # rank 2: counts for hit@5 and hit@10, 1/2 for the MRR; the pack holds 2 of 4 key terms (< 60 %).
        (question("q1", [a], answer="Postgres 16 on port 5433"), [{b}, {a}], "postgres listens on 5433"),
        # rank 1; the pack holds the one key term.
        (question("q2", [b], answer="uv, not Poetry"), [{b}], "we left Poetry behind"),
        # no hit at all.
        (question("q3", [c], answer="Litestar"), [], ""),
        # a knowledge update whose older session ranks above the newest one: rank 1, newest not first.
        (question("q4", [c, a], "knowledge-update", "arq"), [{a}, {c}], "arq and celery"),
        # rank 7: only hit@10; 1/7 for the MRR.
        (question("q5", [a], answer="WeasyPrint"), [{b}] * 6 + [{a}], "nothing useful"),
        # unanswerable: one with no hit (right), one with a hit (wrong).
        (question("q6", []), [], ""),
        (question("q7", []), [{a}], "something"),
    ]
    rows = [judge(q, ranked, pack) for q, ranked, pack in cases]
    assert [r["rank"] for r in rows] == [2, 1, None, 1, 7, None, None]
    assert rows[3]["newest_first"] is False
    assert rows[0]["pack_terms"] == {"found": 2, "of": 4, "missing": ["16", "port"]}
    overall = summarise(rows)
    assert overall == {
        "answerable": 5,
        "unanswerable": 2,
        "hit@1": 0.4,  # q2, q4
        "hit@5": 0.6,  # + q1
        "hit@10": 0.8,  # + q5
        "mrr": round((1 / 2 + 1 + 0 + 1 + 1 / 7) / 5, 4),  # 0.5286
        "answerable_no_hit": 0.2,  # q3
        "unanswerable_no_hit": 0.5,  # q6
        "newest_first": 0.0,
        "newest_first_questions": 1,
        # Of q1 (2 of 4 terms), q2, q3 and q5 (no WeasyPrint) only q2's pack holds the answer; q4's answer
        # ("arq": short, lower-case) has no key term, so it is left out.
        "pack_terms": 0.25,
    }
    assert "pack_ok" not in rows[3]
    full = report(rows)
    assert [r["id"] for r in full["misses"]] == ["q1", "q3", "q4", "q5", "q7"]
    assert full["by_type"]["knowledge-update"]["hit@1"] == 1.0
    assert full["by_type"]["tech-stack"]["unanswerable_no_hit"] == 0.5


def test_a_knowledge_update_with_the_newest_session_first_counts() -> None:
    row = judge(question("q", ["new", "old"], "knowledge-update", "npm"), [set(), {"new", "old"}], "npm")
    assert row["rank"] == 2
    assert row["newest_first"] is True
    # With one session there is nothing to supersede: the question is not in the newest-first share.
    single = judge(question("q", ["new"], "knowledge-update", "npm"), [{"new"}], "npm")
    assert "newest_first" not in single
    assert summarise([row, single])["newest_first_questions"] == 1


def test_a_hit_is_a_session_by_its_evidence_provenance_or_its_derived_from() -> None:
    known = ["s-1", "s-2", "s-3"]
    evidence = {"id": "ev_1", "type": "evidence", "provenance": {"session": "s-1", "turn": 4}}
    assert hit_sessions(evidence, known) == {"s-1"}
    assert hit_sessions({"provenance": {"session_id": "s-2"}}, known) == {"s-2"}
    memory = {"id": "mem_1", "type": "memory", "memory": {"extra": {"derived_from": ["evidence:s-3:7"]}}}
    assert hit_sessions(memory, known) == {"s-3"}
    linked = {"memory": {"links": [{"type": "derived_from", "to": "evidence:s-2:1"}]}}
    assert hit_sessions(linked, known) == {"s-2"}
    # A link of another type, or a session nobody asked about, is no session.
    other = {
        "memory": {"links": [{"type": "related", "to": "evidence:s-2:1"}]},
        "provenance": {"session": "x"},
    }
    assert hit_sessions(other, known) == set()


# ---- a real run: import, ee search, ee context ---------------------------------------------------------


def test_a_run_over_the_tiny_set_gives_the_hand_computed_figures() -> None:
    """The tiny set: three sessions (Claude Code, messages, Codex) and six questions. t1 and t2 name one
    session each and use its words; t3 is a knowledge update (both sessions hold an answer, so rank 1); t4 is
    labelled with a session that never mentions its words (a miss, whose answer is nowhere: the pack fails
    too); t5 and t6 are unanswerable and off every topic. Imported here as the baseline does it (one memory
    per exchange), so the run needs nothing but ee import jsonl, ee search and ee context."""
    result = evaluate(TINY, baseline_importer)
    overall = result["overall"]
    assert (result["transcripts"], result["questions"]) == (3, 6)
    assert (overall["answerable"], overall["unanswerable"]) == (4, 2)
    assert (overall["hit@1"], overall["hit@5"], overall["hit@10"], overall["mrr"]) == (0.75, 0.75, 0.75, 0.75)
    assert overall["answerable_no_hit"] == 0.0
    assert overall["unanswerable_no_hit"] == 1.0
    assert overall["pack_terms"] == 0.75
    # Which of t3's two sessions ranks first is the ranking's business; the share must say what t3 got.
    (t3,) = [r for r in result["misses"] if r["id"] == "t3"] or [None]
    assert overall["newest_first_questions"] == 1
    assert overall["newest_first"] == (0.0 if t3 and t3.get("newest_first") is False else 1.0)
    t4 = next(r for r in result["misses"] if r["id"] == "t4")
    assert t4["rank"] is None
    assert t4["hits"] > 0
    assert t4["pack_ok"] is False
    assert result["by_type"]["error-fix"]["hit@1"] == 1.0
    text = table(result, misses=True)
    assert "t4 [preference]" in text
    assert "no right session in the top 10" in text


def test_the_baseline_reads_every_format_of_the_dev_set() -> None:
    """One exchange per person's message: tool results, sidechains and Codex's event copies are not people."""
    counts = {}
    for path in sorted((DEV_SET / "sessions").iterdir()):
        found = list(exchanges(path))
        assert found, path
        assert all(e.parts and e.session for e in found)
        counts[path.name] = len(found)
    index = [line.split("\t") for line in (DEV_SET / "index.tsv").read_text().splitlines()[1:]]
    files = {row[4]: row[1] for row in index}
    assert set(counts) == set(files)
    for name, sid in files.items():
        assert {e.session for e in exchanges(DEV_SET / "sessions" / name)} == {sid}


def test_the_dev_set_questions_are_well_formed_and_name_real_sessions() -> None:
    questions = read_questions(DEV_SET / "questions.jsonl")
    sessions = {line.split("\t")[1] for line in (DEV_SET / "index.tsv").read_text().splitlines()[1:]}
    assert len(sessions) >= 24
    assert len(questions) >= 150
    assert sum(q.abstain for q in questions) >= 20
    assert {q.type for q in questions} >= {
        "tech-stack",
        "architecture",
        "error-fix",
        "preference",
        "knowledge-update",
        "cross-session",
        "continuity",
    }
    for q in questions:
        assert set(q.sessions) <= sessions, q.id


# ---- bad input -----------------------------------------------------------------------------------------


def write_set(root: Path, questions: str) -> Path:
    shutil.copytree(TINY / "sessions", root / "sessions")
    (root / "questions.jsonl").write_text(questions, encoding="utf-8")
    return root


GOOD = json.dumps(
    {"id": "a", "type": "x", "question": "q?", "answer": "", "sessions": ["s"], "abstain": False}
)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({"id": "b", "type": "x", "question": "q?"}), "missing answer, sessions, abstain"),
        (GOOD.replace('["s"]', '"s"'), "sessions must be a list"),
        (GOOD.replace("false", '"no"'), "abstain must be true or false"),
        (GOOD.replace("false", "true"), "an abstain question names no session"),
        (GOOD.replace('["s"]', "[]"), "an answerable question names the sessions"),
        (GOOD, "the id 'a' is used twice"),
        (GOOD.replace('"q?"', '"  "').replace('"a"', '"c"'), "the question is empty"),
    ],
)
def test_a_malformed_questions_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(GOOD + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        read_questions(path)
    assert caught.value.message.startswith(f"{path}:3: ")
    assert message in caught.value.message


def test_the_command_refuses_a_missing_folder_with_exit_7(tmp_path: Path) -> None:
    res = run_cli("eval", "sessions", str(tmp_path / "nowhere"), "--json")
    assert res.code == 7
    error: dict[str, Any] = json.loads(res.out)["error"]
    assert error["code"] == "not_found"
    assert "nowhere" in error["message"]
    assert error["repair"]


def test_the_command_names_the_bad_line_of_questions_jsonl_with_exit_2(tmp_path: Path) -> None:
    root = write_set(tmp_path / "set", GOOD + "\n{oops\n")
    res = run_cli("eval", "sessions", str(root), "--human")
    assert res.code == 2
    assert f"{root / 'questions.jsonl'}:2: not JSON" in res.err
    assert "Traceback" not in res.err


def test_a_set_without_questions_or_transcripts_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "set"
    (root / "sessions").mkdir(parents=True)
    (root / "questions.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    with pytest.raises(UsageError, match="holds no transcript"):
        evaluate(root, baseline_importer)
    shutil.rmtree(root / "sessions")
    with pytest.raises(NotFound, match="is not a folder"):
        evaluate(root, baseline_importer)
    shutil.copytree(TINY / "sessions", root / "sessions")
    (root / "questions.jsonl").unlink()
    with pytest.raises(NotFound, match=r"questions\.jsonl does not exist"):
        evaluate(root, baseline_importer)


def test_the_command_imports_with_ee_import_session_and_reports_json() -> None:
    """The real path: ``ee eval sessions`` imports the tiny set with ``ee import session`` (evidence, not
    memories). Which of two right sessions ranks first is the ranking's business; these figures are not."""
    res = run_cli("eval", "sessions", str(TINY), "--json")
    assert res.code == 0, res.out + res.err
    doc = res.json
    validator("ee.response.v1").validate(doc)
    data = doc["data"]
    assert (data["transcripts"], data["questions"], data["k"], data["max_tokens"]) == (3, 6, 10, 2000)
    assert data["import_errors"] == []
    overall = data["overall"]
    assert (overall["hit@5"], overall["hit@10"]) == (0.75, 0.75)  # t1, t2, t3; never t4
    assert overall["answerable_no_hit"] == 0.0
    assert overall["unanswerable_no_hit"] == 1.0
    assert overall["pack_terms"] == 0.75
    assert 0.15 <= overall["mrr"] <= 0.75  # three questions within the top 5, one never found
    assert [r["id"] for r in data["misses"] if r["rank"] is None] == ["t4"]


def test_transcripts_in_sub_folders_count_and_hidden_files_do_not(tmp_path: Path) -> None:
    root = tmp_path / "set"
    shutil.copytree(TINY / "sessions", root / "sessions" / "2026" / "10")
    (root / "sessions" / ".DS_Store").write_text("junk", encoding="utf-8")
    (root / "sessions" / ".cache").mkdir()
    (root / "sessions" / ".cache" / "x.jsonl").write_text("junk\n", encoding="utf-8")
    (root / "questions.jsonl").write_text(
        (TINY / "questions.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    data = run_cli("eval", "sessions", str(root), "--json").data
    assert data["transcripts"] == 3
    assert data["import_errors"] == []
    assert data["overall"]["hit@10"] == 0.75


def test_a_transcript_that_cannot_be_imported_is_reported(tmp_path: Path) -> None:
    root = write_set(tmp_path / "set", (TINY / "questions.jsonl").read_text(encoding="utf-8"))
    (root / "sessions" / "notes.jsonl").write_text("this is not a transcript\n", encoding="utf-8")
    res = run_cli("eval", "sessions", str(root), "--human")
    assert res.code == 0, res.err
    assert f"not imported: {root / 'sessions' / 'notes.jsonl'}" in res.out
    data = run_cli("eval", "sessions", str(root), "--json").data
    assert [Path(e["path"]).name for e in data["import_errors"]] == ["notes.jsonl"]
    assert data["overall"]["hit@10"] == 0.75  # the other three transcripts are measured as before
