"""``ee search``: one query, a query document, or a batch of queries in one process."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, BinaryIO

import click

from ee.cli import call, json_by_default, json_indent, json_option, report_degraded, workspace
from ee.cli.options import declared
from ee.errors import EeError, QueryError, UsageError
from ee.values import FORMATS

if TYPE_CHECKING:
    from ee.results.pack import Pack
    from ee.results.search import SearchResult


def open_query_input(path: str, what: str) -> BinaryIO:
    """``path`` ('-': standard input) opened for reading bytes; a missing file, a folder or an unreadable
    file is an ee error naming it (``what``: "query file", "batch file")."""
    from ee.errors import NotFound, StorageError

    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise NotFound(f"no {what} {path}", "check the path (or pass - to read stdin)") from None
    except IsADirectoryError:
        raise QueryError(f"{path} is a folder, not a {what}", "pass a file, or - for stdin") from None
    except OSError as exc:
        raise StorageError(
            f"cannot read {what} {path}: {exc.strerror or exc}", "check the path and its permissions"
        ) from None


def read_query_file(path: str) -> Any:
    from ee.query.document import MAX_DOCUMENT_BYTES, parse_document

    handle = open_query_input(path, "query file")
    # Read one byte past the cap: a huge document (or /dev/zero) is refused without filling memory.
    try:
        return parse_document(handle.read(MAX_DOCUMENT_BYTES + 1), "<stdin>" if path == "-" else path)
    finally:
        if path != "-":
            handle.close()


def output_format(fmt: str | None, as_json: bool | None, query: Any) -> str:
    """--format, else --json/--human, then the document's output.format, then the terminal. --format and
    --json/--human given together must agree (``--format json --json``); otherwise it is a usage error."""
    if fmt:
        if as_json is not None:
            flag = "json" if as_json else "human"
            if fmt != flag:
                raise UsageError(f"--format {fmt} and --{flag} ask for two outputs", "give one of them")
        return fmt
    if as_json is not None:
        return "json" if as_json else "human"
    doc_format = query.get("output.format") if query is not None else None
    if doc_format:
        return str(doc_format)
    return "json" if json_by_default() else "human"


def check_explain(query: Any, fmt: str, kind: str) -> None:
    """--explain (or the document's output.explain) only with a format that shows it: every format of a
    search but the hook's; not a pack's Markdown or hook text, which are exactly what its budget counts."""
    unshown = ("markdown", "hook") if kind == "context" else ("hook",)
    if query.get("output.explain") and fmt in unshown:
        raise UsageError(
            f"--explain is not shown in a {kind}'s {fmt} output", "drop --explain, or use another --format"
        )


@click.command("search")
@declared("search", "text")
@declared("search", "mode")
@declared("search", "limit")
@declared("search", "explain")
@declared("search", "as_of")
@declared("search", "tags")
@declared("search", "level")
@declared("search", "kind")
@declared("search", "speed")
@declared("search", "fields")
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Output format (default: json when piped).")
@declared("search", "query")
@click.option(
    "--batch",
    metavar="FILE.jsonl",
    type=click.Path(allow_dash=True),
    help="One query per line (text or document; options apply to each) → one JSON line each.",
)
@declared("search", "min_relevance")
@json_option
@click.pass_context
def search_cmd(
    ctx: click.Context,
    text: str | None,
    mode: str | None,
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
    min_relevance: float | None,
    as_json: bool | None,
) -> int:
    """Search memories: hybrid (lexical + semantic), lexical, semantic or exact, every hit explained.

    Example: ee search "release checklist" --mode lexical --limit 5
    """
    from ee.query.document import from_arguments, with_options

    options: dict[str, Any] = {
        "mode": mode,
        "limit": limit,
        "tags": list(tags),
        "level": level,
        "kind": kind,
        "as_of": as_of,
        "explain": True if explain else None,
        "fields": fields,
        "speed": speed,
    }
    if sum(1 for given in (text, query_file, batch) if given) > 1:
        raise QueryError(
            "give one of TEXT, --query-file and --batch",
            "put the text in the document's query.text, or one query per line of the batch",
        )
    if batch:
        if fmt not in (None, "json") or as_json is False:
            shown = f"--format {fmt}" if fmt else "--human"
            raise UsageError(f"--batch prints one JSON line per query: {shown} does not apply", "drop it")
        return run_batch(workspace(ctx), batch, min_relevance, options)
    if query_file:
        query = with_options(read_query_file(query_file), **options)
    elif text:
        query = with_options(from_arguments(text), **options)
    else:
        raise QueryError("nothing to search for", "pass TEXT, --query-file FILE or --batch FILE.jsonl")
    chosen = output_format(fmt, as_json, query)
    check_explain(query, chosen, "search")
    result = call(ctx, "search", query=query.doc, query_notes=list(query.notes), min_relevance=min_relevance)
    emit(result, chosen)
    return 0


def emit(result: SearchResult | Pack, fmt: str) -> None:
    """A search's or a pack's answer in ``fmt`` on stdout; in the text formats a person reads,
    each degradation on stderr."""
    from ee.render.results import render

    click.echo(render(result, fmt, indent=json_indent()), nl=False)
    if fmt in ("human", "markdown"):
        report_degraded(list(result.degraded))


def run_batch(ws: Any, path: str, min_relevance: float | None, options: dict[str, Any]) -> int:
    """Each line → one compact JSON envelope line; a bad line gets an error envelope, the rest still run.
    ``options`` (the command's own, as :func:`ee.query.document.with_options` takes them) apply to every
    line, a document's as they would to a --query-file.

    The index is opened (and its freshness checked) once for the batch, once per distinct asOf: a batch
    answers as of the moment it started, at the engine's speed."""
    from ee.policy.shown import visible
    from ee.query.document import MAX_DOCUMENT_BYTES, from_arguments, parse_document, with_options
    from ee.render import dumps, envelope, error_envelope

    handle = open_query_input(path, "batch file")
    source = "<stdin>" if path == "-" else path
    code = 0
    views: dict[str | None, Any] = {}
    try:
        # Lines as bytes, at most one document long each: a line that is not UTF-8 is that line's error,
        # and a file without line breaks (/dev/zero) never fills memory.
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_DOCUMENT_BYTES + 1), b""), start=1):
            if not raw.strip():
                continue
            too_long = len(raw) > MAX_DOCUMENT_BYTES and not raw.endswith(b"\n")
            try:
                if too_long:
                    raise QueryError(
                        f"{source}:{number}: longer than {MAX_DOCUMENT_BYTES} bytes; the batch stops here",
                        "one query per line, each a text or a JSON document",
                    )
                try:
                    stripped = raw.decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    raise QueryError(
                        f"{source}:{number}: not UTF-8 text ({exc.reason})", "save it as UTF-8"
                    ) from None
                if stripped.startswith("{"):
                    query = parse_document(stripped, f"{source}:{number}")
                else:
                    query = from_arguments(stripped)
                result = ws.search(with_options(query, **options), min_relevance, views)
                data, degraded = result.envelope_parts()
                click.echo(dumps(envelope(data, degraded), indent=None))
            except EeError as exc:
                code = code or int(exc.exit_code)
                error = error_envelope(exc.to_dict() | {"line": number})
                click.echo(dumps(error, indent=None))
                click.echo(visible(f"error: {error['error']['message']}"), err=True)  # for a person too
                if too_long:
                    break
    finally:
        if path != "-":
            handle.close()
    return code
