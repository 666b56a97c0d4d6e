"""``ee eval``: measured retrieval quality (BEIR sets) and scenario checks."""

from __future__ import annotations

from pathlib import Path

import click

from ee.cli import Output, json_option


@click.group("eval")
def eval_group() -> None:
    """Measure retrieval quality and check scenarios."""


@eval_group.command("beir")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["lexical", "semantic", "hybrid"]),
    help="Modes to measure (repeatable; default all three).",
)
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, 1000), help="Cut-off rank.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@click.option(
    "--offtopic",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Off-topic questions, one per line: also report the share that gets no hit (abstention).",
)
@click.option(
    "--min-relevance",
    type=click.FloatRange(0.0, 1.0),
    metavar="R",
    help="The relevance floor to measure with (default 0.8; 0 = off).",
)
@click.option(
    "--arm",
    type=click.Choice(["static", "transformer"]),
    default="transformer",
    show_default=True,
    help="The semantic arm: the transformer (its vectors computed first, as ee index rebuild does) or the "
    "static model (what answers until then).",
)
@json_option
def beir_cmd(
    folder: str,
    modes: tuple[str, ...],
    k: int,
    limit: int | None,
    offtopic: str | None,
    min_relevance: float | None,
    arm: str,
    as_json: bool | None,
) -> None:
    """Import a BEIR-layout set (corpus.jsonl, queries.jsonl, qrels.tsv) into a temporary workspace and print
    recall@k, MRR@k and nDCG@k per mode next to a plain bm25s baseline; with --offtopic, the share of
    off-topic questions that get no hit.

    Example: ee eval beir /tmp/devset --offtopic questions.txt
    """
    from ee.cli.progress import progress_on_a_terminal
    from ee.eval.beir import MODES, beir, read_offtopic, table

    questions = read_offtopic(Path(offtopic)) if offtopic else None
    with progress_on_a_terminal() as bar:
        result = beir(
            Path(folder),
            modes or MODES,
            k,
            limit,
            progress=bar,
            offtopic=questions,
            min_relevance=min_relevance,
            arm=arm,
        )
    Output(as_json).emit(result, lambda: table(result))


@eval_group.command("run")
@click.argument("folder", required=False, type=click.Path(exists=True))
@click.option(
    "--scenario",
    "scenario_ids",
    multiple=True,
    metavar="ID",
    help="Run only this scenario (repeatable; default all).",
)
@json_option
@click.pass_context
def run_cmd(
    ctx: click.Context, folder: str | None, scenario_ids: tuple[str, ...], as_json: bool | None
) -> None:
    """Run the scenario files in FOLDER (default: tests/fixtures/eval of the workspace or of the ee checkout),
    each in a temporary workspace; exit 9 when an expectation is not met.

    Example: ee eval run tests/fixtures/eval --scenario ID
    """
    from ee.errors import EvalFailed
    from ee.eval.scenarios import default_folder, load_folder, run_scenarios, table

    where = Path(folder) if folder else default_folder(ctx.find_root().params.get("workspace"))
    report = run_scenarios(load_folder(where, scenario_ids))
    output = Output(as_json)
    summary = report["summary"]
    if not summary["failed"]:
        output.emit(report, lambda: table(report))
        return
    if not output.json:
        click.echo(table(report))
    failed = [s["id"] for s in report["scenarios"] if s["status"] == "fail"]
    raise EvalFailed(
        f"{summary['failed']} of {summary['scenarios']} scenarios failed: {', '.join(failed)}",
        "see each failed expectation in the report (error.details.report with --json); "
        "rerun one with: ee eval run --scenario ID",
        {"report": report},
    )


@eval_group.command("sessions")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option(
    "--max-tokens",
    default=2000,
    show_default=True,
    type=click.IntRange(min=100),
    help="The budget of each question's context pack.",
)
@click.option(
    "--min-relevance",
    type=click.FloatRange(0.0, 1.0),
    metavar="R",
    help="The relevance floor to measure with (default: [query] min_relevance, 0.8; 0 = off).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N questions.")
@click.option("--misses", is_flag=True, help="Also list the questions answered badly, and how.")
@json_option
def sessions_cmd(
    folder: str,
    max_tokens: int,
    min_relevance: float | None,
    limit: int | None,
    misses: bool,
    as_json: bool | None,
) -> None:
    """Import FOLDER/sessions/ (transcripts) into a temporary workspace with `ee import session`, ask every
    question of FOLDER/questions.jsonl with `ee search` and `ee context`, and print session hit@1/5/10, MRR,
    the share of answerable and of unanswerable questions with no hit, newest-session-first for knowledge
    updates and the share of packs holding the answer's key terms, overall and per question type (--json:
    every question's outcome under misses).

    Example: ee eval sessions tests/fixtures/sessions --misses
    """
    from ee.cli.progress import progress_on_a_terminal
    from ee.eval.sessions import evaluate, table

    with progress_on_a_terminal() as bar:
        result = evaluate(
            Path(folder), max_tokens=max_tokens, min_relevance=min_relevance, limit=limit, progress=bar
        )
    Output(as_json).emit(result, lambda: table(result, misses=misses))


@eval_group.command("relevance")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option(
    "--min-relevance",
    type=click.FloatRange(0.0, 1.0),
    metavar="R",
    help="The relevance floor to measure with (default 0.8).",
)
@json_option
def relevance_cmd(folder: str, min_relevance: float | None, as_json: bool | None) -> None:
    """Measure what the relevance floor keeps and drops, for the static and the transformer arm: on each
    store of FOLDER/stores.json, paraphrased questions' hit@10 with the floor off and on, the share of
    unanswerable and off-topic questions that get nothing, and the noise: how many hits and pack items a
    paraphrased question gets with the floor on, and which share of them is its memory (precision)
    (tests/fixtures/relevance is ee's dev set, bench/relevance-holdout a held-out one). The JSON also
    names each failing question, with its best hit and relevance (failures).

    Example: ee eval relevance tests/fixtures/relevance --min-relevance 0.8
    """
    from ee.cli.progress import progress_on_a_terminal
    from ee.eval.relevance import evaluate, table

    with progress_on_a_terminal() as bar:
        result = evaluate(Path(folder), min_relevance, progress=bar)
    Output(as_json).emit(result, lambda: table(result))
