"""The query engine through the CLI: every ee.query.v1 field has its effect, every mode works, and the
output is explained and deterministic. Real git, real files, the real shipped model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ee.query.engine import count_tokens
from tests.conftest import Result, run_cli

MEMORIES = [
    # (key, body, level, kind, tags, extra options)
    (
        "clippy",
        "Clippy warnings are errors in CI: pedantic and nursery lints are enabled for the rust crates.",
        "procedural",
        "rule",
        "ci,rust",
        [],
    ),
    (
        "release",
        "Release checklist: bump the version in pyproject.toml, tag vX.Y.Z and push the tag.",
        "procedural",
        "playbook-step",
        "release",
        [],
    ),
    (
        "flaky",
        "test_watch_rename is flaky on macOS because FSEvents coalesces renames;"
        " rerun once before debugging.",
        "episodic",
        "failure",
        "tests,flaky",
        [],
    ),
    (
        "rmrf",
        "Never run rm -rf on the build cache directory while the daemon runs: it corrupts the lock file.",
        "procedural",
        "anti-pattern",
        "cleanup,danger",
        [],
    ),
    (
        "postgres",
        "We chose PostgreSQL over MySQL for the metadata store because of transactional DDL.",
        "semantic",
        "decision",
        "db",
        [],
    ),
    (
        "snake",
        "Python identifiers use snake_case; classes use CamelCase like WorkspaceLock.",
        "semantic",
        "convention",
        "python,style",
        [],
    ),
    (
        "deploy",
        "Deployments go through the deploy_prod.sh script with --no-verify disabled.",
        "procedural",
        "command",
        "deploy",
        [],
    ),
    (
        "expired",
        "The staging cluster lives at staging-old.internal until the migration ends.",
        "semantic",
        "fact",
        "infra",
        ["--valid-to", "2020-01-01T00:00:00Z"],
    ),
    (
        "future",
        "From 2999 the API gateway requires mutual TLS for every client.",
        "semantic",
        "fact",
        "infra",
        ["--valid-from", "2999-01-01T00:00:00Z"],
    ),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A workspace with the memories above (module-scoped: built once)."""
    mp = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("qhome")
    for key, value in {
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Q",
        "GIT_AUTHOR_EMAIL": "q@example.com",
        "GIT_COMMITTER_NAME": "Q",
        "GIT_COMMITTER_EMAIL": "q@example.com",
        "EE_NO_SERVER": "1",
    }.items():
        mp.setenv(key, value)
    for var in ("EE_WORKSPACE", "EE_AGENT", "EE_MODEL"):
        mp.delenv(var, raising=False)
    root = tmp_path_factory.mktemp("qstore") / "ws"
    assert run_cli("init", str(root), "--json").code == 0
    ids: dict[str, str] = {}
    for key, body, level, kind, tags, extra in MEMORIES:
        res = run_cli(
            "-W",
            str(root),
            "remember",
            body,
            "--level",
            level,
            "--kind",
            kind,
            "--tags",
            tags,
            *extra,
            "--json",
        )
        assert res.code == 0, res.err
        ids[key] = res.data["id"]
    # links: release supports clippy; clippy related to snake
    assert (
        run_cli("-W", str(root), "memory", "link", ids["release"], ids["clippy"], "--type", "supports").code
        == 0
    )
    assert (
        run_cli("-W", str(root), "memory", "link", ids["clippy"], ids["snake"], "--type", "related").code == 0
    )
    # an agent memory (trust agent_assertion) and an unknown frontmatter key written by hand
    res = run_cli(
        "-W",
        str(root),
        "remember",
        "Agents should run make lint before pushing rust changes.",
        "--kind",
        "rule",
        "--tags",
        "ci",
        "--agent",
        "codex",
        "--json",
    )
    ids["agent"] = res.data["id"]
    hand = root / "memories" / "team-note.md"
    hand.write_text(
        "---\nkind: fact\nteam: infra\ntags: [infra]\n---\nThe infra team owns the terraform state bucket.\n"
    )
    yield {"root": root, "ids": ids}
    mp.undo()


