"""The transformer semantic arm and a floor that drops noise, not answers (issue 35).

Real stores (the tinycalc toy project of tests/fixtures/stores, a few memories written here), the real
shipped models (static and transformer), real git, the real CLI. A few tests only: each one loads the
transformer (CI budget).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ee.config import DEFAULT_MIN_RELEVANCE
from ee.index.cache import DerivedCache
from ee.index.freshness import CACHE_PATH
from ee.index.transformer import cache_model_id, embed_pending
from ee.index.view import open_index
from ee.workspace import Workspace
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
TINYCALC = REPO / "tests" / "fixtures" / "stores" / "tinycalc" / "memories"
OFFTOPIC = REPO / "tests" / "fixtures" / "offtopic" / "questions.txt"

pytestmark = pytest.mark.semantic


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def tinycalc_repo(root: Path, commit: bool = True) -> Path:
    """A git repository at ``root`` holding the tinycalc store, initialised by ee (and committed)."""
    shutil.copytree(TINYCALC, root / "memories")
    git(root.parent, "init", "-q", "-b", "main", str(root))
    Workspace.init(root)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "memories")
    return root


@pytest.fixture(scope="module")
def tinycalc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tinycalc store, committed, with its transformer vectors computed by ``ee index rebuild``."""
    root = tinycalc_repo(tmp_path_factory.mktemp("tinycalc") / "ws")
    assert run_cli("-W", str(root), "index", "rebuild", "--json").code == 0
    return root


def search(root: Path, text: str, *more: str) -> dict:
    result = run_cli("-W", str(root), "search", text, "--json", *more)
    assert result.code == 0, result.err
    data: dict = result.data
    return data


def packed(root: Path, text: str) -> list[str]:
    result = run_cli("-W", str(root), "context", text, "--json")
    assert result.code == 0, result.err
    return [item["id"] for section in result.data["sections"] for item in section["items"]]


def test_paraphrased_and_multi_part_tasks_get_their_memories(tinycalc: Path) -> None:
    asked = {
        "I want to add a sqrt function, what about negative inputs?": "sqrt-negative",
        "I want to cut a release of tinycalc today, what should I check?": "release-checklist",
        "what does the library do when asked to divide something by nothing": "division-by-zero",
        "Task: add a currency conversion command to the interactive prompt. It must round amounts "
        "correctly, read the user's preferred precision from their settings, and print errors without "
        "colour when piped.": "decimal-precision",
        # no word in common with their memories: kept by the cosine and the store's affinity alone
        # (under the floor before the refit that let in-domain unanswerable questions weigh little)
        "which operating systems and interpreter versions do the automated checks cover": "ci-matrix",
        "how long must an old function keep working after we announce it is going away": "deprecation-policy",
        "evaluating the same formula repeatedly is slow; is there any memoisation, and where do speed "
        "measurements belong": "performance-cache",
    }
    for text, expected in asked.items():
        data = search(tinycalc, text)
        assert data["query"]["semantic_arm"] == "transformer"
        assert expected in [h["id"] for h in data["hits"]], text
        assert expected in packed(tinycalc, text), text  # the prompt hook and MCP context get it too


def test_off_topic_questions_get_nothing_and_explain_why(tinycalc: Path) -> None:
    lines = OFFTOPIC.read_text(encoding="utf-8").splitlines()
    asked = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    searched = [not search(tinycalc, text)["hits"] for text in asked]
    assert sum(searched) >= 0.95 * len(asked)  # (issue 35's bar; "roast a chicken" finds the °C memory)
    contexts = [not packed(tinycalc, text) for text in asked]
    assert sum(contexts) >= 0.95 * len(asked)
    data = search(tinycalc, "how do I improve my marathon time", "--explain")
    assert data["hits"] == []
    (omitted,) = data["omitted"]
    assert omitted["reason"] == "below_relevance_floor"
    nearest = omitted["nearest"]
    assert nearest
    assert all(n["relevance"] < data["min_relevance"] for n in nearest)
    assert all(n["explanation"]["passed"] is False for n in nearest)
    assert "coverage" in nearest[0]["explanation"]
    assert "cosine" in nearest[0]["explanation"]
    human = run_cli(
        "-W", str(tinycalc), "search", "how do I improve my marathon time", "--explain", "--human"
    )
    assert f"below the floor 0.8: {nearest[0]['id']}  relevance" in human.out


