"""passlens at the top: the ``passlens`` command and the Panel app, above the explorer and the
widgets (issue #15: the explorer imports widgets only in its display hooks, so what serves a
trace, or runs one from a shell, lives here).

    import passlens
    passlens.serve(trace)         # the Panel app on localhost (or `passlens serve TRACE.passlens`)
    python -m passlens --help     # the `passlens` command (passlens.cli)
"""


def serve(trace, **options):
    """Open the trace's views (a Trace, or a saved ``.passlens`` file) as a Panel web app on
    localhost; the options are :func:`widgets.app.serve`'s. The app is imported on the first
    call, so ``import passlens`` (and every other ``passlens`` command) does not load Panel."""
    from widgets.app import serve as _serve

    return _serve(trace, **options)


__all__ = ["serve"]
