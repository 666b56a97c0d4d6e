"""The secret guard on every write path, end to end, and the mask on every output.

Each write path gets a secret in each field it takes (body, --source, --path, --tags, --link, extra keys,
--reason); the test checks the exit code and the message, that no file was written, and that the secret
reached no git object (``git cat-file --batch-all-objects``, every version of every object). Secrets are
fabricated at run time from a seeded RNG, so none sits in the repository.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ee.errors import ExitCode
from ee.git.merge import merge_driver
from ee.workspace import Workspace
from tests.conftest import Result, doctor_report, git, run_cli

ALNUM = string.ascii_letters + string.digits


def rnd(seed: str, n: int, alphabet: str = ALNUM) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


GHP = "ghp_" + rnd("paths-ghp", 36)
PASSWORD = "Vq3rT9zLm2" + rnd("paths-pw", 4)
DB_URL = f"postgres://admin:{PASSWORD}@db.internal:5432/app"
PROSE = f"the root password is {PASSWORD}!"


def objects(root: Path) -> bytes:
    """Every object git holds in ``root`` (loose and packed), contents concatenated."""
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root, capture_output=True, check=True
    ).stdout


def history(root: Path) -> str:
    return git(root, "log", "-p", "--all")


def assert_nowhere(root: Path, *secrets: str) -> None:
    data, log = objects(root), history(root)
    for secret in secrets:
        assert secret.encode() not in data, f"{secret[:6]}… reached a git object"
        assert secret not in log


def error_of(result: Result, code: int = ExitCode.POLICY) -> dict[str, Any]:
    assert result.code == code, result.out + result.err
    error: dict[str, Any] = json.loads(result.out)["error"]
    return error


def memory_files(ws: Workspace) -> list[Path]:
    return sorted(p for p in (ws.root / "memories").rglob("*.md"))


# ---------------------------------------------------------------------------------------------- remember


@pytest.mark.parametrize(
    ("args", "secret", "field"),
    [
        (["Deploy notes.", "--source", DB_URL], PASSWORD, "source"),
        (["Deploy notes.", "--path", f"deploy/{GHP}/run.sh"], GHP, "paths"),
        (["Deploy notes.", "--tags", f"ci,{GHP}"], GHP, "tags"),
        (["Deploy notes.", "--link", f"supports:{GHP}"], GHP, "links"),
        ([PROSE], PASSWORD, "line 1"),
        (
            [f"Azure: AccountKey={rnd('paths-az', 86, ALNUM + '+/')}=="],
            rnd("paths-az", 86, ALNUM + "+/"),
            "line",
        ),
    ],
    ids=["source", "path", "tags", "link", "prose-password", "azure-key"],
)
def test_remember_refuses_a_secret_in_any_field(
    cli: Any, ws: Workspace, args: list[str], secret: str, field: str
) -> None:
    head = git(ws.root, "rev-parse", "HEAD")
    error = error_of(cli("remember", *args, "--json"))
    assert error["code"] == "secret_detected"
    assert field in error["message"]
    assert "nothing was written" in error["message"]
    assert memory_files(ws) == []
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert_nowhere(ws.root, secret)


def test_remember_redact_masks_every_field(cli: Any, ws: Workspace) -> None:
    result = cli(
        "remember",
        PROSE,
        "--source",
        DB_URL,
        "--tags",
        f"ci,{GHP}",
        "--path",
        f"x/{GHP}",
        "--redact",
        "--json",
    )
    assert result.code == 0, result.err
    data = json.loads(result.out)["data"]
    assert data["source"] == ["postgres://admin:[REDACTED:url_password]@db.internal:5432/app"]
    assert data["tags"] == ["ci", "[REDACTED:github_token]"]
    assert data["paths"] == ["x/[REDACTED:github_token]"]
    assert set(data["redacted"]) == {"github_token", "password_in_prose", "url_password"}
    assert_nowhere(ws.root, PASSWORD, GHP)


def test_a_secret_in_a_link_is_refused_even_with_redact(cli: Any, ws: Workspace) -> None:
    error = error_of(cli("remember", "Notes.", "--link", f"supports:{GHP}", "--redact", "--json"))
    assert "cannot be masked" in error["repair"]
    assert_nowhere(ws.root, GHP)


# ---------------------------------------------------------------------------------------------- edits


def test_tags_add_and_outcome_reason_refuse_secrets(cli: Any, ws: Workspace) -> None:
    memory_id = json.loads(cli("remember", "Deploys run on Fridays.", "--json").out)["data"]["id"]
    head = git(ws.root, "rev-parse", "HEAD")
    error = error_of(cli("memory", "tags", memory_id, "--add", GHP, "--json"))
    assert "github_token in tags" in error["message"]
    error = error_of(cli("outcome", memory_id, "--signal", "helpful", "--reason", PROSE, "--json"))
    assert "password_in_prose in reason" in error["message"]
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert not (ws.root / "memories" / ".events" / f"{memory_id}.jsonl").exists()
    assert_nowhere(ws.root, GHP, PASSWORD)


# ---------------------------------------------------------------------------------------------- import


def test_import_names_each_flagged_line_and_field(cli: Any, ws: Workspace, tmp_path: Path) -> None:
    lines = [
        {"body": "Fine memory one."},
        {"body": "Deploy notes.", "source": [DB_URL]},
        {"body": "Tagged.", "tags": ["ci", GHP]},
        {"body": "Paths.", "paths": [f"src/{GHP}"]},
        {"body": "Extra.", "extra": {"db_password": PASSWORD + "!"}},
        {"body": "Fine memory two."},
    ]
    source = tmp_path / "batch.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    error = error_of(cli("import", "jsonl", str(source), "--json"))
    assert error["message"].startswith("batch.jsonl:2: ")
    assert "url_password in source" in error["message"]
    assert "--redact" in error["repair"]
    flagged = {e["line"]: e["message"] for e in error["details"]["errors"]}
    assert sorted(flagged) == [2, 3, 4, 5]
    assert "github_token in tags" in flagged[3]
    assert "github_token in paths" in flagged[4]
    assert "password_assignment in extra.db_password" in flagged[5]
    assert memory_files(ws) == []
    assert_nowhere(ws.root, PASSWORD, GHP)
    data = json.loads(cli("import", "jsonl", str(source), "--redact", "--json").out)["data"]
    assert data["imported"] == 6
    assert_nowhere(ws.root, PASSWORD, GHP)


# ---------------------------------------------------------------------------------------------- MCP


def test_mcp_remember_refuses_secrets_in_source_paths_and_tags(ws: Workspace, tmp_path: Path) -> None:
    from tests.test_mcp import call, serve

    async def scenario(session: Any) -> None:
        for extra in ({"source": [DB_URL]}, {"paths": [f"src/{GHP}"]}, {"tags": ["ci", GHP]}):
            is_error, document = await call(session, "remember", {"text": "Deploy notes.", **extra})
            assert is_error, document
            assert document["error"]["code"] == "secret_detected"

    serve(ws, tmp_path / "mcp.log", scenario)
    assert memory_files(ws) == []
    assert_nowhere(ws.root, PASSWORD, GHP)


# ---------------------------------------------------------------------------------------------- sync


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, Path]:
    """A clone with ee's git hooks installed, and its bare remote (already holding one memory)."""
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True, capture_output=True)
    Workspace.init(clone)
    assert run_cli("--workspace", str(clone), "remember", "Releases are tagged on main.").code == 0
    assert run_cli("--workspace", str(clone), "sync", "--json").code == 0
    assert run_cli("hooks", "install", "--json", cwd=clone).code == 0
    return clone, bare


