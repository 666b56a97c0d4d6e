"""The published ee.query.v1 schema (what `ee schema export ee.query.v1` prints) accepts every query
document ee accepts: each example document of the docs, the README, the eval scenarios and the tests,
and asOf as an RFC 3339 time or a commit-ish. It stays a superset of the seed's schema."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from ee.errors import QueryError
from ee.query.document import parse_document
from ee.schemas import is_rfc3339
from tests.conftest import REPO_ROOT, run_cli

SEED_SCHEMA = Path("/work/shared/schemas/ee.query.v1.json")
AS_OF_VALUES = [
    "2026-12-01T09:00:00Z",
    "2026-12-01T09:00:00.5+02:00",
    "HEAD~3",
    "HEAD",
    "v1.2",
    "1418a9c0",
    "main@{yesterday}",
    "origin/main~2^2",
]


def published() -> dict[str, Any]:
    res = run_cli("schema", "export", "ee.query.v1")
    assert res.code == 0, res.err
    schema: dict[str, Any] = json.loads(res.out)
    return schema


def client_validator(schema: dict[str, Any]) -> Any:
    """How a strict client validates: the schema's draft, formats checked (date-time as RFC 3339)."""
    checker = jsonschema.FormatChecker()
    checker.checks("date-time")(is_rfc3339)
    return jsonschema.validators.validator_for(schema)(schema, format_checker=checker)


def _markdown_documents() -> Iterator[tuple[str, Any]]:
    files = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for number, block in enumerate(re.findall(r"```json\n(.*?)```", text, re.DOTALL)):
            if '"ee.query.v1"' in block:
                yield f"{path.relative_to(REPO_ROOT)} block {number}", json.loads(block)


def _scenario_documents() -> Iterator[tuple[str, Any]]:
    for path in sorted((REPO_ROOT / "tests" / "fixtures" / "eval").glob("*.yaml")):
        scenario = yaml.safe_load(path.read_text(encoding="utf-8"))
        for check in scenario.get("checks", []):
            doc = check.get("query")
            if isinstance(doc, dict) and doc.get("version") == "ee.query.v1":
                if check.get("as_of"):
                    doc = {**doc, "asOf": check["as_of"]}
                yield f"{path.name} {check.get('id')}", doc


def _test_documents() -> Iterator[tuple[str, Any]]:
    """Query documents written as literal dicts in the tests (some are meant to be refused)."""
    for path in sorted((REPO_ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            try:
                value = ast.literal_eval(node)
            except ValueError:
                continue
            if isinstance(value, dict) and value.get("version") == "ee.query.v1":
                yield f"{path.relative_to(REPO_ROOT)}:{node.lineno}", value


def _as_of_documents() -> Iterator[tuple[str, Any]]:
    for value in AS_OF_VALUES:
        yield f"asOf {value}", {"version": "ee.query.v1", "query": {"text": "x"}, "asOf": value}


EXAMPLES = [*_markdown_documents(), *_scenario_documents(), *_test_documents(), *_as_of_documents()]


def accepted_by_ee(doc: Any) -> bool:
    try:
        parse_document(json.dumps(doc))
    except QueryError:
        return False
    return True


def test_the_examples_are_found() -> None:
    sources = {name.split()[0].split(":")[0] for name, _doc in EXAMPLES}
    assert any(s.startswith("docs/") for s in sources), "the docs show query documents"
    assert any(s.endswith(".yaml") for s in sources)
    assert any(s.startswith("tests/") for s in sources)
    commitish = [doc for _n, doc in EXAMPLES if isinstance(doc.get("asOf"), str) and "HEAD" in doc["asOf"]]
    assert commitish


@pytest.mark.parametrize(("name", "doc"), EXAMPLES, ids=[name for name, _doc in EXAMPLES])
def test_the_published_schema_accepts_what_ee_accepts(name: str, doc: Any) -> None:
    errors = [e.message for e in client_validator(published()).iter_errors(doc)]
    if accepted_by_ee(doc):
        assert errors == [], name
    else:
        assert errors, f"{name}: ee refuses it, so must the schema"


@pytest.mark.skipif(not SEED_SCHEMA.exists(), reason="the seed's schema is not on this machine")
def test_the_published_schema_is_a_superset_of_the_seeds() -> None:
    seed = json.loads(SEED_SCHEMA.read_text(encoding="utf-8"))
    ours = published()

    def paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
        out = set()
        for key, sub in schema.get("properties", {}).items():
            out.add(prefix + key)
            out |= paths(sub, prefix + key + ".")
        return out

    assert paths(seed) <= paths(ours)
    seed_check, ours_check = client_validator(seed), client_validator(ours)
    for name, doc in EXAMPLES:
        if seed_check.is_valid(doc):
            assert ours_check.is_valid(doc), name