def test_naming_the_project_does_not_pull_in_every_memory_that_names_it(tinycalc: Path) -> None:
    """The name "tinycalc" is in 20 of the 38 memories: a question naming it is not near all of them for
    that (issue 35). Before the third pass these two questions got 21 and 23 hits."""
    symbolic = search(tinycalc, "does tinycalc solve quadratic equations symbolically", "--limit", "50")
    assert len(symbolic["hits"]) <= 2, [h["title"] for h in symbolic["hits"]]
    text = "I want to cut a release of tinycalc today, what should I check?"
    release = search(tinycalc, text, "--limit", "50", "--explain")
    titles = [h["title"] for h in release["hits"]]
    assert 1 <= len(titles) <= 8, titles
    assert titles[0].startswith("Before tagging a tinycalc release"), titles
    # The explanation says what the semantic evidence was judged on; the lexical match is still shown.
    shown = release["hits"][0]["explanation"]["relevance"]
    assert shown["store_wide_set_aside"] == ["tinycalc"]
    assert "tinycalc" in shown["matched_terms"]
    assert shown["cosine_with_store_wide"] > shown["cosine"]  # the name drew the whole question near it
    assert "(store-wide words set aside: tinycalc)" in release["hits"][0]["why"]
    # A question about the store's topic itself sets nothing aside (nothing else to judge it on).
    plain = search(tinycalc, "tinycalc", "--limit", "50", "--explain", "--min-relevance", "0")
    assert all("store_wide_set_aside" not in h["explanation"]["relevance"] for h in plain["hits"])


def test_inside_the_stores_subject_a_hit_far_behind_the_best_is_dropped_and_explained(
    tinycalc: Path,
) -> None:
    """Issue 35 QA F1/F2: most tinycalc memories are near any question about tinycalc (relevance 0.95-1.0
    on their own), so the floor alone dropped nothing inside the store's subject. A hit far behind the
    best one (log-odds) and unsupported by the question's words is dropped too; before, these got 25, 9
    and 30 hits."""
    division = search(tinycalc, "how does tinycalc handle division by zero?", "--limit", "50", "--explain")
    assert [h["id"] for h in division["hits"]][:1] == ["division-by-zero"]
    assert len(division["hits"]) <= 3, [h["id"] for h in division["hits"]]
    # What it dropped is not silently gone: the nearest are shown with how far behind the best they are.
    (omitted,) = division["omitted"]
    assert omitted["count"] >= 20
    nearest = omitted["nearest"][0]["explanation"]
    assert nearest["passed"] is False
    assert nearest["behind_best"] > 4
    assert nearest["value"] <= nearest["behind_best_cap"]
    sqrt = "I want to add a sqrt function, what about negative inputs?"
    hits = [h["id"] for h in search(tinycalc, sqrt, "--limit", "50")["hits"]]
    assert hits[0] == "sqrt-negative"
    assert len(hits) <= 6, hits
    assert len(packed(tinycalc, sqrt)) <= 6
    # A long multi-part agent prompt keeps the memory that answers each of its parts.
    task = (
        "Fix the README typo in the install section of tinycalc, add Python 3.13 to the CI matrix, make "
        "sqrt of a negative number return a complex result, and bump the version for the release."
    )
    hits = [h["id"] for h in search(tinycalc, task, "--limit", "50")["hits"]]
    items = packed(tinycalc, task)
    for part in ("ci-matrix", "sqrt-negative", "release-checklist"):
        assert part in hits, (part, hits)
        assert part in items, (part, items)
    assert len(hits) <= 10, hits
    # A pack lists what the cut dropped in ``omitted`` with its relevance; the floor off keeps them all.
    result = run_cli("-W", str(tinycalc), "context", "how does tinycalc handle division by zero?", "--json")
    below = [o for o in result.data["omitted"] if o["reason"] == "below_relevance_floor"]
    assert len(below) >= 20
    assert all(o["relevance"] < 0.8 for o in below)
    unfloored = search(
        tinycalc, "how does tinycalc handle division by zero?", "--limit", "50", "--min-relevance", "0"
    )
    assert len(unfloored["hits"]) > 20


