"""``ee eval run``: the shipped scenarios pass, failures exit 9 naming the expectation, bad files exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ee.schemas import validator
from tests.conftest import REPO_ROOT, run_cli

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "eval"

SMALL = """\
schema: ee.scenario.v1
title: a small scenario
memories:
  - name: release_rule
    level: procedural
    kind: rule
    tags: [release]
    body: To release, run scripts/release.sh X.Y.Z from main; the publish workflow uploads to PyPI.
  - name: docs_rule
    level: procedural
    kind: command
    tags: [docs]
    body: The docs site is rebuilt by make docs-deploy, which runs mkdocs gh-deploy.
checks:
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def report_of(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["data"] if doc["success"] else doc["error"]["details"]["report"]


def only_check(doc: dict[str, Any]) -> dict[str, Any]:
    (scenario,) = report_of(doc)["scenarios"]
    (check,) = scenario["checks"]
    return check


# ------------------------------------------------------------------------------------------ shipped


def test_every_shipped_scenario_passes() -> None:
    res = run_cli("eval", "run", str(FIXTURES), "--json")
    assert res.code == 0, res.out[-3000:] + res.err
    doc = res.json
    validator("ee.response.v1").validate(doc)
    report = doc["data"]
    assert report["summary"]["failed"] == 0
    assert report["summary"]["scenarios"] >= 12
    for scenario in report["scenarios"]:
        assert scenario["status"] == "pass", scenario
        for check in scenario["checks"]:
            assert check["status"] in ("pass", "xfail", "xpass"), (scenario["id"], check)
            if check["status"] == "xfail":
                assert check["xfail"]
                assert check["failures"]


def test_shipped_scenarios_validate_against_the_schema() -> None:
    from ee.eval.scenarios import load_folder
    from ee.schemas import list_schemas

    assert "ee.scenario.v1" in list_schemas()
    scenarios = load_folder(FIXTURES)
    assert len(scenarios) >= 12
    assert len({s.id for s in scenarios}) == len(scenarios)


def test_scenario_option_selects_one_from_the_default_folder(tmp_path: Path) -> None:
    # Outside any workspace the default folder is the ee checkout's tests/fixtures/eval.
    res = run_cli("eval", "run", "--scenario", "release-rules", "--json", cwd=tmp_path)
    assert res.code == 0, res.out + res.err
    report = res.json["data"]
    assert [s["id"] for s in report["scenarios"]] == ["release-rules"]
    assert report["summary"]["scenarios"] == 1


def test_unknown_scenario_id_is_not_found(tmp_path: Path) -> None:
    write(tmp_path, "one.yaml", SMALL + "  - {id: c, search: release, expect_top: [release_rule]}\n")
    res = run_cli("eval", "run", str(tmp_path), "--scenario", "nope", "--json")
    assert res.code == 7
    assert "one" in res.json["error"]["repair"]


# ------------------------------------------------------------------------------------------ failures


def test_a_failing_expectation_exits_9_naming_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        "wrong.yaml",
        SMALL + "  - id: docs-first\n    search: how do I release to PyPI\n    expect_top: [docs_rule]\n",
    )
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 9, res.out + res.err
    doc = res.json
    validator("ee.error.v1").validate(doc)
    assert doc["error"]["code"] == "eval_failed"
    check = only_check(doc)
    assert check["status"] == "fail"
    (failure,) = check["failures"]
    assert failure["expectation"] == "expect_top"
    assert failure["memory"] == "docs_rule"
    # The docs rule shares nothing with a question about releasing: the relevance floor leaves it out.
    assert failure["actual"]["rank"] is None
    assert "not in the results" in failure["message"]
    assert failure["actual"]["top"] == ["release_rule"]
    assert check["observed"]["ranks"] == {"docs_rule": None, "release_rule": 1}


def test_the_human_report_names_the_failed_expectation(tmp_path: Path) -> None:
    write(
        tmp_path,
        "wrong.yaml",
        SMALL + "  - id: pack-excludes\n    context: release the package to PyPI\n"
        "    must_exclude: [release_rule]\n",
    )
    res = run_cli("eval", "run", str(tmp_path), "--human")
    assert res.code == 9
    assert "FAIL wrong / pack-excludes" in res.out
    assert "must_exclude: release_rule should not be in the pack but is in procedural" in res.out
    assert "1 of 1 scenarios failed: wrong" in res.err


def test_xfail_is_reported_as_expected_and_xpass_as_unexpected(tmp_path: Path) -> None:
    write(
        tmp_path,
        "known.yaml",
        SMALL
        + (
            "  - id: known-gap\n    xfail: docs should win here but the engine disagrees\n"
            "    search: how do I release to PyPI\n    expect_top: [docs_rule]\n"
            "  - id: fixed-gap\n    xfail: this used to fail\n"
            "    search: how do I release to PyPI\n    expect_top: [release_rule]\n"
        ),
    )
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 0, res.out + res.err
    summary = res.json["data"]["summary"]
    assert (summary["xfail"], summary["xpass"], summary["failed"]) == (1, 1, 0)
    human = run_cli("eval", "run", str(tmp_path), "--human")
    assert "XFAIL known / known-gap (expected: docs should win here but the engine disagrees)" in human.out
    assert "XPASS known / fixed-gap: passes now: remove its xfail" in human.out


def test_a_scenario_that_cannot_be_built_fails(tmp_path: Path) -> None:
    # ee import refuses a secret: the scenario is reported with the error, and the run exits 9.
    text = SMALL.replace("uploads to PyPI.", "uploads to PyPI with password=Zq7vLp2mRt9xWk4s.")
    write(tmp_path, "leak.yaml", text + "  - {id: c, search: release, expect_top: [release_rule]}\n")
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 9
    (scenario,) = report_of(res.json)["scenarios"]
    assert scenario["error"]["code"] == "secret_detected"


