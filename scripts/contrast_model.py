#!/usr/bin/env python3
"""Contrastive fine-tuning of a static (model2vec) model on (package synopsis -> long description) pairs.

A trial for issue 15 (semantic-only recall@10 >= 0.56 on the Vim-help dev set). Fitting the token table
to the teacher with MSE (scripts/train_model.py) stopped helping retrieval; this fits it instead to the
task's shape, a short description against a long text, with an InfoNCE loss on natural pairs.

Steps::

    pairs   Debian's long package descriptions (the bookworm main/updates/security ``Translation-en``
            indexes: ``apt-cache dumpavail`` carries only the one-line synopsis, the long descriptions are
            in these, which ``apt-get update -o Acquire::Languages=en`` fetches; to a separate lists
            folder, so the machine's apt state is untouched) -> WORK/pairs.jsonl: (synopsis, long
            description), long descriptions of < 15 words dropped, deduplicated on the synopsis, the long
            text and its first paragraph (packages of one source share it: they would be false in-batch
            negatives), shuffled with a fixed seed; the last 2,000 are the validation pairs of the loss
    train   from a model2vec folder (int8 table dequantised; its scale is irrelevant after the final L2
            normalisation, so the table is rescaled to a mean row norm of 1): the token table is trained
            with a symmetric InfoNCE loss (in-batch negatives) between the query vector
            normalise(mean of the synopsis's token vectors) and the document vector as ee makes it
            (normalise(e(first 24 words) + e(whole text)), text prefixed with "fact: " as the dev-set
            evaluation does), model2vec's tokenisation (no special tokens, unknown tokens dropped, 512
            tokens at most); optionally plus REG * MSE between the new and the starting model's normalised
            vectors of the same texts (keeps the general semantics). AdamW, the epoch with the lowest
            validation loss is kept; int8 -> the model folder (config, tokenizer, LICENSE of the start;
            NOTICE: the start's plus this step); deterministic (seed, one thread)
    headings  optional extra training pairs: (heading, the 1-3 blocks under it) of the HTML documentation
            train_model.py's corpus step extracted (see build_headings)
    eval    semantic-only recall@10 / MRR@10 on a BEIR dev set (train_model.dev_scores, the same as its
            --devset) and the mean cosine of 200 random pairs of distinct dev-corpus passages (ee's
            relevance floor relies on unrelated texts staying far apart)

The dev set is only measured, never trained on. Usage (the venv of scripts/train_model.py)::

    mkdir -p /work/train/contrast/lists/partial
    apt-get update -o Acquire::Languages=en -o Dir::State::Lists=/work/train/contrast/lists
    for f in /work/train/contrast/lists/*Translation-en.lz4; do
        /usr/lib/apt/apt-helper cat-file $f; echo; done > /work/train/contrast/translation-en.txt
    PY=/work/train/.venv/bin/python
    $PY scripts/contrast_model.py pairs --work /work/train/contrast
    $PY scripts/contrast_model.py headings --work /work/train/contrast     # variant D only
    run() { OMP_NUM_THREADS=1 nice -n 19 $PY scripts/contrast_model.py train --work /work/train/contrast \
        --start /work/train/models/tl-43520-v3000 --temp 0.05 --epochs 2 --devset /work/devset "$@"; }
    run --out /work/train/models/contrast-A --lr 1e-3
    run --out /work/train/models/contrast-B --lr 1e-4
    run --out /work/train/models/contrast-C --lr 1e-3 --reg 1.0
    run --out /work/train/models/contrast-D --lr 1e-3 --headings
    $PY scripts/contrast_model.py eval --model /work/train/models/tl-43520-v3000 --devset /work/devset

Figures of the trial of 2026-12-04 (start: tl-43520-v3000, the best MSE-fitted model; 36,250 training
pairs, 2,000 validation; batch 256; semantic-only figures on the Vim-help dev set as train_model.py's
--devset computes them; "unrelated": mean cosine of 200 random pairs of dev-corpus passages; ~8.8 MB int8;
each run 1.3-1.7 min wall on one thread)::

    model                      settings                                recall@10  MRR@10  unrelated
    minilm-l6-v2-m2v256        shipped default (for reference)            0.4928  0.2763  0.5336
    tl-43520-v3000             start                                      0.5275  0.3010  0.1266
    contrast-A                 lr 1e-3, 2 epochs, T 0.05                  0.5082  0.2943  0.1571
    contrast-B                 lr 1e-4, 2 epochs, T 0.05                  0.5256  0.3003  0.1427
    contrast-C                 A + MSE-to-start weight 1.0                0.5092  0.2930  0.1166
    contrast-D                 A + 3,854 heading -> section pairs         0.5092  0.2985  0.1554

The pairs are learnt (validation InfoNCE 0.636 -> 0.315, top-1 among 2,000 0.72 -> 0.82) but the dev set
gets worse the more they are learnt: this does not help; none of these models is to be shipped.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_model  # dev_scores, DESCRIPTIONS_LICENCE (it also puts ee on the path)

from ee.index.tokenize import lead  # the lead ee embeds with a document

SEED = 15
N_VAL = 2000
MIN_WORDS = 15
PREFIX = "fact: "  # as train_model.dev_documents embeds the dev corpus
MAX_TOKENS = 512  # model2vec's default max_length


# ----------------------------------------------------------------------------------------------- pairs
def parse_translations(path: Path) -> list[tuple[str, str, str]]:
    """(package, synopsis, long description) from Translation-en stanzas (paragraphs joined by \\n)."""
    out = []
    for stanza in path.read_text(encoding="utf-8").split("\n\n"):
        pkg = syn = None
        lines: list[str] = []
        inside = False
        for line in stanza.split("\n"):
            if line.startswith("Package: "):
                pkg, inside = line[9:].strip(), False
            elif line.startswith("Description-en: "):
                syn, inside = line[16:].strip(), True
            elif inside and line.startswith(" "):
                lines.append(line[1:])
            else:
                inside = False
        if not (pkg and syn):
            continue
        paras, cur = [], []
        for line in lines:
            if line.strip() == ".":
                paras.append(" ".join(cur))
                cur = []
            else:
                cur.append(line.strip())
        paras.append(" ".join(cur))
        out.append((pkg, syn, "\n".join(p for p in paras if p)))
    return out


def build_pairs(work: Path) -> None:
    rows = sorted(parse_translations(work / "translation-en.txt"))
    seen_syn: set[str] = set()
    seen_long: set[str] = set()
    seen_first: set[str] = set()
    pairs = []
    for _pkg, syn, long in rows:
        if len(long.split()) < MIN_WORDS:
            continue
        first = " ".join(long.split("\n")[0].lower().split())
        key_syn, key_long = syn.lower(), " ".join(long.lower().split())
        if key_syn in seen_syn or key_long in seen_long or first in seen_first:
            continue
        seen_syn.add(key_syn)
        seen_long.add(key_long)
        seen_first.add(first)
        pairs.append({"query": syn, "doc": long})
    random.Random(SEED).shuffle(pairs)
    _write_jsonl(work / "pairs.jsonl", pairs)
    print(f"{len(rows)} descriptions -> {len(pairs)} pairs ({N_VAL} held out for validation)")


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def build_headings(work: Path, docs: Path) -> None:
    """(heading, the 1-3 blocks under it) of the HTML documentation train_model.py's corpus step extracted.

    Headings are cleaned of section numbers and anchors; kept only if they read as a phrase (>= 3 words,
    no code-like characters) and occur once in all the pages (generic ones -- "Examples", "Notes" -- go);
    the sections must have >= 15 words; deduplicated on the section's start. -> WORK/headings.jsonl
    """
    counts: dict[str, int] = {}
    found: list[tuple[str, str]] = []
    for _package, folder, _licence, _cap in train_model.DOC_SOURCES:
        for path in train_model.html_files(docs / folder):
            parser = train_model._Text()
            parser.feed(train_model.read_page(path))
            parser.close()
            blocks = parser.blocks
            for i, (is_heading, text) in enumerate(blocks):
                if not is_heading:
                    continue
                head = re.sub(r"^(\d+(\.\d+)*\.?|[A-Z]\.\d+(\.\d+)*\.?)\s+", "", text.rstrip("¶#").strip())
                key = " ".join(head.lower().split())
                counts[key] = counts.get(key, 0) + 1
                body: list[str] = []
                for is_h2, t2 in blocks[i + 1 :]:
                    if is_h2:
                        break
                    body.append(t2)
                    if sum(len(b) for b in body) >= 300 or len(body) >= 3:
                        break
                words = head.split()
                if (
                    len(words) >= 3
                    and not re.search(r"[()<>:_=\[\]{}/\\]|\w\.\w", head)
                    and sum(w.isalpha() for w in words) >= 0.6 * len(words)
                    and len(" ".join(body).split()) >= MIN_WORDS
                ):
                    found.append((head, "\n".join(body)))
    seen: set[str] = set()
    out = []
    for head, body in found:
        start = " ".join(body.lower().split())[:200]
        if counts[" ".join(head.lower().split())] == 1 and start not in seen:
            seen.add(start)
            out.append({"query": head, "doc": body})
    random.Random(SEED).shuffle(out)
    _write_jsonl(work / "headings.jsonl", out)
    print(f"{len(found)} candidate headings -> {len(out)} pairs")


# ----------------------------------------------------------------------------------------------- model
def load_start(folder: Path) -> tuple[object, object]:
    """(float32 table with mean row norm 1, the StaticModel) of a model2vec folder."""
    import numpy as np
    from model2vec import StaticModel

    static = StaticModel.from_pretrained(folder, force_download=False)
    assert static.weights is None, "unexpected model2vec layout"
    assert static.token_mapping is None, "unexpected model2vec layout"
    table = np.asarray(static.embedding, dtype=np.float32)
    table /= np.linalg.norm(table, axis=1).mean()
    return table, static


def token_ids(static: object, texts: list[str]) -> list[list[int]]:
    ids = static.tokenize(texts)  # type: ignore[attr-defined]
    return [x[:MAX_TOKENS] for x in ids]


def bag(ids: list[list[int]]) -> tuple[object, object]:
    import torch

    flat = torch.tensor([i for x in ids for i in x], dtype=torch.long)
    offsets = torch.tensor([0, *list(_cumsum([len(x) for x in ids]))[:-1]], dtype=torch.long)
    return flat, offsets


def _cumsum(xs: list[int]) -> list[int]:
    out, s = [], 0
    for x in xs:
        s += x
        out.append(s)
    return out


def embed(table: object, ids: list[list[int]]) -> object:
    import torch
    from torch.nn import functional as fn

    flat, offsets = bag(ids)
    v = fn.embedding_bag(flat, table, offsets, mode="mean")  # type: ignore[arg-type]
    return torch.nn.functional.normalize(v, dim=1, eps=1e-12)


def embed_docs(table: object, whole: list[list[int]], leads: list[list[int]]) -> object:
    import torch

    return torch.nn.functional.normalize(embed(table, whole) + embed(table, leads), dim=1, eps=1e-12)


def encoded_pairs(
    static: object, pairs: list[dict[str, str]]
) -> list[tuple[list[int], list[int], list[int]]]:
    queries = token_ids(static, [p["query"] for p in pairs])
    docs = [PREFIX + p["doc"] for p in pairs]
    whole = token_ids(static, docs)
    leads = token_ids(static, [lead(d) for d in docs])
    return [(q, w, ld) for q, w, ld in zip(queries, whole, leads, strict=True) if q and w and ld]


def batch_loss(table: object, base: object, batch: list, temp: float, reg: float) -> tuple[object, object]:
    import torch
    from torch.nn import functional as fn

    q = embed(table, [b[0] for b in batch])
    d = embed_docs(table, [b[1] for b in batch], [b[2] for b in batch])
    logits = q @ d.T / temp
    labels = torch.arange(len(batch))
    nce = (fn.cross_entropy(logits, labels) + fn.cross_entropy(logits.T, labels)) / 2
    loss = nce
    if reg > 0:
        with torch.no_grad():
            q0 = embed(base, [b[0] for b in batch])
            d0 = embed_docs(base, [b[1] for b in batch], [b[2] for b in batch])
        loss = nce + reg * (((q - q0) ** 2).sum(1).mean() + ((d - d0) ** 2).sum(1).mean()) / 2
    return loss, nce


def train(args: argparse.Namespace) -> None:
    import numpy as np
    import torch
    from model2vec.persistence import save_pretrained
    from model2vec.quantization import DType, quantize_embeddings

    started = time.time()
    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    pairs = [json.loads(line) for line in (args.work / "pairs.jsonl").open(encoding="utf-8")]
    table0, static = load_start(args.start)
    data = encoded_pairs(static, pairs)
    train_set, val_set = data[:-N_VAL], data[-N_VAL:]
    if args.headings:  # training pairs only: the validation pairs stay the same Debian ones
        extra = [json.loads(line) for line in (args.work / "headings.jsonl").open(encoding="utf-8")]
        train_set += encoded_pairs(static, extra)
    log = [
        f"contrastive fine-tuning from {args.start.name}: {len(train_set)} training pairs, {len(val_set)}"
        f" validation; InfoNCE symmetric, in-batch negatives, batch {args.batch}, temperature {args.temp},"
        f" AdamW lr {args.lr} (weight decay 0), {args.epochs} epochs at most, MSE-to-start weight {args.reg}"
        + (" (training pairs include the heading -> section pairs)" if args.headings else "")
    ]
    print(log[-1], flush=True)
    base = torch.from_numpy(table0.copy())
    table = torch.nn.Parameter(torch.from_numpy(table0.copy()))
    optimizer = torch.optim.AdamW([table], lr=args.lr, weight_decay=0.0)
    rng = random.Random(SEED)

    def validate(t: object) -> tuple[float, float]:
        with torch.no_grad():
            losses = [
                batch_loss(t, base, val_set[i : i + args.batch], args.temp, 0.0)[1].item()
                for i in range(0, len(val_set) - args.batch + 1, args.batch)
            ]
            q = embed(t, [b[0] for b in val_set])
            d = embed_docs(t, [b[1] for b in val_set], [b[2] for b in val_set])
            top1 = (q @ d.T).argmax(1) == torch.arange(len(val_set))
        return float(np.mean(losses)), float(top1.float().mean())

    val, acc = validate(base)
    log.append(f"start: validation InfoNCE {val:.4f}, top-1 among {len(val_set)} {acc:.4f}")
    print(log[-1], flush=True)
    best, best_table = val, table0.copy()
    for epoch in range(args.epochs):
        order = list(range(len(train_set)))
        rng.shuffle(order)
        total = 0.0
        steps = 0
        for i in range(0, len(order) - args.batch + 1, args.batch):
            batch = [train_set[j] for j in order[i : i + args.batch]]
            optimizer.zero_grad()
            loss, _ = batch_loss(table, base, batch, args.temp, args.reg)
            loss.backward()
            optimizer.step()
            total += loss.item()
            steps += 1
        val, acc = validate(table.detach())
        log.append(
            f"epoch {epoch}: train loss {total / steps:.4f}, validation InfoNCE {val:.4f}, top-1 {acc:.4f}"
        )
        print(log[-1], flush=True)
        if val < best:
            best, best_table = val, table.detach().numpy().copy()
    vectors = quantize_embeddings(best_table.astype(np.float32), DType.Int8)

    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    config = dict(static.config)  # type: ignore[attr-defined]
    save_pretrained(
        folder_path=out,
        embeddings=vectors,
        tokenizer=static.tokenizer,  # type: ignore[attr-defined]
        config=config,  # type: ignore[arg-type]
        base_model_name=train_model.distill_model.SOURCE_MODEL,
        language=["en"],
        model_name=out.name,
        license="apache-2.0",
    )
    shutil.copyfile(args.start / "LICENSE", out / "LICENSE")
    wall = time.time() - started
    log.append(f"training wall time {wall:.0f} s")
    notice = (args.start / "NOTICE").read_text(encoding="utf-8")
    notice += "\n".join(
        [
            "",
            f"Then (scripts/contrast_model.py, {out.name}): contrastive fine-tuning of the token table on",
            "(synopsis, long description) pairs of Debian bookworm packages (the Translation-en indexes);",
            f"licence: {train_model.DESCRIPTIONS_LICENCE}. Log:",
            *(f"  {entry}" for entry in log),
            "",
        ]
    )
    (out / "NOTICE").write_text(notice, encoding="utf-8")
    print(f"saved {out} ({sum(f.stat().st_size for f in out.iterdir())} bytes) in {wall:.0f} s", flush=True)
    if args.devset:
        evaluate(out, args.devset)


# ------------------------------------------------------------------------------------------------ eval
def evaluate(folder: Path, devset: Path) -> dict[str, float]:
    import numpy as np
    from model2vec import StaticModel

    static = StaticModel.from_pretrained(folder, force_download=False)
    figures = train_model.dev_scores(static.embedding, static.tokenizer, devset)
    corpus = [
        json.loads(line)["text"] or "(empty)" for line in (devset / "corpus.jsonl").open(encoding="utf-8")
    ]
    rng = random.Random(SEED)
    idx = [tuple(rng.sample(range(len(corpus)), 2)) for _ in range(200)]
    model = StaticModel(vectors=np.asarray(static.embedding), tokenizer=static.tokenizer, normalize=True)
    a = model.encode([corpus[i] for i, _ in idx], use_multiprocessing=False)
    b = model.encode([corpus[j] for _, j in idx], use_multiprocessing=False)
    figures["unrelated_cos"] = float(np.mean(np.sum(a * b, axis=1)))
    figures["size_bytes"] = sum(f.stat().st_size for f in folder.iterdir())
    print(
        f"{folder.name}: recall@10 {figures['recall@10']:.4f} MRR@10 {figures['mrr@10']:.4f} "
        f"unrelated cosine {figures['unrelated_cos']:.4f} size {figures['size_bytes']}",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("pairs")
    p.add_argument("--work", type=Path, required=True)
    p = sub.add_parser("headings")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--docs", type=Path, default=Path("/work/train/cache/root/usr/share/doc"))
    p = sub.add_parser("train")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--start", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--temp", type=float, default=0.05)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--reg", type=float, default=0.0, help="weight of the MSE to the start's vectors")
    p.add_argument("--headings", action="store_true", help="add WORK/headings.jsonl to the training pairs")
    p.add_argument("--devset", type=Path, default=None)
    p = sub.add_parser("eval")
    p.add_argument("--model", type=Path, required=True)
    p.add_argument("--devset", type=Path, required=True)
    args = parser.parse_args()
    if args.step == "pairs":
        build_pairs(args.work)
    elif args.step == "headings":
        build_headings(args.work, args.docs)
    elif args.step == "train":
        train(args)
    else:
        evaluate(args.model, args.devset)


if __name__ == "__main__":
    main()
