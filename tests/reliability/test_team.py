"""Three clones of one store, mixed operations (conflicting body edits included) with ``ee sync`` in
between, in both store modes: nothing acknowledged is lost, no git markers anywhere, every conflict
resolvable by label, identical stores and search results (the full size: ``python -m bench.team_bench``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .team import run_team


@pytest.mark.parametrize("branch", [False, True], ids=["code-branch", "memory-branch"])
def test_three_clones_by_twenty_mixed_ops_converge(tmp_path: Path, branch: bool) -> None:
    report = run_team(tmp_path, clones=3, ops=20, branch=branch, seed=3)
    print("\n" + report.line())
    assert report.failures == []
    assert report.counts.get("body_conflict", 0) > 0
    assert report.conflicts_seen > 0  # the run did make conflicts, and resolved them
    assert sum(report.resolved.values()) == report.conflicts_seen