def search(store: dict[str, Any], *args: str) -> Result:
    return run_cli("-W", str(store["root"]), "search", *args)


def doc_search(store: dict[str, Any], doc: dict[str, Any], *args: str) -> Result:
    return run_cli(
        "-W", str(store["root"]), "search", "--query-file", "-", "--json", *args, input=json.dumps(doc)
    )


# Tests of ranking, filters and paging over keyword bags ("rules lint rust python release") turn the
# relevance floor off: what such a bag is relevant to is tests/test_relevance.py's business, not theirs.
NO_FLOOR = ("--min-relevance", "0")


def hit_ids(res: Result) -> list[str]:
    assert res.code == 0, res.out + res.err
    return [h["id"] for h in res.data["hits"]]


def query(text: str, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"version": "ee.query.v1", "query": {"text": text}}
    doc.update(fields)
    return doc


# ------------------------------------------------------------------------------------------ modes


@pytest.mark.parametrize("mode", ["hybrid", "lexical", "semantic"])
def test_each_mode_finds_the_obvious_memory(store: dict[str, Any], mode: str) -> None:
    ids = hit_ids(search(store, "clippy lints in CI", "--mode", mode, "--json"))
    assert ids[0] == store["ids"]["clippy"]


def test_exact_mode_matches_the_literal_phrase_only(store: dict[str, Any]) -> None:
    ids = hit_ids(search(store, "rm -rf on the build cache", "--mode", "exact", "--json"))
    assert ids == [store["ids"]["rmrf"]]
    assert hit_ids(search(store, "rm -rf on the cache build", "--mode", "exact", "--json")) == []


def test_code_identifiers_are_findable_whole_and_by_parts(store: dict[str, Any]) -> None:
    assert (
        hit_ids(search(store, "deploy_prod.sh", "--mode", "lexical", "--json"))[0] == store["ids"]["deploy"]
    )
    assert hit_ids(search(store, "prod script", "--mode", "lexical", "--json"))[0] == store["ids"]["deploy"]
    assert store["ids"]["snake"] in hit_ids(search(store, "workspace lock", "--mode", "lexical", "--json"))


def test_paraphrase_with_no_shared_words_is_found_semantically(store: dict[str, Any]) -> None:
    ids = hit_ids(
        search(store, "which database engine did we pick", "--mode", "semantic", "--json", *NO_FLOOR)
    )
    assert store["ids"]["postgres"] in ids[:3]


def test_hits_are_explained(store: dict[str, Any]) -> None:
    res = search(store, "clippy lints", "--json", "--explain")
    hit = res.data["hits"][0]
    assert hit["components"]["lexical"]["rank"] == 1
    assert hit["components"]["lexical"]["score"] > 0
    assert set(hit["factors"]) == {"confidence", "freshness", "trust", "validity"}
    assert hit["provenance"]["commit"]
    assert hit["provenance"]["author"] == "Q"
    assert "lexical #1" in hit["why"]
    assert "clippy" in hit["explanation"]["matched_terms"]
    product = hit["components"]["fused"]
    for factor in hit["factors"].values():
        product *= factor["multiplier"]
    assert hit["score"] == pytest.approx(product, abs=1e-5)


def test_output_is_byte_identical_across_runs(store: dict[str, Any]) -> None:
    first = search(store, "rust lint rules", "--json").out
    second = search(store, "rust lint rules", "--json").out
    assert first == second


# ------------------------------------------------------------------------------------------ document fields


def test_tags_require_require_any_exclude(store: dict[str, Any]) -> None:
    ids = store["ids"]
    got = hit_ids(doc_search(store, query("lint rules", tags={"require": ["ci", "rust"]}), *NO_FLOOR))
    assert got == [ids["clippy"]]
    got = hit_ids(
        doc_search(store, query("rules lint release", tags={"requireAny": ["release", "rust"]}), *NO_FLOOR)
    )
    assert set(got) == {ids["clippy"], ids["release"]}
    got = hit_ids(doc_search(store, query("lint", tags={"exclude": ["rust"]}), *NO_FLOOR))
    assert ids["clippy"] not in got


