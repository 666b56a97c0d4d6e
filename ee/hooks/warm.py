"""The warm path of the hooks: is the user's server running, and ask it.

A hook cannot hand itself to the server whole (git's ``GIT_INDEX_FILE`` and ``GIT_DIR`` do not travel), so
it does its git work here and sends the server what it found: the staged paths and added lines, which the
server's ``hook_check`` operation (:meth:`ee.workspace.Workspace.hook_check`) checks with its warm
imports, hook table and index; or another library operation (a search, a context pack). Any failure
means "no server": the caller runs the same code in-process, which gives the same answer, only slower.

The connection is :func:`ee.serve.client.call`'s, so a hook talks only to a server of its own user (an
untrusted runtime folder or socket is reported on stderr, and the hook runs its check itself).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from _typeshed import StrPath

    from ee.results.hooks import HookCheck

ANSWER_TIMEOUT = 30.0
# A hook check is answered in a few ms, unless the server is busy: it runs one thing at a time, under the
# lock its index updates take (~1.5 s after HEAD moved, at 10k memories). Past this, the hook runs the
# check itself (~20 ms more than served), well within its time limit.
CHECK_TIMEOUT = 0.15


def server_alive() -> bool:
    """Is this user's server running (and may it be used)?"""
    from ee.serve.client import server_pid
    from ee.serve.protocol import server_disabled

    return not server_disabled() and server_pid() is not None


def call(root: StrPath, op: str, args: dict[str, Any], timeout: float = ANSWER_TIMEOUT) -> Any:
    """The server's result of operation ``op`` on the workspace at ``root``, or None (run it here)."""
    from ee.serve.client import call as served

    return served(op, os.path.realpath(root), args, timeout)


def check(root: StrPath, name: str, paths: Sequence[str], added: str) -> HookCheck | None:
    """The server's ``hook_check`` of this staged change, or None (no server, one busy past
    :data:`CHECK_TIMEOUT`, or an answer of another shape)."""
    answer = call(root, "hook_check", {"name": name, "paths": list(paths), "added": added}, CHECK_TIMEOUT)
    if not isinstance(answer, dict):
        return None
    from ee.results.hooks import HookCheck

    try:
        return HookCheck.from_json(answer)
    except TypeError:
        return None
