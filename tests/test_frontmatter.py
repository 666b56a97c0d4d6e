"""The memory file format: parsing (with errors that name file:line), new files, and byte-exact edits."""

from __future__ import annotations

import datetime as dt
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ee.errors import ExitCode, MemoryFormatError, UsageError
from ee.model import Link, Memory, Problem
from ee.store import frontmatter as fm
from ee.store.ids import new_id
from ee.values import KINDS, LEVELS, LINK_TYPES, TRUST_CLASSES

PATH = "memories/example.md"


def parse(text: str, path: str = PATH) -> tuple[Memory, list[Problem]]:
    return fm.parse(text, path)


def error_of(text: str, path: str = PATH) -> MemoryFormatError:
    with pytest.raises(MemoryFormatError) as info:
        fm.parse(text, path)
    assert info.value.exit_code == ExitCode.STORAGE
    assert info.value.hint, "every error says what to do next"
    return info.value


# --- reading


def test_full_frontmatter_is_read() -> None:
    text = (
        "---\n"
        "id: mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB\n"
        "level: procedural          # working | episodic | semantic | procedural\n"
        "kind: rule\n"
        "tags: [ci, rust]\n"
        "trust: human_explicit\n"
        "confidence: 0.85\n"
        "utility: 0.4\n"
        "importance: 0.7\n"
        "created: 2026-12-02T09:11:11Z\n"
        "valid_from: 2026-12-01T00:00:00Z\n"
        "valid_to: null\n"
        "source: file://AGENTS.md\n"
        "links:\n"
        "  - {type: supports, to: mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA}\n"
        "paths: [src/ci/*.yml]\n"
        "---\n"
        "Clippy warnings are errors here: pedantic and nursery lints are enabled in CI.\n"
    )
    memory, problems = parse(text)
    assert problems == []
    assert memory.id == "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB"
    assert (memory.level, memory.kind, memory.tags) == ("procedural", "rule", ("ci", "rust"))
    assert (memory.trust, memory.confidence, memory.utility, memory.importance) == (
        "human_explicit",
        0.85,
        0.4,
        0.7,
    )
    assert memory.created == "2026-12-02T09:11:11Z"
    assert memory.valid_from == "2026-12-01T00:00:00Z"
    assert memory.valid_to is None
    assert memory.source == ("file://AGENTS.md",)
    assert memory.links == (Link("supports", "mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA"),)
    assert memory.paths == ("src/ci/*.yml",)
    assert memory.body.startswith("Clippy warnings")
    assert memory.body_line == 18
    assert memory.has_frontmatter


def test_file_without_frontmatter_is_a_valid_memory() -> None:
    memory, problems = parse("# Deploys\n\nDeploys go out on Tuesdays.\n", "memories/ops/deploy-days.md")
    assert problems == []
    assert memory.id == "ops-deploy-days"
    assert (memory.level, memory.kind, memory.trust) == ("semantic", "fact", None)
    assert not memory.has_frontmatter
    assert memory.title == "Deploys"


def test_minimal_frontmatter_gets_defaults() -> None:
    memory, _ = parse("---\nkind: decision\n---\nWe use uv.\n", "memories/uv.md")
    assert (memory.id, memory.level, memory.kind, memory.confidence) == ("uv", "semantic", "decision", None)
    assert (memory.utility, memory.importance) == (0.5, 0.5)


def test_empty_frontmatter_and_crlf_and_bom_are_read() -> None:
    assert parse("---\n---\nbody\n")[0].body == "body"
    memory, _ = parse("---\r\nid: crlf-1\r\ntags: [a]\r\n---\r\nline one\r\nline two\r\n")
    assert (memory.id, memory.tags, memory.body) == ("crlf-1", ("a",), "line one\r\nline two")
    assert parse("\ufeff---\nid: bom-1\n---\nbody\n")[0].id == "bom-1"
    assert parse("---  \nid: ws-1\n---\t\nbody\n")[0].id == "ws-1"


def test_dots_close_frontmatter_and_later_dashes_belong_to_the_body() -> None:
    memory, _ = parse("---\nid: d1\n...\nbody\n---\nmore\n")
    assert memory.id == "d1"
    assert memory.body == "body\n---\nmore"


