"""Hostile and broken input (tests/reliability/corpus.py): each case a clear error naming where, or a
reported, skipped file; never damage (the store's files, HEAD and `git status` unchanged), and the other
memories still load. Plus property tests of the ee.query.v1 parser.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ee.errors import QueryError
from ee.query.document import MAX_QUERY_CHARS, parse_document, validate
from ee.values import TRUST_CLASSES

from .corpus import CLI_CASES, FILE_CASES, IMPORT_CASES, QUERY_CASES, CliCase, FileCase, ImportCase, QueryCase
from .corpus import total_cases as corpus_size
from .harness import doctor_report, head_memories, new_workspace, run_inprocess, store_state, time_limit


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "ws"
    new_workspace(root, shared=0)
    run_inprocess(root, "remember", "good memory about deploys: run the canary first", "--tags", "deploy")
    run_inprocess(root, "remember", "second good memory: deploys need a changelog entry")
    return root


@pytest.fixture
def root(base: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ws"
    shutil.copytree(base, copy, symlinks=True)
    return copy


def test_the_corpus_is_big_enough() -> None:
    print(
        f"\nhostile corpus: {len(FILE_CASES)} files, {len(CLI_CASES)} arguments, {len(IMPORT_CASES)} import "
        f"lines, {len(QUERY_CASES)} query documents = {corpus_size()} cases"
    )
    assert corpus_size() >= 40
    assert len({c.name for c in FILE_CASES + CLI_CASES + IMPORT_CASES + QUERY_CASES}) >= 40  # type: ignore[operator]


def _good_ids(root: Path) -> set[str]:
    return set(head_memories(root))


def _remember_still_works(root: Path) -> None:
    ran = run_inprocess(root, "remember", "written after the hostile input", "--json")
    assert ran.code == 0, ran.err
    from .harness import git

    changed = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert changed == [ran.json["data"]["path"]]  # the commit touches nothing else


@pytest.mark.parametrize("case", FILE_CASES, ids=[c.name for c in FILE_CASES])
def test_hostile_file_is_reported_and_skipped(root: Path, case: FileCase) -> None:
    good = _good_ids(root)
    case.make(root / case.rel)
    before = store_state(root)
    with time_limit(60):
        listed = run_inprocess(root, "memory", "list", "--json")
        doctor = run_inprocess(root, "doctor", "--json")
        found = run_inprocess(root, "search", "deploys", "--mode", "lexical", "--json")
    assert store_state(root) == before  # reading never changes anything
    assert listed.code == 0, listed.err
    assert good <= {m["id"] for m in listed.json["data"]["memories"]}
    assert found.code == 0, found.err
    assert good <= {h["id"] for h in found.json["data"]["hits"]}
    outputs = listed.out + doctor.out + found.out
    assert "content from outside the store" not in outputs
    assert "root:x:0:0" not in outputs
    if case.skipped_silently:
        assert not [m for m in listed.json["data"]["memories"] if m["path"].startswith(case.rel)]
    else:
        where = f"{case.shown}:{case.line}" if case.line else case.shown
        messages = [d["message"] for d in listed.json["degraded"]]
        assert [m for m in messages if where in m and case.message in m], messages
        assert doctor.code == 4, doctor.err  # an error found: exit 4
        report = doctor_report(doctor.out)
        problems = report["problems"]
        assert [
            p
            for p in problems
            if case.shown in p["path"]
            and case.message in p["message"]
            and (case.line is None or p["line"] == case.line)
            and p["repair"]
        ], problems
        assert not report["healthy"]
        index_messages = [d["message"] for d in found.json["degraded"]]
        assert [m for m in index_messages if case.shown in m] or not case.index_reports, index_messages
    _remember_still_works(root)


def test_search_serves_one_memory_per_id(root: Path) -> None:
    (root / "memories/dup-a.md").write_text("---\nid: shared-one\n---\nthe first file with this id\n")
    (root / "memories/dup-b.md").write_text("---\nid: shared-one\n---\nthe second file with this id\n")
    found = run_inprocess(root, "search", "file with this id", "--mode", "lexical", "--json")
    ids = [h["id"] for h in found.json["data"]["hits"]]
    assert ids.count("shared-one") == 1, found.json["data"]["hits"]
    assert [d for d in found.json["degraded"] if "dup-b.md" in d["message"]]
    # The first file goes away: the second one, skipped until now, is the memory.
    (root / "memories/dup-a.md").unlink()
    found = run_inprocess(root, "search", "file with this id", "--mode", "lexical", "--json")
    hits = [h for h in found.json["data"]["hits"] if h["id"] == "shared-one"]
    assert [h["path"] for h in hits] == ["memories/dup-b.md"]
    assert not [d for d in found.json["degraded"] if "dup-b.md" in d["message"]]


def _args(case_args: tuple[str, ...], root: Path) -> list[str]:
    memory_id = sorted(head_memories(root))[0]
    return [a.replace("{id}", memory_id) for a in case_args]


@pytest.mark.parametrize("case", CLI_CASES, ids=[c.name for c in CLI_CASES])
def test_hostile_argument_is_a_clear_error(root: Path, case: CliCase) -> None:
    before = store_state(root)
    with time_limit(60):
        ran = run_inprocess(root, *_args(case.args, root), "--json", input=case.input)
    assert ran.code == case.exit, (ran.code, ran.out[-500:], ran.err[-2000:])
    error = ran.json["error"]
    assert case.message in error["message"], error
    assert error["repair"]
    assert "repair:" in ran.err
    assert "Traceback" not in ran.err
    assert store_state(root) == before
    assert not Path("/tmp/ee-pwned").exists()


@pytest.mark.parametrize("case", IMPORT_CASES, ids=[c.name for c in IMPORT_CASES])
def test_hostile_import_line_imports_nothing(root: Path, tmp_path: Path, case: ImportCase) -> None:
    memory_id = sorted(head_memories(root))[0]
    source = tmp_path / "in.jsonl"
    good = json.dumps({"body": "a perfectly good imported memory"})
    source.write_text(good + "\n" + case.bad.replace("{id}", memory_id) + "\n", encoding="utf-8")
    before = store_state(root)
    with time_limit(60):
        ran = run_inprocess(root, "import", "jsonl", str(source), "--json")
    assert ran.code == case.exit, (ran.out[-500:], ran.err[-1500:])
    error = ran.json["error"]
    assert "in.jsonl:2:" in error["message"], error
    assert case.message in error["message"], error
    assert "nothing was imported" in error["message"]
    assert store_state(root) == before
    assert not list(root.parent.glob("escape*"))
    assert not list(root.glob("escape*"))


def _write_doc(case: QueryCase, tmp_path: Path) -> Path:
    path = tmp_path / "query.json"
    if isinstance(case.doc, bytes):
        path.write_bytes(case.doc)
    elif isinstance(case.doc, str):
        path.write_text(case.doc, encoding="utf-8")
    else:
        path.write_text(json.dumps(case.doc), encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["search", "context"])
@pytest.mark.parametrize("case", QUERY_CASES, ids=[c.name for c in QUERY_CASES])
def test_hostile_query_document_is_refused_naming_the_field(
    root: Path, tmp_path: Path, case: QueryCase, command: str
) -> None:
    if command == "context" and case.name == "pagination-forged-cursor":
        pytest.skip("a pack has no pages: context does not read the cursor")
    path = _write_doc(case, tmp_path)
    before = store_state(root)
    with time_limit(60):
        ran = run_inprocess(root, command, "--query-file", str(path), "--json")
    assert ran.code == case.exit, (ran.out[-800:], ran.err[-1500:])
    error = ran.json["error"]
    assert error["repair"]
    assert "Traceback" not in ran.err
    if case.pointer is not None:
        pointer = error["details"].get("pointer") or error["message"]
        assert pointer.startswith(case.pointer), error
        assert case.pointer in error["message"]
    assert store_state(root) == before


@pytest.mark.parametrize("command", ["search", "context"])
def test_a_huge_query_text_is_shortened_and_said(root: Path, tmp_path: Path, command: str) -> None:
    """A query text above 8,192 characters is shortened to its most informative part, never refused, and
    ``degraded`` says so (issue 36: one rule for every way a text comes in)."""
    path = tmp_path / "query.json"
    text = "deploy " * 2000
    path.write_text(json.dumps({"version": "ee.query.v1", "query": {"text": text}}), encoding="utf-8")
    before = store_state(root)
    with time_limit(60):
        ran = run_inprocess(root, command, "--query-file", str(path), "--json")
    assert ran.code == 0, (ran.out[-800:], ran.err[-1500:])
    assert "Traceback" not in ran.err
    data = ran.json["data"]
    kept = data["query"]["text"] if command == "search" else data["task"]
    assert 0 < len(kept) <= MAX_QUERY_CHARS
    assert kept.startswith("deploy deploy")
    (note,) = [d for d in ran.json["degraded"] if d["code"] == "task_shortened"]
    assert note["message"].startswith(f"the text is {len(text):,} characters, more than 8,192")
    assert store_state(root) == before


# ---------------------------------------------------------------------------------------------- properties

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40).filter(
    str.strip
)
_WORDS = st.lists(st.text("abcdefghij-_", min_size=1, max_size=8), max_size=4)
_TIME = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
)
_TRUST = st.sampled_from(TRUST_CLASSES)
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=10),
)
_PREDICATE = st.fixed_dictionaries(
    {},
    optional={
        "eq": _SCALAR,
        "neq": _SCALAR,
        "in": st.lists(_SCALAR, max_size=3),
        "notIn": st.lists(_SCALAR, max_size=3),
        "gt": st.integers(0, 10),
        "gte": st.floats(0, 1),
        "lt": st.integers(0, 10),
        "lte": st.floats(0, 1),
        "exists": st.booleans(),
        "startsWith": st.text(max_size=5),
        "endsWith": st.text(max_size=5),
        "contains": st.text(max_size=5),
    },
).filter(bool)
_SECTIONS: dict[str, Any] = {
    "workspace": st.text(min_size=1, max_size=20),
    "tags": st.fixed_dictionaries({}, optional={"require": _WORDS, "requireAny": _WORDS, "exclude": _WORDS}),
    "filters": st.dictionaries(
        st.sampled_from(["kind", "level", "confidence", "tags", "x-custom"]), _PREDICATE, max_size=3
    ),
    "time": st.fixed_dictionaries({}, optional={"after": _TIME, "before": _TIME}),
    "asOf": st.one_of(_TIME, st.sampled_from(["HEAD", "HEAD~3", "v1.0", "main"])),
    "temporalValidity": st.fixed_dictionaries(
        {}, optional={"posture": st.sampled_from(["strict", "relaxed", "ignore"]), "referenceTime": _TIME}
    ),
    "trust": st.fixed_dictionaries(
        {},
        optional={
            "minClass": _TRUST,
            "excludeClasses": st.lists(_TRUST, max_size=3),
            "requirePosture": st.sampled_from(["authoritative", "advisory", "legacy_evidence"]),
        },
    ),
    "redaction": st.fixed_dictionaries(
        {}, optional={"policy": st.sampled_from(["respect", "bypass"]), "allowCategories": _WORDS}
    ),
    "graph": st.fixed_dictionaries(
        {},
        optional={
            "seedMemories": _WORDS,
            "traversal": st.sampled_from(["outbound", "inbound", "bidirectional"]),
            "maxHops": st.integers(0, 8),
            "includeOrphans": st.booleans(),
            "linkTypes": st.lists(st.sampled_from(["supports", "contradicts", "related"]), max_size=2),
        },
    ),
    "output": st.fixed_dictionaries(
        {},
        optional={
            "profile": st.sampled_from(["compact", "balanced", "wide", "custom"]),
            "format": st.sampled_from(["human", "json", "jsonl", "compact", "hook", "markdown", "toon"]),
            "fields": st.sampled_from(["minimal", "summary", "standard", "full"]),
            "explain": st.booleans(),
        },
    ),
    "budget": st.fixed_dictionaries(
        {},
        optional={
            "maxTokens": st.integers(1, 2**32 - 1),
            "maxResults": st.integers(1, 1000),
            "candidatePool": st.integers(1, 5000),
        },
    ),
    "speed": st.sampled_from(["instant", "default", "quality"]),
    "pagination": st.fixed_dictionaries({}, optional={"limit": st.integers(1, 200)}),
    "eval": st.fixed_dictionaries(
        {}, optional={"scenarioId": st.text(max_size=10), "labels": _WORDS, "expectedMemoryIds": _WORDS}
    ),
}
VALID_DOCS = st.fixed_dictionaries(
    {
        "version": st.just("ee.query.v1"),
        "query": st.fixed_dictionaries(
            {"text": _TEXT}, optional={"mode": st.sampled_from(["hybrid", "lexical", "semantic", "exact"])}
        ),
    },
    optional=_SECTIONS,
)
# (pointer of a field, a value of the wrong type or outside its enum/range)
_WRONG = {
    "/query/mode": "psychic",
    "/query/text": 7,
    "/speed": "warp",
    "/budget/maxTokens": 0,
    "/pagination/limit": 201,
    "/graph/maxHops": -1,
    "/output/format": "xml",
    "/trust/minClass": "root",
    "/redaction/policy": "all",
    "/temporalValidity/posture": "lax",
    "/time/after": "2026-13-45T00:00:00Z",
    "/tags/require": "ci",
    "/eval/labels": {"a": 1},
    "/version": "ee.query.v2",
    "/workspace": "",
}
_OBJECTS = [
    "",
    "/query",
    "/tags",
    "/time",
    "/temporalValidity",
    "/trust",
    "/redaction",
    "/graph",
    "/output",
    "/budget",
    "/pagination",
    "/eval",
]


def _set(doc: dict[str, Any], pointer: str, value: Any) -> None:
    parts = pointer.strip("/").split("/")
    node = doc
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALID_DOCS)
def test_valid_documents_are_accepted_and_round_trip(doc: dict[str, Any]) -> None:
    query = validate(json.loads(json.dumps(doc)))
    assert query.doc == doc
    again = parse_document(json.dumps(query.doc))
    assert again.doc == doc
    assert again.binding() == query.binding()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALID_DOCS, st.sampled_from(sorted(_WRONG)), st.sampled_from(_OBJECTS), st.booleans())
def test_mutated_documents_are_refused_with_a_json_pointer(
    doc: dict[str, Any], field: str, obj: str, add_unknown: bool
) -> None:
    bad = json.loads(json.dumps(doc))
    if add_unknown:
        target = bad
        for part in obj.strip("/").split("/") if obj else []:
            target = target.setdefault(part, {})
        target["zzUnknown"] = 1
        expected = obj or "/"
    else:
        _set(bad, field, _WRONG[field])
        expected = field
    with pytest.raises(QueryError) as caught:
        parse_document(json.dumps(bad))
    assert caught.value.details["pointer"] == expected, caught.value.message
    assert expected in caught.value.message


# ------------------------------------------------------------------ commit subjects quote a memory's title

HOSTILE_TITLE = "Deploy \x1b[2J\x1b]0;owned\x07 \u202eevil\u202c \u2066x\u2069 bell\x07 del\x7f back\x08 end"


def _commit_message(root: Path) -> str:
    import subprocess

    return subprocess.run(
        ["git", "log", "-1", "--format=%B"], cwd=root, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    "title",
    [HOSTILE_TITLE, "word " * 2000 + "\x1b[31m", "A\u2028B\x1cC\x85D next"],
    ids=["controls", "10kB", "breaks"],
)
def test_a_title_reaches_no_commit_message_raw(root: Path, title: str) -> None:
    """A memory's title becomes the subject of the commit that writes it (``ee remember``): ``git log`` in a
    terminal must show its escapes and bidirectional overrides, not obey them, and the subject stays one line
    of at most 72 characters (a 10 kB title included)."""
    result = run_inprocess(root, "remember", title, "--json")
    assert result.code == 0, result.out
    message = _commit_message(root)
    subject, _, rest = message.partition("\n")
    assert len(subject) <= 72, subject
    assert rest.startswith("\n")  # the trailers are still their own paragraph
    assert "Ee-Op: remember" in rest
    controls = [c for c in subject if not c.isprintable() and c != "\t"]
    assert controls == [], subject
    if title is HOSTILE_TITLE:
        assert "\\x1b[2J" in subject, subject
        assert "\\u202e" in subject, subject


def test_a_trailer_value_stays_on_its_line() -> None:
    from ee.git.repo import format_message, parse_trailers

    message = format_message("ee: a note", {"Ee-Op": "remember\nEe-Actor: human", "Ee-Actor": "agent:bot"})
    assert parse_trailers(message) == {"Ee-Op": "remember\\nEe-Actor: human", "Ee-Actor": "agent:bot"}
