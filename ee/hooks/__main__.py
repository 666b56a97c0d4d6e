"""``python -P -m ee.hooks NAME ARGS…``: what the git hook runner starts (``ee hook`` without the CLI)."""

import sys

from ee.hooks.run import main_and_exit

main_and_exit(sys.argv[1:])
