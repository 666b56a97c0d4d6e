"""Reproducible tuning and evaluation of ee's retrieval core on a BEIR-layout set.

Usage::

    bash /work/shared/eval/make-dev-set.sh /work/devset
    PYTHONPATH=. python scripts/tune_retrieval.py /work/devset                # the figures table (~1 min)
    PYTHONPATH=. python scripts/tune_retrieval.py /work/devset --grid lexical # k1 / b / method grid
    PYTHONPATH=. python scripts/tune_retrieval.py /work/devset --grid fusion  # normalisation / weight / pool
    PYTHONPATH=. python scripts/tune_retrieval.py /work/devset --vectors DIR  # another encoder's vectors

What is measured (k = 10, one relevant document per query on the dev set):

* ``bm25s baseline``: bm25s's own tokenizer with English stopwords, k1 1.5, b 0.75 (the eval README's row).
* ``ee lexical``: :func:`ee.index.tokenize.tokenize` + :func:`ee.index.lexical.build` with its defaults.
* ``ee semantic``: cosine between the query vector and each document vector from the shipped static model
  (:func:`ee.index.embedder.load_embedder`). ``full`` embeds the whole text; ``lead+full`` embeds the first
  :data:`LEAD_WORDS` words and the whole text and adds the two unit vectors (then renormalises): a static
  model mean-pools its token vectors, so a long text drifts towards the corpus average, and the lead (title,
  first sentence) is what a document is about. A text of at most ``LEAD_WORDS`` words is unchanged.
* ``ee hybrid``: :func:`ee.query.fusion.fuse` over the union of the top :data:`POOL` of each arm, BOTH arms
  scoring every candidate of the union (BM25 is 0.0 where no term matches). ``pools only`` instead gives
  each arm only its own top ``POOL`` (a candidate missing from an arm normalises to 0).

Figures on the Vim dev set (6 398 docs, 1 035 queries), bm25s 0.3.16, k1 1.5, b 1.0, w 0.3, pool 100; BM25
counts each document's lead (its first LEAD_WORDS words) three times in all, as ee indexes it
(:func:`ee.index.derive.index_tokens`; ``--lead-repeat 0`` measures without)::

    $ PYTHONPATH=. python scripts/tune_retrieval.py /work/devset
    system                                            R@10   MRR@10 nDCG@10
    bm25s baseline (stopwords en, k1 1.5, b 0.75)     0.630  0.398  0.453
    ee lexical (k1 1.5, b 1.0, lead x3)               0.678  0.466  0.517
    ee semantic (full)                                0.432  0.244  0.288
    ee hybrid rrf k=60 equal weights (full)           0.626  0.377  0.436
    ee hybrid min-max w 0.3, pools only (full)        0.700  0.463  0.520
    ee hybrid min-max w 0.3 (full)                    0.695  0.463  0.519
    ee semantic (lead24+full)                         0.493  0.275  0.327
    ee hybrid rrf k=60 equal weights (lead24+full)    0.647  0.405  0.463
    ee hybrid min-max w 0.3, pools only (lead24+full) 0.701  0.476  0.531
    ee hybrid min-max w 0.3 (lead24+full)             0.702  0.475  0.530

Against the baseline: lexical +7.6 % R@10, +17.1 % MRR@10; hybrid (lead24+full, union) +11.4 % R@10,
+19.3 % MRR@10. Without the lead counted again (``--lead-repeat 0``): lexical 0.666 / 0.445 / 0.498, hybrid
0.701 / 0.458 / 0.517. The grids are summarised in the docstrings of ee.index.tokenize (tokenizer ablations),
ee.index.lexical (k1 / b / method) and ee.query.fusion (normalisations, weights, pools).

Document text to embed, semantic arm alone (R@10 / MRR@10): whole text 0.432 / 0.244; first 16 / 24 / 32 /
64 words only 0.477 / 0.292, 0.473 / 0.276, 0.466 / 0.263, 0.443 / 0.242; lead + whole (unit vectors added)
with 16 / 24 / 32 / 64 words 0.505 / 0.292, 0.493 / 0.275, 0.479 / 0.265, 0.452 / 0.245; first line only
0.356 / 0.222; 0.3 / 0.7 lead-whole mix 0.481 / 0.265; the lead repeated in the text 0.468 / 0.261;
max over 64-word windows 0.408 / 0.231. 24 words is kept (about a title plus a first sentence), not the dev
set's best 16.

What a better semantic arm would give (``--vectors``, here the teacher's own vectors, all-MiniLM-L6-v2, from
``scripts/train_model.py teacher --devset /work/devset --save DIR``; documents as lead and whole, as ee
embeds them), on 2026-12-05 against ee's trained static model of the same run::

    ee semantic (lead24+full)                         0.521  0.299  0.352
    ee hybrid min-max w 0.3 (lead24+full)             0.704  0.480  0.534
    given vectors: semantic                           0.596  0.346  0.406
    given vectors: hybrid min-max w 0.3               0.727  0.489  0.546
    given vectors: hybrid min-max w 0.4               0.739  0.488  0.548

So hybrid recall@10 1.15x the bm25s baseline (0.7245) takes a semantic arm about as good as the transformer
itself: the teacher reaches 1.154x at the shipped weight, the static student 1.117x. Things tried on the
student that did not close the gap (scratch measurements on the same set, hybrid R@10 at w 0.3 unless
said): RM3 pseudo-relevance feedback on the lexical arm (10 documents, 20 terms, lambda 0.35: lexical
0.698, hybrid 0.714 with MRR down to 0.467); Rocchio feedback on the query vector (semantic 0.505-0.509,
below none); a late-interaction arm over the candidates (each query token's best cosine among a
document's tokens, weighted by the token vector's norm: semantic-only 0.629 mixed 0.6/0.4 with the
cosine, but hybrid only 0.709-0.717, as its exact-token matches repeat the lexical arm); the fused score
plus coverage, a per-query weight from the best coverage, or the cosine as a z-score over the whole store
(0.698-0.712).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ee.index.tokenize import LEAD_WORDS, lead

if TYPE_CHECKING:
    from numpy.typing import NDArray

K = 10
POOL = 100

Fuser = Callable[[Mapping[str, float], Mapping[str, float]], Mapping[str, Any]]


def load_beir(root: Path) -> tuple[list[str], list[str], list[str], list[str], dict[str, set[str]]]:
    """(doc ids, doc texts, query ids, query texts, qrels) of a BEIR folder; queries without qrels dropped."""
    doc_ids, docs = [], []
    with (root / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            doc_ids.append(d["_id"])
            docs.append((d.get("title", "") + "\n" + d["text"]).strip())
    qrels: dict[str, set[str]] = {}
    with (root / "qrels.tsv").open(encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, set()).add(did)
    q_ids, queries = [], []
    with (root / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            if q["_id"] in qrels:
                q_ids.append(q["_id"])
                queries.append(q["text"])
    return doc_ids, docs, q_ids, queries, qrels


def metrics(
    ranked: Sequence[Sequence[str]], q_ids: Sequence[str], qrels: dict[str, set[str]]
) -> dict[str, float]:
    """Mean recall@K, MRR@K and nDCG@K (binary relevance)."""
    r = mrr = ndcg = 0.0
    for qid, run in zip(q_ids, ranked, strict=True):
        rel = qrels[qid]
        top = list(run)[:K]
        r += sum(1 for d in top if d in rel) / len(rel)
        mrr += next((1.0 / (i + 1) for i, d in enumerate(top) if d in rel), 0.0)
        dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(top) if d in rel)
        ndcg += dcg / sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), K)))
    n = len(q_ids)
    return {"R@10": r / n, "MRR@10": mrr / n, "nDCG@10": ndcg / n}


def row(name: str, m: dict[str, float]) -> str:
    return f"{name:<49} {m['R@10']:.3f}  {m['MRR@10']:.3f}  {m['nDCG@10']:.3f}"


def baseline(docs: list[str], queries: list[str]) -> list[list[int]]:
    """The eval README's reference: bm25s's tokenizer, English stopwords, no stemming, k1 1.5, b 0.75."""
    import bm25s

    model = bm25s.BM25(k1=1.5, b=0.75)
    model.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
    q = bm25s.tokenize(queries, stopwords="en", show_progress=False)
    res, _ = model.retrieve(q, k=K, show_progress=False)
    return [[int(i) for i in r] for r in res]


def bm25s_scores(
    docs: list[list[str]], queries: list[list[str]], k1: float, b: float, method: str
) -> list[NDArray[Any]]:
    """bm25s's scores of every document for each query, over ee's tokens (the grid's other methods); 0.0
    for a document holding none of the query's tokens (bm25l and bm25+ give every document a part)."""
    import bm25s
    import numpy as np

    model = bm25s.BM25(k1=k1, b=b, method=method)
    model.index(docs, show_progress=False)
    bags = [set(doc) for doc in docs]
    out = []
    for query in queries:
        known = [token for token in query if token in model.vocab_dict]
        matching = np.array([not bag.isdisjoint(known) for bag in bags])
        out.append(np.where(matching, model.get_scores(known), 0.0) if known else np.zeros(len(docs)))
    return out


def top(scores: NDArray[Any], k: int, positive: bool = False) -> list[int]:
    """Positions of the ``k`` best scores, best first, ties by position (only scores > 0 if ``positive``)."""
    import numpy as np

    cand = np.flatnonzero(scores > 0) if positive else np.arange(scores.size)
    order = np.lexsort((cand, -scores[cand]))[:k]
    return [int(p) for p in cand[order]]


def doc_vectors(embedder: Any, texts: list[str], lead_words: int) -> NDArray[Any]:
    """Unit document vectors: the whole text, or (lead_words > 0) normalise(e(lead) + e(whole))."""
    import numpy as np

    full = embedder.encode(texts)
    if lead_words <= 0:
        return full
    both = full + embedder.encode([lead(t, lead_words) for t in texts])
    norms = np.linalg.norm(both, axis=1, keepdims=True)
    return np.divide(both, norms, out=np.zeros_like(both), where=norms > 0)


def hybrid_runs(
    lex: list[NDArray[Any]],
    sem: NDArray[Any],
    doc_ids: list[str],
    fuser: Fuser,
    pool: int = POOL,
    union: bool = True,
) -> list[list[str]]:
    """Fuse per query; ``union``: both arms score every candidate, else each arm only its own pool."""
    out = []
    for i, lex_scores in enumerate(lex):
        lex_top = top(lex_scores, pool, positive=True)
        sem_top = top(sem[i], pool)
        if union:
            cand = sorted(set(lex_top) | set(sem_top))
            lexical = {doc_ids[p]: float(lex_scores[p]) for p in cand}
            semantic = {doc_ids[p]: float(sem[i][p]) for p in cand}
        else:
            lexical = {doc_ids[p]: float(lex_scores[p]) for p in lex_top}
            semantic = {doc_ids[p]: float(sem[i][p]) for p in sem_top}
        out.append(list(fuser(lexical, semantic))[:K])
    return out


def given_vectors(
    folder: Path, lex: list[NDArray[Any]], doc_ids: list[str], q_ids: list[str]
) -> dict[float | None, list[list[str]]]:
    """Runs of another encoder's vectors (unit rows; documents in corpus order, queries named by
    ``queries.json``): semantic alone (key None), and fused with ee's lexical scores at a few weights."""
    import numpy as np

    from ee.query import fusion

    docs = np.load(folder / "documents.npy")
    order = {q: i for i, q in enumerate(json.loads((folder / "queries.json").read_text(encoding="utf-8")))}
    if docs.shape[0] != len(doc_ids) or not set(q_ids) <= set(order):
        raise SystemExit(f"{folder}: the vectors are not of this set's documents and queries")
    sem = np.load(folder / "queries.npy")[[order[q] for q in q_ids]] @ docs.T
    runs: dict[float | None, list[list[str]]] = {None: [[doc_ids[p] for p in top(s, K)] for s in sem]}
    for w in (fusion.WEIGHT_SEMANTIC, 0.4, 0.5):
        runs[w] = hybrid_runs(lex, sem, doc_ids, functools.partial(fusion.fuse, weight_semantic=w))
    return runs


def _normalised_fuser(norm: Callable[[Mapping[str, float]], dict[str, float]], w: float) -> Fuser:
    """Linear fusion with another normaliser (grid only; ee ships min-max in ee.query.fusion)."""

    def fuser(lexical: Mapping[str, float], semantic: Mapping[str, float]) -> dict[str, float]:
        ln, sn = norm(lexical), norm(semantic)
        lo_l = min(ln.values(), default=0.0)
        lo_s = min(sn.values(), default=0.0)
        fused = {k: (1 - w) * ln.get(k, lo_l) + w * sn.get(k, lo_s) for k in lexical.keys() | semantic.keys()}
        return dict(sorted(fused.items(), key=lambda kv: (-kv[1], kv[0])))

    return fuser


def _zscore(s: Mapping[str, float]) -> dict[str, float]:
    if not s:
        return {}
    mu = sum(s.values()) / len(s)
    sd = math.sqrt(sum((v - mu) ** 2 for v in s.values()) / len(s))
    return {k: (v - mu) / sd if sd > 0 else 0.0 for k, v in s.items()}


def _dbsf(s: Mapping[str, float]) -> dict[str, float]:
    """Distribution-based score fusion's normaliser: [mean - 3 sd, mean + 3 sd] -> [0, 1]."""
    z = _zscore(s)
    return {k: min(1.0, max(0.0, (v + 3) / 6)) for k, v in z.items()}


def _maxnorm(s: Mapping[str, float]) -> dict[str, float]:
    hi = max(s.values(), default=0.0)
    return {k: v / hi if hi > 0 else 0.0 for k, v in s.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("beir_dir", type=Path)
    ap.add_argument("--grid", choices=["lexical", "fusion"], action="append", default=[])
    ap.add_argument("--lead-words", type=int, default=LEAD_WORDS, help="0 embeds the whole text only")
    ap.add_argument(
        "--lead-repeat", type=int, default=None, help="extra times BM25 counts the lead (default: ee's)"
    )
    ap.add_argument(
        "--vectors",
        type=Path,
        default=None,
        help="a folder of another encoder's dev-set vectors (documents.npy, queries.npy, queries.json: "
        "scripts/train_model.py teacher --save): its semantic and hybrid rows, after ee's own",
    )
    args = ap.parse_args(argv)

    from ee.index import derive, lexical
    from ee.index.tokenize import tokenize, tokenize_many
    from ee.query import fusion

    doc_ids, docs, q_ids, queries, qrels = load_beir(args.beir_dir)
    print(f"{args.beir_dir}: {len(docs)} docs, {len(queries)} queries", file=sys.stderr)

    def named(runs: list[list[int]]) -> list[list[str]]:
        return [[doc_ids[i] for i in r] for r in runs]

    def score(runs: list[list[str]]) -> dict[str, float]:
        return metrics(runs, q_ids, qrels)

    print(f"{'system':<49} R@10   MRR@10 nDCG@10")
    print(row("bm25s baseline (stopwords en, k1 1.5, b 0.75)", score(named(baseline(docs, queries)))))

    t0 = time.perf_counter()
    d_tokens = tokenize_many(docs)
    dt = time.perf_counter() - t0
    t1 = time.perf_counter()
    tokenize_many(docs)
    dt_warm = time.perf_counter() - t1
    n_tok = sum(map(len, d_tokens))
    print(
        f"tokenize: {n_tok:,} tokens in {dt:.2f} s cold ({n_tok / dt:,.0f}/s), "
        f"{dt_warm:.2f} s warm ({n_tok / dt_warm:,.0f}/s)",
        file=sys.stderr,
    )
    q_tokens = [tokenize(q) for q in queries]
    # What ee indexes (the body, its lead again, the kind "fact" the import gives every document).
    repeat = derive.LEAD_REPEAT if args.lead_repeat is None else args.lead_repeat
    d_tokens = [
        body + tokenize(lead(doc)) * repeat + ["fact"] for body, doc in zip(d_tokens, docs, strict=True)
    ]

    index = lexical.build(d_tokens)
    lex = [index.scores(q) for q in q_tokens]
    print(
        row(
            f"ee lexical (k1 {lexical.K1}, b {lexical.B}, lead x{1 + repeat})",
            score(named([top(s, K, True) for s in lex])),
        )
    )

    sem_by_lead: dict[int, Any] = {}
    try:
        from ee.index.embedder import load_embedder

        embedder = load_embedder()
    except Exception as exc:  # no model: lexical figures only
        print(f"semantic arm unavailable: {exc}", file=sys.stderr)
        embedder = None
    if embedder is not None:
        qv = embedder.encode(queries)
        for lw in sorted({0, args.lead_words}):
            t2 = time.perf_counter()
            sem_by_lead[lw] = qv @ doc_vectors(embedder, docs, lw).T
            print(f"embed docs (lead {lw}): {time.perf_counter() - t2:.1f} s", file=sys.stderr)
        w = fusion.WEIGHT_SEMANTIC
        for lw, sem in sem_by_lead.items():
            tag = f"lead{lw}+full" if lw else "full"
            print(row(f"ee semantic ({tag})", score(named([top(s, K) for s in sem]))))
            print(
                row(
                    f"ee hybrid rrf k=60 equal weights ({tag})",
                    score(hybrid_runs(lex, sem, doc_ids, fusion.rrf)),
                )
            )
            print(
                row(
                    f"ee hybrid min-max w {w}, pools only ({tag})",
                    score(hybrid_runs(lex, sem, doc_ids, fusion.fuse, union=False)),
                )
            )
            print(row(f"ee hybrid min-max w {w} ({tag})", score(hybrid_runs(lex, sem, doc_ids, fusion.fuse))))

    if args.vectors is not None:
        for weight, runs in given_vectors(args.vectors, lex, doc_ids, q_ids).items():
            name = "given vectors: " + ("semantic" if weight is None else f"hybrid min-max w {weight}")
            print(row(name, score(runs)))

    if "lexical" in args.grid:
        for method in ("lucene", "robertson", "atire", "bm25l", "bm25+"):
            for k1 in (0.9, 1.2, 1.5, 2.0, 2.5):
                for b in (0.6, 0.75, 0.85, 0.9, 0.95, 1.0):
                    runs = named([top(s, K, True) for s in bm25s_scores(d_tokens, q_tokens, k1, b, method)])
                    print(row(f"  lexical {method} k1 {k1} b {b}", score(runs)), flush=True)

    if "fusion" in args.grid and sem_by_lead:
        sem = sem_by_lead[args.lead_words]
        for k in (20, 60):
            for w in (0.2, 0.3, 0.5):
                fz: Fuser = functools.partial(fusion.rrf, weight_semantic=w, k=k)
                print(row(f"  fusion rrf k {k} w {w}", score(hybrid_runs(lex, sem, doc_ids, fz))), flush=True)
        norms: dict[str, Callable[[Mapping[str, float]], dict[str, float]]] = {
            "z-score": _zscore,
            "dbsf": _dbsf,
            "max": _maxnorm,
        }
        for w in (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
            for pool in (50, 100, 200):
                for union in (True, False):
                    fm: Fuser = functools.partial(fusion.fuse, weight_semantic=w)
                    runs = hybrid_runs(lex, sem, doc_ids, fm, pool=pool, union=union)
                    label = "union" if union else "pools"
                    print(row(f"  fusion min-max w {w} pool {pool} {label}", score(runs)), flush=True)
            for name, norm in norms.items():
                runs = hybrid_runs(lex, sem, doc_ids, _normalised_fuser(norm, w))
                print(row(f"  fusion {name} w {w} pool {POOL} union", score(runs)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
