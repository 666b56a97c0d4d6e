"""``python -m ee``: the same as the ``ee`` command (the warm server first, before the CLI is imported)."""

from ee.serve.client import main

main()
