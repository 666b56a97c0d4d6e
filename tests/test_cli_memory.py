"""Every store command through the real CLI entry point: JSON envelopes, human text, exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ee.errors import ExitCode
from ee.model import Link
from ee.schemas import load_schema, schema_dir, validator
from ee.workspace import Workspace
from tests.conftest import Result, doctor_report, git, make_repo, run_cli

Cli = Callable[..., Result]
OTHER_ID = "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"


def check(result: Result, code: int = 0) -> Any:
    """The JSON on stdout validates against its schema; the exit code is ``code``; returns data or error."""
    assert result.code == code, (result.out, result.err)
    doc = json.loads(result.out)
    validator("ee.response.v1" if doc["success"] else "ee.error.v1").validate(doc)
    if code:
        assert doc["success"] is False
        assert result.err.startswith("error: ") or "\nError: " in result.err  # ee's own, or click's
        assert doc["error"]["repair"], "every error says what to try next"
        return doc["error"]
    assert doc["success"] is True
    return doc["data"]


def shape(name: str) -> jsonschema.protocols.Validator:
    defs = load_schema("ee.response.v1")["$defs"]
    return jsonschema.Draft202012Validator({"$defs": defs, "$ref": f"#/$defs/{name}"})


def remember(cli: Cli, text: str, *args: str) -> dict[str, Any]:
    data = check(cli("remember", text, "--json", *args))
    shape("memory").validate(data)
    return data


# --- init


def test_init_json_then_human_then_again(tmp_path: Path) -> None:
    target = tmp_path / "w"
    data = check(run_cli("init", str(target), "--json"))
    assert data["root"] == str(target)
    assert ".gitignore" in data["created"]
    assert len(data["commit"]) == 40
    assert data["registered"] == ["merge driver (git config merge.ee-memory)"]
    again = run_cli("init", str(target), "--human")
    assert again.code == 0
    assert "already initialised" in again.out
    assert "registered" not in again.out
    git(target, "config", "--remove-section", "merge.ee-memory")  # as in a fresh clone
    fresh = run_cli("init", str(target), "--human")
    assert "registered: merge driver (git config merge.ee-memory)" in fresh.out
    assert "already initialised" not in fresh.out
    assert check(run_cli("init", str(target), "--json"))["commit"] is None
    assert len(git(target, "log", "--format=%H").split()) == 1


def test_init_defaults_to_the_current_folder(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    data = check(run_cli("init", "--json", cwd=root))
    assert data["root"] == str(root)
    assert (root / "memories").is_dir()


def test_init_takes_the_workspace_given_before_it_then_ee_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ee --workspace W init`` makes W the workspace, never the current folder (nor EE_WORKSPACE)."""
    here = make_repo(tmp_path / "here", {"a.txt": "a\n"})
    target, other = tmp_path / "target", tmp_path / "other"
    monkeypatch.setenv("EE_WORKSPACE", str(other))
    data = check(run_cli("--workspace", str(target), "init", "--json", cwd=here))
    assert data["root"] == str(target)
    assert (target / "memories").is_dir()
    assert not (here / "memories").exists()
    assert not other.exists()
    assert check(run_cli("-W", str(target), "init", str(target), "--json", cwd=here))["commit"] is None
    data = check(run_cli("init", "--json", cwd=here))  # no --workspace: EE_WORKSPACE
    assert data["root"] == str(other)
    assert not (here / "memories").exists()


def test_init_refuses_a_path_and_another_workspace(tmp_path: Path) -> None:
    error = check(
        run_cli("--workspace", str(tmp_path / "a"), "init", str(tmp_path / "b"), "--json"), ExitCode.USAGE
    )
    assert "another folder" in error["message"]
    assert "ee init PATH" in error["repair"]
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def test_no_workspace_is_a_configuration_error(tmp_path: Path) -> None:
    error = check(run_cli("memory", "list", "--json", cwd=tmp_path), ExitCode.CONFIG)
    assert error["code"] == "workspace_not_found"
    assert "ee init" in error["repair"]
    error = check(run_cli("--workspace", str(tmp_path / "nope"), "memory", "list", "--json"), ExitCode.CONFIG)
    assert "does not exist" in error["message"]


# --- remember


