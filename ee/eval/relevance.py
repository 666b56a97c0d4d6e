"""``ee eval relevance``: does the relevance floor drop noise and keep answers, for each semantic arm?

A set folder holds ``stores.json``::

    {"stores": [{"name": "tinycalc", "memories": "../stores/tinycalc/memories",
                 "paraphrases": "paraphrase-tinycalc.tsv", "unanswerable": "unanswerable-tinycalc.txt"}],
     "offtopic": ["../offtopic/questions.txt"]}

(paths relative to the folder). Each store's memories are copied into a temporary workspace and indexed;
then, for the static arm and for the transformer arm (its vectors computed first, as ``ee index rebuild``
does), every question is searched (hybrid, top 10) with the floor off and on:

* ``paraphrase_hit@10``: the share of paraphrased questions whose memory (the TSV's file name) is in the
  top 10, floor off and on, and ``kept`` = on / off (issue 35's target: ≥ 0.95);
* ``unanswerable_abstention``: the share of in-domain questions the store cannot answer that get no hit;
* ``offtopic_abstention``: the share of off-topic questions that get no hit in search, and no item in a
  context pack (balanced profile, 4000 tokens);
* ``noise``: what an answerable (paraphrased) question gets with the floor on: the number of search hits
  (every hit the floor lets through, up to :data:`NOISE_LIMIT`) and of context pack items (balanced
  profile), mean and median, and their precision: the share of those hits (items) that are the expected
  memory, over all the questions (an agent's context is precious: a relevant answer among 25 hits is
  mostly noise);
* ``paraphrase_hit@1``: the share of paraphrased questions whose memory comes first, floor off;
* ``failures``: each question that fails, to read rather than to count: ``missed`` (a paraphrase whose
  memory is not in the top 10 with the floor on, with its rank and relevance floor off and the top hit),
  ``not_first`` (the same for a paraphrase whose memory does not come first, floor off),
  ``unanswerable_answered`` and ``offtopic_answered`` (questions that should get nothing, with their
  best hit and its relevance).
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from ee.errors import NotFound, UsageError
from ee.model import Progress

ARMS = ("static", "transformer")
K = 10
NOISE_LIMIT = 50  # the noise figures count every hit the floor lets through, up to this many


def read_lines(path: Path) -> list[str]:
    """Questions, one per line; blank lines and ``#`` comments skipped. A ``\\n`` in a line is a line
    break: a pasted traceback or log is one question of several lines."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise NotFound(f"{path} does not exist", "check the paths in stores.json") from None
    kept = (line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))
    return [line.replace("\\n", "\n") for line in kept]


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """(question, memory file name) rows of a paraphrase TSV."""
    out = []
    for number, line in enumerate(read_lines(path), 1):
        parts = line.split("\t")
        if len(parts) != 2:
            raise UsageError(f"{path}: row {number} is not 'question<TAB>file name'", "fix the TSV row")
        out.append((parts[0].strip(), parts[1].strip()))
    return out


def read_sets(folder: Path) -> dict[str, Any]:
    path = folder / "stores.json"
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFound(f"{path} does not exist", "pass a folder with stores.json") from None
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}", "fix the JSON") from None
    stores = []
    for entry in spec.get("stores", []):
        stores.append(
            {
                "name": str(entry["name"]),
                "memories": (folder / entry["memories"]).resolve(),
                "paraphrases": read_pairs(folder / entry["paraphrases"]),
                "unanswerable": read_lines(folder / entry["unanswerable"]),
            }
        )
    offtopic = [q for name in spec.get("offtopic", []) for q in read_lines(folder / name)]
    return {"stores": stores, "offtopic": offtopic}