def test_pack_checks_hold_the_budget_and_history_dates_do_not_leak(tmp_path: Path) -> None:
    text = SMALL.replace(
        "checks:\n",
        (
            "history:\n  - at: '2025-02-01T00:00:00Z'\n    edit: docs_rule\n"
            "    body: The docs site is rebuilt by make docs, which runs sphinx-build.\n"
            "checks:\n  - id: tight\n    context: release the package\n    max_tokens: 60\n"
            "    must_include: [release_rule]\n"
            "  - id: old-docs\n    search: rebuild the docs site\n    as_of: '2025-01-15T00:00:00Z'\n"
            "    expect_body: {docs_rule: {contains: [mkdocs]}}\n"
        ),
    ).replace("title: a small scenario\n", "title: a small scenario\ndate: '2025-01-01T00:00:00Z'\n")
    write(tmp_path, "dated.yaml", text)
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 0, res.out + res.err
    (scenario,) = res.json["data"]["scenarios"]
    tight = scenario["checks"][0]["observed"]
    assert tight["used_tokens"] <= tight["max_tokens"] == 60
    assert "GIT_AUTHOR_DATE" not in os.environ
    assert "GIT_COMMITTER_DATE" not in os.environ


def test_feedback_runs_after_baseline_checks(tmp_path: Path) -> None:
    text = SMALL.replace(
        "checks:\n",
        (
            "feedback:\n  - {memory: release_rule, signal: helpful, agent: codex}\n"
            "checks:\n"
            "  - {id: after, search: release, expect_top: [release_rule]}\n"
            "  - {id: before, before_feedback: true, search: release, expect_top: [release_rule]}\n"
        ),
    )
    write(tmp_path, "fb.yaml", text)
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 0, res.out + res.err
    (scenario,) = res.json["data"]["scenarios"]
    assert [c["id"] for c in scenario["checks"]] == ["before", "after"]


def test_a_json_scenario_file_runs(tmp_path: Path) -> None:
    import yaml

    data = yaml.safe_load(SMALL + "  - {id: c, search: release to PyPI, expect_top: [release_rule]}\n")
    write(tmp_path, "plain.json", json.dumps(data, indent=2))
    res = run_cli("eval", "run", str(tmp_path / "plain.json"), "--json")
    assert res.code == 0, res.out + res.err
    assert res.json["data"]["scenarios"][0]["id"] == "plain"


# ------------------------------------------------------------------------------------------ bad files


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (SMALL + "  - id: c\n    search: [unclosed\n", 16, "not valid YAML"),
        (SMALL + "  - id: c\n    search: release\n    expect_topp: [release_rule]\n", 17, "expect_topp"),
        (
            SMALL + "  - id: c\n    search: release\n    expect_top: [nobody]\n",
            17,
            "no memory named 'nobody'",
        ),
        (
            SMALL + "  - id: c\n    search: release\n    must_include: [release_rule]\n",
            17,
            "must_include does not apply to a search check",
        ),
        (
            SMALL + "  - id: c\n    context: release\n    search: release\n",
            15,
            "exactly one of search, context",
        ),
        (SMALL.replace("kind: command", "kind: comand") + "  - {id: c, search: x}\n", 11, "unknown kind"),
        (
            SMALL.replace("  - name: docs_rule", "  - name: release_rule") + "  - {id: c, search: x}\n",
            9,
            "defined twice",
        ),
        (
            SMALL + "  - id: c\n    query: {version: ee.query.v1, query: {text: x}, speed: warp}\n",
            16,
            "/speed",
        ),
        (
            SMALL.replace("title: a small scenario", "title: a\ntitle: b") + "  - {id: c, search: x}\n",
            3,
            "given twice",
        ),
        (
            SMALL.replace(
                "checks:\n", "history:\n  - {at: '2025-01-01T00:00:00Z', forget: docs_rule}\nchecks:\n"
            )
            + "  - {id: c, search: x}\n",
            14,
            "needs a set-up date",
        ),
        (
            "date: '2025-03-01T00:00:00Z'\n"
            + SMALL.replace(
                "checks:\n", "history:\n  - {at: '2025-01-01T00:00:00Z', forget: docs_rule}\nchecks:\n"
            )
            + "  - {id: c, search: x}\n",
            16,
            "dated before date",
        ),
    ],
)
def test_a_malformed_yaml_scenario_exits_2_with_file_and_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    path = write(tmp_path, "bad.yaml", text)
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 2, res.out + res.err
    message = res.json["error"]["message"]
    assert message.startswith(f"{path}:{line}:"), message
    assert words in message


def test_a_scenario_with_yaml_aliases_is_refused_before_it_expands(tmp_path: Path) -> None:
    """A cloned repository's scenario is untrusted: nine lines of nested aliases expand to 10**9 strings.
    The refusal names the first anchor's line, and comes before anything is built from it."""
    bomb = "".join(
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else '"lol"'] * 10) + "]\n" for i in range(9)
    )
    path = write(
        tmp_path, "bomb.yaml", SMALL.replace("checks:\n", bomb + "checks:\n") + "  - {id: c, search: x}\n"
    )
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 2, res.out + res.err
    message = res.json["error"]["message"]
    assert message.startswith(f"{path}:{SMALL.count(chr(10))}:"), message
    assert "anchors and aliases" in message


def test_a_malformed_json_scenario_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.json", '{\n  "memories": [],\n  "checks": [\n}\n')
    res = run_cli("eval", "run", str(tmp_path), "--json")
    assert res.code == 2
    assert res.json["error"]["message"].startswith(f"{path}:4:")
