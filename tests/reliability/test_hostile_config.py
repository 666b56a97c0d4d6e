"""A repository's committed ``.ee/config.toml`` is data, not an instruction to load what the repository
ships: a ``model.path`` naming a folder inside it is refused (lexical search, said), while the user's own
``$EE_MODEL`` may name the same folder."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import git, run_cli

from ee.index.embedder import DEFAULT_MODEL_DIR
from ee.workspace import Workspace


def _shipped_model(ws: Workspace) -> Path:
    vendored = ws.root / "vendor" / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, vendored)
    return vendored


@pytest.mark.parametrize("spelling", ["relative", "absolute", "dotted"])
def test_a_model_the_repository_ships_is_never_loaded(
    ws: Workspace, cli: Any, spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EE_MODEL", raising=False)
    vendored = _shipped_model(ws)
    named = {
        "relative": "vendor/model",
        "absolute": str(vendored),
        "dotted": "memories/../vendor/model",
    }[spelling]
    (ws.root / ".ee" / "config.toml").write_text(f'[model]\npath = "{named}"\n', encoding="utf-8")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a cloned repository's settings and model")
    assert cli("remember", "The orders table lives in Postgres.", "--json").code == 0
    found = cli("search", "where do orders live", "--json")
    assert found.code == 0, found.out
    [problem] = [d for d in found.json["degraded"] if "never loads a model a repository" in d["message"]]
    assert problem["code"] == "semantic_unavailable"
    assert "EE_MODEL" in problem["repair"]


def test_the_users_own_ee_model_may_name_it(ws: Workspace, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EE_MODEL", str(_shipped_model(ws)))
    assert cli("remember", "The orders table lives in Postgres.", "--json").code == 0
    found = cli("search", "where do orders live", "--json")
    assert found.code == 0, found.out
    assert not [d for d in found.json["degraded"] if d["code"] == "semantic_unavailable"]


def _plant_a_package(root: Path, marker: Path) -> None:
    """An ``ee/`` folder a repository ships at its top: imported by any ``python -m`` run in that folder
    without ``-P``, which would run the repository's code as the user."""
    for name in ("__init__.py", "__main__.py", "serve/__init__.py", "serve/server.py", "hooks/__init__.py"):
        path = root / "ee" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n", encoding="utf-8")


def test_the_server_ee_starts_never_imports_an_ee_folder_the_repository_ships(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from conftest import run_cli, stop_server

    from ee.serve.client import server_pid

    marker = tmp_path / "ran"
    _plant_a_package(ws.root, marker)
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "a cloned repository with an ee/ folder")
    monkeypatch.delenv("EE_NO_SERVER")
    try:
        assert run_cli("remember", "The orders table lives in Postgres.", cwd=ws.root).code == 0
        assert run_cli("search", "orders", "--json", cwd=ws.root).code == 0
        deadline = time.monotonic() + 120
        while server_pid() is None and time.monotonic() < deadline:  # (a wait, not a timing check)
            time.sleep(0.1)
        assert server_pid() is not None, "no server started: the check would prove nothing"
    finally:
        stop_server()
    assert not marker.exists(), marker.read_text(encoding="utf-8")


def test_the_merge_driver_never_imports_an_ee_folder_the_repository_ships(
    ws: Workspace, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    memory = ws.root / "memories" / "ci.md"
    memory.write_text("---\nid: mem_ci\ntags: [ci]\n---\nThe CI timeout is 30 minutes.\n", encoding="utf-8")
    _plant_a_package(ws.root, marker)
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "base")
    ours = git(ws.root, "branch", "--show-current").strip()
    git(ws.root, "checkout", "-q", "-b", "theirs")
    memory.write_text(memory.read_text(encoding="utf-8").replace("tags: [ci]", "tags: [ci, lint]"), "utf-8")
    git(ws.root, "commit", "-q", "-am", "theirs")
    git(ws.root, "checkout", "-q", ours)
    memory.write_text(memory.read_text(encoding="utf-8").replace("30 minutes", "45 minutes"), "utf-8")
    git(ws.root, "commit", "-q", "-am", "ours")
    git(ws.root, "merge", "-q", "--no-edit", "theirs")  # both sides changed it: git runs ee's driver
    merged = memory.read_text(encoding="utf-8")
    assert "45 minutes" in merged
    assert "lint" in merged  # (the driver ran: a plain line merge of these two would conflict)
    assert not marker.exists(), marker.read_text(encoding="utf-8")


