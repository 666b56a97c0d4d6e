"""The warm query server of ``ee watch`` and its client: same bytes as in-process, clean fallbacks."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

import pytest
from conftest import git, read_terminal, run_cli

from ee.serve.client import is_read_only, names_own_stream, parse_argv, try_server
from ee.workspace import Workspace

DEADLINE = 60.0
QUERY = '{"version": "ee.query.v1", "query": {"text": "alpha"}}'


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def ee(
    *args: str, cwd: Path, served: bool, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """``python -m ee ARGS`` as a real process; ``served`` lets it use the server (else EE_NO_SERVER=1)."""
    full = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"} | env
    if not served:
        full["EE_NO_SERVER"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "ee", *args],
        cwd=cwd,
        input=stdin.encode() if stdin is not None else None,
        capture_output=True,
        env=full,
        timeout=DEADLINE,
        check=False,
    )


def start_watcher(ws: Workspace, log: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """``ee watch`` serving ``ws``, its log (stderr) written to ``log`` if given."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ee", "--workspace", str(ws.root), "watch"],
        stdout=subprocess.DEVNULL,
        stderr=log if log is not None else subprocess.DEVNULL,
    )
    wait_for(lambda: (ws.root / ".ee/serve.sock").exists() or proc.poll() is not None, "the socket")
    assert proc.poll() is None
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=DEADLINE)


