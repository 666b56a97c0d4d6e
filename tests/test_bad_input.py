"""Hostile and broken input: each a clear error (file:line where a file is at fault), the right exit code,
and no damage — the other memories still load and no file changes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ee.errors import ExitCode
from ee.schemas import validator
from ee.workspace import Workspace
from tests.conftest import Result, doctor_report, git, run_ee_process

Cli = Callable[..., Result]


def _bomb() -> str:
    text = "---\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for name, prev in zip("bcdefghi", "abcdefgh", strict=True):
        text += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
    return text + "---\nboom\n"


# name → (file content, line the error names, fragment of the message)
BAD_FILES: dict[str, tuple[bytes, int | None, str]] = {
    "malformed-yaml": (b"---\nid: m1\nsource: a: b\n---\nbody\n", 3, "invalid YAML"),
    "unclosed-list": (b"---\nid: m2\ntags: [a, b\nkind: fact\n---\nbody\n", 3, "invalid YAML"),
    "wrong-type": (
        b"---\nid: m3\nkind: fact\nconfidence: very\n---\nbody\n",
        4,
        "confidence must be a number",
    ),
    "tags-not-list": (b"---\nid: m4\ntags: {a: 1}\n---\nbody\n", 3, "tags must be a list"),
    "unknown-level": (b"---\nid: m5\nlevel: cosmic\n---\nbody\n", 3, "unknown level 'cosmic'"),
    "duplicate-key": (
        b"---\nid: m6\nlevel: semantic\nlevel: episodic\n---\nbody\n",
        4,
        "duplicate key 'level'",
    ),
    "non-utf8": (b"---\nid: m7\n---\nline one\ncaf\xe9 au lait\n", 5, "not UTF-8"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 1, "not UTF-8"),
    "nul-byte": (b"---\nid: m8\n---\ntext\n\x00\n", 5, "NUL"),
    "id-traversal": (b"---\nid: ../../../etc/passwd\n---\nbody\n", 2, "not a valid memory id"),
    "alias-bomb": (_bomb().encode(), 2, "aliases"),
    "huge-frontmatter": (b"---\nid: m9\nnote: " + b"x" * 70_000 + b"\n---\nbody\n", 2, "larger than"),
    "thousands-of-tags": (
        ("---\nid: m10\ntags: [" + ", ".join(f"t{i}" for i in range(5000)) + "]\n---\nbody\n").encode(),
        3,
        "5000 tags",
    ),
    "not-closed": (b"---\nid: m11\nno closing line\n", 1, "not closed"),
    "empty": (b"", 1, "empty"),
    "no-body": (b"---\nid: m12\nkind: fact\n---\n\n\n", 5, "no body"),
    "list-frontmatter": (b"---\n- a\n- b\n---\nbody\n", 2, "mapping"),
    "huge-body": (b"x" * (300 * 1024), None, "more than the limit"),
}


def digest_tree(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted((root / "memories").rglob("*")):
        if path.is_file() and not path.is_symlink() and not path.is_fifo():
            out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_symlink():
            out[str(path.relative_to(root))] = "link:" + os.readlink(path)
    return out


def check(result: Result, code: int = 0) -> Any:
    assert result.code == code, (result.out, result.err)
    doc = json.loads(result.out)
    validator("ee.response.v1" if doc["success"] else "ee.error.v1").validate(doc)
    return doc


@pytest.fixture
def messy(ws: Workspace) -> tuple[Workspace, list[str]]:
    """A workspace with good memories committed and every kind of bad file beside them."""
    good = [ws.remember(f"Good memory {n}.", tags=["good"]).id for n in range(3)]
    folder = ws.root / "memories"
    for name, (data, _line, _fragment) in BAD_FILES.items():
        (folder / f"{name}.md").write_bytes(data)
    (folder / "dup-one.md").write_text("---\nid: twin\n---\nfirst twin\n")
    (folder / "dup-two.md").write_text("---\nid: twin\n---\nsecond twin\n")
    (folder / "escape.md").symlink_to("/etc/passwd")
    (folder / "escape-relative.md").symlink_to("../.ee/config.toml")
    (folder / "dangling.md").symlink_to("missing-target.md")
    (folder / "linked-dir.md").symlink_to("/etc")
    os.mkfifo(folder / "fifo.md")
    return ws, good


def test_every_broken_file_is_named_with_its_line_and_the_rest_loads(
    messy: tuple[Workspace, list[str]], cli: Cli
) -> None:
    ws, good = messy
    before = digest_tree(ws.root)
    started = time.monotonic()
    doc = check(cli("memory", "list", "--json"))
    assert time.monotonic() - started < 5, "a bomb or a FIFO must not stall the read"
    assert sorted(m["id"] for m in doc["data"]["memories"]) == sorted([*good, "twin"])
    degraded = {d["message"].split(":")[0]: d for d in doc["degraded"]}
    for name, (_data, line, fragment) in BAD_FILES.items():
        item = degraded[f"memories/{name}.md"]
        where = f"memories/{name}.md:{line}: " if line else f"memories/{name}.md: "
        assert item["message"].startswith(where), item
        assert fragment in item["message"], item
        assert item["repair"], item
    assert "also used by memories/dup-one.md" in degraded["memories/dup-two.md"]["message"]
    assert "outside memories/" in degraded["memories/escape.md"]["message"]
    assert "outside memories/" in degraded["memories/escape-relative.md"]["message"]
    assert "memories/dangling.md" in degraded
    assert "memories/linked-dir.md" in degraded
    assert "memories/fifo.md" in degraded
    assert "root:" not in doc["data"].__repr__(), "nothing from outside memories/ is read out"
    assert digest_tree(ws.root) == before


def test_doctor_lists_every_problem_with_a_repair_and_fails(
    messy: tuple[Workspace, list[str]], cli: Cli
) -> None:
    ws, _good = messy
    before = digest_tree(ws.root)
    doc = check(cli("doctor", "--json"), ExitCode.STORAGE)
    problems = doctor_report(doc)["problems"]
    paths = {p.get("path") for p in problems if p["severity"] == "error"}
    assert {f"memories/{name}.md" for name in BAD_FILES} <= paths
    assert {"memories/dup-two.md", "memories/escape.md", "memories/fifo.md"} <= paths
    lines = {p["path"]: p.get("line") for p in problems if p.get("path")}
    assert lines["memories/malformed-yaml.md"] == 3
    assert lines["memories/non-utf8.md"] == 5
    assert all(p["repair"] for p in problems)
    human = cli("doctor", "--human")
    assert "error: memories/unknown-level.md:3: unknown level 'cosmic'" in human.out
    assert digest_tree(ws.root) == before


def test_writes_still_work_beside_broken_files(
    messy: tuple[Workspace, list[str]], cli: Cli, tmp_path: Path
) -> None:
    ws, good = messy
    bad_before = {k: v for k, v in digest_tree(ws.root).items() if not k.startswith("memories/good-")}
    new = check(cli("remember", "Written beside broken files.", "--json"))["data"]
    check(cli("memory", "tags", good[0], "--add", "still-works", "--json"))
    check(cli("memory", "link", good[0], good[1], "--json"))
    check(cli("memory", "expire", good[1], "--json"))
    check(cli("memory", "forget", good[2], "--json"))
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"body": "Imported beside broken files."}) + "\n")
    check(cli("import", "jsonl", str(source), "--json"))
    export = cli("export", "jsonl")
    assert export.code == 0
    assert len(export.out.splitlines()) == 3 + 1 + 1  # two good + twin + remembered + imported
    assert "skipped memories/malformed-yaml.md" in export.err
    after = digest_tree(ws.root)
    assert {k: v for k, v in after.items() if k in bad_before} == bad_before
    assert ws.get(new["id"]).body == "Written beside broken files."
    # ee never commits the user's broken (untracked) files.
    tracked = git(ws.root, "ls-files", "memories").split()
    assert not any(name.endswith(f"{bad}.md") for bad in BAD_FILES for name in tracked)


@pytest.mark.parametrize(
    "bad_id", ["../x", "../../etc/passwd", "memories/../x", "a/b", "..", "x" * 300, "a b"]
)
def test_path_like_ids_on_the_command_line_are_usage_errors(cli: Cli, ws: Workspace, bad_id: str) -> None:
    good = ws.remember("A memory.").id
    for args in (
        ["memory", "show", bad_id],
        ["memory", "history", bad_id],
        ["memory", "tags", bad_id, "--add", "x"],
        ["memory", "link", good, bad_id],
        ["memory", "expire", bad_id],
        ["memory", "forget", bad_id],
        ["remember", "x", "--link", f"supports:{bad_id}"],
    ):
        doc = check(cli(*args, "--json"), ExitCode.USAGE)
        assert "memory id" in doc["error"]["message"], args
    assert [m.id for m in ws.list()[0]] == [good]


def test_an_unknown_id_says_what_to_try_and_mentions_unreadable_files(cli: Cli, ws: Workspace) -> None:
    (ws.root / "memories" / "broken.md").write_text("---\nid: wanted\nlevel: cosmic\n---\nbody\n")
    doc = check(cli("memory", "show", "wanted", "--json"), ExitCode.NOT_FOUND)
    assert "ee doctor" in doc["error"]["repair"]


def test_duplicate_ids_resolve_to_the_first_path_and_are_reported(cli: Cli, ws: Workspace) -> None:
    (ws.root / "memories" / "b.md").write_text("---\nid: same\n---\nfrom b\n")
    (ws.root / "memories" / "a.md").write_text("---\nid: same\n---\nfrom a\n")
    assert check(cli("memory", "show", "same", "--json"))["data"]["body"] == "from a"
    doc = check(cli("doctor", "--json"), ExitCode.STORAGE)
    dup = [p for p in doctor_report(doc)["problems"] if p["code"] == "duplicate_id"]
    assert [p["path"] for p in dup] == ["memories/b.md"]
    assert "memories/a.md" in dup[0]["message"]


def test_bad_text_on_the_command_line(ws: Workspace) -> None:
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "ee", "remember", b"caf\xe9 latin-1", "--json"],
        cwd=ws.root,
        capture_output=True,
        env=env,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert b"UTF-8" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "ee", "remember", "-", "--json"],
        cwd=ws.root,
        input=b"binary\x00data",
        capture_output=True,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert list((ws.root / "memories").glob("*.md")) == []


def test_thousands_of_tags_and_a_huge_body_on_the_command_line(cli: Cli, ws: Workspace) -> None:
    tags = ",".join(f"t{i}" for i in range(3000))
    doc = check(cli("remember", "Too many tags.", "--tags", tags, "--json"), ExitCode.USAGE)
    assert "3000 tags" in doc["error"]["message"]
    doc = check(cli("remember", "x" * (300 * 1024), "--json"), ExitCode.USAGE)
    assert "limit" in doc["error"]["message"]
    assert list((ws.root / "memories").glob("*.md")) == []


def test_a_symlinked_memories_folder_target_is_not_written_through(
    ws: Workspace, tmp_path: Path, cli: Cli
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\nid: outside-1\n---\nnot yours\n")
    (ws.root / "memories" / "sub").symlink_to(outside)
    doc = check(cli("memory", "list", "--json"))
    assert "outside-1" not in [m["id"] for m in doc["data"]["memories"]]
    doc = check(cli("memory", "tags", "outside-1", "--add", "x", "--json"), ExitCode.NOT_FOUND)
    assert (outside / "secret.md").read_text() == "---\nid: outside-1\n---\nnot yours\n"


def test_a_bad_config_is_a_configuration_error(cli: Cli, ws: Workspace) -> None:
    (ws.root / ".ee" / "config.toml").write_text("[store\n")
    doc = check(cli("remember", "x", "--json"), ExitCode.CONFIG)
    assert ".ee/config.toml" in doc["error"]["message"]
    assert doc["error"]["repair"]


def test_options_that_contradict_each_other_are_usage_errors(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    # Each pair used to be accepted, one side quietly winning or doing nothing; nothing may change.
    memory = ws.remember("Releases are tagged on main.", tags=["release"])
    future = ws.remember("The gateway needs mutual TLS.", valid_from="2999-01-01T00:00:00Z")
    head = git(ws.root, "rev-parse", "HEAD")
    files = {p: p.read_bytes() for p in (ws.root / "memories").glob("*.md")}
    batch = tmp_path / "q.jsonl"
    batch.write_text("release\n")
    for args, fragment in (
        (["search", "release", "--format", "human", "--json"], "--format human and --json"),
        (["search", "release", "--format", "markdown", "--human"], "--format markdown and --human"),
        (["context", "release", "--format", "compact", "--json"], "--format compact and --json"),
        (["search", "--batch", str(batch), "--format", "jsonl"], "--format jsonl does not apply"),
        (["why", memory.id, "--profile", "wide"], "give a query too"),
        (["memory", "tags", memory.id, "--add", "ci", "--remove", "ci"], "both added and removed"),
        (["memory", "expire", future.id, "--at", "2026-01-01T00:00:00Z"], "is before"),
        (["memory", "expire", future.id], "the expiry (now) "),
        (["-W", str(tmp_path / "nowhere"), "eval", "run"], "does not exist"),
    ):
        result = cli(*args)
        want = ExitCode.CONFIG if "eval" in args else ExitCode.USAGE
        assert result.code == want, (args, result.out, result.err)
        assert fragment in result.out + result.err, (args, result.out, result.err)
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert {p: p.read_bytes() for p in (ws.root / "memories").glob("*.md")} == files
    # The agreeing pairs still work.
    assert cli("search", "release", "--format", "json", "--json").code == 0
    assert cli("why", memory.id, "--query", "release", "--profile", "wide", "--json").data["query"]


OUT_OF_RANGE = ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00")  # outside years 1-9999 in UTC


def test_a_time_out_of_range_in_utc_is_a_bad_time_everywhere(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    good = ws.remember("Compilers are pinned in CI.").id
    folder = ws.root / "memories"
    (folder / "early.md").write_text(f"---\nid: early\ncreated: {OUT_OF_RANGE[0]}\n---\ncompilers early\n")
    (folder / "late.md").write_text(f'---\nid: late\nkind: fact\nvalid_to: "{OUT_OF_RANGE[1]}"\n---\nlate\n')
    before = digest_tree(ws.root)
    # The two files are named with their line; the rest of the store loads and answers.
    doc = check(cli("memory", "list", "--json"))
    assert [m["id"] for m in doc["data"]["memories"]] == [good]
    messages = sorted(d["message"] for d in doc["degraded"])
    assert messages[0].startswith("memories/early.md:3: created"), messages
    assert messages[1].startswith("memories/late.md:4: valid_to"), messages
    assert all("out of range" in message for message in messages)
    assert check(cli("search", "compilers", "--json"))["data"]["hits"][0]["id"] == good
    check(cli("context", "compilers", "--json"))
    check(cli("index", "rebuild", "--json"))
    export = cli("export", "jsonl")
    assert export.code == 0
    assert "skipped memories/early.md" in export.err
    problems = doctor_report(check(cli("doctor", "--json"), ExitCode.STORAGE))["problems"]
    assert {(p["path"], p["line"]) for p in problems} >= {("memories/early.md", 3), ("memories/late.md", 4)}
    # Options and query documents: usage errors.
    for when in OUT_OF_RANGE:
        for args in (
            ["search", "x", "--as-of", when],
            ["context", "x", "--as-of", when],
            ["memory", "show", good, "--as-of", when],
            ["remember", "x", "--valid-to", when],
            ["remember", "x", "--valid-from", when],
            ["memory", "expire", good, "--at", when],
        ):
            result = cli(*args, "--json")
            assert result.code == ExitCode.USAGE, (args, result.out, result.err)
            assert when in result.json["error"]["message"], args
        for part in (
            {"asOf": when},
            {"time": {"after": when}},
            {"temporalValidity": {"referenceTime": when}},
        ):
            document = json.dumps({"version": "ee.query.v1", "query": {"text": "x"}} | part)
            result = cli("search", "--query-file", "-", "--json", input=document)
            assert result.json["error"]["code"] == "query_invalid", (part, result.out)
            assert result.code == ExitCode.USAGE
    # An import names the line and imports nothing.
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"body": "x", "created": OUT_OF_RANGE[0]}) + "\n")
    error = check(cli("import", "jsonl", str(source), "--json"), ExitCode.USAGE)["error"]
    assert error["message"].startswith("in.jsonl:1: created"), error
    assert digest_tree(ws.root) == before
    # The MCP tools answer the same usage error, not an internal one.
    from ee.mcp.invoke import call_tool
    from ee.mcp.tools import TOOLS

    search = next(tool for tool in TOOLS if tool.name == "search")
    answer = call_tool(search, {"text": "compilers", "as_of": OUT_OF_RANGE[0]}, str(ws.root))
    assert answer.document["error"]["code"] in ("usage", "query_invalid"), answer.document
    assert call_tool(search, {"text": "compilers"}, str(ws.root)).ok


def test_an_asof_before_1970_finds_no_commit(cli: Cli, ws: Workspace) -> None:
    # git reads `--before=<negative>` as "now": a time before any commit must not answer with HEAD.
    good = ws.remember("Compilers are pinned in CI.").id
    for when in ("0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z"):
        assert check(cli("search", "compilers", "--as-of", when, "--json"))["data"]["hits"] == []
        check(cli("memory", "show", good, "--as-of", when, "--json"), ExitCode.NOT_FOUND)


BAD = "\udcff"  # how Python receives the byte 0xff of an argument or a variable (surrogateescape)


def test_text_that_is_not_utf8_is_a_usage_error_in_every_argument_and_variable(
    cli: Cli, ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    good = ws.remember("Compilers are pinned in CI.").id
    head = git(ws.root, "rev-parse", "HEAD")
    before = digest_tree(ws.root)
    for args in (
        ["search", f"{BAD} compilers"],
        ["context", f"{BAD} x"],
        ["search", "x", "--kind", BAD],
        ["remember", "ok", "--tags", BAD],
        ["remember", "ok", "--source", BAD],
        ["remember", "ok", "--agent", BAD],
        ["remember", BAD],
        ["outcome", good, "--signal", "helpful", "--reason", BAD],
        ["memory", "tags", good, "--add", BAD],
        ["memory", "show", BAD],
    ):
        result = cli(*args, "--json")
        assert result.code == ExitCode.USAGE, (args, result.out, result.err)
        assert "not UTF-8" in result.json["error"]["message"], args
    monkeypatch.setenv("EE_AGENT", BAD)
    result = cli("remember", "ok", "--json")
    assert result.code == ExitCode.USAGE, result.err
    assert "$EE_AGENT" in result.json["error"]["message"]
    monkeypatch.delenv("EE_AGENT")
    # A "\udcff" escape in JSON is the same text: a query document, an import line.
    document = json.dumps({"version": "ee.query.v1", "query": {"text": "x"}, "tags": {"require": [BAD]}})
    result = cli("search", "--query-file", "-", "--json", input=document)
    assert result.code == ExitCode.USAGE
    assert result.json["error"]["details"]["pointer"] == "/tags/require/0"
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"body": "x", "tags": [BAD]}) + "\n")
    error = check(cli("import", "jsonl", str(source), "--json"), ExitCode.USAGE)["error"]
    assert error["message"].startswith("in.jsonl:1: /tags/0: "), error
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert digest_tree(ws.root) == before


def test_a_file_name_that_is_not_utf8_is_still_a_path(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    # A path is declared click.Path: the text rule does not apply, the file is found or not.
    ws.remember("Compilers are pinned in CI.")
    batch = tmp_path / f"q{BAD}.txt"
    batch.write_text("compilers\n")
    assert len(check_lines(cli("search", "--batch", str(batch)))[0]["data"]["hits"]) == 1
    document = tmp_path / f"d{BAD}.json"
    document.write_text(json.dumps({"version": "ee.query.v1", "query": {"text": "compilers"}}))
    assert len(check(cli("search", "--query-file", str(document), "--json"))["data"]["hits"]) == 1


def check_lines(result: Result) -> list[Any]:
    assert result.code == 0, (result.out, result.err)
    return [json.loads(line) for line in result.out.splitlines()]


def test_batch_files_fail_as_query_files_do(cli: Cli, ws: Workspace, tmp_path: Path) -> None:
    ws.remember("Compilers are pinned in CI.")
    for option in ("--batch", "--query-file"):
        missing = cli("search", option, str(tmp_path / "nowhere.jsonl"), "--json")
        assert missing.code == ExitCode.NOT_FOUND, (option, missing.err)
        folder = cli("search", option, str(tmp_path), "--json")
        assert folder.code == ExitCode.USAGE, (option, folder.err)
        assert "is a folder" in folder.json["error"]["message"]
    # A line that is not UTF-8 is that line's error; the others run.
    batch = tmp_path / "q.txt"
    batch.write_bytes(b"compilers\n\xff compilers\ncompilers\n")
    result = cli("search", "--batch", str(batch))
    assert result.code == ExitCode.USAGE
    lines = [json.loads(line) for line in result.out.splitlines()]
    assert [line["success"] for line in lines] == [True, False, True]
    assert lines[1]["error"]["message"].startswith(f"{batch}:2: not UTF-8")
    proc = subprocess.run(
        [sys.executable, "-m", "ee", "search", "--batch", "-"],
        cwd=ws.root,
        input=b"compilers\n\xff x\n",
        capture_output=True,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert [json.loads(line)["success"] for line in proc.stdout.splitlines()] == [True, False]


def test_every_text_parameter_of_every_command_refuses_bytes_that_are_not_utf8() -> None:
    import click

    from ee.cli import TEXT, cli

    def walk(command: click.Command) -> list[str]:
        plain = [
            f"{command.name} {param.name}"
            for param in command.params
            if isinstance(param.type, click.types.StringParamType) and param.type is not TEXT
        ]
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                plain += walk(sub)
        return plain

    assert walk(cli) == []


def strict_json(text: str) -> Any:
    """``text`` parsed as strict JSON parsers do: NaN, Infinity and -Infinity refused."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in ee's JSON output")

    return json.loads(text, parse_constant=refuse)


