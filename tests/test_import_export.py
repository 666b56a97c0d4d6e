"""``ee import jsonl`` / ``ee export jsonl``: one commit per import, ids kept, bad lines named by number."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ee.errors import ExitCode
from ee.ops.transfer import export_records, import_jsonl
from ee.policy.trust import Actor
from ee.schemas import validator
from ee.workspace import Workspace
from tests.conftest import Result, git, run_cli

Cli = Callable[..., Result]
ID_A = "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"
ID_B = "mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA"


def check(result: Result, code: int = 0) -> Any:
    assert result.code == code, (result.out, result.err)
    doc = json.loads(result.out)
    validator("ee.response.v1" if doc["success"] else "ee.error.v1").validate(doc)
    return doc["data"] if doc["success"] else doc["error"]


def commits(root: Path) -> list[str]:
    return git(root, "log", "--format=%H").split()


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def export(cli: Cli) -> str:
    result = cli("export", "jsonl")
    assert result.code == 0, result.err
    return result.out


# --- round trip


def test_export_import_round_trip_keeps_ids_and_every_field(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    a = ws.remember("Alpha rule.", level="procedural", kind="rule", tags=["ci", "yes"], confidence=0.7)
    b = ws.remember(
        "Beta failure:\nit broke.",
        level="episodic",
        kind="failure",
        source=["file://log.txt", "https://x.example/1"],
        valid_from="2026-01-01",
        valid_to="2027-01-01",
        links=[f"supports:{a.id}"],
        paths=["src/*.py"],
        actor=Actor("codex"),
    )
    ws.remember("token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", redact=True)
    ws.edit_tags(b.id, add=["later"])
    dumped = export(cli)
    lines = dumped.splitlines()
    assert len(lines) == 3
    assert [json.loads(line)["id"] for line in lines] == sorted(json.loads(line)["id"] for line in lines)
    source = write_jsonl(tmp_path / "all.jsonl", lines)

    other, _ = Workspace.init(tmp_path / "other")
    result = run_cli("--workspace", str(other.root), "import", "jsonl", str(source), "--json")
    data = check(result)
    assert data["imported"] == 3
    assert sorted(data["ids"]) == sorted(json.loads(line)["id"] for line in lines)
    again = run_cli("--workspace", str(other.root), "export", "jsonl")
    assert again.out == dumped
    memory = other.get(b.id)
    assert (memory.trust, memory.links[0].to, memory.tags) == ("agent_assertion", a.id, ("later",))


def test_export_to_a_file_and_what_it_skips(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    ws.remember("Exported.")
    (ws.root / "memories" / "broken.md").write_text("---\nlevel: cosmic\n---\nbody\n")
    (ws.root / "memories" / "plain.md").write_text("A hand-written memory.\n")
    out = tmp_path / "out.jsonl"
    result = cli("export", "jsonl", "--output", str(out))
    assert result.code == 0
    assert result.out == ""
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["id"] for r in records} >= {"plain"}
    assert len(records) == 2
    assert "skipped memories/broken.md" in result.err
    assert all("path" not in r for r in records)


def test_an_empty_store_exports_nothing(cli: Cli) -> None:
    assert export(cli) == ""


# --- one commit, all or nothing


def test_import_is_one_commit_with_trailers(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    records = [{"body": f"Memory number {i}.", "tags": ["bulk"], "kind": "fact"} for i in range(300)]
    source = write_jsonl(tmp_path / "bulk.jsonl", [*records[:150], "", "   ", *records[150:]])
    before = commits(ws.root)
    data = check(cli("import", "jsonl", str(source), "--json"))
    assert data["imported"] == 300
    assert data["skipped"] == []
    assert commits(ws.root)[1:] == before
    message = git(ws.root, "log", "-1", "--format=%B")
    assert "Ee-Op: import" in message
    assert "Ee-Count: 300" in message
    assert "bulk.jsonl" in message
    assert len(git(ws.root, "show", "--format=", "--name-only", "HEAD").split()) == 300
    assert git(ws.root, "status", "--porcelain") == ""
    assert len(ws.list(tag=["bulk"])[0]) == 300
    assert data["commit"] == commits(ws.root)[0]


def test_a_bad_line_names_its_number_and_imports_nothing(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "mixed.jsonl",
        [{"body": "good one"}, {"body": "good two"}, "{not json", {"body": "good three"}, {"level": "x"}],
    )
    before = commits(ws.root)
    error = check(cli("import", "jsonl", str(source), "--json"), ExitCode.USAGE)
    assert error["message"].startswith("mixed.jsonl:3: not JSON")
    assert "1 more bad line" in error["message"]
    assert "nothing was imported" in error["message"]
    assert "--skip-invalid" in error["repair"]
    assert [e["line"] for e in error["details"]["errors"]] == [3, 5]
    assert commits(ws.root) == before
    assert list((ws.root / "memories").glob("*.md")) == []
    human = cli("import", "jsonl", str(source), "--human")
    assert human.code == ExitCode.USAGE
    assert "error: mixed.jsonl:3: not JSON" in human.err


def test_skip_invalid_imports_the_good_lines(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "mixed.jsonl",
        [{"body": "good one"}, "[1, 2]", {"body": "good two", "level": "cosmic"}, {"body": "good three"}],
    )
    data = check(cli("import", "jsonl", str(source), "--skip-invalid", "--json"))
    assert data["imported"] == 2
    assert [(s["line"], s["message"][:20]) for s in data["skipped"]] == [
        (2, "a line must be a JSO"),
        (3, "unknown level 'cosmi"),
    ]
    assert all(s["repair"] for s in data["skipped"])
    human = cli(
        "import",
        "jsonl",
        str(write_jsonl(tmp_path / "b.jsonl", ["{", {"body": "x"}])),
        "--skip-invalid",
        "--human",
    )
    assert "imported 1 memory, skipped 1:\n  line 1: not JSON" in human.out


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        ({"text": 5}, "must be a string"),
        ({"body": "  "}, "empty"),
        ({"body": "x", "id": "../../etc/passwd"}, "not a valid memory id"),
        ({"body": "x", "id": "a/b"}, "not a valid memory id"),
        ({"body": "x", "id": ["a"]}, "not a valid memory id"),
        ({"body": "x", "level": "cosmic"}, "unknown level"),
        ({"body": "x", "level": 3}, "unknown level"),
        ({"body": "x", "kind": "hunch"}, "unknown kind"),
        ({"body": "x", "kind": 5}, "kind"),
        ({"body": "x", "kind": ["rule"]}, "kind"),
        ({"body": "x", "confidence": "high"}, "number"),
        ({"body": "x", "confidence": 7}, "outside 0..1"),
        ({"body": "x", "utility": True}, "number"),
        ({"body": "x", "tags": {"a": 1}}, "must be a list"),
        ({"body": "x", "tags": ["a" * 300]}, "not usable"),
        ({"body": "x", "tags": [[1]]}, "'tags' holds [1], not text"),
        ({"body": "x", "source": [{"a": 1}]}, "'source' holds"),
        ({"body": "x", "paths": [None]}, "'paths' holds null"),
        ({"body": "x", "trust": "god"}, "unknown trust"),
        ({"body": "x", "trust": 5}, "unknown trust"),
        ({"body": "x", "created": "yesterday"}, "date-time"),
        # Strict JSON has no NaN or Infinity: ee's export could not write them back.
        ('{"body": "x", "extra": {"a": 1e400}}', "/extra/a: is not a finite number"),
        ('{"body": "x", "extra": {"a": [NaN]}}', "/extra/a/0: is not a finite number"),
        ('{"body": "x", "confidence": -Infinity}', "/confidence: is not a finite number"),
        ({"body": "x", "valid_from": 12}, "date-time"),
        ({"body": "x", "valid_to": ["2026"]}, "date-time"),
        ({"body": "x", "links": ["loves:mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"]}, "unknown link type 'loves'"),
        ({"body": "x", "links": [{"type": "supports"}]}, "link"),
        ({"body": "x", "links": "nope"}, "TYPE:ID"),
        ({"body": "x", "extra": {"id": 1}}, "extra key"),
        ({"body": "x", "extra": {"has space": 1}}, "extra key"),
        ({"body": "x", "extra": [1]}, "'extra' must be an object"),
        ({"body": "x", "surprise": 1}, "unknown field"),
        ({"body": "x\u0000y"}, "NUL"),
    ],
)
def test_each_bad_record_is_a_usage_error_for_its_line(
    cli: Cli, ws: Workspace, tmp_path: Path, record: dict[str, Any], fragment: str
) -> None:
    source = write_jsonl(tmp_path / "one.jsonl", [{"body": "fine"}, record])
    error = check(cli("import", "jsonl", str(source), "--json"), ExitCode.USAGE)
    assert error["message"].startswith("one.jsonl:2: "), error
    assert fragment in error["message"]
    assert list((ws.root / "memories").glob("*.md")) == []


def test_duplicate_ids_in_the_file_and_in_the_store(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    existing = ws.remember("Already here.")
    source = write_jsonl(
        tmp_path / "dups.jsonl",
        [
            {"id": ID_A, "body": "first"},
            {"id": ID_A, "body": "second"},
            {"id": existing.id, "body": "clash"},
            {"id": ID_B, "body": "fine"},
        ],
    )
    error = check(cli("import", "jsonl", str(source), "--json"), ExitCode.USAGE)
    assert [e["line"] for e in error["details"]["errors"]] == [2, 3]
    assert "appears twice" in error["details"]["errors"][0]["message"]
    assert "already in the store" in error["details"]["errors"][1]["message"]
    data = check(cli("import", "jsonl", str(source), "--skip-invalid", "--json"))
    assert sorted(data["ids"]) == [ID_A, ID_B]
    assert ws.get(ID_A).body == "first"
    assert ws.get(existing.id).body == "Already here."


def test_import_from_stdin_as_an_agent(cli: Cli, ws: Workspace) -> None:
    lines = json.dumps({"body": "From a pipe.", "tags": "a, b"}) + "\n"
    data = check(cli("import", "jsonl", "-", "--agent", "importer", "--json", input=lines))
    memory = ws.get(data["ids"][0])
    assert memory.tags == ("a", "b")
    assert memory.trust == "legacy_import"
    assert "Ee-Actor: agent:importer" in git(ws.root, "log", "-1", "--format=%B")
    assert "<stdin>" in git(ws.root, "log", "-1", "--format=%s")


def test_import_keeps_an_explicit_trust_and_given_fields(ws: Workspace) -> None:
    record = {
        "id": ID_A,
        "body": "Kept as given.",
        "trust": "peer_human_attested",
        "confidence": 0.6,
        "utility": 0.2,
        "importance": 0.9,
        "created": "2020-05-06T07:08:09Z",
        "extra": {"owner": "team-a", "review": {"by": ["ann", "bo"]}},
        "redacted": ["password_assignment"],
    }
    report = import_jsonl(ws, [json.dumps(record)])
    assert report.imported == [ID_A]
    memory = ws.get(ID_A)
    assert (memory.trust, memory.confidence, memory.utility, memory.importance) == (
        "peer_human_attested",
        0.6,
        0.2,
        0.9,
    )
    assert memory.created == "2020-05-06T07:08:09Z"
    assert dict(memory.extra) == {"owner": "team-a", "review": {"by": ["ann", "bo"]}}
    assert memory.redacted == ("password_assignment",)
    exported = next(export_records([memory]))
    assert {k: exported[k] for k in record if k != "body"} == {k: v for k, v in record.items() if k != "body"}


def test_a_secret_is_refused_or_redacted(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    secret = "deploy key ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    source = write_jsonl(tmp_path / "s.jsonl", [{"body": "fine"}, {"body": secret}])
    error = check(cli("import", "jsonl", str(source), "--json"), ExitCode.POLICY)
    assert error["message"].startswith("s.jsonl:2: ")
    assert list((ws.root / "memories").glob("*.md")) == []
    data = check(cli("import", "jsonl", str(source), "--redact", "--json"))
    bodies = {ws.get(i).body for i in data["ids"]}
    assert "deploy key [REDACTED:github_token]" in bodies


def test_unreadable_and_missing_files(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"body": "caf\xe9"}\n')
    error = check(cli("import", "jsonl", str(bad), "--json"), ExitCode.USAGE)
    assert "UTF-8" in error["message"]
    check(cli("import", "jsonl", str(tmp_path / "missing.jsonl"), "--json"), ExitCode.NOT_FOUND)
    check(cli("import", "jsonl", str(tmp_path), "--json"), ExitCode.USAGE)


def test_an_empty_file_imports_nothing_and_makes_no_commit(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    before = commits(ws.root)
    data = check(cli("import", "jsonl", str(write_jsonl(tmp_path / "e.jsonl", ["", ""])), "--json"))
    assert (data["imported"], data["commit"]) == (0, None)
    assert commits(ws.root) == before


def test_names_do_not_collide_with_existing_files(ws: Workspace) -> None:
    report = import_jsonl(
        ws, [json.dumps({"id": f"same-tail-{i}-ABCDEFGH", "body": "Same words."}) for i in range(3)]
    )
    paths = sorted(ws.get(i).path for i in report.imported)
    assert len(set(paths)) == 3
