"""What a row of :data:`ee.mcp.tools.TOOLS` means: its input schema, the check of a call's arguments, and
the equivalent command line the manifest shows.

Choices, defaults and ranges come from the click options themselves, so a tool cannot drift from the
command it mirrors; the query document's schema is the shipped ``ee.query.v1``, embedded.
"""

from __future__ import annotations

from typing import Any

import click

from ee.errors import UsageError
from ee.mcp.tools import TOOLS, Param, Tool


def click_command(tool: Tool) -> click.Command | None:
    """The click command a tool mirrors, or None when it is not installed in this build."""
    from ee.cli import cli

    command: click.Command | None = cli
    for part in tool.command:
        if not isinstance(command, click.Group):
            return None
        command = command.get_command(click.Context(command), part)
    return command


def available_tools() -> list[Tool]:
    return [tool for tool in TOOLS if click_command(tool) is not None]


def click_param(command: click.Command, param: Param) -> click.Parameter:
    for candidate in command.params:
        if param.flag and param.flag in getattr(candidate, "opts", []):
            return candidate
        if not param.flag and isinstance(candidate, click.Argument):
            return candidate
    raise LookupError(f"`{command.name}` has no {param.flag or 'argument'} for tool parameter {param.name}")


def from_click(option: click.Parameter, param: Param) -> dict[str, Any]:
    """What the click option knows: choices, numeric bounds, a default worth telling."""
    out: dict[str, Any] = {}
    kind = option.type
    if isinstance(kind, click.Choice):
        out["enum"] = list(kind.choices)
    if isinstance(kind, click.IntRange | click.FloatRange):
        if kind.min is not None:
            out["minimum"] = kind.min
        if kind.max is not None:
            out["maximum"] = kind.max
    default = option.default
    # a plain value only (click ≥ 8.2 marks "no default" with a sentinel object)
    if param.style in ("option", "argument") and isinstance(default, str | int | float):
        out["default"] = default
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


def input_schema(tool: Tool) -> dict[str, Any]:
    """The tool's JSON Schema (an object at the root, as MCP requires; no top-level combinators)."""
    command = click_command(tool)
    properties: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for param in tool.params:
        schema = dict(param.schema)
        if param.document:
            schema, defs = embedded(param.document)
        elif command is not None:
            schema.update(from_click(click_param(command, param), param))
        properties[param.name] = schema | {"description": param.description}
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [param.name for param in tool.params if param.required]
    if required:
        out["required"] = required
    if defs:
        out["$defs"] = defs
    return out


def cli_mapping(tool: Tool) -> dict[str, Any]:
    """How the tool becomes a command line, for the manifest."""
    return {
        "command": ["ee", *tool.command],
        "arguments": {
            p.name: {"style": p.style, **({"flag": p.flag} if p.flag else {})} for p in tool.params
        },
        "appends": ["--json"],
    }


def manifest_entry(tool: Tool) -> dict[str, Any]:
    return {
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": input_schema(tool),
        "annotations": tool_annotations(tool),
        "cli": cli_mapping(tool),
    }


def tool_annotations(tool: Tool) -> dict[str, Any]:
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


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """Arguments against the tool's input schema; the first violation as a usage error."""
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
        text = next((p.name for p in tool.params if p.style == "argument"), None)
        if where.split(".")[0] == "query" and any(p.name == "query" and p.document for p in tool.params):
            # (query is a whole ee.query.v1 document: the plain words an agent means go in the text field)
            repair = f'put the words in {text}: {{"{text}": "…"}}, or send query as an ee.query.v1 document'
        raise UsageError(
            f"{tool.name}: {where}: {first.message}",
            repair,
            {"tool": tool.name, "path": where, "violations": len(errors)},
        )
