"""ee — the Eidetic Engine: durable, local-first, explainable memory for coding agents.

The public façade is :class:`ee.workspace.Workspace`; importing :mod:`ee` does nothing else.
"""

from __future__ import annotations

# Not typing's TYPE_CHECKING: every served command imports this package and ee.serve.client only, and typing
# (with re and enum) would cost it ~8 ms of its ~35 (measured: `import typing` in a fresh process).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