def test_every_json_writer_writes_strict_json_for_non_finite_values(cli: Cli, ws: Workspace) -> None:
    (ws.root / "memories" / "nan.md").write_text(
        "---\nid: nan\nteam: .nan\nsize: .inf\nlow: [-.inf, 1.0e+400]\n---\nnon-finite values\n"
    )
    shown = strict_json(cli("memory", "show", "nan", "--json").out)
    assert shown["data"]["extra"] == {"team": ".nan", "size": ".inf", "low": ["-.inf", ".inf"]}
    for args in (
        ["memory", "list", "--json"],
        ["search", "non-finite", "--json"],
        ["context", "values", "--json"],
    ):
        result = cli(*args)
        assert result.code == 0, (args, result.err)
        strict_json(result.out)
    export = cli("export", "jsonl")
    assert export.code == 0
    (line,) = [strict_json(line) for line in export.out.splitlines()]
    assert line["extra"]["size"] == ".inf"
    from ee.mcp.invoke import call_tool
    from ee.mcp.tools import TOOLS

    tools = {tool.name: tool for tool in TOOLS}
    for name, arguments in (("memory_show", {"memory_id": "nan"}), ("search", {"text": "non-finite"})):
        answer = call_tool(tools[name], arguments, str(ws.root))
        assert answer.ok, answer.document
        strict_json(answer.text)
    document = '{"version": "ee.query.v1", "query": {"text": "x"}, "filters": {"size": {"gt": NaN}}}'
    result = cli("search", "--query-file", "-", "--json", input=document)
    assert result.code == ExitCode.USAGE
    assert strict_json(result.out)["error"]["details"]["pointer"] == "/filters/size/gt"
    refused = call_tool(tools["search"], {"text": "x", "limit": float("nan")}, str(ws.root))
    assert refused.document["error"]["code"] == "usage"
    strict_json(refused.text)