def test_remember_with_every_option(cli: Cli, ws: Workspace) -> None:
    target = remember(cli, "Target memory.")
    data = remember(
        cli,
        "Pin the toolchain: rust-toolchain.toml decides the compiler.",
        "--level",
        "procedural",
        "--kind",
        "rule",
        "--tags",
        "rust, ci,rust",
        "--confidence",
        "0.7",
        "--source",
        "file://rust-toolchain.toml",
        "--source",
        "https://example.org/pr/12",
        "--valid-from",
        "2026-01-01",
        "--valid-to",
        "2027-06-30T12:00:00+02:00",
        "--link",
        f"supports:{target['id']}",
        "--path",
        "rust-toolchain.toml",
        "--path",
        "ci/*.yml",
    )
    assert data["level"] == "procedural"
    assert data["kind"] == "rule"
    assert data["tags"] == ["rust", "ci"]
    assert (data["confidence"], data["trust"]) == (0.7, "human_explicit")
    assert data["source"] == ["file://rust-toolchain.toml", "https://example.org/pr/12"]
    assert (data["valid_from"], data["valid_to"]) == ("2026-01-01T00:00:00Z", "2027-06-30T10:00:00Z")
    assert data["links"] == [{"type": "supports", "to": target["id"]}]
    assert data["paths"] == ["rust-toolchain.toml", "ci/*.yml"]
    text = (ws.root / data["path"]).read_text()
    assert text.startswith(f"---\nid: {data['id']}\nlevel: procedural\nkind: rule\ntags: [rust, ci]\n")
    assert text.endswith("---\nPin the toolchain: rust-toolchain.toml decides the compiler.\n")
    # show: the same, with the values search uses (here all from the file: nothing derived)
    assert check(cli("memory", "show", data["id"], "--json")) == data | {
        "effective_confidence": 0.7,
        "derived": [],
    }


def test_remember_as_an_agent(cli: Cli, ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    data = remember(cli, "Said by an agent.", "--agent", "codex")
    assert (data["trust"], data["confidence"]) == ("agent_assertion", 0.5)
    assert "Ee-Actor: agent:codex" in git(ws.root, "log", "-1", "--format=%B")
    monkeypatch.setenv("EE_AGENT", "claude-code")
    data = remember(cli, "Said by the agent in the environment.")
    assert data["trust"] == "agent_assertion"
    assert "Ee-Actor: agent:claude-code" in git(ws.root, "log", "-1", "--format=%B")
    data = remember(cli, "The flag wins over the environment.", "--agent", "cursor")
    assert "Ee-Actor: agent:cursor" in git(ws.root, "log", "-1", "--format=%B")
    monkeypatch.delenv("EE_AGENT")
    data = remember(cli, "A person again.", "--confidence", "0.9")
    assert (data["trust"], data["confidence"]) == ("human_explicit", 0.9)


def test_remember_reads_standard_input(cli: Cli) -> None:
    data = check(cli("remember", "-", "--json", input="From stdin.\n\nSecond paragraph.\n"))
    assert data["body"] == "From stdin.\n\nSecond paragraph."


def test_remember_human_output(cli: Cli) -> None:
    result = cli("remember", "Human output.", "--human")
    assert result.code == 0
    assert result.out.startswith("remembered mem_")
    assert "(memories/human-output-" in result.out
    assert result.err == ""


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--level", "cosmic"], ExitCode.USAGE, "cosmic"),
        (["--kind", "hunch"], ExitCode.USAGE, "unknown kind"),
        (["--confidence", "2"], ExitCode.USAGE, "2"),
        (["--valid-from", "someday"], ExitCode.USAGE, "date-time"),
        (["--link", "supports"], ExitCode.USAGE, "TYPE:ID"),
        (["--link", "relates_to:mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"], ExitCode.USAGE, "unknown link type"),
        (["--link", "supports:../../etc/passwd"], ExitCode.USAGE, "not a memory id"),
        (["--agent", ""], ExitCode.USAGE, "agent"),
    ],
)
def test_remember_bad_options(cli: Cli, ws: Workspace, args: list[str], code: int, fragment: str) -> None:
    before = git(ws.root, "rev-parse", "HEAD")
    error = check(cli("remember", "Some text.", "--json", *args), code)
    assert fragment in error["message"]
    if fragment == "unknown link type":  # only the type is wrong: say so, and which types there are
        assert "'relates_to'" in error["message"]
        assert "supports, contradicts" in error["repair"]
    assert git(ws.root, "rev-parse", "HEAD") == before
    assert list((ws.root / "memories").glob("*.md")) == []


