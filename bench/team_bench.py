"""A team at the target's size: 3 clones x 200 mixed operations with ``ee sync`` in between, both store modes.

Run from the repository root (by hand: it takes minutes)::

    python -m bench.team_bench [--clones 3] [--ops 200] [--seed 1] [--mode code|branch|both]

The operations (remember, tags, outcome, hand edits, conflicting body edits), the checks (every acknowledged
write in every clone, identical stores and search results, no git conflict markers in any file or in the
remote's history, every conflict resolved by label) and the figures are those of
``tests/reliability/team.py``, which CI runs at 3 x 20. Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.soak import hermetic  # noqa: E402 - after the path set-up
from tests.reliability.team import run_team  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--ops", type=int, default=200, help="operations per clone")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=["code", "branch", "both"], default="both")
    args = parser.parse_args(argv)
    modes = {"code": [False], "branch": [True], "both": [False, True]}[args.mode]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="ee-team-") as tmp:
        base = Path(tmp)
        hermetic(base)
        for branch in modes:
            folder = base / ("branch" if branch else "code")
            folder.mkdir()
            report = run_team(folder, args.clones, args.ops, branch, args.seed)
            print(report.line(), flush=True)
            for failure in report.failures[:20]:
                print("  FAIL", failure)
            failed += len(report.failures)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