@pytest.mark.parametrize(
    ("predicate", "expect_in", "expect_out"),
    [
        ({"kind": {"eq": "decision"}}, "postgres", "clippy"),
        ({"kind": {"neq": "decision"}}, "clippy", "postgres"),
        ({"kind": {"in": ["decision", "rule"]}}, "postgres", "flaky"),
        ({"kind": {"notIn": ["decision", "rule"]}}, "flaky", "postgres"),
        ({"confidence": {"gt": 0.6}}, "clippy", "agent"),
        ({"confidence": {"gte": 0.85}}, "clippy", "agent"),
        ({"confidence": {"lt": 0.6}}, "agent", "clippy"),
        ({"confidence": {"lte": 0.5}}, "agent", "clippy"),
        ({"valid_to": {"exists": True}}, "expired", "clippy"),
        ({"tags": {"startsWith": "fla"}}, "flaky", "clippy"),
        ({"tags": {"endsWith": "ger"}}, "rmrf", "clippy"),
        ({"tags": {"contains": "ust"}}, "clippy", "flaky"),
    ],
)
def test_every_filter_predicate(
    store: dict[str, Any], predicate: dict[str, Any], expect_in: str, expect_out: str
) -> None:
    doc = query(
        "rust lint rules ci database flaky test cleanup cache staging release",
        filters=predicate,
        temporalValidity={"posture": "ignore"},
    )
    doc["query"]["mode"] = "semantic"  # every memory is a candidate: the filter alone decides
    got = hit_ids(doc_search(store, doc, *NO_FLOOR))
    assert store["ids"][expect_in] in got
    assert store["ids"][expect_out] not in got


def test_filter_on_a_hand_written_unknown_key(store: dict[str, Any]) -> None:
    got = hit_ids(doc_search(store, query("terraform state", filters={"team": {"eq": "infra"}})))
    assert got == ["team-note"]


def test_filter_on_a_field_no_memory_has_is_reported(store: dict[str, Any]) -> None:
    res = doc_search(store, query("terraform", filters={"teem": {"eq": "infra"}}))
    assert res.data["hits"] == []
    assert any(d["code"] == "filter_unknown_field" for d in res.json["degraded"])


def test_time_after_and_before(store: dict[str, Any]) -> None:
    got = hit_ids(doc_search(store, query("clippy", time={"after": "2000-01-01T00:00:00Z"})))
    assert store["ids"]["clippy"] in got
    assert hit_ids(doc_search(store, query("clippy", time={"before": "2000-01-01T00:00:00Z"}))) == []


def test_temporal_validity_postures(store: dict[str, Any]) -> None:
    ids = store["ids"]
    strict = hit_ids(
        doc_search(store, query("staging cluster migration", temporalValidity={"posture": "strict"}))
    )
    assert ids["expired"] not in strict
    relaxed = doc_search(store, query("staging cluster migration", temporalValidity={"posture": "relaxed"}))
    hit = next(h for h in relaxed.data["hits"] if h["id"] == ids["expired"])
    assert "outside_validity" in hit["flags"]
    assert hit["factors"]["validity"]["multiplier"] == 0.5
    ignore = doc_search(store, query("staging cluster migration", temporalValidity={"posture": "ignore"}))
    hit = next(h for h in ignore.data["hits"] if h["id"] == ids["expired"])
    assert hit["factors"]["validity"]["multiplier"] == 1.0
    # referenceTime: in 2019 the staging memory was valid, the 2999 one not yet
    past = hit_ids(
        doc_search(
            store,
            query(
                "staging cluster API gateway",
                temporalValidity={"posture": "strict", "referenceTime": "2019-06-01T00:00:00Z"},
            ),
        )
    )
    assert ids["expired"] in past
    assert ids["future"] not in past


