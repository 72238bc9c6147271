"""`python -m ferroloop APP [options]`."""

import sys

from ._cli import main

sys.exit(main(prog="python -m ferroloop"))
