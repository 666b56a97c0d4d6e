"""``ee mcp serve`` over stdio, driven by the official SDK's client: every tool answers with the JSON the CLI
prints for the same store, and bad input gets a proper MCP error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ee.commands import Command
from ee.install import ee_command
from ee.mcp.tools import TOOLS
from ee.workspace import Workspace
from tests.conftest import run_cli

CLIENT_NAME = "Test Harness"  # → agent "test-harness" for writes that name no agent
PASSED_ENV = (
    "HOME",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_AUTHOR_NAME",
    "GIT_COMMITTER_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_EMAIL",
    "EE_NO_SERVER",
    "HF_HUB_OFFLINE",
)

Session = Any  # mcp.ClientSession (the SDK is an optional extra: imported inside the tests)


def serve(
    ws: Workspace, log: Path, scenario: Callable[[Session], Awaitable[None]], via_env: bool = False
) -> None:
    """Start `python -m ee mcp serve` on ``ws`` (named by --workspace, or by $EE_WORKSPACE when ``via_env``)
    and run ``scenario`` with an initialised client session."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client

    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    where = ["--workspace", str(ws.root)]
    if via_env:
        env["EE_WORKSPACE"], where = str(ws.root), []
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ee", "mcp", "serve", *where], env=env, cwd=str(log.parent)
    )

    async def main() -> None:
        with log.open("w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                info = types.Implementation(name=CLIENT_NAME, version="1.0")
                async with ClientSession(read, write, client_info=info) as session:
                    await session.initialize()
                    await scenario(session)

    try:
        anyio.run(main)
    except BaseException:
        sys.stderr.write(f"--- server stderr ---\n{log.read_text(encoding='utf-8', errors='replace')}")
        raise


async def call(session: Session, name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """(is_error, the envelope) — checking the text content is the same JSON as the structured content, on
    one line as ``--json`` prints it for a program (an agent reads it: indentation would be tokens)."""
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    document = json.loads(result.content[0].text)
    assert document == result.structured_content
    assert result.content[0].text == json.dumps(document, ensure_ascii=False)
    return bool(result.is_error), document


async def ok(session: Session, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    is_error, document = await call(session, name, arguments)
    assert not is_error, document
    assert document["schema"] == "ee.response.v1"
    assert document["success"] is True
    return document


def cli_json(ws: Workspace, *args: str, input: str | None = None) -> dict[str, Any]:  # noqa: A002
    result = run_cli("--workspace", str(ws.root), *args, "--json", input=input)
    return json.loads(result.out)


def diff(expected: Any, got: Any) -> str:
    import difflib

    lines = [json.dumps(doc, indent=1, sort_keys=True).splitlines() for doc in (expected, got)]
    return "\n".join(difflib.unified_diff(*lines, "cli", "mcp", lineterm="", n=2))


# ------------------------------------------------------------------------------------ the server


def test_every_tool_answers_as_the_cli(ws: Workspace, tmp_path: Path) -> None:
    """Each call is compared at once with the CLI on the same store (a later write changes standings)."""
    pairs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    seen: dict[str, Any] = {}

    async def same(name: str, arguments: dict[str, Any], *cli_args: str, input: str | None = None) -> Any:  # noqa: A002
        answer = await ok(session_of["s"], name, arguments)
        pairs.append((name, answer, cli_json(ws, *cli_args, input=input)))
        return answer["data"]

    session_of: dict[str, Session] = {}

    async def scenario(session: Session) -> None:
        session_of["s"] = session
        listed = await session.list_tools()
        assert [tool.name for tool in listed.tools] == [tool.name for tool in TOOLS]

        seen["human"] = cli_json(
            ws, "remember", "Releases are tagged vX.Y.Z on main", "--kind", "convention", "--tags", "release"
        )["data"]
        mine = await ok(
            session,
            "remember",
            {
                "text": "CI runs clippy with pedantic lints as errors; fix every warning before pushing",
                "level": "procedural",
                "kind": "rule",
                "tags": ["ci", "rust"],
                "paths": ["src/**/*.rs"],
            },
        )
        dashed = await ok(
            session,
            "remember",
            {"text": "--release builds strip debug symbols", "agent": "codex", "tags": ["build"]},
        )
        seen.update(mine=mine["data"], dashed=dashed["data"])
        memory_id = mine["data"]["id"]

        seen["search"] = await same(
            "search", {"text": "clippy warnings", "limit": 5}, "search", "clippy warnings", "--limit", "5"
        )
        seen["lexical"] = await same(
            "search",
            {"text": "release", "mode": "lexical", "tags": ["release"]},
            "search",
            "release",
            "--mode",
            "lexical",
            "--tag",
            "release",
        )
        document = {
            "version": "ee.query.v1",
            "query": {"text": "clippy", "mode": "lexical"},
            "tags": {"require": ["ci"]},
            "budget": {"maxResults": 3},
        }
        await same("search", {"query": document}, "search", "--query-file", "-", input=json.dumps(document))
        # Arguments given with a document override it, as options do on the command line.
        seen["overridden"] = await same(
            "search",
            {"query": document, "limit": 1, "mode": "hybrid"},
            "search",
            "--query-file",
            "-",
            "--limit",
            "1",
            "--mode",
            "hybrid",
            input=json.dumps(document),
        )
        await same("memory_show", {"memory_id": memory_id}, "memory", "show", memory_id)
        seen["list"] = await same("memory_list", {}, "memory", "list")
        await same(
            "memory_list",
            {"tags": ["ci"], "level": "procedural"},
            "memory",
            "list",
            "--tag",
            "ci",
            "--level",
            "procedural",
        )
        # (arguments only the command line took before: now described once, in COMMANDS)
        seen["agents"] = await same(
            "memory_list",
            {"agent": "codex", "trust": "agent_assertion", "since": "2000-01-01T00:00:00Z"},
            "memory",
            "list",
            "--agent",
            "codex",
            "--trust",
            "agent_assertion",
            "--since",
            "2000-01-01T00:00:00Z",
        )
        await same("memory_list", {"quarantined": True}, "memory", "list", "--quarantined")
        await same(
            "search",
            {"text": "clippy", "min_relevance": 0},
            "search",
            "clippy",
            "--min-relevance",
            "0",
        )
        await same(
            "context",
            {"task": "src/lint.rs", "for_paths": True, "max_tokens": 400},
            "context",
            "src/lint.rs",
            "--for-paths",
            "--max-tokens",
            "400",
        )
        seen["session"] = await same(
            "context",
            {"for_session": True, "max_tokens": 400},
            "context",
            "--for-session",
            "--max-tokens",
            "400",
        )
        seen["history"] = await same(
            "memory_history", {"memory_id": memory_id}, "memory", "history", memory_id
        )
        why = {"memory_id": memory_id, "query": "clippy", "as_of": "HEAD"}  # as of a commit: a fixed clock
        await same("why", why, "why", memory_id, "--query", "clippy", "--as-of", "HEAD")
        await same(
            "context",
            {"task": "fix the failing clippy lint in CI", "max_tokens": 800},
            "context",
            "fix the failing clippy lint in CI",
            "--max-tokens",
            "800",
        )
        seen["outcome"] = await ok(
            session, "outcome", {"memory_id": memory_id, "signal": "helpful", "reason": "the lint rule held"}
        )
        now = await same("why", {"memory_id": memory_id}, "why", memory_id)  # feedback shows in its standing
        seen["why_feedback"] = now["standing"]

    serve(ws, tmp_path / "server.log", scenario)

    for name, answer, expected in pairs:
        if name == "why" and "as_of" not in answer["data"]["history"]:
            for doc in (answer, expected):
                doc["data"]["standing"].pop("reference_time")  # "now", to the second: not the same call
        assert answer == expected, f"{name}:\n{diff(expected, answer)}"
    # writes: the agent is named (the client's name unless one is given); the store holds what was returned
    assert seen["human"]["trust"] == "human_explicit"
    mine, dashed = seen["mine"], seen["dashed"]
    assert mine["trust"] == dashed["trust"] == "agent_assertion"
    assert dashed["body"] == "--release builds strip debug symbols"  # a leading dash stays text
    for memory in (mine, dashed):
        shown = cli_json(ws, "memory", "show", memory["id"])["data"]
        assert shown.pop("derived") == []  # every value of a file ee wrote is the file's
        assert 0 < shown.pop("effective_confidence") <= 1  # (the value search weighs)
        assert shown == memory
    assert [v.get("actor") for v in seen["history"]["versions"]] == ["agent:test-harness"]
    assert cli_json(ws, "memory", "history", dashed["id"])["data"]["versions"][0]["actor"] == "agent:codex"
    outcome = seen["outcome"]["data"]
    assert outcome["event"]["memory"] == mine["id"]
    assert outcome["event"]["source"] == "agent:test-harness"
    assert seen["why_feedback"]["feedback"]["helpful"] == 1
    # and the reads found what they should
    assert seen["search"]["hits"][0]["id"] == mine["id"]
    assert [hit["id"] for hit in seen["lexical"]["hits"]] == [seen["human"]["id"]]
    assert seen["overridden"]["query"]["mode"] == "hybrid"  # the document said lexical
    assert seen["overridden"]["returned"] == 1
    assert seen["list"]["count"] == 3
    assert [m["id"] for m in seen["agents"]["memories"]] == [dashed["id"]]
    assert seen["session"]["counts"]["items"] >= 1  # the rule, with no relevance floor


def test_bad_input_gets_an_mcp_error(ws: Workspace, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    answers: dict[str, Any] = {}

    async def scenario(session: Session) -> None:
        from mcp import types
        from mcp.shared.exceptions import MCPError

        answers["type"] = await call(session, "search", {"text": "x", "limit": "ten"})
        answers["unknown_argument"] = await call(session, "memory_list", {"colour": "blue"})
        answers["missing"] = await call(session, "outcome", {"memory_id": "mem_x"})
        answers["enum"] = await call(session, "outcome", {"memory_id": "mem_x", "signal": "great"})
        answers["bad_document"] = await call(
            session, "search", {"query": {"version": "ee.query.v1", "query": {"text": "x", "mode": "fuzzy"}}}
        )
        answers["both"] = await call(
            session, "search", {"text": "x", "query": {"version": "ee.query.v1", "query": {"text": "y"}}}
        )
        answers["not_found"] = await call(session, "memory_show", {"memory_id": "mem_01NOSUCHMEMORY"})
        with pytest.raises(MCPError) as caught:
            await session.call_tool("forget_everything", {})
        answers["unknown_tool"] = caught.value.code == types.INVALID_PARAMS

    serve(ws, tmp_path / "server.log", scenario)

    for key in ("type", "unknown_argument", "missing", "enum", "bad_document"):
        is_error, document = answers[key]
        assert is_error, key
        assert document["schema"] == "ee.error.v1"
        assert document["error"]["code"] == "usage", (key, document)
        assert document["error"]["repair"]
    assert "limit" in answers["type"][1]["error"]["message"]
    assert "colour" in answers["unknown_argument"][1]["error"]["message"]
    # failures of the call itself carry ee's error envelope, in the tool's own terms
    is_error, both = answers["both"]
    cli_both = cli_json(
        ws,
        "search",
        "x",
        "--query-file",
        "-",
        input=json.dumps({"version": "ee.query.v1", "query": {"text": "y"}}),
    )
    assert is_error
    assert both["error"]["code"] == cli_both["error"]["code"] == "query_invalid"
    assert both["error"]["message"] == "give text or query, not both"
    assert answers["not_found"] == (True, cli_json(ws, "memory", "show", "mem_01NOSUCHMEMORY"))
    assert answers["not_found"][1]["error"]["code"] == "not_found"
    assert answers["unknown_tool"]


def test_a_secret_in_any_part_of_a_call_never_comes_back_unmasked(ws: Workspace, tmp_path: Path) -> None:
    """An agent pastes a token where a tool name, an id, a value or a key goes: every error ee answers
    names the place, not the token (the unknown tool's name came back whole)."""
    pytest.importorskip("mcp")
    token = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    answers: list[str] = []

    async def scenario(session: Session) -> None:
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError) as caught:
            await session.call_tool(f"search_{token}", {})
        answers.append(f"{caught.value} {caught.value.error.data}")
        for name, arguments in (
            ("memory_show", {"memory_id": token}),
            ("search", {"text": "x", "mode": token}),
            ("search", {"text": "x", token: 1}),
            ("memory_list", {"tag": [token]}),
            ("search", {"query": {"version": "ee.query.v1", "query": {"text": "x"}, "asOf": token}}),
        ):
            is_error, document = await call(session, name, arguments)
            assert is_error, (name, document)
            answers.append(json.dumps(document))

    serve(ws, tmp_path / "server.log", scenario)
    assert "unknown tool" in answers[0]
    for answer in answers:
        assert token not in answer, answer
        assert token[:12] not in answer, answer


def test_manifest_is_what_the_server_lists(cli: Any, ws: Workspace, tmp_path: Path) -> None:
    listed: list[dict[str, Any]] = []

    async def scenario(session: Session) -> None:
        result = await session.list_tools()
        listed.extend(tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in result.tools)

    serve(ws, tmp_path / "server.log", scenario, via_env=True)
    manifest = cli("mcp", "manifest", "--json").data
    assert manifest["server"]["command"] == [*ee_command(), "mcp", "serve"]
    assert Path(manifest["server"]["command"][0]).is_absolute()  # an MCP client's PATH may lack ee
    for entry, tool in zip(manifest["tools"], listed, strict=True):
        entry.pop("cli")
        assert entry == tool


# ------------------------------------------------------------------------------------ no server needed


def test_manifest_describes_each_tool(cli: Any) -> None:
    result = cli("mcp", "manifest", "--json")
    assert result.code == 0, result.err
    tools = {tool["name"]: tool for tool in result.data["tools"]}
    assert list(tools) == [
        "context",
        "search",
        "remember",
        "outcome",
        "why",
        "memory_show",
        "memory_list",
        "memory_history",
        "curate_list",
        "curate_show",
        "curate_propose",
        "curate_scan",
        "import_docs",
        "curate_accept",
        "curate_reject",
        "curate_snooze",
    ]
    for tool in tools.values():
        assert tool["inputSchema"]["type"] == "object"
        assert len(tool["description"]) > 100
        assert tool["cli"]["command"][0] == "ee"
    search = tools["search"]["inputSchema"]
    assert search["properties"]["query"]["title"] == "ee.query.v1"  # the shipped schema, embedded
    assert "stringArray" in search["$defs"]
    assert search["properties"]["mode"]["enum"] == ["hybrid", "lexical", "semantic", "exact"]  # from click
    assert tools["outcome"]["inputSchema"]["required"] == ["memory_id", "signal"]
    assert tools["remember"]["annotations"]["readOnlyHint"] is False
    assert tools["search"]["annotations"]["readOnlyHint"] is True
    human = cli("mcp", "manifest", "--human").out
    assert "context" in human
    assert f"claude mcp add --scope project ee -- {ee_command()[0]} " in human  # a snippet to paste
    assert json.dumps(ee_command()[0]) in human


def test_embedded_query_schema_validates_like_the_shipped_one() -> None:
    import jsonschema

    from ee.mcp.mapping import input_schema
    from ee.mcp.tools import TOOLS

    tool = next(tool for tool in TOOLS if tool.name == "search")
    schema = input_schema(tool)
    good = {
        "query": {
            "version": "ee.query.v1",
            "query": {"text": "x"},
            "tags": {"require": ["a"]},
            "filters": {"kind": {"in": ["rule", "fact"]}},
        }
    }
    jsonschema.Draft202012Validator(schema).validate(good)
    bad = {"query": {"version": "ee.query.v1", "query": {"text": "x"}, "tags": {"require": "a"}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)


def _tool(name: str) -> Command:
    return next(tool for tool in TOOLS if tool.name == name)


def test_a_tool_call_is_answered_by_the_library_not_the_cli(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No tool runs ``ee.cli.main`` and parses its output: each calls the workspace façade, and its answer
    is the envelope the CLI prints for the same call."""
    import ee.cli
    from ee.mcp.invoke import call_tool

    expected = {
        "search": cli_json(ws, "search", "release tags", "--mode", "lexical"),
        "memory_list": cli_json(ws, "memory", "list"),
    }

    def no_cli(argv: Any = None) -> int:
        raise AssertionError(f"the MCP server ran the CLI: {argv}")

    monkeypatch.setattr(ee.cli, "main", no_cli)
    searched = call_tool(_tool("search"), {"text": "release tags", "mode": "lexical"}, str(ws.root))
    listed = call_tool(_tool("memory_list"), {}, str(ws.root))
    assert (searched.ok, searched.document) == (True, expected["search"])
    assert (listed.ok, listed.document) == (True, expected["memory_list"])
    written = call_tool(_tool("remember"), {"text": "-", "kind": "rule"}, str(ws.root), agent="codex")
    assert written.ok, written.document
    assert written.document["data"]["body"] == "-"  # text, never "read standard input"
    assert written.document["data"]["trust"] == "agent_assertion"


def test_serve_without_the_sdk_says_how_to_install_it(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    result = cli("mcp", "serve")  # stdout is not a terminal: the error comes as JSON
    assert result.code == 3
    error = result.json["error"]
    assert error["code"] == "configuration"
    assert "pipx install --force 'eidetic-engine[mcp]'" in error["repair"]


def test_the_core_cli_does_not_import_the_sdk(ws: Workspace) -> None:
    code = (
        "import sys; from ee.cli import main;"
        "main(['--workspace', sys.argv[1], 'mcp', 'manifest', '--json']);"
        "sys.exit(3 if 'mcp' in sys.modules or 'anyio' in sys.modules else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ws.root)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["data"]["tools"]


def test_text_that_is_not_utf8_is_a_usage_error_of_the_call(ws: Workspace) -> None:
    """A "\\udcff" escape in a call's JSON (no file, commit or tokenizer takes it) names the argument."""
    from ee.mcp.invoke import call_tool

    bad = "\udcff"
    for name, arguments, where in (
        ("search", {"text": f"{bad} x"}, "text"),
        ("remember", {"text": "ok", "tags": [bad]}, "tags.0"),
        ("search", {"query": {"version": "ee.query.v1", "query": {"text": bad}}}, "query.query.text"),
    ):
        answer = call_tool(_tool(name), arguments, str(ws.root))
        assert not answer.ok
        assert answer.document["error"]["code"] == "usage", answer.document
        assert answer.document["error"]["details"]["path"] == where
    assert ws.list()[0] == []


def test_manifest_names_the_workspace_it_runs_in(cli: Any, ws: Workspace, tmp_path: Path) -> None:
    """The snippet for other clients names this workspace, not a placeholder (issue 36, item 8)."""
    from tests.conftest import run_cli

    data = cli("mcp", "manifest", "--json").data
    assert data["server"]["workspace"] == str(ws.root)
    human = cli("mcp", "manifest", "--human").out
    assert f'"--workspace", "{ws.root}"' in human
    assert "/path/to/repo" not in human
    outside = run_cli("mcp", "manifest", "--json", cwd=tmp_path)  # no workspace here: the tools all the same
    assert outside.code == 0, outside.err
    assert outside.data["server"]["workspace"] is None
    assert outside.data["tools"] == data["tools"]


def test_every_curate_command_is_a_tool_and_only_a_person_decides(ws: Workspace) -> None:
    """Each `ee curate` command, and `ee import docs`, is an MCP tool: the ones an agent may use answer,
    accept, reject and snooze refuse (a person decides)."""
    import click

    from ee.cli import cli as ee_cli
    from ee.mcp.invoke import call_tool
    from ee.mcp.tools import REFUSED

    group = ee_cli.get_command(click.Context(ee_cli), "curate")
    assert isinstance(group, click.Group)
    names = {tool.name for tool in TOOLS}
    for verb in group.list_commands(click.Context(group)):
        assert f"curate_{verb}" in names, f"`ee curate {verb}` is not an MCP tool"
    assert "import_docs" in names
    assert [tool.name for tool in REFUSED] == ["curate_accept", "curate_reject", "curate_snooze"]
    for tool in REFUSED:
        refused = call_tool(tool, {"candidate_id": "cand_0000000000000000"}, str(ws.root), agent="codex")
        assert not refused.ok
        assert refused.document["error"]["code"] == "policy_denied"


def test_an_agent_proposes_from_docs_and_nothing_is_written(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MCP import_docs answers as `ee import docs` does (a relative file is the repository's, whatever the
    server's current folder), proposes only, and curate_scan finds the same candidates."""
    from ee.mcp.invoke import call_tool

    (ws.root / "AGENTS.md").write_text(
        "# Working here\n\n- Always run `make test` before pushing.\n\n```sh\nmake lint\n```\n",
        encoding="utf-8",
    )
    head = git_head(ws)
    monkeypatch.chdir(tmp_path)  # (not the repository: AGENTS.md is not here)
    proposed = call_tool(_tool("import_docs"), {"files": ["AGENTS.md"]}, str(ws.root), agent="codex")
    assert proposed.ok, proposed.text
    expected = run_cli("--workspace", str(ws.root), "import", "docs", "AGENTS.md", "--json", cwd=ws.root)
    assert proposed.document == expected.json
    data = proposed.document["data"]
    assert data["files"] == ["AGENTS.md"]
    assert sorted(c["evidence"][0]["ref"] for c in data["candidates"]) == ["AGENTS.md:3", "AGENTS.md:6"]
    assert git_head(ws) == head
    assert list((ws.root / "memories").glob("*.md")) == []
    scanned = call_tool(_tool("curate_scan"), {"docs": True}, str(ws.root), agent="codex")
    assert scanned.ok, scanned.text
    docs = {c["id"] for c in scanned.document["data"]["candidates"] if c["type"] == "docs"}
    assert docs == {c["id"] for c in data["candidates"]}
    # the tool allows what the command allows: at least one file, each a non-empty text
    for bad in ({}, {"files": []}, {"files": [""]}, {"files": "AGENTS.md"}):
        refused = call_tool(_tool("import_docs"), bad, str(ws.root))
        assert not refused.ok
        assert refused.document["error"]["code"] == "usage", bad
    outside = call_tool(_tool("import_docs"), {"files": ["../elsewhere.md"]}, str(ws.root))
    assert not outside.ok
    assert "outside the repository" in outside.document["error"]["message"]


def git_head(ws: Workspace) -> str:
    return subprocess.run(
        ["git", "-C", str(ws.root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
