"""What a fresh ``ee`` process imports: the budget of a cold ``ee remember`` (every module it loads is
paid on every remember)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
