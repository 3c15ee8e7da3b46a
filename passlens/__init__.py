"""passlens at the top: the `passlens` command and the Panel app, above the explorer and the
widgets (issue #15: the explorer imports widgets only in its display hooks, so what serves a
trace, or runs one from a shell, lives here).

    import passlens
    server = passlens.serve(trace)  # in Jupyter: returns at once; server.url, server.stop()
    passlens.serve("run.passlens")  # in a script: serves until Ctrl-C (block=False: a handle)
    python -m passlens --help       # the `passlens` command (passlens.cli)
"""

import sys

PORT = 5006  # the default port of passlens.serve and of `passlens serve` (Panel's own default)

_servers: dict = {}  # port -> the non-blocking server passlens.serve started on it


def in_kernel() -> bool:
    """True inside a Jupyter (IPython) kernel, where a blocking call would hang the cell.
    IPython is not imported to find out: a kernel has always imported it already."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # pragma: no cover - a broken IPython is not a kernel we can use
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def serve(trace, *, port: int = PORT, block: bool | None = None, **options):
    """Open the trace's views (a Trace, or a saved `.passlens` file) as a Panel web app on
    localhost, port `port` (5006, as `passlens serve`; 0 picks a free one).

    `block=None` (the default) blocks only outside Jupyter: in a Jupyter kernel it returns a
    handle at once (`.url`, `.port`, `.stop()`) and the app is served from a thread; in
    a script or a terminal it prints the URL and serves until Ctrl-C. `block=False` always
    returns the handle, `block=True` always serves until Ctrl-C. Serving again on the port of
    a handle this function returned (a re-run Jupyter cell) stops that one first.

    The other options are `widgets.app.serve`'s (`report=`, `show=`,
    `allow_host=`, ...). The app is imported on the first call, so `import passlens` (and
    every other `passlens` command) does not load Panel."""
    from passlens.errors import port_error
    from widgets.app import serve as _serve

    if block is None:
        block = not in_kernel()
    previous = _servers.pop(port, None) if port else None
    if previous is not None:
        previous.stop()
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise port_error(port, None)
    try:
        server = _serve(trace, port=port, block=block, **options)
    except OSError as e:
        error = port_error(port, e)
        if error is None:
            raise
        raise error from None
    if server is not None:
        _servers[server.port] = server
    return server


__all__ = ["PORT", "in_kernel", "serve"]
