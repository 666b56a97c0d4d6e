"""What a tool (a command of :data:`ee.commands.COMMANDS`) means over MCP: its input schema, the check
of a call's arguments, and the equivalent command line the manifest shows.

Types, choices, bounds and defaults come from the library's description of the command, the one the click
options are generated from too (:mod:`ee.cli.options`), so a tool cannot drift from the command it
mirrors; the query document's schema is the shipped ``ee.query.v1``, embedded.
"""

from __future__ import annotations

from typing import Any, Literal

from ee.commands import Command, Param
from ee.errors import UsageError
from ee.mcp.tools import TOOLS

# How one argument appears on the equivalent command line (the manifest's "cli" entry):
#   argument  the command's positional argument (placed after ``--``, so a leading '-' stays text;
#             a list, each item in turn)
#   option    ``--flag VALUE``
#   switch    ``--flag`` when true, nothing when false
#   repeat    ``--flag A --flag B`` for a list
#   comma     ``--flag A,B`` for a list
#   pairs     ``--flag KEY=VALUE`` per entry of an object
#   stdin     ``--flag -`` with the value as JSON on standard input
Style = Literal["argument", "option", "switch", "repeat", "comma", "pairs", "stdin"]
STYLES: dict[str, Style] = {
    "switch": "switch",
    "texts": "repeat",
    "tags": "comma",
    "pairs": "pairs",
    "document": "stdin",
    "records": "stdin",
}

# The JSON Schema of each kind of argument (ee.commands.Kind); a text with allowed values is any string
# of them, one without is a non-empty string.
SCHEMAS: dict[str, dict[str, Any]] = {
    "text": {"type": "string", "minLength": 1},
    "words": {"type": "string", "minLength": 1},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "switch": {"type": "boolean"},
    "texts": {"type": "array", "items": {"type": "string", "minLength": 1}},
    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[^,]+$"}},
    "pairs": {"type": "object", "additionalProperties": {"type": ["number", "string", "boolean"]}},
    "records": {"type": "array", "items": {"type": "object"}, "minItems": 1},
}


def style(param: Param) -> Style:
    return "argument" if not param.flag else STYLES.get(param.kind, "option")


def available_tools() -> list[Command]:
    return list(TOOLS)


def param_schema(param: Param) -> dict[str, Any]:
    """The JSON Schema of one argument (without its description): its kind, allowed values, bounds, and a
    default worth telling."""
    out: dict[str, Any] = {"type": "string"} if param.choices else dict(SCHEMAS[param.kind])
    if param.choices:
        out["enum"] = list(param.choices)
    if param.minimum is not None:
        out["minimum"] = param.minimum
    if param.maximum is not None:
        out["maximum"] = param.maximum
    if param.required and out.get("type") == "array":
        out["minItems"] = 1  # (as the command line needs one at least)
    if style(param) in ("option", "argument") and param.default is not None:
        out["default"] = param.default
    return out


def embedded(schema_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A shipped schema split into its body and its ``$defs`` (which go to the input schema's root, where
    the body's ``#/$defs/…`` references then resolve)."""
    from ee.schemas import load_schema

    schema = dict(load_schema(schema_id))
    defs = schema.pop("$defs", {})
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    return schema, defs


def input_schema(tool: Command) -> dict[str, Any]:
    """The tool's JSON Schema (an object at the root, as MCP requires; no top-level combinators)."""
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for param in tool.params:
        if param.document:
            schema, defs = embedded(param.document)
        else:
            schema = param_schema(param)
        properties[param.name] = schema | {"description": param.description}
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [param.name for param in tool.params if param.required]
    if required:
        out["required"] = required
    if defs:
        out["$defs"] = defs
    return out


def cli_mapping(tool: Command) -> dict[str, Any]:
    """How the tool becomes a command line, for the manifest."""
    return {
        "command": ["ee", *tool.path],
        "arguments": {
            p.name: {"style": style(p), **({"flag": p.flag} if p.flag else {})} for p in tool.params
        },
        "appends": ["--json"],
    }


def manifest_entry(tool: Command) -> dict[str, Any]:
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": input_schema(tool),
        "annotations": tool_annotations(tool),
        "cli": cli_mapping(tool),
    }


def tool_annotations(tool: Command) -> dict[str, Any]:
    if tool.read_only:
        return {"title": tool.title, "readOnlyHint": True, "openWorldHint": False}
    return {
        "title": tool.title,
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    }


# ------------------------------------------------------------------------------------ arguments


def check_arguments(tool: Command, arguments: dict[str, Any]) -> None:
    """Arguments against the tool's input schema; the first violation as a usage error. (The schema is the
    tool's arguments as described in :data:`ee.commands.COMMANDS`, the description
    :func:`ee.operations.check` holds an operation's arguments to when it travels by name.)"""
    import jsonschema

    from ee.schemas import unwritable

    bad = unwritable(arguments)
    if bad is not None:  # "\udcff" (no file, commit or tokenizer takes it), NaN (no strict JSON answer)
        where = bad[0].strip("/").replace("/", ".") or "arguments"
        raise UsageError(
            f"{tool.name}: {where}: {bad[1]}",
            "send UTF-8 text and finite numbers",
            {"tool": tool.name, "path": where, "violations": 1},
        )
    schema = input_schema(tool)
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        where = ".".join(str(part) for part in first.absolute_path) or "arguments"
        repair = f"see the input schema of {tool.name} (`ee mcp manifest --json`)"
        text = next((p.name for p in tool.params if not p.flag), None)
        if where.split(".")[0] == "query" and any(p.name == "query" and p.document for p in tool.params):
            # (query is a whole ee.query.v1 document: the plain words an agent means go in the text field)
            repair = f'put the words in {text}: {{"{text}": "…"}}, or send query as an ee.query.v1 document'
        raise UsageError(
            f"{tool.name}: {where}: {first.message}",
            repair,
            {"tool": tool.name, "path": where, "violations": len(errors)},
        )
