#!/usr/bin/env python3
"""Fit the calibrated relevance of ee.query.relevance, per semantic arm, and report what a floor keeps.

Stores: the development set (Vim help, BEIR layout, built by ``../shared/eval/make-dev-set.sh DEVSET``),
this repository's ``memories/`` and the toy store ``tests/fixtures/stores/tinycalc``. With ``--arm
transformer`` every store's transformer vectors are computed first (as ``ee index rebuild`` does), and
the transformer arm answers; with ``--arm static`` the static model does.

Positives: the relevant document of each dev-set query, and the memory of each paraphrased question of
``tests/fixtures/relevance/paraphrase-*.tsv`` (issue 35's dev set). Negatives: the best candidates of each
off-topic question of ``tests/fixtures/offtopic/questions.txt`` on all three stores, and of each in-domain
question the store cannot answer (``tests/fixtures/relevance/unanswerable-*.txt``). Each of the four
groups weighs the same in the fit. ``holdout.txt``, ``adversarial.txt``, ``fresh.txt`` and the on-topic
questions of ``tests/fixtures/ontopic/ee-memories.tsv`` are never fitted: they show whether it generalises.

A candidate's relevance is the best over the whole query and its parts (``ee.query.relevance.parts``: a
long task is relevant to a memory that answers one of its parts), so each candidate carries the features
of the whole and of every part; the fit alternates between choosing each candidate's best alternative
under the current coefficients and a logistic regression (Newton's method) of ``[1, c, z − m, c·z, a, c·a]``
(c coverage, z the cosine evidence against the arm's own model's null, m what the best of the store's N
memories reaches by chance, a the store affinity capped at z) on the chosen ones. Session evidence keeps
the static fit its ranking was tuned with (``ee.query.relevance.EVIDENCE``): this script does not refit it.

The fit and its figures are the relevance of each candidate on its own: the transformer arm's cap for a
weakly supported hit far behind the best one (``ee.query.relevance.BEHIND_BEST``) and its word-coincidence
rule (``UNCONFIRMED``) are applied after it and measured with ``ee eval relevance`` (bench/README.md, the
sixth pass; stop 40, branch relevance6).

It prints the coefficients to paste into ee/query/relevance.py (``HYBRID`` for the static arm,
``TRANSFORMER`` for the transformer) and, for a range of floors, the share of each positive set that keeps
its answer and of each negative set left with nothing. ``--weights`` also measures the dev set's hybrid
recall@10 / MRR@10 (floor off) at other fusion weights of the arm (ee.query.fusion).

Usage::

    bash ../shared/eval/make-dev-set.sh /tmp/devset
    python scripts/tune_relevance.py /tmp/devset --arm transformer --cache /tmp/tr.json
    python scripts/tune_relevance.py /tmp/devset --arm static --cache /tmp/st.json --paraphrase-weight 1.3
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from ee.eval.beir import read_beir  # noqa: E402
from ee.eval.relevance import read_lines as questions  # noqa: E402
from ee.eval.relevance import read_pairs as pairs  # noqa: E402
from ee.index.view import open_index  # noqa: E402
from ee.ops.transfer import import_jsonl  # noqa: E402
from ee.policy.trust import Actor  # noqa: E402
from ee.query.document import from_arguments  # noqa: E402
from ee.query.engine import prepare, rank  # noqa: E402
from ee.query.relevance import features as relevance_features  # noqa: E402
from ee.workspace import Workspace  # noqa: E402

UNANSWERABLE_WEIGHT = 0.1
FLOORS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
RELEVANCE = REPO / "tests" / "fixtures" / "relevance"
OFFTOPIC = REPO / "tests" / "fixtures" / "offtopic"

Features = list[float]  # [1, c, z − m, c·z, a, c·a] of one alternative (the whole query or one part)
Candidate = list[Features]  # a candidate's alternatives: the whole query first, then each part


def dev_store(devset: Path, tmp: Path) -> tuple[Workspace, dict[str, str]]:
    corpus, _queries, _qrels = read_beir(devset)
    ids = {doc: f"d{n:07d}" for n, doc in enumerate(corpus)}
    ws, _ = Workspace.init(tmp / "dev")
    (ws.root / ".ee" / "config.toml").write_text("[store]\nmax_body_bytes = 67108864\n", encoding="utf-8")
    ws = Workspace(ws.root)
    lines = (json.dumps({"id": ids[d], "body": t or "(empty)", "kind": "fact"}) for d, t in corpus.items())
    import_jsonl(ws, lines, actor=Actor(), source_name="corpus.jsonl")
    return ws, ids


def copied_store(memories: Path, root: Path) -> Workspace:
    shutil.copytree(memories, root / "memories")
    Workspace.init(root)
    return Workspace(root)


def candidates(view: Any, text: str) -> list[tuple[str, Candidate]]:
    """(id, alternatives' features) of every candidate the engine ranks for ``text``, the floor off."""
    ctx = prepare(view, from_arguments(text, mode="hybrid"), min_relevance=0)
    out = []
    for item in rank(ctx)[0]:
        if item.evidence is None:
            continue
        found, i = item.evidence
        alternatives = [found, *found.parts]
        out.append(
            (
                ctx.ids[item.pos],
                [
                    [
                        float(x)
                        for x in relevance_features(
                            e.coverage[i], float(e.z[i]), e.affinity or 0.0, e.best_null
                        )
                    ]
                    for e in alternatives
                    if e.z is not None
                ],
            )
        )
    return out


def measure(devset: Path, arm: str, weights: list[float], work: Path | None = None) -> dict[str, Any]:
    """Every group's candidates: {"pos": {group: [[Candidate of each relevant candidate]]}, "neg": {group:
    [[Candidate of every candidate] per question]}} and the fusion-weight figures."""
    from ee.eval.beir import metrics
    from ee.index.transformer import embed_pending
    from ee.query import fusion
    from ee.query.engine import run_search

    with tempfile.TemporaryDirectory(prefix="ee-tune-") as name:
        tmp = Path(name)
        if work is not None and (work / "dev" / ".ee").is_dir():  # kept by --work: its vectors are cached
            corpus, _queries, _qrels = read_beir(devset)
            dev_ws, ids = Workspace(work / "dev"), {doc: f"d{n:07d}" for n, doc in enumerate(corpus)}
        else:
            dev_ws, ids = dev_store(devset, work or tmp)
        ee_ws = copied_store(REPO / "memories", tmp / "ee")
        tc_ws = copied_store(REPO / "tests" / "fixtures" / "stores" / "tinycalc" / "memories", tmp / "tc")
        views = {}
        for key, ws in (("dev", dev_ws), ("ee", ee_ws), ("tinycalc", tc_ws)):
            view = open_index(ws)
            if arm == "transformer":
                embed_pending(view)
                assert view.arm == "transformer"
            else:
                view.transformer_vectors = None
            views[key] = view
        stems = {
            key: {Path(m.path).stem: m.id for m in ws.list()[0]}
            for key, ws in (("ee", ee_ws), ("tinycalc", tc_ws))
        }
        _corpus, queries, qrels = read_beir(devset)
        pos: dict[str, list[list[Candidate]]] = {"dev": [], "paraphrase": [], "ontopic (holdout)": []}
        for qid, text in queries.items():
            relevant = {ids[d] for d in qrels[qid]}
            pos["dev"].append([c for i, c in candidates(views["dev"], text) if i in relevant])
        for key in ("ee", "tinycalc"):
            for text, stem in pairs(RELEVANCE / f"paraphrase-{key}.tsv"):
                want = stems[key][stem]
                pos["paraphrase"].append([c for i, c in candidates(views[key], text) if i == want])
        for text, stem in pairs(REPO / "tests" / "fixtures" / "ontopic" / "ee-memories.tsv"):
            want = stems["ee"][stem]
            pos["ontopic (holdout)"].append([c for i, c in candidates(views["ee"], text) if i == want])
        neg: dict[str, list[list[Candidate]]] = {}
        for which in ("questions", "holdout", "adversarial", "fresh"):
            for key, view in views.items():
                neg[f"offtopic {which} @{key}"] = [
                    [c for _i, c in candidates(view, q)] for q in questions(OFFTOPIC / f"{which}.txt")
                ]
        for key in ("ee", "tinycalc"):
            neg[f"unanswerable @{key}"] = [
                [c for _i, c in candidates(views[key], q)]
                for q in questions(RELEVANCE / f"unanswerable-{key}.txt")
            ]
        fusion_rows = {}
        back = {v: k for k, v in ids.items()}
        floor = module_floor()
        for mode, at in (("semantic", 0.0), ("hybrid", 0.0), ("semantic", floor), ("hybrid", floor)):
            rows = []
            for qid, text in queries.items():
                query = from_arguments(text, mode=mode, limit=10, fields="minimal")
                hits = run_search(views["dev"], query, min_relevance=at)["hits"]
                rows.append(metrics([back[h["id"]] for h in hits], qrels[qid], 10))
            fusion_rows[f"{mode} floor {at:g}"] = [
                round(float(np.mean([r[j] for r in rows])), 4) for j in (0, 1)
            ]
        for weight in weights:
            setattr(fusion, "WEIGHT_TRANSFORMER" if arm == "transformer" else "WEIGHT_SEMANTIC", weight)
            back = {v: k for k, v in ids.items()}
            rows = []
            for qid, text in queries.items():
                query = from_arguments(text, mode="hybrid", limit=10, fields="minimal")
                hits = run_search(views["dev"], query, min_relevance=0)["hits"]
                rows.append(metrics([back[h["id"]] for h in hits], qrels[qid], 10))
            fusion_rows[str(weight)] = [round(float(np.mean([r[j] for r in rows])), 4) for j in (0, 1)]
    return {"pos": pos, "neg": neg, "fusion": fusion_rows}


def module_floor() -> float:
    from ee.config import DEFAULT_MIN_RELEVANCE

    return DEFAULT_MIN_RELEVANCE


def choose(beta: np.ndarray, candidate: Candidate) -> Features:
    return max(candidate, key=lambda f: float(np.dot(beta, f)))


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray, ridge: float = 1.0) -> np.ndarray:
    """Weighted logistic regression with an L2 penalty (Newton's method, from zero until it settles):
    without the penalty, groups that one feature nearly separates drive the coefficients to infinity."""
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ beta, -30, 30)))
        gradient = x.T @ ((p - y) * weight) + ridge * beta
        hessian = (x * (p * (1 - p) * weight)[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return beta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("devset", type=Path)
    parser.add_argument("--arm", choices=["static", "transformer"], default="transformer")
    parser.add_argument(
        "--negatives",
        type=int,
        help="best candidates per negative question (default: 8 for the transformer arm; 1 for the static "
        "arm, whose paraphrases' cosine evidence overlaps off-topic candidates': whether a question gets "
        "nothing is decided by its best candidate alone, and 8 spent the fit on pushing down the rest, "
        "at equal kept answers 8 let more off-topic questions through (ee 0.921 / tinycalc 0.682 kept, Vim "
        "0.883 no hit at paraphrase weight 1; with 1, weight 2: 0.921 / 0.659 and 0.933): "
        "bench/README.md, stop 40, branch relevance6)",
    )
    parser.add_argument("--cache", type=Path, help="keep the candidates' features in this JSON file")
    parser.add_argument("--weights", default="", help="fusion weights to measure, e.g. 0.3,0.4,0.5")
    parser.add_argument("--work", type=Path, help="keep the dev-set store (and its cached vectors) here")
    parser.add_argument(
        "--paraphrase-weight",
        type=float,
        default=2.0,
        help="the paraphrase group's weight against the dev set's (answers win; transformer arm: with the "
        "best-of-N term, 2 keeps tinycalc's 42 of 44 and every store's off-topic target, 3 kept 43 but let "
        "more of tinycalc's off-topic and Vim's adversarial questions through; static arm: 1.3, the "
        "heaviest that keeps every dev off-topic set at ≥ 0.90 no hit: bench/README.md, stop 40)",
    )
    parser.add_argument(
        "--unanswerable-weight",
        type=float,
        default=UNANSWERABLE_WEIGHT,
        help="the in-domain unanswerable questions' weight against the off-topic ones' (answers win: "
        "their best candidates look like paraphrases' to both arms, so a heavy weight trades answers "
        "for abstentions)",
    )
    args = parser.parse_args()
    if args.negatives is None:
        args.negatives = 1 if args.arm == "static" else 8
    weights = [float(w) for w in args.weights.split(",") if w]
    if args.cache and args.cache.exists():
        data = json.loads(args.cache.read_text(encoding="utf-8"))
    else:
        data = measure(args.devset, args.arm, weights, args.work)
        if args.cache:
            args.cache.write_text(json.dumps(data), encoding="utf-8")
    for weight, (recall, mrr) in data["fusion"].items():
        if "floor" in weight:  # (the arm's figures with the coefficients and weight in ee/query)
            print(f"dev {weight}: recall@10 {recall:.4f}, MRR@10 {mrr:.4f}")
            continue
        print(f"fusion weight {weight}: dev hybrid recall@10 {recall:.4f}, MRR@10 {mrr:.4f} (floor off)")
    fitted = {"dev": 1.0, "paraphrase": args.paraphrase_weight}
    negative_groups = {f"offtopic questions @{k}": 1.0 / 3 for k in ("dev", "ee", "tinycalc")}
    share = args.unanswerable_weight / 2
    negative_groups |= {"unanswerable @ee": share, "unanswerable @tinycalc": share}
    from ee.query import relevance as module

    beta = np.array(module.TRANSFORMER if args.arm == "transformer" else module.HYBRID, dtype=np.float64)
    for _round in range(5):
        xs, ys, ws = [], [], []
        for group, share in fitted.items():
            rows = [c for row in data["pos"][group] for c in row]
            for c in rows:
                xs.append(choose(beta, c))
                ys.append(1.0)
                ws.append(share / max(1, len(rows)))
        for group, share in negative_groups.items():
            rows = []
            for row in data["neg"][group]:
                best = sorted(row, key=lambda c: -float(np.dot(beta, choose(beta, c))))[: args.negatives]
                rows += best
            for c in rows:
                xs.append(choose(beta, c))
                ys.append(0.0)
                ws.append(share / max(1, len(rows)))
        beta = fit(np.array(xs), np.array(ys), np.array(ws) * len(ws))
    print("coefficients:", tuple(round(float(b), 3) for b in beta))

    def relevance(c: Candidate) -> float:
        return float(1.0 / (1.0 + np.exp(-np.clip(np.dot(beta, choose(beta, c)), -60, 60))))

    print(f"{'floor':>6} " + " ".join(f"{g[:22]:>22}" for g in data["pos"]))
    for floor in FLOORS:
        kept = []
        for rows in data["pos"].values():
            found = [row for row in rows if row]
            kept.append(np.mean([any(relevance(c) >= floor for c in row) for row in found]))
        print(f"{floor:>6.2f} " + " ".join(f"{k:>22.3f}" for k in kept))
    print("share of negative questions left with nothing:")
    names = list(data["neg"])
    for floor in FLOORS:
        empty = [
            np.mean([not any(relevance(c) >= floor for c in row) for row in data["neg"][n]]) for n in names
        ]
        print(f"{floor:>6.2f} " + " ".join(f"{n}={e:.3f}" for n, e in zip(names, empty, strict=True)))


if __name__ == "__main__":
    main()
