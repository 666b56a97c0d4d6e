"""A 5,000-digit number (issue 31, item 4) is one bad file, reported at ``file:line`` and skipped like any
malformed file, by every command and wherever ee reads a number: memory frontmatter (decimal, hex,
base 60), feedback events, settings — also when it arrives by ``ee sync``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import git, run_ee_process

from ee.errors import ExitCode
from ee.workspace import Workspace

from .team import synced_pair

HUGE = {
    "decimal.md": f"---\nkind: rule\nconfidence: {'7' * 5000}\n---\nDecimal ci body.\n",
    "hex.md": f"---\nkind: rule\nextra_count: 0x{'f' * 5000}\n---\nHex ci body.\n",
    "sixty.md": f"---\nutility: {':'.join(['59'] * 3000)}\n---\nBase sixty ci body.\n",
    "under-limit.md": f"---\nimportance: {'9' * 4000}\n---\nFour thousand digits ci body.\n",
}


def _ee(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_ee_process(*args, cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def store(tmp_path: Path) -> Workspace:
    ws, _ = Workspace.init(tmp_path / "ws")
    good = ws.remember("Run the ci pipeline before merging.")
    for name, text in HUGE.items():
        (ws.root / "memories" / name).write_text(text)
    events = ws.root / "memories" / ".events" / f"{good.id}.jsonl"
    line = {"id": "evt_1", "memory": good.id, "signal": "helpful", "at": "2026-12-01T00:00:00Z"}
    events.write_text(json.dumps(line)[:-1] + f', "weight": {"9" * 5000}}}\n')
    return ws


def _named(messages: str) -> None:
    for name in HUGE:
        assert f"memories/{name}:" in messages or f'"path": "memories/{name}"' in messages, name


def test_every_command_reports_the_file_and_answers(store: Workspace) -> None:
    for command in (("search", "ci"), ("context", "ci"), ("memory", "list"), ("index", "rebuild")):
        proc = _ee(store.root, *command, "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        doc = json.loads(proc.stdout)
        _named(json.dumps(doc["degraded"]))
        assert "beyond 9223372036854775807" in proc.stdout
    doctor = _ee(store.root, "doctor", "--json")
    assert doctor.returncode == ExitCode.STORAGE  # unhealthy: the bad files are errors
    problems = json.loads(doctor.stdout)["error"]["details"]["report"]["problems"]  # (unhealthy: an error)
    _named(json.dumps(problems))
    assert {p["line"] for p in problems if p["path"] in {f"memories/{n}" for n in HUGE}} == {2, 3}
    target = store.root.parent / "out.jsonl"
    exported = _ee(store.root, "export", "jsonl", "--output", str(target))
    assert exported.returncode == 0, exported.stderr
    assert "Run the ci pipeline" in target.read_text()
    assert all(f"memories/{name}" in exported.stderr for name in HUGE)


def test_a_huge_number_in_an_events_line_is_one_bad_line(store: Workspace) -> None:
    from ee.store.feedback import read_events_text

    text = next((store.root / "memories" / ".events").glob("mem_*.jsonl")).read_text()
    events, problems = read_events_text(text, "memories/.events/x.jsonl")
    assert events == []
    assert problems[0]["line"] == 1
    assert "beyond" in problems[0]["message"]


def test_a_huge_setting_is_a_config_error(store: Workspace) -> None:
    for value in ("9" * 5000, "9" * 400):
        (store.root / ".ee" / "config.toml").write_text(f"[lock]\ntimeout = {value}\n")
        proc = _ee(store.root, "remember", "Another rule.", "--json")
        assert proc.returncode == ExitCode.CONFIG, proc.stdout + proc.stderr
        assert ".ee/config.toml" in proc.stdout


def test_a_huge_number_arriving_by_sync_is_one_bad_file(tmp_path: Path) -> None:
    a, b = synced_pair(tmp_path)
    (a / "memories" / "decimal.md").write_text(HUGE["decimal.md"])
    git(a, "add", "memories/decimal.md")
    git(a, "commit", "-q", "--no-verify", "-m", "a rule")
    git(a, "push", "-q", "origin", "main")
    assert _ee(b, "remember", "Teammate B's rule about ci.", "--json").returncode == 0
    synced = _ee(b, "sync", "--json")
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert (b / "memories" / "decimal.md").exists()
    listed = _ee(b, "memory", "list", "--json")
    assert listed.returncode == 0
    assert "memories/decimal.md:3" in listed.stdout
