"""The Panel app: a trace's views as a web app on localhost, for people outside Jupyter.

    from widgets.app import build_app, serve
    build_app(trace)                    # a Panel layout (show it in a notebook, or serve it)
    serve(trace)                        # serve it on localhost until Ctrl-C (or `passlens serve`)
    server = serve(trace, block=False)  # in a thread: server.url, server.stop()

The same frame (`widgets.frame`) and views (`widgets.views`' registry: which tabs,
in what order) as the Jupyter `widgets.stepper.PassStepper` and the report: a timeline
of steps with badges (changed, node delta, parameter-bytes delta, time, failed, findings),
"hide unchanged passes", previous / next, the step's graph (the graph component of the report
and of Jupyter's GraphView, run as a Panel ESM component: diff colours, a before / after toggle
that keeps the selection on the matched node, pan, zoom, search inside collapsed groups,
expand / collapse, a details drawer), tabs for the IR, IR diff, parameters, shapes and
numerics, and the error and parameter maps (`widgets.error_map`: a cell opens its step
and node). Its components are in `widgets.app_maps`.

Nothing is loaded from the network: Panel serves its own scripts, and the components' code is
plain ESM without imports.

The server answers only requests addressed to it by a local name (`Host` localhost,
127.0.0.1 or [::1] with its port, or a host given in `allow_host`) and coming from a page of
those hosts (`Origin`, `Referer`, `Sec-Fetch-Site`; another site may only open the page
itself), and only the paths its pages ask for (`ROUTES`; no route imports a module a
request names): see `HostGuard` (in `widgets.app_guard`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable

import panel as pn
from panel.io.server import get_server

from widgets import views
from widgets.app_guard import (
    LOCAL_HOSTS,
    MAX_PATH,
    ROUTES,
    HostError,
    HostGuard,
    component,
    own_components,
)
from widgets.app_maps import GraphPane, MapPane, TabBar, Timeline
from widgets.banner import TOPBAR_CSS, banner_html
from widgets.boxes import MAX_BOXES
from widgets.escape import esc
from widgets.frame import StepFrame
from widgets.tables_html import TABLE_CSS

_CSS = (
    TABLE_CSS
    + """
.pl-limit{color:#b3261e;font-size:12px;margin-top:2px}
.pl-ir{font:12px/1.35 ui-monospace,Menlo,Consolas,monospace;margin:0}
.pl-ir .pl-failed-line{background:#ffcdd2;display:block}
.pl-note{color:#666;font:13px sans-serif}
.pl-topbar{font:12px sans-serif;color:#555}
.pl-banner{color:#e65100}
.pl-banner.pl-ok{color:#2e7d32}
"""
)


class PassApp(StepFrame):
    """The app's state and widgets for one browser session (`build_app` returns its
    `layout`): the frame of `widgets.frame`, its tabs the views of `widgets.views`.
    `index` is the current step; `hide_unchanged`, `tab` and the graphs' `selected`
    nodes are read from the widgets."""

    def __init__(self, trace, report=None, max_boxes: int = MAX_BOXES, title: str = ""):
        self.max_boxes = max_boxes
        self._index = -1
        self.graph = GraphPane(
            max_boxes=max_boxes, sizing_mode="stretch_width", css_classes=["pl-pane-graph"]
        )

        def step_pane(view):
            return pn.pane.HTML(
                "",
                stylesheets=[_CSS],
                sizing_mode="stretch_width",
                css_classes=[f"pl-pane-{view.key}"],
                visible=False,
            )

        def trace_pane(view):
            pane = MapPane(
                sizing_mode="stretch_width", visible=False, css_classes=[f"pl-pane-{view.key}"]
            )
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
        side = pn.Column(self.hide_box, self.timeline, width=300)
        bar = pn.Row(self.prev_button, self.next_button, self.header, sizing_mode="stretch_width")
        main = pn.Column(bar, self.tab_bar, self.stack, sizing_mode="stretch_width")
        self.layout = pn.Column(
            pn.pane.HTML(
                f"<h2 style='margin:4px 0;font:600 18px sans-serif'>{esc(name)}</h2>"
                f"<div class='pl-topbar'><span class='meta'>{meta}</span>"
                f"{banner_html(report, link=False)}</div>",  # (the report's top bar's line)
                stylesheets=[TOPBAR_CSS + _CSS],
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
    """The Panel layout of the app for `trace` (and a check `report`, by default the
    trace's last one, `trace.report`, as a loaded trace has it; False for none: numerics,
    shape mismatches and finding badges). Its `passlens_app` attribute is the
    `PassApp`."""
    report = getattr(trace, "report", None) if report is None else (report or None)
    app = PassApp(trace, report=report, max_boxes=max_boxes, title=title)
    app.layout.passlens_app = app
    return app.layout


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
    """A running app (from `serve(..., block=False)`): `url`, `port`, `stop()`,
    `apps`, the `PassApp` of every browser session opened so far, and `refused`,
    the last requests its `HostGuard` refused (method, path, status, reason)."""

    def __init__(self, server, thread, loop, address: str, apps: list, guard=None):
        self.server, self.thread, self.loop, self.apps = server, thread, loop, apps
        self.guard = guard
        self.port = server.port
        self.url = f"http://{address}:{self.port}/"

    @property
    def refused(self) -> list[tuple[str, str, int, str]]:
        return [] if self.guard is None else list(self.guard.refused)

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
    """Serve the app for a trace (or a saved `.passlens` file) on `address:port` (a free
    port when 0), with a check `report` (by default the trace's last one, which a file
    saved after a check holds; False for none). `show` opens a browser. With `block`
    (the default) prints the URL and serves until Ctrl-C; else serves from a thread and
    returns a `Server`.

    Only requests to localhost, 127.0.0.1 or [::1] on that port (or to `address`) are
    answered, from pages of those hosts (another site may only open the page), for the paths
    the app's pages ask for; `allow_host` adds hosts (`host` for any port, or
    `host:port`), e.g. the name of a reverse proxy in front of it. See `HostGuard`.
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
    srv = Server(box["server"], thread, box["loop"], address, apps, guard)
    if show:
        import webbrowser

        webbrowser.open(srv.url)
    return srv


__all__ = [
    "LOCAL_HOSTS",
    "MAX_PATH",
    "ROUTES",
    "GraphPane",
    "HostError",
    "HostGuard",
    "MapPane",
    "PassApp",
    "Server",
    "TabBar",
    "Timeline",
    "build_app",
    "component",
    "own_components",
    "serve",
]
