"""Would evidence gain from the transformer arm? Measured offline on a session set, before building it.

Run from the repository root::

    python -m bench.sessions_transformer [DIR] [--json]

Issue 35 leaves evidence on the static (model2vec) arm "for stores or evidence too large to embed in time"
and asks where that line is. This script answers the question before anything is built: it imports
``DIR``'s transcripts (default: the dev set ``tests/fixtures/sessions``) into a temporary workspace with
``ee import session``, embeds every piece of evidence with both shipped models (the static model2vec one and
the int8 MiniLM of ``ee.index.transformer``, reading what the index embeds: each piece's first
``EMBED_CHARS`` characters), and reports, per arm:

* **semantic alone**: session hit@1/10 and MRR of the pieces ranked by cosine to the question (every
  answerable question), and newest-first for knowledge updates;
* **the full ranking** (``ee eval sessions``'s figures: BM25 + cosine fused, calibrated relevance, time,
  sessions) with the evidence index built from that arm's vectors and the question embedded by it, at
  each semantic fusion weight of ``--weights`` (shipped: 0.15, tuned for the static arm), with the
  relevance floor of the settings and without one;
* **abstention**: each question's best cosine over all evidence, for answerable and unanswerable
  questions (quartiles), the AUC of that best cosine as a separator (1.0: every unanswerable question
  below every answerable one; 0.5: no better than chance), and how many unanswerable questions a cut
  below every answerable question's best cosine would leave without a hit (the rule "never drop an
  answer" allows no more);
* the embed rate of each arm (texts/s, CPU time), what the size line of a background build rests on.

The full-ranking run swaps the model the evidence search reads (a proxy of the index view whose
``embedder()`` is the transformer): an experiment's harness, not how ee would build it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

DEV_SET = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sessions"


def _auc(low: list[float], high: list[float]) -> float:
    """P(a random ``high`` value > a random ``low`` one), ties half: the separator's AUC."""
    wins = sum((h > v) + 0.5 * (h == v) for h in high for v in low)
    return wins / (len(low) * len(high)) if low and high else float("nan")


def _quartiles(values: list[float]) -> list[float]:
    return [round(float(q), 3) for q in np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0])]


def _session_ranks(order: list[int], sessions: list[str]) -> list[str]:
    """Distinct sessions in the order their best piece ranks."""
    return list(dict.fromkeys(sessions[i] for i in order))


def semantic_alone(
    vectors: np.ndarray, queries: np.ndarray, questions: list[Any], sessions: list[str]
) -> dict[str, Any]:
    rr, hit1, hit10, newest, newest_n = [], 0, 0, 0, 0
    best: dict[str, list[float]] = {"answerable": [], "unanswerable": []}
    for q, vector in zip(questions, queries, strict=True):
        cos = vectors @ vector
        best["unanswerable" if q.abstain else "answerable"].append(float(cos.max()))
        if q.abstain:
            continue
        order = sorted(range(len(cos)), key=lambda i: -float(cos[i]))
        ranked = _session_ranks(order, sessions)
        wanted = set(q.sessions)
        rank = next((n for n, s in enumerate(ranked, 1) if s in wanted), None)
        rr.append(1 / rank if rank else 0.0)
        hit1 += rank == 1
        hit10 += rank is not None and rank <= 10
        if q.type == "knowledge-update" and len(q.sessions) > 1:
            newest_n += 1
            first_right = next((s for s in ranked if s in wanted), None)
            newest += first_right == q.sessions[0]
    n = len(rr)
    answerable, unanswerable = best["answerable"], best["unanswerable"]
    cut = min(answerable)
    return {
        "hit@1": round(hit1 / n, 4),
        "hit@10": round(hit10 / n, 4),
        "mrr": round(sum(rr) / n, 4),
        "newest_first": round(newest / newest_n, 4) if newest_n else None,
        "best_cosine_answerable": _quartiles(answerable),
        "best_cosine_unanswerable": _quartiles(unanswerable),
        "auc": round(_auc(unanswerable, answerable), 4),
        "abstain_below_every_answer": f"{sum(u < cut for u in unanswerable)} of {len(unanswerable)}",
    }


