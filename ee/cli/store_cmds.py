"""Commands over the store as a whole: init, import, export, doctor, schema (remember: remember_cmds)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ee.cli import Output, json_option, workspace
from ee.cli.options import declared
from ee.errors import DoctorFound, NotFound, StorageError, UsageError
from ee.render import dumps
from ee.render.text import plural, problem_lines


@click.command("init")
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option(
    "--branch",
    metavar="NAME",
    default=None,
    help="Keep memories/ as a git worktree of branch NAME (e.g. ee/memories), apart from the code "
    "branches (default: memories are committed on the code branch checked out).",
)
@json_option
@click.pass_context
def init_cmd(ctx: click.Context, path: str | None, branch: str | None, as_json: bool | None) -> None:
    """Create or adopt a git repository at PATH and make it an ee workspace (safe to run again).

    PATH defaults to the --workspace given before the command, else $EE_WORKSPACE, else the current
    folder.

    Example: ee init   (or, memories on their own branch: ee init --branch ee/memories)
    """
    import os

    from ee.workspace import Workspace

    given = ctx.find_root().params.get("workspace")
    if path is not None and given is not None and Path(path).resolve() != Path(given).resolve():
        raise UsageError(
            f"ee init {path} names another folder than --workspace {given}",
            "give the folder once: ee init PATH, or ee --workspace PATH init",
        )
    _ws, report = Workspace.init(path or given or os.environ.get("EE_WORKSPACE") or ".", branch)
    lines = [f"ee workspace at {report.root}"]
    if report.created:
        lines.append("created: " + ", ".join(report.created))
    if report.registered:
        lines.append("registered: " + ", ".join(report.registered))
    if report.commit:
        lines.append(f"committed: {report.commit[:10]}")
    if len(lines) == 1:
        lines.append("nothing to do (already initialised)")
    if report.branch:
        lines.append(f"memories: on branch {report.branch} (memories/ is its worktree)")
    Output(as_json).emit(report.to_json(), "\n".join(lines))


@click.group("import")
def import_group() -> None:
    """Import memories in bulk (one commit)."""


@import_group.command("jsonl")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--skip-invalid", is_flag=True, help="Import the good lines and report the bad ones.")
@click.option(
    "--redact", is_flag=True, help="Store secrets as [REDACTED:<class>] instead of refusing the line."
)
@click.option("--agent", default=None, help="Import as this agent.")
@json_option
@click.pass_context
def import_jsonl_cmd(
    ctx: click.Context, file: str, skip_invalid: bool, redact: bool, agent: str | None, as_json: bool | None
) -> None:
    """Import FILE (JSON Lines: one memory per line; '-' for stdin) in one commit.

    Example: ee import jsonl memories.jsonl --skip-invalid
    """
    from ee.cli.progress import progress_on_a_terminal
    from ee.policy.trust import Actor

    ws = workspace(ctx)
    if file == "-":
        lines: Any = sys.stdin
        name = "<stdin>"
    else:
        try:
            handle = open(file, encoding="utf-8")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            raise NotFound(f"no file {file}", "check the path") from None
        except OSError as exc:
            raise StorageError(
                f"cannot read {file}: {exc.strerror or exc}", "check the path and its permissions"
            ) from None
        lines, name = handle, Path(file).name
    try:
        with progress_on_a_terminal() as bar:
            report = ws.import_jsonl(
                lines,
                skip_invalid=skip_invalid,
                redact=redact,
                actor=Actor.from_env(agent),
                source_name=name,
                progress=bar,
            )
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file} is not UTF-8 text: {exc.reason}", "save the file as UTF-8") from None
    finally:
        if lines is not sys.stdin:
            lines.close()
    skipped = "".join(f"\n  line {s['line']}: {s['message']}" for s in report.skipped)
    same = len(report.duplicates)
    merges = len(report.merge_candidates)
    Output(as_json).emit(
        report.to_dict(),
        f"imported {plural(len(report.imported), 'memory', 'memories')}"
        + (f", left out {plural(same, 'duplicate', 'duplicates')} (already said)" if same else "")
        + (f", skipped {len(report.skipped)}:{skipped}" if report.skipped else "")
        + (f"\n{plural(merges, 'merge', 'merges')} proposed: ee curate list --type merge" if merges else ""),
    )


@import_group.command("docs")
@declared("import_docs", "files")
@json_option
@click.pass_context
def import_docs_cmd(ctx: click.Context, files: tuple[str, ...], as_json: bool | None) -> None:
    """Propose memories from the rules and commands FILES state (AGENTS.md, CONTRIBUTING.md, …), for review.

    Nothing is written to the store: each rule or command becomes a `docs` candidate with its file:line,
    as `ee curate scan --docs` finds them; `ee curate accept ID` makes it a memory.

    Example: ee import docs AGENTS.md CONTRIBUTING.md docs/style.md
    """
    from ee.curate.docs import import_docs

    data = import_docs(workspace(ctx), list(files))

    def human() -> str:
        lines = [
            f"proposed {plural(data['count'], 'candidate memory', 'candidate memories')} from "
            f"{', '.join(data['files'])}: review them with `ee curate list --type docs`"
        ]
        lines += [f"  {c['id']}  {c['title']}" for c in data["candidates"]]
        return "\n".join(lines)

    Output(as_json).emit(data, human)


@click.group("export")
def export_group() -> None:
    """Export memories."""


@export_group.command("jsonl")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="Write to this file instead of stdout.",
)
@click.pass_context
def export_jsonl_cmd(ctx: click.Context, output: str) -> None:
    """Export every memory as JSON Lines (sorted by id), ready for `ee import jsonl`.

    Example: ee export jsonl -o memories.jsonl
    """
    if not output:
        raise UsageError("--output is empty", "name a file, or leave --output out to print to stdout")
    records, problems = workspace(ctx).export_records()
    lines = [dumps(record, indent=None) + "\n" for record in records]
    if output == "-":
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
    else:
        from ee.store.files import atomic_write

        atomic_write(Path(output), "".join(lines).encode("utf-8"))
    for problem in problems:
        if problem.severity == "error":
            click.echo(f"skipped {problem.path}: {problem.message}", err=True)


@click.command("doctor")
@click.option("--full", is_flag=True, help="Also run `git fsck` (slow on large repositories).")
@click.option("--fix", is_flag=True, help="First repair what killed ee processes left (safe while ee runs).")
@json_option
@click.pass_context
def doctor_cmd(ctx: click.Context, full: bool, fix: bool, as_json: bool | None) -> int:
    """Check the repository, every memory file, the lock, the config; print a repair for each problem.

    Example: ee doctor --fix
    """
    report = workspace(ctx).doctor(full=full, fix=fix)

    def found() -> str:
        errors, warnings = report.errors, report.warnings
        return f"{plural(errors, 'error', 'errors')}, {plural(warnings, 'warning', 'warnings')}"

    def human() -> str:
        from ee.model import Problem

        head = f"{plural(report.memories, 'memory', 'memories')}, {found()}"
        if report.fixed:
            head = fixed_lines(report.fixed) + head
        problems = [Problem(**p) for p in report.problems]
        return head + ("\n" + problem_lines(problems) if problems else "\nall good")

    out = Output(as_json)
    if report.healthy or not out.json:
        out.emit(report.to_json(), human)
        return 0 if report.healthy else int(StorageError.exit_code)
    # Problems found: exit 4 with the ee.error.v1 envelope (never "success": true beside a failing exit),
    # the whole report in its details (``details.report``).
    first = next((p for p in report.problems if p["severity"] == "error"), report.problems[0])
    where = ":".join(str(part) for part in (first.get("path"), first.get("line")) if part)
    raise DoctorFound(
        f"ee doctor found {found()}; first: {where + ': ' if where else ''}{first['message']}",
        first["repair"],
        {"report": report.to_json()},
    )


def fixed_lines(fixed: Mapping[str, Any]) -> str:
    """What ``ee doctor --fix`` did, one line each."""
    lines = [f"removed {path}" for path in fixed["removed"]]
    lines += [f"skipped {item['path']}: {item['reason']}" for item in fixed["skipped"]]
    if fixed.get("git"):
        lines.append(f"aborted the {fixed['git']['operation']} a killed ee sync left (run ee sync again)")
    recovered = fixed.get("recovered")
    if recovered:
        done = recovered["committed"] or recovered["removed"]
        action = recovered["action"].replace("_", " ")
        lines.append(f"interrupted import ({action}): {len(done)} file(s)")
        lines += [f"  left as it is (changed since): {path}" for path in recovered["kept"]]
    return "".join(line + "\n" for line in lines)


@click.group("schema")
def schema_group() -> None:
    """The JSON Schemas of ee's documents and outputs."""


@schema_group.command("list")
@json_option
def schema_list_cmd(as_json: bool | None) -> None:
    """List the schema ids.

    Example: ee schema list --human
    """
    from ee.schemas import list_schemas

    ids = list_schemas()
    Output(as_json).emit({"schemas": ids}, "\n".join(ids))


@schema_group.command("export")
@click.argument("schema_id")
def schema_export_cmd(schema_id: str) -> None:
    """Print the schema SCHEMA_ID (e.g. ee.query.v1).

    Example: ee schema export ee.query.v1
    """
    from ee.schemas import load_schema

    click.echo(dumps(load_schema(schema_id)))


def _session_import() -> None:
    """``ee import session`` lives with the other session commands (ee.cli.session_cmds)."""
    from ee.cli.session_cmds import import_session_cmd

    import_group.add_command(import_session_cmd)


_session_import()
