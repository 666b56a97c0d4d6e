"""A SHA-1 constructor for a process that hashes a few small things (git object ids).

``hashlib`` loads OpenSSL's libcrypto on import (2-6 ms of a fresh process, measured on ``ee
remember``); CPython's own implementations need nothing loaded but are slower (SHA-1 ~5 ms per MB
against OpenSSL's ~0.5). So: OpenSSL's when this process already loaded hashlib (a query, a server, a
bulk import), else CPython's. For bulk hashing import hashlib directly.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from typing import Any


def sha1() -> Any:
    """A SHA-1 constructor (``sha1(data)``): OpenSSL's if hashlib is loaded, else CPython's."""
    if "hashlib" not in sys.modules:
        try:
            from _sha1 import sha1 as builtin

            return builtin
        except ImportError:  # pragma: no cover - a Python built without it
            pass
    import hashlib

    return hashlib.sha1
