"""Session import on real transcript files: the three formats, incremental and idempotent imports, the
errors, evidence in search and context with provenance, time, forget, secrets and the agent hook."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import git, run_ee_process

from ee.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"


def _copy(ws: Workspace, name: str, folder: Path | None = None) -> Path:
    target = (folder or ws.root.parent / "transcripts") / name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / name, target)
    return target


def _imported_evidence(ws: Workspace, path: Path, session_id: str) -> list:
    """Import the transcript at ``path`` and read back its session's evidence, in order."""
    from ee.sessions import store

    ws.import_sessions([path])
    with store.connect(ws.root) as db:
        assert db is not None
        return list(store.of_session(db, session_id))


def _messages(ws: Workspace, name: str, lines: list[dict[str, Any]]) -> Path:
    """A generic ``{role, content}`` JSON Lines transcript named ``name`` beside the workspace."""
    path = ws.root.parent / "transcripts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _copy_in(ws: Workspace, name: str, folder: Path) -> Path:
    """A copy of a Claude Code fixture in ``folder`` as Claude Code writes it for this workspace: its
    lines record the workspace as their ``cwd`` (the hooks and --claude-code check that claim)."""
    target = _copy(ws, name, folder)
    text = target.read_text(encoding="utf-8").replace(
        '"cwd":"/home/dev/shop"', json.dumps({"cwd": str(ws.root)})[1:-1]
    )
    target.write_text(text, encoding="utf-8")
    return target


def _hits(cli: Any, query: str, *extra: str) -> list[dict[str, Any]]:
    result = cli("search", query, "--json", "--min-relevance", "0", *extra)
    assert result.code == 0, result.err
    hits: list[dict[str, Any]] = result.data["hits"]
    return hits


def test_the_three_formats_import_and_are_found_with_provenance(ws: Workspace, cli: Any) -> None:
    paths = [_copy(ws, n) for n in ("claude-code.jsonl", "codex.jsonl", "messages.json")]
    result = cli("import", "session", *map(str, paths), "--json")
    assert result.code == 0, result.err
    files = {Path(f["path"]).name: f for f in result.data["files"]}
    assert files["claude-code.jsonl"]["format"] == "claude-code"
    assert files["claude-code.jsonl"]["session_id"] == "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"
    assert files["codex.jsonl"]["format"] == "codex"
    assert files["codex.jsonl"]["session_id"] == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert files["messages.json"]["format"] == "messages"
    assert files["messages.json"]["session_id"] == "ci-chat-1"

    hit = _hits(cli, "alembic database migrations")[0]
    assert hit["type"] == "evidence"
    assert hit["id"].startswith("ev_")
    assert hit["trust"] == "cass_evidence"
    prov = hit["provenance"]
    assert prov["file_name"] == "claude-code.jsonl"
    assert prov["transcript"] == str(paths[0])
    assert prov["session_id"] == "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"
    assert prov["turn"] == 0
    assert prov["time"] == "2026-11-02T09:00:00Z"
    assert prov["cwd"] == "/home/dev/shop"
    assert prov["branch"] == "main"
    # the tool calls: the command, that it failed, the error's first line, the file changed
    assert "$ pytest -q → failed: ImportError while loading conftest" in hit["body"]
    assert "Edit /home/dev/shop/pyproject.toml → ok" in hit["body"]

    codex = _hits(cli, "redis cache fakeredis catalogue")[0]
    assert codex["provenance"]["branch"] == "feature/cache"
    assert "$ pytest tests/test_catalogue.py -q → failed: FAILED" in codex["body"]
    assert "environment_context" not in codex["body"]

    sidechain = _hits(cli, "which files open a database session")
    assert any("sidechain" in h["flags"] for h in sidechain if h["type"] == "evidence")
    assert _hits(cli, "github actions matrix python versions")[0]["provenance"]["session_id"] == "ci-chat-1"


def test_context_has_a_session_evidence_section(ws: Workspace, cli: Any) -> None:
    ws.remember("The shop service deploys with a blue-green switch on Fridays.")
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")))
    result = cli("context", "how do we run database migrations", "--json", "--min-relevance", "0")
    assert result.code == 0, result.err
    sections = {s["name"]: s for s in result.data["sections"]}
    item = sections["sessions"]["items"][0]
    assert item["type"] == "evidence"
    assert item["trust"] == "cass_evidence"
    assert item["authoritative"] is False
    assert item["provenance"]["file_name"] == "claude-code.jsonl"
    assert result.data["budget"]["used_tokens"] <= result.data["budget"]["max_tokens"]
    markdown = cli(
        "context", "how do we run database migrations", "--format", "markdown", "--min-relevance", "0"
    )
    assert "Session evidence" in markdown.out
    assert "claude-code.jsonl" in markdown.out


