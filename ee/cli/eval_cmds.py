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
@click.option("--mode", "modes", multiple=True, type=click.Choice(["lexical", "semantic", "hybrid"]),
              help="Modes to measure (repeatable; default all three).")
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, 1000), help="Cut-off rank.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries.")
@json_option
def beir_cmd(folder: str, modes: tuple[str, ...], k: int, limit: int | None, as_json: bool | None) -> None:
    """Import a BEIR-layout set (corpus.jsonl, queries.jsonl, qrels.tsv) into a temporary workspace and print
    recall@k, MRR@k and nDCG@k per mode next to a plain bm25s baseline."""
    from ee.evaluation import MODES, beir, table

    result = beir(Path(folder), modes or MODES, k, limit)
    Output(as_json).emit(result, lambda: table(result))


def register(cli: click.Group) -> None:
    cli.add_command(eval_group)