def test_trust_min_class_exclude_and_posture(store: dict[str, Any]) -> None:
    ids = store["ids"]
    got = hit_ids(doc_search(store, query("make lint rust", trust={"minClass": "human_explicit"})))
    assert ids["agent"] not in got
    assert ids["clippy"] in got
    got = hit_ids(doc_search(store, query("make lint rust", trust={"excludeClasses": ["human_explicit"]})))
    assert got == [ids["agent"]]
    got = hit_ids(doc_search(store, query("make lint rust", trust={"requirePosture": "advisory"})))
    assert got == [ids["agent"]]


def test_redaction_bypass_is_refused_unless_configured(store: dict[str, Any]) -> None:
    res = doc_search(store, query("clippy", redaction={"policy": "bypass"}))
    assert res.code == 6
    assert res.json["error"]["code"] == "policy_denied"


def test_graph_expansion_from_seeds(store: dict[str, Any]) -> None:
    ids = store["ids"]
    base = {"seedMemories": [ids["release"]], "maxHops": 1, "traversal": "outbound"}
    got = hit_ids(doc_search(store, query("anything at all", graph=base)))
    assert set(got) == {ids["release"], ids["clippy"]}
    two = hit_ids(doc_search(store, query("anything at all", graph=base | {"maxHops": 2})))
    assert set(two) == {ids["release"], ids["clippy"], ids["snake"]}
    inbound = hit_ids(doc_search(store, query("anything", graph=base | {"traversal": "inbound"})))
    assert set(inbound) == {ids["release"]}
    typed = hit_ids(
        doc_search(store, query("anything", graph=base | {"maxHops": 2, "linkTypes": ["supports"]}))
    )
    assert set(typed) == {ids["release"], ids["clippy"]}
    no_orphans = hit_ids(
        doc_search(store, query("rules lint python", graph={"includeOrphans": False}), *NO_FLOOR)
    )
    assert no_orphans
    assert set(no_orphans) <= {ids["release"], ids["clippy"], ids["snake"]}


def test_output_fields_trim_consistently(store: dict[str, Any]) -> None:
    minimal = doc_search(store, query("clippy", output={"fields": "minimal"})).data["hits"][0]
    assert set(minimal) == {"rank", "type", "id", "score", "title"}  # (type: memory or evidence, issue 34)
    summary = doc_search(store, query("clippy", output={"fields": "summary"})).data["hits"][0]
    assert "why" in summary
    assert "body" not in summary
    full = doc_search(store, query("clippy", output={"fields": "full"})).data["hits"][0]
    assert "memory" in full
    assert "body" in full


def test_budget_max_results_and_max_tokens(store: dict[str, Any]) -> None:
    assert len(doc_search(store, query("the", budget={"maxResults": 2})).data["hits"]) <= 2
    res = doc_search(store, query("rules lint rust python release", budget={"maxTokens": 40}))
    from ee.query.engine import count_tokens

    assert sum(count_tokens(h["body"]) for h in res.data["hits"]) <= 40


def test_speed_instant_runs_lexically(store: dict[str, Any]) -> None:
    res = doc_search(store, query("clippy", speed="instant"))
    assert res.data["query"]["effective_mode"] == "lexical"
    assert all(h["components"]["semantic"] is None for h in res.data["hits"])


def test_pagination_cursor_is_bound_to_the_query(store: dict[str, Any]) -> None:
    doc = query("rules lint rust python release database", pagination={"limit": 2})
    first = doc_search(store, doc, *NO_FLOOR).data
    assert first["returned"] == 2
    assert first["next_cursor"]
    doc2 = json.loads(json.dumps(doc))
    doc2["pagination"]["cursor"] = first["next_cursor"]
    second = doc_search(store, doc2, *NO_FLOOR).data
    assert second["offset"] == 2
    assert not {h["id"] for h in first["hits"]} & {h["id"] for h in second["hits"]}
    other = query("something else entirely", pagination={"limit": 2, "cursor": first["next_cursor"]})
    res = doc_search(store, other)
    assert res.code == 2
    assert "different query" in res.json["error"]["message"]