def evaluate(folder: Path, floor: float | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Every store's figures per arm (see the module's doc)."""
    from ee.query.relevance import DEFAULT_MIN_RELEVANCE

    sets = read_sets(folder)
    floor = DEFAULT_MIN_RELEVANCE if floor is None else floor
    out: dict[str, Any] = {"min_relevance": floor, "k": K, "offtopic_questions": len(sets["offtopic"])}
    out["stores"] = {}
    with tempfile.TemporaryDirectory(prefix="ee-eval-relevance-") as tmp:
        for store in sets["stores"]:
            out["stores"][store["name"]] = _store(Path(tmp), store, sets["offtopic"], floor, progress)
    return out


def _store(
    tmp: Path, store: dict[str, Any], offtopic: list[str], floor: float, progress: Progress | None
) -> dict[str, Any]:
    from ee.index.transformer import embed_pending
    from ee.index.view import open_index
    from ee.workspace import Workspace

    root = tmp / store["name"]
    shutil.copytree(store["memories"], root / "memories")
    Workspace.init(root)  # (makes the git repository)
    ws = Workspace(root)
    view = open_index(ws)
    by_stem = {Path(m.path).stem: m.id for m in ws.list()[0]}
    missing = sorted({stem for _q, stem in store["paraphrases"] if stem not in by_stem})
    if missing:
        raise UsageError(f"{store['name']}: no memory file named {', '.join(missing)}", "fix the TSV")
    result: dict[str, Any] = {"memories": view.gen.size, "paraphrases": len(store["paraphrases"])}
    result["unanswerable_questions"] = len(store["unanswerable"])
    for arm in ARMS:
        if arm == "transformer":
            embed_pending(view, None, progress)
            if view.arm != "transformer":
                result[arm] = None  # (turned off, or the model is not there)
                continue
        else:
            view.transformer_vectors = None  # the static arm answers (as before its vectors are complete)
        result[arm] = _measure(view, store, offtopic, floor, by_stem)
    return result


def _measure(
    view: Any, store: dict[str, Any], offtopic: list[str], floor: float, by_stem: dict[str, str]
) -> dict[str, Any]:
    from ee.pack import pack_view
    from ee.pack.profiles import resolve_profile
    from ee.query.document import from_arguments
    from ee.query.engine import run_search

    stem_of = {memory_id: stem for stem, memory_id in by_stem.items()}

    def ranked(text: str, min_relevance: float, limit: int = K) -> list[tuple[str, float]]:
        """(file name, relevance) of the hits, best first."""
        query = from_arguments(text, mode="hybrid", limit=limit, fields="standard")
        found = run_search(view, query, min_relevance=min_relevance)["hits"]
        return [(stem_of.get(h["id"], h["id"]), h["relevance"]) for h in found]

    def hits(text: str, min_relevance: float, limit: int = K) -> list[str]:
        return [by_stem.get(stem, stem) for stem, _relevance in ranked(text, min_relevance, limit)]

    pairs = store["paraphrases"]
    off_ranked = [ranked(q, 0.0) for q, _stem in pairs]
    on_ranked = [ranked(q, floor) for q, _stem in pairs]
    off = [stem in [s for s, _r in got] for (_q, stem), got in zip(pairs, off_ranked, strict=True)]
    on = [stem in [s for s, _r in got] for (_q, stem), got in zip(pairs, on_ranked, strict=True)]
    first = [bool(got) and got[0][0] == stem for (_q, stem), got in zip(pairs, off_ranked, strict=True)]
    hit_off, hit_on = sum(off) / len(pairs), sum(on) / len(pairs)
    missed = [q for (q, _stem), kept, found in zip(pairs, on, off, strict=True) if found and not kept]
    unanswerable_ranked = [ranked(q, floor) for q in store["unanswerable"]]
    unanswerable = [not got for got in unanswerable_ranked]
    profile = resolve_profile("balanced", {}, None, "output.profile")

    def packed(text: str) -> list[str]:
        pack = pack_view(view, from_arguments(text, mode="hybrid"), profile, min_relevance=floor)
        return [item["id"] for section in pack["sections"] for item in section["items"]]

    found = [(by_stem[stem], hits(q, floor, NOISE_LIMIT), packed(q)) for q, stem in pairs]
    offtopic_ranked = [ranked(q, floor) for q in offtopic]
    search_empty = [not got for got in offtopic_ranked]
    packed_empty = [not packed(q) for q in offtopic]
    return {
        "paraphrase_hit@10": {"floor_off": round(hit_off, 4), "floor_on": round(hit_on, 4)},
        "paraphrase_hit@1": round(sum(first) / len(pairs), 4),
        "kept": round(hit_on / hit_off, 4) if hit_off else None,
        "dropped_answers": missed,
        "unanswerable_abstention": round(sum(unanswerable) / max(1, len(unanswerable)), 4),
        "offtopic_abstention": {
            "search": round(sum(search_empty) / max(1, len(offtopic)), 4),
            "context": round(sum(packed_empty) / max(1, len(offtopic)), 4),
        },
        "noise": {
            "search": _noise([(want, got) for want, got, _items in found]),
            "context": _noise([(want, items) for want, _got, items in found]),
        },
        "failures": {
            "missed": [
                _missed(q, stem, got_off)
                for (q, stem), got_off, kept in zip(pairs, off_ranked, on, strict=True)
                if not kept
            ],
            "not_first": [
                _missed(q, stem, got_off)
                for (q, stem), got_off, top in zip(pairs, off_ranked, first, strict=True)
                if not top
            ],
            "unanswerable_answered": _answered(store["unanswerable"], unanswerable_ranked),
            "offtopic_answered": _answered(offtopic, offtopic_ranked),
        },
    }


def _missed(question: str, expected: str, got_off: list[tuple[str, float]]) -> dict[str, Any]:
    """A paraphrased question whose memory is not in the top 10 with the floor on: where that memory stands
    with the floor off (rank and relevance, None when not in the top 10) and what came first instead."""
    stems = [stem for stem, _relevance in got_off]
    rank = stems.index(expected) + 1 if expected in stems else None
    return {
        "question": question,
        "expected": expected,
        "rank_floor_off": rank,
        "relevance": got_off[rank - 1][1] if rank else None,
        "top": {"memory": got_off[0][0], "relevance": got_off[0][1]} if got_off else None,
    }


def _answered(questions: list[str], got: list[list[tuple[str, float]]]) -> list[dict[str, Any]]:
    """The questions that should get nothing but got hits with the floor on: the best hit, its relevance."""
    return [
        {"question": q, "hits": len(hits), "top": {"memory": hits[0][0], "relevance": hits[0][1]}}
        for q, hits in zip(questions, got, strict=True)
        if hits
    ]


def _noise(answers: list[tuple[str, list[str]]]) -> dict[str, Any]:
    """How many hits (or items) the answerable questions got, and the share of them that are the expected
    memory (None when no question got any)."""
    counts = [len(got) for _want, got in answers]
    right = sum(want in got for want, got in answers)
    return {
        "mean": round(statistics.mean(counts), 2) if counts else None,
        "median": float(statistics.median(counts)) if counts else None,
        "precision": round(right / sum(counts), 4) if sum(counts) else None,
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"min_relevance {result['min_relevance']:g}, k={result['k']}, "
        f"{result['offtopic_questions']} off-topic questions",
        f"{'store':<10} {'arm':<12} {'hit@10 off':>10} {'hit@10 on':>10} {'kept':>6} "
        f"{'unanswerable':>13} {'off-topic search':>17} {'context':>8} "
        f"{'hits mean/med':>13} {'precision':>9} {'pack mean/med':>13} {'precision':>9}",
    ]
    for name, store in result["stores"].items():
        for arm in ARMS:
            row = store.get(arm)
            if row is None:
                lines.append(f"{name:<10} {arm:<12} (not available)")
                continue
            hit, off = row["paraphrase_hit@10"], row["offtopic_abstention"]
            kept = f"{row['kept']:.3f}" if row["kept"] is not None else "-"
            lines.append(
                f"{name:<10} {arm:<12} {hit['floor_off']:>10.3f} {hit['floor_on']:>10.3f} {kept:>6} "
                f"{row['unanswerable_abstention']:>13.3f} {off['search']:>17.3f} {off['context']:>8.3f} "
                f"{_noise_cells(row['noise']['search'])} {_noise_cells(row['noise']['context'])}"
            )
    lines.append(
        f"hits and pack: what an answerable question gets with the floor on (search: up to {NOISE_LIMIT}, "
        "balanced pack), mean/median; precision: the share of them that are its expected memory"
    )
    return "\n".join(lines)


def _noise_cells(noise: dict[str, Any]) -> str:
    spread = "-" if noise["mean"] is None else f"{noise['mean']:.1f}/{noise['median']:g}"
    precision = "-" if noise["precision"] is None else f"{noise['precision']:.3f}"
    return f"{spread:>13} {precision:>9}"
