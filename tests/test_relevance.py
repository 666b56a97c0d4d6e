"""Calibrated relevance and the relevance floor: ee says "nothing relevant" when nothing is.

Real stores (this repository's own memories, and a small store of distinct memories on one topic), the
real shipped model, the real CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ee.config import DEFAULT_MIN_RELEVANCE
from ee.errors import UsageError
from ee.pack import build_pack
from ee.query import search
from ee.query.document import from_arguments
from ee.workspace import Workspace
from tests.conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
OFFTOPIC = REPO / "tests" / "fixtures" / "offtopic"

pytestmark = pytest.mark.semantic


def questions(name: str) -> list[str]:
    lines = (OFFTOPIC / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A workspace holding this repository's own memories, committed."""
    root = tmp_path_factory.mktemp("own") / "ws"
    shutil.copytree(REPO / "memories", root / "memories")
    git(root.parent, "init", "-q", "-b", "main", str(root))
    Workspace.init(root)
    git(root, "add", "-A")
    git(root, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "memories")
    return Workspace(root)


def release_store(root: Path) -> dict[str, str]:
    """A new ee workspace at ``root`` with five distinct memories about releasing (several worded alike)
    and two unrelated ones, written with ``ee remember``: their ids by name."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    assert run_cli("-W", str(root), "init", "--json").code == 0
    bodies = {
        "script": ("rule", "To release, run scripts/release.sh X.Y.Z from main; never tag by hand."),
        "changelog": (
            "rule",
            "Before a release, move the Unreleased entries of CHANGELOG.md under the new version.",
        ),
        "pypi": ("fact", "The publish workflow uploads the release to PyPI when a version tag is pushed."),
        "freeze": ("decision", "No release goes out on a Friday: we decided this after the 2.3 rollback."),
        "failed": ("failure", "A release failed because the version in pyproject.toml was not bumped first."),
        "docs": ("command", "Rebuild the docs site with make docs-deploy."),
        "db": (
            "fact",
            "The metadata store is PostgreSQL 16 with logical replication to the analytics replica.",
        ),
    }
    ids = {}
    for name, (kind, body) in bodies.items():
        res = run_cli("-W", str(root), "remember", body, "--kind", kind, "--json")
        assert res.code == 0, res.out + res.err
        ids[name] = res.data["id"]
    return ids


@pytest.fixture(scope="module")
def topic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Five distinct memories about releasing, several with similar wording, and two unrelated ones."""
    root = tmp_path_factory.mktemp("topic") / "ws"
    return {"root": root, "ids": release_store(root)}


def test_off_topic_questions_get_nothing_from_this_repositorys_memories(own: Workspace) -> None:
    sets = ("questions.txt", "holdout.txt", "adversarial.txt", "fresh.txt")
    asked = [question for name in sets for question in questions(name)]
    answered = []
    for text in asked:
        data = search(own, from_arguments(text))
        pack = build_pack(own, from_arguments(text))
        if data["hits"] or pack["sections"]:
            answered.append(text)
        else:
            assert "no_relevant_memories" in {d["code"] for d in data["degraded"]}, text
            assert "no_relevant_memories" in {d["code"] for d in pack["degraded"]}, text
            assert pack["counts"]["items"] == 0
    # The target is ≥ 90 %; this store gets them all today.
    assert len(answered) <= len(asked) // 10, answered


def test_on_topic_questions_still_get_their_memories(own: Workspace) -> None:
    wanted = {
        "how does ee commit a memory": "ee commits with git plumbing",
        "how to benchmark ee": "Benchmarks of fresh ee processes",
        "what happens when commits fail without user.name": "Commits failed on machines without user.name",
    }
    for text, title in wanted.items():
        hits = search(own, from_arguments(text))["hits"]
        assert any(h["title"].startswith(title) for h in hits[:3]), (text, [h["title"] for h in hits])
        assert all(h["relevance"] >= DEFAULT_MIN_RELEVANCE for h in hits)


def test_nonsense_finds_nothing_and_says_so_in_json(own: Workspace) -> None:
    res = run_cli("-W", str(own.root), "search", "xylophone quantum banana", "--json")
    assert res.code == 0
    data = res.data
    assert data["hits"] == []
    assert data["min_relevance"] == DEFAULT_MIN_RELEVANCE
    (omitted,) = data["omitted"]
    assert omitted["reason"] == "below_relevance_floor"
    assert omitted["count"] >= 1
    (note,) = [d for d in res.json["degraded"] if d["code"] == "no_relevant_memories"]
    assert "--min-relevance" in note["repair"]


