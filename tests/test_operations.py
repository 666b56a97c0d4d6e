"""Each command is described once, in the library (``ee.commands.COMMANDS``): its click options and its
MCP tool's input schema are both generated from that description, and the allowed values it names are
the library's own (the shipped ee.query.v1 schema, the pack profiles, the feedback signals)."""

from __future__ import annotations

from typing import Any

import click
import pytest

from ee import values
from ee.cli import cli
from ee.commands import COMMANDS, Command, Param
from ee.mcp.mapping import input_schema
from ee.schemas import load_schema


def click_command(path: tuple[str, ...]) -> click.Command:
    command: Any = cli
    for part in path:
        command = command.get_command(click.Context(command), part)
    assert isinstance(command, click.Command), path
    return command


def click_param(command: click.Command, param: Param) -> click.Parameter:
    if param.flag:
        found = [p for p in command.params if param.flag in p.opts]
    else:
        found = [p for p in command.params if isinstance(p, click.Argument)]
    assert len(found) == 1, f"`{command.name}` has no single {param.flag or 'argument'} for {param.name}"
    return found[0]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_command_line_takes_each_argument_as_described(name: str) -> None:
    described: Command = COMMANDS[name]
    command = click_command(described.path)
    for param in described.params:
        option = click_param(command, param)
        assert option.name == param.keyword
        assert option.required == param.required
        choices = getattr(option.type, "choices", None)
        assert tuple(choices or ()) == param.choices, param.name
        assert getattr(option.type, "min", None) == param.minimum, param.name
        assert getattr(option.type, "max", None) == param.maximum, param.name
        if param.flag:
            assert isinstance(option, click.Option)
            assert option.help == param.help, param.name
            assert option.is_flag == (param.kind == "switch"), param.name
            assert option.multiple == (param.kind in ("texts", "pairs")), param.name


