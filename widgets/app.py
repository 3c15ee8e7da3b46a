"""The Panel app: a trace's views as a web app on localhost, for people outside Jupyter.

    from widgets.app import build_app, serve
    build_app(trace)                    # a Panel layout (show it in a notebook, or serve it)
    serve(trace)                        # serve it on localhost until Ctrl-C (or `passlens serve`)
    server = serve(trace, block=False)  # in a thread: server.url, server.stop()

The same frame (:mod:`widgets.frame`) and views (:mod:`widgets.views`' registry: which tabs,
in what order) as the Jupyter :class:`~widgets.stepper.PassStepper` and the report: a timeline
of steps with badges (changed, node delta, parameter-bytes delta, time, failed, findings),
"hide unchanged passes", previous / next, the step's graph (the graph component of the report
and of Jupyter's GraphView, run as a Panel ESM component: diff colours, a before / after toggle
that keeps the selection on the matched node, pan, zoom, search inside collapsed groups,
expand / collapse, a details drawer), tabs for the IR, IR diff, parameters, shapes and
numerics, and the error and parameter maps (:mod:`widgets.error_map`: a cell opens its step
and node). Its components are in :mod:`widgets.app_maps`.

Nothing is loaded from the network: Panel serves its own scripts, and the components' code is
plain ESM without imports.

The server answers only requests addressed to it by a local name (``Host`` localhost,
127.0.0.1 or [::1] with its port, or a host given in ``allow_host``) and coming from a page of
those hosts (``Origin``): see :class:`HostGuard`.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

import panel as pn
from panel.io.server import get_server
from tornado.routing import Matcher, Rule
from tornado.web import Application, RequestHandler

from compiler import PasslensError
from widgets import views
from widgets.app_maps import GraphPane, MapPane, TabBar, Timeline
from widgets.boxes import MAX_BOXES
from widgets.escape import esc
from widgets.frame import StepFrame
from widgets.tables_html import TABLE_CSS

_CSS = (
    TABLE_CSS
    + """