def test_the_agent_hook_injects_nothing_when_nothing_is_relevant(own: Workspace) -> None:
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "how do I clean a cast iron pan"})
    res = run_cli("-W", str(own.root), "context", "-", "--format", "hook", input=prompt)
    assert res.code == 0
    assert res.out == ""
    prompt = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "how does ee commit a memory"})
    res = run_cli("-W", str(own.root), "context", "-", "--format", "hook", input=prompt)
    assert res.code == 0
    context = json.loads(res.out)["hookSpecificOutput"]["additionalContext"]
    assert "git plumbing" in context


def test_a_human_pack_with_nothing_relevant_says_so(own: Workspace) -> None:
    res = run_cli("-W", str(own.root), "context", "how do I clean a cast iron pan", "--human")
    assert res.code == 0
    assert "No memory is relevant to this task (" in res.out
    assert "below the relevance floor 0.8)." in res.out
    assert "below_relevance_floor" in res.out  # counted ...
    assert "  - mem_" not in res.out  # ... not listed one by one
    assert "no memory is relevant" in res.err


def test_min_relevance_zero_turns_the_floor_off_and_config_sets_it(own: Workspace, tmp_path: Path) -> None:
    text = "how do I clean a cast iron pan"
    off = run_cli("-W", str(own.root), "search", text, "--min-relevance", "0", "--json").data
    assert off["hits"]
    assert off["omitted"] == []
    assert off["min_relevance"] == 0
    assert run_cli("-W", str(own.root), "search", text, "--min-relevance", "1.5", "--json").code == 2
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    assert run_cli("-W", str(root), "init", "--json").code == 0
    config = root / ".ee" / "config.toml"
    config.write_text("[query]\nmin_relevance = 0\n", encoding="utf-8")
    assert run_cli("-W", str(root), "remember", "Rebuild the docs site with make docs-deploy.").code == 0
    assert run_cli("-W", str(root), "search", text, "--json").data["hits"]
    config.write_text("[query]\nmin_relevance = 2\n", encoding="utf-8")
    res = run_cli("-W", str(root), "search", text, "--json")
    assert res.code == 3
    assert "min_relevance" in res.json["error"]["message"]


def test_a_floor_that_is_not_a_number_is_refused_not_turned_off(own: Workspace) -> None:
    """NaN compares false with everything, so it passed click's range check and then kept every hit: a
    typo'd floor silently turned the floor off. Search, context and the library refuse it alike."""
    text = "how do I clean a cast iron pan"
    for command in ("search", "context"):
        res = run_cli("-W", str(own.root), command, text, "--min-relevance", "nan", "--json")
        assert res.code == 2, (command, res.out)
        assert "min_relevance" in res.json["error"]["message"]
        assert "between 0" in res.json["error"]["repair"]
    with pytest.raises(UsageError, match="min_relevance"):
        search(own, from_arguments(text), float("nan"))
    with pytest.raises(UsageError, match="min_relevance"):
        build_pack(own, from_arguments(text), min_relevance=-0.5)


def test_every_hit_explains_its_relevance_truthfully(topic: dict[str, Any]) -> None:
    root = topic["root"]
    data = run_cli(
        "-W", str(root), "search", "how do I publish a release", "--explain", "--json", "--min-relevance", "0"
    ).data
    assert data["hits"]
    for hit in data["hits"]:
        relevance = hit["explanation"]["relevance"]
        assert relevance["value"] == hit["relevance"]
        assert relevance["passed"] is True  # the floor is off
        if hit["components"]["lexical"] is None or not relevance["matched_terms"]:
            # No lexical match: never a perfect lexical score.
            assert hit["components"]["lexical_norm"] == 0.0
            assert relevance["coverage"] == 0.0
        assert 0.0 <= relevance["coverage"] <= 1.0
        assert {"cosine", "cosine_null", "z", "familiarity", "store_affinity"} <= set(relevance)
        # seven memories, five about releases: "release" is what the store is about, never set aside
        assert "store_wide_set_aside" not in relevance
    # the store affinity is the query's, the same for every hit
    assert len({hit["explanation"]["relevance"]["store_affinity"] for hit in data["hits"]}) == 1
    floored = run_cli("-W", str(root), "search", "how do I publish a release", "--explain", "--json").data
    for hit in floored["hits"]:
        assert hit["explanation"]["relevance"]["passed"] is True
        assert f"≥ floor {DEFAULT_MIN_RELEVANCE:g}" in hit["why"]


