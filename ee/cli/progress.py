"""Progress of long operations (``ee import jsonl``, ``ee index rebuild``, ``ee eval beir``) on stderr, when
stderr is a terminal: nothing at all otherwise (JSON consumers, pipes and logs see what they always saw).

The library reports ``progress(phase, done, total)`` (see :data:`ee.index.freshness.Progress`); a total of 0
means the total is not known yet (lines read from a file): the line then counts up.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import click


class ProgressBar:
    """One click progress bar per phase, on stderr; a counting line for a phase of unknown length."""

    LABELS: ClassVar[dict[str, str]] = {
        "check": "checking ",
        "write": "writing  ",
        "parse": "parsing  ",
        "embed": "embedding",
        "lexical": "lexical  ",
        "semantic": "semantic ",
        "hybrid": "hybrid   ",
    }

    def __init__(self) -> None:
        self.phase: str | None = None
        self.bar: Any = None
        self.counting = False
        self.done = 0

    def __call__(self, phase: str, done: int, total: int) -> None:
        label = self.LABELS.get(phase, phase)
        if phase != self.phase:
            self.close()
            self.phase, self.done = phase, 0
            if total:
                self.bar = click.progressbar(length=total, label=label, file=sys.stderr)
                self.bar.__enter__()
        if self.bar is None:
            click.echo(f"\r{label}  {done}", nl=False, err=True)
            self.counting = True
        else:
            self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None
        if self.counting:
            click.echo(err=True)
            self.counting = False


@contextmanager
def progress_on_a_terminal() -> Iterator[ProgressBar | None]:
    """A :class:`ProgressBar` when stderr is a terminal, else None (the operation then reports nothing)."""
    bar = ProgressBar() if sys.stderr.isatty() else None
    try:
        yield bar
    finally:
        if bar is not None:
            bar.close()
