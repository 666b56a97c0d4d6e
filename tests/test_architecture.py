"""The layers of DESIGN.md §2, checked over every module of ee: an import (at run time, lazy ones included;
``if TYPE_CHECKING:`` blocks are annotations only) goes to the importer's own unit or to a lower layer.

A unit is a top-level module or package of ``ee`` (``ee.why``, ``ee.index``), or one module of a package that
spans layers (``ee.git.runner``). Every unit must be in :data:`LAYERS`: a new module takes its place in the
order on purpose, not by accident.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EE = Path(__file__).resolve().parents[1] / "ee"

# Lowest first. A unit may import units of its own layer or below. A package that groups one domain
# across layers (git, store, serve) places each of its modules on its own: ``git.runner`` sits low,
# ``git.sync`` high.
LAYERS: list[set[str]] = [
    {"errors", "model", "_crash", "git", "store", "curate", "curate.model"},  # (git, store, curate: __init__)
    {"store.ids", "config", "schemas", "git.runner", "git.progress", "install"},
    {"git.conflict"},
    # pure rules (trust, feedback math, secrets, the injection guard), and the frontmatter reader they apply
    # to a file (a secret in an id is a malformed file)
    {"policy", "store.frontmatter", "curate.similar"},
    # git.repo: the one commit path masks every message it writes with the secret policy
    {
        "store.files",
        "git.repo",
        "git.merge",
        "store.feedback",
        "git.memory_branch",
        "discovery",
        "curate.decisions",
        "curate.citations",
        "curate.state",
        "curate.marks",
        "curate.usage",
    },
    {"index", "serve.sentinel"},
    {"query"},
    {"pack"},
    {"sessions"},  # transcripts → evidence; evidence in search answers and packs
    {"render"},  # reads packs and results, never files
    {"store.recovery", "git.history"},
    {"why", "feedback"},  # what the façade answers ee why and ee outcome with
    {"workspace"},  # the façade the commands call
    {"store.transfer", "git.sync", "doctor", "curate.queue", "curate.scan", "curate.docs", "curate.intake"},
    {"eval"},
    # Entry points: the command line, the MCP server, git hooks, the warm server and its client.
    {"cli", "mcp", "hooks", "serve", "__main__", "ee", "status"},  # (status: an overview of them all)
]
LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}


SPLIT = {"git", "store", "serve", "curate"}  # packages whose modules are placed one by one


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in SPLIT and f"{parts[1]}.{parts[2]}" in LAYER:
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else "ee"


def _module_of(path: Path) -> str:
    parts = ("ee", *path.relative_to(EE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.AST) -> list[tuple[str, int]]:
    """(module, line) of every ``ee`` import outside ``if TYPE_CHECKING:`` blocks."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            # `from ee.store import frontmatter` imports the unit store.frontmatter, not only ee.store
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if _unit(name) != _unit(node.module):
                    found.append((name, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [(name, line) for name, line in found if name == "ee" or name.startswith("ee.")]


MODULES = sorted(EE.rglob("*.py"))


def test_every_unit_has_a_layer() -> None:
    units = {_unit(_module_of(path)) for path in MODULES}
    assert units - LAYER.keys() == set(), "place each new module in LAYERS"
    assert LAYER.keys() - units == set(), "drop the units that no longer exist from LAYERS"


def _upward(unit: str, source: str) -> list[tuple[str, int]]:
    """The imports of ``source`` (a module of ``unit``) that go up the layers."""
    return [
        (name, line)
        for name, line in _runtime_imports(ast.parse(source))
        if name != "ee" and _unit(name) != unit and LAYER.get(_unit(name), -1) > LAYER[unit]
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(EE)))
def test_imports_go_down_the_layers(path: Path) -> None:
    unit = _unit(_module_of(path))
    assert _upward(unit, path.read_text(encoding="utf-8")) == []


CLICK_USERS = {"cli", "mcp", "serve"}  # the command line, and what maps or serves its commands


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(EE)))
def test_only_the_entry_points_import_click(path: Path) -> None:
    """The library parses no argv: one command-line parser, at the edge (DESIGN.md §2)."""
    if _unit(_module_of(path)).split(".")[0] in CLICK_USERS:
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in names if name.split(".")[0] == "click"}


def test_the_check_catches_an_upward_import() -> None:
    """Not vacuous: the pack importing a renderer (as it once did) is caught, lazily too, while an
    annotation-only import and a downward one are not."""
    source = (
        "from ee.index import view\n"
        "if TYPE_CHECKING:\n    from ee.workspace import Workspace\n"
        "def f():\n    from ee.render.pack_text import item_text\n"
    )
    assert _upward("pack", source) == [("ee.render.pack_text", 5)]