def test_markdown_rule_at_the_top_of_a_plain_file_is_body() -> None:
    memory, _ = parse("----\nA file that starts with a long rule.\n")
    assert not memory.has_frontmatter


def test_unknown_keys_are_kept_and_warned_about() -> None:
    memory, problems = parse("---\nid: u1\nowner: team-a\nreview: {by: me}\n---\nbody\n")
    assert dict(memory.extra) == {"owner": "team-a", "review": {"by": "me"}}
    assert [(p.code, p.key, p.line) for p in problems] == [
        ("unknown_key", "owner", 3),
        ("unknown_key", "review", 4),
    ]
    assert all(p.severity == "warning" and p.repair for p in problems)


def test_the_unknown_key_warning_says_the_key_is_usable_in_filters() -> None:
    _memory, problems = parse("---\nteam: infra\n---\nbody\n")
    (problem,) = problems
    assert "kept as an extra field" in problem.message
    assert "filters.team" in problem.message
    assert "not used" not in problem.message
    assert "rename" not in problem.message


def test_every_problem_of_a_file_is_reported_at_once() -> None:
    text = "---\nlevel: cosmic\ntags: [ok]\nconfidence: 7\ntrust: god\n---\n\n"
    with pytest.raises(MemoryFormatError) as caught:
        parse(text, "memories/bad.md")
    found = [(e.key, e.line) for e in caught.value.each()]
    assert found == [("level", 2), ("confidence", 4), ("trust", 5), (None, 7)]
    message = caught.value.message
    for where in ("memories/bad.md:2: unknown level", "memories/bad.md:4: confidence", "memories/bad.md:5:"):
        assert where in message
    assert [p["line"] for p in caught.value.details["problems"]] == [2, 4, 5, 7]


def test_unknown_kind_is_a_warning_not_an_error() -> None:
    memory, problems = parse("---\nkind: hunch\n---\nbody\n")
    assert memory.kind == "hunch"
    assert [(p.code, p.line) for p in problems] == [("unknown_kind", 2)]


def test_tags_as_a_comma_string_and_dates_are_normalised() -> None:
    memory, _ = parse(
        "---\ntags: a, b ,a\ncreated: 2026-01-02\nvalid_to: 2026-01-03T10:00:00+02:00\n---\nx\n"
    )
    assert memory.tags == ("a", "b")
    assert memory.created == "2026-01-02T00:00:00Z"
    assert memory.valid_to == "2026-01-03T08:00:00Z"


def test_extra_values_json_has_no_value_for_are_carried_as_text() -> None:
    memory, problems = parse(
        "---\nteam: .nan\nsize: .inf\nlow: [-.inf, 1.0e+400, 2.5]\nblob: !!binary aGVsbG8=\n"
        "kinds: !!set {b, a}\nwhen: 2026-01-02\n---\nx\n"
    )
    assert dict(memory.extra) == {
        "team": ".nan",
        "size": ".inf",
        "low": ["-.inf", ".inf", 2.5],
        "blob": "aGVsbG8=",
        "kinds": ["a", "b"],
        "when": "2026-01-02",
    }
    assert {p.code for p in problems} == {"unknown_key"}
    # ee's own numbers are checked as before: not finite is not within 0..1.
    assert "confidence" in error_of("---\nconfidence: .nan\n---\nx\n").message


def test_times_at_the_ends_of_the_calendar_keep_four_digit_years() -> None:
    # C's strftime writes year 999 as "999-…", which nothing reads back: ee writes "0999-…".
    memory, problems = parse(
        "---\ncreated: 0999-01-01T00:00:00Z\nvalid_from: 0001-01-01\nvalid_to: 9999-12-31T23:59:59Z\n---\nx\n"
    )
    assert problems == []
    assert (memory.created, memory.valid_from) == ("0999-01-01T00:00:00Z", "0001-01-01T00:00:00Z")
    assert memory.valid_to == "9999-12-31T23:59:59Z"
    again = parse(fm.render_new({"created": memory.created, "valid_to": memory.valid_to}, "x"))[0]
    assert (again.created, again.valid_to) == (memory.created, memory.valid_to)