@pytest.mark.parametrize("attributes", ["* merge=ee-memory", "*.md merge=ee-memory"])
@pytest.mark.parametrize("name", ["src/app.py", "README.md"])
def test_a_clones_attributes_never_make_ee_merge_a_file_that_is_no_memory(
    ws: Workspace, attributes: str, name: str
) -> None:
    """A cloned repository's ``.gitattributes`` names which files git gives ee's merge driver. Given a
    code file whose two sides conflict, it kept both versions under ee's labels and exited 0: git then
    committed the merge as clean, the conflict in the code hidden. ee merges only memory files; for any
    other file it is git's own text merge, a conflict git reports as usual."""
    import subprocess

    path = ws.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("one\ntwo\nthree\n", encoding="utf-8")
    with (ws.root / ".gitattributes").open("a", encoding="utf-8") as file:
        file.write(attributes + "\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "-m", "base")
    ours = git(ws.root, "branch", "--show-current").strip()
    git(ws.root, "checkout", "-q", "-b", "theirs")
    path.write_text("one\nTHEIRS\nthree\n", encoding="utf-8")
    git(ws.root, "commit", "-q", "-am", "theirs")
    git(ws.root, "checkout", "-q", ours)
    path.write_text("one\nOURS\nthree\n", encoding="utf-8")
    git(ws.root, "commit", "-q", "-am", "ours")
    head = git(ws.root, "rev-parse", "HEAD")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "theirs"], cwd=ws.root, capture_output=True, text=True, check=False
    )
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert "CONFLICT" in merged.stdout
    assert git(ws.root, "rev-parse", "HEAD") == head  # no merge commit
    text = path.read_text(encoding="utf-8")
    assert "<<<<<<<" in text
    assert "ee:" not in text


def test_init_replaces_a_merge_driver_an_older_ee_registered_without_p(ws: Workspace) -> None:
    import sys

    git(ws.root, "config", "merge.ee-memory.driver", f"{sys.executable} -m ee merge-driver %O %A %B %P")
    assert Workspace.init(ws.root)
    assert " -P -m ee merge-driver" in git(ws.root, "config", "--get", "merge.ee-memory.driver")


# ----------------------------------------------------------------- private settings: the retention


def _transcript(folder: Path) -> Path:
    """A transcript with a turn of 2001 (older than any retention) and one of 2999 (newer than all)."""
    import json

    path = folder / "old-and-new.json"
    turns = [
        ("Long ago we chose Flask for the admin site.", "2001-01-01T00:00:00Z"),
        ("Today the admin site moved to Litestar.", "2999-01-01T00:00:00Z"),
    ]
    path.write_text(
        json.dumps([{"role": "user", "content": text, "timestamp": when} for text, when in turns]),
        encoding="utf-8",
    )
    return path


def _clone_with_retention(ws: Workspace, tmp_path: Path) -> Path:
    """A clone of a repository whose committed ``.ee/config.toml`` sets a retention of ~9 seconds."""
    (ws.root / ".ee" / "config.toml").write_text("[sessions]\nretention_days = 0.0001\n", encoding="utf-8")
    git(ws.root, "add", ".ee/config.toml")
    git(ws.root, "commit", "-q", "-m", "a cloned repository's settings")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws.root), str(clone))
    assert git(clone, "ls-files", ".ee/config.toml").strip() == ".ee/config.toml"
    return clone


def _texts(root: Path) -> list[str]:
    return [e.text for e in Workspace(root).session("old-and-new").evidence]


BOTH = ["user: Long ago we chose Flask for the admin site.", "user: Today the admin site moved to Litestar."]


def test_a_clones_committed_retention_deletes_none_of_its_evidence(ws: Workspace, tmp_path: Path) -> None:
    from conftest import run_cli

    clone = _clone_with_retention(ws, tmp_path)
    done = run_cli("--workspace", str(clone), "import", "session", str(_transcript(tmp_path)), "--json")
    assert done.code == 0, done.out
    assert done.data["pruned"] == 0
    assert _texts(clone) == BOTH
    [note] = [d for d in done.json["degraded"] if d["code"] == "retention_not_applied"]
    assert "retention_days = 0.0001" in note["message"]
    assert "no evidence was deleted" in note["message"]
    assert "move retention_days to .ee/config.local.toml to apply it" in note["repair"]
    # again, on a screen: said on stderr, and still nothing deleted
    again = run_cli("--workspace", str(clone), "import", "session", str(_transcript(tmp_path)), "--human")
    assert again.code == 0
    assert "degraded: [sessions] retention_days = 0.0001 is set only in .ee/config.toml" in again.err
    assert _texts(clone) == BOTH