@pytest.fixture
def served_ws(ws: Workspace) -> Iterator[Workspace]:
    """A workspace with three memories (one committed) and a running ``ee watch``. The transformer arm is
    off: the server computes its vectors when idle and then answers with it, so an answer would change
    arm between a served and an in-process query without the store changing (tests/test_transformer.py
    checks served and in-process answers once the vectors are complete)."""
    (ws.root / ".ee/config.toml").write_text("[model]\ntransformer = false\n", encoding="utf-8")
    for name, body in (("a", "alpha rollback window"), ("b", "alpha bravo"), ("c", "charlie")):
        (ws.root / f"memories/{name}.md").write_text(f"---\nid: mem_{name}\ntags: [ci]\n---\n{body}\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "memories")
    proc = start_watcher(ws)
    yield ws
    stop(proc)


def served_directly(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> int | None:
    """``try_server`` in this process: an int when the server answered, None for a fallback."""
    monkeypatch.delenv("EE_NO_SERVER", raising=False)
    code = try_server(argv)
    capfd.readouterr()
    return code


# ------------------------------------------------------------------------------------------ same bytes


@pytest.mark.parametrize(
    "args",
    [
        ["search", "alpha", "--json"],
        ["search", "alpha rollback", "--mode", "lexical", "--json"],
        ["context", "alpha rollback", "--json"],
        ["context", "alpha rollback", "--format", "markdown"],
        ["memory", "list", "--json"],
        ["memory", "show", "mem_a", "--json"],
        ["memory", "show", "mem_nope", "--json"],  # an error: exit code and envelope too
        ["index", "status", "--json"],
        ["schema", "list", "--json"],
        ["search", "--query-file", "-", "--json"],
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_served_output_is_byte_identical_to_in_process(served_ws: Workspace, args: list[str]) -> None:
    stdin = QUERY if "-" in args else None
    served = ee(*args, cwd=served_ws.root, served=True, stdin=stdin)
    local = ee(*args, cwd=served_ws.root, served=False, stdin=stdin)
    assert served.returncode == local.returncode
    assert served.stdout == local.stdout
    assert served.stderr == local.stderr


def on_terminal(*args: str, cwd: Path, served: bool) -> str:
    """``python -m ee ARGS`` with its stdout on a real pseudo-terminal: what it printed there."""
    env = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"} | {"COLUMNS": "200"}
    if not served:
        env["EE_NO_SERVER"] = "1"
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "ee", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave
    )
    os.close(slave)
    seen = read_terminal(master)
    assert child.wait(timeout=DEADLINE) == 0
    return seen.decode().replace("\r\n", "\n")


@pytest.mark.parametrize("served", [True, False], ids=["served", "in-process"])
def test_json_is_indented_for_a_terminal_and_one_line_for_a_program(
    served_ws: Workspace, served: bool
) -> None:
    piped = ee("search", "alpha", "--json", cwd=served_ws.root, served=served)
    assert piped.returncode == 0
    assert piped.stdout.count(b"\n") == 1  # the whole envelope on one line
    shown = on_terminal("search", "alpha", "--json", cwd=served_ws.root, served=served)
    assert shown.startswith('{\n  "schema": "ee.response.v1",\n')
    assert json.loads(shown) == json.loads(piped.stdout)
    # the terminal's default is text for people; a program's the envelope
    assert not on_terminal("memory", "list", cwd=served_ws.root, served=served).startswith("{")
    listed = ee("memory", "list", cwd=served_ws.root, served=served)
    assert json.loads(listed.stdout)["success"] is True
    assert listed.stdout.count(b"\n") == 1
    # an error's envelope follows the same rule
    missing = ee("memory", "show", "mem_nope", "--json", cwd=served_ws.root, served=served)
    assert missing.returncode == 7
    assert missing.stdout.count(b"\n") == 1
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"


def test_requests_are_really_served(
    served_ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    argv = ["--workspace", str(served_ws.root), "search", "alpha", "--json"]
    assert served_directly(argv, monkeypatch, capfd) == 0
    assert served_directly(["-W", str(served_ws.root), "memory", "show", "mem_nope"], monkeypatch, capfd) == 7
    for writes in (
        ["memory", "tags", "mem_a", "--add", "x"],
        ["index", "rebuild"],
    ):
        assert served_directly(["--workspace", str(served_ws.root), *writes], monkeypatch, capfd) is None
    # ee remember is a write the server runs (with the client's environment: see the tests below)
    remember = ["--workspace", str(served_ws.root), "remember", "a new fact"]
    assert served_directly(remember, monkeypatch, capfd) == 0
    assert "a new fact" in git(served_ws.root, "show", "HEAD", "--", "memories")
    assert (
        served_directly(["--workspace", str(served_ws.root), "search", "--help"], monkeypatch, capfd) is None
    )


@pytest.mark.parametrize("how", ["stdin", "fd"])
def test_a_query_file_of_the_clients_own_is_read_by_the_client(served_ws: Workspace, how: str) -> None:
    """``--query-file /dev/stdin`` or ``<(…)`` (``/dev/fd/N``) name the client's own streams: the server
    would open its own instead (another file, or nothing), so the client runs such a command itself."""
    local = ee("search", "--query-file", "-", "--json", cwd=served_ws.root, served=False, stdin=QUERY)
    assert local.returncode == 0, local.stderr
    if how == "stdin":
        served = ee(
            "search", "--query-file", "/dev/stdin", "--json", cwd=served_ws.root, served=True, stdin=QUERY
        )
    else:
        read, write = os.pipe()
        os.write(write, QUERY.encode())
        os.close(write)
        env = {k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"}
        served = subprocess.run(
            [sys.executable, "-m", "ee", "search", "--query-file", f"/dev/fd/{read}", "--json"],
            cwd=served_ws.root,
            capture_output=True,
            env=env,
            pass_fds=(read,),
            timeout=DEADLINE,
            check=False,
        )
        os.close(read)
    assert served.returncode == 0, served.stderr
    assert served.stdout == local.stdout


def test_arguments_naming_a_fifo_a_device_or_proc_are_not_served(tmp_path: Path) -> None:
    """A FIFO opened by the server would hold the lock every served command takes until someone writes."""
    fifo = tmp_path / "query.fifo"
    os.mkfifo(fifo)
    (tmp_path / "query.json").write_text(QUERY)
    cwd = str(tmp_path)
    for argv in (
        ["search", "--query-file", "query.fifo"],
        ["search", f"--query-file={fifo}"],
        ["search", "--batch", "/dev/stdin"],
        ["search", "--query-file", "/proc/self/environ"],
        ["search", "--query-file", "/dev/null"],
    ):
        assert names_own_stream(argv, cwd), argv
    for argv in (
        ["search", "--query-file", "query.json"],
        ["search", "alpha", "--json"],
        ["search", "-", "--json"],
        ["--workspace", cwd, "search", "x\0y"],
        ["--workspace", "/dev/shm", "search", "x"],  # (a workspace on a tmpfs: anyone's path)
    ):
        assert not names_own_stream(argv, cwd), argv


def test_a_hook_check_is_served_with_its_standard_input(served_ws: Workspace) -> None:
    # `ee hook-check` reads the staged change from standard input with no '-' argument: the client must
    # send it (ee.serve.client.READS_STDIN), or the server would check an empty change.
    (served_ws.root / "memories/mig.md").write_text(
        "---\nid: mem_mig\nkind: anti-pattern\npaths: [db/migrations/*.sql]\n---\n"
        "Never run schema migrations outside a transaction.\n"
    )
    git(served_ws.root, "add", "-A")
    git(served_ws.root, "commit", "-q", "-m", "an anti-pattern")
    change = "1\0db/migrations/001.sql\0ALTER TABLE t;\n"
    served = ee("hook-check", "pre-commit", cwd=served_ws.root, served=True, stdin=change)
    local = ee("hook-check", "pre-commit", cwd=served_ws.root, served=False, stdin=change)
    assert (served.returncode, served.stdout, served.stderr) == (local.returncode, local.stdout, local.stderr)
    assert b"anti-pattern mem_mig" in served.stderr
    probe = (
        "import sys, ee.serve.client; "
        "print(ee.serve.client.try_server(sys.argv[1:]), 'ee.cli' in sys.modules)"
    )
    direct = subprocess.run(
        [sys.executable, "-c", probe, "hook-check", "pre-commit"],
        cwd=served_ws.root,
        input=change.encode(),
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"},
        timeout=DEADLINE,
        check=True,
    )
    assert direct.stdout.decode().split()[-2:] == ["0", "False"]  # answered by the server, CLI not loaded
    assert b"anti-pattern mem_mig" in direct.stderr


def test_a_hook_check_sees_a_memory_written_since_its_table_was_built(ws: Workspace) -> None:
    """The pre-commit check's table is checked against the memory files as they are (an index view it
    opens), not against the index manifest, which lags them until ``ee watch`` updates it (here no
    watcher runs at all): a risk memory written just before the commit is found."""
    change = "1\0db/migrations/001.sql\0ALTER TABLE t;\n"
    ws.remember("Deploys go through the release train.", kind="rule")
    first = ee("hook-check", "pre-commit", cwd=ws.root, served=False, stdin=change)
    assert first.returncode == 0
    assert first.stderr == b""  # no risk memory yet; the table is built and saved
    (ws.root / "memories/mig.md").write_text(
        "---\nid: mem_mig\nkind: anti-pattern\npaths: [db/migrations/*.sql]\n---\n"
        "Never run schema migrations outside a transaction.\n"
    )
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "an anti-pattern")
    second = ee("hook-check", "pre-commit", cwd=ws.root, served=False, stdin=change)
    assert second.returncode == 0
    assert b"anti-pattern mem_mig" in second.stderr


def test_client_settings_and_directory_apply_to_the_request(served_ws: Workspace) -> None:
    sub = served_ws.root / "memories"
    for env in ({"EE_FORMAT": "human"}, {"EE_FORMAT": "json"}):
        served = ee("search", "alpha", cwd=sub, served=True, **env)  # the workspace found from the cwd
        local = ee("search", "alpha", cwd=sub, served=False, **env)
        assert served.returncode == local.returncode == 0
        assert served.stdout == local.stdout
    assert b"mem_a" in served.stdout


def test_an_edit_is_seen_by_the_next_served_query(served_ws: Workspace) -> None:
    (served_ws.root / "memories/c.md").write_text("---\nid: mem_c\n---\nalpha now mentioned\n")
    served = ee("search", "alpha", "--json", cwd=served_ws.root, served=True)
    assert {h["id"] for h in json.loads(served.stdout)["data"]["hits"]} == {"mem_a", "mem_b", "mem_c"}


def test_concurrent_clients_get_the_same_answers(served_ws: Workspace) -> None:
    local = ee("search", "alpha", "--json", cwd=served_ws.root, served=False)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda _: ee("search", "alpha", "--json", cwd=served_ws.root, served=True), range(8))
        )
    assert {r.stdout for r in results} == {local.stdout}


def test_socket_is_private_to_its_owner(served_ws: Workspace) -> None:
    mode = (served_ws.root / ".ee/serve.sock").stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


# ------------------------------------------------------------------------------------------ fallbacks


def test_a_stale_socket_falls_back_in_process(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (ws.root / ".ee/config.toml").write_text("[server]\nautostart = false\n")  # (see test_autostart.py)
    (ws.root / "memories/a.md").write_text("---\nid: mem_a\n---\nalpha\n")
    path = ws.root / ".ee/serve.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: connection refused
    argv = ["--workspace", str(ws.root), "search", "alpha", "--json"]
    assert served_directly(argv, monkeypatch, capfd) is None
    result = ee(*argv, cwd=ws.root, served=True)
    assert result.returncode == 0
    assert result.stdout == ee(*argv, cwd=ws.root, served=False).stdout
    assert result.stderr == b""  # (a stale socket of ours is no warning)

    path.unlink()
    path.write_text("not a socket")
    assert served_directly(argv, monkeypatch, capfd) is None
    assert not (ws.root / ".ee/watch.pid").exists()  # autostart = false: nothing was started


def test_a_killed_server_falls_back_and_a_new_watcher_takes_over(
    served_ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    (served_ws.root / ".ee/config.toml").write_text("[server]\nautostart = false\n")
    argv = ["--workspace", str(served_ws.root), "search", "alpha", "--json"]
    pid = int((served_ws.root / ".ee/watch.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not _alive(pid), "the watcher to die")
    assert (served_ws.root / ".ee/serve.sock").exists()  # left behind
    assert served_directly(argv, monkeypatch, capfd) is None
    assert ee(*argv, cwd=served_ws.root, served=True).returncode == 0

    proc = start_watcher(served_ws)
    try:
        wait_for(lambda: served_directly(argv, monkeypatch, capfd) == 0, "the new server")
    finally:
        stop(proc)


def test_no_server_variable_and_no_workspace(
    served_ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EE_NO_SERVER", "1")
    assert try_server(["--workspace", str(served_ws.root), "search", "alpha"]) is None
    monkeypatch.delenv("EE_NO_SERVER")
    monkeypatch.chdir(tmp_path)
    assert try_server(["search", "alpha"]) is None  # no workspace up from here: the CLI says so itself


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


# ------------------------------------------------------------------------------------------ client


def test_parse_argv_finds_the_workspace_and_the_command() -> None:
    assert parse_argv(["search", "x"]) == (None, ("search", None))
    assert parse_argv(["-W", "/w", "memory", "show", "id"]) == ("/w", ("memory", "show"))
    assert parse_argv(["--workspace=/w", "index", "status"]) == ("/w", ("index", "status"))
    assert parse_argv(["-W/w", "why", "id"]) == ("/w", ("why", None))
    assert parse_argv(["--version"]) == (None, None)
    assert parse_argv([]) == (None, None)
    assert is_read_only(("search", None))
    assert is_read_only(("memory", "history"))
    assert not is_read_only(("memory", "forget"))
    assert not is_read_only(("remember", None))
    assert not is_read_only(("index", "rebuild"))
    assert not is_read_only(None)


def test_the_client_imports_nothing_heavy() -> None:
    code = (
        "import sys, ee.serve.client\n"
        "heavy = {'click', 'numpy', 'yaml', 'ruamel', 'watchdog', 'ee.cli', 'ee.workspace'}\n"
        "print(sorted(m for m in sys.modules if m in heavy or m.split('.')[0] in heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------------------ served writes


def _normalised(text: str, memory_id: str) -> str:
    """``text`` with what differs between two remembers of the same thing (id, its suffix, time) masked."""
    import re

    text = text.replace(memory_id, "mem_ID").replace(memory_id[-8:].lower(), "SUFFIX")
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "TIME", text)


def _last_commit(root: Path) -> tuple[str, str]:
    """(author and committer of HEAD, its message) and the id it names."""
    shown = git(root, "log", "-1", "--format=%an|%ae|%cn|%ce%n%B")
    memory_id = next(line.split(": ")[1] for line in shown.splitlines() if line.startswith("Ee-Memory: "))
    return shown, memory_id


def test_served_remember_is_the_in_process_remember(
    served_ws: Workspace, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The client's identity differs from the watcher's (its own HOME, git config and author variables),
    # and its umask too: the served commit and file must be the client's, as in-process.
    home = tmp_path / "client-home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Config Name\n\temail = config@example.com\n")
    client_env = {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "Client Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "EE_AGENT": "codex",
    }
    args = ["remember", "run the linter before pushing", "--tags", "ci,lint", "--kind", "rule", "--json"]
    for name in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(name)  # the committer comes from the client's git config
    for name, value in client_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("EE_NO_SERVER")
    monkeypatch.chdir(served_ws.root / "memories")
    old_mask = os.umask(0o027)
    try:
        capfd.readouterr()
        assert try_server(args) == 0  # served (None would mean it ran nowhere)
        served_out = capfd.readouterr().out
    finally:
        os.umask(old_mask)
    served_commit, served_id = _last_commit(served_ws.root)
    served_file = next(served_ws.root.glob(f"memories/*{served_id[-8:].lower()}.md"))
    served_text, served_mode = served_file.read_text(), stat.S_IMODE(served_file.stat().st_mode)
    # The same text remembered again would be a duplicate (no file, a confirmation): make room for it.
    git(served_ws.root, "rm", "-q", str(served_file))
    git(served_ws.root, "commit", "-q", "-m", "forget the served memory")

    full = {k: v for k, v in os.environ.items() if k not in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")}
    local = subprocess.run(
        [sys.executable, "-m", "ee", *args],
        cwd=served_ws.root / "memories",
        capture_output=True,
        env=full | client_env | {"EE_NO_SERVER": "1"},
        umask=0o027,
        timeout=DEADLINE,
        check=True,
    )
    local_commit, local_id = _last_commit(served_ws.root)
    local_file = next(served_ws.root.glob(f"memories/*{local_id[-8:].lower()}.md"))

    assert served_id != local_id
    assert _normalised(served_out, served_id) == _normalised(local.stdout.decode(), local_id)
    assert _normalised(served_commit, served_id) == _normalised(local_commit, local_id)
    assert served_commit.startswith("Client Author|author@example.com|Config Name|config@example.com\n")
    assert "Ee-Actor: agent:codex" in served_commit
    assert _normalised(served_text, served_id) == _normalised(local_file.read_text(), local_id)
    assert served_mode == stat.S_IMODE(local_file.stat().st_mode) == 0o640
    assert os.umask(0o022) == 0o022  # (the test process's own umask is back; only the request had 027)
    assert not git(served_ws.root, "status", "--porcelain", "--", "memories")  # both committed, nothing left


def test_served_remember_errors_are_the_in_process_ones(served_ws: Workspace) -> None:
    secret = "deploy token ghp_R8x2LmQ9vT4kW7nB3cY6pZ1sD5fH0jK2aE9u for CI"
    for args in (["remember", secret, "--json"], ["remember", "x", "--level", "nope", "--json"]):
        served = ee(*args, cwd=served_ws.root, served=True)
        local = ee(*args, cwd=served_ws.root, served=False)
        assert served.returncode == local.returncode != 0
        assert served.stdout == local.stdout
        assert served.stderr == local.stderr
    assert not git(served_ws.root, "status", "--porcelain")


def test_a_served_write_whose_answer_is_lost_is_an_error_not_a_second_write(served_ws: Workspace) -> None:
    # The server dies in the middle of the commit: the client cannot know whether it happened, so it
    # says so (exit 8) instead of running the write again in-process.
    head = git(served_ws.root, "rev-parse", "HEAD")
    args = ("remember", "lost in the crash", "--json")
    result = ee(*args, cwd=served_ws.root, served=True, EE_CRASH_AT="git.commit")
    assert result.returncode == 8
    assert b"may or may not" in result.stderr
    assert json.loads(result.stdout)["success"] is False
    assert git(served_ws.root, "rev-parse", "HEAD") == head  # (killed before HEAD moved: not written twice)


def test_a_served_remember_is_seen_by_the_next_served_query(served_ws: Workspace) -> None:
    for word in ("xray", "yankee", "whiskey", "victor", "tango"):
        made = ee("remember", f"{word} fact", "--json", cwd=served_ws.root, served=True)
        assert made.returncode == 0
        memory_id = json.loads(made.stdout)["data"]["id"]
        found = ee("search", word, "--mode", "lexical", "--json", cwd=served_ws.root, served=True)
        assert [h["id"] for h in json.loads(found.stdout)["data"]["hits"]] == [memory_id]


# ------------------------------------------------------------------------------------------ no stale answer


def test_served_queries_see_every_change_at_once(served_ws: Workspace) -> None:
    """Change the store, then query through the server at once: the same bytes as in-process, every round
    (the server answers from the view it holds only while its inotify queue is empty)."""
    root = served_ws.root
    main = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "other")
    (root / "memories/c.md").write_text("---\nid: mem_c\ntags: [ci]\n---\nalpha on the other branch\n")
    git(root, "commit", "-q", "-am", "other")
    git(root, "checkout", "-q", main)

    def edit(i: int) -> None:
        (root / "memories/a.md").write_text(f"---\nid: mem_a\ntags: [ci]\n---\nalpha edit{i}\n")

    def replace(i: int) -> None:
        tmp = root / "memories/.a.tmp"
        tmp.write_text(f"---\nid: mem_a\ntags: [ci]\n---\nalpha replaced{i}\n")
        os.replace(tmp, root / "memories/a.md")

    def delete(i: int) -> None:
        path = root / "memories/b.md"
        if path.exists():
            path.unlink()
        else:
            path.write_text(f"---\nid: mem_b\n---\nalpha bravo back{i}\n")

    def folder(i: int) -> None:
        (root / f"memories/new{i}").mkdir()
        (root / f"memories/new{i}/n.md").write_text(f"---\nid: mem_n{i}\n---\nalpha new{i}\n")

    def checkout(i: int) -> None:
        git(root, "checkout", "-q", "other" if i % 2 == 0 else main)

    def commit(i: int) -> None:
        edit(i)
        git(root, "commit", "-q", "-am", f"commit {i}")

    for change in (edit, replace, delete, folder, checkout, commit):
        for i in range(6):
            change(i)
            served = ee("search", "alpha", "--json", cwd=root, served=True)
            local = ee("search", "alpha", "--json", cwd=root, served=False)
            assert served.stdout == local.stdout, f"{change.__name__} round {i}"
    git(root, "checkout", "-q", main)


def test_the_warm_up_runs_the_queries_and_both_hook_checks(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ee watch``'s server answers a search, a context and, where ee's git hooks are installed, the two
    warm hooks' checks before its first client, so the first commit's hooks find the hook table and the
    index loaded; none of them fails."""
    from ee.hooks import run as hook_run
    from ee.serve.server import Server

    ws.remember("Run the migrations before deploying.", kind="rule", tags=["db"])
    logged: list[str] = []
    answered: list[list[str]] = []
    served = hook_run.serve

    def serve(name: str, root: str, change: str) -> int:
        answered.append([name, change])
        return served(name, root, change)

    monkeypatch.setattr(hook_run, "serve", serve)  # (wrapped, not replaced: the real check runs)
    server = Server(ws.root, log=logged.append)
    server._warm_up()
    assert server.served == 2  # no hooks installed: the queries only
    assert answered == []
    assert run_cli("--workspace", str(ws.root), "hooks", "install", "--json").code == 0
    server = Server(ws.root, log=logged.append)
    server._warm_up()
    assert logged == []
    assert server.served == 4
    assert [name for name, _change in answered] == ["pre-commit", "prepare-commit-msg"]
    assert all(change.startswith("1\0README.md\0") for _name, change in answered)


# ------------------------------------------------------------------------------------------ hostile requests


def _request(root: Path, **fields: object) -> bytes:
    from ee import __version__
    from ee.serve.client import PROTOCOL

    doc: dict[str, object] = {
        "protocol": PROTOCOL,
        "version": __version__,
        "argv": ["search", "alpha", "--json"],
        "cwd": str(root),
        "env": {},
        "stdin": None,
        "tty": {},
    }
    return json.dumps(doc | fields).encode()


def _ask(path: Path, data: bytes) -> dict[str, object]:
    """Send one request frame; the server's first answer frame (its header), decoded."""
    from ee.serve.client import recv_frame, send_frame

    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(DEADLINE)
        conn.connect(str(path))
        send_frame(conn, data)
        answer: dict[str, object] = json.loads(recv_frame(conn))
        return answer


def test_a_request_of_the_wrong_shape_is_told_to_run_in_process(ws: Workspace) -> None:
    """Each field of the wrong type gets the fallback answer (it used to kill the connection's thread with
    a traceback in the log, the client getting no answer at all); a good request is served after them."""
    from ee.serve.server import Server

    logged: list[str] = []
    server = Server(ws.root, log=logged.append)
    server.start(warm=False)
    try:
        for fields in (
            {"argv": [1, 2]},
            {"argv": [{"a": 1}, "search"]},
            {"env": ["PATH"]},
            {"env": {"EE_AGENT": {"x": 1}}},
            {"tty": [1]},
            {"cwd": 5},
            {"stdin": 5, "argv": ["search", "-", "--json"]},
            {"argv": ["remember", "a fact"], "umask": True},
        ):
            assert _ask(server.path, _request(ws.root, **fields)) == {"fallback": True}, fields
        with socket.socket(socket.AF_UNIX) as conn:  # JSON nested too deeply to parse: closed, logged
            conn.settimeout(DEADLINE)
            conn.connect(str(server.path))
            deep = b"[" * 100_000 + b"]" * 100_000
            conn.sendall(len(deep).to_bytes(4, "big") + deep)
            assert conn.recv(1) == b""
        assert _ask(server.path, _request(ws.root)) == {"code": 0}
    finally:
        server.close()
    assert any("RecursionError" in line for line in logged)


def test_slow_clients_do_not_hold_the_server_past_the_read_timeout(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client trickling its request a byte at a time is cut off after READ_TIMEOUT in all, not per byte:
    clients that take every slot that way (slowloris) used to send every other command in-process."""
    import threading

    from ee.serve import server as ee_server

    monkeypatch.setattr(ee_server, "MAX_CLIENTS", 2)
    monkeypatch.setattr(ee_server, "READ_TIMEOUT", 1.0)
    server = ee_server.Server(ws.root)
    server.start(warm=False)
    done = threading.Event()
    slow = [socket.socket(socket.AF_UNIX) for _ in range(2)]

    def trickle() -> None:
        while not done.wait(0.1):
            for conn in slow:
                with contextlib.suppress(OSError):
                    conn.send(b" ")  # (JSON may start with blanks: never a complete request)

    try:
        for conn in slow:
            conn.connect(str(server.path))
            conn.send((1 << 20).to_bytes(4, "big"))  # a request of 1 MiB, to be sent a byte at a time
        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()

        def served() -> bool:
            try:
                return _ask(server.path, _request(ws.root)) == {"code": 0}
            except OSError:  # told to run in-process before the request was all sent
                return False

        wait_for(served, "a served answer")
    finally:
        done.set()
        for conn in slow:
            conn.close()
        server.close()
