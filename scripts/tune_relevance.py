#!/usr/bin/env python3
"""Fit the calibrated relevance of ee.query.relevance and report what a floor keeps and drops.

Positives: the relevant document of each development-set query (Vim help, BEIR layout, built by
``../shared/eval/make-dev-set.sh DEVSET``) among that query's candidates. Negatives: the best candidates of
each off-topic question of ``tests/fixtures/offtopic/questions.txt``, against the dev-set store and against
this repository's own ``memories/``. ``tests/fixtures/offtopic/holdout.txt``, ``adversarial.txt``
(questions whose words also mean something in software: python, bug, cache, branch) and ``fresh.txt``
(written after the floor was fixed) are never fitted: they only show whether the floor generalises. The
features are computed by ee's own code (``ee.query.relevance.evidence``) over the candidates ee's engine
ranks, so the fit describes exactly what a query computes.

The fit is a logistic regression (Newton's method, class-balanced weights) of
``[1, c, z, c·z, a, c·a]`` (c coverage, a the store affinity capped at z); with ``--lexical`` only
``[1, c]`` (the model-less formula).
It prints the coefficients to paste into ee/query/relevance.py and, for a range of floors, the share of
dev-set queries whose relevant document still passes and the share of off-topic questions left with no hit.

Figures (2026-12-04, stop 27, minilm-l6-v2-tl256, the coefficients in ee/query/relevance.py) at the default
floor 0.8: dev queries that keep their relevant document 0.937; on-topic questions about this repository's
memories that keep theirs 0.925; off-topic questions left with no hit on the dev-set store: questions 0.950,
holdout 0.971, adversarial 0.941, fresh 0.973; on this repository's memories 0.983, 1.0, 0.961, 1.0. The
distilled model it replaced, with ``[1, c, z, c·z]`` only: 0.925; 0.925; 0.933, 0.914, 0.863, 0.932; 1.0 on
all four. The store affinity is what made the trained model pay: without it, refitted, stop 25's model of
the same recipe kept 0.893 / 0.900 and left 0.883 / 0.886 / 0.863 / 0.973 empty. With the distilled model
the affinity moved the trade-off rather than improving it (holdout 0.886, this repository's adversarial
0.961).

Usage::

    bash ../shared/eval/make-dev-set.sh /tmp/devset
    python scripts/tune_relevance.py /tmp/devset            # hybrid coefficients
    python scripts/tune_relevance.py /tmp/devset --lexical  # the lexical-only coefficients
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ee.eval.beir import read_beir  # noqa: E402
from ee.index.view import open_index  # noqa: E402
from ee.policy.trust import Actor  # noqa: E402
from ee.query.document import from_arguments  # noqa: E402
from ee.query.engine import prepare, rank  # noqa: E402
from ee.query.relevance import features as relevance_features  # noqa: E402
from ee.store.transfer import import_jsonl  # noqa: E402
from ee.workspace import Workspace  # noqa: E402

FLOORS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def questions(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def dev_store(devset: Path, tmp: Path) -> tuple[Workspace, dict[str, str]]:
    corpus, _queries, _qrels = read_beir(devset)
    ids = {doc: f"d{n:07d}" for n, doc in enumerate(corpus)}
    ws, _ = Workspace.init(tmp / "dev")
    (ws.root / ".ee" / "config.toml").write_text("[store]\nmax_body_bytes = 67108864\n", encoding="utf-8")
    ws = Workspace(ws.root)
    lines = (json.dumps({"id": ids[d], "body": t or "(empty)", "kind": "fact"}) for d, t in corpus.items())
    import_jsonl(ws, lines, actor=Actor(), source_name="corpus.jsonl")
    return ws, ids


def repo_store(tmp: Path) -> Workspace:
    root = tmp / "repo"
    shutil.copytree(REPO / "memories", root / "memories")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    Workspace.init(root)
    return Workspace(root)


Evidence = tuple[float, float | None, float | None]  # (coverage, z, store affinity) of one candidate


def candidates(view: object, text: str, lexical: bool) -> list[tuple[str, Evidence]]:
    """(id, (coverage, z, affinity)) of every candidate the engine ranks for ``text``, the floor off."""
    mode = "lexical" if lexical else "hybrid"
    ctx = prepare(view, from_arguments(text, mode=mode), min_relevance=0)
    out = []
    for item in rank(ctx)[0]:
        if item.evidence is None:
            continue
        found, i = item.evidence
        z = None if found.z is None else float(found.z[i])
        out.append((ctx.ids[item.pos], (float(found.coverage[i]), z, found.affinity)))
    return out


def measure(devset: Path, sets: dict[str, list[str]], lexical: bool) -> tuple[Any, Any, Any]:
    """(per dev query: its relevant candidates' evidence; per (store, question set): per question, every
    candidate's evidence; per on-topic question about this repository's memories: the expected memory's
    evidence, if the engine ranks it at all). Evidence: (coverage, z, store affinity)."""
    with tempfile.TemporaryDirectory(prefix="ee-tune-") as name:
        tmp = Path(name)
        dev_ws, ids = dev_store(devset, tmp)
        repo_ws = repo_store(tmp)
        _corpus, queries, qrels = read_beir(devset)
        stores = {"dev-set store": open_index(dev_ws), "ee's memories": open_index(repo_ws)}
        positives: list[list[Evidence]] = []
        for qid, text in queries.items():
            relevant = {ids[d] for d in qrels[qid]}
            positives.append(
                [e for i, e in candidates(stores["dev-set store"], text, lexical) if i in relevant]
            )
        off = {
            (store, which): [[e for _i, e in candidates(view, q, lexical)] for q in qs]
            for store, view in stores.items()
            for which, qs in sets.items()
        }
        by_stem = {Path(m.path).stem: m.id for m in repo_ws.list()[0]}
        ontopic = [
            [e for i, e in candidates(stores["ee's memories"], q, lexical) if i == by_stem[stem]]
            for q, stem in ontopic_questions()
        ]
    return positives, off, ontopic


def ontopic_questions() -> list[tuple[str, str]]:
    """(question, the file name of the memory it must find) from tests/fixtures/ontopic/ee-memories.tsv."""
    path = REPO / "tests" / "fixtures" / "ontopic" / "ee-memories.tsv"
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    return [(row[0].strip(), row[1].strip()) for row in rows if len(row) == 2 and not row[0].startswith("#")]


def features(evidence: Evidence, lexical: bool) -> list[float]:
    """The candidate's features as ee.query.relevance weighs them (the one place their form is written)."""
    coverage, z, affinity = evidence
    if lexical:
        return [float(x) for x in relevance_features(coverage, None)]
    return [float(x) for x in relevance_features(coverage, z or 0.0, affinity or 0.0)]


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    weight = np.where(y == 1, (y == 0).sum() / max(1, (y == 1).sum()), 1.0)
    beta = np.zeros(x.shape[1])
    for _ in range(60):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        gradient = x.T @ ((p - y) * weight)
        hessian = (x * (p * (1 - p) * weight)[:, None]).T @ x + 1e-2 * np.eye(x.shape[1])
        beta -= np.linalg.solve(hessian, gradient)
    return beta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("devset", type=Path)
    parser.add_argument("--lexical", action="store_true", help="fit the model-less (coverage-only) formula")
    parser.add_argument("--negatives", type=int, default=8, help="best candidates per off-topic question")
    parser.add_argument("--cache", type=Path, help="keep the candidates' features in this JSON file")
    args = parser.parse_args()
    fixtures = REPO / "tests" / "fixtures" / "offtopic"
    # Fitted on questions.txt only; holdout.txt, adversarial.txt (off-topic questions whose words also mean
    # something in software) and fresh.txt (written after the floor was fixed) show if it generalises.
    names = ("questions", "holdout", "adversarial", "fresh")
    sets = {name: questions(fixtures / f"{name}.txt") for name in names}
    if args.cache and args.cache.exists():
        cached = json.loads(args.cache.read_text(encoding="utf-8"))
        positives, ontopic = cached["positives"], cached["ontopic"]
        off = {tuple(key.split("|")): rows for key, rows in cached["off"].items()}
    else:
        positives, off, ontopic = measure(args.devset, sets, args.lexical)
        if args.cache:
            off_json = {"|".join(key): rows for key, rows in off.items()}
            cache = {"positives": positives, "off": off_json, "ontopic": ontopic}
            args.cache.write_text(json.dumps(cache), encoding="utf-8")
    x_pos = [features(e, args.lexical) for row in positives for e in row]
    x_neg = []
    for (_store, which), rows in off.items():
        if which != "questions":
            continue
        for row in rows:
            best = sorted(row, key=lambda e: -(e[0] + (e[1] or 0.0) / 10))[: args.negatives]
            x_neg += [features(e, args.lexical) for e in best]
    x = np.array(x_pos + x_neg)
    y = np.r_[np.ones(len(x_pos)), np.zeros(len(x_neg))]
    beta = fit(x, y)
    print("coefficients:", tuple(round(float(b), 3) for b in beta))

    def relevance(e: Evidence) -> float:
        return float(1.0 / (1.0 + np.exp(-np.dot(beta, features(e, args.lexical)))))

    # dev kept: dev queries whose relevant document passes; on-topic kept: questions about this repository's
    # memories whose memory passes (never fitted); then, per store and off-topic set, the share left empty
    print(
        f"{'floor':>6} {'dev kept':>9} {'on-topic kept':>14} "
        + " ".join(f"{s + ' ' + w:>28}" for s, w in off)
    )
    for floor in FLOORS:
        with_relevant = [row for row in positives if row]
        kept = np.mean([any(relevance(e) >= floor for e in row) for row in with_relevant])
        empty = [
            np.mean([not any(relevance(e) >= floor for e in row) for row in rows]) for rows in off.values()
        ]
        mine = np.mean([any(relevance(e) >= floor for e in row) for row in ontopic])
        print(f"{floor:>6.2f} {kept:>9.3f} {mine:>14.3f} " + " ".join(f"{e:>28.3f}" for e in empty))


if __name__ == "__main__":
    main()