def test_a_cosine_only_answer_in_a_small_store_is_judged_against_the_best_of_its_memories(
    tinycalc: Path,
) -> None:
    """Issue 35, stop 40: a paraphrase that shares no word with its memory is kept by its cosine alone. In
    a store of 38 memories the best of them reaches z 2.1 by chance; the memory's 2.8 stands out, so it is
    kept (relevance 0.74 before, when z was weighed the same in a store of 38 as in one of 6,398)."""
    text = "where are previously typed commands saved between sessions of the interactive prompt"
    data = search(tinycalc, text, "--explain")
    hits = {h["id"]: h for h in data["hits"]}
    assert "repl-history" in hits, list(hits)
    shown = hits["repl-history"]["explanation"]["relevance"]
    assert shown["matched_terms"] == []  # no shared word: the cosine alone
    assert shown["best_null"]["memories"] == 38
    assert 2.0 < shown["best_null"]["z"] < shown["z"]
    assert "repl-history" in packed(tinycalc, text)
    human = run_cli("-W", str(tinycalc), "search", text, "--explain", "--human")
    assert "best of 38 by chance 2.14)" in human.out  # the nearest dropped hits say it too


def test_a_lone_shared_word_the_cosine_does_not_confirm_is_a_coincidence(tinycalc: Path) -> None:
    """Issue 35, stop 40: "pet pythons" share one word with tinycalc's memories about its Python code, and
    that word carried them over the floor (relevance 0.88). Their cosine is below what the best of 38
    unrelated memories reaches by chance: the word is held in another sense, and its coverage does not
    count. A paraphrase that shares one word its cosine confirms keeps it."""
    text = "what do pet pythons eat and how often"
    assert search(tinycalc, text)["hits"] == []
    everything = search(tinycalc, text, "--explain", "--min-relevance", "0")["hits"]
    shown = [h["explanation"]["relevance"] for h in everything]
    coincidences = [r for r in shown if r.get("unconfirmed_word")]
    assert coincidences, shown[:3]
    for relevance in coincidences:
        assert relevance["matched_terms"] == [relevance["unconfirmed_word"]]
        assert relevance["z"] - relevance["best_null"]["z"] <= -0.5
        assert relevance["value"] < DEFAULT_MIN_RELEVANCE
    assert "python" in {r["unconfirmed_word"] for r in coincidences}
    kept = search(tinycalc, "my sine of 90 came out as 0.89, how do I work in degrees", "--explain")["hits"]
    assert kept[0]["id"] == "trig-degrees"
    assert kept[0]["explanation"]["relevance"]["matched_terms"] == ["degre"]
    assert "unconfirmed_word" not in kept[0]["explanation"]["relevance"]


def test_a_small_store_keeps_distinct_answers_that_share_the_questions_words(tmp_path: Path) -> None:
    """The cut against the best hit spares hits the question's words support: in a small store about
    releasing, "run scripts/release.sh" is far behind the best hit (log-odds 7.1; before stop 40's refit,
    "no release on a Friday" at 5.9) for "how do we release a new version", yet it is an answer (a cut on
    every hit dropped three of these five)."""
    from tests.test_relevance import release_store

    root = tmp_path / "ws"
    ids = release_store(root)
    assert run_cli("-W", str(root), "index", "rebuild", "--json").code == 0
    data = search(root, "how do we release a new version", "--explain")
    assert data["query"]["semantic_arm"] == "transformer"
    hits = {h["id"]: h["explanation"]["relevance"] for h in data["hits"]}
    for name in ("script", "changelog", "pypi", "freeze", "failed"):
        assert ids[name] in hits, name
    # the farthest behind of the five: far behind, kept by its shared words
    farthest = max(
        ("script", "changelog", "pypi", "freeze", "failed"), key=lambda n: hits[ids[n]]["behind_best"]
    )
    assert hits[ids[farthest]]["behind_best"] > 4
    assert "behind_best_cap" not in hits[ids[farthest]]
    assert ids["db"] not in hits
    items = packed(root, "how do we release a new version")
    assert all(ids[name] in items for name in ("script", "changelog", "pypi", "freeze", "failed"))


