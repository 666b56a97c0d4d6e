"""The hostile and broken inputs of the reliability suite, and the secret corpus.

Four kinds of case, each a clear error (exit code and a message naming where) or a reported, skipped file,
never damage:

* :data:`FILE_CASES`: files a person (or a bad merge, a tool, an attacker) puts below ``memories/``;
* :data:`CLI_CASES`: command-line arguments (ids with path traversal, bad timestamps and commit-ishes…);
* :data:`IMPORT_CASES`: lines of ``ee import jsonl``;
* :data:`QUERY_CASES`: ee.query.v1 documents that violate the schema, are huge or nested too deeply.

The secret corpus is the one of ``tests/test_policy_secrets.py`` (secrets built at run time from a seeded
RNG, so none is ever committed), loaded by path so this module works from ``bench/soak.py`` too.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_USAGE, EXIT_POLICY, EXIT_NOT_FOUND = 2, 6, 7


# ------------------------------------------------------------------------------------------ files


@dataclass(frozen=True)
class FileCase:
    """A hostile file at ``rel``. ``line``: the line the report must name; ``skipped_silently``: the store
    must not follow it (a folder symlink is not descended), so there is nothing to report."""

    name: str
    rel: str
    make: Callable[[Path], None]
    message: str
    line: int | None = None
    skipped_silently: bool = False
    where: str = ""  # what the reported path must contain (default: rel)
    index_reports: bool = True  # False: a known gap of the index (see test_hostile_input)

    @property
    def shown(self) -> str:
        return self.where or self.rel


def _text(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text, encoding="utf-8")


def _bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _fm(frontmatter: str, body: str = "a body that is fine") -> Callable[[Path], None]:
    return _text(f"---\n{frontmatter}\n---\n{body}\n")


def _symlink(target: str) -> Callable[[Path], None]:
    return lambda path: path.symlink_to(target)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path) -> None:
    other = path.with_name("loop-b.md")
    path.symlink_to(other.name)
    other.symlink_to(path.name)


def _dir_symlink(path: Path) -> None:
    outside = path.parent.parent.parent / "outside-folder"
    outside.mkdir(exist_ok=True)
    (outside / "secret-plans.md").write_text("content from outside the store\n")
    path.symlink_to(outside, target_is_directory=True)


def _duplicate_id(path: Path) -> None:
    path.with_name("dupid-a.md").write_text("---\nid: shared-one\n---\nthe first file with this id\n")
    path.write_text("---\nid: shared-one\n---\nthe second file with this id\n")


def _bad_name(path: Path) -> None:
    name = os.fsencode(path.parent) + b"/\xff\xfe-latin1.md"
    with open(name, "wb") as handle:
        handle.write(b"a file whose name is not UTF-8\n")


BILLION_LAUGHS = "\n".join(
    ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8)]
)

FILE_CASES: list[FileCase] = [
    # malformed YAML
    FileCase(
        "yaml-unclosed-flow",
        "memories/unclosed.md",
        _fm("kind: rule\ntags: [a, b\nlevel: semantic"),
        "invalid YAML",
        3,
    ),
    FileCase(
        "yaml-bad-indent", "memories/indent.md", _fm("kind: rule\n  level: semantic"), "invalid YAML", 3
    ),
    FileCase("yaml-tab-indent", "memories/tab.md", _fm("kind: rule\ntags:\n\t- a"), "invalid YAML"),
    FileCase(
        "yaml-not-closed", "memories/open.md", _text("---\nkind: rule\nno closing line\n"), "not closed", 1
    ),
    FileCase("yaml-sequence", "memories/seq.md", _fm("- a\n- b"), "mapping", 2),
    FileCase("yaml-scalar", "memories/scalar.md", _fm("just some words"), "mapping", 2),
    FileCase(
        "yaml-python-tag",
        "memories/pytag.md",
        _fm("x: !!python/object/apply:os.system ['echo pwned']"),
        "invalid YAML",
        2,
    ),
    FileCase("yaml-unhashable-key", "memories/key.md", _fm("? [a, b]\n: value"), "invalid YAML", 2),
    FileCase("yaml-key-not-text", "memories/key2.md", _fm("kind: rule\n1: one"), "key must be text", 3),
    # bombs
    FileCase("billion-laughs", "memories/laughs.md", _fm(BILLION_LAUGHS), "aliases", 2),
    FileCase("merge-key-alias", "memories/merge.md", _fm("base: &b {kind: rule}\n<<: *b"), "aliases", 2),
    FileCase("huge-frontmatter", "memories/hugefm.md", _fm("note: " + "a" * 70_000), "KiB", 2),
    FileCase(
        "deep-flow-nesting", "memories/deep.md", _fm("x: " + "[" * 5000 + "]" * 5000), "invalid YAML", 2
    ),
    # duplicate keys
    FileCase(
        "duplicate-key", "memories/dup.md", _fm("kind: rule\nlevel: semantic\nkind: fact"), "duplicate", 4
    ),
    FileCase("duplicate-key-quoted", "memories/dupq.md", _fm("kind: rule\n'kind': fact"), "duplicate", 3),
    FileCase(
        "duplicate-id-across-files",
        "memories/dupid.md",
        _duplicate_id,
        "also used by",
        2,
        index_reports=False,
    ),
    # wrong types, one per known key
    FileCase("id-list", "memories/t-id.md", _fm("id: [a, b]"), "not a valid memory id", 2),
    FileCase("id-traversal", "memories/t-idtrav.md", _fm("id: ../../etc/passwd"), "not a valid memory id", 2),
    FileCase("id-absolute", "memories/t-idabs.md", _fm("id: /etc/passwd"), "not a valid memory id", 2),
    FileCase("level-number", "memories/t-level.md", _fm("level: 5"), "unknown level", 2),
    FileCase("kind-mapping", "memories/t-kind.md", _fm("kind: {a: 1}"), "kind must be text", 2),
    FileCase("tags-number", "memories/t-tags.md", _fm("tags: 5"), "tags must be a list", 2),
    FileCase("tags-nested", "memories/t-tags2.md", _fm("tags: [[a]]"), "not text", 2),
    FileCase("trust-unknown", "memories/t-trust.md", _fm("trust: root"), "unknown trust", 2),
    FileCase("confidence-text", "memories/t-conf.md", _fm("confidence: high"), "number from 0 to 1", 2),
    FileCase("confidence-bool", "memories/t-conf2.md", _fm("confidence: true"), "number from 0 to 1", 2),
    FileCase("utility-out-of-range", "memories/t-util.md", _fm("utility: 1.5"), "number from 0 to 1", 2),
    FileCase("importance-list", "memories/t-imp.md", _fm("importance: [1]"), "number from 0 to 1", 2),
    FileCase("created-words", "memories/t-created.md", _fm("created: yesterday"), "not a date-time", 2),
    FileCase(
        "created-month-13", "memories/t-created2.md", _fm("created: 2026-13-45T00:00:00Z"), "invalid value", 2
    ),
    FileCase("valid-from-mapping", "memories/t-vf.md", _fm("valid_from: {x: 1}"), "not a date-time", 2),
    FileCase("valid-to-feb-30", "memories/t-vt.md", _fm("valid_to: '2026-02-30'"), "not a date-time", 2),
    FileCase(
        "valid-to-feb-30-plain",
        "memories/t-vt2.md",
        _fm("kind: rule\nvalid_to: 2026-02-30"),
        "invalid value",
        3,
    ),
    FileCase("source-mapping", "memories/t-src.md", _fm("source: {a: b}"), "source must be a list", 2),
    FileCase("links-text", "memories/t-links.md", _fm("links: supports"), "links must be a list", 2),
    FileCase(
        "links-bad-type", "memories/t-links2.md", _fm("links: [{type: owns, to: x}]"), "unknown link type", 2
    ),
    FileCase("paths-number", "memories/t-paths.md", _fm("paths: 7"), "paths must be a list", 2),
    FileCase("redacted-mapping", "memories/t-red.md", _fm("redacted: {a: 1}"), "redacted must be a list", 2),
    FileCase(
        "ten-thousand-tags",
        "memories/many-tags.md",
        _fm("tags: [" + ", ".join(f"t{i}" for i in range(10_000)) + "]"),
        "KiB",
        2,
    ),
    FileCase(
        "too-many-tags",
        "memories/many-tags2.md",
        _fm("tags: [" + ", ".join(f"t{i}" for i in range(300)) + "]"),
        "tags (at most",
        2,
    ),
    FileCase("tag-too-long", "memories/long-tag.md", _fm("tags: [" + "x" * 200 + "]"), "longer than", 2),
    # encodings and binary content
    FileCase(
        "binary-png",
        "memories/image.md",
        _bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)),
        "not UTF-8",
        1,
    ),
    FileCase(
        "latin-1",
        "memories/latin1.md",
        _bytes("first line\ncaf\u00e9 au lait\n".encode("latin-1")),
        "not UTF-8",
        2,
    ),
    FileCase(
        "utf-16-bom", "memories/utf16.md", _bytes("\ufeffa note in UTF-16\n".encode("utf-16")), "not UTF-8", 1
    ),
    FileCase("nul-byte", "memories/nul.md", _bytes(b"line one\nline\x00two\n"), "NUL", 2),
    FileCase("huge-body", "memories/huge.md", _text("x" * 300_000), "more than the limit"),
    FileCase("empty-body", "memories/nobody.md", _text("---\nkind: rule\n---\n\n"), "no body", 4),
    FileCase("empty-file", "memories/empty.md", _text(""), "empty", 1),
    # the file system
    FileCase("symlink-file-outside", "memories/passwd.md", _symlink("/etc/passwd"), "outside memories/"),
    FileCase("symlink-dir-outside", "memories/outside", _dir_symlink, "", skipped_silently=True),
    FileCase("symlink-dir-outside-md", "memories/outside.md", _dir_symlink, "outside memories/"),
    FileCase("symlink-loop", "memories/loop-a.md", _loop, "cannot be read"),
    FileCase("fifo", "memories/pipe.md", _fifo, "not a regular file"),
    FileCase("name-not-utf8", "memories/bad-name-holder", _bad_name, "not UTF-8", where="-latin1.md"),
]


# ------------------------------------------------------------------------------------------ arguments


@dataclass(frozen=True)
class CliCase:
    """``ee ARGS`` (``{id}``: an existing memory's id) must exit ``exit`` with ``message`` in the error."""

    name: str
    args: tuple[str, ...]
    exit: int
    message: str
    input: str | None = None


MANY_TAGS = ",".join(f"t{i}" for i in range(10_000))

CLI_CASES: list[CliCase] = [
    CliCase("show-traversal", ("memory", "show", "../x"), EXIT_USAGE, "not a memory id"),
    CliCase(
        "show-deep-traversal", ("memory", "show", "../../../../etc/passwd"), EXIT_USAGE, "not a memory id"
    ),
    CliCase("show-absolute", ("memory", "show", "/etc/passwd"), EXIT_USAGE, "not a memory id"),
    CliCase("show-nul", ("memory", "show", "mem_\x00x"), EXIT_USAGE, "holds a NUL byte"),
    CliCase(
        "show-unknown", ("memory", "show", "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"), EXIT_NOT_FOUND, "no memory"
    ),
    CliCase("tags-traversal", ("memory", "tags", "../../x", "--add", "a"), EXIT_USAGE, "not a memory id"),
    CliCase("tags-ten-thousand", ("memory", "tags", "{id}", "--add", MANY_TAGS), EXIT_USAGE, "tags (at most"),
    CliCase("forget-traversal", ("memory", "forget", "../x"), EXIT_USAGE, "not a memory id"),
    CliCase("link-traversal", ("memory", "link", "{id}", "../x"), EXIT_USAGE, "not a memory id"),
    CliCase("outcome-traversal", ("outcome", "../x", "--signal", "helpful"), EXIT_USAGE, "not a memory id"),
    CliCase(
        "remember-valid-from-month-13",
        ("remember", "x", "--valid-from", "2026-13-45"),
        EXIT_USAGE,
        "not a date-time",
    ),
    CliCase(
        "remember-valid-to-words", ("remember", "x", "--valid-to", "yesterday"), EXIT_USAGE, "not a date-time"
    ),
    CliCase(
        "remember-link-traversal", ("remember", "x", "--link", "supports:../x"), EXIT_USAGE, "not a memory id"
    ),
    CliCase(
        "remember-ten-thousand-tags", ("remember", "x", "--tags", MANY_TAGS), EXIT_USAGE, "tags (at most"
    ),
    CliCase("remember-empty", ("remember", "   "), EXIT_USAGE, "empty"),
    CliCase(
        "remember-huge-body", ("remember", "-"), EXIT_USAGE, "more than the limit", input="word " * 70_000
    ),
    CliCase("remember-nul", ("remember", "a\x00b"), EXIT_USAGE, "NUL"),
    CliCase("as-of-nope", ("search", "x", "--as-of", "nope"), EXIT_NOT_FOUND, "neither a time nor a commit"),
    CliCase("as-of-option-injection", ("search", "x", "--as-of", "-rf"), EXIT_USAGE, "not a commit-ish"),
    CliCase(
        "as-of-output-option",
        ("search", "x", "--as-of", "--output=/tmp/ee-pwned"),
        EXIT_USAGE,
        "not a commit-ish",
    ),
    CliCase(
        "as-of-shell",
        ("search", "x", "--as-of", "HEAD;rm -rf /"),
        EXIT_NOT_FOUND,
        "neither a time nor a commit",
    ),
    CliCase(
        "as-of-newline",
        ("search", "x", "--as-of", "HEAD\n--all"),
        EXIT_NOT_FOUND,
        "neither a time nor a commit",
    ),
    CliCase("as-of-month-13", ("search", "x", "--as-of", "2026-13-45"), EXIT_USAGE, "2026-13-45"),
    CliCase(
        "show-as-of-option", ("memory", "show", "{id}", "--as-of", "-rf"), EXIT_USAGE, "not a commit-ish"
    ),
    CliCase(
        "query-file-missing",
        ("search", "--query-file", "/nonexistent/q.json"),
        EXIT_NOT_FOUND,
        "no query file",
    ),
    CliCase("query-stdin-not-json", ("search", "--query-file", "-"), EXIT_USAGE, "not JSON", input="{nope"),
    CliCase("import-missing-file", ("import", "jsonl", "/nonexistent/x.jsonl"), EXIT_NOT_FOUND, "no file"),
    CliCase("import-dev-zero", ("import", "jsonl", "/dev/zero"), EXIT_USAGE, "longer than"),
]


# ------------------------------------------------------------------------------------------ import lines


@dataclass(frozen=True)
class ImportCase:
    """``ee import jsonl`` of ``lines`` (a good line first, then the bad one): nothing imported."""

    name: str
    bad: str
    exit: int
    message: str


def _line(**record: Any) -> str:
    return json.dumps({"body": "an imported memory", **record})


IMPORT_CASES: list[ImportCase] = [
    ImportCase("id-traversal", _line(id="../../escape"), EXIT_USAGE, "not a valid memory id"),
    ImportCase("id-absolute", _line(id="/etc/passwd"), EXIT_USAGE, "not a valid memory id"),
    ImportCase("id-nul", _line(id="mem_a\u0000b"), EXIT_USAGE, "not a valid memory id"),
    ImportCase("not-json", "{nope", EXIT_USAGE, "not JSON"),
    ImportCase("not-an-object", "[1, 2]", EXIT_USAGE, "JSON object"),
    ImportCase("unknown-field", _line(owner="x"), EXIT_USAGE, "unknown field"),
    ImportCase("body-number", json.dumps({"body": 5}), EXIT_USAGE, "must be a string"),
    ImportCase(
        "ten-thousand-tags", _line(tags=[f"t{i}" for i in range(10_000)]), EXIT_USAGE, "tags (at most"
    ),
    ImportCase("tags-mapping", _line(tags={"a": 1}), EXIT_USAGE, "must be a list"),
    ImportCase("confidence-text", _line(confidence="high"), EXIT_USAGE, "number from 0 to 1"),
    ImportCase("level-unknown", _line(level="cosmic"), EXIT_USAGE, "unknown level"),
    ImportCase("trust-unknown", _line(trust="root"), EXIT_USAGE, "unknown trust"),
    ImportCase("created-words", _line(created="yesterday"), EXIT_USAGE, "not a date-time"),
    ImportCase("valid-from-month-13", _line(valid_from="2026-13-45"), EXIT_USAGE, "not a date-time"),
    ImportCase("link-traversal", _line(links=["supports:../x"]), EXIT_USAGE, "not a memory id"),
    ImportCase("extra-bad-key", _line(extra={"../x": 1}), EXIT_USAGE, "not usable"),
    ImportCase("huge-body", json.dumps({"body": "word " * 70_000}), EXIT_USAGE, "more than the limit"),
    ImportCase(
        "deep-nesting",
        '{"body": "x", "extra": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}",
        EXIT_USAGE,
        "nested",
    ),
    ImportCase("duplicate-of-existing", _line(id="{id}"), EXIT_USAGE, "already in the store"),
]


# ------------------------------------------------------------------------------------------ query documents


@dataclass(frozen=True)
class QueryCase:
    """A query document (a dict, or raw text) that must be refused with exit 2 naming ``pointer``."""

    name: str
    doc: Any
    pointer: str | None
    exit: int = EXIT_USAGE


def _q(**fields: Any) -> dict[str, Any]:
    return {"version": "ee.query.v1", "query": {"text": "deploy"}, **fields}


QUERY_CASES: list[QueryCase] = [
    QueryCase("version-wrong", {"version": "ee.query.v9", "query": {"text": "x"}}, "/version"),
    QueryCase("query-missing", {"version": "ee.query.v1"}, "/"),
    QueryCase("query-text-number", {"version": "ee.query.v1", "query": {"text": 5}}, "/query/text"),
    QueryCase("query-mode-unknown", _q(query={"text": "x", "mode": "psychic"}), "/query/mode"),
    QueryCase("workspace-empty", _q(workspace=""), "/workspace"),
    QueryCase("tags-require-text", _q(tags={"require": "ci"}), "/tags/require"),
    QueryCase("filters-unknown-op", _q(filters={"kind": {"like": "rule"}}), "/filters/kind"),
    QueryCase("filters-empty-predicate", _q(filters={"kind": {}}), "/filters/kind"),
    QueryCase("time-after-words", _q(time={"after": "last week"}), "/time/after"),
    QueryCase("as-of-month-13", _q(asOf="2026-13-45T00:00:00Z"), "/asOf"),
    QueryCase("as-of-words", _q(asOf="yesterday"), None, EXIT_NOT_FOUND),
    QueryCase("validity-posture", _q(temporalValidity={"posture": "lenient"}), "/temporalValidity/posture"),
    QueryCase("trust-min-class", _q(trust={"minClass": "root"}), "/trust/minClass"),
    QueryCase("redaction-policy", _q(redaction={"policy": "show-all"}), "/redaction/policy"),
    QueryCase("graph-max-hops", _q(graph={"maxHops": 99}), "/graph/maxHops"),
    QueryCase("output-format", _q(output={"format": "xml"}), "/output/format"),
    QueryCase("budget-zero", _q(budget={"maxTokens": 0}), "/budget/maxTokens"),
    QueryCase("speed-unknown", _q(speed="ludicrous"), "/speed"),
    QueryCase("pagination-limit", _q(pagination={"limit": 100_000}), "/pagination/limit"),
    QueryCase(
        "pagination-forged-cursor", _q(pagination={"cursor": "eyJxIjoieCIsIm8iOjEwfQ"}), "/pagination/cursor"
    ),
    QueryCase("eval-labels-text", _q(eval={"labels": "x"}), "/eval/labels"),
    QueryCase("unknown-top-level", _q(sudo=True), "/"),
    QueryCase("top-level-array", ["ee.query.v1"], "/"),
    QueryCase("huge-document", _q(eval={"labels": ["x" * 1000] * 400}), None),
    QueryCase(
        "deep-nesting-small",
        '{"version": "ee.query.v1", "query": {"text": "x"}, "filters": {"k": {"eq": '
        + "[" * 200
        + "]" * 200
        + "}}}",
        "/filters/k/eq",
    ),
    QueryCase("deep-nesting-huge", "[" * 100_000 + "]" * 100_000, None),
    QueryCase("not-json", "{'version': 'ee.query.v1'}", None),
    QueryCase("not-utf8", b'{"version": "ee.query.v1", "query": {"text": "caf\xe9"}}', None),
]


# ------------------------------------------------------------------------------------------ secrets


def secret_corpus() -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str]]]:
    """(true positives: (name, text, class, secret), look-alikes: (name, text)) from the policy tests."""
    module = _load("ee_secret_corpus", "test_policy_secrets.py")
    return list(module.POSITIVES), list(module.LOOKALIKES)


def injection_corpus() -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(instruction-like texts: (name, text, signal), engineering look-alikes: (name, text)) from the guard's
    own tests."""
    module = _load("ee_injection_corpus", "test_policy_injection.py")
    return list(module.FLAGGED), list(module.BENIGN)


def _load(name: str, filename: str) -> Any:
    path = Path(__file__).resolve().parent.parent / filename
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def total_cases() -> int:
    return len(FILE_CASES) + len(CLI_CASES) + len(IMPORT_CASES) + len(QUERY_CASES)