.pl-ir{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;margin:0}
.pl-ir .pl-failed-line{background:#ffcdd2;display:block}
.pl-note{color:#666;font:13px sans-serif}
"""
)


class PassApp(StepFrame):
    """The app's state and widgets for one browser session (:func:`build_app` returns its
    ``layout``): the frame of :mod:`widgets.frame`, its tabs the views of :mod:`widgets.views`.
    ``index`` is the current step; ``hide_unchanged``, ``tab`` and the graphs' ``selected``
    nodes are read from the widgets."""

    def __init__(self, trace, report=None, max_boxes: int = MAX_BOXES, title: str = ""):
        self.max_boxes = max_boxes
        self._index = -1
        self.graph = GraphPane(max_boxes=max_boxes, sizing_mode="stretch_width")

        def step_pane(view):
            return pn.pane.HTML(
                "",
                stylesheets=[_CSS],
                sizing_mode="stretch_width",
                css_classes=[f"pl-pane-{view.key}"],
                visible=False,
            )

        def trace_pane(view):
            pane = MapPane(sizing_mode="stretch_width", visible=False)
            pane.param.watch(lambda e: self._open_pick(e.new), "pick")
            return pane

        self._frame_views(trace, report, step_pane, trace_pane)
        self.timeline = Timeline(rows=self.timeline_rows(), width=290)
        self.tab_bar = TabBar(
            html=self.tab_bar_html(), active=self.views[0].key, sizing_mode="stretch_width"
        )
        self.hide_box = pn.widgets.Checkbox(
            label="hide unchanged passes", value=False, css_classes=["pl-hide"]
        )
        self.prev_button = pn.widgets.Button(label="◀ prev", width=80, css_classes=["pl-prev"])
        self.next_button = pn.widgets.Button(label="next ▶", width=80, css_classes=["pl-next"])
        self.header = pn.pane.HTML("", sizing_mode="stretch_width", css_classes=["pl-head"])
        self.stack = pn.Column(
            *(self.panes[t] for t in self.tab_names), sizing_mode="stretch_width"
        )
        self._show_pane(0)
        name = title or f"passlens: {trace.pipeline or 'trace'}"
        meta = (
            f"{len(trace.steps)} steps · {esc(trace.frontend or 'IR')} · pipeline "
            f"<code>{esc(trace.pipeline)}</code>"
        )
        first = getattr(report, "first_failure", None) if report is not None else None
        if first is not None:
            meta += f" · check: {esc(first)}"
        one_line = "white-space:nowrap;overflow:hidden;text-overflow:ellipsis;display:block"
        side = pn.Column(self.hide_box, self.timeline, width=300)
        bar = pn.Row(self.prev_button, self.next_button, self.header, sizing_mode="stretch_width")
        main = pn.Column(bar, self.tab_bar, self.stack, sizing_mode="stretch_width")
        self.layout = pn.Column(
            pn.pane.HTML(
                f"<h2 style='margin:4px 0;font:600 18px sans-serif'>{esc(name)}</h2>"
                f"<span style='font:12px sans-serif;color:#555;{one_line}'>{meta}</span>",
                stylesheets=[_CSS],
                sizing_mode="stretch_width",
            ),
            pn.Row(side, main, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
        self.header.stylesheets = [_CSS]
        self.prev_button.on_click(lambda _e: self.prev())
        self.next_button.on_click(lambda _e: self.next())
        self.hide_box.param.watch(lambda _e: self._on_hide(), "value")
        self.timeline.param.watch(lambda e: self._on_pick(e.new), "index")
        self.tab_bar.param.watch(lambda e: self._on_tab_key(e.new), "active")
        self._fill_timeline()
        self.index = views.start_index(trace, report)

    # ----- state --------------------------------------------------------------------------
    @property
    def index(self) -> int:
        """The current step's index."""
        return self._index

    @index.setter
    def index(self, i: int) -> None:
        if not 0 <= i < len(self.trace.steps):
            raise IndexError(f"no step {i}: the trace has {len(self.trace.steps)}")
        if i != self._index:
            self._index = i
            self._show()

    @property
    def hide_unchanged(self) -> bool:
        return self.hide_box.value

    @hide_unchanged.setter
    def hide_unchanged(self, value: bool) -> None:
        self.hide_box.value = value

    @property
    def selected_details(self) -> dict:
        """Details of the node selected in the graph."""
        return self.graph.selected_details

    # ----- what the frame asks of a toolkit -----------------------------------------------
    def _set_html(self, pane, html: str) -> None:
        pane.object = html

    def _show_pane(self, k: int) -> None:
        for j, title in enumerate(self.tab_names):
            self.panes[title].visible = j == k

    def __repr__(self) -> str:
        return f"<PassApp step {self.index}/{len(self.trace.steps)}: {self.step.name}>"


def build_app(trace, report=None, max_boxes: int = MAX_BOXES, title: str = ""):
    """The Panel layout of the app for ``trace`` (and a check ``report``, by default the
    trace's last one, ``trace.report``, as a loaded trace has it; False for none: numerics,
    shape mismatches and finding badges). Its ``passlens_app`` attribute is the
    :class:`PassApp`."""
    report = getattr(trace, "report", None) if report is None else (report or None)
    app = PassApp(trace, report=report, max_boxes=max_boxes, title=title)
    app.layout.passlens_app = app
    return app.layout


# ===== who may talk to the server =============================================================

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_ANY_ADDRESS = {"", "0.0.0.0", "::", "[::]"}  # listen everywhere: not a name a browser uses
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9_.-]*[a-z0-9_-])(?::(\d{1,5}))?")


class HostError(PasslensError, ValueError):
    """A host to allow (``serve(allow_host=...)``, ``passlens serve --allow-host``) that is not
    a host name or address with an optional port."""


def _split_host(text: str) -> tuple[str, int | None] | None:
    """``host[:port]`` as (host in lower case, IPv6 in brackets; port or None), or None when
    ``text`` is not one (a scheme, a path, a wildcard, a bad port, several values)."""
    m = _HOST.fullmatch(text.strip().lower())
    if m is None:
        return None
    port = None if m.group(2) is None else int(m.group(2))
    return None if port is not None and not 0 < port < 65536 else (m.group(1), port)


