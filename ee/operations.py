"""The library operations a front end may ask for by name: one description each, one way to run them.

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
from typing import TYPE_CHECKING, Any, Literal, overload

from ee.results import Explanation, Pack, Result, SearchResult

if TYPE_CHECKING:
    from ee.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Operation:
    """``name``: the ``Workspace`` method; ``params``: its keyword arguments; ``result``: the type it
    returns; ``writes``: whether it changes the store (only reads are served warm)."""

    name: str
    params: tuple[str, ...]
    result: type[Result]
    writes: bool = False

    @property
    def served(self) -> bool:
        return not self.writes


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation("search", ("query", "query_notes", "min_relevance"), SearchResult),
        Operation("context", ("query", "query_notes", "quotas", "min_relevance"), Pack),
        Operation("why", ("memory_id", "query_text", "as_of", "profile"), Explanation),
    )
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
    if "query" in args:
        from ee.query.document import Query

        notes = tuple(args.get("query_notes") or ())
        args = {k: v for k, v in args.items() if k != "query_notes"} | {"query": Query(args["query"], notes)}
    typed: Result = getattr(ws, name)(**args)
    return typed


@overload
def answer(name: Literal["search"], data: dict[str, Any]) -> SearchResult: ...
@overload
def answer(name: Literal["context"], data: dict[str, Any]) -> Pack: ...
@overload
def answer(name: str, data: dict[str, Any]) -> Result: ...
def answer(name: str, data: dict[str, Any]) -> Result:
    """Operation ``name``'s result rebuilt from the JSON the warm server sent (:func:`run`): the same
    result, and so the same bytes, as :func:`result` in this process."""
    return OPERATIONS[name].result.from_json(data)