# The only options a command of COMMANDS has beside its described arguments. Each shapes how the command
# line prints the answer (an MCP tool always answers with the ee.response.v1 envelope, and the warm server
# with the result), or loops over the operation in one process; none is an argument of the operation.
CLI_ONLY = {
    "--json": "--json/--human: the envelope, or text for a person",
    "--format": "how the answer is printed (json, jsonl, toon, markdown, …: ee.values.FORMATS)",
    "--batch": "search: one query per line of a file, one JSON line each (a loop over search; an MCP "
    "client calls search once per query)",
    "--help": "click's own",
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_an_operations_command_is_described_or_only_presentation(name: str) -> None:
    """Walks click's tree: an option or argument of the command that is neither generated from the
    command's description nor a presentation flag of :data:`CLI_ONLY` fails (describe it in COMMANDS,
    where MCP offers it too)."""
    described = COMMANDS[name]
    command = click_command(described.path)
    flags = {p.flag for p in described.params if p.flag}
    positional = [p for p in described.params if not p.flag]
    for option in command.get_params(click.Context(command)):
        if isinstance(option, click.Argument):
            assert [p.keyword for p in positional] == [option.name], f"{name}: argument {option.name}"
            continue
        opts = set(option.opts) | set(option.secondary_opts)
        if opts & flags:
            continue
        allowed = opts & set(CLI_ONLY)
        assert allowed, f"ee {' '.join(described.path)} {'/'.join(sorted(opts))} is not described in COMMANDS"
        if "--format" in allowed:
            assert tuple(getattr(option.type, "choices", ())) == values.FORMATS  # (the library's values)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_tool_schema_allows_what_the_command_line_allows(name: str) -> None:
    described = COMMANDS[name]
    command = click_command(described.path)
    properties = input_schema(described)["properties"]
    for param in described.params:
        schema = properties[param.name]
        choices = getattr(click_param(command, param).type, "choices", None)
        assert schema.get("enum") == (list(choices) if choices else None), param.name
        assert schema["description"] == param.description, param.name
        assert schema["description"], f"{name}.{param.name} tells an agent nothing"


def test_the_allowed_values_are_the_librarys() -> None:
    """The query document's schema, the pack's profiles and the query's pool sizes know the same values
    the front ends offer (one list each, in ee.values)."""
    from ee.pack.profiles import PROFILES
    from ee.query.document import POOL_SCALE

    query = load_schema("ee.query.v1")["properties"]
    assert tuple(query["query"]["properties"]["mode"]["enum"]) == values.MODES
    assert tuple(query["speed"]["enum"]) == values.SPEEDS == tuple(POOL_SCALE)
    assert tuple(query["output"]["properties"]["fields"]["enum"]) == values.FIELDS
    assert tuple(query["output"]["properties"]["profile"]["enum"]) == values.PROFILES
    assert sorted(query["output"]["properties"]["format"]["enum"]) == sorted(values.FORMATS)
    assert set(values.PROFILES) == {*PROFILES, "custom"}


def test_a_value_outside_the_described_choices_is_refused_by_both_front_ends(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from ee.errors import UsageError
    from ee.mcp.mapping import check_arguments

    with pytest.raises(UsageError, match="mode"):
        check_arguments(COMMANDS["search"], {"text": "x", "mode": "fuzzy"})
    result = CliRunner().invoke(cli, ["search", "x", "--mode", "fuzzy"])
    assert result.exit_code != 0
    assert "fuzzy" in result.output


def test_every_argument_of_an_operation_is_described() -> None:
    """Each argument an operation takes by name has its one description (its command's, or its own)."""
    from ee.operations import OPERATIONS

    for operation in OPERATIONS.values():
        assert tuple(operation.arguments()) == operation.params, operation.name


# Arguments no front end's parser would let through: each is refused by the one check of an operation's
# arguments against their description (a served request reaches it unparsed), naming what is wrong.
REFUSED = [
    ("memory_list", {"limit": -1}, "limit must be a whole number of 1 or more, not -1"),
    ("memory_list", {"limit": True}, "limit must be a whole number of 1 or more, not True"),
    ("memory_list", {"limit": 2.0}, "limit must be a whole number of 1 or more, not 2.0"),
    ("why", {"memory_id": "mem_a", "as_of": 10**400}, "as_of must be text, not 1000"),
    ("memory_list", {"tags": "ci"}, "tags must be a list of strings, not 'ci'"),
    ("memory_list", {"tags": None}, "tags must be a list of strings, not None"),
    ("memory_list", {"level": "bogus"}, "level 'bogus' is not one of: working, episodic"),
    ("memory_list", {"trust": "root"}, "trust 'root' is not one of: human_explicit"),
    ("memory_list", {"quarantined": "no"}, "quarantined must be true or false, not 'no'"),
    ("memory_show", {"memory_id": ["mem_a"]}, "memory_id must be text, not ['mem_a']"),
    ("why", {"memory_id": "mem_a", "profile": "bogus"}, "profile 'bogus' is not one of: compact"),
    ("search", {"query": {}, "min_relevance": 2}, "min_relevance must be a number between 0 and 1, not 2"),
    (
        "search",
        {"query": {}, "min_relevance": float("nan")},
        "min_relevance must be a number between 0 and 1",
    ),
    ("search", {"query": {}, "min_relevance": -(10**400)}, "min_relevance must be a number between 0 and 1"),
    ("search", {"query": "alpha"}, "query must be a JSON object, not 'alpha'"),
    ("context", {"query": {}, "quotas": ["x"]}, "quotas must be an object of settings"),
    ("context", {"query": {}, "quotas": {1: 0.5}}, "quotas must be an object of settings"),
    ("context", {"query": {}, "query_notes": "x"}, "query_notes must be a list of JSON objects, not 'x'"),
    ("hook_check", {"name": "post-merge", "paths": [], "added": ""}, "name 'post-merge' is not one of"),
    ("hook_check", {"name": "pre-commit", "paths": [1], "added": ""}, "paths must be a list of strings"),
    ("hook_check", {"name": "pre-commit", "paths": [], "added": None}, "added must be text, not None"),
]


@pytest.mark.parametrize(("op", "args", "message"), REFUSED)
def test_an_argument_outside_its_description_is_a_usage_error(
    op: str, args: dict[str, Any], message: str
) -> None:
    from ee.errors import UsageError
    from ee.operations import OPERATIONS, check

    with pytest.raises(UsageError) as refused:
        check(OPERATIONS[op], args)
    assert refused.value.message.startswith(message)
    assert refused.value.hint


def test_the_arguments_a_command_sends_pass_the_check(ws: Any) -> None:
    """What the command lines send (None for an option not given) passes; a refused one never reaches the
    ``Workspace`` method, in this process as on the server (:func:`ee.operations.result` checks first)."""
    from ee.errors import UsageError
    from ee.operations import OPERATIONS, check, result
    from ee.query.document import from_arguments

    sent = {
        "search": {"query": from_arguments("alpha").doc, "query_notes": [], "min_relevance": None},
        "context": {
            "query": from_arguments("alpha").doc,
            "query_notes": [],
            "quotas": None,
            "min_relevance": 0,
        },
        "why": {"memory_id": "mem_a", "query_text": None, "as_of": None, "profile": None},
        "memory_list": {"tags": [], "limit": None, "agent": None, "trust": None, "quarantined": False},
        "hook_check": {"name": "pre-commit", "paths": ["a.py"], "added": ""},
    }
    for op, args in sent.items():
        check(OPERATIONS[op], args)
    assert result(ws, "memory_list", {"limit": 1}).to_json()["count"] == 0
    with pytest.raises(UsageError, match="limit must be a whole number"):
        result(ws, "memory_list", {"limit": 0})


def test_the_architecture_page_lists_every_operation() -> None:
    """docs/architecture.md's table of operations is COMMANDS and OPERATIONS, row for row."""
    from pathlib import Path

    from ee.operations import OPERATIONS

    page = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## The operations", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| `")
    ]
    expected = [
        [
            f"`{command.name}`",
            f"`ee {' '.join(command.path)}`",
            "yes" if command.read_only else "no",
            "yes" if command.name in OPERATIONS else "no",
        ]
        for command in COMMANDS.values()
    ]
    assert rows == expected
