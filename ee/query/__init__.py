"""Queries: an ee.query.v1 document → explained hits, over the working tree or a past commit."""

from __future__ import annotations

import math
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


def min_relevance(ws: Workspace, given: float | None = None) -> float:
    """The relevance floor: ``given`` (``--min-relevance``), else ``[query] min_relevance`` (0: off).

    Raises UsageError when ``given`` is not a number in [0, 1]. NaN included: it passes a range check
    written as two comparisons (click's among them) and would then keep every hit, a floor turned off
    by a typo (the config's value is checked where the config is read)."""
    if given is None:
        return float(ws.config.get("query.min_relevance"))
    from ee.errors import UsageError

    try:
        floor = float(given)
    except (TypeError, ValueError):
        floor = math.nan
    if not 0.0 <= floor <= 1.0:
        raise UsageError(
            f"min_relevance {given!r} is not a number between 0 and 1",
            "pass --min-relevance a number between 0 (keep everything) and 1, e.g. 0.8",
        )
    return floor


def search(
    ws: Workspace,
    query: Query,
    floor: float | None = None,
    views: dict[str | None, tuple[IndexView, Any]] | None = None,
) -> dict[str, Any]:
    """Run ``query``; the result is the ``data`` of the response, with its ``degraded`` list inside.
    ``floor`` overrides the workspace's relevance floor (``--min-relevance``). ``views`` keeps the views
    opened so far by their asOf, for a batch of queries: the store's freshness is checked once per batch,
    not once per query."""
    from ee.query.engine import run_search

    as_of = query.get("asOf")
    if views is None:
        view, reference = open_view(ws, as_of)
    else:
        if as_of not in views:
            views[as_of] = open_view(ws, as_of)
        view, reference = views[as_of]
    return run_search(
        view, query, reference, bool(ws.config.get("redaction.allow_bypass")), min_relevance(ws, floor)
    )
