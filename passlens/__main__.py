"""``python -m passlens``: the ``passlens`` command (see :mod:`passlens.cli`)."""

import sys

from passlens.cli import main

if __name__ == "__main__":
    sys.exit(main())
