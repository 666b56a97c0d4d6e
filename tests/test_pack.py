"""Context packs: quotas, budget, diversity, omitted reasons, authority, pack hash (real git, real model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ee.pack import pack_view
from ee.pack.pieces import block_piece, item_text, section_piece, title_piece
from ee.pack.profiles import PROFILES, SECTIONS, resolve_profile
from ee.pack.select import Budget, Candidate, select
from ee.query.document import from_arguments
from ee.query.engine import count_tokens
from ee.render.results import render
from ee.results import Pack
from tests.conftest import run_cli, run_ee_process
from tests.memory_corpus import shared_store

TASK = "the CI cache is stale and the flaky upload test keeps failing"
ALL_PROFILES = [*PROFILES, "custom"]


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return shared_store(tmp_path_factory)


@pytest.fixture(scope="module")
def view(store: dict[str, Any]) -> Any:
    from ee.index.view import open_index
    from ee.workspace import Workspace

    return open_index(Workspace(store["root"]))


def context(store: dict[str, Any], *args: str) -> dict[str, Any]:
    res = run_cli("--workspace", str(store["root"]), "context", *args, "--json")
    assert res.code == 0, res.err
    data: dict[str, Any] = res.data
    return data


def items(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for section in data["sections"] for item in section["items"]]


def pieces_total(data: dict[str, Any]) -> int:
    """The budget recomputed from the Markdown pieces the pack is made of."""
    total = count_tokens(title_piece(data["task"]))
    for authoritative in (True, False):
        chosen = [
            (s["name"], i)
            for s in data["sections"]
            for i in s["items"]
            if i["authoritative"] is authoritative
        ]
        if chosen:
            total += count_tokens(block_piece(authoritative))
            total += sum(count_tokens(section_piece(name)) for name in dict.fromkeys(n for n, _ in chosen))
            total += sum(
                count_tokens(item_text(i["kind"], i["body"], i["id"], i["trust"], i["confidence"]))
                for _, i in chosen
            )
    return total


# ------------------------------------------------------------------------------------------ profiles


@pytest.mark.parametrize("profile", ALL_PROFILES)
def test_every_profile_fills_sections_within_budget_and_quotas(store: dict[str, Any], profile: str) -> None:
    extra = (
        ["--quota", "procedural=0.6", "--quota", "evidence=0.1"]
        if profile == "custom"
        else ["--profile", profile]
    )
    data = context(store, TASK, "--max-tokens", "2500", "--explain", *extra)
    chosen = items(data)
    assert chosen, data["counts"]
    settings_ = data["profile"]
    assert settings_["name"] == profile
    budget = data["budget"]
    assert budget["used_tokens"] <= budget["max_tokens"] == 2500
    assert pieces_total(data) == budget["used_tokens"]
    assert count_tokens(render(Pack.from_json(data), "markdown")) <= 2500
    assert [s["name"] for s in data["sections"]] == [
        n for n in SECTIONS if any(i["section"] == n for i in chosen)
    ]
    room = 2500 - budget["title_tokens"]
    for section in data["sections"]:
        assert section["tokens"] == sum(i["tokens"] for i in section["items"])
        first_pass = [i for i in section["items"] if i.get("selection", {}).get("pass", 1) == 1]
        assert sum(i["tokens"] for i in first_pass) <= settings_["shares"][section["name"]] * room + 1e-9
        for item in section["items"]:
            assert item["tokens"] <= settings_["max_item_tokens"]
            assert item["authoritative"] is (item["posture"] == "authoritative")
    advisory = sum(i["tokens"] for i in chosen if not i["authoritative"])
    assert advisory <= settings_["advisory_share"] * room + 1e-9
    ids = [i["id"] for i in chosen] + [o["id"] for o in data["omitted"]]
    assert len(ids) == len(set(ids)) == data["counts"]["candidates"]


def test_custom_quotas_come_from_config_then_quota_flags(ws: Any, cli: Any) -> None:
    for text, kind in (
        ("Run the linter before pushing.", "rule"),
        ("We chose Postgres for orders.", "decision"),
        ("The linter config lives in ruff.toml.", "fact"),
    ):
        assert cli("remember", text, "--kind", kind).code == 0
    (ws.root / ".ee" / "config.toml").write_text(
        '[pack.custom]\nbase = "compact"\ndecisions = 0.0\nmax_item_tokens = 60\n', encoding="utf-8"
    )
    data = cli("context", "linter postgres orders", "--profile", "custom", "--json").data
    assert data["profile"]["shares"]["decisions"] == 0.0
    assert data["profile"]["max_item_tokens"] == 60
    assert data["profile"]["spill"] is False  # from the compact base
    assert "decisions" not in [s["name"] for s in data["sections"]]
    assert {o["reason"] for o in data["omitted"] if o["section"] == "decisions"} <= {"quota"}
    overridden = cli("context", "linter postgres orders", "--quota", "decisions=0.5", "--json").data
    assert overridden["profile"]["shares"]["decisions"] == 0.5


def test_custom_profile_errors_say_what_to_fix(ws: Any, cli: Any) -> None:
    cli("remember", "Run the linter before pushing.", "--kind", "rule")
    bad = cli("context", "linter", "--quota", "procedual=0.5", "--json")
    assert bad.code == 2
    assert "procedual" in bad.json["error"]["message"]
    assert "procedural" in bad.json["error"]["repair"]
    (ws.root / ".ee" / "config.toml").write_text("[pack.custom]\nevidence = 3\n", encoding="utf-8")
    res = cli("context", "linter", "--profile", "custom", "--json")
    assert res.code == 3
    assert "evidence" in res.json["error"]["message"]
    assert cli("context", "linter", "--profile", "compact", "--quota", "evidence=0.2").code == 2


# ------------------------------------------------------------------------------------------ budget


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=50, max_value=20_000),
    profile=st.sampled_from(ALL_PROFILES),
    task=st.sampled_from([TASK, "deploy the api with kubectl", "ünïcödé 🚀 " * 20, "release tag changelog"]),
)
def test_budget_is_never_exceeded(view: Any, budget: int, profile: str, task: str) -> None:
    query = from_arguments(task, max_tokens=budget, profile=profile)
    data = pack_view(view, query, resolve_profile(profile))
    assert data["budget"]["used_tokens"] <= budget
    assert pieces_total(data) == data["budget"]["used_tokens"]
    markdown = render(Pack.from_json(data), "markdown")
    assert count_tokens(markdown) <= budget
    hook_out = render(Pack.from_json(data), "hook")
    assert bool(hook_out) == bool(items(data)), "the hook prints nothing exactly when the pack is empty"
    if hook_out:
        assert count_tokens(json.loads(hook_out)["hookSpecificOutput"]["additionalContext"]) <= budget
    counts = data["counts"]
    relevant = counts["candidates"] - counts["omitted_by_reason"].get("below_relevance_floor", 0)
    if budget >= 200 and relevant:
        assert items(data), "a few hundred tokens always hold the best relevant memory"


def test_small_budget_still_gets_the_best_memory_cut_short(store: dict[str, Any]) -> None:
    data = context(store, "Full ci runbook steps", "--max-tokens", "60", "--profile", "thorough")
    chosen = items(data)
    assert len(chosen) == 1
    assert chosen[0]["truncated"] is True
    assert chosen[0]["body"].endswith(" […]")
    assert data["budget"]["used_tokens"] <= 60


def test_a_budget_below_the_title_gives_an_empty_pack(store: dict[str, Any]) -> None:
    data = context(store, TASK, "--max-tokens", "3")
    assert data["budget"] == data["budget"] | {"used_tokens": 0, "title_tokens": 0}
    assert data["sections"] == []
    reasons = {"budget", "quarantined", "invalid_at_reference_time", "below_relevance_floor"}
    assert {o["reason"] for o in data["omitted"]} <= reasons
    assert all(o["tokens"] > 3 for o in data["omitted"])
    assert (
        run_cli(
            "--workspace", str(store["root"]), "context", TASK, "--max-tokens", "3", "--format", "markdown"
        ).out
        == "\n"
    )


def test_long_bodies_are_cut_to_the_item_cap(store: dict[str, Any]) -> None:
    data = context(store, "Full ci runbook steps", "--profile", "balanced")
    runbook = next(i for i in items(data) if i["title"].startswith("Full ci runbook"))
    assert runbook["truncated"]
    assert runbook["tokens"] <= 300
    assert runbook["body"].endswith(" […]")
    assert " Step 5:" in runbook["body"]


# -------------------------------------------------------------------------------------- omitted, authority


def test_quarantined_memory_never_lands_in_the_pack(store: dict[str, Any]) -> None:
    bad = store["quarantined"]
    task = "fix the CI cache with the curl repair script"
    for profile in ALL_PROFILES:
        args = (
            ["--quota", "advisory_share=1.0", "--min-relevance", "0"]
            if profile == "custom"
            else ["--profile", profile]
        )
        data = context(store, task, *args)
        assert bad not in [i["id"] for i in items(data)], profile
        if profile == "custom":
            assert {"id": bad, "reason": "quarantined"}.items() <= next(
                o for o in data["omitted"] if o["id"] == bad
            ).items()
    markdown = run_cli("--workspace", str(store["root"]), "context", task, "--format", "markdown").out
    assert "evil.example" not in markdown
    hits = run_cli("--workspace", str(store["root"]), "search", task, "--json").data["hits"]
    flagged = next(h for h in hits if h["id"] == bad)
    assert "quarantined" in flagged["flags"]
    assert flagged["posture"] == "advisory"


def test_authoritative_and_advisory_are_separate_blocks(store: dict[str, Any]) -> None:
    res = run_cli("--workspace", str(store["root"]), "context", TASK, "--format", "markdown")
    text = res.out
    assert "\n## Authoritative\n" in text
    assert "\n## Advisory (" in text
    authoritative, advisory = text.split("\n## Advisory (")
    data = context(store, TASK)
    for item in items(data):
        assert f"`{item['id']}`" in (authoritative if item["authoritative"] else advisory)


def test_memories_outside_their_validity_are_omitted(store: dict[str, Any], tmp_path: Path) -> None:
    task = "deploy to the api cluster with the legacy deploy.sh script"
    data = context(store, task)
    omitted = {o["id"]: o for o in data["omitted"]}
    assert omitted[store["expired"]]["reason"] == "invalid_at_reference_time"
    doc = {"version": "ee.query.v1", "query": {"text": task}, "temporalValidity": {"posture": "ignore"}}
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    res = run_cli("--workspace", str(store["root"]), "pack", "--query-file", str(path), "--json")
    ignored = res.data
    assert store["expired"] in [i["id"] for i in items(ignored)]


def test_near_duplicates_are_omitted_in_favour_of_the_chosen_one(store: dict[str, Any]) -> None:
    data = context(store, TASK, "--profile", "wide")
    chosen = {i["id"] for i in items(data)}
    duplicates = [o for o in data["omitted"] if o["reason"] == "duplicate"]
    assert duplicates
    assert all(o["duplicate_of"] in chosen for o in duplicates)


def test_explain_adds_the_selection_trace(store: dict[str, Any]) -> None:
    for profile, objective in (("balanced", "mmr"), ("submodular", "facility_location")):
        data = context(store, TASK, "--profile", profile, "--explain")
        for item in items(data):
            assert item["selection"]["objective"] == objective
            assert item["explanation"]["standing"]["posture"] == item["posture"]


# ------------------------------------------------------------------------------------------ hash


def test_pack_hash_is_stable_across_processes_formats_and_fields(store: dict[str, Any]) -> None:
    root = store["root"]
    runs = [run_ee_process("--workspace", str(root), "context", TASK, "--json", cwd=root) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    hashes = {json.loads(r.stdout)["data"]["pack_hash"] for r in runs}
    assert len(hashes) == 1
    assert context(store, TASK, "--fields", "minimal")["pack_hash"] in hashes
    footer = json.loads(
        run_cli("--workspace", str(root), "context", TASK, "--format", "jsonl").out.splitlines()[-1]
    )
    assert footer["pack_hash"] in hashes
    assert runs[0].stdout == runs[1].stdout  # byte-identical, not just the same hash
    assert context(store, TASK, "--profile", "wide")["pack_hash"] not in hashes


def test_pack_query_file_and_overrides(store: dict[str, Any], tmp_path: Path) -> None:
    doc = {
        "version": "ee.query.v1",
        "query": {"text": TASK},
        "budget": {"maxTokens": 700},
        "output": {"profile": "grounding", "fields": "summary"},
    }
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    base = ["--workspace", str(store["root"]), "pack", "--query-file", str(path), "--json"]
    data = run_cli(*base).data
    assert (data["profile"]["name"], data["budget"]["max_tokens"], data["fields"]) == (
        "grounding",
        700,
        "summary",
    )
    assert "body" not in items(data)[0]
    over = run_cli(*base, "--max-tokens", "300", "--profile", "wide").data
    assert (over["profile"]["name"], over["budget"]["max_tokens"]) == ("wide", 300)
    # `ee context --query-file` takes its own options over the document's too (it used to drop them).
    ctx = ["--workspace", str(store["root"]), "context", "--query-file", str(path), "--json"]
    assert run_cli(*ctx).data["query"]["mode"] == "hybrid"
    shaped = run_cli(*ctx, "--mode", "lexical", "--speed", "instant", "--max-tokens", "300").data
    assert (shaped["query"]["mode"], shaped["query"]["speed"]) == ("lexical", "instant")
    assert shaped["budget"]["max_tokens"] == 300
    assert run_cli("--workspace", str(store["root"]), "context", "--json").code == 2


def test_as_of_packs_the_store_as_it_was(store: dict[str, Any]) -> None:
    data = context(store, TASK, "--as-of", "HEAD")
    assert data["query"]["as_of"]["commit"]
    assert data["pack_hash"] == context(store, TASK)["pack_hash"]


# ------------------------------------------------------------------------------------------ selection units


def _cands(costs: list[int], rel: list[float], sections: list[str] | None = None) -> list[Candidate]:
    sections = sections or ["evidence"] * len(costs)
    return [
        Candidate(i, i, f"m{i:03d}", sections[i], True, f"memory number {i}", False, c, r)
        for i, (c, r) in enumerate(zip(costs, rel, strict=True))
    ]


def _budget(max_tokens: int, profile: Any) -> Budget:
    return Budget.plan(
        max_tokens,
        0,
        profile,
        {True: 0, False: 0},
        {(a, s): 0 for a in (True, False) for s in SECTIONS},
        None,
    )


def test_lazy_facility_location_picks_what_plain_greedy_picks() -> None:
    rng = np.random.default_rng(3)
    n = 40
    vectors = rng.normal(size=(n, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = (vectors @ vectors.T).astype(np.float32)
    rel = sorted(rng.uniform(0.1, 1.0, size=n).tolist(), reverse=True)
    costs = rng.integers(5, 40, size=n).tolist()
    profile = PROFILES["submodular"]
    import dataclasses

    profile = dataclasses.replace(profile, shares=dict.fromkeys(SECTIONS, 1.0))
    lazy = [c.index for c in select(_cands(costs, rel), sim, "embedding", profile, _budget(300, profile))]
    assert lazy == _plain_greedy(
        sim, np.asarray(rel), np.asarray(costs, dtype=float), 300, profile.cost_exponent
    )


def _plain_greedy(sim: np.ndarray, rel: np.ndarray, costs: np.ndarray, budget: int, r: float) -> list[int]:
    from ee.pack.select import DUPLICATE, FACILITY_RELEVANCE

    s = np.clip(sim.astype(np.float64), 0, 1)
    cover = np.zeros(len(rel))
    left, used, chosen = set(range(len(rel))), 0, []
    while left:
        gains = {
            j: (float(rel @ np.maximum(s[:, j] - cover, 0)) + FACILITY_RELEVANCE * rel[j]) / costs[j] ** r
            for j in left
        }
        j = max(sorted(gains), key=lambda k: gains[k])
        left.discard(j)
        if used + costs[j] > budget:
            continue
        used += int(costs[j])
        chosen.append(j)
        cover = np.maximum(cover, s[:, j])
        left -= {i for i in left if sim[i, j] >= DUPLICATE["embedding"]}
    return chosen


def test_mmr_trades_relevance_for_diversity() -> None:
    sim = np.array([[1, 0.9, 0.1], [0.9, 1, 0.1], [0.1, 0.1, 1]], dtype=np.float32)
    profile = PROFILES["wide"]  # λ 0.4
    picked = select(_cands([10, 10, 10], [1.0, 0.95, 0.6]), sim, "embedding", profile, _budget(20, profile))
    assert [c.index for c in picked] == [0, 2]
    focused = PROFILES["thorough"]  # λ 0.85
    picked = select(_cands([10, 10, 10], [1.0, 0.95, 0.6]), sim, "embedding", focused, _budget(20, focused))
    assert [c.index for c in picked] == [0, 1]


def test_token_jaccard_stands_in_without_vectors(view: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ee.pack.similarity import jaccard

    sim = jaccard(["run the linter", "run the linter now", "deploy"])
    assert sim[0, 0] == 1.0
    assert 0.5 < sim[0, 1] < 1.0
    assert sim[0, 2] == 0.0
    monkeypatch.setattr(view.gen, "vectors", None)
    data = pack_view(view, from_arguments(TASK, mode="lexical"), resolve_profile("balanced"))
    assert data["similarity"] == "token_jaccard"
    assert items(data)


def _mmr_one_by_one(state: Any, pass_no: int, quotas: bool) -> None:
    """MMR as first written: the values of every active candidate computed again after each step."""
    lam = state.profile.mmr_lambda
    while True:
        idx = np.flatnonzero(state.active)
        if idx.size == 0:
            return
        scores = lam * state.rel[idx] - (1.0 - lam) * np.maximum(state.max_sim[idx], 0.0)
        best = int(idx[int(np.argmax(scores))])
        reason = state.budget.refusal(state.cands[best], quotas)
        if reason:
            state.set_aside(best, reason)
            continue
        state.take(
            best,
            pass_no,
            {
                "objective": "mmr",
                "value": round(float(scores.max()), 6),
                "relevance": round(state.rel[best], 6),
                "max_similarity": round(float(max(state.max_sim[best], 0.0)), 6),
                "pass": pass_no,
            },
        )


@settings(max_examples=150, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=1, max_value=40),
    st.integers(min_value=50, max_value=3000),
    st.sampled_from(sorted(PROFILES)),
)
def test_mmr_takes_what_recomputing_every_step_takes(seed: int, n: int, max_tokens: int, name: str) -> None:
    """MMR recomputes its values only after a take (a candidate set aside changes none of them): the same
    picks, reasons, traces and duplicates as recomputing after every step, ties and spill included."""
    from ee.pack import select as select_module

    profile = PROFILES[name]
    if profile.diversity != "mmr":
        profile = PROFILES["balanced"]
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, 4)).astype(np.float32)
    vectors[rng.integers(0, n, size=n // 3)] = vectors[0]  # exact duplicates and tied values
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = np.clip(vectors @ vectors.T, -1.0, 1.0)
    np.fill_diagonal(sim, 1.0)
    relevance = np.round(np.sort(rng.uniform(0.2, 1.0, size=n))[::-1], 2)  # ties in relevance too

    def run(mmr: Any) -> list[tuple[Any, ...]]:
        cands = [
            Candidate(
                index=i,
                pos=i,
                memory_id=f"m{i}",
                section=SECTIONS[i % len(SECTIONS)],
                authoritative=bool(i % 3),
                body="b",
                truncated=False,
                cost=int(rng_costs[i]),
                relevance=float(relevance[i]),
            )
            for i in range(n)
        ]
        budget = Budget.plan(
            max_tokens,
            10,
            profile,
            {True: 3, False: 3},
            {(a, s): 2 for a in (True, False) for s in SECTIONS},
            None,
        )
        original = select_module._mmr
        select_module._mmr = mmr
        try:
            chosen = select_module.select(cands, sim, "embedding", profile, budget)
        finally:
            select_module._mmr = original
        return [(c.index, c.reason, c.duplicate_of, c.chosen_pass, c.trace) for c in chosen + cands]

    rng_costs = rng.integers(1, 400, size=n)
    assert run(select_module._mmr) == run(_mmr_one_by_one)


def test_explain_survives_every_fields_level_and_needs_a_format_that_shows_it(store: dict[str, Any]) -> None:
    # --explain asked for the trace: --fields minimal / summary used to cut it away without a word.
    for fields in ("minimal", "summary"):
        packed = items(context(store, TASK, "--fields", fields, "--explain"))
        assert packed, fields
        assert all("explanation" in i and "selection" in i for i in packed), fields
        assert "body" not in packed[0]
        hits = run_cli(
            "--workspace", str(store["root"]), "search", TASK, "--fields", fields, "--explain", "--json"
        )
        assert hits.data["hits"], fields
        assert all("explanation" in h for h in hits.data["hits"]), fields
    assert all("explanation" not in i for i in items(context(store, TASK, "--fields", "minimal")))
    # The text formats show it too (it used to vanish from all but human), except the two a pack's budget
    # counts: its Markdown and the hook's, where asking for it is a usage error.
    for command, fmt, shown in (
        ("context", "human", "selected:"),
        ("context", "compact", "selected:"),
        ("search", "compact", "score:"),
        ("search", "markdown", "*score:*"),
        ("search", "toon", "score:"),
    ):
        res = run_cli("--workspace", str(store["root"]), command, TASK, "--explain", "--format", fmt)
        assert res.code == 0, (command, fmt, res.err)
        assert shown in res.out, (command, fmt)
        plain = run_cli("--workspace", str(store["root"]), command, TASK, "--format", fmt)
        assert shown not in plain.out, (command, fmt)
    for command, fmt in (("context", "markdown"), ("context", "hook"), ("search", "hook")):
        res = run_cli("--workspace", str(store["root"]), command, TASK, "--explain", "--format", fmt)
        if fmt == "hook" and command == "context":  # (a hook never blocks its harness: nothing printed)
            assert (res.code, res.out) == (0, "")
            continue
        assert res.code == 2, (command, fmt, res.out)
        assert f"not shown in a {command}'s {fmt} output" in res.out + res.err