def test_an_events_file_that_links_out_is_never_read_or_written_through(
    ws: Workspace, tmp_path: Path, cli: Cli
) -> None:
    # A teammate's commit can hold a symlink where an events file belongs (git checks links out as
    # links): ee outcome used to append to its target outside the repository, and memory list to read it.
    memory = ws.remember("Run make lint before pushing.")
    outside = tmp_path / "outside.jsonl"
    harmful = {"signal": "harmful", "at": "2026-12-01T00:00:00Z", "source": "x"}
    text = "".join(json.dumps({"id": f"evt_{n}", **harmful}) + "\n" for n in range(3))
    outside.write_text(text)
    (ws.root / "memories" / ".events" / f"{memory.id}.jsonl").symlink_to(outside)
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "events")
    doc = check(cli("outcome", memory.id, "--signal", "helpful", "--json"), ExitCode.STORAGE)
    assert "is a symlink" in doc["error"]["message"]
    assert f"rm memories/.events/{memory.id}.jsonl" in doc["error"]["repair"]
    assert outside.read_text() == text
    listed = check(cli("memory", "list", "--json"))["data"]["memories"]
    assert listed[0]["effective_confidence"] == 0.85  # the outside file's harmful events do not count
    # A folder link: the same, for every events file.
    events = ws.root / "memories" / ".events"
    git(ws.root, "rm", "-q", "-r", "memories/.events")
    shutil.rmtree(events, ignore_errors=True)
    folder = tmp_path / "events-folder"
    folder.mkdir()
    events.symlink_to(folder)
    doc = check(cli("outcome", memory.id, "--signal", "helpful", "--json"), ExitCode.STORAGE)
    assert "the events folder memories/.events/ is a symlink" in doc["error"]["message"]
    assert list(folder.iterdir()) == []