@pytest.mark.parametrize(
    ("name", "text", "line", "key", "fragment"),
    [
        ("malformed yaml", "---\nid: x1\nkind: fact\nsource: a: b\n---\nbody\n", 4, None, "invalid YAML"),
        (
            "unclosed flow list",
            "---\nid: x1\ntags: [a, b\nlevel: semantic\n---\nbody\n",
            3,
            None,
            "invalid YAML",
        ),
        ("tab indentation", "---\nid: x1\n\tkind: fact\n---\nbody\n", 3, None, "invalid YAML"),
        ("wrong type confidence", "---\nid: x1\nconfidence: high\n---\nbody\n", 3, "confidence", "number"),
        ("confidence out of range", "---\nconfidence: 1.5\n---\nbody\n", 2, "confidence", "0 to 1"),
        ("bool confidence", "---\nconfidence: true\n---\nbody\n", 2, "confidence", "number"),
        ("wrong type tags", "---\nid: x1\ntags: {a: 1}\n---\nbody\n", 3, "tags", "list"),
        ("nested tag", "---\ntags: [[a]]\n---\nbody\n", 2, "tags", "not text"),
        ("wrong type kind", "---\nkind: [a]\n---\nbody\n", 2, "kind", "text"),
        ("unknown level", "---\nid: x1\nkind: fact\nlevel: cosmic\n---\nbody\n", 4, "level", "cosmic"),
        ("unknown trust", "---\ntrust: god\n---\nbody\n", 2, "trust", "god"),
        ("bad created", "---\ncreated: yesterday\n---\nbody\n", 2, "created", "date-time"),
        # Well-formed times whose UTC date is outside years 1-9999 (Python cannot hold them).
        ("created before year 1", "---\ncreated: 0001-01-01T00:00:00+01:00\n---\nx\n", 2, "created", "range"),
        (
            "valid_to after 9999",
            '---\nvalid_to: "9999-12-31T23:59:59-14:00"\n---\nx\n',
            2,
            "valid_to",
            "range",
        ),
        ("bad link type", "---\nlinks: [{type: loves, to: x}]\n---\nbody\n", 2, "links", "loves"),
        ("links not a list", "---\nlinks: {type: a, to: b}\n---\nbody\n", 2, "links", "list"),
        ("duplicate key", "---\nid: x1\nkind: fact\nid: x2\n---\nbody\n", 4, "id", "duplicate key 'id'"),
        ("duplicate quoted key", "---\nid: x1\n'id': x2\n---\nbody\n", 3, "id", "duplicate"),
        ("id with ../", "---\nid: ../../etc/passwd\n---\nbody\n", 2, "id", "not a valid memory id"),
        ("id with slash", "---\nid: a/b\n---\nbody\n", 2, "id", "not a valid memory id"),
        ("id as a list", "---\nid: [a]\n---\nbody\n", 2, "id", "not a valid"),
        ("no body", "---\nid: x1\n---\n\n", 4, None, "no body"),
        ("not closed", "---\nid: x1\nbody\n", 1, None, "not closed"),
        ("a list, not a mapping", "---\n- a\n- b\n---\nbody\n", 2, None, "mapping"),
        ("a key that is not text", "---\n1: a\n---\nbody\n", 2, "1", "key must be text"),
    ],
)
def test_bad_files_name_the_line_and_key(
    name: str, text: str, line: int, key: str | None, fragment: str
) -> None:
    error = error_of(text)
    assert fragment in error.message, name
    assert error.line == line, (name, error.message)
    assert error.key == key
    assert error.message.startswith(f"{PATH}:{line}: ")
    assert error.to_dict()["details"] == {"path": PATH, "line": line, "key": key}


def test_yaml_alias_bomb_is_refused_before_it_expands() -> None:
    bomb = "---\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for name, prev in zip("bcdefghi", "abcdefgh", strict=True):
        bomb += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]\n"
    error = error_of(bomb + "---\nbody\n")
    assert "aliases" in error.message
    assert error.line == 2


def test_quoted_ampersand_and_star_are_not_aliases() -> None:
    memory, _ = parse("---\ntags: ['&amp', '*star', a&b]\nsource: 'x*y'\n---\nbody\n")
    assert memory.tags == ("&amp", "*star", "a&b")


