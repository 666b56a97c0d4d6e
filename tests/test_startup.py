"""What a fresh ``ee`` process imports: the budget of a cold ``ee remember`` (every module it loads is
paid on every remember)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git


def test_a_remember_imports_no_index_yaml_or_numpy(tmp_path: Path) -> None:
    """``ee remember`` on top of ee's own commit: its modules (the import budget of a fresh remember)
    leave out the index and query code, yaml, numpy and bm25s."""
    root = tmp_path / "ws"
    env = {**os.environ, "EE_NO_SERVER": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    ee = [sys.executable, "-m", "ee", "--workspace", str(root)]
    subprocess.run([*ee, "init"], env=env, capture_output=True, check=True)
    subprocess.run([*ee, "remember", "first"], env=env, capture_output=True, check=True)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ee", "--workspace", str(root), "remember", "second one"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {
        line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time")
    }
    assert {"ee.workspace", "ee.git.runner"} <= imported  # it did commit
    assert imported.isdisjoint({"ee.index", "ee.query", "yaml", "numpy", "bm25s"})
    assert git(root, "log", "-1", "--format=%s").strip() == "ee: remember second one"
    assert git(root, "status", "--porcelain") == ""


# What the client of a served read must not import: the data classes of memories (ee.model), the rules
# (ee.policy: the secret policy masks an answer's degradations only when it has some), the pack builder,
# the façade and the index (the server computed the answer). Each was measured in a fresh ``ee search``
# (bench/README.md, stop 39); numpy's absence shows the server answered. A typed task runs no git (only
# ``ee context --for-…`` does), and tomllib (with ``string``, ~2 ms) only reads ``--quota`` pairs (stop 40).
NOT_IN_A_SERVED_READ = frozenset(
    ("ee.model", "ee.policy", "ee.pack", "ee.workspace", "ee.index", "ee.query.engine", "numpy")
) | {"ee.git", "subprocess", "tomllib"}


@pytest.mark.parametrize("args", [["search", "alpha", "--json"], ["context", "alpha", "--json"]])
def test_a_served_read_imports_only_what_it_renders(tmp_path: Path, args: list[str]) -> None:
    """A fresh ``ee search`` / ``ee context`` answered by a running server: its process (the interpreter,
    click, the request and the rendering) leaves out :data:`NOT_IN_A_SERVED_READ`."""
    root = tmp_path / "ws"
    env = {k: v for k, v in os.environ.items() if k not in ("EE_NO_SERVER", "PYTHONDONTWRITEBYTECODE")}
    ee = [sys.executable, "-m", "ee", "--workspace", str(root)]
    subprocess.run([*ee, "init"], env=env | {"EE_NO_SERVER": "1"}, capture_output=True, check=True)
    (root / ".ee/config.toml").write_text("[model]\ntransformer = false\n", encoding="utf-8")
    (root / "memories/alpha.md").write_text("---\nid: mem_alpha\n---\nalpha rollback window\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a memory")
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen([*ee, "watch"], stdout=subprocess.DEVNULL, stderr=sink, env=env)
    try:
        deadline = time.monotonic() + 60
        while f"watching {root}" not in log.read_text(errors="replace"):
            assert server.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", *ee[1:], *args], env=env, capture_output=True, text=True
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["success"] is True
    imported = {
        line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time")
    }
    assert {"ee.cli", "ee.serve.client", "ee.render"} <= imported  # (it did ask the server, and render)
    assert imported.isdisjoint(NOT_IN_A_SERVED_READ), sorted(imported & NOT_IN_A_SERVED_READ)


def test_a_hook_starts_without_the_workspace_index_or_results() -> None:
    """A git hook's cold start (``ee.hooks.run``, what the shell runner imports on every commit) loads
    the hooks, git's runner and the hook check's use case (``ee.ops.risks``): not the façade, the index,
    the query engine nor the typed results, which the paths that need them import."""
    code = "import sys, ee.hooks.run; print(' '.join(sorted(m for m in sys.modules if m.startswith('ee'))))"
    proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True)
    imported = set(proc.stdout.split())
    assert {"ee.hooks.run", "ee.ops.risks", "ee.git.runner"} <= imported
    assert imported <= {
        "ee",
        "ee.errors",
        "ee.git",
        "ee.git.runner",
        "ee.hooks",
        "ee.hooks.gitinfo",
        "ee.hooks.run",
        "ee.hooks.warm",
        "ee.ops",
        "ee.ops.risks",
    }