def test_a_result_cut_by_the_token_budget_says_so_and_continues(store: dict[str, Any]) -> None:
    text = "rules lint rust python release database"
    everything = doc_search(store, query(text), *NO_FLOOR).data
    assert everything["truncated"] is False
    assert everything["truncated_reason"] is None
    assert everything["next_cursor"] is None
    total = everything["returned"]
    assert total > 3
    first_cost = count_tokens(everything["hits"][0]["body"])
    doc = query(text, budget={"maxTokens": first_cost + 1})
    cut = doc_search(store, doc, *NO_FLOOR).data
    assert cut["returned"] == 1
    assert cut["truncated"] is True
    assert cut["truncated_reason"] == "budget.maxTokens"
    assert cut["next_cursor"]
    doc["pagination"] = {"cursor": cut["next_cursor"]}
    rest = doc_search(store, doc, *NO_FLOOR).data
    assert rest["offset"] == 1
    assert rest["hits"][0]["id"] == everything["hits"][1]["id"]  # it continues where the cut was
    human = run_cli("-W", str(store["root"]), "search", text, "--limit", "2", "--human", *NO_FLOOR).out
    assert f"… {total - 2} more: cut by budget.maxResults (raise --limit" in human


def test_a_page_cut_by_its_limit_says_so(store: dict[str, Any]) -> None:
    text = "rules lint rust python release database"
    data = doc_search(store, query(text, pagination={"limit": 2}), *NO_FLOOR).data
    assert (data["truncated"], data["truncated_reason"]) == (True, "pagination.limit")
    data = doc_search(store, query(text, budget={"maxResults": 2}), *NO_FLOOR).data
    assert (data["truncated"], data["truncated_reason"]) == (True, "budget.maxResults")


def test_eval_block_is_echoed_and_scored(store: dict[str, Any]) -> None:
    ids = store["ids"]
    res = doc_search(
        store,
        query(
            "clippy lints",
            eval={
                "scenarioId": "s1",
                "labels": ["ci"],
                "expectedMemoryIds": [ids["clippy"], ids["postgres"]],
            },
        ),
    )
    ev = res.data["eval"]
    assert ev["scenarioId"] == "s1"
    assert ev["labels"] == ["ci"]
    assert ev["ranks"][ids["clippy"]] == 1
    assert ev["mrr"] == 1.0


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("doc", "pointer"),
    [
        ({"query": {"text": "x"}}, "/"),
        ({"version": "ee.query.v2", "query": {"text": "x"}}, "/version"),
        ({"version": "ee.query.v1", "query": {"text": "x", "mode": "fuzzy"}}, "/query/mode"),
        ({"version": "ee.query.v1", "query": {"text": "x"}, "budget": {"maxTokens": 0}}, "/budget/maxTokens"),
        (
            {"version": "ee.query.v1", "query": {"text": "x"}, "filters": {"kind": {"like": "x"}}},
            "/filters/kind",
        ),
        ({"version": "ee.query.v1", "query": {"text": "x"}, "time": {"after": "yesterday"}}, "/time/after"),
        ({"version": "ee.query.v1", "query": {"text": "x"}, "bogus": 1}, "/"),
        ({"version": "ee.query.v1", "query": {"text": "x"}, "graph": {"maxHops": 9}}, "/graph/maxHops"),
    ],
)
def test_schema_violations_name_the_pointer(store: dict[str, Any], doc: dict[str, Any], pointer: str) -> None:
    res = doc_search(store, doc)
    assert res.code == 2
    assert res.json["error"]["details"]["pointer"] == pointer
    assert res.json["error"]["repair"]