def test_huge_frontmatter_is_refused() -> None:
    error = error_of("---\nid: x1\nnote: " + "x" * (fm.MAX_FRONTMATTER_BYTES + 10) + "\n---\nbody\n")
    assert "larger than" in error.message


def test_thousands_of_tags_are_refused() -> None:
    tags = ", ".join(f"t{i}" for i in range(3000))
    error = error_of(f"---\nid: x1\ntags: [{tags}]\n---\nbody\n")
    assert "3000 tags" in error.message
    assert error.key == "tags"
    error = error_of("---\ntags: [" + "x" * 500 + "]\n---\nbody\n")
    assert "longer than" in error.message


def test_decode_names_the_line_of_bad_bytes() -> None:
    with pytest.raises(MemoryFormatError) as info:
        fm.decode(b"---\nid: a\n---\nline\ncaf\xe9\n", PATH)
    assert info.value.line == 5
    assert "not UTF-8" in info.value.message
    with pytest.raises(MemoryFormatError) as info:
        fm.decode(b"abc\n\x00\x01", PATH)
    assert info.value.line == 2
    assert fm.decode(b"\xef\xbb\xbfhello", PATH) == "hello"


# --- new files


def test_render_new_writes_keys_in_ees_order_and_skips_empty_ones() -> None:
    text = fm.render_new(
        {
            "id": "mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB",
            "level": "procedural",
            "kind": "rule",
            "tags": ["ci", "rust"],
            "trust": "human_explicit",
            "confidence": 0.85,
            "utility": 0.5,
            "importance": 0.5,
            "created": "2026-12-02T09:11:11Z",
            "valid_from": None,
            "links": [Link("supports", "mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA")],
            "source": ["file://AGENTS.md"],
            "paths": [],
        },
        "  Clippy warnings are errors here.  \n\n",
    )
    assert text == (
        "---\n"
        "id: mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB\n"
        "level: procedural\n"
        "kind: rule\n"
        "tags: [ci, rust]\n"
        "trust: human_explicit\n"
        "confidence: 0.85\n"
        "utility: 0.5\n"
        "importance: 0.5\n"
        "created: 2026-12-02T09:11:11Z\n"
        "source: file://AGENTS.md\n"
        "links:\n"
        "  - {type: supports, to: mem_01JE4ZQ0AAAAAAAAAAAAAAAAAA}\n"
        "---\n"
        "Clippy warnings are errors here.\n"
    )


def test_render_new_quotes_what_yaml_would_misread() -> None:
    tags = [
        "yes",
        "no",
        "on",
        "null",
        "1.0",
        "0x1f",
        "2026-01-01",
        "a, b",
        "#x",
        "has: colon",
        "~",
        "*s",
        "&a",
    ]
    text = fm.render_new({"id": "q1", "tags": tags, "source": ["- dash", "[x]"]}, "body")
    memory, _ = parse(text)
    assert list(memory.tags) == tags
    assert list(memory.source) == ["- dash", "[x]"]


def test_render_new_refuses_an_unusable_extra_key_as_a_usage_error() -> None:
    for key in ("id", "has space", "x:y", ""):
        with pytest.raises(UsageError) as info:
            fm.render_new({"id": "q1"}, "body", {key: 1})
        assert info.value.hint
    text = fm.render_new({"id": "q1"}, "body", {"owner": {"name": "ann", "n": [1, 2.5, None, True]}})
    assert dict(parse(text)[0].extra) == {"owner": {"name": "ann", "n": [1, 2.5, None, True]}}


