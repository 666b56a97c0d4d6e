"""``ee search``: one query, a query document, or a batch of queries in one process."""

from __future__ import annotations

import sys

from ee.cli import Output, echo, open_workspace
from ee.cli.params import JSON_OPTION, Argument, Command, Option, click_command
from ee.errors import EeError, QueryError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (see ee/__init__.py)
if TYPE_CHECKING:
    from typing import Any

    import click

FORMATS = ["human", "json", "jsonl", "compact", "markdown", "toon", "hook"]
MODES = ["hybrid", "lexical", "semantic", "exact"]
LEVELS = ["working", "episodic", "semantic", "procedural"]
SPEEDS = ["instant", "default", "quality"]
FIELDS = ["minimal", "summary", "standard", "full"]


def read_query_file(path: str) -> Any:
    from ee.errors import NotFound
    from ee.query.document import MAX_DOCUMENT_BYTES, parse_document

    # Read one byte past the cap: a huge document (or /dev/zero) is refused without filling memory.
    if path == "-":
        return parse_document(sys.stdin.buffer.read(MAX_DOCUMENT_BYTES + 1), "<stdin>")
    try:
        with open(path, "rb") as handle:
            return parse_document(handle.read(MAX_DOCUMENT_BYTES + 1), path)
    except FileNotFoundError:
        raise NotFound(f"no query file {path}", "check the path (or pass - to read stdin)") from None
    except IsADirectoryError:
        raise QueryError(
            f"{path} is a folder, not a query file", "pass a JSON file, or - for stdin"
        ) from None


def output_format(fmt: str | None, as_json: bool | None, query: Any) -> str:
    """--format wins, then --json/--human, then the document's output.format, then the terminal."""
    if fmt:
        return fmt
    if as_json is not None:
        return "json" if as_json else "human"
    doc_format = query.get("output.format") if query is not None else None
    if doc_format:
        return str(doc_format)
    return "json" if Output(None).json else "human"


def search_cmd(
    root: str | None,
    text: str | None,
    mode: str,
    limit: int | None,
    explain: bool,
    as_of: str | None,
    tags: tuple[str, ...],
    level: str | None,
    kind: str | None,
    speed: str | None,
    fields: str | None,
    fmt: str | None,
    query_file: str | None,
    batch: str | None,
    as_json: bool | None,
) -> int:
    """Search memories: hybrid (lexical + semantic), lexical, semantic or exact, every hit explained."""
    from ee.query import search
    from ee.query.document import from_arguments

    ws = open_workspace(root)
    if batch:
        return run_batch(ws, batch)
    if query_file:
        if text:
            raise QueryError(
                "give TEXT or --query-file, not both", "put the text in the document's query.text"
            )
        query = read_query_file(query_file)
    elif text:
        query = from_arguments(
            text,
            mode=mode,
            limit=limit,
            tags=list(tags),
            level=level,
            kind=kind,
            as_of=as_of,
            explain=explain,
            fields=fields,
            speed=speed,
        )
    else:
        raise QueryError("nothing to search for", "pass TEXT, --query-file FILE or --batch FILE.jsonl")
    data = search(ws, query)
    emit_search(data, output_format(fmt, as_json, query))
    return 0


def emit_search(data: dict[str, Any], fmt: str) -> None:
    from ee.render.results import render

    echo(render("search", data, fmt), nl=False)
    if fmt in ("human", "markdown"):
        for item in data.get("degraded", []):
            echo(f"degraded: {item['message']} (repair: {item['repair']})", err=True)


def run_batch(ws: Any, path: str) -> int:
    """Each line → one compact JSON envelope line; a bad line gets an error envelope, the rest still run."""
    from ee.query import search
    from ee.query.document import from_arguments, parse_document
    from ee.render import dumps, envelope, error_envelope

    handle = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115 - closed below
    code = 0
    try:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                stripped = line.strip()
                if stripped.startswith("{"):
                    query = parse_document(stripped, f"{path}:{number}")
                else:
                    query = from_arguments(stripped)
                data = search(ws, query)
                degraded = data.pop("degraded", [])
                echo(dumps(envelope(data, degraded), indent=None))
            except EeError as exc:
                code = code or int(exc.exit_code)
                echo(dumps(error_envelope(exc.to_dict() | {"line": number}), indent=None))
    finally:
        if handle is not sys.stdin:
            handle.close()
    return code


SEARCH = Command(
    "search",
    search_cmd,
    [
        Argument("text", required=False),
        Option("--mode", choices=MODES, default="hybrid", show_default=True),
        Option("--limit", type=int, min=1, help="At most this many hits (default 100)."),
        Option("--explain", is_flag=True, help="Add matched terms and the full standing to each hit."),
        Option("--as-of", metavar="TIME|COMMIT", help="Search the memories as they were then."),
        Option(
            "--tag", "tags", multiple=True, help="Only memories with this tag (repeatable: all required)."
        ),
        Option("--level", choices=LEVELS),
        Option("--kind"),
        Option("--speed", choices=SPEEDS),
        Option("--fields", choices=FIELDS),
        Option("--format", "fmt", choices=FORMATS, help="Output format (default: json when piped)."),
        Option("--query-file", metavar="FILE", help="An ee.query.v1 document ('-' reads stdin)."),
        Option(
            "--batch",
            metavar="FILE.jsonl",
            help="One query per line (text or document) → one JSON line each.",
        ),
        JSON_OPTION,
    ],
)
COMMANDS = {"search": SEARCH}


def register(cli: click.Group) -> None:
    cli.add_command(click_command(SEARCH))
