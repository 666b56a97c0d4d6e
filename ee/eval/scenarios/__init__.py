"""``ee eval run``: scenario checks of retrieval and packs, each scenario in its own temporary workspace.

A scenario file (``ee.scenario.v1``, YAML or JSON; see ``schemas/ee.scenario.v1.json``) holds:

* ``memories``: records as ``ee import jsonl`` takes them, each with a local ``name`` (the runner gives it a
  stable real id); ``links`` point at names; ``agent: true|NAME`` writes it as an agent (its own commit, trust
  ``agent_assertion``); ``hand_edit: true`` writes the file as a person would in an editor (no secret check on
  the way in), committed with plain git unless ``commit: false``.
* ``date``: the commit date of the set-up (required with history); ``history``: steps ``{at, edit + body/set
  | expire | forget | add}`` in date order, each one commit dated ``at`` (for ``asOf`` questions).
* ``feedback``: ``ee outcome`` events (``memory``, ``signal``, ``reason``, ``agent``).
* ``checks``: a ``search`` text, a ``context`` task, or a ``query`` (ee.query.v1; ``pack: true`` packs it)
  with expectations — search: ``expect_top`` (within the top ``k``, default as many as named),
  ``expect_absent``; packs: ``must_include`` (names, or name → section), ``must_exclude``,
  ``must_be_advisory``, ``must_be_authoritative``, ``expect_omitted`` (name → reason), ``authoritative_only``;
  both: ``expect_order``, ``expect_flags``, ``expect_not_flagged``, ``expect_body``, ``expect_text_absent``.
  Every pack is also held to the invariants (within budget, nothing quarantined, only authoritative trust in
  the authoritative block). ``before_feedback: true`` runs a check before the feedback is recorded (a
  baseline); ``xfail: "<reason>"`` marks a check the engine is known to fail: reported as an expected
  failure (``xpass`` when it passes), not counted as a failure.

The report lists each scenario's status and, for each failed expectation, what was seen: the ranks of the
scenario's memories (search) or where each landed in the pack.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from ee.errors import EeError, NotFound
from ee.eval.scenarios.load import Scenario, load_file, load_folder

__all__ = ["Scenario", "default_folder", "load_file", "load_folder", "run_scenario", "run_scenarios", "table"]

FIXTURES = Path("tests") / "fixtures" / "eval"


def default_folder(workspace: str | None = None) -> Path:
    """``tests/fixtures/eval`` of the workspace root (when there is one and it has them), else of the ee
    source checkout this code runs from. A workspace named explicitly (``-W``) must exist."""
    from ee.errors import WorkspaceNotFound
    from ee.workspace import find_root

    candidates = []
    if workspace is not None:
        candidates.append(find_root(workspace) / FIXTURES)
    else:
        with contextlib.suppress(WorkspaceNotFound):
            candidates.append(find_root(None) / FIXTURES)
    candidates.append(Path(__file__).resolve().parents[3] / FIXTURES)
    for folder in candidates:
        if folder.is_dir():
            return folder
    raise NotFound(
        f"no scenario folder ({FIXTURES} in the workspace or the ee checkout)",
        "pass the folder: ee eval run DIR",
    )


def run_scenarios(scenarios: list[Scenario]) -> dict[str, Any]:
    """Run every scenario; the report with a summary (``failed`` > 0 means ``ee eval run`` exits 9)."""
    results = [run_scenario(s) for s in scenarios]
    checks = [c for r in results for c in r["checks"]]
    summary = {
        "scenarios": len(results),
        "passed": sum(r["status"] == "pass" for r in results),
        "failed": sum(r["status"] != "pass" for r in results),
        "checks": len(checks),
        **{
            status: sum(c["status"] == status for c in checks)
            for status in ("pass", "fail", "xfail", "xpass")
        },
    }
    return {"scenarios": results, "summary": summary}


def run_scenario(scenario: Scenario) -> dict[str, Any]:
    from ee.eval.scenarios.build import build, record_feedback
    from ee.eval.scenarios.checks import run_check

    started = time.perf_counter()
    report: dict[str, Any] = {
        "id": scenario.id,
        "title": scenario.data.get("title", ""),
        "file": str(scenario.path),
        "checks": [],
    }
    checks = scenario.data["checks"]
    with tempfile.TemporaryDirectory(prefix=f"ee-scenario-{scenario.id}-") as tmp:
        try:
            ws, ids = build(scenario, Path(tmp) / "ws")
            report["checks"] += [run_check(ws, ids, c) for c in checks if c.get("before_feedback")]
            record_feedback(ws, scenario.data.get("feedback", []), ids)
            report["checks"] += [run_check(ws, ids, c) for c in checks if not c.get("before_feedback")]
            report["ids"] = ids
        except EeError as exc:
            report["error"] = {"code": exc.code, "message": exc.message, "repair": exc.hint}
    failed = "error" in report or any(c["status"] == "fail" for c in report["checks"])
    report["status"] = "fail" if failed else "pass"
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report


def table(report: dict[str, Any]) -> str:
    """The human report: one line per scenario, then every failed (and expected-to-fail) expectation."""
    rows = report["scenarios"]
    width = max([len(r["id"]) for r in rows] + [8])
    lines = [f"{'scenario':<{width}}  {'checks':>6}  result"]
    details: list[str] = []
    for row in rows:
        checks = row["checks"]
        ok = sum(c["status"] in ("pass", "xpass") for c in checks)
        notes = [f"{n} {s}" for s in ("xfail", "xpass") if (n := sum(c["status"] == s for c in checks))]
        result = ("FAIL" if row["status"] == "fail" else "pass") + (f" ({', '.join(notes)})" if notes else "")
        lines.append(f"{row['id']:<{width}}  {ok:>2}/{len(row['checks']) or '?':<3}  {result}")
        if "error" in row:
            details.append(f"ERROR {row['id']}: {row['error']['message']}")
        details += [line for check in checks for line in _check_lines(row["id"], check)]
    s = report["summary"]
    lines += ["", *details, ""] if details else [""]
    lines.append(
        f"{s['scenarios']} scenarios: {s['passed']} passed, {s['failed']} failed; {s['checks']} checks"
        f" ({s['xfail']} expected failures, {s['xpass']} unexpected passes)"
    )
    return "\n".join(lines)


def _check_lines(scenario_id: str, check: dict[str, Any]) -> list[str]:
    """A failed, expected-to-fail or unexpectedly passing check: its header, then each failed expectation."""
    label = {"fail": "FAIL", "xfail": "XFAIL", "xpass": "XPASS"}.get(check["status"])
    if label is None:
        return []
    head = f"{label} {scenario_id} / {check['id']}"
    if check["status"] == "xpass":
        return [f"{head}: passes now: remove its xfail ({check['xfail']})"]
    lines = [f"{head}" + (f" (expected: {check['xfail']})" if check.get("xfail") else "")]
    lines += [f"    {f['expectation']}: {f['message']}" for f in check["failures"]]
    return lines