def test_the_static_arm_answers_until_the_vectors_are_complete(tmp_path: Path) -> None:
    root = tinycalc_repo(tmp_path / "ws", commit=False)
    ws = Workspace(root)
    text = "I want to add a sqrt function, what about negative inputs?"  # (ranking here: the floor off)
    before = search(root, text, "--min-relevance", "0")
    assert before["query"]["semantic_arm"] == "static"  # nothing embedded yet: the query did not wait
    assert before["hits"][0]["id"] == "sqrt-negative"
    assert (
        search(root, text, "--min-relevance", "0") == before
    )  # same store state, same cached vectors: the same answer
    view = open_index(ws)
    done, total = embed_pending(view, max_seconds=0)  # a server's slice that ran out at once
    assert (done, total) == (0, 38)
    assert search(root, text, "--min-relevance", "0")["query"]["semantic_arm"] == "static"
    assert embed_pending(view) == (38, 38)
    assert view.arm == "transformer"
    after = search(root, text, "--min-relevance", "0")
    assert after["query"]["semantic_arm"] == "transformer"
    assert after["hits"][0]["id"] == "sqrt-negative"


def test_the_vector_cache_survives_restarts_and_is_reused_across_commits(tinycalc: Path) -> None:
    ws = Workspace(tinycalc)
    view = open_index(ws)
    cache = DerivedCache(tinycalc / CACHE_PATH)
    try:
        model_id = cache_model_id(view.transformer_folder, view.transformer_key)
        assert len(cache.get_vectors(_blobs(view), model_id)) == 38
    finally:
        cache.close()
    # a new process (nothing kept in memory) answers with the transformer at once
    assert '"semantic_arm": "transformer"' in fresh_search(tinycalc, "divide by zero")
    # a new memory: only it lacks a vector, and the static arm answers until it has one
    (tinycalc / "memories" / "modulo-negative.md").write_text(
        "tinycalc.mod follows Python: the result takes the sign of the divisor, so -7 mod 3 is 2.\n",
        encoding="utf-8",
    )
    assert search(tinycalc, "remainder of a negative number")["query"]["semantic_arm"] == "static"
    view = open_index(ws)
    assert embed_pending(view) == (39, 39)
    assert search(tinycalc, "remainder of a negative number")["query"]["semantic_arm"] == "transformer"
    # committing it changes no blob: a new process's new generation takes every vector from the cache
    # (a query never embeds: it assembles cached vectors or answers with the static arm)
    git(tinycalc, "add", "-A")
    git(tinycalc, "commit", "-q", "-m", "modulo")
    out = fresh_search(tinycalc, "remainder of a negative number", "--min-relevance", "0")
    assert '"semantic_arm": "transformer"' in out
    assert '"id": "modulo-negative"' in out


def test_a_commit_that_edits_one_memory_embeds_only_that_one_again(tmp_path: Path) -> None:
    """Another memory's cached vector is marked (overwritten with a value no model gives): if anything but
    the edited memory were embedded again, the mark would be gone. A query without a server in between
    embeds nothing and answers with the static arm."""
    import numpy as np

    root = tinycalc_repo(tmp_path / "ws")
    ws = Workspace(root)
    view = open_index(ws)
    assert embed_pending(view) == (38, 38)
    model_id = cache_model_id(view.transformer_folder, view.transformer_key)
    old_blobs = _blobs(view)
    other = _blob_of(root, "memories/division-by-zero.md")
    cache = DerivedCache(root / CACHE_PATH)
    try:
        dim = len(cache.get_vectors([other], model_id)[other]) // 4
        mark = np.full(dim, 0.125, np.float32)
        cache.put_vectors({other: mark.tobytes()}, model_id)
    finally:
        cache.close()

    edited = root / "memories" / "sqrt-negative.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "cmath.sqrt also works.\n", encoding="utf-8")
    git(root, "commit", "-q", "-am", "edit one memory")
    new_blob = _blob_of(root, "memories/sqrt-negative.md")
    assert new_blob not in old_blobs
    out = fresh_search(root, "square root of a negative number")
    assert '"semantic_arm": "static"' in out  # one vector missing: the static arm answers at once ...
    cache = DerivedCache(root / CACHE_PATH)
    try:
        assert cache.get_vectors([new_blob], model_id) == {}  # ... and the query embedded nothing
    finally:
        cache.close()

    view = open_index(ws)
    assert embed_pending(view) == (38, 38)
    cache = DerivedCache(root / CACHE_PATH)
    try:
        kept = cache.get_vectors([*old_blobs, new_blob], model_id)
    finally:
        cache.close()
    assert kept[other] == mark.tobytes()  # not embedded again
    assert set(kept) == {*old_blobs, new_blob}  # the old version's vector stays for asOf and checkouts
    assert '"semantic_arm": "transformer"' in fresh_search(root, "square root of a negative number")