def embed_rate(model: Any, texts: list[str]) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    model.encode_documents(texts)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "texts": len(texts),
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
        "texts_per_second": round(len(texts) / wall, 1),
    }


class _TransformerView:
    """The memories' index view with the transformer as its model (what evidence search embeds with)."""

    def __init__(self, view: Any, transformer: Any) -> None:
        self._view = view
        self._transformer = transformer

    def embedder(self) -> Any:
        return self._transformer

    @property
    def model_key(self) -> str:
        return "transformer:" + self._transformer.model_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)


def full_ranking(folder: Path, transformer: Any | None, weight: float, floor: float | None) -> dict[str, Any]:
    """``ee eval sessions``'s overall figures, the evidence search reading ``transformer`` when given,
    with the semantic arm's fusion weight ``weight`` and the relevance floor ``floor`` (None: the
    setting's)."""
    import ee.sessions.search as search
    from ee.eval.sessions import evaluate

    original, shipped = search.rank_evidence, search.WEIGHT_SEMANTIC

    def swapped(root: Path, view: Any, *args: Any, **kwargs: Any) -> Any:
        return original(root, _TransformerView(view, transformer), *args, **kwargs)

    if transformer is not None:
        search.rank_evidence = swapped  # type: ignore[assignment]
    search.WEIGHT_SEMANTIC = weight
    try:
        overall = evaluate(folder, min_relevance=floor)["overall"]
    finally:
        search.rank_evidence, search.WEIGHT_SEMANTIC = original, shipped  # type: ignore[assignment]
    keys = ("hit@1", "hit@10", "mrr", "answerable_no_hit", "unanswerable_no_hit", "newest_first")
    keys += ("pack_terms",)
    return {k: overall[k] for k in keys}


def measure(folder: Path, weights: list[float]) -> dict[str, Any]:
    from ee.eval.sessions import read_questions, transcripts
    from ee.index.embedder import load_embedder
    from ee.index.transformer import load_transformer
    from ee.sessions import store
    from ee.sessions.index import EMBED_CHARS
    from ee.workspace import Workspace

    questions = read_questions(folder / "questions.jsonl")
    with tempfile.TemporaryDirectory(prefix="ee-sessions-transformer-") as tmp:
        ws, _ = Workspace.init(Path(tmp) / "ws")
        ws.import_sessions(transcripts(folder / "sessions"))
        with store.connect(ws.root, write=False) as db:
            assert db is not None
            ids = [i for i, _t in store.ids_times(db)]
            rows = store.get_many(db, ids)
    texts = [rows[i].text[:EMBED_CHARS] for i in ids]
    sessions = [rows[i].session_id for i in ids]
    static, transformer = load_embedder(), load_transformer()
    out: dict[str, Any] = {"dataset": str(folder), "evidence": len(ids), "questions": len(questions)}
    for name, model in (("static", static), ("transformer", transformer)):
        rate = embed_rate(model, texts)
        vectors = np.asarray(model.encode_documents(texts), dtype=np.float32)
        queries = np.asarray(model.encode([q.question for q in questions]), dtype=np.float32)
        out[name] = {
            "embed": rate,
            "semantic_alone": semantic_alone(vectors, queries, questions, sessions),
        }
    for name, model in (("static", None), ("transformer", transformer)):
        for weight in weights:
            for floor in (None, 0.0):
                label = f"full_ranking weight {weight}" + (" floor 0" if floor == 0.0 else "")
                out[name][label] = full_ranking(folder, model, weight, floor)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.sessions_transformer", description=__doc__.split("\n")[0]
    )
    parser.add_argument("folder", nargs="?", type=Path, default=DEV_SET)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--weights", default="0.15,0.3", help="the semantic arm's fusion weights to try (shipped: 0.15)"
    )
    args = parser.parse_args(argv)
    result = measure(args.folder, [float(w) for w in args.weights.split(",")])
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['dataset']}: {result['evidence']} pieces of evidence, {result['questions']} questions")
    for arm in ("static", "transformer"):
        data = result[arm]
        print(f"\n{arm}")
        for part, values in data.items():
            print(f"  {part}: " + ", ".join(f"{k} {v}" for k, v in values.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