def test_not_json_and_missing_file(store: dict[str, Any], tmp_path: Path) -> None:
    res = run_cli("-W", str(store["root"]), "search", "--query-file", "-", "--json", input="{not json")
    assert res.code == 2
    assert "not JSON" in res.json["error"]["message"]
    res = run_cli("-W", str(store["root"]), "search", "--query-file", str(tmp_path / "nope.json"), "--json")
    assert res.code == 7


def test_batch_runs_every_line_in_one_process(store: dict[str, Any], tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text("clippy lints\n" + json.dumps(query("postgres decision")) + "\n{broken\n")
    res = run_cli("-W", str(store["root"]), "search", "--batch", str(batch))
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert len(lines) == 3
    assert lines[0]["data"]["hits"][0]["id"] == store["ids"]["clippy"]
    assert lines[1]["data"]["hits"][0]["id"] == store["ids"]["postgres"]
    assert lines[2]["success"] is False
    assert lines[2]["error"]["line"] == 3
    assert res.code == 2


def test_options_apply_to_every_batch_line_and_override_a_document(
    store: dict[str, Any], tmp_path: Path
) -> None:
    # An option that exists works with --batch and --query-file too: it shapes a text line and overrides
    # what a document says, as on `ee pack` (it used to be dropped without a word).
    batch = tmp_path / "q.jsonl"
    many = "rules lint rust python release database"
    batch.write_text(many + "\n" + json.dumps(query(many, budget={"maxResults": 50})) + "\n")
    res = run_cli(
        "-W",
        str(store["root"]),
        "search",
        "--batch",
        str(batch),
        "--limit",
        "1",
        "--mode",
        "lexical",
        *NO_FLOOR,
    )
    lines = [json.loads(line) for line in res.out.splitlines()]
    assert res.code == 0, res.out
    assert [line["data"]["returned"] for line in lines] == [1, 1]
    assert all(line["data"]["total"] > 1 for line in lines)
    assert all(h["components"]["semantic"] is None for line in lines for h in line["data"]["hits"])
    unshaped = run_cli("-W", str(store["root"]), "search", "--batch", str(batch), *NO_FLOOR)
    returned = [json.loads(line)["data"]["returned"] for line in unshaped.out.splitlines()]
    assert all(n > 1 for n in returned)

    res = doc_search(store, query(many, budget={"maxResults": 50}), "--limit", "2", "--tag", "ci", *NO_FLOOR)
    assert res.data["returned"] == 2
    assert all("ci" in h["tags"] for h in res.data["hits"])


def test_batch_is_one_of_three_ways_to_ask(store: dict[str, Any], tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text("clippy lints\n")
    both = search(store, "clippy", "--batch", str(batch), "--json")
    assert both.code == 2
    assert "one of TEXT, --query-file and --batch" in both.json["error"]["message"]
    human = search(store, "--batch", str(batch), "--format", "human")
    assert human.code == 2
    assert "--format human does not apply" in human.err + human.out


def test_response_validates_against_the_envelope_schema(store: dict[str, Any]) -> None:
    from ee.schemas import list_schemas, validator

    assert "ee.response.v1" in list_schemas()
    res = search(store, "clippy", "--json")
    errors = list(validator("ee.response.v1").iter_errors(res.json))
    assert errors == []


# ------------------------------------------------------------------------------------------ kept standing


def _fresh_search(view: Any, doc: dict[str, Any]) -> dict[str, Any]:
    """``run_search`` with nothing kept from an earlier query (the generation memo emptied first)."""
    from ee.query import engine
    from ee.query.document import parse_document

    engine._GENERATION_MEMO.clear()
    return engine.run_search(view, parse_document(json.dumps(doc)), min_relevance=0)


def test_standing_kept_between_queries_equals_standing_computed_afresh(store: dict[str, Any]) -> None:
    """A long-lived process (``ee watch``'s server) keeps each memory's standing for its generation,
    state and day: validity still follows each query's reference time, and a view with other feedback
    events (a new state over the same generation) gets standings computed from those events."""
    from dataclasses import replace
    from datetime import timedelta

    from ee.index.view import open_index
    from ee.query.document import parse_document
    from ee.query.engine import run_search
    from ee.store.ids import format_time, utcnow
    from ee.workspace import Workspace

    ids = store["ids"]
    view = open_index(Workspace(store["root"]))
    text = "staging cluster API gateway migration"
    docs = [
        query(text, temporalValidity={"posture": posture, **({"referenceTime": ref} if ref else {})})
        for ref in ("2019-06-01T00:00:00Z", None, "3000-01-01T00:00:00Z", "2019-06-01T00:00:00Z")
        for posture in ("relaxed", "strict")
    ]
    kept = [run_search(view, parse_document(json.dumps(doc)), min_relevance=0) for doc in docs]
    assert [run_search(view, parse_document(json.dumps(doc)), min_relevance=0) for doc in docs] == kept
    assert [_fresh_search(view, doc) for doc in docs] == kept
    by_id = {h["id"]: h for h in kept[0]["hits"]}
    assert by_id[ids["expired"]]["factors"]["validity"]["value"] == "valid"  # in 2019
    assert ids["expired"] not in {h["id"] for h in kept[3]["hits"]}  # strict, today: expired
    assert {h["id"]: h for h in kept[4]["hits"]}[ids["future"]]["factors"]["validity"]["value"] == "valid"

    run_search(
        view, parse_document(json.dumps(docs[0])), min_relevance=0
    )  # standings kept for the first state
    yesterday = format_time(utcnow() - timedelta(days=1))
    event = {
        "id": "evt_kept",
        "memory": ids["expired"],
        "signal": "harmful",
        "at": yesterday,
        "source": "agent:test",
        "reason": "moved",
    }
    events = {**view.state.get("events", {}), ids["expired"]: [event]}
    other = replace(view, state={**view.state, "events": events})
    after = run_search(other, parse_document(json.dumps(docs[0])), min_relevance=0)
    assert after == _fresh_search(other, docs[0])
    before_conf = by_id[ids["expired"]]["factors"]["confidence"]["value"]
    after_conf = {h["id"]: h for h in after["hits"]}[ids["expired"]]["factors"]["confidence"]["value"]
    assert after_conf < before_conf


def test_rank_of_a_candidate_outside_an_arms_pool_counts_every_higher_score() -> None:
    """The rank hybrid search reports for a candidate the other arm's pool left out is 1 + the number of
    memories scoring strictly higher (ties share a rank), float32 and float64 scores, NaN or not."""
    import numpy as np

    from ee.query.engine import _ranks_of

    rng = np.random.default_rng(7)
    for dtype in (np.float32, np.float64):
        scores = np.round(rng.standard_normal(500), 1).astype(dtype)  # many ties
        positions = [0, 3, 3, 17, 250, 499]
        expected = {p: (float(scores[p]), int(np.count_nonzero(scores > scores[p])) + 1) for p in positions}
        assert _ranks_of(scores, positions) == expected
        scores[10] = np.nan
        expected = {p: (float(scores[p]), int(np.count_nonzero(scores > scores[p])) + 1) for p in positions}
        assert _ranks_of(scores, positions) == expected
    assert _ranks_of(scores, []) == {}


def test_an_invalid_standing_is_the_valid_one_with_its_reason() -> None:
    from ee.policy.feedback import FeedbackState
    from ee.query.standing import Standing

    valid = Standing(
        "agent_assertion",
        "advisory",
        True,
        0.5,
        0.42,
        FeedbackState(0.42, 0.5, harmful=1),
        0.75,
        True,
        "valid",
        "2026-01-01T00:00:00Z",
    )
    expired = valid.invalid("expired at 2026-02-01T00:00:00Z")
    assert (expired.valid, expired.validity_reason) == (False, "expired at 2026-02-01T00:00:00Z")
    assert expired.to_dict() | {"valid": True, "validity": "valid"} == valid.to_dict()
    assert expired.multipliers()["validity"] == 0.5
    assert valid.invalid("superseded by mem_b").multipliers()["validity"] == 0.25
