"""How a short-lived read-only process (``ee search``, ``ee context``… and a git hook) runs and ends.

A query process builds a few hundred thousand long-lived objects (10k memory records, the index's state,
the model) and then ends. Two things cost it CPU for nothing (measured on a 10k-memory store, fresh
``ee search`` / ``ee context``): collections of the cyclic garbage collector that its allocations
trigger (~20 ms; at 100k memories one full collection halfway through a query cost ~0.5 s), and the
interpreter's teardown freeing it all after the answer was written (~20-40 ms). So :func:`run_and_exit`
runs without the collector and ends the process with ``os._exit`` once the output is flushed.

Only for processes that leave nothing to finalizers: a read-only command (its index update, if any, is
written, renamed and its lock released before the query runs), the client of any command the warm
server answered (it only printed the answer) or a git hook (its message file closed where it is written,
a post-* job started detached). Writes run in-process return normally.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Callable
from typing import NoReturn


def run_and_exit(run: Callable[[], int]) -> NoReturn:
    """``run()`` with the cyclic collector off, then the process ends with its exit code."""
    gc.disable()
    code = run()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nobody is reading any more
            stream.flush()
    os._exit(code)
