"""The machine contract of the CLI: help everywhere, documented commands and exit codes, data-only stdout,
JSON by default when piped, envelopes that validate, deterministic output, and the layering of the store."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from ee.cli import cli as root_command
from ee.errors import EeError, ExitCode
from ee.schemas import validator
from ee.workspace import Workspace
from tests.conftest import REPO_ROOT, Result, doctor_report, run_ee_process

Cli = Callable[..., Result]


def leaf_commands(
    group: click.Group = root_command, prefix: str = "ee"
) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            yield path, command
            yield from leaf_commands(command, path)
        else:
            yield path, command


COMMANDS = list(leaf_commands())
# The commands of the store (issue 2): each option of theirs has help text too.
STORE_COMMANDS = {"init", "remember", "import", "export", "doctor", "schema", "memory"}


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[p for p, _ in COMMANDS])
def test_every_command_has_help(path: str, command: click.Command, cli: Cli) -> None:
    assert (command.help or command.short_help or "").strip(), f"{path} has no help text"
    store_command = path.split()[1] in STORE_COMMANDS
    for param in command.params if store_command else ():
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help or param.is_flag or param.name in ("help",), f"{path} {param.opts} has no help"
    result = cli(*path.split()[1:], "--help")
    assert result.code == 0, result.err
    assert result.out.startswith(f"Usage: {path}")


LEAVES = [(path, command) for path, command in COMMANDS if not isinstance(command, click.Group)]


@pytest.mark.parametrize(("path", "command"), LEAVES, ids=[p for p, _ in LEAVES])
def test_every_command_help_has_an_example(path: str, command: click.Command, cli: Cli) -> None:
    """Every command (walked from click's tree: one added later too) shows how it is called."""
    help_text = cli(*path.split()[1:], "--help").out
    examples = [line.strip() for line in help_text.splitlines() if line.strip().startswith("Example: ")]
    assert examples, f"{path} --help has no 'Example: …' line"
    example = examples[0].removeprefix("Example: ")
    assert example == path or example.startswith(path + " "), examples


def _readme() -> str:
    path = REPO_ROOT / "README.md"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _docs() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted((REPO_ROOT / "docs").glob("*.md")))


def _missing_from_readme() -> list[str]:
    """Every command in the README; the hidden ones (git hooks call them) may be in docs/ instead."""
    readme = _readme().splitlines()
    with_docs = readme + _docs().splitlines()
    missing = []
    for path, command in COMMANDS:
        if isinstance(command, click.Group) and command.commands:
            continue  # the group is documented through its commands
        lines = with_docs if command.hidden else readme
        *parent, leaf = path.split()
        parent_text = " ".join(parent)
        # `ee memory tags` literally, or on one line `ee hooks install/uninstall` style.
        if not any(
            path in line or (parent_text in line and re.search(rf"\b{re.escape(leaf)}\b", line))
            for line in lines
        ):
            missing.append(path)
    return missing


def test_every_command_is_in_the_readme() -> None:
    assert _missing_from_readme() == []


def _exit_codes_missing_from_the_docs() -> list[int]:
    text = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    return [int(code) for code in ExitCode if not re.search(rf"^\|\s*{int(code)}\s*\|", text, re.MULTILINE)]


def test_every_exit_code_is_documented() -> None:
    """docs/cli.md has a row for each code; the README names each one."""
    assert _exit_codes_missing_from_the_docs() == []
    text = _readme()
    summary = text[text.index("\nExit codes: ") :].split("\n\n")[0]
    assert [int(n) for n in re.findall(r"\b(\d+) [a-z]", summary)] == [int(code) for code in ExitCode] + [40]


def test_the_commands_without_json_are_the_ones_the_readme_names() -> None:
    """The README: commands that print a result take --json/--human, but for the few it names."""
    without = sorted(
        path
        for path, command in COMMANDS
        if not (isinstance(command, click.Group) and command.commands)
        and not command.hidden
        and "--json" not in {opt for param in command.params for opt in getattr(param, "opts", [])}
    )
    text = _readme()
    paragraph = text[text.index("Commands that print a result take `--json`") :].split("\n\n")[0]
    named = sorted(set(re.findall(r"`(ee [a-z-]+(?: [a-z-]+)?)`", paragraph)))
    assert without == named


