"""The click-free fast path of the hot commands (ee.cli.params, ee.cli._run_fast) against click itself.

The fast parser may decline any line (click then parses it), but a line it accepts must give exactly the
parameters click gives, and the words before the command must be read as the group ``ee`` reads them.
Then real ``ee`` processes: the same output, errors and exit codes whichever way the line was parsed, and
no click import on the fast path.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ee.cli import _split_command
from ee.cli.context_cmds import COMMANDS as CONTEXT_COMMANDS
from ee.cli.params import Command, Option, click_command, parse
from ee.cli.query_cmds import COMMANDS as QUERY_COMMANDS
from ee.cli.remember_cmds import COMMANDS as REMEMBER_COMMANDS
from ee.errors import QueryError
from ee.workspace import Workspace

COMMANDS: dict[str, Command] = {**QUERY_COMMANDS, **CONTEXT_COMMANDS, **REMEMBER_COMMANDS}
CLICK = {name: click_command(command) for name, command in COMMANDS.items()}


def click_params(name: str, args: list[str]) -> dict[str, Any] | None:
    """The parameters click passes to the command for ``args``; None when click refuses the line (or
    prints help)."""
    try:
        with CLICK[name].make_context(name, list(args)) as ctx:
            return dict(ctx.params)
    except (click.ClickException, click.exceptions.Exit):
        return None


def check(name: str, args: list[str]) -> dict[str, Any] | None:
    fast = parse(COMMANDS[name], args)
    if fast is not None:
        expected = click_params(name, args)
        assert expected is not None, f"fast path accepted a line click refuses: {args}"
        # repr: types count (1 is not 1.0 nor True), and a NaN equals a NaN
        assert repr(sorted(fast.items())) == repr(sorted(expected.items())), args
    return fast


# Lines the fast path must take (and get right).
PLAIN = {
    "search": [
        ["flaky test retry"],
        ["flaky", "--json"],
        ["--json", "flaky"],
        ["flaky", "--human"],
        ["flaky", "--json", "--human"],
        ["flaky", "--mode", "lexical", "--limit", "5"],
        ["flaky", "--mode=semantic", "--limit=1"],
        ["--tag", "ci", "flaky", "--tag", "rust", "--tag=a=b"],
        ["flaky", "--explain", "--as-of", "HEAD~3", "--level", "procedural", "--kind", "rule"],
        ["flaky", "--speed", "instant", "--fields", "full", "--format", "toon"],
        ["--query-file", "-"],
        ["--batch", "queries.jsonl", "--json"],
        ["--", "--not-an-option"],
        ["flaky", "--kind", "--json"],  # a value may look like an option, as in click
        ["flaky", "--kind", "-"],
        ["-"],
        [""],
        ["flaky", "--limit", " 7"],
        ["flaky", "--limit", "+7"],
        ["flaky", "--limit", "1_000"],
        ["flaky", "--mode", "exact", "--mode", "hybrid"],
        [],
    ],
    "context": [
        ["fix", "the", "flaky", "test"],
        ["fix", "--max-tokens", "2000", "--profile", "compact", "--json"],
        ["--quota", "procedural=0.5", "--quota", "rule=2", "task"],
        ["-", "--format", "hook"],
        ["--for-staged"],
        ["--for-paths", "src/a.py", "src/b.py"],
        ["--for-branch", "--explain", "--fields", "minimal", "--as-of", "2026-01-01"],
        ["task", "--mode", "lexical", "--speed", "quality", "--tag", "ci"],
        ["--query-file", "q.json", "--human"],
        ["a", "--", "--b", "-c"],
        [],
    ],
    "remember": [
        ["Always retry flaky tests once"],
        ["text", "--kind", "rule", "--tags", "ci,lint", "--json"],
        ["text", "--level", "procedural", "--confidence", "0.7", "--source", "a", "--source", "b"],
        ["text", "--valid-from", "2026-01-01T00:00:00Z", "--valid-to", "2027-01-01T00:00:00Z"],
        ["text", "--link", "supports:mem_1", "--path", "src/*.py", "--path", "docs/*", "--agent", "codex"],
        ["text", "--redact", "--confidence=1", "--confidence", "0"],
        ["-"],
        ["--", "-starts with a dash"],
    ],
    "why": [["mem_1"], ["mem_1", "--query", "q", "--profile", "wide", "--as-of", "HEAD", "--json"]],
    "pack": [["--query-file", "q.json", "--max-tokens", "10"]],
    "outcome": [["mem_1", "--signal", "helpful", "--reason", "it worked", "--agent", "codex", "--json"]],
}

# Lines click must parse (help, mistakes, what the fast parser does not read): it declines them.
DECLINED = {
    "search": [
        ["--help"],
        ["flaky", "-h"],
        ["one", "two"],
        ["flaky", "--mode", "fuzzy"],
        ["flaky", "--mode", "Lexical"],
        ["flaky", "--limit", "0"],
        ["flaky", "--limit", "x"],
        ["flaky", "--limit", "1.5"],
        ["flaky", "--limit"],
        ["flaky", "--explain=yes"],
        ["flaky", "--json=1"],
        ["flaky", "--exp"],
        ["flaky", "--unknown"],
        ["-5"],
        ["flaky", "-W", "dir"],
        ["flaky", "---mode", "lexical"],
    ],
    "context": [["--max-tokens", "0"], ["--profile", "nope"], ["--help"], ["--for-staged=1"]],
    "remember": [
        [],
        ["a", "b"],
        ["text", "--confidence", "1.5"],
        ["text", "--confidence", "-0.1"],
        ["text", "--confidence", "x"],
        ["text", "--level", "nope"],
        ["--help"],
    ],
    "why": [[], ["a", "b"]],
    "pack": [[], ["--max-tokens", "3"]],
    "outcome": [["mem_1"], ["mem_1", "--signal", "meh"]],
}


@pytest.mark.parametrize(("name", "args"), [(n, a) for n, lines in PLAIN.items() for a in lines])
def test_plain_lines_take_the_fast_path_with_clicks_values(name: str, args: list[str]) -> None:
    assert check(name, args) is not None


@pytest.mark.parametrize(("name", "args"), [(n, a) for n, lines in DECLINED.items() for a in lines])
def test_help_and_mistakes_go_to_click(name: str, args: list[str]) -> None:
    assert parse(COMMANDS[name], args) is None


def test_numbers_convert_as_click_converts_them() -> None:
    for text in ("nan", "inf", "1e-1", " 0.5 ", "0", "1", "-0", "1_0", "٠٫٥", "0x1"):
        check("remember", ["t", "--confidence", text])
    for text in ("٣", " 3", "3 ", "0003", "-1", "9" * 40, "3.0", ""):
        check("search", ["t", "--limit", text])


def test_declarations_name_parameters_as_click_does() -> None:
    for name, command in COMMANDS.items():
        click_names = [param.name for param in CLICK[name].params if param.name != "help"]
        assert [param.name for param in command.params] == click_names
        for param in command.params:
            if isinstance(param, Option):
                clicked = next(p for p in CLICK[name].params if p.name == param.name)
                assert set(param.names) == {*clicked.opts, *clicked.secondary_opts}


def _words(command: Command) -> list[str]:
    words = ["--", "-", "", "-h", "--help", "-W", "--unknown", "x", "y z", "=", "-5", "5", "0", "0.5", "1.5"]
    words += ["nan", " 2", "+2", "٣", "lexical", "Lexical", "hybrid", "toon", "helpful", "wide", "a=b", "--e"]
    for param in command.params:
        if isinstance(param, Option):
            for spelling in param.names:
                words += [spelling, f"{spelling}=", f"{spelling}=1", f"{spelling}=x"]
                words += [f"{spelling}={choice}" for choice in param.choices or ()]
            words += list(param.choices or ())
    return words


@pytest.mark.parametrize("name", sorted(COMMANDS))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_line_the_fast_path_takes_gives_clicks_values(name: str, data: st.DataObject) -> None:
    words = _words(COMMANDS[name])
    args = data.draw(st.lists(st.one_of(st.sampled_from(words), st.text(max_size=4)), max_size=8))
    check(name, args)


# --- the words before the command ----------------------------------------------------------------------


def group_reading(args: list[str]) -> tuple[str | None, str, list[str]] | None:
    """(the --workspace, the command's name, the words after it) as the click group reads ``args``."""
    from ee.cli import cli

    try:
        with cli.make_context("ee", list(args), resilient_parsing=False) as ctx:
            rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
            return (ctx.params["workspace"], rest[0], rest[1:]) if rest else None
    except (click.ClickException, click.exceptions.Exit):
        return None


GROUP_LINES = [
    ["search", "x"],
    ["-W", "dir", "search", "x", "-W", "y"],
    ["--workspace", "dir", "context", "a"],
    ["--workspace=dir", "remember", "t"],
    ["-Wdir", "search"],
    ["-W=dir", "search"],
    ["-W", "a", "--workspace", "b", "search", "--json"],
    ["--workspace", "--json", "search"],
    ["-W", "", "search"],
]


@pytest.mark.parametrize("args", GROUP_LINES)
def test_the_group_options_are_read_as_click_reads_them(args: list[str]) -> None:
    assert _split_command(args) is not None
    assert _split_command(args) == group_reading(args)


@pytest.mark.parametrize("args", [[], ["--version"], ["-h", "search"], ["--help"], ["-W"], ["--", "search"]])
def test_anything_else_before_the_command_goes_to_click(args: list[str]) -> None:
    assert _split_command(args) is None


@settings(max_examples=400, deadline=None)
@given(
    args=st.lists(
        st.sampled_from(
            ["-W", "--workspace", "--workspace=d", "-Wd", "-W=d", "--version", "-h", "--help", "--"]
        )
        | st.sampled_from(["search", "context", "x", "-", "", "--json", "-x", "--w"]),
        max_size=6,
    )
)
def test_any_line_split_by_the_fast_path_is_split_as_click_splits_it(args: list[str]) -> None:
    split = _split_command(args)
    if split is not None:
        assert split == group_reading(args)


# --- real processes --------------------------------------------------------------------------------------

CLICK_MAIN = "import sys; from ee.cli import main; sys.exit(main(sys.argv[1:]))"  # argv given: click parses


def run_both(ws: Workspace, *args: str, stdin: str = "") -> tuple[subprocess.CompletedProcess[str], ...]:
    env = dict(os.environ, COLUMNS="100")
    runs = []
    for launcher in (["-m", "ee"], ["-c", CLICK_MAIN]):
        runs.append(
            subprocess.run(
                [sys.executable, "-X", "importtime", *launcher, "--workspace", str(ws.root), *args],
                input=stdin,
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )
        )
    return tuple(runs)


def clicked(proc: subprocess.CompletedProcess[str]) -> bool:
    """Whether the process imported click (from ``-X importtime``'s report)."""
    imported = (
        line.rsplit("|", 1)[-1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    )
    return "click" in imported


def without_importtime(stderr: str) -> str:
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("import time:"))


def same_result(fast: subprocess.CompletedProcess[str], slow: subprocess.CompletedProcess[str]) -> None:
    assert fast.returncode == slow.returncode
    assert without_importtime(fast.stderr) == without_importtime(slow.stderr)
    assert without_clock(fast.stdout) == without_clock(slow.stdout)


def without_clock(stdout: str) -> str:
    """``ee why`` reports the moment it judged the memory (``reference_time``): the two runs differ there."""
    return re.sub(r'"reference_time": "[^"]*"', '"reference_time": "…"', stdout)


@pytest.fixture
def stocked(ws: Workspace) -> Workspace:
    for text, kind in (
        ("Retry flaky tests once before failing CI", "rule"),
        ("Use ruff for linting", "fact"),
    ):
        ws.remember(text, kind=kind, tags=["ci"])
    return ws


@pytest.mark.parametrize(
    "args",
    [
        ("search", "flaky tests", "--mode", "lexical", "--json"),
        ("search", "flaky tests", "--mode=lexical", "--format", "markdown"),
        ("search", "ruff", "--mode", "exact", "--format", "toon", "--tag", "ci"),
        ("search", "--mode", "lexical", "--json"),  # nothing to search for: a usage error, exit 2
        ("search", "--query-file", "missing.json", "--json"),  # not found, exit 7
        ("search", "x", "--mode", "lexical", "--as-of", "not a time"),
        ("context", "fix", "flaky", "tests", "--mode", "lexical", "--json"),
        ("context", "fix", "the build", "--mode", "lexical", "--format", "markdown", "--max-tokens", "50"),
        ("context", "--quota", "oops", "--mode", "lexical"),
    ],
)
def test_the_fast_path_answers_as_click_does(stocked: Workspace, args: tuple[str, ...]) -> None:
    fast, slow = run_both(stocked, *args)
    assert not clicked(fast), fast.stderr
    assert clicked(slow)
    same_result(fast, slow)


@pytest.mark.parametrize(
    "args",
    [
        ("search", "x", "--mode", "fuzzy"),
        ("search", "x", "--limit", "0", "--json"),
        ("search", "--help"),
        ("context", "--max-tokens"),
        ("remember", "a", "b"),
        ("remember", "--confidence", "2", "t"),
    ],
)
def test_lines_it_declines_get_clicks_messages(stocked: Workspace, args: tuple[str, ...]) -> None:
    fast, slow = run_both(stocked, *args)
    assert clicked(fast)
    same_result(fast, slow)


def test_remember_on_the_fast_path_writes_the_same_memory(stocked: Workspace) -> None:
    fast, slow = run_both(
        stocked, "remember", "Pin the ruff version", "--kind", "rule", "--tags", "ci,lint", "--json"
    )
    assert not clicked(fast), fast.stderr
    assert (fast.returncode, slow.returncode) == (0, 0)
    a, b = json.loads(fast.stdout)["data"], json.loads(slow.stdout)["data"]
    assert a["id"] != b["id"]
    for key in ("id", "path", "created"):
        a.pop(key), b.pop(key)
    assert a == b
    assert a["kind"] == "rule" and a["tags"] == ["ci", "lint"]  # noqa: PT018
    refused = run_both(stocked, "remember", "token ghp_" + "a1B2" * 9, "--json")
    same_result(*refused)
    assert refused[0].returncode == 6


def test_pack_why_and_outcome_on_the_fast_path(stocked: Workspace, tmp_path: Path) -> None:
    memory_id = stocked.remember("Prefer small commits", kind="rule").id
    query = tmp_path / "q.json"
    query.write_text(
        json.dumps({"schema": "ee.query.v1", "query": {"text": "flaky tests", "mode": "lexical"}})
    )
    for args in (
        ("pack", "--query-file", str(query), "--max-tokens", "200", "--json"),
        ("pack", "--query-file", str(query), "--format", "markdown"),
        ("why", memory_id, "--json"),
        ("why", "mem_NOSUCHMEMORY", "--json"),  # not found, exit 7
        ("outcome", memory_id, "--signal", "bogus"),  # click's message
    ):
        fast, slow = run_both(stocked, *args)
        assert clicked(fast) == (args[-1] == "bogus"), (args, fast.stderr)
        same_result(fast, slow)
    fast, slow = run_both(
        stocked, "outcome", memory_id, "--signal", "helpful", "--reason", "it held", "--json"
    )
    assert not clicked(fast), fast.stderr
    assert (fast.returncode, slow.returncode) == (0, 0)
    assert json.loads(fast.stdout)["data"].keys() == json.loads(slow.stdout)["data"].keys()


def test_a_closed_pipe_ends_as_with_click(stocked: Workspace, tmp_path: Path) -> None:
    """Output to a reader that went away: exit 1, nothing printed about it (click's ending)."""
    codes = []
    for launcher in (["-m", "ee"], ["-c", CLICK_MAIN]):
        script = (
            f"{sys.executable} {' '.join(repr(w) for w in launcher)} --workspace {stocked.root} "
            "search flaky --mode lexical --format markdown | true; echo ${PIPESTATUS[0]}"
        )
        proc = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False
        )
        codes.append((proc.stdout, "Traceback" in proc.stderr))
    assert codes[0] == codes[1]


