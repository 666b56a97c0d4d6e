"""``python -m ee``: the same as the ``ee`` command."""

from ee.cli import run

run()