def test_a_fifo_in_place_of_an_events_file_never_blocks(ws: Workspace) -> None:
    memory = ws.remember("Run make lint before pushing.")
    os.mkfifo(ws.root / "memories" / ".events" / f"{memory.id}.jsonl")
    for args in (["outcome", memory.id, "--signal", "helpful"], ["memory", "list"], ["why", memory.id]):
        proc = run_ee_process(*args, "--json", cwd=ws.root, timeout=60)
        if args[0] == "outcome":
            assert proc.returncode == ExitCode.STORAGE, proc.stderr
            assert "not a regular file" in json.loads(proc.stdout)["error"]["message"]
        else:
            assert proc.returncode == 0, proc.stderr


def test_every_id_derived_from_a_file_name_is_one_ee_accepts(ws: Workspace, cli: Cli) -> None:
    # Such names used to give ids that memory list showed and every command taking an id refused
    # ("is not a memory id"); a name of 250 characters or a deep folder made memory list fail outright
    # (the events file name, <id>.jsonl, was too long for the file system).
    folder = ws.root / "memories"
    deep = folder.joinpath(*["d"] * 120)
    deep.mkdir(parents=True)
    names = {
        "notes.md": "notes",  # a valid id stays as it was
        "_draft.md": None,
        "v1..2.md": None,
        ":x.md": None,
        "a" * 240 + ".md": None,
    }
    for name in names:
        (folder / name).write_text(f"body of {name[:20]}\n")
    (deep / "deep.md").write_text("the deep one\n")
    listed = check(cli("memory", "list", "--json"))["data"]["memories"]
    ids = {m["path"]: m["id"] for m in listed}
    assert len(ids) == 6
    assert len(set(ids.values())) == 6
    assert ids["memories/notes.md"] == "notes"
    assert ids["memories/_draft.md"].startswith("draft-")
    assert ids["memories/v1..2.md"].startswith("v1.2-")
    for memory_id in ids.values():
        assert len(memory_id) <= 128
        shown = check(cli("memory", "show", memory_id, "--json"))
        assert shown["data"]["id"] == memory_id
        check(cli("outcome", memory_id, "--signal", "helpful", "--json"))
    hits = check(cli("search", "the deep one", "--json"))["data"]["hits"]
    assert hits[0]["id"] == ids[(deep / "deep.md").relative_to(ws.root).as_posix()]