# --- what a command raises ------------------------------------------------------------------------------


def _raising(exc: BaseException) -> Command:
    def run(root: str | None, **params: Any) -> None:
        raise exc

    search = QUERY_COMMANDS["search"]
    return Command("search", run, search.params)


@pytest.mark.parametrize(
    "exc",
    [
        KeyboardInterrupt(),
        EOFError(),
        BrokenPipeError(32, "Broken pipe"),
        QueryError("no such thing", "try another"),
        OSError(5, "Input/output error"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_what_a_command_raises_ends_as_clicks_run_ends_it(
    exc: BaseException, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ee.cli import _run_fast, cli
    from ee.cli.group import run as click_run

    command = _raising(exc)
    cli.get_command(click.Context(cli), "search")  # the real one registered first
    monkeypatch.setitem(cli._commands, "search", click_command(command))
    monkeypatch.setitem(QUERY_COMMANDS, "search", command)
    results = []
    for runner in (_run_fast, click_run):
        stdout, stderr = sys.stdout, sys.stderr
        try:
            code: Any = runner(["search", "x", "--json"])
        except OSError as error:  # not a closed pipe: both let it through (a crash, with its traceback)
            code = ("raised", error.errno)
        except SystemExit as end:
            code = ("exit", end.code, type(sys.stdout).__name__ != type(stdout).__name__)
        finally:
            sys.stdout, sys.stderr = stdout, stderr
        captured = capsys.readouterr()
        results.append((code, captured.out, captured.err))
    assert results[0] == results[1]


@pytest.mark.parametrize(
    "message", ["", "plain", "two\nlines\n", "ünïcödé 日本", "\x1b[1mbold\x1b[0m", "\r\n"]
)
@pytest.mark.parametrize(("nl", "err"), [(True, False), (False, False), (True, True), (False, True)])
def test_echo_writes_what_click_echo_writes(
    message: str, nl: bool, err: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    from ee.cli import echo

    echo(message, nl=nl, err=err)
    ours = capsys.readouterr()
    click.echo(message, nl=nl, err=err)
    assert ours == capsys.readouterr()


@pytest.mark.parametrize(
    ("args", "short"),
    [
        (["search", "x"], True),
        (["-W", "d", "context", "x"], True),
        (["remember", "x"], True),
        (["outcome", "mem_1", "--signal", "helpful"], True),
        (["search", "--batch", "q.jsonl"], False),  # may run any number of queries
        (["import", "jsonl", "f.jsonl"], False),  # one commit of any number of memories
        (["index", "rebuild"], False),
        (["--version"], False),
    ],
)
def test_which_processes_run_without_the_cyclic_collector(args: list[str], short: bool) -> None:
    from ee.cli import _short_lived

    assert _short_lived(args) is short
