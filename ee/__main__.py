"""``python -m ee``: the same as the ``ee`` command."""

import sys

from ee.cli import main

sys.exit(main())
