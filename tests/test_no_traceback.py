"""Every command and subcommand, walked from click's command tree (so a command added later is swept too),
run with missing, empty, unreadable and wrong-type arguments: each answers with a clear error and a
documented exit code, never a traceback (issue 36, item 6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from ee.cli import cli as root_command
from ee.errors import ExitCode
from ee.workspace import Workspace
from tests.conftest import run_cli, run_ee_process

# Commands that, given acceptable arguments, serve until stopped: only the values click itself refuses
# (a wrong type, an unknown choice) are tried on them, so the sweep cannot start a server.
SERVERS = {"watch", "mcp serve"}

DOCUMENTED = {int(code) for code in ExitCode} - {int(ExitCode.INTERNAL)}

FILE_TYPES = (click.Path, click.File)
NUMBER_TYPES = (click.types.IntParamType, click.types.FloatParamType)


def _leaves(group: click.Group = root_command, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from _leaves(command, (*prefix, name))
        else:
            yield (*prefix, name)


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command | None = root_command
    for name in path:
        assert isinstance(command, click.Group)
        command = command.get_command(click.Context(command), name)
    assert command is not None
    return command


def _bad_values(param: click.Parameter, tmp: Path) -> list[tuple[str, str]]:
    """(label, value) pairs this parameter must refuse clearly (or accept) — never crash on."""
    kind = param.type
    if isinstance(kind, click.Choice):
        return [("wrong-choice", "no-such-choice")]
    if isinstance(kind, NUMBER_TYPES):
        return [("wrong-type", "not-a-number"), ("negative", "-1")]
    if isinstance(kind, FILE_TYPES):
        garbage = tmp / "garbage.bin"
        garbage.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe{[\n")
        locked = tmp / "no-permission.txt"
        if not locked.exists():
            locked.write_text("hello\n")
            locked.chmod(0)  # (root reads it all the same: then it is one more ordinary file)
        return [
            ("empty", ""),
            ("missing-file", str(tmp / "no-such-file")),
            ("a-folder", str(tmp)),
            ("unreadable-bytes", str(garbage)),
            ("no-permission", str(locked)),
        ]
    if isinstance(kind, click.types.BoolParamType) or getattr(param, "is_flag", False):
        return []
    return [("empty", ""), ("wrong-id", "no-such-thing"), ("unreadable-bytes", "\x00\x01")]


def _filler(param: click.Parameter, tmp: Path) -> str:
    """An ordinary value for a required argument while another parameter is being tried."""
    kind = param.type
    if isinstance(kind, click.Choice):
        return str(kind.choices[0])
    if isinstance(kind, NUMBER_TYPES):
        return "1"
    if isinstance(kind, FILE_TYPES):
        return str(tmp / "no-such-file")
    return "no-such-thing"


def _invocations(path: tuple[str, ...], tmp: Path) -> Iterator[tuple[str, list[str]]]:
    command = _command(path)
    params = [p for p in command.params if p.name not in ("as_json", "help")]
    required = [p for p in params if isinstance(p, click.Argument) and p.required]
    required_options = [p for p in params if isinstance(p, click.Option) and p.required]
    server = " ".join(path) in SERVERS
    if (required or required_options) and not server:
        yield "missing-arguments", []
    for param in params:
        for label, value in _bad_values(param, tmp):
            if server and label not in ("wrong-choice", "wrong-type"):
                continue
            args: list[str] = []
            for other in required_options:
                if other is not param:
                    args += [other.opts[0], _filler(other, tmp)]
            if isinstance(param, click.Option):
                args += [param.opts[0], value]
            positional = [value if p is param else _filler(p, tmp) for p in required]
            if isinstance(param, click.Argument) and not param.required:
                positional.append(value)
            yield f"{param.name}={label}", [*args, "--", *positional] if positional else args


SWEPT = list(_leaves())
# Run with no arguments outside a workspace, these run at length (every scenario of ee's own checkout):
# they are swept with bad arguments only.
LONG_RUNNING = {"eval run"}


def test_every_command_outside_a_workspace_says_so(tmp_path: Path) -> None:
    """Run where there is no workspace (and no git repository), each command that needs one says so
    (exit 3 with the repair), and none shows a traceback."""
    problems = []
    for path in SWEPT:
        name = " ".join(path)
        if name in SERVERS or name in LONG_RUNNING:
            continue
        nowhere = tmp_path / "nowhere" / name.replace(" ", "-")  # (ee init makes its folder a workspace)
        nowhere.mkdir(parents=True)
        command = _command(path)
        args = [_filler(p, tmp_path) for p in command.params if isinstance(p, click.Argument) and p.required]
        for option in command.params:
            if isinstance(option, click.Option) and option.required:
                args = [option.opts[0], _filler(option, tmp_path), *args]
        result = run_cli(*path, *args, cwd=nowhere)
        shown = f"ee {name} {' '.join(args)} → {result.code}: {result.err.strip()[:300]}"
        if "Traceback" in result.err or result.code not in DOCUMENTED | {0}:
            problems.append(shown)
        elif result.code == ExitCode.CONFIG and "no ee workspace" not in result.err.lower():
            problems.append(f"exit 3 without naming the missing workspace — {shown}")
        elif result.code != 0 and not result.err.strip():
            problems.append(f"no message — {shown}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", SWEPT, ids=[" ".join(p) for p in SWEPT])
def test_every_command_refuses_bad_arguments_clearly(
    path: tuple[str, ...], ws: Workspace, tmp_path: Path
) -> None:
    ws.remember("Run make test before a release.", kind="rule", tags=["release"])
    problems = []
    for label, args in _invocations(path, tmp_path):
        result = run_cli(*path, *args, cwd=ws.root)  # (a bug is an "internal error", exit 1: caught below)
        shown = f"{label}: ee {' '.join(path)} {' '.join(args)!r} → {result.code}: {result.err.strip()[:300]}"
        if "Traceback" in result.err or "Traceback" in result.out:
            problems.append(f"traceback — {shown}")
        elif result.code not in DOCUMENTED | {0}:
            problems.append(f"undocumented exit code — {shown}")
        elif result.code != 0 and not result.err.strip():
            problems.append(f"no message — {shown}")
    assert not problems, "\n".join(problems)


def test_the_sweep_reaches_every_command_and_its_arguments(tmp_path: Path) -> None:
    swept = {" ".join(path) for path in SWEPT}
    assert {"merge-driver", "memory show", "search", "context", "eval beir", "schema export"} <= swept
    runs = dict(_invocations(("merge-driver",), tmp_path))
    assert runs["missing-arguments"] == []
    assert runs["base=missing-file"][1] == str(tmp_path / "no-such-file")


def test_merge_driver_with_missing_files_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_ee_process("merge-driver", "a", "b", "c", "d", cwd=tmp_path)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "'a' does not exist" in proc.stderr


def test_a_folder_ee_may_not_write_is_a_storage_error(ws: Workspace, tmp_path: Path) -> None:
    """``ee export jsonl -o`` into a folder ee may not write: exit 4 naming the place, no traceback (as a
    user without the permission: this process's own, or nobody's when the tests run as root)."""
    import errno
    import os
    import shutil
    import subprocess
    import sys

    from ee.errors import disk_failure

    mapped = disk_failure(PermissionError(errno.EACCES, "Permission denied", "/srv/x"))
    assert mapped is not None
    assert (mapped.exit_code, mapped.message) == (ExitCode.STORAGE, "permission denied: /srv/x")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o555)
    argv = [sys.executable, "-m", "ee", "--workspace", str(ws.root), "export", "jsonl"]
    argv += ["-o", str(closed / "x")]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: no user to lack the permission")
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        for folder in (tmp_path, *tmp_path.parents[:3]):
            folder.chmod(folder.stat().st_mode | 0o055)  # (nobody may reach the workspace)
        for path in (ws.root, *ws.root.rglob("*")):  # the workspace is nobody's: ee runs as its owner
            os.chown(path, 65534, 65534, follow_symlinks=False)
    env = {**os.environ, "EE_NO_SERVER": "1", "HOME": str(tmp_path)}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert "Traceback" not in proc.stderr
    assert proc.returncode == ExitCode.STORAGE, proc.stderr
    assert f"error: permission denied: {closed}/" in proc.stderr
