"""``ee import docs FILE...``: the repository's own docs proposed as memories for review (the same engine
as ``ee curate scan --docs``), with file:line provenance, and clear refusals for files it must not read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
from conftest import Result, git, run_cli

from ee.schemas import load_schema
from ee.workspace import Workspace

AGENTS = """# Working here

- Always run `make test` before pushing.
- Never commit generated files under build/.

Some prose that prescribes nothing at all here.

```sh
make lint
```
"""


def ee(root: Path, *args: str) -> Result:
    return run_cli("--workspace", str(root), *args, "--json")


def ok(root: Path, *args: str) -> Any:
    result = ee(root, *args)
    assert result.code == 0, result.err + result.out
    jsonschema.validate(result.json, load_schema("ee.response.v1"))
    return result.data


def write(ws: Workspace, rel: str, text: str) -> Path:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_import_docs_proposes_rules_and_commands_with_their_line(ws: Workspace) -> None:
    agents = write(ws, "AGENTS.md", AGENTS)
    style = write(ws, "docs/style.md", "Use snake_case for every module name in the package.\n")
    head = git(ws.root, "rev-parse", "HEAD")
    data = ok(ws.root, "import", "docs", str(agents), str(style))
    assert data["files"] == ["AGENTS.md", "docs/style.md"]
    found = {c["evidence"][0]["ref"]: c for c in data["candidates"]}
    assert set(found) == {"AGENTS.md:3", "AGENTS.md:4", "AGENTS.md:9", "docs/style.md:1"}
    assert found["AGENTS.md:9"]["new_memory"]["kind"] == "command"
    assert found["docs/style.md:1"]["new_memory"]["kind"] == "convention"
    assert found["AGENTS.md:3"]["new_memory"]["source"] == "file://AGENTS.md#L3"
    assert git(ws.root, "rev-parse", "HEAD") == head  # proposals only: nothing written to the store
    listed = ok(ws.root, "curate", "list", "--type", "docs")
    assert listed["count"] == 4
    # the same engine as `curate scan --docs`: the same candidates, the same ids
    scanned = ok(ws.root, "curate", "scan", "--docs")
    assert {c["id"] for c in scanned["candidates"] if c["evidence"][0]["ref"].startswith("AGENTS.md")} == {
        found[ref]["id"] for ref in ("AGENTS.md:3", "AGENTS.md:4", "AGENTS.md:9")
    }


def test_import_docs_twice_proposes_nothing_new_and_a_rejection_holds(ws: Workspace) -> None:
    agents = write(ws, "AGENTS.md", AGENTS)
    first = ok(ws.root, "import", "docs", str(agents))
    proposals = ws.root / ".ee" / "curate" / "proposals.json"
    held = proposals.read_bytes()
    assert ok(ws.root, "import", "docs", str(agents))["count"] == first["count"]
    assert proposals.read_bytes() == held
    rejected = first["candidates"][0]["id"]
    ok(ws.root, "curate", "reject", rejected, "--reason", "not a rule we keep")
    again = ok(ws.root, "import", "docs", str(agents))
    assert rejected not in {c["id"] for c in again["candidates"]}
    accepted = again["candidates"][0]
    ok(ws.root, "curate", "accept", accepted["id"])
    assert ok(ws.root, "import", "docs", str(agents))["count"] == first["count"] - 2  # already a memory


def test_import_docs_refuses_what_it_must_not_read(ws: Workspace, tmp_path: Path) -> None:
    agents = write(ws, "AGENTS.md", AGENTS)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "RULES.md").write_text("Always run the tests before pushing.\n", encoding="utf-8")
    (ws.root / "linked.md").symlink_to(outside / "RULES.md")
    (ws.root / "elsewhere").symlink_to(outside)
    binary = ws.root / "logo.md"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    huge = write(ws, "HUGE.md", "Always run the tests before pushing.\n" * 20_000)
    cases = {
        str(ws.root / "MISSING.md"): (7, "no such file"),
        str(outside / "RULES.md"): (2, "outside the repository"),
        str(ws.root / "linked.md"): (2, "symbolic link"),
        str(ws.root / "elsewhere" / "RULES.md"): (2, "outside the repository"),
        str(binary): (2, "binary"),
        str(huge): (2, "more than"),
    }
    for given, (code, words) in cases.items():
        result = ee(ws.root, "import", "docs", str(agents), given)
        assert result.code == code, (given, result.out)
        error = result.json["error"]
        assert words in error["message"], error
        assert "nothing was proposed" in error["message"]
        assert error["repair"]
        assert "Traceback" not in result.err
    assert not (ws.root / ".ee" / "curate" / "proposals.json").exists()  # one bad file: nothing at all