def test_sync_refuses_to_commit_a_hand_edited_secret(shared: tuple[Path, Path]) -> None:
    clone, bare = shared
    (clone / "memories" / "ci.md").write_text(f"---\ntags: [ci]\n---\nCI notes.\nexport GH_TOKEN={GHP}\n")
    head = git(clone, "rev-parse", "HEAD")
    error = error_of(run_cli("--workspace", str(clone), "sync", "--json"))
    assert "memories/ci.md:5 github_token in body" in error["message"]
    assert "nothing was committed or pushed" in error["message"]
    assert "rotate" in error["repair"]
    assert git(clone, "rev-parse", "HEAD") == head
    assert_nowhere(clone, GHP)
    assert_nowhere(bare, GHP)


def test_sync_refuses_to_push_a_secret_committed_without_the_hooks(shared: tuple[Path, Path]) -> None:
    clone, bare = shared
    (clone / "memories" / "db.md").write_text(f"---\nsource: {DB_URL}\n---\nDatabase notes.\n")
    git(clone, "add", "memories/db.md")
    git(clone, "commit", "-q", "--no-verify", "-m", "db notes")
    error = error_of(run_cli("--workspace", str(clone), "sync", "--json"))
    assert "commit " in error["message"]
    assert "memories/db.md:2 url_password in source" in error["message"]
    assert "nothing was pushed" in error["message"]
    assert "git rebase -i" in error["repair"]
    assert_nowhere(bare, PASSWORD)


