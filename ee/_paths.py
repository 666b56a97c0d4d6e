"""pathlib, imported without urllib.parse.

Python 3.11's pathlib imports ``urllib.parse`` (which imports ``ipaddress``) at its top for one function,
``quote_from_bytes``, that only ``PurePath.as_uri`` calls: ~3.5 ms of every fresh ``ee`` process (a cold
``ee remember`` is ~55). ee never calls ``as_uri``. So the CLI imports pathlib once, here, with a
stand-in ``urllib.parse`` in ``sys.modules`` for the length of that import only: pathlib keeps a
function that imports the real ``urllib.parse`` when first called and hands its arguments on. Anything
importing ``urllib.parse`` afterwards gets the real module. Nothing is done when pathlib or
``urllib.parse`` is already imported, or on a Python whose pathlib does not import it at its top.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from typing import Any


def _quote_from_bytes(*args: Any, **kwargs: Any) -> str:
    """``urllib.parse.quote_from_bytes``, imported on first call (``PurePath.as_uri``)."""
    from urllib.parse import quote_from_bytes

    return quote_from_bytes(*args, **kwargs)


def _import_pathlib() -> None:
    if "pathlib" in sys.modules or "urllib.parse" in sys.modules or sys.version_info[:2] != (3, 11):
        return
    import types

    stand_in = types.ModuleType("urllib.parse", "ee's stand-in while pathlib is imported (see ee._paths)")
    stand_in.quote_from_bytes = _quote_from_bytes  # type: ignore[attr-defined]
    sys.modules["urllib.parse"] = stand_in
    try:
        import pathlib  # noqa: F401
    finally:
        if sys.modules.get("urllib.parse") is stand_in:
            del sys.modules["urllib.parse"]
        package = sys.modules.get("urllib")
        if package is not None and getattr(package, "parse", None) is stand_in:
            del package.parse


_import_pathlib()
