"""The layers of DESIGN.md §2, checked over every module of ee: an import (at run time, lazy ones included;
``if TYPE_CHECKING:`` blocks are annotations only) goes to the importer's own unit or to a lower layer.

A unit is a top-level module or package of ``ee`` (``ee.index``), or one module of a package that
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
    # (git, store, curate, serve: their __init__ only)
    {
        "errors",
        "model",
        "values",
        "text",
        "results",
        "_crash",
        "git",
        "store",
        "curate",
        "curate.model",
        "serve",
    },
    {
        "store.ids",
        "config",
        "schemas",
        "git.runner",
        "git.progress",
        "install",
        "commands",
    },  # (commands: the arguments each command takes)
    {"git.conflict", "spawn"},  # spawn: the one background launcher
    # pure rules (trust, feedback math, secrets, the injection guard), and the frontmatter reader they apply
    # to a file (a secret in an id is a malformed file)
    {"policy", "store.frontmatter", "store.frontmatter_checks", "curate.similar"},
    # git.repo: the one commit path masks every message it writes with the secret policy
    {
        "store.files",
        "store.fields",
        "store.walk",
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
    {"index"},
    {"query", "curate.near"},  # (curate.near: near-duplicates from the index's vectors, for any writer)
    {"pack"},
    {"sessions"},  # transcripts → evidence; evidence in search answers and packs
    {"render"},  # reads packs and results, never files
    # The use cases, one module each (ee/ops/<verb>.py), bound by the façade: they take a Workspace (as an
    # annotation only) and never import it, so nothing below the façade calls back up into it.
    {
        "ops",
        "ops.init",
        "ops.recovery",
        "ops.history",
        "ops.why",
        "ops.feedback",
        "ops.transfer",
        "ops.sync",
        "ops.sync_session",
        "ops.resolve",
        "ops.doctor",
        "ops.risks",
    },
    {"workspace", "operations"},  # the façade the commands call, and its operations by name
    {"curate.queue", "curate.scan", "curate.docs", "curate.intake"},
    {"eval"},
    # How a front end reaches the user's warm server: its place, trust checks and frames, and the client.
    {"serve.protocol", "serve.client"},
    # Entry points: the command line, the MCP server, git hooks, the warm server.
    {
        "cli",
        "mcp",
        "hooks",
        "serve.server",
        "serve.watch",
        "__main__",
        "ee",
        "status",
    },  # (status: an overview)
]
LAYER = {unit: level for level, units in enumerate(LAYERS) for unit in units}


SPLIT = {"git", "store", "serve", "curate", "ops"}  # packages whose modules are placed one by one


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


CLICK_USERS = {"cli"}  # the command line (MCP's schemas come from ee.commands, not from click)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(EE)))
def test_only_the_entry_points_import_click(path: Path) -> None:
    """The library parses no argv: one command-line parser, at the edge (DESIGN.md §2)."""
    if _unit(_module_of(path)).split(".")[0] in CLICK_USERS:
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in names if name.split(".")[0] == "click"}


def _same_layer_graph() -> dict[str, set[str]]:
    """unit → the units of its own layer it imports (at run time)."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        unit = _unit(_module_of(path))
        for name, _line in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            other = _unit(name)
            if name != "ee" and other != unit and LAYER.get(other) == LAYER[unit]:
                graph.setdefault(unit, set()).add(other)
    return graph


def _cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Every cycle of ``graph``, each as its units sorted (depth-first from every unit)."""
    found: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                found.add(tuple(sorted(path)))
            elif nxt not in path and nxt > start:  # (each cycle once, from its smallest unit)
                walk(start, nxt, [*path, nxt])

    for unit in sorted(graph):
        walk(unit, unit, [unit])
    return found


# The cycle left. policy <-> store.frontmatter: the frontmatter reader refuses a secret in an id
# (policy.secrets.find_secrets) and the secret policy derives a masked id from a path
# (store.frontmatter.id_from_path, fit_id); one of the two belongs in the other.
KNOWN_CYCLES = {("policy", "store.frontmatter")}


def test_no_import_cycle_within_a_layer() -> None:
    """Units of one layer may import each other, but never in a circle: each can still be read (and
    tested) with the ones it uses, not with the whole layer."""
    assert _cycles(_same_layer_graph()) - KNOWN_CYCLES == set()


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
    assert _cycles({"a": {"b"}, "b": set()}) == set()


def _private_imports(module: str, source: str) -> list[tuple[str, int]]:
    """``from ee.X import _name`` of ``source`` where ee.X is another package than ``module``'s."""
    package = module.split(".")[1] if "." in module else ""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ee."):
            if node.module.split(".")[1] == package:
                continue
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names if a.name.startswith("_")]
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(EE)))
def test_no_private_name_is_imported_from_another_package(path: Path) -> None:
    assert _private_imports(_module_of(path), path.read_text(encoding="utf-8")) == []


def test_the_private_name_check_catches_one() -> None:
    source = "from ee.index.view import _load\nfrom ee.query.engine import _own\nfrom ee.index import view\n"
    assert _private_imports("ee.query.asof", source) == [("ee.index.view._load", 1)]


def test_the_check_catches_an_upward_import() -> None:
    """Not vacuous: the pack importing a renderer (as it once did) is caught, lazily too, while an
    annotation-only import and a downward one are not."""
    source = (
        "from ee.index import view\n"
        "if TYPE_CHECKING:\n    from ee.workspace import Workspace\n"
        "def f():\n    from ee.render.pack_text import item_text\n"
    )
    assert _upward("pack", source) == [("ee.render.pack_text", 5)]