@pytest.mark.parametrize("folder", ["memories", ".ee"])
def test_a_committed_link_out_of_the_repository_is_refused(tmp_path: Path, folder: str) -> None:
    # git checks a committed symlink out as a link. memories -> a home folder: ee used to index and print
    # every *.md below it, and ee init wrote into it. .ee -> a folder: ee wrote its index, cache, lock
    # (truncating a file named "lock" there) and logs into it.
    outside = tmp_path / "home"
    (outside / "notes").mkdir(parents=True)
    (outside / "notes" / "private.md").write_text("PRIVATE notes of the person who cloned\n")
    (outside / "lock").write_text("precious\n")
    upstream = tmp_path / "upstream"
    git(tmp_path, "init", "-q", "-b", "main", str(upstream))
    (upstream / folder).symlink_to(outside)
    (upstream / "notes").mkdir()
    (upstream / "notes" / "a.md").write_text("A memory of the repository.\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "link")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    if folder == ".ee":
        (clone / "memories").mkdir()
    before = sorted(
        (p.relative_to(outside), p.read_bytes() if p.is_file() else b"") for p in outside.rglob("*")
    )
    for args in (
        ["init"],
        ["search", "private notes"],
        ["context", "private notes"],
        ["memory", "list"],
        ["index", "status"],
        ["doctor"],
        ["remember", "a new memory"],
    ):
        res = run_ee_process(*args, "--json", cwd=clone, timeout=60, env={"EE_NO_SERVER": ""})
        assert res.returncode == ExitCode.STORAGE, (args, res.stdout, res.stderr)
        doc = json.loads(res.stdout)
        validator("ee.error.v1").validate(doc)
        message = f"{folder}/ is a symlink, committed to git, to a folder outside the repository"
        assert message in doc["error"]["message"]
        assert f"git rm {folder}" in doc["error"]["repair"]
        assert "PRIVATE" not in res.stdout + res.stderr
    after = sorted(
        (p.relative_to(outside), p.read_bytes() if p.is_file() else b"") for p in outside.rglob("*")
    )
    assert after == before  # nothing written there
    # The repair, as printed, gives a working store.
    git(clone, "rm", "-q", folder)
    git(clone, "commit", "-q", "-m", f"{folder}: a folder, not a link")
    assert run_ee_process("init", cwd=clone).returncode == 0
    res = run_ee_process("remember", "a new memory", "--json", cwd=clone)
    assert res.returncode == 0, res.stderr


def test_a_link_a_person_made_to_a_store_elsewhere_is_followed(
    ws: Workspace, tmp_path: Path, cli: Cli
) -> None:
    # Only a link git tracks is refused: one made here (the store kept elsewhere on this machine) is theirs.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "kept.md").write_text("Kept in a folder of my own.\n")
    shutil.rmtree(ws.root / "memories")
    (ws.root / "memories").symlink_to(elsewhere)
    listed = check(cli("memory", "list", "--json"))["data"]["memories"]
    assert [m["body"] for m in listed] == ["Kept in a folder of my own."]


def test_control_characters_are_shown_not_obeyed_by_a_terminal(ws: Workspace, cli: Cli) -> None:
    # A pulled memory's text reached the terminal as it was: ESC ] 52 sets the clipboard, ESC ] 0 the
    # window title, ESC [ 2J clears the screen. Text formats show each control as its escape; JSON, which
    # escapes them itself, keeps the text as it is.
    body = "Deploy \x1b[2J\x1b]0;pwned\x07 with \x1b]52;c;ZWNobyBoaQ==\x07 make release\rhidden"
    folder = ws.root / "memories"
    (folder / "ansi.md").write_text(f'---\nkind: rule\ntags: ["t\\e[31mred"]\n---\n{body}\n')
    (folder / "bad\x1b]0;T\x07.md").write_text("---\nkind: [\n---\nx\n")
    for args in (
        ["search", "deploy", "--human"],
        ["context", "deploy", "--format", "markdown"],
        ["context", "deploy", "--format", "compact"],
        ["memory", "show", "ansi", "--human"],
        ["memory", "list", "--human"],
        ["doctor", "--human"],
        ["import", "jsonl", "missing\x1b]0;T\x07.jsonl", "--human"],
    ):
        res = cli(*args)
        assert not any(c in res.out + res.err for c in "\x1b\x07\r"), (args, res.out, res.err)
        assert "\\x1b]" in res.out + res.err, args
    shown = check(cli("memory", "show", "ansi", "--json"))["data"]
    assert shown["body"] == body
    assert shown["tags"] == ["t\x1b[31mred"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A 1 MiB tmpfs (root only, where mounts are allowed), unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, check=False
        ).returncode
        != 0
    ):
        pytest.skip("needs root and a mountable tmpfs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_or_read_only_disk_is_a_storage_error_not_a_traceback(small_disk: Path) -> None:
    root = small_disk / "ws"
    root.mkdir()
    git(root, "init", "-q")
    Workspace.init(root)
    (root / "memories" / "release.md").write_text("Release with make release.\n")  # never indexed yet
    with (small_disk / "filler").open("wb", buffering=0) as filler, contextlib.suppress(OSError):
        while True:  # fill the disk to the last block
            filler.write(b"\0" * 4096)
    proc = run_ee_process("search", "release", "--json", cwd=root)
    assert proc.returncode == ExitCode.STORAGE, proc.stderr
    assert json.loads(proc.stdout)["error"]["message"].startswith("no space left on the device")
    assert "Traceback" not in proc.stderr
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = run_ee_process("remember", "Another fact.", cwd=root)
    assert proc.returncode == ExitCode.STORAGE, proc.stderr
    assert "error: the file system is read-only" in proc.stderr
    assert "Traceback" not in proc.stderr
    from ee.mcp.invoke import call_tool  # the MCP server's tool call: the same error, not "internal"
    from ee.mcp.mapping import available_tools

    remember = next(tool for tool in available_tools() if tool.name == "remember")
    outcome = call_tool(remember, {"text": "Another fact."}, str(root), "agent")
    assert not outcome.ok
    assert outcome.document["error"]["code"] == "storage"
    assert outcome.document["error"]["message"].startswith("the file system is read-only")