_TAG_CHARS = st.characters(
    blacklist_categories=("Cs", "Cc", "Zl", "Zp"),
    blacklist_characters="\ufeff\x85",
)
_tag = st.text(_TAG_CHARS, min_size=1, max_size=20).map(str.strip).filter(bool)
_time = st.datetimes(min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2200, 1, 1)).map(
    lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")
)
_unit = st.floats(min_value=0, max_value=1, allow_nan=False)
_body = (
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff"), min_size=1)
    .map(str.strip)
    .filter(bool)
)
_id = st.one_of(
    st.builds(new_id),
    st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_:-]{0,40}\Z"),
)
_fields = st.fixed_dictionaries(
    {
        "id": _id,
        "level": st.sampled_from(LEVELS),
        "kind": st.sampled_from(KINDS),
        "tags": st.lists(_tag, max_size=8, unique=True),
        "trust": st.sampled_from(TRUST_CLASSES),
        "confidence": _unit,
        "utility": _unit,
        "importance": _unit,
        "created": _time,
    },
    optional={
        "valid_from": _time,
        "valid_to": _time,
        "source": st.lists(_tag, min_size=1, max_size=3, unique=True),
        "paths": st.lists(_tag, max_size=3, unique=True),
        "links": st.lists(
            st.builds(Link, st.sampled_from(LINK_TYPES), st.builds(new_id)), max_size=3, unique=True
        ),
    },
)
_extra = st.dictionaries(
    st.from_regex(r"\A[a-z_][a-z0-9_-]{0,10}\Z").filter(lambda k: k not in fm.KNOWN_KEYS),
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(10**6), 10**6)
        | st.floats(allow_nan=False, allow_infinity=False)
        | _tag,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.from_regex(r"\A[a-z]{1,5}\Z"), inner),
        max_leaves=6,
    ),
    max_size=3,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_fields, body=_body, extra=_extra)
def test_parse_of_render_new_gives_the_fields_back(fields: dict, body: str, extra: dict) -> None:
    text = fm.render_new(fields, body, extra)
    memory, problems = fm.parse(text, "memories/x.md")
    for key, value in fields.items():
        got = getattr(memory, key)
        if isinstance(got, tuple):
            got = list(got)
        assert got == value, (key, text)
    assert memory.body == body
    assert dict(memory.extra) == extra
    if not extra:
        assert fm.new_memory(fields, body, "memories/x.md") == memory
    assert [p.code for p in problems] == ["unknown_key"] * len(extra)


@settings(max_examples=200, deadline=None)
@given(fields=_fields, body=_body)
def test_update_without_changes_returns_the_text_unchanged(fields: dict, body: str) -> None:
    text = fm.render_new(fields, body)
    assert fm.update(text, {}, PATH) == text
    crlf = text.replace("\n", "\r\n")
    assert fm.update(crlf, {}, PATH) == crlf


_HAND_WRITTEN = [
    "---\n# a leading comment\nid: hand-1   # mine\nlevel: procedural\n\nkind: 'rule'\n"
    'tags:\n  - "ci"\n  - rust\n'
    "confidence: 0.9\n# between\nsource: file://x\n---\nBody.\n",
    "---\ntags: [a, b]\nkind: fact\nnote: |\n  block text\n  two\nvalid_to: null  # open\n...\nBody\n",
    "---\r\nid: crlf-2\r\ntags: [x]\r\nkind: fact\r\n---\r\nBody line\r\n",
    "---\nlinks:\n    - {type: supports, to: b2}\n# trailing\n---\nbody\n",
]


@settings(max_examples=150, deadline=None)
@given(
    index=st.integers(0, len(_HAND_WRITTEN) - 1),
    key=st.sampled_from(["tags", "valid_to", "confidence", "links", "paths", "level"]),
    data=st.data(),
)
def test_update_of_one_key_leaves_every_other_line_identical(
    index: int, key: str, data: st.DataObject
) -> None:
    text = _HAND_WRITTEN[index]
    value = {
        "tags": st.lists(_tag, max_size=5, unique=True),
        "valid_to": _time,
        "confidence": _unit,
        "links": st.lists(
            st.builds(Link, st.sampled_from(LINK_TYPES), st.builds(new_id)), max_size=2, unique=True
        ),
        "paths": st.lists(_tag, max_size=3, unique=True),
        "level": st.sampled_from(LEVELS),
    }[key]
    new_value = data.draw(value)
    out = fm.update(text, {key: new_value}, PATH)
    memory, _ = fm.parse(out, PATH)
    got = getattr(memory, key)
    assert (list(got) if isinstance(got, tuple) else got) == new_value
    before, after = _lines_outside_key(text, key), _lines_outside_key(out, key)
    assert before == after
    newline = "\r\n" if "\r\n" in text else "\n"
    assert all(line.endswith(newline) for line in out.splitlines(keepends=True))


