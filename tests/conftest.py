"""Shared fixtures: real git repositories in temporary folders, and the CLI run in-process."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ee.cli import main
from ee.workspace import Workspace

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No global git config, a fixed identity, no inherited ee settings."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Test Person")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "test@example.com")
    # The client passes NO_COLOR, COLUMNS and LINES to a server: none may leak in from the outside.
    for var in (
        "EE_WORKSPACE",
        "EE_AGENT",
        "EE_MODEL",
        "EE_FORMAT",
        "EE_LOCK_TIMEOUT",
        "EE_NO_SERVER",
        "NO_COLOR",
        "COLUMNS",
        "LINES",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EE_NO_SERVER", "1")  # tests run in-process unless they start a server themselves
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _no_server_left_running(tmp_path: Path) -> Any:
    """A test that starts ``ee watch`` (by hand or on demand) stops it: one left running fails the test
    (and is stopped here)."""
    yield
    left = [
        root
        for pid_file in (".ee/watch.pid", "*/.ee/watch.pid", "*/*/.ee/watch.pid")
        for root in {path.parent.parent for path in tmp_path.glob(pid_file)}
        if stop_server(root)
    ]
    assert not left, f"the test left ee watch running in {left}"


def stop_server(root: Path, timeout: float = 60) -> bool:
    """Stop the ``ee watch`` of ``root`` — one started on demand too, even while it is starting — and
    wait until it is gone; whether one ran."""
    from ee.serve.watch import watcher_pid

    deadline = time.monotonic() + timeout
    stopped = False
    while time.monotonic() < deadline:
        pid = watcher_pid(root)
        if pid is not None and pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            stopped = True
        elif not _start_lock_held(root):
            return stopped
        else:
            stopped = True  # started on demand, not yet watching: wait for it
        time.sleep(0.05)
    raise AssertionError(f"ee watch of {root} did not stop")


def _start_lock_held(root: Path) -> bool:
    """Is ``.ee/serve.lock`` held (by a server started on demand, for its whole life)?"""
    try:
        fd = os.open(root / ".ee/serve.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)

    @property
    def data(self) -> Any:
        doc = self.json
        assert doc["success"] is True, doc
        return doc["data"]


def run_cli(*args: str, input: str | None = None, cwd: Path | None = None) -> Result:  # noqa: A002
    """Run ``ee ARGS`` in-process through the real entry point (exit codes and error envelopes included)."""
    runner = CliRunner()
    old = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with runner.isolation(input=input) as (out, err, _mixed):
            code = main(list(args))
            return Result(code, out.getvalue().decode(), err.getvalue().decode())
    finally:
        os.chdir(old)


def run_ee_process(
    *args: str,
    cwd: Path,
    input: str | None = None,  # noqa: A002 - subprocess's name for it
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run ``ee`` as a real process (for concurrency, crashes, hooks)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ee", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )


def read_terminal(master: int) -> bytes:
    """Everything written to a pseudo-terminal until its child closes it (``master`` is then closed)."""
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    return seen


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def make_repo(root: Path, files: dict[str, str] | None = None, commit: bool = True) -> Path:
    """A git repository at ``root`` holding ``files`` (path → text), committed when ``commit``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if commit and files:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A fresh ee workspace in a new git repository."""
    workspace, _ = Workspace.init(tmp_path / "ws")
    return workspace


@pytest.fixture
def cli(ws: Workspace) -> Any:
    """``cli("memory", "list", "--json")`` runs ee in the workspace and returns the Result."""

    def invoke(*args: str, input: str | None = None) -> Result:  # noqa: A002
        return run_cli("--workspace", str(ws.root), *args, input=input)

    return invoke


def doctor_report(doc: dict[str, Any]) -> dict[str, Any]:
    """The report of ``ee doctor --json``: the data of a healthy answer, else (exit 4) the details of its
    ee.error.v1 envelope."""
    if doc["success"]:
        data: dict[str, Any] = doc["data"]
        return data
    assert doc["error"]["code"] == "doctor_found_problems", doc
    report: dict[str, Any] = doc["error"]["details"]["report"]
    assert report["healthy"] is False
    return report
