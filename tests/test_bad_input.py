"""Hostile and broken input: each a clear error (file:line where a file is at fault), the right exit code,
and no damage — the other memories still load and no file changes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
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
from tests.conftest import Result, git, run_ee_process

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
    problems = doc["data"]["problems"]
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
    dup = [p for p in doc["data"]["problems"] if p["code"] == "duplicate_id"]
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
    problems = check(cli("doctor", "--json"), ExitCode.STORAGE)["data"]["problems"]
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