def test_store_affinity_counts_only_as_far_as_a_memorys_own_evidence() -> None:
    from ee.query.relevance import relevance

    coverage = np.array([0.5, 0.5, 0.5])
    z = np.array([2.0, 2.0, 2.0])
    near, far = relevance(coverage, z, 2.0), relevance(coverage, z, 0.0)
    assert (near > far).all()  # a query near the store as a whole: more relevant
    # beyond the memory's own z, the store's affinity adds nothing: neighbours do not vouch for a memory
    assert relevance(coverage, z, 2.0) == pytest.approx(relevance(coverage, z, 9.0))
    lone = relevance(np.array([0.0]), np.array([0.5]), 9.0)
    assert lone[0] < DEFAULT_MIN_RELEVANCE


def test_the_same_cosine_evidence_counts_for_less_in_a_bigger_store() -> None:
    """The transformer arm weighs a hit's z above what the best of the store's N unrelated memories reaches
    (the expected maximum of N null z-scores): the same evidence is stronger among 38 memories than among
    6,398, where a word coincidence reaches it by chance."""
    from ee.query.relevance import best_null, relevance

    assert best_null(1) == 0.0
    assert best_null(38) == pytest.approx(2.14, abs=0.01)
    assert best_null(6398) == pytest.approx(3.72, abs=0.01)
    sizes = [best_null(n) for n in (2, 10, 38, 100, 1000, 6398, 100000)]
    assert sizes == sorted(sizes)
    coverage, z = np.array([0.0, 0.5]), np.array([2.8, 2.4])
    small = relevance(coverage, z, 0.2, "transformer", best_null(38))
    big = relevance(coverage, z, 0.2, "transformer", best_null(6398))
    assert (small > big).all()


def test_the_static_arm_keeps_answers_it_ranks_first(tmp_path: Path) -> None:
    """Paraphrases whose memory the static arm ranks first, which its old fit (z against one pair's null)
    dropped below the floor at relevance 0.53-0.79: judged against the best of the store's N memories and
    refit with the paraphrase dev set, they pass (issue 35, stop 40)."""
    root = tmp_path / "ws"
    shutil.copytree(REPO / "memories", root / "memories")
    Workspace.init(root)
    ws = Workspace(root)  # no transformer vector computed: the static arm answers
    wanted = {
        'on a brand new build box saving fails with "please tell me who you are"': "Commits failed on",
        "I'm in the middle of an interactive rebase, can I still record a lesson": "ee refuses every write",
        "several agents save notes at the same moment; how is the writing serialised and what if one is "
        "killed": "The workspace write lock",
    }
    for text, title in wanted.items():
        data = search(ws, from_arguments(text, explain=True))
        assert data["query"]["semantic_arm"] == "static"
        hits = data["hits"]
        assert hits, text
        assert hits[0]["title"].startswith(title), (text, [(h["title"], h["relevance"]) for h in hits])
        assert hits[0]["relevance"] >= DEFAULT_MIN_RELEVANCE
        # the static arm's cosine evidence is judged against the best of the store's memories too
        assert hits[0]["explanation"]["relevance"]["best_null"]["memories"] == len(ws.list()[0])


def test_the_static_arm_weighs_cosine_evidence_against_the_store_size_too() -> None:
    from ee.query.relevance import best_null, log_odds

    coverage, z = np.array([0.0, 0.5]), np.array([4.0, 3.0])
    small = log_odds(coverage, z, 1.0, "static", best_null(38))
    big = log_odds(coverage, z, 1.0, "static", best_null(6398))
    assert (small > big).all()
    # session evidence keeps the fit its ranking was tuned with (no best of N)
    assert not np.allclose(log_odds(coverage, z, 1.0, "evidence"), log_odds(coverage, z, 1.0, "static"))


def test_a_pack_keeps_distinct_memories_on_one_topic_and_accounts_for_every_candidate(
    topic: dict[str, Any],
) -> None:
    ids = topic["ids"]
    data = run_cli(
        "-W",
        str(topic["root"]),
        "context",
        "how do we release a new version",
        "--max-tokens",
        "1200",
        "--json",
    ).data
    packed = {i["id"] for s in data["sections"] for i in s["items"]}
    omitted = {o["id"]: o["reason"] for o in data["omitted"]}
    # Five distinct release memories, similar wording: all of them are packed, none is a "duplicate".
    for name in ("script", "changelog", "pypi", "freeze", "failed"):
        assert ids[name] in packed, (name, omitted.get(ids[name]))
    assert "duplicate" not in omitted.values()
    # Nothing leaves silently: every candidate is an item or an omitted entry with its reason.
    assert len(packed) + len(omitted) == data["counts"]["candidates"]
    assert data["counts"]["omitted"] == len(omitted)
    assert omitted.get(ids["db"]) == "below_relevance_floor"
    assert sum(data["counts"]["omitted_by_reason"].values()) == len(omitted)