def test_doctor_says_a_withheld_retention_and_where_to_move_it(ws: Workspace, tmp_path: Path) -> None:
    from conftest import run_cli

    clone = _clone_with_retention(ws, tmp_path)
    report = run_cli("--workspace", str(clone), "doctor", "--json")
    assert report.code == 0, report.out  # (a warning: the workspace is healthy)
    [finding] = [p for p in report.data["problems"] if p["code"] == "retention_not_applied"]
    assert finding["severity"] == "warning"
    assert finding["path"] == ".ee/config.toml"
    assert "retention_days = 0.0001 is set only in .ee/config.toml" in finding["message"]
    assert "move retention_days to .ee/config.local.toml" in finding["repair"]
    human = run_cli("--workspace", str(clone), "doctor", "--human")
    assert "retention_days = 0.0001 is set only in .ee/config.toml" in human.out + human.err
    assert "move retention_days to .ee/config.local.toml" in human.out + human.err
    # moved to the local file, as the repair says: nothing more to say
    (clone / ".ee" / "config.local.toml").write_text("[sessions]\nretention_days = 0.0001\n", "utf-8")
    again = run_cli("--workspace", str(clone), "doctor", "--json")
    assert not [p for p in again.data["problems"] if p["code"] == "retention_not_applied"]


@pytest.mark.parametrize("name", [".ee/config.local.toml", ".ee/config.toml"])
def test_doctor_names_the_config_file_in_error(ws: Workspace, cli: Any, name: str) -> None:
    from conftest import doctor_report

    (ws.root / name).write_text("[sessions]\nretention_days = -1\n", encoding="utf-8")
    report = cli("doctor", "--json")
    assert report.code == 4, report.out
    [finding] = [p for p in doctor_report(report.json)["problems"] if p["code"] == "config_invalid"]
    assert finding["path"] == name
    assert finding["message"].startswith("[sessions] retention_days = -1 must be a number of days")
    human = cli("doctor", "--human")
    assert f"error: {name}: [sessions] retention_days = -1 must be" in human.out + human.err


def test_the_same_retention_in_the_local_file_prunes(ws: Workspace, tmp_path: Path) -> None:
    from conftest import run_cli

    clone = _clone_with_retention(ws, tmp_path)
    (clone / ".ee" / "config.local.toml").write_text("[sessions]\nretention_days = 0.0001\n", "utf-8")
    assert git(clone, "status", "--porcelain", "--ignored", ".ee/config.local.toml").startswith("!!")
    done = run_cli("--workspace", str(clone), "import", "session", str(_transcript(tmp_path)), "--json")
    assert done.code == 0, done.out
    assert done.data["pruned"] == 1
    assert not [d for d in done.json["degraded"] if d["code"] == "retention_not_applied"]
    assert _texts(clone) == BOTH[1:]


def test_a_retention_in_an_untracked_config_prunes(ws: Workspace, cli: Any, tmp_path: Path) -> None:
    git(ws.root, "rm", "-q", "--cached", ".ee/config.toml")
    git(ws.root, "commit", "-q", "-m", "keep the settings to this clone")
    (ws.root / ".ee" / "config.toml").write_text("[sessions]\nretention_days = 0.0001\n", encoding="utf-8")
    assert git(ws.root, "ls-files", ".ee/config.toml") == ""
    done = cli("import", "session", str(_transcript(tmp_path)), "--json")
    assert done.code == 0, done.out
    assert done.data["pruned"] == 1
    assert _texts(ws.root) == BOTH[1:]


