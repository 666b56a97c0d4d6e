"""``python -m ee``: the same as the ``ee`` command."""

import sys

from ee.cli import main

if __name__ == "__main__":  # (not when a worker process of ee.index.derive imports it as its parent's main)
    sys.exit(main())
