"""`python -m passlens`: the `passlens` command (see `passlens.cli`).

`python -m` puts the current folder first on the import path, so a `scipy.py` or
`numpy.py` in the folder a command runs from (a downloaded model's folder, say) would run
in place of the library. The current folder is dropped from the path before anything else is
imported, unless it is the folder passlens itself was imported from (a source checkout run in
place). The `passlens` console script never had the current folder on its path."""

import os
import sys


def _drop_current_folder() -> None:
    """Remove the entry `-m` put first on `sys.path` (the current folder), unless this
    package was imported from it."""
    if not sys.path:
        return
    here = os.path.realpath(os.getcwd())
    first = sys.path[0]
    if os.path.realpath(first or os.curdir) != here:
        return
    root = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root == here:
        return  # a source checkout run in place: its own folder is passlens itself
    del sys.path[0]


if __name__ == "__main__":
    _drop_current_folder()
    from passlens.cli import main

    sys.exit(main())