def _blob_of(root: Path, path: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", f"HEAD:{path}"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _blobs(view: object) -> list[str]:
    from ee.index.freshness import INDEX_DIR
    from ee.index.transformer import generation_blobs

    root = view.root  # type: ignore[attr-defined]
    return generation_blobs(root / INDEX_DIR / view.manifest["generation"])  # type: ignore[attr-defined]


def fresh_search(root: Path, text: str, *more: str) -> str:
    """``ee search TEXT --json`` in a new process, without a server."""
    done = subprocess.run(
        [sys.executable, "-m", "ee", "-W", str(root), "search", text, "--json", *more],
        capture_output=True,
        text=True,
        env=dict(os.environ) | {"EE_NO_SERVER": "1"},
        check=True,
    )
    return done.stdout


def test_the_warm_server_computes_the_vectors_in_idle_time(tmp_path: Path) -> None:
    from tests.test_watch import Watcher, wait_for

    root = tinycalc_repo(tmp_path / "ws")
    watcher = Watcher(Workspace(root))
    try:
        wait_for(lambda: "transformer vectors complete: 38" in watcher.log, "the vectors", watcher)
        text = "what happens when you take the square root of minus four"
        out = fresh_search(root, text)
        assert '"semantic_arm": "transformer"' in out  # saved beside the generation: any process uses them
        served = subprocess.run(
            [sys.executable, "-m", "ee", "-W", str(root), "search", text, "--json"],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "EE_NO_SERVER"},
            check=True,
        )
        assert served.stdout == out  # served by the warm server: the same bytes as in-process
    finally:
        assert watcher.stop() == 0


def test_a_texts_vector_does_not_depend_on_what_is_encoded_with_it() -> None:
    from ee.index.transformer import load_transformer

    model = load_transformer()
    lines = (REPO / "tests" / "fixtures" / "relevance" / "paraphrase-tinycalc.tsv").read_text(
        encoding="utf-8"
    )
    texts = [line.split("\t")[0] for line in lines.splitlines() if line and not line.startswith("#")][:12]
    together = model.encode(texts)  # (run several at a time: Transformer.encode)
    alone = [model.encode([text])[0] for text in texts]
    assert [row.tobytes() for row in together] == [row.tobytes() for row in alone]
    assert len({row.tobytes() for row in together}) == len(texts)


