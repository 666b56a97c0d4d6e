"""How ee is installed: its distribution name, the command that runs it, and what else claims ``ee``.

ee's import package is ``ee``, and so is Google Earth Engine's (the ``earthengine-api`` distribution): two
packages of one name cannot share an environment. An isolated tool install (``pipx``, ``uv tool``) gives
ee an environment of its own; :func:`foreign_ee_packages` finds the clash when they do share one.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

DISTRIBUTION = "eidetic-engine"  # on the package index (the name ``ee`` is somebody else's)
REINSTALL = f"pipx install --force {DISTRIBUTION}  (or: pip install --force-reinstall {DISTRIBUTION})"
INSTALL_MCP = f"pipx install --force '{DISTRIBUTION}[mcp]'  (or: pip install '{DISTRIBUTION}[mcp]')"
TOOL_INSTALL = f"pipx install '{DISTRIBUTION}[mcp]'  (or: uv tool install '{DISTRIBUTION}[mcp]')"


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def foreign_ee_packages() -> list[dict[str, Any]]:
    """Every other distribution on ``sys.path`` that installs a top-level ``ee`` package: its name, where
    its ``ee`` is, and whether that ``ee`` is the one Python imports (then ee itself is broken or mixed)."""
    from importlib import metadata

    import ee

    ours = Path(ee.__file__).resolve().parent
    out = []
    for name in sorted(set(metadata.packages_distributions().get("ee", []))):
        if _canonical(name) == DISTRIBUTION:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:  # pragma: no cover - listed a moment ago
            continue
        folder = Path(str(dist.locate_file("ee"))).resolve()
        out.append({"distribution": name, "path": str(folder), "imported": folder == ours})
    return out


def ee_command() -> list[str]:
    """The command that runs this ee, absolute: an agent harness or an MCP client starts it with a PATH
    of its own, where a bare ``ee`` may be missing or another program. The running ``ee`` script when this
    process is one, else the ``ee`` script installed beside this Python, else this Python with ``-m ee``."""
    script = sys.argv[0] if sys.argv else ""
    if os.path.basename(script) == "ee" and os.path.isfile(script):
        return [os.path.abspath(script)]
    beside = Path(sys.executable).parent / "ee"
    if beside.is_file():
        return [str(beside)]
    return [sys.executable, "-P", "-m", "ee"]  # -P: never an ee/ folder of the repository it runs in


def ee_shell_command() -> str:
    """:func:`ee_command` as shell words."""
    return shlex.join(ee_command())