def _lines_outside_key(text: str, key: str) -> list[str]:
    """Every line of ``text`` except those of top-level ``key`` (its line and its indented continuation)."""
    out: list[str] = []
    skipping = False
    lines = text.splitlines(keepends=True)
    closing = next(i for i, line in enumerate(lines[1:], start=1) if line.rstrip() in ("---", "..."))
    for number, line in enumerate(lines):
        if 0 < number < closing:
            if line.startswith(f"{key}:"):
                skipping = True
                continue
            if skipping and (
                line[:1] in (" ", "-") or (line.strip() and line[0] not in string.ascii_letters + "#")
            ):
                continue
            skipping = False
        out.append(line)
    return out


# --- byte-exact edits


def test_update_keeps_comments_order_quoting_and_blank_lines() -> None:
    text = (
        "---\n"
        "# written by hand\n"
        "kind: 'rule'          # single quotes\n"
        "id: hand-1\n"
        "\n"
        "level: procedural\n"
        'source: "file://AGENTS.md"\n'
        "tags: [ci, rust]   # flow\n"
        "# a comment between keys\n"
        "confidence: 0.9\n"
        "---\n"
        "Body text.\n"
    )
    out = fm.update(text, {"tags": ["ci", "rust", "lint"]}, PATH)
    assert out == text.replace("tags: [ci, rust]   # flow", "tags: [ci, rust, lint] # flow")


def test_update_appends_a_new_key_after_the_last_one() -> None:
    text = "---\nid: h2\nkind: fact  # k\n---\nBody\n"
    out = fm.update(text, {"valid_to": "2027-01-01T00:00:00Z"}, PATH)
    assert out == "---\nid: h2\nkind: fact  # k\nvalid_to: 2027-01-01T00:00:00Z\n---\nBody\n"


def test_update_keeps_a_block_list_block_and_its_indentation() -> None:
    text = '---\nid: h3\ntags:\n    - "a"\n    - b   # bee\nkind: fact\n---\nBody\n'
    out = fm.update(text, {"tags": ["a", "b", "c"]}, PATH)
    assert out == '---\nid: h3\ntags:\n    - "a"\n    - b   # bee\n    - c\nkind: fact\n---\nBody\n'
    text0 = "---\ntags:\n- a\n- b\nkind: fact\n---\nBody\n"
    assert fm.update(text0, {"tags": ["a", "c"]}, PATH) == "---\ntags:\n- a\n- c\nkind: fact\n---\nBody\n"


def test_update_keeps_a_flow_list_flow_and_its_quotes() -> None:
    text = "---\ntags: [\"a\", 'b']\nkind: fact\n---\nbody\n"
    assert (
        fm.update(text, {"tags": ["a", "b", "c"]}, PATH)
        == "---\ntags: [\"a\", 'b', c]\nkind: fact\n---\nbody\n"
    )


def test_update_replaces_null_and_keeps_its_comment() -> None:
    text = "---\nid: d1\nvalid_to: null # none yet\nkind: fact\n---\nbody\n"
    out = fm.update(text, {"valid_to": "2027-01-01T00:00:00Z"}, PATH)
    assert out == "---\nid: d1\nvalid_to: 2027-01-01T00:00:00Z # none yet\nkind: fact\n---\nbody\n"


def test_update_keeps_crlf_line_endings() -> None:
    text = "---\r\nid: crlf-1\r\ntags: [x]   # t\r\nkind: fact\r\n---\r\nBody line\r\nsecond\r\n"
    out = fm.update(text, {"tags": ["x", "y"], "valid_to": "2027-01-01T00:00:00Z"}, PATH)
    assert out == (
        "---\r\nid: crlf-1\r\ntags: [x, y] # t\r\nkind: fact\r\nvalid_to: 2027-01-01T00:00:00Z\r\n"
        "---\r\nBody line\r\nsecond\r\n"
    )


def test_update_gives_a_file_without_frontmatter_only_the_changed_keys() -> None:
    text = "# Title\n\nSome text\n"
    assert fm.update(text, {"tags": ["a", "b"]}, PATH) == "---\ntags: [a, b]\n---\n# Title\n\nSome text\n"
    crlf = "# Title\r\n\r\nSome text\r\n"
    assert fm.update(crlf, {"tags": ["a"]}, PATH) == "---\r\ntags: [a]\r\n---\r\n" + crlf
    assert fm.update(text, {}, PATH) == text
    assert fm.update(text, {"valid_to": fm.DELETE}, PATH) == text