def test_the_same_text_twice_is_a_duplicate(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q")
    assert run_cli("-W", str(root), "init", "--json").code == 0
    body = "To release, run scripts/release.sh X.Y.Z from main; never tag by hand."
    first = run_cli("-W", str(root), "remember", body, "--kind", "rule", "--json").data["id"]
    second = run_cli(
        "-W",
        str(root),
        "remember",
        "  to RELEASE, run  scripts/release.sh X.Y.Z from main; never tag by hand.",
        "--kind",
        "rule",
        "--json",
    ).data["id"]
    data = run_cli("-W", str(root), "context", "how do I release", "--json").data
    packed = [i["id"] for s in data["sections"] for i in s["items"]]
    assert len(packed) == 1
    (other,) = [o for o in data["omitted"] if o["id"] in {first, second}]
    assert other["reason"] == "duplicate"
    assert other["duplicate_of"] == packed[0]


def test_why_says_a_memory_is_below_the_floor(topic: dict[str, Any]) -> None:
    res = run_cli(
        "-W", str(topic["root"]), "why", topic["ids"]["db"], "--query", "how do we release", "--json"
    )
    assert res.code == 0
    query = res.data["query"]
    assert query["rank"] is None
    assert "below the floor" in query["reason"]
    assert query["pack"]["reason"] == "below_relevance_floor"
    assert query["relevance"]["passed"] is False


def test_eval_beir_reports_abstention_on_off_topic_questions(tmp_path: Path) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    docs = {
        "d1": "To release, run scripts/release.sh from main.",
        "d2": "The docs site is rebuilt with make docs-deploy.",
        "d3": "PostgreSQL 16 stores the metadata.",
    }
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "text": v}) + "\n" for k, v in docs.items()), encoding="utf-8"
    )
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "how to release"}) + "\n", encoding="utf-8"
    )
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    offtopic = tmp_path / "off.txt"
    offtopic.write_text(
        "# comment\nhow do I clean a cast iron pan\n\nwho won the 1998 world cup\n", encoding="utf-8"
    )
    res = run_cli("eval", "beir", str(folder), "--offtopic", str(offtopic), "--mode", "hybrid", "--json")
    assert res.code == 0, res.out + res.err
    data = res.data
    assert data["offtopic_questions"] == 2
    assert data["hybrid"]["abstention"] == 1.0
    assert data["hybrid"]["recall"] == 1.0
    human = run_cli("eval", "beir", str(folder), "--offtopic", str(offtopic), "--mode", "hybrid", "--human")
    assert "abstention" in human.out
    missing = run_cli("eval", "beir", str(folder), "--offtopic", str(tmp_path / "none.txt"), "--json")
    assert missing.code == 7


