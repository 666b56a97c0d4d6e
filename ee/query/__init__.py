"""Queries: an ee.query.v1 document → explained hits, over the working tree or a past commit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ee.index.view import IndexView
    from ee.query.document import Query
    from ee.workspace import Workspace


def open_view(ws: Workspace, as_of: str | None) -> tuple[IndexView, Any]:
    """The index view a query runs over, and the reference time for validity (None → now)."""
    if not as_of:
        from ee.index.view import open_index

        return open_index(ws), None
    from ee.query.asof import open_as_of, resolve

    commit, reference = resolve(ws, as_of)
    return open_as_of(ws, commit), reference


def search(ws: Workspace, query: Query) -> dict[str, Any]:
    """Run ``query``; the result is the ``data`` of the response, with its ``degraded`` list inside."""
    from ee.query.engine import run_search

    view, reference = open_view(ws, query.get("asOf"))
    return run_search(view, query, reference, bool(ws.config.get("redaction.allow_bypass")))