def test_the_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(((?:docs|bench)/[^)#]+)", _readme()):
        assert (REPO_ROOT / target).is_file(), target
    assert len(_readme().splitlines()) <= 250


def test_error_classes_have_distinct_exit_codes_and_codes() -> None:
    classes: list[type[EeError]] = []
    stack: list[type[EeError]] = [EeError]
    while stack:
        cls = stack.pop()
        classes.append(cls)
        stack.extend(cls.__subclasses__())
    for cls in classes:
        assert isinstance(cls.exit_code, ExitCode)
        assert re.fullmatch(r"[a-z][a-z0-9_]*", cls.code), cls
    direct = {cls.exit_code for cls in EeError.__subclasses__()}
    assert len(direct) == len(EeError.__subclasses__()), "each class of failure has its own exit code"


# --- stdout is data, JSON when piped


def _json_only(stdout: str) -> Any:
    doc = json.loads(stdout)  # exactly one document, nothing else on stdout
    validator("ee.response.v1" if doc["success"] else "ee.error.v1").validate(doc)
    return doc


def test_piped_output_is_json_by_default_and_logs_go_to_stderr(ws: Workspace) -> None:
    proc = run_ee_process("remember", "Piped output is JSON.", cwd=ws.root)
    assert proc.returncode == 0, proc.stderr
    memory_id = _json_only(proc.stdout)["data"]["id"]
    for args in (
        ["memory", "list"],
        ["memory", "show", memory_id],
        ["memory", "history", memory_id],
        ["memory", "tags", memory_id, "--add", "x"],
        ["doctor"],
        ["schema", "list"],
        ["init"],
    ):
        proc = run_ee_process(*args, cwd=ws.root)
        assert proc.returncode == 0, (args, proc.stderr)
        _json_only(proc.stdout)
    human = run_ee_process("memory", "list", "--human", cwd=ws.root)
    assert human.stdout.startswith(memory_id)
    env_human = run_ee_process("memory", "list", cwd=ws.root, env={"EE_FORMAT": "human"})
    assert env_human.stdout == human.stdout
    forced = run_ee_process("memory", "list", "--json", cwd=ws.root, env={"EE_FORMAT": "human"})
    _json_only(forced.stdout)


def test_errors_go_to_stderr_with_the_envelope_on_stdout(ws: Workspace, tmp_path: Path) -> None:
    cases = [
        (["memory", "show", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"], ws.root, ExitCode.NOT_FOUND, "not_found"),
        (["memory", "show", "../x"], ws.root, ExitCode.USAGE, "usage"),
        (["remember", "x", "--kind", "hunch"], ws.root, ExitCode.USAGE, "usage"),
        (["remember", "--level", "bad", "x"], ws.root, ExitCode.USAGE, "usage"),
        (["memory", "list"], tmp_path, ExitCode.CONFIG, "workspace_not_found"),
        (
            ["remember", "k ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"],
            ws.root,
            ExitCode.POLICY,
            "secret_detected",
        ),
    ]
    for args, cwd, code, error_code in cases:
        proc = run_ee_process(*args, cwd=cwd)
        assert proc.returncode == code, (args, proc.stderr)
        doc = _json_only(proc.stdout)
        assert doc["error"]["code"] == error_code
        assert proc.stderr.strip(), "the same failure in words on stderr"
        human = run_ee_process(*args, "--human", cwd=cwd)
        assert human.returncode == code
        assert human.stdout == ""
        assert "error" in human.stderr.lower()


def test_a_reader_that_goes_away_does_not_change_the_exit_code(ws: Workspace) -> None:
    """`ee … 2>&1 | head -1`: stdout and stderr are one pipe whose reader is gone before ee writes. An
    error keeps its documented code; an answer nobody reads any more ends as a success, never exit 1."""
    import os
    import subprocess
    import sys

    ws.remember("A memory about compilers.")
    (ws.root / "memories" / "broken.md").write_text("---\nlevel: cosmic\n---\nbody\n")  # export: skipped
    cases = [
        (["remember", "x", "--level", "bogus"], ExitCode.USAGE),
        (["remember", "x", "--level", "bogus", "--json"], ExitCode.USAGE),
        (["memory", "show", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"], ExitCode.NOT_FOUND),
        (["memory", "list", "--human"], ExitCode.OK),
        (["export", "jsonl"], ExitCode.OK),
        (["search", "compilers"], ExitCode.OK),
    ]
    for args, code in cases:
        read_end, write_end = os.pipe()
        os.close(read_end)  # gone before the first byte: every write meets a closed pipe
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "ee", *args],
                cwd=ws.root,
                stdout=write_end,
                stderr=write_end,
                check=False,
                timeout=120,
            )
        finally:
            os.close(write_end)
        assert proc.returncode == code, args


def test_conflict_and_storage_exit_codes(ws: Workspace) -> None:
    memory = ws.remember("Will be edited by hand.")
    path = ws.root / memory.path
    path.write_text(path.read_text() + "hand edit\n")
    proc = run_ee_process("memory", "expire", memory.id, cwd=ws.root)
    assert proc.returncode == ExitCode.CONFLICT
    assert _json_only(proc.stdout)["error"]["code"] == "conflict"
    (ws.root / "memories" / "bad.md").write_text("---\nlevel: x\n---\nb\n")
    proc = run_ee_process("doctor", cwd=ws.root)
    assert proc.returncode == ExitCode.STORAGE
    doctor = _json_only(proc.stdout)
    assert doctor["success"] is False  # a failing exit never says "success": true
    assert doctor_report(doctor)["healthy"] is False


def test_json_output_is_deterministic(ws: Workspace, cli: Cli) -> None:
    for n in range(5):
        ws.remember(f"Memory {n}.", tags=["b", "a"], source=["s"])
    first = cli("memory", "list", "--json").out
    assert cli("memory", "list", "--json").out == first
    assert cli("export", "jsonl").out == cli("export", "jsonl").out
    keys = list(json.loads(first)["data"]["memories"][0])
    assert keys[:4] == ["id", "path", "level", "kind"]


def test_version_and_bare_group(cli: Cli) -> None:
    result = cli("--version")
    assert result.code == 0
    assert result.out.startswith("ee, version ")
    assert cli("memory").code in (0, ExitCode.USAGE)


def test_the_remember_path_imports_nothing_heavy(ws: Workspace) -> None:
    code = (
        "import sys; from ee.cli import main; "
        "main(['remember', 'Imports stay light.', '--json']); "
        "heavy = sorted(m for m in ('git', 'numpy', 'bm25s', 'model2vec', 'ruamel.yaml', 'yaml', "
        "'jsonschema', 'watchdog', 'toon_format') if m in sys.modules); print(heavy, file=sys.stderr)"
    )
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ws.root, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"