def test_the_local_file_overrides_the_shared_one_key_by_key(ws: Workspace, cli: Any, tmp_path: Path) -> None:
    from ee.config import load_config

    shared = "[sessions]\nimport = false\nmax_file_bytes = 100000\n"
    shared += "[pack.custom]\nmemories = 5\nevidence = 2\n"
    (ws.root / ".ee" / "config.toml").write_text(shared, encoding="utf-8")
    transcript = _transcript(tmp_path)
    assert cli("import", "session", str(transcript), "--json").code == 6  # the shared file alone: off
    local = "[sessions]\nimport = true\n[pack.custom]\nevidence = 4\n"
    (ws.root / ".ee" / "config.local.toml").write_text(local, encoding="utf-8")
    done = cli("import", "session", str(transcript), "--json")
    assert done.code == 0, done.out
    assert _texts(ws.root) == BOTH
    config = load_config(ws.root)
    assert config.get("sessions.import") is True  # the local file's
    assert config.get("sessions.max_file_bytes") == 100000  # the shared file's, the local one silent
    assert config.section("pack.custom") == {"memories": 5, "evidence": 4}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[sessions]\nretention_days = \n", "line 2"),
        ("[sessions]\nretention_days = 'soon'\n", "[sessions] retention_days = 'soon' has the wrong type"),
        ("[sessions]\nretention_days = -1\n", "must be a number of days, 0 or more"),
        ("[lock]\ntimeout = nan\n", "[lock] timeout = nan must be a number of seconds"),
    ],
)
def test_a_bad_local_file_is_a_configuration_error_naming_it(
    ws: Workspace, cli: Any, tmp_path: Path, text: str, said: str
) -> None:
    transcript = _transcript(tmp_path)
    assert cli("import", "session", str(transcript), "--json").code == 0
    (ws.root / ".ee" / "config.local.toml").write_text(text, encoding="utf-8")
    failed = cli("import", "session", str(transcript), "--json")
    assert failed.code == 3, failed.out
    error = failed.json["error"]
    assert error["message"].startswith(".ee/config.local.toml: ")
    assert said in error["message"]
    assert str(ws.root / ".ee" / "config.local.toml") in error["repair"]
    assert _texts(ws.root) == BOTH


def test_a_link_at_the_local_file_is_refused(ws: Workspace, cli: Any, tmp_path: Path) -> None:
    transcript = _transcript(tmp_path)
    assert cli("import", "session", str(transcript), "--json").code == 0
    outside = tmp_path / "elsewhere.toml"
    outside.write_text("[sessions]\nretention_days = 0.0001\n", encoding="utf-8")
    (ws.root / ".ee" / "config.local.toml").symlink_to(outside)
    failed = cli("import", "session", str(transcript), "--json")
    assert failed.code == 3, failed.out
    assert failed.json["error"]["message"].startswith(".ee/config.local.toml: cannot be read")
    assert "symbolic link" in failed.json["error"]["message"]
    assert _texts(ws.root) == BOTH


# ------------------------------------------------------------------ a hostile model folder named by $EE_MODEL


def _model_with(tmp_path: Path, change: str) -> Path:
    """A copy of the shipped model2vec folder with one hostile change."""
    import json

    import numpy as np
    from safetensors.numpy import load, save

    folder = tmp_path / "hostile-model"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    if change in ("nan", "inf"):
        tensors = dict(load((folder / "model.safetensors").read_bytes()))
        vectors = tensors["embeddings"].astype(np.float32)
        vectors[7] = np.nan if change == "nan" else np.inf
        tensors["embeddings"] = vectors
        (folder / "model.safetensors").write_bytes(save(tensors))
    else:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config["max_length"] = {"huge max_length": 10**30, "negative max_length": -5, "text": "512"}[change]
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("nan", "'embeddings' holds numbers that are not finite"),
        ("inf", "'embeddings' holds numbers that are not finite"),
        ("huge max_length", "max_length must be a whole number from 1 to 1000000 or null"),
        ("negative max_length", "max_length must be a whole number from 1 to 1000000 or null"),
        ("text", "max_length must be a whole number from 1 to 1000000 or null"),
    ],
)
def test_a_hostile_model_folder_is_refused_and_search_goes_on_lexically(
    ws: Workspace, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str, said: str
) -> None:
    monkeypatch.setenv("EE_MODEL", str(_model_with(tmp_path, change)))  # (the user's own variable)
    assert cli("remember", "The orders table lives in Postgres.", "--json").code == 0
    found = cli("search", "orders table", "--json")
    assert found.code == 0, found.out  # (NaN vectors were an internal error, exit 1; 10**30 an overflow)
    assert [hit["title"] for hit in found.data["hits"]] == ["The orders table lives in Postgres."]
    [problem] = [d for d in found.json["degraded"] if "semantic model unavailable" in d["message"]]
    assert problem["code"] == "semantic_unavailable"
    assert said in problem["message"]
    assert "hostile-model" in problem["repair"]