# ---------------------------------------------------------------------------------------------- merge driver


def test_the_merge_driver_reports_a_conflict_rather_than_merge_a_secret(tmp_path: Path) -> None:
    base = "---\nid: mem_a\ntags: [ci]\n---\nCI notes.\n"
    ours = "---\nid: mem_a\ntags: [ci, fast]\n---\nCI notes.\n"
    theirs = f"---\nid: mem_a\ntags: [ci]\nsource: {DB_URL}\n---\nCI notes.\n"
    files = []
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_text(text)
        files.append(str(tmp_path / name))
    result = merge_driver(*files, path="memories/ci.md")
    assert result.conflict
    assert "url_password" in result.reason
    proc = subprocess.run(
        [sys.executable, "-m", "ee", "merge-driver", *files, "memories/ci.md"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "url_password in source" in proc.stderr


# ---------------------------------------------------------------------------------------------- outputs


def hand_edited(ws: Workspace) -> str:
    """A memory file a person wrote with a secret in source, tags, paths, an extra key and the body."""
    text = (
        "---\nid: mem_01JE4ZQ0HANDEDITEDSECRETS0\nkind: fact\n"
        f"source: https://deploy:{PASSWORD}@git.internal/team/repo.git\n"
        f"tags: [deploy, {GHP}]\npaths: [ops/{GHP}/deploy.sh]\ndb_password: {PASSWORD}x\n"
        f"---\nDeploy with the release script; {PROSE}\n"
    )
    (ws.root / "memories" / "deploy.md").write_text(text)
    git(ws.root, "add", "memories/deploy.md")
    git(ws.root, "commit", "-q", "--no-verify", "-m", "hand edit")
    return "mem_01JE4ZQ0HANDEDITEDSECRETS0"


OUTPUTS = [
    ("search", "deploy release script", "--json"),
    *(("context", "deploy release script", "--format", f) for f in ("json", "jsonl", "toon", "markdown")),
    *(("context", "deploy release script", "--format", f) for f in ("compact", "hook")),
    ("memory", "list", "--json"),
    ("memory", "list", "--human"),
    ("export", "jsonl"),
]


@pytest.mark.parametrize("args", OUTPUTS, ids=[" ".join(a[:1] + a[-1:]) for a in OUTPUTS])
def test_a_hand_edited_secret_prints_masked_everywhere(
    cli: Any, ws: Workspace, args: tuple[str, ...]
) -> None:
    hand_edited(ws)
    result = cli(*args)
    assert result.code == 0, result.err
    assert PASSWORD not in result.out
    assert GHP not in result.out
    assert "REDACTED" in result.out


@pytest.mark.parametrize("form", ["--json", "--human"])
def test_memory_show_masks_every_field(cli: Any, ws: Workspace, form: str) -> None:
    memory_id = hand_edited(ws)
    result = cli("memory", "show", memory_id, form)
    assert result.code == 0, result.err
    assert PASSWORD not in result.out
    assert GHP not in result.out
    if form == "--json":
        data = json.loads(result.out)["data"]
        assert data["source"] == ["https://deploy:[REDACTED:url_password]@git.internal/team/repo.git"]
        assert data["tags"] == ["deploy", "[REDACTED:github_token]"]
        assert data["paths"] == ["ops/[REDACTED:github_token]/deploy.sh"]
        assert data["extra"] == {"db_password": "[REDACTED:password_assignment]"}


# ---------------------------------------------------------------------------------------------- red team


def test_allow_categories_needs_allow_bypass(cli: Any, ws: Workspace) -> None:
    (ws.root / "memories" / "gizmo.md").write_text(f"---\nkind: rule\n---\nGizmos use {GHP} to deploy.\n")
    doc = {
        "version": "ee.query.v1",
        "query": {"text": "gizmos"},
        "redaction": {"allowCategories": ["github_token"]},
    }
    result = cli("search", "--query-file", "-", "--json", input=json.dumps(doc))
    assert error_of(result)["code"] == "policy_denied"
    assert "allowCategories" in json.loads(result.out)["error"]["message"]
    assert GHP not in result.out + result.err
    config = ws.root / ".ee" / "config.toml"
    config.write_text(config.read_text().replace("[redaction]", "[redaction]\nallow_bypass = true", 1))
    allowed = cli("search", "--query-file", "-", "--json", input=json.dumps(doc))
    assert allowed.code == 0, allowed.err
    assert GHP in allowed.out  # the workspace allows it: the body is shown as written


@pytest.mark.parametrize("how", ["remember", "env", "outcome"])
def test_a_secret_agent_name_is_refused(
    cli: Any, ws: Workspace, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_id = json.loads(cli("remember", "Deploys run on Fridays.", "--json").out)["data"]["id"]
    head = git(ws.root, "rev-parse", "HEAD")
    if how == "remember":
        result = cli("remember", "token in agent name", "--agent", GHP, "--json")
    elif how == "env":
        monkeypatch.setenv("EE_AGENT", GHP)
        result = cli("remember", "token in agent name", "--json")
    else:
        result = cli("outcome", memory_id, "--signal", "helpful", "--agent", GHP, "--json")
    error = error_of(result)
    assert "github_token in agent" in error["message"]
    assert GHP not in result.out + result.err
    assert git(ws.root, "rev-parse", "HEAD") == head
    assert_nowhere(ws.root, GHP)


def test_an_actor_in_history_or_events_written_by_hand_is_masked(cli: Any, ws: Workspace) -> None:
    memory_id = json.loads(cli("remember", "Deploys run on Fridays.", "--json").out)["data"]["id"]
    path = next(p for p in memory_files(ws))
    path.write_text(path.read_text() + "More.\n")
    events = ws.root / "memories" / ".events" / f"{memory_id}.jsonl"
    events.parent.mkdir(parents=True, exist_ok=True)
    event = {"id": "ev1", "memory": memory_id, "signal": "helpful", "at": "2026-01-01T00:00:00Z"}
    events.write_text(json.dumps(event | {"source": f"agent:{GHP}"}) + "\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "-q", "--no-verify", "-m", f"edit {GHP}", "-m", f"Ee-Actor: agent:{GHP}")
    for args in (("memory", "history", memory_id, "--json"), ("why", memory_id, "--json")):
        result = cli(*args)
        assert result.code == 0, result.err
        assert GHP not in result.out
        assert "[REDACTED:github_token]" in result.out
    search = cli("search", "deploys fridays", "--json")
    assert GHP not in search.out


def test_a_secret_in_a_file_or_folder_name_is_masked_reported_and_never_synced(
    cli: Any, ws: Workspace, tmp_path: Path
) -> None:
    (ws.root / "memories" / f"{GHP}.md").write_text("---\nkind: rule\n---\nFilename memory about widgets.\n")
    (ws.root / "memories" / GHP).mkdir()
    (ws.root / "memories" / GHP / "nested.md").write_text("Nested memory about deploying sprockets.\n")
    for args in (
        ("context", "widgets sprockets", "--format", "markdown"),
        ("context", "widgets sprockets", "--format", "json"),
        ("search", "widgets sprockets", "--json"),
        ("search", "widgets sprockets", "--human"),
        ("export", "jsonl"),
        ("memory", "list", "--json"),
    ):
        result = cli(*args)
        assert result.code == 0, result.err
        assert GHP not in result.out + result.err, args
        assert GHP[:12] not in result.out + result.err, args
    search = json.loads(cli("search", "widgets sprockets", "--json").out)["data"]["hits"]
    assert len({hit["id"] for hit in search}) == 2  # two masked names keep two ids
    doctor = cli("doctor", "--json")
    assert GHP not in doctor.out
    problems = [p for p in doctor_report(json.loads(doctor.out))["problems"] if p["code"] == "secret_in_path"]
    assert len(problems) == 2
    assert all("git mv memories/ghp_????" in p["repair"] for p in problems)
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    git(ws.root, "remote", "add", "origin", str(tmp_path / "remote.git"))
    error = error_of(cli("sync", "--json"))
    assert "github_token in path" in error["message"]
    assert GHP not in json.dumps(error)
    assert "rename it: git mv memories/ghp_????" in error["repair"]  # the name is printed masked
    assert_nowhere(ws.root, GHP)
    assert_nowhere(tmp_path / "remote.git", GHP)


def test_an_error_quoting_a_value_masks_it(cli: Any, ws: Workspace) -> None:
    result = cli("remember", "notes", "--kind", GHP, "--json")
    assert result.code == ExitCode.USAGE
    assert GHP not in result.out + result.err
    assert "[REDACTED:github_token]" in result.err
    line = json.dumps({"body": "notes", "extra": {GHP: "x"}})
    result = cli("import", "jsonl", "-", "--json", input=line + "\n")
    assert result.code == ExitCode.POLICY
    assert GHP not in result.out + result.err


@pytest.mark.parametrize(
    "text",
    [
        f"gh split {GHP[:20]}\n{GHP[20:]}",
        "b64 " + __import__("base64").b64encode(GHP.encode()).decode(),
        f"g\u200dhp_{GHP[4:]}",
        "curl -u admin:hunter2 https://x",
    ],
    ids=["split", "base64", "zero-width", "curl-user"],
)
def test_remember_refuses_a_disguised_secret(cli: Any, ws: Workspace, text: str) -> None:
    assert error_of(cli("remember", text, "--json"))["code"] == "secret_detected"
    assert memory_files(ws) == []


def test_remember_redact_masks_a_split_token_in_the_file_name_and_subject_too(
    cli: Any, ws: Workspace
) -> None:
    result = cli("remember", f"gh split {GHP[:20]}\n{GHP[20:]}", "--redact", "--json")
    assert result.code == 0, result.err
    assert GHP[4:12] not in json.dumps(json.loads(result.out)["data"])
    assert all(GHP[4:12] not in p.name for p in memory_files(ws))
    assert GHP[4:12] not in git(ws.root, "log", "-p", "--all")


QUERY_ECHOES = [
    ("search", f"deploy notes {GHP}", "--json"),
    ("context", f"deploy notes {GHP}", "--json", "--min-relevance", "0"),
    ("context", f"deploy notes {GHP}", "--format", "markdown", "--min-relevance", "0"),
    ("context", f"deploy notes {GHP}", "--format", "toon", "--min-relevance", "0"),
    ("context", f"deploy notes {GHP}", "--format", "jsonl", "--min-relevance", "0"),
]


@pytest.mark.parametrize("args", QUERY_ECHOES, ids=lambda a: " ".join(a[:1] + a[2:4]))
def test_a_secret_in_a_query_is_never_echoed(cli: Any, ws: Workspace, args: tuple[str, ...]) -> None:
    """The answer quotes its query (``query.text``, a pack's ``task`` and title): masked."""
    assert cli("remember", "Deploy notes: run make deploy from main.").code == 0
    result = cli(*args)
    assert result.code == 0, result.err
    assert GHP not in result.out + result.err
    assert "deploy notes [REDACTED:github_token]" in result.out


def test_a_secret_in_a_prompt_or_a_branch_is_never_injected(cli: Any, ws: Workspace) -> None:
    """Claude Code's UserPromptSubmit hook sends the prompt; SessionStart packs for the branch's name and
    commit subjects: the context injected into the agent holds none of their secrets."""
    memory_id = ws.remember("Deploy notes: run make deploy from main.").id
    prompt = json.dumps({"prompt": f"deploy notes with {GHP}", "hook_event_name": "UserPromptSubmit"})
    result = cli("context", "-", "--format", "hook", "--min-relevance", "0", input=prompt)
    assert result.code == 0, result.err
    injected = json.loads(result.out)["hookSpecificOutput"]["additionalContext"]
    assert memory_id in injected
    assert GHP not in result.out + result.err
    git(ws.root, "checkout", "-q", "-b", f"deploy/{GHP}")
    git(ws.root, "commit", "-q", "--allow-empty", "-m", f"deploy notes: token {GHP}")
    result = cli("context", "--for-branch", "--format", "hook", "--min-relevance", "0")
    assert result.code == 0, result.err
    assert memory_id in result.out
    assert GHP not in result.out + result.err
    assert GHP[4:] not in result.out  # (the name's words: not the token without its prefix either)
    result = cli("why", memory_id, "--query", f"deploy {GHP}", "--json")
    assert result.code == 0, result.err
    assert GHP not in result.out + result.err