def test_the_same_file_twice_changes_nothing_and_a_grown_one_adds_its_new_turns(
    ws: Workspace, cli: Any
) -> None:
    path = _copy(ws, "claude-code.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:4]) + lines[4][:50], encoding="utf-8")  # a partial last line
    first = cli("import", "session", str(path), "--json").data
    assert first["files"][0]["pending_bytes"] == 50
    before = ws.sessions()[0].evidence
    again = cli("import", "session", str(path), "--json").data
    assert again["files"][0]["status"] == "unchanged"
    assert again["added"] == 0
    assert ws.sessions()[0].evidence == before
    path.write_text("".join(lines), encoding="utf-8")  # the session went on
    grown = cli("import", "session", str(path), "--json").data
    assert grown["files"][0]["status"] == "grown"
    full = ws.root.parent / "whole" / "claude-code.jsonl"
    full.parent.mkdir()
    shutil.copyfile(FIXTURES / "claude-code.jsonl", full)
    fresh, _ = Workspace.init(ws.root.parent / "other")
    fresh.import_sessions([full])
    # the grown file's evidence is exactly what one import of the whole file gives (no partial leftover)
    mine = [e.text for e in ws.session("5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c").evidence]
    theirs = [e.text for e in fresh.session("5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c").evidence]
    assert mine == theirs
    assert any("42 passed" not in t and "pytest -q → ok" in t for t in mine)


def test_a_malformed_line_names_file_and_line_and_imports_nothing_of_that_file(
    ws: Workspace, cli: Any
) -> None:
    bad = _copy(ws, "claude-code.jsonl")
    lines = bad.read_text(encoding="utf-8").splitlines(keepends=True)
    bad.write_text("".join(lines[:3]) + "{not json\n" + "".join(lines[3:]), encoding="utf-8")
    good = _copy(ws, "codex.jsonl")
    result = cli("import", "session", str(bad), str(good), "--json")
    assert result.code == 4
    error = result.data["errors"][0] if result.json.get("success") else None
    assert error is not None
    assert f"{bad}:4" in error["message"]
    assert [s.session_id for s in ws.sessions()] == ["0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"]
    not_a_transcript = ws.root.parent / "notes.jsonl"
    not_a_transcript.write_text('{"a": 1}\n{"b": 2}\n', encoding="utf-8")
    result = cli("import", "session", str(not_a_transcript), "--json")
    assert result.code == 4
    assert "not a transcript" in result.data["errors"][0]["message"]


def test_a_huge_transcript_is_refused(ws: Workspace, cli: Any) -> None:
    (ws.root / ".ee/config.toml").write_text("[sessions]\nmax_file_bytes = 1000\n", encoding="utf-8")
    result = cli("import", "session", str(_copy(ws, "claude-code.jsonl")), "--json")
    assert result.code == 4
    assert "above the limit of 1000 bytes" in result.data["errors"][0]["message"]
    assert ws.sessions() == ()


def test_import_and_search_can_be_turned_off(ws: Workspace, cli: Any) -> None:
    path = _copy(ws, "claude-code.jsonl")
    assert cli("import", "session", str(path)).code == 0
    (ws.root / ".ee/config.toml").write_text("[sessions]\nsearch = false\nimport = false\n", encoding="utf-8")
    assert all(h["type"] == "memory" for h in _hits(cli, "alembic migrations"))
    assert cli("import", "session", str(path)).code == 6


def test_newer_statement_ranks_first_and_the_older_is_superseded_by_time(ws: Workspace, cli: Any) -> None:
    folder = ws.root.parent / "t"
    folder.mkdir()
    old = [
        {
            "role": "user",
            "content": "For database migrations we use Alembic with autogenerate.",
            "timestamp": "2026-10-01T10:00:00Z",
        },
        {
            "role": "assistant",
            "content": "OK, database migrations go through Alembic.",
            "timestamp": "2026-10-01T10:00:05Z",
        },
    ]
    new = [
        {
            "role": "user",
            "content": "We switched database migrations to Aerich because we moved to Tortoise ORM.",
            "timestamp": "2026-10-15T10:00:00Z",
        },
        {
            "role": "assistant",
            "content": "Understood: database migrations now go through Aerich.",
            "timestamp": "2026-10-15T10:00:05Z",
        },
    ]
    (folder / "old.json").write_text(json.dumps(old), encoding="utf-8")
    (folder / "new.json").write_text(json.dumps(new), encoding="utf-8")
    cli("import", "session", str(folder / "old.json"), str(folder / "new.json"))
    hits = [h for h in _hits(cli, "what do we use for database migrations") if h["type"] == "evidence"]
    assert [h["provenance"]["session_id"] for h in hits[:2]] == ["new", "old"]
    assert "superseded_by_time" in hits[1]["flags"]
    assert hits[1]["superseded_by"] == hits[0]["id"]


def test_secrets_are_masked_before_they_are_written(ws: Workspace, cli: Any) -> None:
    key = "AKIA" + "Q3EGRIOXZ5KDMV7N"
    path = ws.root.parent / "s.jsonl"
    path.write_text(
        json.dumps({"role": "user", "content": f"deploy with aws key {key} to the staging bucket"}) + "\n",
        encoding="utf-8",
    )
    cli("import", "session", str(path))
    database = (ws.root / ".ee/sessions/evidence.sqlite3").read_bytes()
    assert key.encode() not in database
    hit = _hits(cli, "deploy staging bucket")[0]
    assert "[REDACTED:" in hit["body"]
    assert "secret_masked" in hit["flags"]


def test_forget_purges_evidence_and_its_index(ws: Workspace, cli: Any) -> None:
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")), str(_copy(ws, "codex.jsonl")))
    result = cli("sessions", "forget", "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c", "--json")
    assert result.code == 0
    assert result.data["evidence"] >= 2
    assert not any(h["type"] == "evidence" and "alembic" in h["body"].lower() for h in _hits(cli, "alembic"))
    assert [s["session_id"] for s in cli("sessions", "list", "--json").data["sessions"]] == [
        "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    ]
    assert cli("sessions", "show", "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c").code == 7


SHOP = "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"  # the session of the Claude Code fixture


def _claude_line(role: str, text: str, uuid: str, when: str) -> str:
    """One Claude Code transcript line of the fixture's session, as the session going on writes it."""
    content: Any = [{"type": "text", "text": text}] if role == "assistant" else text
    record = {
        "parentUuid": None,
        "isSidechain": False,
        "cwd": "/home/dev/shop",
        "sessionId": SHOP,
        "gitBranch": "main",
        "type": role,
        "message": {"role": role, "content": content},
        "uuid": uuid,
        "timestamp": when,
    }
    return json.dumps(record) + "\n"


def test_forgotten_evidence_never_comes_back_from_the_same_bytes(ws: Workspace, cli: Any) -> None:
    path = _copy(ws, "claude-code.jsonl")
    assert cli("import", "session", str(path)).code == 0
    old = [e.text for e in ws.session(SHOP).evidence]
    assert len(old) >= 2  # (its last exchange, the side chain, is the one a grown file reads again)
    assert cli("sessions", "forget", SHOP, "--json").data["evidence"] == len(old)
    # the unchanged file imported again: nothing comes back
    again = cli("import", "session", str(path), "--json")
    assert again.code == 0
    assert again.data["added"] == 0
    assert ws.sessions() == ()
    # the session goes on: a reply to the forgotten exchange, then a new one; only they are imported
    with path.open("a", encoding="utf-8") as file:
        file.write(_claude_line("assistant", "Also in shop/cron.py.", "s3", "2026-11-02T09:02:00Z"))
        file.write(_claude_line("user", "Switch the migrations to Aerich.", "u9", "2026-11-03T10:00:00Z"))
        file.write(_claude_line("assistant", "Aerich replaces Alembic now.", "a9", "2026-11-03T10:00:05Z"))
    grown = cli("import", "session", str(path), "--json")
    assert grown.code == 0
    assert grown.data["files"][0]["status"] == "grown"
    assert [e.text for e in ws.session(SHOP).evidence] == [
        "assistant: Also in shop/cron.py.",
        "user: Switch the migrations to Aerich.\nassistant: Aerich replaces Alembic now.",
    ]
    found = [h["body"] for h in _hits(cli, "database session opened shop worker") if h["type"] == "evidence"]
    assert found  # (the new reply is found) but nothing of the forgotten exchange
    assert not any("shop/worker.py" in body or "Find every place" in body for body in found)
    # grown once more: the evidence after the forget is read on as usual, the forgotten still out
    with path.open("a", encoding="utf-8") as file:
        file.write(_claude_line("assistant", "The tests pass with Aerich.", "a10", "2026-11-03T10:01:00Z"))
    assert cli("import", "session", str(path)).code == 0
    texts = [e.text for e in ws.session(SHOP).evidence]
    assert texts[-1].endswith("assistant: The tests pass with Aerich.")
    assert not set(old) & set(texts)
    assert not any("Find every place" in t for t in texts)


def test_a_forgotten_piece_of_the_last_exchange_stays_forgotten_when_the_file_grows(
    ws: Workspace, cli: Any
) -> None:
    path = _copy(ws, "claude-code.jsonl")
    assert cli("import", "session", str(path)).code == 0
    pieces = ws.session(SHOP).evidence
    last = pieces[-1]
    assert "Find every place" in last.text
    assert cli("sessions", "forget", last.id).code == 0
    with path.open("a", encoding="utf-8") as file:
        file.write(_claude_line("assistant", "Also in shop/cron.py.", "s3", "2026-11-02T09:02:00Z"))
    assert cli("import", "session", str(path)).code == 0
    texts = [e.text for e in ws.session(SHOP).evidence]
    assert texts == [e.text for e in pieces[:-1]] + ["assistant: Also in shop/cron.py."]


def test_evidence_survives_an_index_rebuild_and_doctor_fix(ws: Workspace, cli: Any) -> None:
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")))
    assert cli("index", "rebuild").code == 0
    assert cli("doctor", "--fix").code == 0
    assert ws.sessions()[0].session_id == "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"
    for stale in (ws.root / ".ee/sessions").glob("index-*"):
        shutil.rmtree(stale)  # the evidence index is derived: it comes back from the database
    assert _hits(cli, "alembic migrations")[0]["type"] == "evidence"


def wait_for_background_import(ws: Workspace, done: Path) -> None:
    """Wait for the detached import job's token ``done`` (a wait, not a timing check); its log if it never
    comes."""
    deadline = time.monotonic() + 120
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert done.exists(), (ws.root / ".ee/sessions/hook.log").read_text(encoding="utf-8")


def test_the_claude_code_hook_imports_in_the_background(ws: Workspace, tmp_path: Path) -> None:
    home = Path.home()
    project = home / ".claude" / "projects" / ("-" + str(ws.root).strip("/").replace("/", "-"))
    transcript = _copy_in(ws, "claude-code.jsonl", project)
    settings = run_ee_process("hooks", "agent", "claude-code", "--write", "--json", cwd=ws.root)
    assert settings.returncode == 0, settings.stderr
    hooks = json.loads((ws.root / ".claude/settings.json").read_text(encoding="utf-8"))["hooks"]
    command = hooks["SessionEnd"][0]["hooks"][0]["command"]
    assert "import session --from-hook" in command
    assert "PreCompact" in hooks
    event = {
        "session_id": "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c",
        "transcript_path": str(transcript),
        "cwd": str(ws.root),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    done = ws.root / ".ee/sessions/hook.done"
    ran = run_ee_process("import", "session", "--from-hook", cwd=ws.root, input=json.dumps(event))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "", ran.stderr
    wait_for_background_import(ws, done)
    assert [s.session_id for s in ws.sessions()] == ["5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"]
    # a transcript outside Claude Code's folder, or another workspace's session, is not imported
    outside = _copy(ws, "codex.jsonl")
    for bad in ({**event, "transcript_path": str(outside)}, {**event, "cwd": str(tmp_path)}):
        skipped = run_ee_process("import", "session", "--from-hook", cwd=ws.root, input=json.dumps(bad))
        assert skipped.returncode == 0
        assert "not imported" in skipped.stderr


def test_the_hook_applies_no_retention_a_committed_config_sets_and_logs_why(ws: Workspace) -> None:
    """The SessionEnd hook runs unseen: a repository's committed retention deletes nothing there either,
    and the hook's log says why (docs/sessions.md)."""
    (ws.root / ".ee/config.toml").write_text("[sessions]\nretention_days = 0.0001\n", encoding="utf-8")
    git(ws.root, "commit", "-q", "-am", "a repository's short retention")
    project = Path.home() / ".claude" / "projects" / ("-" + str(ws.root).strip("/").replace("/", "-"))
    transcript = _copy_in(ws, "claude-code.jsonl", project)
    event = {"transcript_path": str(transcript), "cwd": str(ws.root), "hook_event_name": "SessionEnd"}
    ran = run_ee_process("import", "session", "--from-hook", cwd=ws.root, input=json.dumps(event))
    assert ran.returncode == 0, ran.stderr
    wait_for_background_import(ws, ws.root / ".ee/sessions/hook.done")
    [session] = ws.sessions()
    assert session.evidence > 0  # (the fixture's turns are years old: any retention applied drops them)
    log = (ws.root / ".ee/sessions/hook.log").read_text(encoding="utf-8")
    assert "retention_days = 0.0001 is set only in .ee/config.toml" in log
    assert "move retention_days to .ee/config.local.toml to apply it" in log


def test_candidates_carry_their_evidence(ws: Workspace) -> None:
    pytest.importorskip("ee.curate.model")
    from ee.sessions.candidates import extract

    evidence = _imported_evidence(ws, _copy(ws, "claude-code.jsonl"), "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c")
    found = extract(evidence)
    kinds = {c.new_memory.kind for c in found if c.new_memory is not None}
    assert {"decision", "preference", "failure"} <= kinds
    fix = next(c for c in found if c.new_memory is not None and c.new_memory.kind == "failure")
    assert "No module named 'alembic'" in fix.new_memory.body
    assert "pyproject.toml" in fix.new_memory.body
    assert all(ref.kind == "evidence" and ref.provenance["session_id"] for ref in fix.evidence)
    assert set(fix.new_memory.derived_from) < set(fix.subjects)
    assert [c.id for c in extract(evidence)] == [c.id for c in found]  # stable


@pytest.mark.parametrize("fields", ["minimal", "summary", "standard", "full"])
def test_answers_with_evidence_match_their_schemas(ws: Workspace, cli: Any, fields: str) -> None:
    from ee.schemas import validator

    ws.remember("Database migrations run in CI before every deploy of the shop service.")
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")), str(_copy(ws, "codex.jsonl")))
    query = ("database migrations alembic", "--min-relevance", "0", "--fields", fields)
    search = cli("search", *query, "--json")
    types = {h["type"] for h in search.data["hits"]}
    assert types == {"memory", "evidence"}
    assert list(validator("ee.search.v1").iter_errors(search.data)) == []
    pack = cli("context", *query, "--json")
    assert "sessions" in {s["name"] for s in pack.data["sections"]}
    assert list(validator("ee.pack.v1").iter_errors(pack.data)) == []
    for kind in ("search", "context"):
        lines = [json.loads(line) for line in cli(kind, *query, "--format", "jsonl").out.splitlines()]
        assert {line.get("item_type") for line in lines if line["type"] == "item"} >= {"evidence"}
        for line in lines:
            assert [e.message for e in validator("ee.jsonl.v1").iter_errors(line)] == []


def test_candidates_reach_the_review_queue_and_accepting_writes_a_memory(ws: Workspace, cli: Any) -> None:
    queue = pytest.importorskip("ee.curate.queue")
    result = cli("import", "session", str(_copy(ws, "claude-code.jsonl")), "--json")
    proposed = result.data["candidates"]["proposed"]
    assert len(proposed) >= 3
    waiting, _problems = queue.pending(ws, "session")
    assert {c.id for c in waiting} == set(proposed)
    fix = next(c for c in waiting if c.new_memory is not None and c.new_memory.kind == "failure")
    assert all(
        ref.kind == "evidence" and ref.provenance["file_name"] == "claude-code.jsonl" for ref in fix.evidence
    )
    again = cli("import", "session", str(_copy(ws, "claude-code.jsonl")), "--json")
    assert again.data["candidates"]["found"] == 0  # the same file again: nothing new to propose
    assert not list((ws.root / "memories").glob("*.md"))  # nothing became a memory behind anyone's back
    accepted = cli("curate", "accept", fix.id, "--json")
    assert accepted.code == 0, accepted.err
    written = [p.read_text(encoding="utf-8") for p in (ws.root / "memories").glob("*.md")]
    assert len(written) == 1
    assert "No module named 'alembic'" in written[0]
    assert fix.new_memory.derived_from[0] in written[0]


def test_a_link_in_place_of_the_evidence_folder_is_refused(ws: Workspace, cli: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws.root / ".ee/sessions").symlink_to(elsewhere)  # as a cloned repository could commit it
    result = cli("import", "session", str(_copy(ws, "claude-code.jsonl")), "--json")
    assert result.code == 4
    assert "symbolic link" in result.err
    assert list(elsewhere.iterdir()) == []  # nothing written through the link
    # a search over memories does not fail for it: the evidence is left out, and it says so
    ws.remember("The staging database is reset every Monday.")
    search = cli("search", "staging database reset", "--json")
    assert search.code == 0
    assert [d["code"] for d in search.json["degraded"]] == ["sessions_unavailable"]


def test_claude_code_and_codex_folders_are_searched_for_this_workspace(ws: Workspace, cli: Any) -> None:
    home = Path.home()
    where = str(ws.root.resolve())
    claude = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in where)
    _copy_in(ws, "claude-code.jsonl", claude)
    _copy(ws, "claude-code.jsonl", home / ".claude" / "projects" / "-some-other-project")
    codex_day = home / ".codex" / "sessions" / "2026" / "11" / "03"
    rollout = codex_day / "rollout-2026-11-03T14-00-00-0199a1b2.jsonl"
    lines = (FIXTURES / "codex.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    meta = json.loads(lines[0])
    meta["payload"]["cwd"] = where
    codex_day.mkdir(parents=True)
    rollout.write_text(json.dumps(meta) + "\n" + "".join(lines[1:]), encoding="utf-8")
    (codex_day / "rollout-2026-11-03T15-00-00-other.jsonl").write_text(
        "".join(lines),
        encoding="utf-8",  # another folder's session (cwd /home/dev/shop)
    )
    result = cli("import", "session", "--claude-code", "--codex", "--json")
    assert result.code == 0, result.err
    assert sorted(Path(f["path"]).name for f in result.data["files"]) == [
        "claude-code.jsonl",
        rollout.name,
    ]


def test_retention_bounds_the_age_of_evidence(ws: Workspace, cli: Any) -> None:
    # (the person's own settings: a committed config.toml's retention is withheld, test_hostile_config.py)
    (ws.root / ".ee/config.local.toml").write_text("[sessions]\nretention_days = 30\n", encoding="utf-8")
    path = ws.root.parent / "old-and-new.json"
    path.write_text(
        json.dumps(
            [
                {
                    "role": "user",
                    "content": "Long ago we chose Flask for the admin site.",
                    "timestamp": "2001-01-01T00:00:00Z",
                },
                {
                    "role": "user",
                    "content": "Today the admin site moved to Litestar.",
                    "timestamp": "2999-01-01T00:00:00Z",
                },
            ]
        ),
        encoding="utf-8",
    )
    result = cli("import", "session", str(path), "--json")
    assert result.data["pruned"] == 1
    texts = [e.text for e in ws.session("old-and-new").evidence]
    assert texts == ["user: Today the admin site moved to Litestar."]


def test_index_tokens_of_an_older_database_still_read() -> None:
    import marshal

    from ee.sessions.store import pack_tokens, unpack_tokens

    tokens = ["alembic", "migrat", "databas"]
    assert unpack_tokens(pack_tokens(tokens)) == tokens
    assert len(pack_tokens(tokens * 50)) < len(marshal.dumps(tokens * 50)) / 4
    assert unpack_tokens(marshal.dumps(tokens)) == tokens  # written before the tokens were compressed


def _index_scores(root: Path, queries: list[str]) -> tuple[list[str], list[dict[str, float]]]:
    """The evidence index's ids in position order and, per query, each id's BM25 score."""
    from ee.index.tokenize import tokenize
    from ee.sessions import index

    built = index.load(root)
    assert built is not None
    out = []
    for query in queries:
        scores = built.lexical.scores(tokenize(query))
        out.append({i: float(s) for i, s in zip(built.ids, scores.tolist(), strict=True)})
    return list(built.ids), out


def test_an_import_updates_the_evidence_index_exactly_as_a_full_build(ws: Workspace, cli: Any) -> None:
    import bm25s

    from ee.index import lexical
    from ee.sessions import index, store

    queries = ["alembic database migrations", "redis cache catalogue", "pytest failed", "conftest import"]
    path = _copy(ws, "claude-code.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:6]), encoding="utf-8")
    cli("import", "session", str(path), str(_copy(ws, "codex.jsonl")))
    first, _ = _index_scores(ws.root, queries)
    # the session went on (its last exchange is read again and replaced), another one came, one is forgotten
    path.write_text("".join(lines), encoding="utf-8")
    assert cli("import", "session", str(path), str(_copy(ws, "messages.json"))).code == 0
    assert cli("sessions", "forget", "ci-chat-1").code == 0
    ids, updated = _index_scores(ws.root, queries)
    # updated, not rebuilt: the pieces it already held keep their positions, ahead of the new ones
    kept = [i for i in first if i in set(ids)]
    assert kept
    assert ids[: len(kept)] == kept
    assert len(ids) > len(kept)

    folder = store.folder_of(ws.root)
    for built in [*folder.glob("index-*"), folder / index.POINTER]:
        shutil.rmtree(built) if built.is_dir() else built.unlink()
    assert index.load(ws.root) is None  # (nothing there until built again)
    index.build(ws.root, None, "")
    rebuilt_ids, rebuilt = _index_scores(ws.root, queries)
    assert sorted(rebuilt_ids) == sorted(ids)
    for mine, full in zip(updated, rebuilt, strict=True):
        assert mine == pytest.approx(full, rel=1e-6, abs=1e-9)

    # and both score as bm25s does (Lucene's formula; evidence normalises length by LEXICAL_B)
    from ee.index.tokenize import tokenize

    with store.connect(ws.root, write=False) as db:
        assert db is not None
        docs = store.tokens(db, ids)
    model = bm25s.BM25(k1=lexical.K1, b=index.LEXICAL_B, method=lexical.METHOD)
    model.index(docs, show_progress=False)
    for query, mine in zip(queries, updated, strict=True):
        known = [t for t in tokenize(query) if t in model.vocab_dict]
        want = np.asarray(model.get_scores(known), dtype=np.float64) if known else np.zeros(len(ids))
        assert [mine[i] for i in ids] == pytest.approx(want.tolist(), rel=1e-5, abs=1e-7), query
        assert want.max() > 0, query


def test_cursor_pages_continue_memories_and_evidence_alike(ws: Workspace, cli: Any) -> None:
    ws.remember("Database migrations run with alembic upgrade head before the app starts.")
    ws.remember("The pytest suite needs a running postgres for the database tests.")
    ws.remember("Redis caches the catalogue for five minutes.")
    names = ("claude-code.jsonl", "codex.jsonl", "messages.json")
    assert cli("import", "session", *(str(_copy(ws, n)) for n in names)).code == 0
    text = "database migrations pytest redis cache catalogue"

    def page(cursor: str | None, limit: int) -> dict[str, Any]:
        doc: dict[str, Any] = {"version": "ee.query.v1", "query": {"text": text}}
        doc["pagination"] = {"limit": limit}
        if cursor:
            doc["pagination"]["cursor"] = cursor
        result = cli("search", "--query-file", "-", "--json", "--min-relevance", "0", input=json.dumps(doc))
        assert result.code == 0, result.err
        data: dict[str, Any] = result.data
        return data

    whole = page(None, 50)
    assert whole["next_cursor"] is None
    every = [(h["type"], h["id"]) for h in whole["hits"]]
    assert {kind for kind, _id in every} == {"memory", "evidence"}
    assert whole["total"] == len(every)
    seen: list[tuple[str, str]] = []
    cursor: str | None = None
    pages = 0
    while True:
        data = page(cursor, 2)
        assert data["returned"] == len(data["hits"]) <= 2
        assert data["offset"] == len(seen)
        first = len(seen) + 1
        assert [h["rank"] for h in data["hits"]] == list(range(first, first + len(data["hits"])))
        assert data["total"] == len(every)
        seen += [(h["type"], h["id"]) for h in data["hits"]]
        pages += 1
        cursor = data["next_cursor"]
        assert (cursor is None) == (len(seen) == len(every))
        if cursor is None:
            break
    # the pages together are the one long page: both kinds, each once, in the same order
    assert seen == every
    assert pages == -(-len(every) // 2)
    assert any(kind == "evidence" for kind, _id in seen[2:])


def test_codex_notify_is_wired_and_imports_the_turns_rollout(ws: Workspace, tmp_path: Path) -> None:
    import tomllib

    config = Path.home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('model = "o4-mini"\n\n[tui]\nnotifications = true\n', encoding="utf-8")
    wrote = run_ee_process("hooks", "agent", "codex", "--write", "--json", cwd=ws.root)
    assert wrote.returncode == 0, wrote.stderr
    settings = tomllib.loads(config.read_text(encoding="utf-8"))
    assert settings["notify"][-3:] == ["import", "session", "--from-codex-notify"]
    assert settings["model"] == "o4-mini"
    assert settings["tui"] == {"notifications": True}
    again = run_ee_process("hooks", "agent", "codex", "--write", "--json", cwd=ws.root)
    assert json.loads(again.stdout)["data"]["changed"] is False

    # a rollout of this workspace, as Codex writes it, and the notification of its turn
    thread = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    folder = Path.home() / ".codex" / "sessions" / "2026" / "11" / "03"
    folder.mkdir(parents=True)
    lines = (FIXTURES / "codex.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    meta = json.loads(lines[0])
    meta["payload"]["cwd"] = str(ws.root)
    rollout = folder / f"rollout-2026-11-03T14-00-00-{thread}.jsonl"
    rollout.write_text(json.dumps(meta) + "\n" + "".join(lines[1:]), encoding="utf-8")
    event = {
        "type": "agent-turn-complete",
        "thread-id": thread,
        "turn-id": "1",
        "cwd": str(ws.root),
        "input-messages": ["add a redis cache"],
        "last-assistant-message": "Done.",
    }
    done = ws.root / ".ee/sessions/hook.done"
    # Codex runs the notify program with the JSON as its last argument, from anywhere
    ran = run_ee_process(*settings["notify"][-3:], json.dumps(event), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "", ran.stderr
    wait_for_background_import(ws, done)
    assert [s.session_id for s in ws.sessions()] == [thread]

    # another folder's turn, another event, or a thread without a rollout: skipped, exit 0
    others = ({"cwd": str(tmp_path)}, {"type": "approval-requested"}, {"thread-id": "0" * 36})
    for bad in ({**event, **other} for other in others):
        skipped = run_ee_process("import", "session", "--from-codex-notify", json.dumps(bad), cwd=tmp_path)
        assert skipped.returncode == 0
        assert "not imported" in skipped.stderr

    # a notify program of the person's own is not replaced
    config.write_text('notify = ["notify-send", "codex"]\n', encoding="utf-8")
    refused = run_ee_process("hooks", "agent", "codex", "--write", "--json", cwd=ws.root)
    assert refused.returncode == 3
    assert "already sets notify" in refused.stdout + refused.stderr
    assert config.read_text(encoding="utf-8") == 'notify = ["notify-send", "codex"]\n'


def test_an_index_built_again_for_another_model_is_the_one_loaded(ws: Workspace, cli: Any) -> None:
    # the same generation built again for another model writes the same folder: a process that loaded the
    # first must not keep answering with it (its vectors had another model's width, or none at all)
    from ee.index.embedder import load_embedder
    from ee.sessions import index

    assert cli("import", "session", str(_copy(ws, "claude-code.jsonl"))).code == 0
    without = index.build(ws.root, None, "")
    assert without is not None
    assert without.vectors is None
    embedder = load_embedder()
    built = index.fresh(ws.root, embedder, embedder.model_id)
    assert built is not None
    assert built.model_key == embedder.model_id
    assert built.vectors is not None
    assert built.vectors.shape == (built.size, embedder.dim)


def test_a_sessions_second_piece_goes_below_another_sessions_close_one() -> None:
    from ee.sessions.search import CROWDING, _crowded

    sessions = ["a", "a", "b", "a"]
    scores = [1.0, 0.98, 0.95, 0.5]
    crowded = _crowded(sessions, scores, ["ev_1", "ev_2", "ev_3", "ev_4"])
    assert crowded == pytest.approx([1.0, 0.98 * CROWDING, 0.95, 0.5 * CROWDING**2])
    order = sorted(range(4), key=lambda i: -crowded[i])
    assert order == [0, 2, 1, 3]  # session b's piece now comes second
    # a piece far behind its session's best keeps its place behind the others
    assert _crowded(["a", "b"], [1.0, 0.2], ["ev_1", "ev_2"]) == [1.0, 0.2]


def test_a_long_turn_is_cut_with_an_ascii_statement_the_screens_need_not_normalise() -> None:
    import unicodedata

    from ee.sessions.turns import MAX_TEXT_CHARS, cut

    text = "the migration failed again " * 400
    kept = cut(text)
    assert len(kept) < len(text)
    assert kept.startswith("the migration failed again")
    assert kept.endswith(f"[...{len(text.strip()) - len(kept.split(' [...')[0])} characters cut]")
    assert len(kept.split(" [...")[0]) <= MAX_TEXT_CHARS
    # nothing for the screens to undo: the secret scanner scans no normalised copy of a cut piece
    assert kept.isascii()
    assert unicodedata.is_normalized("NFKC", kept)
    assert cut("short text") == "short text"


def test_forcing_another_format_on_an_imported_file_is_refused_and_keeps_its_evidence(
    ws: Workspace, cli: Any
) -> None:
    path = _copy(ws, "messages.json")
    assert cli("import", "session", str(path)).code == 0
    before = [e.id for e in ws.session("ci-chat-1").evidence]
    assert before
    again = cli("import", "session", str(path), "--format", "codex", "--json")
    assert again.code == 4
    error = again.data["errors"][0]
    assert str(path) in error["message"]
    assert "messages" in error["message"]
    assert "ee sessions forget ci-chat-1" in error["repair"]
    assert [e.id for e in ws.session("ci-chat-1").evidence] == before  # nothing lost
    # the format it was imported as, forced again: unchanged
    same = cli("import", "session", str(path), "--format", "messages", "--json")
    assert same.code == 0
    assert same.data["files"][0]["status"] == "unchanged"
    # forgotten, as the repair says, it imports afresh as the format asked for (an explicit reading)
    assert cli("sessions", "forget", "ci-chat-1").code == 0
    assert cli("import", "session", str(path), "--json").data["added"] == 0  # (not without asking)
    moved = cli("import", "session", str(path), "--format", "codex", "--json")
    assert moved.code == 4
    assert "not a codex transcript" in moved.data["errors"][0]["message"]  # (the file is not one)
    back = cli("import", "session", str(path), "--format", "messages", "--json")
    assert back.code == 0
    assert back.data["files"][0]["status"] == "unchanged"  # (the format it was read as: still forgotten)


def test_a_forced_format_that_reads_nothing_of_a_file_is_an_error(ws: Workspace, cli: Any) -> None:
    path = _copy(ws, "claude-code.jsonl")
    result = cli("import", "session", str(path), "--format", "codex", "--json")
    assert result.code == 4
    error = result.data["errors"][0]
    assert f"{path}: not a codex transcript" in error["message"]
    assert "--format" in error["repair"]
    assert ws.sessions() == ()
    # the right format forced, or none: it imports
    assert cli("import", "session", str(path), "--format", "claude-code").code == 0
    assert ws.sessions()


def test_an_unchanged_file_reports_its_session(ws: Workspace, cli: Any) -> None:
    path = _messages(
        ws,
        "pairing-notes.jsonl",
        [
            {"role": "user", "content": "We use structlog for logging."},
            {"role": "assistant", "content": "OK."},
        ],
    )
    first = cli("import", "session", str(path), "--json").data["files"][0]
    again = cli("import", "session", str(path), "--json").data["files"][0]
    assert first["session_id"] == "pairing-notes"
    assert again["status"] == "unchanged"
    assert again["session_id"] == "pairing-notes"
    human = cli("import", "session", str(path), "--human")
    assert "(session pairing-notes)" in human.out
    assert "None" not in human.out


@pytest.mark.parametrize(
    ("setting", "value"), [("max_file_bytes", "0"), ("max_file_bytes", "-5"), ("retention_days", "-1")]
)
def test_a_session_setting_out_of_range_is_a_configuration_error(
    ws: Workspace, cli: Any, setting: str, value: str
) -> None:
    (ws.root / ".ee/config.toml").write_text(f"[sessions]\n{setting} = {value}\n", encoding="utf-8")
    result = cli("import", "session", str(_copy(ws, "claude-code.jsonl")), "--json")
    assert result.code == 3
    assert f"[sessions] {setting} = {value}" in result.json["error"]["message"]
    assert ws.sessions() == ()


def test_a_candidate_sentence_is_not_cut_at_a_dot_inside_a_word(ws: Workspace) -> None:
    pytest.importorskip("ee.curate.model")
    from ee.sessions.candidates import extract

    path = _messages(
        ws,
        "deploy.jsonl",
        [
            {
                "role": "user",
                "content": "Decided to deploy on Fly.io instead of Heroku. We'll use Python 3.12.",
            },
            {"role": "assistant", "content": "OK, I added fly.toml for the deploy."},
        ],
    )
    evidence = _imported_evidence(ws, path, "deploy")
    bodies = {c.new_memory.body for c in extract(evidence) if c.new_memory is not None}
    assert bodies == {"Decided to deploy on Fly.io instead of Heroku.", "We'll use Python 3.12."}


def test_an_error_fixed_within_one_exchange_lists_its_evidence_once(ws: Workspace) -> None:
    pytest.importorskip("ee.curate.model")
    from ee.sessions.candidates import extract

    evidence = _imported_evidence(ws, _copy(ws, "claude-code.jsonl"), "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c")
    for candidate in extract(evidence):
        refs = [ref.ref for ref in candidate.evidence]
        assert len(refs) == len(set(refs)), candidate.title


def test_sessions_show_on_a_screen_marks_a_side_chain(ws: Workspace, cli: Any) -> None:
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")))
    session = "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"
    shown = cli("sessions", "show", session, "--json").data["evidence"]
    side = [e["id"] for e in shown if "sidechain" in e["flags"]]
    assert side  # the fixture has a sub-agent's side chain
    human = cli("sessions", "show", session, "--human").out
    heads = [line for line in human.splitlines() if line.startswith("ev_")]
    assert len(heads) == len(shown)
    assert all(("[sidechain]" in head) == (head.split()[0] in side) for head in heads)


def test_a_harness_folder_without_this_workspaces_transcripts_is_said(ws: Workspace, cli: Any) -> None:
    where = str(ws.root.resolve())
    folder = Path.home() / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in where)
    result = cli("import", "session", "--claude-code", "--codex", "--json")
    assert result.code == 0, result.err
    assert result.data["files"] == []
    notes = result.json["degraded"]
    assert [d["code"] for d in notes] == ["no_transcripts", "no_transcripts"]
    assert str(folder) in notes[0]["message"]
    assert "~/.codex/sessions" in notes[1]["message"]
    human = cli("import", "session", "--claude-code", "--human")
    assert f"no Claude Code transcript of this workspace in {folder}" in human.err
    # evidence pruned by the retention setting is said on a screen too
    (ws.root / ".ee/config.local.toml").write_text("[sessions]\nretention_days = 30\n", encoding="utf-8")
    old = ws.root.parent / "old.json"
    old.write_text(json.dumps([{"role": "user", "content": "We chose Flask.", "timestamp": "2001-01-01"}]))
    said = cli("import", "session", str(old), "--human").out
    assert "1 pruned (older than [sessions] retention_days)" in said


def test_a_transcript_only_begun_is_left_for_the_next_import(ws: Workspace, cli: Any) -> None:
    folder = ws.root.parent / "transcripts"
    folder.mkdir()
    begun = folder / "begun.jsonl"
    line = json.dumps({"type": "user", "sessionId": "s-begun", "message": {"role": "user", "content": "Hi"}})
    begun.write_text(line[:30], encoding="utf-8")  # its first line still being written
    empty = folder / "empty.jsonl"
    empty.write_text("", encoding="utf-8")  # created, nothing written yet
    result = cli("import", "session", str(begun), str(empty), "--json")
    assert result.code == 0, result.out
    assert [(f["status"], f["added"]) for f in result.data["files"]] == [("pending", 0), ("pending", 0)]
    assert result.data["files"][0]["pending_bytes"] == 30
    begun.write_text(line + "\n", encoding="utf-8")  # the line is whole now: it is read
    again = cli("import", "session", str(begun), "--json")
    assert again.code == 0
    assert again.data["files"][0]["status"] == "new"
    assert [s.session_id for s in ws.sessions()] == ["s-begun"]


def test_a_claude_code_transcript_of_snapshots_only_is_a_transcript(ws: Workspace, cli: Any) -> None:
    path = ws.root.parent / "transcripts" / "3f2a.jsonl"
    path.parent.mkdir()
    snapshot = {
        "type": "file-history-snapshot",
        "messageId": "7c1e",
        "snapshot": {"messageId": "7c1e", "trackedFileBackups": {}, "timestamp": "2026-11-02T09:00:00Z"},
        "isSnapshotUpdate": False,
    }
    path.write_text(json.dumps(snapshot) + "\n", encoding="utf-8")  # a session opened, nothing asked
    result = cli("import", "session", str(path), "--json")
    assert result.code == 0, result.out
    assert result.data["files"][0]["format"] == "claude-code"
    assert result.data["files"][0]["added"] == 0


def test_evidence_that_answers_is_not_told_to_rephrase_the_query(ws: Workspace, cli: Any) -> None:
    ws.remember("The shop service deploys with a blue-green switch on Fridays.")
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")))
    for command in ("search", "context"):
        result = cli(command, "alembic database migrations", "--json")
        assert result.code == 0, result.err
        found = result.data["hits"] if command == "search" else result.data["sections"]
        assert found  # session evidence answered
        notes = [d for d in result.json["degraded"] if d["code"] == "no_relevant_memories"]
        assert notes, command  # (still true of memories, and said)
        assert "rephrase" not in notes[0]["repair"]
        assert "ee curate list" in notes[0]["repair"]


def test_a_memory_accepted_from_a_session_counts_for_it_in_the_eval(ws: Workspace, cli: Any) -> None:
    queue = pytest.importorskip("ee.curate.queue")
    from ee.eval.sessions import hit_sessions
    from ee.query.document import from_arguments

    session = "5f0c9a6e-1b7d-4d8e-9a51-2c3f4e5a6b7c"
    cli("import", "session", str(_copy(ws, "claude-code.jsonl")))
    waiting, _problems = queue.pending(ws, "session")
    fix = next(c for c in waiting if c.new_memory is not None and c.new_memory.kind == "failure")
    assert cli("curate", "accept", fix.id).code == 0
    found = ws.search(from_arguments("No module named alembic", limit=10, fields="full"), 0.0)
    memory = next(h.to_json() for h in found.hits if h.to_json()["type"] == "memory")
    assert hit_sessions(memory, [session, "another-session"]) == {session}


def test_a_decision_that_only_points_back_is_read_with_what_it_points_to(ws: Workspace) -> None:
    """A decision "Let's go with that." became a candidate of its own, and accepting it wrote a memory that
    says nothing. A decision sentence with no words of its own is read with the sentence before it, or
    left out when that sentence is a decision already proposed (or there is none)."""
    pytest.importorskip("ee.curate.model")
    from ee.sessions.candidates import extract

    path = _messages(
        ws,
        "points-back.jsonl",
        [
            {"role": "user", "content": "Let's use it."},
            {
                "role": "user",
                "content": "We decided to drop the --once flag; cron users get a systemd timer instead. "
                "Let's go with that.",
            },
            {"role": "assistant", "content": "I'd suggest Postgres with pgbouncer in front of it."},
            {"role": "user", "content": "Sounds good, let's go with that."},
        ],
    )
    evidence = _imported_evidence(ws, path, "points-back")
    bodies = {c.new_memory.body for c in extract(evidence) if c.new_memory is not None}
    assert bodies == {
        "We decided to drop the --once flag; cron users get a systemd timer instead.",
        "I'd suggest Postgres with pgbouncer in front of it. Sounds good, let's go with that.",
    }


def test_a_file_whose_first_line_is_not_json_is_called_not_a_transcript(ws: Workspace, cli: Any) -> None:
    """`ee import session README.md` said "README.md:1: not a JSON line" and "fix or remove that line":
    advice for a transcript with one bad line, not for a file that is no transcript at all."""
    readme = ws.root / "README.md"
    readme.write_text("# logship\n\nTails log files and ships them.\n", encoding="utf-8")
    result = cli("import", "session", str(readme), "--json")
    assert result.code == 4
    error = result.data["errors"][0]
    assert error["message"].startswith(f"{readme}:1: not a transcript ee reads"), error
    assert "fix or remove that line" not in error["repair"]
    assert "--format" in error["repair"]
    assert ws.sessions() == ()
    # QA finding 15: the human answer said the error twice (the file's line, then the command's error)
    human = cli("import", "session", str(readme), "--human")
    assert human.code == 4
    both = human.out + human.err
    assert both.count("not a transcript ee reads") == 1, both
    assert human.err.startswith(f"error: {readme}:1: not a transcript ee reads"), human.err
    assert "  repair: " in human.err
    assert f"{readme}: not imported (the error follows)" in human.out


def test_a_session_candidate_the_store_already_says_is_not_proposed(ws: Workspace, cli: Any) -> None:
    """A decision said again in a later session was proposed again after a person had accepted it, the
    same text as the memory it had written (the docs' candidates already left such a text out)."""
    pytest.importorskip("ee.curate.queue")
    said = "We decided to drop the --once flag; cron users get a systemd timer instead."
    first = _messages(ws, "monday.jsonl", [{"role": "user", "content": said, "session_id": "monday"}])
    proposed = cli("import", "session", str(first), "--json").data["candidates"]["proposed"]
    assert len(proposed) == 1
    assert cli("curate", "accept", proposed[0], "--json").code == 0
    again = _messages(ws, "friday.jsonl", [{"role": "user", "content": said, "session_id": "friday"}])
    result = cli("import", "session", str(again), "--json")
    assert result.data["added"] == 1  # the evidence is kept
    assert result.data["candidates"] == {"found": 0, "proposed": []}


def test_a_scan_retires_a_session_candidate_whose_text_the_store_gained(ws: Workspace, cli: Any) -> None:
    """QA finding 14: candidates proposed before the store held their text stayed pending. A scan retires
    an undecided one by the rule intake applies (the same text, spacing and a final full stop aside), says
    so, and leaves a rejected one and one the store does not say alone."""
    pytest.importorskip("ee.curate.queue")
    said = "We decided to drop the --once flag; cron users get a systemd timer instead."
    other = "We decided to ship the tarball first; the wheel comes later."
    rejected = "We decided to keep the old log format; parsers depend on it."
    path = _messages(
        ws,
        "monday.jsonl",
        [{"role": "user", "content": text, "session_id": "monday"} for text in (said, other, rejected)],
    )
    proposed = cli("import", "session", str(path), "--json").data["candidates"]["proposed"]
    assert len(proposed) == 3
    by_text = {cli("curate", "show", c, "--json").data["new_memory"]["body"]: c for c in proposed}
    assert cli("curate", "reject", by_text[rejected], "--json").code == 0
    # the store gains both texts by hand (spacing and the final full stop differ), not through the queue
    for text in (said, rejected):
        written = cli("remember", "We  decided" + text.removeprefix("We decided").rstrip("."), "--json")
        assert written.code == 0, written.err
    result = cli("curate", "scan", "--json")
    assert result.code == 0, result.err
    retired = result.data["retired"]
    assert [r["candidate"] for r in retired] == [by_text[said]]
    shown = cli("memory", "show", retired[0]["memory"], "--json").data
    assert shown["body"].strip() == "We  decided" + said.removeprefix("We decided").rstrip(".")
    pending = [c["id"] for c in result.data["candidates"]]
    assert by_text[said] not in pending
    assert by_text[other] in pending  # the store does not say it
    assert cli("curate", "show", by_text[rejected], "--json").code == 0  # a decided one is kept
    again = cli("curate", "scan", "--json").data
    assert again["retired"] == []  # retired once: it is gone from the proposals
    assert cli("curate", "show", by_text[said], "--json").code != 0


def test_an_evidence_hit_says_which_words_of_the_question_it_matched(ws: Workspace, cli: Any) -> None:
    """An evidence hit's why named the index's stems ("matching packag, permiss"), words nobody typed;
    a memory hit names the question's words as typed, and so does evidence now."""
    said = "Never install packages one by one here: use pip install -e '.[dev]' instead."
    path = _messages(ws, "setup.jsonl", [{"role": "user", "content": said, "session_id": "setup"}])
    assert cli("import", "session", str(path)).code == 0
    hits = cli("search", "how should I install the packages?", "--json").data["hits"]
    why = next(h["why"] for h in hits if h["type"] == "evidence")
    assert why.endswith("matching install, packages"), why