def test_update_keeps_a_byte_order_mark_and_odd_delimiters() -> None:
    text = "\ufeff---\nid: d1\n---\nbody\n"
    assert fm.update(text, {"tags": ["x"]}, PATH) == "\ufeff---\nid: d1\ntags: [x]\n---\nbody\n"
    text = "---  \nid: d1\ntags: []\n---   \nbody\n"
    assert fm.update(text, {}, PATH) == text
    assert fm.update(text, {"tags": ["q"]}, PATH) == "---  \nid: d1\ntags: [q]\n---   \nbody\n"
    text = "---\nid: d1\n...\nbody"
    assert fm.update(text, {"tags": ["x"]}, PATH) == "---\nid: d1\ntags: [x]\n...\nbody"


def test_update_of_a_comment_only_frontmatter() -> None:
    text = "---\n# just a comment\n---\nbody\n"
    assert fm.update(text, {"tags": ["x"]}, PATH) == "---\n# just a comment\ntags: [x]\n---\nbody\n"


def test_update_deletes_a_key_and_leaves_the_rest() -> None:
    text = "---\nid: d1\nvalid_to: 2020-01-01  # old\nkind: fact\n---\nbody\n"
    assert fm.update(text, {"valid_to": fm.DELETE}, PATH) == "---\nid: d1\nkind: fact\n---\nbody\n"


def test_update_quotes_new_values_that_yaml_would_misread() -> None:
    text = "---\nid: d1\ntags: [a]\n---\nbody\n"
    tags = [
        "a",
        "yes",
        "No",
        "on",
        "1.0",
        "0o17",
        "1_000",
        "2026-01-01",
        "has: colon",
        "#hash",
        "x, y",
        "null",
        "é",
    ]
    out = fm.update(text, {"tags": tags}, PATH)
    assert list(fm.parse(out, PATH)[0].tags) == tags


def test_update_refuses_to_edit_a_file_it_cannot_read() -> None:
    with pytest.raises(MemoryFormatError):
        fm.update("---\nid: x\nid: y\n---\nbody\n", {"tags": ["a"]}, PATH)
    with pytest.raises(MemoryFormatError):
        fm.update("---\na: &x 1\nb: *x\n---\nbody\n", {"tags": ["a"]}, PATH)


def test_update_never_touches_the_body() -> None:
    body = "line with trailing spaces   \n\n\n# heading\n---\nkey: value\n\n"
    text = "---\nid: b1\n---\n" + body
    out = fm.update(text, {"tags": ["t"]}, PATH)
    assert out.endswith("---\n" + body)


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=200))
@settings(max_examples=300, deadline=None)
def test_parse_never_crashes_on_any_text(text: str) -> None:
    error = _parse_error(text)
    assert error is None or error.message.startswith(PATH)


@given(
    st.lists(
        st.sampled_from(
            [
                "id: a1",
                "tags: [a, b]",
                "kind: x",
                "level: semantic",
                "- a",
                "  - b",
                "# c",
                "",
                "x: {y: 1}",
                "confidence: 2",
                "links:",
                "  - {type: supports, to: z}",
                ": bad",
                "'q': 1",
                "&a x",
                "*a",
                "\t",
            ]
        ),
        max_size=8,
    )
)
@settings(max_examples=300, deadline=None)
def test_parse_never_crashes_on_jumbled_frontmatter(lines: list[str]) -> None:
    text = "---\n" + "\n".join(lines) + "\n---\nbody\n"
    assume(text)
    error = _parse_error(text)
    assert error is None or error.line is None or 1 <= error.line <= len(lines) + 3


def _parse_error(text: str) -> MemoryFormatError | None:
    try:
        fm.parse(text, PATH)
    except MemoryFormatError as exc:
        return exc
    return None


# --- the fast path agrees with PyYAML


