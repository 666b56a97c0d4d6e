"""Click options and arguments generated from the library's description of each command
(:data:`ee.commands.COMMANDS`): the type, allowed values, bounds, default and help of an argument are
declared there once, and the MCP tools' input schemas come from the same rows (:mod:`ee.mcp.mapping`).

A command takes each declared argument by name, in the order its ``--help`` shows them::

    @click.command("search")
    @declared("search", "text")
    @declared("search", "mode")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ee.commands import COMMANDS, Param

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def declared(command: str, name: str) -> Decorator:
    """The click argument or option of argument ``name`` of ``command``, as the library describes it."""
    return click_parameter(COMMANDS[command].param(name))


def click_parameter(param: Param) -> Decorator:
    if not param.flag:
        return click.argument(
            param.keyword, required=param.required, nargs=-1 if param.kind in ("words", "texts") else 1
        )
    settings: dict[str, Any] = {"help": param.help, "required": param.required}
    if param.metavar:
        settings["metavar"] = param.metavar
    if param.default is not None:
        settings["default"] = param.default
        settings["show_default"] = param.show_default
    if param.kind == "switch":
        settings["is_flag"] = True
    elif param.kind in ("texts", "pairs"):
        settings["multiple"] = True
    else:
        settings["type"] = click_type(param)
    return click.option(param.flag, param.keyword, **settings)


def click_type(param: Param) -> click.ParamType | None:
    """The click type that enforces the argument's allowed values (None: any text)."""
    if param.choices:
        return click.Choice(param.choices)
    if param.kind == "integer":
        return click.IntRange(min=_int(param.minimum), max=_int(param.maximum))
    if param.kind == "number":
        return click.FloatRange(min=param.minimum, max=param.maximum)
    if param.kind == "document":
        return click.Path(allow_dash=True)
    if param.kind == "records":
        return click.Path(dir_okay=False, allow_dash=True)
    return None


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
