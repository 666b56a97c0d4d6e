"""The README's quickstart, run exactly as written in a new scratch git repository, with the ee installed in
this test environment. Skipped: the install line (it needs the package index) and the MCP client's own
command (`claude mcp add`: it needs Claude Code); everything else runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import REPO_ROOT, git

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
CLIENT_COMMANDS = ("claude ",)  # the MCP client's command: not ee's


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def shell_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.DOTALL)


def test_the_install_lines_name_the_distribution_and_the_mcp_extra() -> None:
    name = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    (install,) = shell_blocks(section("Install"))
    assert install.startswith(f"pipx install '{name}[mcp]'")
    assert f"uv tool install '{name}[mcp]'" in install
    assert "earthengine-api" in section("Install")


def test_the_quickstart_runs_as_written_in_a_new_repository(tmp_path: Path) -> None:
    (script,) = shell_blocks(section("Quickstart in your own repository"))
    assert script.startswith("ee init\n")  # the first screen: ee's own commands, in the user's repository
    mcp = [line for line in script.splitlines() if line.startswith(CLIENT_COMMANDS)]
    assert mcp == ['claude mcp add --scope project ee -- "$(command -v ee)" mcp serve']
    runnable = "\n".join(line for line in script.splitlines() if not line.startswith(CLIENT_COMMANDS))
    repo = tmp_path / "your-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("print('hello')\n")
    git(repo, "add", "app.py")
    git(repo, "commit", "-q", "-m", "app")
    bin_dir = str(Path(sys.executable).parent)  # the installed `ee` of this environment
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]}
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", runnable],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # ee context found both memories: the remembered one and the one written by hand
    assert "# ee context: how do we release?" in proc.stdout
    assert "No deploys on Fridays" in proc.stdout
    assert "make test" in proc.stdout
    # the hand-written memory is committed by its person before the first pack, so the pack shows it as
    # theirs, not as an agent's: an uncommitted file is at most agent_assertion (docs/security.md)
    assert "`no-friday-deploys` · human_explicit" in proc.stdout
    assert "Advisory" not in proc.stdout
    assert "agent_assertion" not in proc.stdout
    # the hooks are in git, the Claude Code entries name ee by an absolute path that runs
    assert "ee hook" in (repo / ".git" / "hooks" / "pre-commit").read_text()
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    ee_path = command.split()[1]
    assert Path(ee_path).is_absolute()
    assert os.access(ee_path, os.X_OK)
    # the user's own commit still works with the hooks installed, and ee's commit held only its memory
    (repo / "app.py").write_text("print('hello, world')\n")
    git(repo, "commit", "-q", "-am", "greet the world")
    log = git(repo, "log", "--format=%s", "--name-only")
    assert "app.py" in log
    remembered = git(repo, "log", "--format=", "--name-only", "--grep=Ee-Op: remember").split()
    assert len(remembered) == 1
    assert remembered[0].startswith("memories/")
    assert remembered[0] != "memories/no-friday-deploys.md"
    hand = git(repo, "log", "--format=%s", "--", "memories/no-friday-deploys.md").split("\n")
    assert hand[0] == "No Friday deploys"  # the user's own commit, as the README shows