def _yaml_view(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, dict):
        return {k: _yaml_view(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_yaml_view(v) for v in value]
    return value


def _agrees(fm_text: str) -> bool:
    """The fast reader either declines, or gives what PyYAML gives (and PyYAML does not refuse)."""
    import yaml

    fast = fm._fast_mapping(fm_text)
    if fast is None:
        return False
    loaded = yaml.load(fm_text, Loader=yaml.CSafeLoader)  # raises if the fast path was too lenient
    assert _yaml_view(loaded or {}) == _yaml_view(fast), fm_text
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_fields, body=_body, extra=_extra)
def test_the_fast_reader_agrees_with_pyyaml_on_what_ee_writes(fields: dict, body: str, extra: dict) -> None:
    fm_text, _body_text, _line = fm.split(fm.render_new(fields, body, extra))
    assert fm_text is not None
    _agrees(fm_text)


def test_the_fast_reader_takes_ees_usual_files() -> None:
    text = fm.render_new(
        {
            "id": new_id(),
            "level": "procedural",
            "kind": "rule",
            "tags": ["ci", "rust"],
            "trust": "human_explicit",
            "confidence": 0.85,
            "utility": 0.5,
            "importance": 0.5,
            "created": "2026-12-02T09:11:11Z",
            "source": ["file://AGENTS.md"],
            "links": [Link("supports", new_id())],
            "paths": ["src/ci/*.yml"],
        },
        "Body.",
    )
    assert _agrees(fm.split(text)[0] or "")


_FAST_TOKENS = st.sampled_from(
    [
        "a",
        "ab-c",
        "x.y",
        "a:b",
        "a: b",
        "1",
        "01",
        "-0",
        "1.5",
        "1_0",
        "0x1",
        "1e3",
        "yes",
        "No",
        "on",
        "null",
        "~",
        "true",
        "False",
        "'q'",
        "'it''s'",
        '"d"',
        '"e\\n"',
        '"x, y"',
        "[a, b]",
        "[a,,b]",
        "[]",
        "[1, a]",
        "['a, b']",
        "[a]]",
        "{a: 1}",
        "2026-12-02T09:11:11Z",
        "2026-13-02T09:11:11Z",
        "2026-01-01",
        "&a x",
        "*a",
        "a #c",
        "%x",
        "@x",
        "`x",
        "|",
        ">",
        "!x",
        "? a",
        "-",
        "- a",
        "a\rb",
        "é",
        "x\u0085y",
        " ",
    ]
)
_FAST_KEYS = st.sampled_from(
    ["id", "tags", "kind", "on", "yes", "a-b", "_x", "1", "'q'", "links", "x y", "-a"]
)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(_FAST_KEYS, _FAST_TOKENS).map(lambda kv: f"{kv[0]}: {kv[1]}"),
            _FAST_KEYS.map(lambda k: f"{k}:"),
            st.sampled_from(
                [
                    "  - {type: supports, to: mem_1}",
                    "  - {type: yes, to: 1_0}",
                    "  - a",
                    "",
                    "# c",
                    "    - {type: x, to: y}",
                ]
            ),
        ),
        max_size=6,
    )
)
def test_the_fast_reader_never_disagrees_with_pyyaml(lines: list[str]) -> None:
    import yaml

    fm_text = "\n".join(lines) + "\n"
    fast = fm._fast_mapping(fm_text)
    if fast is None:
        return
    try:
        loaded = yaml.load(fm_text, Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, ValueError) as exc:
        raise AssertionError(f"fast path read what YAML refuses: {fm_text!r}") from exc
    assert _yaml_view(loaded or {}) == _yaml_view(fast), fm_text


def test_git_conflict_markers_in_the_frontmatter_are_named_at_their_line() -> None:
    """A text merge of two tag edits left git's markers among the keys: the error was the YAML one they
    cause ("duplicate key 'tags'", or a scanner error), which does not say what happened."""
    text = (
        "---\nid: mem_01AAAAAAAAAAAAAAAAAAAAAAAA\n<<<<<<< HEAD\ntags: [ci]\n=======\ntags: [release]\n"
        ">>>>>>> feat\n---\nRelease on Tuesdays.\n"
    )
    with pytest.raises(MemoryFormatError) as caught:
        fm.parse(text, "memories/release.md")
    assert caught.value.line == 3
    assert caught.value.reason == "git's conflict markers in the frontmatter: a merge kept both sides"
    one_sided = text.replace("tags: [release]\n", "")
    with pytest.raises(MemoryFormatError) as caught:
        fm.parse(one_sided, "memories/release.md")
    assert caught.value.line == 3