class HostGuard:
    """Which requests the server answers: its ``Host`` header must name this server, and an
    ``Origin`` header (sent by browsers with every websocket and with scripts' requests) must
    be a page of this server.

    Why: a page of any web site can make the browser talk to ``localhost`` through DNS
    rebinding (its own name, resolved to 127.0.0.1 once the page is loaded). The browser then
    sends ``Host`` and ``Origin`` of that site, equal to each other; Tornado accepts a websocket
    whose Origin equals its Host (or says ``Sec-Fetch-Site: same-origin``) without asking
    Bokeh's origin list, and Bokeh checks nothing on plain HTTP requests, so the page could
    read the app and drive it. The guard answers such requests with 403 before any handler.

    Allowed: localhost, 127.0.0.1 and [::1] on the served ``port``; the listening ``address``
    on it (unless it listens everywhere); and each of ``allow_host``, ``host`` (any port) or
    ``host:port``."""

    def __init__(self, port: int, address: str = "localhost", allow_host: Iterable[str] = ()):
        self.port = port
        self.allowed: list[tuple[str, int | None]] = [(h, port) for h in LOCAL_HOSTS]
        listen = f"[{address}]" if ":" in address and not address.startswith("[") else address
        if listen.lower() not in _ANY_ADDRESS:
            own = _split_host(listen)
            if own is None:
                raise HostError(f"cannot serve on address {address!r}: not a host name or address")
            self.allowed.append((own[0], port))
        if isinstance(allow_host, str):  # one host, not its characters
            allow_host = [allow_host]
        for text in allow_host:
            entry = _split_host(str(text))
            if entry is None:
                raise HostError(
                    f"cannot allow host {text!r}: give a host name or address, optionally with "
                    ":PORT (no scheme, path or wildcard)"
                )
            self.allowed.append(entry)

    def allows(self, netloc: str, default_port: int = 80) -> bool:
        """Whether ``netloc`` (``host[:port]``, the port ``default_port`` when left out)
        is an allowed host."""
        entry = _split_host(netloc)
        if entry is None:
            return False
        host, port = entry[0], default_port if entry[1] is None else entry[1]
        return any(host == h and p in (None, port) for h, p in self.allowed)

    def refusal(self, request) -> str | None:
        """Why ``request`` (a Tornado request) is refused, or None when it is answered."""
        host = request.headers.get("Host", "")
        if not self.allows(host):
            return f"Host {host!r} is not this server ({self.hint})"
        origin = request.headers.get("Origin")
        if origin is not None:
            parts = urlsplit(origin)
            secure = parts.scheme == "https"
            if parts.scheme not in ("http", "https") or not self.allows(
                parts.netloc, 443 if secure else 80
            ):
                return f"Origin {origin!r} is not a page of this server ({self.hint})"
        return None

    @property
    def hint(self) -> str:
        """What a refusal adds: the host to use, and how to allow another."""
        return (
            f"it answers localhost:{self.port}; to allow another host: passlens serve "
            "--allow-host HOST, or serve(..., allow_host=[HOST])"
        )

    def websocket_origins(self) -> list[str]:
        """The allowed hosts as Bokeh's websocket origin list, which it checks when Tornado
        takes a websocket for cross-origin (the guard has checked the Origin already; Bokeh's
        parser cannot read hosts in IPv6 brackets, so those are left to the guard)."""
        return sorted({h if p is None else f"{h}:{p}" for h, p in self.allowed if ":" not in h})

    def install(self, server) -> None:
        """Put the guard in front of every handler of a Bokeh ``server`` (not started yet):
        HTTP requests and websocket upgrades alike go through its first routing rule."""
        app = getattr(server, "_tornado", None)  # Bokeh keeps its Tornado application there
        if not isinstance(app, Application):
            raise RuntimeError(
                "bokeh's Server no longer keeps its Tornado application in `_tornado`: passlens "
                "cannot check the Host of requests, and does not serve without that check"
            )
        app.default_router.rules.insert(0, Rule(_Refusal(self), _Refused))


class _Refusal(Matcher):
    """Matches the requests a :class:`HostGuard` refuses (the reason goes to the handler)."""

    def __init__(self, guard: HostGuard):
        self.guard = guard

    def match(self, request) -> dict | None:
        reason = self.guard.refusal(request)
        return None if reason is None else {"path_args": [], "path_kwargs": {"reason": reason}}