@pytest.mark.parametrize("which", ["config.toml", "config.local.toml"])
def test_a_huge_settings_file_is_refused_before_it_is_parsed(ws: Workspace, cli: Any, which: str) -> None:
    """A cloned repository's config.toml is read by every command and hook: a 10 MB array in it kept the
    TOML parser busy for 20 CPU-seconds each time. Above 64 KiB a settings file is a configuration error."""
    (ws.root / ".ee" / which).write_text("noise = [" + "1," * 2_000_000 + "]\n", encoding="utf-8")
    failed = cli("status", "--json")
    assert failed.code == 3, failed.out
    error = failed.json["error"]
    assert (
        error["message"] == f".ee/{which}: larger than 65536 characters: ee reads no settings file that large"
    )
    assert f"shorten {ws.root / '.ee' / which}" in error["repair"]


@pytest.mark.parametrize(
    "spelling",
    [
        "sessions.retention_days = 0.0001\n",  # a dotted key at the top level
        "sessions = { retention_days = 0.0001 }\n",  # an inline table
        '["sessions"]\n"retention_days" = 1e-4\n',  # quoted names, another number spelling
        "[sessions]\nretention_days = 0.0001\n[Sessions]\nretention_days = 0.0001\n",  # and another case
    ],
)
def test_no_spelling_of_a_committed_retention_is_applied(
    ws: Workspace, tmp_path: Path, spelling: str
) -> None:
    from ee.config import load_config

    (ws.root / ".ee" / "config.toml").write_text(spelling, encoding="utf-8")
    git(ws.root, "add", ".ee/config.toml")
    git(ws.root, "commit", "-q", "-m", "a cloned repository's settings")
    config = load_config(ws.root)
    assert config.get("sessions.retention_days") == 0
    assert config.withheld == {"sessions.retention_days": 0.0001}


def test_a_clone_that_commits_the_local_file_is_refused(ws: Workspace, tmp_path: Path) -> None:
    from conftest import run_cli

    (ws.root / ".ee" / "config.local.toml").write_text("[sessions]\nretention_days = 0.0001\n", "utf-8")
    git(ws.root, "add", "-f", ".ee/config.local.toml")  # (.ee/* is ignored: only a forced add tracks it)
    git(ws.root, "commit", "-q", "-m", "a cloned repository's 'local' settings")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws.root), str(clone))
    done = run_cli("--workspace", str(clone), "import", "session", str(_transcript(tmp_path)), "--json")
    assert done.code == 4, done.out
    assert "git rm --cached -r -- .ee/config.local.toml" in done.json["error"]["repair"]
    assert not (clone / ".ee" / "sessions").exists()


# ------------------------------------------------------------ a hostile transformer folder (library level)
# ee loads only the ONNX model it ships (no setting names another); its loader still checks what it reads.
# The two graphs of tests/fixtures/hostile-onnx were built with the onnx package: the right input and output
# names, a constant output of shape (1, 7) float, or (1, 384) int64.

HOSTILE_ONNX = Path(__file__).resolve().parents[1] / "fixtures" / "hostile-onnx"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"dim": 10**12}, "dim must be a whole number from 1 to 65536, not 1000000000000"),
        ({"dim": -3}, "dim must be a whole number from 1 to 65536"),
        ({"dim": "384"}, "dim must be a whole number from 1 to 65536, not '384'"),
        ({"dim": True}, "dim must be a whole number from 1 to 65536, not True"),
        ({"dim": 17}, "vectors of config.json's dim (17)"),
        ({"max_tokens": -1}, "max_tokens must be a whole number from 1 to 1000000, not -1"),
        ({"max_tokens": 10**30}, "max_tokens must be a whole number from 1 to 1000000"),
        ({"max_tokens": "12"}, "max_tokens must be a whole number from 1 to 1000000, not '12'"),
        ("wrong-dim.onnx", "[('tensor(float)', [1, 7]), ('tensor(float)', [1, 7])]"),
        ("wrong-dtype.onnx", "[('tensor(int64)', [1, 384]), ('tensor(int64)', [1, 384])]"),
    ],
    ids=str,
)
def test_a_hostile_transformer_folder_is_a_model_error_at_load(
    tmp_path: Path, change: dict[str, Any] | str, said: str
) -> None:
    import json

    from ee.errors import ModelError
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, load_transformer

    folder = tmp_path / "transformer"
    shutil.copytree(DEFAULT_TRANSFORMER_DIR, folder)
    if isinstance(change, str):
        shutil.copy(HOSTILE_ONNX / change, folder / "model.onnx")
    else:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        (folder / "config.json").write_text(json.dumps(config | change), encoding="utf-8")
    # (before: a MemoryError, a ValueError or a broadcast error at the first encode, or a model loaded
    # with a dim of "384" or True)
    with pytest.raises(ModelError) as raised:
        load_transformer(folder)
    assert said in raised.value.message
    assert str(folder) in raised.value.message


