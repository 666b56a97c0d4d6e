"""Measured retrieval quality: ``ee eval beir`` (a BEIR-layout set) and ``ee eval run`` (scenarios).

BEIR: the corpus is imported into a temporary workspace with ``ee import jsonl`` (one commit), indexed
like any store, and every query is run through the real query engine in each mode. A plain bm25s
baseline (its own tokenizer with English stopwords, k1 1.5, b 0.75: the reference configuration of the
development set's README) is computed in the same run, so the table compares like with like.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ee.errors import NotFound, UsageError
from ee.model import Progress

MODES = ("lexical", "semantic", "hybrid")


def read_beir(folder: Path) -> tuple[dict[str, str], dict[str, str], dict[str, set[str]]]:
    """(corpus id → text, query id → text, query id → relevant corpus ids) of a BEIR folder."""
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise NotFound(
                f"{folder / name} does not exist", "pass a folder with corpus.jsonl, queries.jsonl, qrels.tsv"
            )
    qrels_path = folder / "qrels.tsv"
    if not qrels_path.is_file():
        qrels_path = folder / "qrels" / "test.tsv"
    if not qrels_path.is_file():
        raise NotFound(f"no qrels.tsv in {folder}", "BEIR layout: qrels.tsv (or qrels/test.tsv)")
    corpus = {}
    for number, line in enumerate((folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
                text = " ".join(p for p in (row.get("title", ""), row["text"]) if p).strip()
                corpus[str(row["_id"])] = text
            except (ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"corpus.jsonl:{number}: {exc}", "each line needs _id and text") from None
    queries = {}
    for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            queries[str(row["_id"])] = str(row["text"])
    qrels: dict[str, set[str]] = {}
    for line in qrels_path.read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2].strip() not in ("", "0"):
            qrels.setdefault(parts[0], set()).add(parts[1])
    queries = {q: t for q, t in queries.items() if q in qrels}
    return corpus, queries, qrels


def metrics(ranked: list[str], relevant: set[str], k: int) -> tuple[float, float, float]:
    """(recall@k, MRR@k, nDCG@k) of one ranked list (binary relevance)."""
    top = ranked[:k]
    hits = [i for i, doc in enumerate(top) if doc in relevant]
    recall = len(hits) / len(relevant) if relevant else 0.0
    mrr = 1.0 / (hits[0] + 1) if hits else 0.0
    dcg = sum(1.0 / math.log2(i + 2) for i in hits)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return recall, mrr, (dcg / ideal if ideal else 0.0)


def average(rows: Iterable[tuple[float, float, float]]) -> dict[str, float]:
    rows = list(rows)
    n = len(rows) or 1
    return {
        "recall": round(sum(r[0] for r in rows) / n, 4),
        "mrr": round(sum(r[1] for r in rows) / n, 4),
        "ndcg": round(sum(r[2] for r in rows) / n, 4),
    }


def bm25s_baseline(
    corpus: dict[str, str], queries: dict[str, str], qrels: dict[str, set[str]], k: int
) -> dict[str, float]:
    try:
        import bm25s
    except ImportError:
        from ee.errors import ConfigError

        raise ConfigError(
            "ee eval beir compares with a plain bm25s baseline, and bm25s is not installed",
            "pip install 'eidetic-engine[eval]'",
        ) from None

    ids = list(corpus)
    retriever = bm25s.BM25(k1=1.5, b=0.75)
    retriever.index(
        bm25s.tokenize([corpus[i] for i in ids], stopwords="en", show_progress=False), show_progress=False
    )
    qids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", show_progress=False)
    results, _scores = retriever.retrieve(tokens, k=min(k, len(ids)), show_progress=False)
    return average(
        metrics([ids[j] for j in row], qrels[q], k) for q, row in zip(qids, results.tolist(), strict=True)
    )


def read_offtopic(path: Path) -> list[str]:
    """Off-topic questions: one per line; blank lines and lines starting with '#' are skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise NotFound(
            f"{path} does not exist", "pass a text file with one off-topic question per line"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: {exc}", "pass a UTF-8 text file, one question per line") from None
    questions = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not questions:
        raise UsageError(f"{path} holds no question", "write one off-topic question per line")
    return questions


def beir(
    folder: Path,
    modes: Iterable[str] = MODES,
    k: int = 10,
    limit: int | None = None,
    progress: Progress | None = None,
    offtopic: list[str] | None = None,
    min_relevance: float | None = None,
    arm: str = "transformer",
) -> dict[str, Any]:
    """Import the set into a temporary workspace and measure every mode plus the bm25s baseline.

    ``progress(phase, done, total)`` hears of the import, the indexing and each mode's queries. With
    ``offtopic`` questions, each mode also reports ``abstention``: the share of them that get no hit at
    all (what the relevance floor is for: nothing relevant is the right answer to them)."""
    from ee.index.view import open_index
    from ee.ops.transfer import import_jsonl
    from ee.policy.trust import Actor
    from ee.query.document import from_arguments
    from ee.query.engine import run_search
    from ee.query.relevance import DEFAULT_MIN_RELEVANCE
    from ee.workspace import Workspace

    floor = DEFAULT_MIN_RELEVANCE if min_relevance is None else min_relevance
    corpus, queries, qrels = read_beir(folder)
    if limit:
        queries = dict(list(queries.items())[:limit])
    ids = {doc: f"d{n:07d}" for n, doc in enumerate(corpus)}
    back = {v: k for k, v in ids.items()}
    out: dict[str, Any] = {
        "dataset": str(folder),
        "documents": len(corpus),
        "queries": len(queries),
        "k": k,
        "min_relevance": floor,
    }
    if offtopic:
        out["offtopic_questions"] = len(offtopic)
    with tempfile.TemporaryDirectory(prefix="ee-eval-") as tmp:
        ws, _ = Workspace.init(Path(tmp) / "ws")
        # A benchmark corpus may hold documents larger than a memory should be: lift the cap here only.
        (ws.root / ".ee" / "config.toml").write_text("[store]\nmax_body_bytes = 67108864\n", encoding="utf-8")
        ws = Workspace(ws.root)
        started = time.perf_counter()
        lines = (
            json.dumps({"id": ids[d], "body": text or "(empty)", "kind": "fact"})
            for d, text in corpus.items()
        )
        import_jsonl(ws, lines, actor=Actor(), source_name="corpus.jsonl", progress=progress)
        out["import_seconds"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        view = open_index(ws, progress=progress)
        if arm == "transformer":  # its vectors, as ee index rebuild computes them
            from ee.index.transformer import embed_pending

            embed_pending(view, None, progress)
        else:
            view.transformer_vectors = None  # the static arm answers (as before those vectors are complete)
        out["semantic_arm"] = view.arm
        out["index_seconds"] = round(time.perf_counter() - started, 2)
        for mode in modes:
            started = time.perf_counter()
            rows = []
            for done, (qid, text) in enumerate(queries.items(), start=1):
                query = from_arguments(text, mode=mode, limit=k, fields="minimal")
                data = run_search(view, query, min_relevance=floor)
                rows.append(metrics([back[h["id"]] for h in data["hits"]], qrels[qid], k))
                if progress and (done % 50 == 0 or done == len(queries)):
                    progress(mode, done, len(queries))
            out[mode] = average(rows) | {"seconds": round(time.perf_counter() - started, 2)}
            if offtopic:
                empty = 0
                for text in offtopic:
                    query = from_arguments(text, mode=mode, limit=k, fields="minimal")
                    empty += not run_search(view, query, min_relevance=floor)["hits"]
                out[mode]["abstention"] = round(empty / len(offtopic), 4)
    out["bm25s_baseline"] = bm25s_baseline(corpus, queries, qrels, k)
    return out


def table(result: dict[str, Any]) -> str:
    k = result["k"]
    offtopic = result.get("offtopic_questions")
    head = f"{result['documents']} documents, {result['queries']} queries, k={k}"
    head += f", min_relevance {result['min_relevance']:g}, {result['semantic_arm']} arm"
    if offtopic:
        head += f", {offtopic} off-topic questions"
    columns = f"{'system':<16} {'recall@' + str(k):>10} {'MRR@' + str(k):>8} {'nDCG@' + str(k):>9}"
    lines = [head, columns + (f" {'abstention':>11}" if offtopic else "")]
    for name in ("bm25s_baseline", *MODES):
        if name in result:
            row = result[name]
            line = f"{name:<16} {row['recall']:>10.4f} {row['mrr']:>8.4f} {row['ndcg']:>9.4f}"
            if offtopic:
                line += f" {row['abstention']:>11.4f}" if "abstention" in row else f" {'-':>11}"
            lines.append(line)
    return "\n".join(lines)