class _Refused(RequestHandler):
    """403 and the reason as plain text, whatever the method (a websocket upgrade too)."""

    def prepare(self) -> None:
        self.set_status(403)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(f"passlens: refused: {self.path_kwargs['reason']}\n")


def _load(trace_or_path):
    if isinstance(trace_or_path, (str, os.PathLike)):
        from explorer.store import load

        return load(trace_or_path)
    return trace_or_path


def _free_port(address: str) -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


class Server:
    """A running app (from ``serve(..., block=False)``): ``url``, ``port``, ``stop()``, and
    ``apps``, the :class:`PassApp` of every browser session opened so far."""

    def __init__(self, server, thread, loop, address: str, apps: list):
        self.server, self.thread, self.loop, self.apps = server, thread, loop, apps
        self.port = server.port
        self.url = f"http://{address}:{self.port}/"

    def stop(self, timeout: float = 10) -> None:
        """Stop the server and its thread."""

        def _stop():
            self.server.stop()
            self.loop.stop()

        self.loop.add_callback(_stop)
        self.thread.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self) -> str:
        return f"<passlens app at {self.url}>"


def serve(
    trace_or_path,
    port: int = 0,
    show: bool = False,
    report=None,
    address: str = "localhost",
    block: bool = True,
    max_boxes: int = MAX_BOXES,
    title: str = "",
    allow_host: Iterable[str] = (),
):
    """Serve the app for a trace (or a saved ``.passlens`` file) on ``address:port`` (a free
    port when 0), with a check ``report`` (by default the trace's last one, which a file
    saved after a check holds; False for none). ``show`` opens a browser. With ``block``
    (the default) prints the URL and serves until Ctrl-C; else serves from a thread and
    returns a :class:`Server`.

    Only requests to localhost, 127.0.0.1 or [::1] on that port (or to ``address``) are
    answered, from pages of those hosts; ``allow_host`` adds hosts (``host`` for any port,
    or ``host:port``), e.g. the name of a reverse proxy in front of it. See :class:`HostGuard`.
    """
    port = port or _free_port(address)
    guard = HostGuard(port, address, allow_host)
    trace = _load(trace_or_path)
    page_title = title or f"passlens: {trace.pipeline or 'trace'}"

    apps: list[PassApp] = []  # one per browser session

    def make():
        layout = build_app(trace, report=report, max_boxes=max_boxes, title=title)
        apps.append(layout.passlens_app)
        return layout

    def new_server(loop=None):
        server = get_server(
            make,
            port=port,
            address=address,
            show=False,
            start=False,
            loop=loop,
            title=page_title,
            websocket_origin=guard.websocket_origins(),
            location=False,  # the URL is not synced (and Panel's sync cannot read [::1] hosts)
        )
        guard.install(server)
        return server

    if block:
        server = new_server()
        url = f"http://{address}:{server.port}/"
        print(f"passlens: serving {len(trace)} steps at {url} (Ctrl-C to stop)", flush=True)
        if show:
            import webbrowser

            webbrowser.open(url)
        server.start()
        try:
            server.io_loop.start()
        except KeyboardInterrupt:
            pass
        finally:
            server.stop()
        return None

    ready = threading.Event()
    box: dict = {}

    def run() -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        from tornado.ioloop import IOLoop

        loop = IOLoop.current()
        try:
            box["server"] = new_server(loop)
            box["loop"] = loop
        except BaseException as e:  # reported to the caller
            box["error"] = e
            ready.set()
            return
        box["server"].start()
        ready.set()
        loop.start()

    thread = threading.Thread(target=run, name="passlens-app", daemon=True)
    thread.start()
    ready.wait(60)
    if "error" in box:
        raise box["error"]
    srv = Server(box["server"], thread, box["loop"], address, apps)
    if show:
        import webbrowser

        webbrowser.open(srv.url)
    return srv


__all__ = [
    "LOCAL_HOSTS",
    "GraphPane",
    "HostError",
    "HostGuard",
    "MapPane",
    "PassApp",
    "Server",
    "TabBar",
    "Timeline",
    "build_app",
    "serve",
]