def test_a_broken_model_file_is_a_model_error_with_its_repair(tmp_path: Path) -> None:
    """onnxruntime reads model.onnx from its path: a file that is not a model is ee's ModelError naming
    the folder and the repair, not onnxruntime's exception."""
    from ee.errors import ModelError
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, load_transformer

    folder = tmp_path / "model"
    shutil.copytree(DEFAULT_TRANSFORMER_DIR, folder)
    (folder / "model.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelError) as caught:
        load_transformer(folder)
    assert "cannot load it" in caught.value.message
    assert str(folder) in caught.value.message
    assert "reinstall" in (caught.value.hint or "")
    model = load_transformer()  # the shipped one still loads, named by its file's digest
    assert model.model_id.startswith(f"{DEFAULT_TRANSFORMER_DIR.name}@")


def test_a_model_of_another_graph_is_a_model_error_naming_both_shapes(tmp_path: Path) -> None:
    """A folder whose model.onnx is a valid graph of another shape (an older build without the lead's
    input, or any foreign model) is refused at load with the inputs it takes, not inside a query."""
    from onnxruntime.datasets import get_example

    from ee.errors import ModelError
    from ee.index.transformer import DEFAULT_TRANSFORMER_DIR, load_transformer

    folder = tmp_path / "model"
    shutil.copytree(DEFAULT_TRANSFORMER_DIR, folder)
    shutil.copyfile(get_example("mul_1.onnx"), folder / "model.onnx")  # onnxruntime's own sample graph
    with pytest.raises(ModelError) as caught:
        load_transformer(folder)
    assert "its graph takes ['X']" in caught.value.message
    assert "lead_mask" in caught.value.message
    assert "reinstall" in (caught.value.hint or "")


def test_a_memorys_vector_keeps_its_opening_and_has_no_kind_label(tinycalc: Path) -> None:
    """A memory is embedded as its tags and body (``transformer_text``: no kind label), as the sum of its
    whole text's vector and its lead's: the graph's second output, pooled in the same run over [CLS] and
    the tokens of its first LEAD_WORDS words (``encode_documents``); a text of at most LEAD_WORDS words is
    its own lead. The cached vector of a real memory is exactly that."""
    import numpy as np

    from ee.index.derive import transformer_text
    from ee.index.tokenize import lead
    from ee.index.transformer import LEAD_WORDS, load_transformer

    model = load_transformer()
    long_text = " ".join(f"word{n}" for n in range(LEAD_WORDS + 20)) + " the square root of a negative number"
    short_text = "the square root of a negative number"
    ids = model.tokenizer.encode(long_text).ids
    # The lead's tokens, counted independently: the lead encoded alone, less its closing [SEP].
    lead_tokens = len(model.tokenizer.encode(lead(long_text, LEAD_WORDS)).ids) - 1
    assert 1 < lead_tokens < len(ids) - 1
    row = np.asarray([ids], dtype=np.int64)
    lead_mask = np.zeros_like(row)
    lead_mask[0, :lead_tokens] = 1
    whole, first = model.session.run(
        None, {"input_ids": row, "attention_mask": np.ones_like(row), "lead_mask": lead_mask}
    )
    both = whole + first
    expected = both / np.linalg.norm(both, axis=1, keepdims=True)
    got = model.encode_documents([long_text, short_text])
    assert np.allclose(got[0], expected[0], atol=1e-6)
    assert np.allclose(whole[0], model.encode([long_text])[0], atol=1e-6)
    assert not np.allclose(got[0], whole[0], atol=1e-3)  # the lead counts
    assert got[1].tobytes() == model.encode([short_text])[0].tobytes()
    assert transformer_text("body", ["math", "sqrt"]) == "math sqrt\nbody"
    assert transformer_text("body", []) == "body"

    ws = Workspace(tinycalc)
    view = open_index(ws)
    blobs = _blobs(view)
    pos = max(range(view.gen.size), key=lambda p: len(view.gen.body(p).split()))
    assert len(view.gen.body(pos).split()) > LEAD_WORDS  # (tinycalc holds memories longer than a lead)
    record = view.gen.records[pos]
    cache = DerivedCache(tinycalc / CACHE_PATH)
    try:
        raw = cache.get_vectors([blobs[pos]], cache_model_id(view.transformer_folder, view.transformer_key))
    finally:
        cache.close()
    cached = np.frombuffer(raw[blobs[pos]], dtype=np.float32)
    text = transformer_text(view.gen.body(pos), record.get("tags") or [])
    assert cached.tobytes() == model.encode_documents([text])[0].tobytes()


def test_another_tokenizer_or_truncation_is_another_model_for_the_cache(tmp_path: Path) -> None:
    """Cached vectors are filed under the model's identity: the graph, the tokenizer and the configuration
    that sets the truncation, and the document recipe. A byte-identical copy reuses them; a copy whose
    truncation differs does not (its vectors are computed again, never mixed with the old ones)."""
    from ee.index.transformer import (
        DEFAULT_TRANSFORMER_DIR,
        DOCUMENT_RECIPE,
        load_transformer,
        matrix_path,
        transformer_key,
    )

    shipped_key = transformer_key(DEFAULT_TRANSFORMER_DIR)
    assert shipped_key is not None
    shipped = cache_model_id(DEFAULT_TRANSFORMER_DIR, shipped_key)
    assert shipped.endswith(":" + DOCUMENT_RECIPE)
    assert shipped == f"transformer:{load_transformer().model_id}:{DOCUMENT_RECIPE}"

    copy = tmp_path / "copy" / DEFAULT_TRANSFORMER_DIR.name
    shutil.copytree(DEFAULT_TRANSFORMER_DIR, copy)
    copy_key = transformer_key(copy)
    assert copy_key is not None
    assert cache_model_id(copy, copy_key) == shipped  # the same bytes: the same vectors

    config = (copy / "config.json").read_text(encoding="utf-8")
    assert '"max_tokens": 256' in config
    (copy / "config.json").write_text(config.replace('"max_tokens": 256', '"max_tokens": 128'), "utf-8")
    changed_key = transformer_key(copy)
    assert changed_key is not None
    assert changed_key != copy_key
    assert cache_model_id(copy, changed_key) != shipped
    assert matrix_path(tmp_path, changed_key) != matrix_path(tmp_path, copy_key)


def test_rebuild_and_status_say_what_the_transformer_vectors_did(tmp_path: Path) -> None:
    """``ee index rebuild`` reports the embedding after the index (vectors computed, reused, their time)
    and ``ee index status`` how far the vectors are and which arm a query would use now (QA F5)."""
    root = tinycalc_repo(tmp_path / "ws")

    def rebuilt() -> dict:
        result = run_cli("-W", str(root), "index", "rebuild", "--json")
        assert result.code == 0, result.err
        vectors: dict = result.data["transformer"]
        return vectors

    def status() -> dict:
        result = run_cli("-W", str(root), "index", "status", "--json")
        assert result.code == 0, result.err
        data: dict = result.data
        return data

    first = rebuilt()
    assert first | {"seconds": 0} == {
        "state": "complete",
        "memories": 38,
        "done": 38,
        "computed": 38,
        "reused": 0,
        "seconds": 0,
        "max_memories": 50_000,
    }
    assert first["seconds"] > 0
    again = rebuilt()  # every vector is in the cache: nothing is embedded again
    assert (again["state"], again["computed"], again["reused"], again["done"]) == ("complete", 0, 38, 38)
    now = status()
    assert now["semantic_arm"] == "transformer"
    assert (now["transformer"]["state"], now["transformer"]["done"]) == ("complete", 38)

    (root / "memories" / "modulo-negative.md").write_text(
        "tinycalc.mod follows Python: the result takes the sign of the divisor.\n", encoding="utf-8"
    )
    assert search(root, "remainder of a negative number")["query"]["semantic_arm"] == "static"
    now = status()
    assert now["semantic_arm"] == "static"  # what a query would use now
    assert now["transformer"]["state"] == "pending"
    assert (now["transformer"]["done"], now["transformer"]["memories"]) == (38, 39)
    human = run_cli("-W", str(root), "index", "status", "--human").out
    assert "transformer: 38 of 39 vectors (the static arm answers until all are done" in human
    third = rebuilt()
    assert (third["state"], third["computed"], third["reused"], third["done"]) == ("complete", 1, 38, 39)
    human = run_cli("-W", str(root), "index", "rebuild", "--human").out
    assert human.startswith("rebuilt: 39 new, 0 modified, 0 deleted, 0 moved in ")
    assert "\ntransformer: 39 of 39 vectors (computed 0, reused 39 in " in human

    config = root / ".ee" / "config.toml"
    original = config.read_text(encoding="utf-8")
    config.write_text(original.replace("[model]", "[model]\ntransformer_max_memories = 10", 1))
    assert "transformer_max_memories = 10" in config.read_text(encoding="utf-8")
    above = rebuilt()
    assert (above["state"], above["computed"], above["done"], above["max_memories"]) == (
        "above_max_memories",
        0,
        0,
        10,
    )
    assert status()["semantic_arm"] == "static"
    human = run_cli("-W", str(root), "index", "rebuild", "--human").out
    assert "transformer: not used: 39 memories, above [model] transformer_max_memories = 10" in human
    config.write_text(original.replace("[model]", "[model]\ntransformer = false", 1))
    assert rebuilt()["state"] == "off"
    assert (
        "transformer: off ([model] transformer = false)"
        in run_cli("-W", str(root), "index", "status", "--human").out
    )
