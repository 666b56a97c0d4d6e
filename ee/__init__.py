"""ee — the Eidetic Engine: durable, local-first, explainable memory for coding agents.

The public façade is :class:`ee.workspace.Workspace`; importing :mod:`ee` does nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Workspace", "__version__"]

if TYPE_CHECKING:
    from ee.workspace import Workspace


def __getattr__(name: str) -> Any:
    # Lazy: `import ee` must stay cheap for the CLI's warm path.
    if name == "Workspace":
        from ee.workspace import Workspace

        return Workspace
    raise AttributeError(name)