# ---------------------------------------------------------------------------- the hooks' runner reads it too


def _hooked_clone(tmp_path: Path) -> Path:
    from tests.test_hooks import hooked

    return hooked(tmp_path)


def _slow_ee(tmp_path: Path) -> str:
    slow = tmp_path / "slow-ee"
    slow.write_text("#!/bin/sh\nexec sleep 20\n")
    slow.chmod(0o755)
    return str(slow)


@pytest.mark.parametrize("how", ["huge", "link"])
def test_the_hook_runner_reads_no_huge_or_linked_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The shell runner reads ``[hooks] timeout`` before any ee starts, a byte at a time: a clone's 20 MB
    config.toml made every commit and checkout take 14 s. Past ee's own size limit, or through a link
    (ee refuses both), the runner reads none of it and keeps its default."""
    from tests.test_hooks import run_git

    monkeypatch.delenv("EE_HOOK_TIMEOUT", raising=False)
    repo = _hooked_clone(tmp_path)
    limit = "[hooks]\ntimeout = 0.5\n"
    config = repo / ".ee" / "config.toml"
    if how == "huge":
        config.write_text("# noise\n" * 70_000 + limit, encoding="utf-8")
    else:
        (tmp_path / "elsewhere.toml").write_text(limit, encoding="utf-8")
        config.unlink()
        config.symlink_to(tmp_path / "elsewhere.toml")
    proc = run_git(repo, "checkout", "-q", "-b", "a", env={"EE_HOOK_EE": _slow_ee(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "ee: hook skipped (post-checkout took over 2s" in proc.stderr  # the default, not the file's


@pytest.mark.parametrize("seconds", ["99999999999999999999", "1e400", "86401"])
def test_a_hook_timeout_out_of_range_is_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seconds: str
) -> None:
    """A clone's ``[hooks] timeout = 99999999999999999999`` made the runner's own timer overflow: a Python
    traceback in every hook. ee refuses it (exit 3, naming the setting); the runner keeps its default."""
    from tests.test_hooks import run_git

    monkeypatch.delenv("EE_HOOK_TIMEOUT", raising=False)
    repo = _hooked_clone(tmp_path)
    (repo / ".ee" / "config.toml").write_text(f"[hooks]\ntimeout = {seconds}\n", encoding="utf-8")
    proc = run_git(repo, "checkout", "-q", "-b", "a")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "Error:" not in proc.stderr, proc.stderr
    failed = run_cli("--workspace", str(repo), "status", "--json")
    assert failed.code == 3, failed.out
    assert "[hooks] timeout" in failed.json["error"]["message"]


@pytest.mark.parametrize("name", ["--force", "HEAD", "-", "x y"])
def test_a_clones_memory_branch_that_is_no_branch_name_is_a_config_error(tmp_path: Path, name: str) -> None:
    """``ee init`` (the repair ee names in a fresh clone) took ``[store] branch`` as given: a clone's
    ``"--force"`` reached ``git worktree add`` as an option (memories/ became a worktree of a branch
    named ``memories``, beside a branch named ``--force``), ``"HEAD"`` made a branch ``refs/heads/HEAD``."""
    from conftest import make_repo

    repo = make_repo(tmp_path / "clone", {".ee/config.toml": f'[store]\nbranch = "{name}"\n'})
    before = git(repo, "for-each-ref", "--format=%(refname)")
    done = run_cli("--workspace", str(repo), "init", "--json")
    assert done.code == 3, done.out
    assert done.json["error"]["message"] == (
        f".ee/config.toml: [store] branch = {name!r} is not a valid branch name"
    )
    assert "[store] branch" in done.json["error"]["repair"]
    assert git(repo, "for-each-ref", "--format=%(refname)") == before
    assert git(repo, "worktree", "list").count("\n") <= 1
