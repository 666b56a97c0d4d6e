"""The pair rules' precision and recall on the labelled pairs of ``tests/fixtures/curate-pairs/pairs.jsonl``.

Run from the repository root::

    python -m bench.curate_pairs [--split dev|held-out|all] [--show]

Each line of the file is a pair of memories (``older``, ``newer``) with the relation a person expects
(``contradiction``, ``update``, ``duplicate``, ``merge`` or ``none``) and why. The pairs are judged by
``ee.curate.similar.classify`` (the words alone, as a scan judges a pair before the index's vectors), and the
figures printed per relation: how many are expected, found, found right, precision and recall. Tune on the
``dev`` half only; the ``held-out`` half is reported, never tuned on. ``--show`` prints every pair judged
wrongly, with the rule's reason.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

PAIRS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "curate-pairs" / "pairs.jsonl"
RELATIONS = ("contradiction", "update", "duplicate", "merge", "none")


def load(split: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if split == "all" or row["split"] == split]


def judge(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str]]:
    """(pair, the relation found, the rule's reason) for each pair."""
    from ee.curate.similar import Features, classify

    out = []
    for row in rows:
        found = classify(Features.of(row["older"]), Features.of(row["newer"]))
        out.append((row, "none" if found is None else found.type, "" if found is None else found.reason))
    return out


def scores(judged: list[tuple[dict[str, Any], str, str]]) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for relation in RELATIONS:
        expected = sum(1 for row, _, _ in judged if row["expected"] == relation)
        found = sum(1 for _, got, _ in judged if got == relation)
        right = sum(1 for row, got, _ in judged if got == relation and row["expected"] == relation)
        table[relation] = {
            "expected": expected,
            "found": found,
            "right": right,
            "precision": round(right / found, 3) if found else None,
            "recall": round(right / expected, 3) if expected else None,
        }
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("dev", "held-out", "all"), default="dev")
    parser.add_argument("--show", action="store_true", help="print every pair judged wrongly")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    judged = judge(load(args.split))
    table = scores(judged)
    if args.json:
        print(json.dumps({"split": args.split, "pairs": len(judged), "relations": table}, indent=2))
        return 0
    print(f"split {args.split}: {len(judged)} pairs")
    for relation, row in table.items():
        print(
            f"  {relation:13} expected {row['expected']:3}  found {row['found']:3}  right {row['right']:3}"
            f"  precision {row['precision']}  recall {row['recall']}"
        )
    if args.show:
        for row, got, reason in judged:
            if got != row["expected"]:
                print(f"\n  expected {row['expected']}, found {got}: {reason}")
                print(f"    A: {row['older']}\n    B: {row['newer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
