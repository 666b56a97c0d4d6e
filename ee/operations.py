"""The library operations a front end may ask for by name: the table of them, and one way to run them.

:data:`OPERATIONS` lists the operations that travel by name (to the per-user warm server) and how
:func:`result` calls them. Their arguments are described where each command's are
(:data:`ee.commands.COMMANDS`) or, for the few that no command offers, beside them (:data:`TRAVELLING`);
:func:`check` holds what arrives to that description.

An operation is a :class:`~ee.workspace.Workspace` method with arguments that travel as JSON: the command
line runs it here (:func:`run`) or asks the per-user warm server to (:mod:`ee.serve.client`), and the server
answers with :func:`run` too, on its own ``Workspace`` of the same folder. So an answer is the same
whichever process computed it; the front end renders it.

Adding an operation is one :class:`Operation` in :data:`OPERATIONS` and one ``Workspace`` method of that
name taking those keyword arguments (``docs/architecture.md``), returning the :mod:`ee.results` type
named in ``result``. The server sends its ``to_json()`` (:func:`run`), the JSON the command line would
print, and the front end rebuilds the typed result from it (:func:`answer`); in-process, it takes the
result as it is (:func:`result`).
``query`` arguments travel as the ee.query.v1 document (:class:`ee.query.document.Query`'s ``doc``),
with ``query_notes`` beside it: what reading it changed (its ``notes``, e.g. a long text shortened),
which the answer's ``degraded`` reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal, overload

from ee.commands import COMMANDS, UNSET, Param
from ee.errors import UsageError
from ee.values import CHECKED_HOOKS

if TYPE_CHECKING:
    from ee.results import Result
    from ee.results.pack import Pack
    from ee.results.search import SearchResult
    from ee.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Operation:
    """``name``: the ``Workspace`` method; ``params``: its keyword arguments; ``result``: the type it
    returns, as ``"module:Class"`` under :mod:`ee.results` (imported on use, so a front end imports only
    the types of the answer it renders; tests/test_results.py resolves every one); ``writes``: whether it
    changes the store (only reads are served warm)."""

    name: str
    params: tuple[str, ...]
    result: str
    writes: bool = False

    @property
    def served(self) -> bool:
        return not self.writes

    def arguments(self) -> dict[str, Param]:
        """Each argument's description, by the name it travels under: its command's (:data:`COMMANDS`;
        a query document travels as the document, under its ``name``, any other argument under its
        ``keyword``), else the operation's own (:data:`TRAVELLING`)."""
        command = COMMANDS.get(self.name)
        offered = {p.name if p.document else p.keyword: p for p in command.params} if command else {}
        own = {p.name: p for p in TRAVELLING.get(self.name, ())}
        return {name: own.get(name) or offered[name] for name in self.params}

    @property
    def result_type(self) -> type[Result]:
        """The :class:`~ee.results.Result` type named by ``result``."""
        module, _, name = self.result.partition(":")
        found: type[Result] = getattr(import_module(f"ee.results.{module}"), name)
        return found


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("search", ("query", "query_notes", "min_relevance"), "search:SearchResult"),
        Operation("context", ("query", "query_notes", "quotas", "min_relevance"), "pack:Pack"),
        Operation("why", ("memory_id", "query_text", "as_of", "profile"), "why:Explanation"),
        Operation("memory_show", ("memory_id", "as_of"), "memory:MemoryView"),
        Operation(
            "memory_list",
            ("level", "kind", "tags", "limit", "agent", "trust", "since", "quarantined"),
            "memory:MemoryList",
        ),
        Operation("memory_history", ("memory_id",), "memory:MemoryHistory"),
        # a git hook's check of its staged change (ee.hooks): the hooks are its only front end
        Operation("hook_check", ("name", "paths", "added"), "hooks:HookCheck"),
    )
}


# The arguments of operations that travel but no command offers: what reading a query changed (its notes,
# beside the document), and the git hooks' check of a staged change (the hooks are its only front end).
TRAVELLING: dict[str, tuple[Param, ...]] = {
    "search": (Param("query_notes", "records", None),),
    "context": (Param("query_notes", "records", None),),
    "hook_check": (
        Param("name", "text", None, choices=CHECKED_HOOKS, required=True),
        Param("paths", "texts", None, required=True),
        Param("added", "text", None, required=True),
    ),
}


def run(ws: Workspace, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Operation ``name``'s answer as it travels: its result's ``to_json()`` (what the warm server sends)."""
    return result(ws, name, args).to_json()


def result(ws: Workspace, name: str, args: dict[str, Any]) -> Result:
    """Operation ``name`` with ``args`` (as they travel: a query as its document and its notes) on
    ``ws``: the typed result of its ``Workspace`` method."""
    operation = OPERATIONS[name]
    unknown = set(args) - set(operation.params)
    if unknown:
        raise TypeError(f"{name} takes no {', '.join(sorted(unknown))}")
    check(operation, args)
    if "query" in args:
        from ee.query.document import Query

        notes = tuple(args.get("query_notes") or ())
        args = {k: v for k, v in args.items() if k != "query_notes"} | {"query": Query(args["query"], notes)}
    typed: Result = getattr(ws, name)(**args)
    return typed


def check(operation: Operation, args: dict[str, Any]) -> None:
    """``args`` against the description of ``operation``'s arguments (:meth:`Operation.arguments`): each of
    its kind, among its allowed values, within its bounds; None is an optional argument not given (a switch
    or a list not given is false or empty, never None: a method takes it as one). The one
    check of an operation's arguments, whichever front end sent them: the command line's parser already
    holds them to the same description, but a request on the warm server's socket is parsed by nobody, and
    ``limit: -1``, ``tags: "ci"`` or ``level: "bogus"`` would answer a wrong list instead of an error."""
    described = operation.arguments()
    for name, value in args.items():
        param = described[name]
        if value is None and not param.required and param.kind not in UNSET:
            continue
        if param.choices and value not in param.choices:
            raise UsageError(
                f"{name} {value!r} is not one of: {', '.join(param.choices)}",
                "pick one of them",
            )
        if not param.holds(value):
            wanted = param.wanted()
            raise UsageError(f"{name} must be {wanted}, not {value!r}", f"give {name} as {wanted}")


@overload
def answer(name: Literal["search"], data: dict[str, Any]) -> SearchResult: ...
@overload
def answer(name: Literal["context"], data: dict[str, Any]) -> Pack: ...
@overload
def answer(name: str, data: dict[str, Any]) -> Result: ...
def answer(name: str, data: dict[str, Any]) -> Result:
    """Operation ``name``'s result rebuilt from the JSON the warm server sent (:func:`run`): the same
    result, and so the same bytes, as :func:`result` in this process."""
    return OPERATIONS[name].result_type.from_json(data)
