"""Reading scenario files (YAML or JSON): validation against ``ee.scenario.v1`` and the rules a schema cannot
say (names defined once, references to defined names, one action per check or step). Every error names the
file and, where it can, the line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ee.errors import NotFound, UsageError

SUFFIXES = (".yaml", ".yml", ".json")
SEARCH_KEYS = ("expect_top", "expect_absent", "k")
PACK_KEYS = (
    "must_include",
    "must_exclude",
    "must_be_advisory",
    "must_be_authoritative",
    "expect_omitted",
    "authoritative_only",
    "profile",
    "max_tokens",
)
NAME_KEYS = (
    "expect_top",
    "expect_order",
    "expect_absent",
    "must_exclude",
    "must_be_advisory",
    "must_be_authoritative",
)
NAME_MAPS = ("expect_flags", "expect_not_flagged", "expect_body", "expect_omitted", "must_include")
Pointer = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """One validated scenario file. ``lines`` maps a pointer into ``data`` to its 1-based line."""

    id: str
    path: Path
    data: dict[str, Any]
    lines: dict[Pointer, int] = field(default_factory=dict)

    def line(self, *pointer: str | int) -> int:
        """The line of the value at ``pointer``, or of its nearest parent with a known line (0: unknown)."""
        for end in range(len(pointer), -1, -1):
            line = self.lines.get(tuple(pointer[:end]))
            if line:
                return line
        return 0

    def where(self, *pointer: str | int) -> str:
        """``file:line`` of the value at ``pointer``."""
        line = self.line(*pointer)
        return f"{self.path}:{line}" if line else str(self.path)

    @property
    def names(self) -> list[str]:
        return [m["name"] for m in all_memories(self.data)]


def all_memories(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario's memories: the set-up ones, then those history steps add, in order."""
    out = list(data.get("memories", []))
    for step in data.get("history", []):
        out.extend(step.get("add", []))
    return out


def scenario_files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise NotFound(f"no scenario folder {folder}", "pass a folder of *.yaml / *.json scenario files")
    return sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES and p.is_file())


def load_folder(folder: Path, only: tuple[str, ...] = ()) -> list[Scenario]:
    """Every scenario in ``folder`` (or the one file), validated; ``only`` selects scenarios by id."""
    scenarios: list[Scenario] = []
    seen: dict[str, Path] = {}
    for path in scenario_files(folder):
        scenario = load_file(path)
        if scenario.id in seen:
            raise UsageError(
                f"{path}: scenario id {scenario.id!r} is also used by {seen[scenario.id]}",
                "give each scenario its own id (or file name)",
            )
        seen[scenario.id] = path
        scenarios.append(scenario)
    if not scenarios:
        raise NotFound(
            f"no scenario files (*.yaml, *.yml, *.json) in {folder}", "pass the folder that holds them"
        )
    missing = [s for s in only if s not in seen]
    if missing:
        raise NotFound(
            f"no scenario {', '.join(map(repr, missing))} in {folder}",
            f"the scenarios there: {', '.join(sorted(seen))}",
        )
    return [s for s in scenarios if not only or s.id in only]


def load_file(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
            "pass a scenario file (YAML or JSON) or the folder that holds them",
        ) from None
    data, lines = _parse_json(text, path) if path.suffix == ".json" else _parse_yaml(text, path)
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}:1: a scenario is a mapping (memories, checks, …)", "see schemas/ee.scenario.v1.json"
        )
    scenario = Scenario(str(data.get("id") or path.stem), path, data, lines)
    _check_schema(scenario)
    _check_meaning(scenario)
    return scenario


# ------------------------------------------------------------------------------------------ parsing


def _yaml_loader() -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        """Safe YAML with timestamps left as text: the schema and ee read RFC 3339 strings."""

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


def _parse_yaml(text: str, path: Path) -> tuple[Any, dict[Pointer, int]]:
    import yaml

    from ee.store.frontmatter import alias_line

    alias = alias_line(text)
    if alias is not None:  # (a scenario of a cloned repository is untrusted: a few aliased lines can
        # expand to gigabytes, and the line map walks every alias again)
        raise UsageError(
            f"{path}:{alias + 1}: YAML anchors and aliases (&name / *name) are not allowed in a scenario",
            "write the value out in full, or quote it if it starts with '&' or '*'",
        )
    loader = _yaml_loader()(text)
    try:
        node = loader.get_single_node()
        lines = _line_map(node, path) if node is not None else {}
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark and mark and mark.line >= len(text.splitlines()):
            mark = exc.context_mark  # "got <stream end>": where the unclosed thing began says more
        line = f":{mark.line + 1}" if mark else ""
        raise UsageError(
            f"{path}{line}: not valid YAML: {exc.problem or exc.context}",
            "fix the YAML at that line (indentation, quoting, a missing colon)",
        ) from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}", "fix the YAML") from None
    finally:
        loader.dispose()
    return data, lines