def test_a_batch_opens_the_index_once(
    topic: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ee.query as query_module

    opened = []
    real = query_module.open_view

    def counting(ws: Any, as_of: Any) -> Any:
        opened.append(as_of)
        return real(ws, as_of)

    monkeypatch.setattr(query_module, "open_view", counting)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("how do I release\nhow do we publish to PyPI\nrebuild the docs\n" * 5, encoding="utf-8")
    res = run_cli("-W", str(topic["root"]), "search", "--batch", str(batch))
    assert res.code == 0, res.err
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert len(lines) == 15
    assert all(line["success"] for line in lines)
    assert opened == [None]  # one view for the whole batch


def test_every_format_says_when_nothing_is_relevant(own: Workspace) -> None:
    """An agent tells "ee ran and found nothing" from a failure in every format; the hook stays silent."""
    task = "how do I clean a cast iron pan"
    below = run_cli("-W", str(own.root), "context", task, "--json").json["data"]["counts"]["omitted"]
    assert below > 0
    said = f"No memory is relevant to this task ({below} below the relevance floor 0.8)."
    for fmt in ("human", "markdown", "compact", "toon"):
        res = run_cli("-W", str(own.root), "context", task, "--format", fmt)
        assert res.code == 0, (fmt, res.err)
        assert said in res.out, (fmt, res.out)
    markdown = run_cli("-W", str(own.root), "context", task, "--format", "markdown").out
    assert markdown.splitlines() == [f"# ee context: {task}", "", said]
    hits = run_cli("-W", str(own.root), "search", task, "--json").json["data"]
    found = f"No memory matches this query ({hits['omitted'][0]['count']} below the relevance floor 0.8)."
    for fmt in ("human", "markdown", "compact", "toon"):
        res = run_cli("-W", str(own.root), "search", task, "--format", fmt)
        assert res.code == 0, (fmt, res.err)
        assert found in res.out, (fmt, res.out)
    data = run_cli("-W", str(own.root), "context", task, "--json").json["data"]
    assert data["sections"] == []
    assert data["counts"]["items"] == 0
    assert data["counts"]["omitted_by_reason"] == {"below_relevance_floor": below}
    jsonl = run_cli("-W", str(own.root), "context", task, "--format", "jsonl").out
    footer = json.loads(jsonl.splitlines()[-1])
    assert (footer["type"], footer["count"]) == ("footer", 0)
    assert footer["degraded"][0]["code"] == "no_relevant_memories"
    hook = run_cli("-W", str(own.root), "context", task, "--format", "hook")
    assert (hook.code, hook.out) == (0, "")  # silent by design: nothing is injected


def test_eval_relevance_counts_the_noise_an_answerable_question_gets(tmp_path: Path) -> None:
    """``ee eval relevance`` says how many hits and pack items an answerable question gets with the floor on,
    and which share of them are its expected memory (precision)."""
    folder = tmp_path / "set"
    folder.mkdir()
    tinycalc = REPO / "tests" / "fixtures" / "stores" / "tinycalc" / "memories"
    (folder / "p.tsv").write_text(
        "what happens when you take the square root of minus four\tsqrt-negative\n"
        "what does the library do when asked to divide something by nothing\tdivision-by-zero\n",
        encoding="utf-8",
    )
    (folder / "u.txt").write_text("does tinycalc solve quadratic equations symbolically\n", encoding="utf-8")
    (folder / "o.txt").write_text("how do I bake sourdough bread\n", encoding="utf-8")
    spec = {
        "stores": [
            {"name": "tc", "memories": str(tinycalc), "paraphrases": "p.tsv", "unanswerable": "u.txt"}
        ],
        "offtopic": ["o.txt"],
    }
    (folder / "stores.json").write_text(json.dumps(spec), encoding="utf-8")
    res = run_cli("eval", "relevance", str(folder), "--json")
    assert res.code == 0, res.err
    for arm in ("static", "transformer"):
        row = res.json["data"]["stores"]["tc"][arm]
        for where in ("search", "context"):
            noise = row["noise"][where]
            hits = noise["mean"] * 2  # (two questions)
            if not hits:
                assert noise["precision"] is None
                continue
            # The precision is the share of all hits that are expected: at most one per question found.
            found = round(noise["precision"] * hits)
            assert 1 <= found <= 2
            assert abs(found / hits - noise["precision"]) < 1e-3
            assert noise["median"] <= max(hits, 1)
        # Each failure is listed, one entry per question the figures count as failed.
        failures = row["failures"]
        assert len(failures["missed"]) == round((1 - row["paraphrase_hit@10"]["floor_on"]) * 2)
        assert len(failures["not_first"]) == round((1 - row["paraphrase_hit@1"]) * 2)
        assert len(failures["unanswerable_answered"]) == round(1 - row["unanswerable_abstention"])
        assert len(failures["offtopic_answered"]) == round(1 - row["offtopic_abstention"]["search"])
        for entry in failures["missed"] + failures["not_first"]:
            assert entry["expected"] in ("sqrt-negative", "division-by-zero")
        assert all(entry["rank_floor_off"] != 1 for entry in failures["not_first"])
        for entry in failures["unanswerable_answered"] + failures["offtopic_answered"]:
            assert entry["hits"] >= 1
            assert 0.0 <= entry["top"]["relevance"] <= 1.0
    human = run_cli("eval", "relevance", str(folder), "--human")
    assert human.code == 0
    assert "precision" in human.out
    assert "pack mean/med" in human.out


def test_a_memory_that_says_the_question_is_relevant_in_a_two_memory_store(tmp_path: Path) -> None:
    """A store of a handful of memories has no 90th-percentile cosine to speak of: read the low way, the
    store affinity of a two-memory store was the other memory's cosine, and "Pinned toolchain" found its
    own memory at relevance 0.68, below the floor."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    assert run_cli("-W", str(root), "init", "--json").code == 0
    for text in ("No deploys on Fridays.", "Pinned toolchain."):
        assert run_cli("-W", str(root), "remember", text, "--kind", "rule", "--json").code == 0
    data = run_cli("-W", str(root), "search", "Pinned toolchain", "--explain", "--json").data
    assert [hit["body"] for hit in data["hits"]] == ["Pinned toolchain."]
    assert data["hits"][0]["relevance"] >= DEFAULT_MIN_RELEVANCE
    assert run_cli("-W", str(root), "search", "how do I bake sourdough bread", "--json").data["hits"] == []