def test_remember_empty_text_and_secrets(cli: Cli, ws: Workspace) -> None:
    check(cli("remember", "   ", "--json"), ExitCode.USAGE)
    error = check(
        cli("remember", "key ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "--json"), ExitCode.POLICY
    )
    assert error["code"] == "secret_detected"
    assert "--redact" in error["repair"]
    assert list((ws.root / "memories").glob("*.md")) == []
    data = check(cli("remember", "key ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "--redact", "--json"))
    assert data["redacted"] == ["github_token"]


def test_usage_errors_from_click_get_the_error_envelope(cli: Cli) -> None:
    result = cli("remember", "--json")
    assert result.code == ExitCode.USAGE
    doc = json.loads(result.out)
    validator("ee.error.v1").validate(doc)
    assert "Missing argument" in result.err


# --- memory show / list


def test_show_json_and_human(cli: Cli) -> None:
    data = remember(cli, "# Heading\n\nShown in full.", "--tags", "a,b", "--source", "file://x")
    result = cli("memory", "show", data["id"], "--human")
    assert result.code == 0
    assert f"id  {data['id']}" in result.out
    assert "tags  a, b" in result.out
    assert "source  file://x" in result.out
    assert result.out.endswith("# Heading\n\nShown in full.\n\n")


def test_show_unknown_and_bad_ids(cli: Cli) -> None:
    error = check(cli("memory", "show", OTHER_ID, "--json"), ExitCode.NOT_FOUND)
    assert error["code"] == "not_found"
    for bad in ("../etc/passwd", "memories/../../x", "a/b", ".."):
        error = check(cli("memory", "show", bad, "--json"), ExitCode.USAGE)
        assert "not a memory id" in error["message"]


def test_list_with_filters(cli: Cli, ws: Workspace) -> None:
    a = remember(cli, "Alpha rule.", "--level", "procedural", "--kind", "rule", "--tags", "ci,rust")
    b = remember(cli, "Beta failure.", "--level", "episodic", "--kind", "failure", "--tags", "ci")
    c = remember(cli, "Gamma fact.", "--tags", "docs")
    hand = ws.root / "memories" / "hand.md"
    hand.write_text("Hand-written, no frontmatter, not committed yet.\n")

    def ids(*args: str) -> list[str]:
        data = check(cli("memory", "list", "--json", *args))
        assert data["count"] == len(data["memories"])
        for memory in data["memories"]:
            shape("memory").validate(memory)
        return [m["id"] for m in data["memories"]]

    assert ids() == sorted([a["id"], b["id"], c["id"], "hand"])
    assert ids("--level", "procedural") == [a["id"]]
    assert ids("--kind", "failure") == [b["id"]]
    assert ids("--tag", "ci") == sorted([a["id"], b["id"]])
    assert ids("--tag", "ci", "--tag", "rust") == [a["id"]]
    assert ids("--level", "semantic", "--kind", "fact") == sorted([c["id"], "hand"])
    assert len(ids("--limit", "2")) == 2
    assert ids("--tag", "nothing") == []
    human = cli("memory", "list", "--human", "--tag", "ci")
    assert human.code == 0
    assert "procedural/rule [ci, rust]  Alpha rule." in human.out
    assert cli("memory", "list", "--human", "--tag", "zzz").out == "no memories\n"
    check(cli("memory", "list", "--json", "--limit", "0"), ExitCode.USAGE)
    check(cli("memory", "list", "--json", "--level", "cosmic"), ExitCode.USAGE)


def test_list_reports_broken_files_in_degraded_and_shows_the_rest(cli: Cli, ws: Workspace) -> None:
    good = remember(cli, "Still listed.")
    (ws.root / "memories" / "broken.md").write_text("---\nid: b1\nlevel: cosmic\n---\nbody\n")
    result = cli("memory", "list", "--json")
    doc = json.loads(result.out)
    validator("ee.response.v1").validate(doc)
    assert result.code == 0
    assert [m["id"] for m in doc["data"]["memories"]] == [good["id"]]
    assert doc["degraded"][0]["message"].startswith("memories/broken.md:3: unknown level 'cosmic'")
    assert doc["degraded"][0]["repair"]
    human = cli("memory", "list", "--human")
    assert "memories/broken.md:3" in human.err
    assert "Still listed." in human.out


# --- edits


def test_tags_link_expire_forget_and_history(cli: Cli, ws: Workspace) -> None:
    a = remember(cli, "Alpha.", "--tags", "old")
    b = remember(cli, "Beta.")
    data = check(cli("memory", "tags", a["id"], "--add", "new,extra", "--remove", "old", "--json"))
    assert data["tags"] == ["new", "extra"]
    assert cli("memory", "tags", a["id"], "--add", "x", "--human").out == f"{a['id']} tags: new, extra, x\n"
    error = check(cli("memory", "tags", a["id"], "--json"), ExitCode.USAGE)
    assert "--add" in error["repair"]

    data = check(cli("memory", "link", a["id"], b["id"], "--type", "supports", "--json"))
    assert data["links"] == [{"type": "supports", "to": b["id"]}]
    assert cli("memory", "link", a["id"], b["id"], "--human").out == f"{a['id']} --related--> {b['id']}\n"
    check(cli("memory", "link", a["id"], OTHER_ID, "--json"), ExitCode.NOT_FOUND)
    check(cli("memory", "link", a["id"], b["id"], "--type", "loves", "--json"), ExitCode.USAGE)
    check(cli("memory", "link", a["id"], "../x", "--json"), ExitCode.USAGE)

    data = check(cli("memory", "expire", b["id"], "--at", "2030-01-01", "--json"))
    assert data["valid_to"] == "2030-01-01T00:00:00Z"
    # an agent may not retire a person's memory (issue 31): refused, the person does it
    check(cli("memory", "expire", a["id"], "--agent", "codex", "--json"), ExitCode.POLICY)
    data = check(cli("memory", "expire", a["id"], "--json"))
    assert data["valid_to"] is not None
    check(cli("memory", "expire", a["id"], "--at", "never", "--json"), ExitCode.USAGE)

    data = check(cli("memory", "forget", b["id"], "--json"))
    assert data == {"id": b["id"], "path": b["path"], "forgotten": True}
    assert not (ws.root / b["path"]).exists()
    check(cli("memory", "show", b["id"], "--json"), ExitCode.NOT_FOUND)
    check(cli("memory", "forget", b["id"], "--json"), ExitCode.NOT_FOUND)

    history = check(cli("memory", "history", a["id"], "--json"))
    assert history["id"] == a["id"]
    for version in history["versions"]:
        shape("version").validate(version)
    ops = [(v["op"], v["actor"], v["changed"]) for v in history["versions"]]
    assert ops == [
        ("expire", "human", ["valid_to"]),
        ("link", "human", ["links"]),
        ("link", "human", ["links"]),
        ("tags", "human", ["tags"]),
        ("tags", "human", ["tags"]),
        ("remember", "human", ["created"]),
    ]
    gone = check(cli("memory", "history", b["id"], "--json"))
    assert [v["op"] for v in gone["versions"]] == ["forget", "expire", "remember"]
    assert gone["versions"][0]["deleted"] is True
    human = cli("memory", "history", a["id"], "--human")
    assert human.code == 0
    assert "expire" in human.out
    assert "ee: expire Alpha." in human.out
    check(cli("memory", "history", OTHER_ID, "--json"), ExitCode.NOT_FOUND)


def test_edit_of_an_uncommitted_hand_edit_is_a_conflict(cli: Cli, ws: Workspace) -> None:
    a = remember(cli, "Committed.")
    path = ws.root / a["path"]
    path.write_text(path.read_text() + "An uncommitted line.\n")
    before = path.read_bytes()
    error = check(cli("memory", "tags", a["id"], "--add", "x", "--json"), ExitCode.CONFLICT)
    assert a["path"] in error["message"]
    assert path.read_bytes() == before


def test_edits_by_an_agent_are_recorded_as_the_agent(cli: Cli, ws: Workspace) -> None:
    a = remember(cli, "Alpha.", "--agent", "bot")  # (its own memories: a person's it may not change)
    b = remember(cli, "Beta.", "--agent", "bot")
    check(cli("memory", "tags", a["id"], "--add", "x", "--agent", "bot", "--json"))
    check(cli("memory", "link", a["id"], b["id"], "--agent", "bot", "--json"))
    check(cli("memory", "forget", b["id"], "--agent", "bot", "--json"))
    actors = git(ws.root, "log", "-3", "--format=%(trailers:key=Ee-Actor,valueonly)").split()
    assert actors == ["agent:bot", "agent:bot", "agent:bot"]


# --- doctor and schema


def test_doctor_healthy_then_with_problems(cli: Cli, ws: Workspace) -> None:
    remember(cli, "Fine.")
    data = check(cli("doctor", "--json"))
    assert data["healthy"] is True
    assert (data["memories"], data["errors"]) == (1, 0)
    data = check(cli("doctor", "--full", "--json"))
    assert data["healthy"] is True
    (ws.root / "memories" / "bad.md").write_text("---\nid: x\nconfidence: lots\n---\nbody\n")
    (ws.root / "memories" / "odd.md").write_text(
        "---\nid: y\nowner: me\nlinks: [supports:nowhere]\n---\nbody\n"
    )
    result = cli("doctor", "--json")
    assert result.code == ExitCode.STORAGE
    doc = json.loads(result.out)
    validator("ee.error.v1").validate(doc)  # exit 4: the error envelope, never "success": true
    assert doc["error"]["message"].startswith("ee doctor found 1 error, ")
    assert "memories/bad.md:3: confidence must be a number" in doc["error"]["message"]
    for problem in doctor_report(doc)["problems"]:
        shape("problem").validate(problem)
        assert problem["repair"]
    by_code = {p["code"]: p for p in doctor_report(doc)["problems"]}
    assert by_code["memory_invalid"]["path"] == "memories/bad.md"
    assert by_code["memory_invalid"]["line"] == 3
    assert by_code["memory_invalid"]["key"] == "confidence"
    assert by_code["unknown_key"]["line"] == 3
    assert "nowhere" in by_code["link_dangling"]["message"]
    human = cli("doctor", "--human")
    assert human.code == ExitCode.STORAGE
    assert "error: memories/bad.md:3: confidence must be a number" in human.out
    assert "  repair: " in human.out


def test_every_problem_of_a_broken_file_is_reported_with_its_line(cli: Cli, ws: Workspace) -> None:
    """A bad confidence does not hide behind an unknown level: doctor and the index list both."""
    remember(cli, "Fine.")
    (ws.root / "memories" / "bad.md").write_text("---\nlevel: cosmic\nconfidence: lots\n---\nbody\n")
    result = cli("doctor", "--json")
    assert result.code == ExitCode.STORAGE
    doctor = doctor_report(json.loads(result.out))
    found = [(p["line"], p["key"]) for p in doctor["problems"] if p["code"] == "memory_invalid"]
    assert found == [(2, "level"), (3, "confidence")]
    human = cli("doctor", "--human").out
    assert "memories/bad.md:2: unknown level 'cosmic'" in human
    assert "memories/bad.md:3: confidence must be a number" in human
    search = json.loads(cli("search", "body", "--json").out)
    invalid = [d for d in search["degraded"] if "bad.md" in d["message"]]
    assert invalid, search["degraded"]
    status = check(cli("index", "status", "--json"))
    lines = sorted(p["line"] for p in status["problems"] if p["code"] == "memory_invalid")
    assert lines == [2, 3]


def test_doctor_reports_a_missing_layout_and_config(cli: Cli, ws: Workspace) -> None:
    (ws.root / ".ee" / "config.toml").write_text("[lock]\ntimeout = 'x'\n")
    (ws.root / ".gitattributes").write_text("")
    git(ws.root, "config", "--unset", "merge.ee-memory.driver")
    data = doctor_report(json.loads(cli("doctor", "--json").out))
    codes = {p["code"]: p["repair"] for p in data["problems"]}
    assert "config_invalid" in codes
    assert codes["gitattributes_incomplete"] == "ee init"
    assert codes["merge_driver_missing"] == "ee init"


def test_schema_list_and_export(cli: Cli) -> None:
    data = check(cli("schema", "list", "--json"))
    assert {"ee.response.v1", "ee.error.v1", "ee.memory.v1"} <= set(data["schemas"])
    assert cli("schema", "list", "--human").out.splitlines() == data["schemas"]
    for schema_id in data["schemas"]:
        result = cli("schema", "export", schema_id)
        assert result.code == 0
        exported = json.loads(result.out)
        assert exported == json.loads((schema_dir() / f"{schema_id}.json").read_text())
        jsonschema.Draft202012Validator.check_schema(exported)
    error = check(cli("schema", "export", "ee.nothing.v9"), ExitCode.NOT_FOUND)
    assert "ee schema list" in error["repair"]
    check(cli("schema", "export", "../pyproject"), ExitCode.NOT_FOUND)


def test_every_memory_file_ee_writes_matches_the_memory_schema(cli: Cli, ws: Workspace) -> None:
    import yaml

    target = remember(cli, "Target.")
    remember(
        cli,
        "Full.",
        "--level",
        "episodic",
        "--kind",
        "failure",
        "--tags",
        "yes,1.0",
        "--source",
        "s",
        "--valid-from",
        "2026-01-01",
        "--link",
        f"related:{target['id']}",
        "--path",
        "p",
    )
    check(cli("memory", "tags", target["id"], "--add", "on", "--json"))
    check(cli("memory", "expire", target["id"], "--json"))
    memory_schema = jsonschema.Draft202012Validator(load_schema("ee.memory.v1"))
    for path in (ws.root / "memories").glob("*.md"):
        front = path.read_text().split("---\n")[1]
        data = yaml.safe_load(front)
        as_json = json.loads(json.dumps(data, default=lambda v: v.isoformat().replace("+00:00", "Z")))
        memory_schema.validate(as_json)
    bad = {"id": "../x", "level": "cosmic", "confidence": 3, "tags": 5}
    assert {e.path[0] for e in memory_schema.iter_errors(bad)} == {"id", "level", "confidence", "tags"}


def test_doctor_reports_a_held_lock(cli: Cli, ws: Workspace) -> None:
    from ee.store.files import workspace_lock

    with workspace_lock(ws.root):
        data = check(cli("doctor", "--json"))
    held = [p for p in data["problems"] if p["code"] == "lock_held"]
    assert held
    assert held[0]["severity"] == "info"
    assert str(__import__("os").getpid()) in held[0]["message"]
    assert data["healthy"] is True


def test_remember_links_only_to_memories_that_exist_and_once(cli: Any, ws: Workspace) -> None:
    # As `ee memory link` requires (it used to write a dangling link that only `ee doctor` noticed).
    target = ws.remember("Releases are tagged on main.")
    head = git(ws.root, "rev-parse", "HEAD")
    missing = "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"
    result = cli("remember", "Tagging needs a clean tree.", "--link", f"supports:{missing}", "--json")
    assert result.code == ExitCode.NOT_FOUND, result.out
    assert missing in result.json["error"]["message"]
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert [m.id for m in ws.list()[0]] == [target.id]
    twice = [f"supports:{target.id}"] * 2
    made = check(
        cli("remember", "Tagging needs a clean tree.", "--link", twice[0], "--link", twice[1], "--json")
    )
    assert ws.get(made["id"]).links == (Link("supports", target.id),)


def test_show_gives_the_values_search_uses_and_marks_the_derived_ones(cli: Cli, ws: Workspace) -> None:
    """A hand-written memory has no trust, confidence or created key: show gives what search weighs
    (issue 36, item 7), marked derived; a file's own values are marked as the file's."""
    (ws.root / "memories" / "by-hand.md").write_text("---\nkind: rule\n---\nNo deploys on Fridays.\n")
    git(ws.root, "add", "memories/by-hand.md")
    git(ws.root, "commit", "-q", "-m", "a rule by hand")
    committed = git(ws.root, "log", "-1", "--format=%cI").strip()
    shown = check(cli("memory", "show", "by-hand", "--json"))
    hit = check(cli("search", "deploys Fridays", "--json"))["hits"][0]
    assert hit["id"] == "by-hand"
    assert shown["trust"] == hit["trust"] == "human_explicit"
    assert shown["effective_confidence"] == hit["factors"]["confidence"]["value"] == 0.85
    assert shown["confidence"] == 0.85
    assert shown["derived"] == ["trust", "confidence", "created"]
    assert shown["created"] == committed.replace("+00:00", "Z")
    human = cli("memory", "show", "by-hand", "--human").out
    assert "trust  human_explicit  (derived: who committed it)" in human
    assert "confidence  0.85  (derived: the default of human_explicit)" in human
    assert "created  " + shown["created"] + "  (derived: its first commit)" in human
    for key in ("trust", "confidence", "created"):
        assert f"{key}  -" not in human  # the effective value, never "-"
    written = ws.remember("Pinned toolchain.", confidence=0.6, kind="rule")
    ws.outcome(written.id, "harmful")
    shown = check(cli("memory", "show", written.id, "--json"))
    assert shown["derived"] == []
    assert shown["confidence"] == 0.6
    hit = next(h for h in check(cli("search", "Pinned toolchain", "--json"))["hits"] if h["id"] == written.id)
    assert shown["effective_confidence"] == hit["factors"]["confidence"]["value"] < 0.6
    human = cli("memory", "show", written.id, "--human").out
    assert f"confidence  0.60  (file); {shown['effective_confidence']:.2f} with feedback" in human
    assert "created  " + shown["created"] + "  (file)" in human