def _parse_json(text: str, path: Path) -> tuple[Any, dict[Pointer, int]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})",
            "fix the JSON at that line",
        ) from None
    try:  # JSON is YAML: the YAML composer gives every value its line
        node = _yaml_loader()(text).get_single_node()
        return data, (_line_map(node, path) if node is not None else {})
    except Exception:  # lines are a nicety: the data is already read
        return data, {}


def _line_map(node: Any, path: Path, pointer: Pointer = ()) -> dict[Pointer, int]:
    """pointer → 1-based line of every value in a composed YAML tree; a repeated key is an error."""
    import yaml

    out: dict[Pointer, int] = {pointer: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key in seen:
                raise UsageError(
                    f"{path}:{key_node.start_mark.line + 1}: the key {key!r} is given twice",
                    "keep one of them",
                )
            seen.add(key)
            out.update(_line_map(value_node, path, (*pointer, key)))
            out[(*pointer, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            out.update(_line_map(item, path, (*pointer, index)))
    return out


# ------------------------------------------------------------------------------------------ validation


def _check_schema(scenario: Scenario) -> None:
    from ee.schemas import validator

    found = [(_pointer_of(e), e) for e in validator("ee.scenario.v1").iter_errors(scenario.data)]
    found.sort(key=lambda pair: (scenario.line(*pair[0]), list(map(str, pair[0]))))
    if found:
        pointer, first = found[0]
        shown = "/" + "/".join(str(p) for p in pointer)
        more = f" (and {len(found) - 1} more problems)" if len(found) > 1 else ""
        raise UsageError(
            f"{scenario.where(*pointer)}: {shown}: {first.message}{more}",
            "see `ee schema export ee.scenario.v1` for the scenario format",
        )


def _pointer_of(error: Any) -> Pointer:
    """Where the error is: for an unexpected key, the key itself (its line), not the mapping holding it."""
    pointer: Pointer = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        extra = sorted(k for k in error.instance if k not in schema.get("properties", {}))
        if extra:
            return (*pointer, extra[0])
    return pointer


def _fail(scenario: Scenario, pointer: Pointer, message: str, hint: str = "") -> UsageError:
    return UsageError(
        f"{scenario.where(*pointer)}: {message}", hint or "see `ee schema export ee.scenario.v1`"
    )


def _check_meaning(scenario: Scenario) -> None:
    from ee.values import KINDS

    data = scenario.data
    defined: set[str] = set()
    for pointer, memory in _memories_with_pointers(data):
        if memory["name"] in defined:
            raise _fail(scenario, (*pointer, "name"), f"the memory name {memory['name']!r} is defined twice")
        defined.add(memory["name"])
        if memory.get("kind", "fact") not in KINDS:
            raise _fail(
                scenario,
                (*pointer, "kind"),
                f"unknown kind {memory['kind']!r}",
                f"use one of: {', '.join(KINDS)}",
            )
        if "commit" in memory and not memory.get("hand_edit"):
            raise _fail(scenario, (*pointer, "commit"), "commit applies to hand_edit memories only")
    for pointer, memory in _memories_with_pointers(data):
        for i, link in enumerate(memory.get("links", [])):
            _known(scenario, defined, link["to"], (*pointer, "links", i, "to"))
    for i, step in enumerate(data.get("history", [])):
        _check_step(scenario, defined, step, i)
    _check_chronology(scenario)
    for i, event in enumerate(data.get("feedback", [])):
        _known(scenario, defined, event["memory"], ("feedback", i, "memory"))
    check_ids: set[str] = set()
    for i, check in enumerate(data["checks"]):
        if check["id"] in check_ids:
            raise _fail(scenario, ("checks", i, "id"), f"the check id {check['id']!r} is used twice")
        check_ids.add(check["id"])
        _check_check(scenario, defined, check, i)


def _memories_with_pointers(data: dict[str, Any]) -> list[tuple[Pointer, dict[str, Any]]]:
    out: list[tuple[Pointer, dict[str, Any]]] = [(("memories", i), m) for i, m in enumerate(data["memories"])]
    for s, step in enumerate(data.get("history", [])):
        out.extend((("history", s, "add", i), m) for i, m in enumerate(step.get("add", [])))
    return out


def _known(scenario: Scenario, defined: set[str], name: str, pointer: Pointer) -> None:
    if name not in defined:
        raise _fail(
            scenario,
            pointer,
            f"no memory named {name!r} in this scenario",
            f"the names: {', '.join(sorted(defined))}",
        )


def _check_chronology(scenario: Scenario) -> None:
    """History commits come after the set-up and in order: asOf finds "the last commit at or before" a time
    along the history, which only means something when commit dates grow along it."""
    from ee.store.ids import parse_time

    steps = scenario.data.get("history", [])
    if not steps:
        return
    if "date" not in scenario.data:
        raise _fail(
            scenario,
            ("history",),
            "a scenario with history needs a set-up date",
            "add e.g. date: '2025-01-01T00:00:00Z' (before the first step)",
        )
    where: Pointer = ("date",)
    previous = parse_time(scenario.data["date"])
    for i, step in enumerate(steps):
        at = parse_time(step["at"])
        if at < previous:
            raise _fail(
                scenario,
                ("history", i, "at"),
                f"this step is dated before {'/'.join(map(str, where))}",
                "list the history steps in date order, after the set-up date",
            )
        previous, where = at, ("history", i, "at")


def _check_step(scenario: Scenario, defined: set[str], step: dict[str, Any], i: int) -> None:
    actions = [a for a in ("edit", "expire", "forget", "add") if a in step]
    if len(actions) != 1:
        raise _fail(
            scenario,
            ("history", i),
            "a history step does exactly one of edit, expire, forget, add "
            f"(this one: {', '.join(actions) or 'none'})",
        )
    if actions[0] != "edit" and ("body" in step or "set" in step):
        raise _fail(scenario, ("history", i), "body and set belong to an edit step")
    if actions[0] == "edit" and not ("body" in step or "set" in step):
        raise _fail(scenario, ("history", i, "edit"), "an edit step needs body or set")
    if actions[0] != "add":
        _known(scenario, defined, step[actions[0]], ("history", i, actions[0]))


def _check_check(scenario: Scenario, defined: set[str], check: dict[str, Any], i: int) -> None:
    sources = [s for s in ("search", "context", "query") if s in check]
    if len(sources) != 1:
        raise _fail(
            scenario,
            ("checks", i),
            f"a check has exactly one of search, context, query (this one: {', '.join(sources) or 'none'})",
        )
    is_pack = "context" in check or bool(check.get("pack"))
    if "pack" in check and "query" not in check:
        raise _fail(
            scenario,
            ("checks", i, "pack"),
            "pack: true goes with a query document",
            "use context: for a plain task",
        )
    wrong = [k for k in (SEARCH_KEYS if is_pack else PACK_KEYS) if k in check]
    if wrong:
        kind = "pack" if is_pack else "search"
        raise _fail(scenario, ("checks", i, wrong[0]), f"{wrong[0]} does not apply to a {kind} check")
    for key in NAME_KEYS:
        for j, name in enumerate(check.get(key, [])):
            _known(scenario, defined, name, ("checks", i, key, j))
    for key in NAME_MAPS:
        value = check.get(key)
        for name in value if isinstance(value, dict | list) else []:
            pointer = ("checks", i, key, name) if isinstance(value, dict) else ("checks", i, key)
            _known(scenario, defined, name, pointer)
    if "query" in check:
        _check_query(scenario, defined, check["query"], i)


def _check_query(scenario: Scenario, defined: set[str], doc: dict[str, Any], i: int) -> None:
    from ee.errors import QueryError
    from ee.eval.scenarios.names import map_query_names
    from ee.query.document import validate

    try:
        validate(map_query_names(doc, {name: name for name in defined}, strict=True), "query")
    except QueryError as exc:
        pointer = exc.details.get("pointer", "")
        parts = tuple(int(p) if p.isdigit() else p for p in pointer.strip("/").split("/") if p)
        raise _fail(scenario, ("checks", i, "query", *parts), exc.message, exc.hint) from None
    except KeyError as exc:
        raise _fail(
            scenario,
            ("checks", i, "query"),
            f"no memory named {exc.args[0]!r} in this scenario",
            f"the names: {', '.join(sorted(defined))}",
        ) from None
