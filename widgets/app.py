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
those hosts (``Origin``, ``Referer``, ``Sec-Fetch-Site``; another site may only open the page
itself), and only the paths its pages ask for (:data:`ROUTES`; no route imports a module a
request names): see :class:`HostGuard`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

import panel as pn
import param
from panel.io.server import ComponentResourceHandler, get_server
from tornado.routing import Matcher, PathMatches, Rule
from tornado.web import Application, HTTPError, RequestHandler

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


# The paths the app's own pages ask for (``request.path``, still percent-encoded): the page,
# its websocket, the favicon, BokehJS's files, Panel's files, and a component's listed files
# (:class:`_Components`). Every other path (Bokeh's /autoload.js and /metadata, Panel's REST,
# admin, liveness and plugin routes, other Bokeh extensions' files) is answered 404.
ROUTES = re.compile(
    r"/(?:ws|favicon\.ico|static/(?!extensions/)[^/][^?#]*|static/extensions/panel/[^/][^?#]*"
    r"|components/[^/][^?#]*)?"
)
MAX_PATH = 1024  # longer paths are not the app's
_SEGMENT_HAZARDS = ("\x00", "\\")

log = logging.getLogger("passlens.serve")


class HostGuard:
    """Which requests the server answers. Checked in this order, before any handler:

    - ``Host`` must name this server (else 403);
    - an ``Origin`` (sent by browsers with every websocket and with scripts' requests) and a
      ``Referer`` must be a page of this server (else 403);
    - a request a browser marks as coming from another site (``Sec-Fetch-Site: cross-site``
      or ``same-site``: another port of localhost is the same site) is refused (403) unless it
      is a top-level navigation to the page itself (``GET /``, ``Sec-Fetch-Mode: navigate``,
      ``Sec-Fetch-Dest: document``), which may also carry another site's ``Referer``: a
      link may open the app; an ``<img>``, ``<script>``, ``<iframe>``, ``fetch`` or
      websocket of another site's page may not reach it;
    - the path must be one the app's pages ask for (:data:`ROUTES`; no ``.`` or ``..``
      segment, NUL or backslash once decoded, at most :data:`MAX_PATH` characters), else
      404. ``/components/MODULE/CLASS/...`` serves only files listed by the app's own
      components or Panel's, from modules already loaded: nothing is imported
      (:class:`_Components`).

    Why: a page of any web site can make the browser talk to ``localhost``: plainly (an
    ``<img src=http://localhost:5006/...>``), or through DNS rebinding (its own name, resolved
    to 127.0.0.1 once the page is loaded; the browser then sends ``Host`` and ``Origin`` of
    that site, equal to each other). Tornado accepts a websocket whose Origin equals its Host
    (or says ``Sec-Fetch-Site: same-origin``) without asking Bokeh's origin list, Bokeh checks
    nothing on plain HTTP requests, and Panel's ``/components/`` route imports the module its
    URL names (``/components/unittest.__main__/x/y/z`` ended the server).

    Allowed hosts: localhost, 127.0.0.1 and [::1] on the served ``port``; the listening
    ``address`` on it (unless it listens everywhere); and each of ``allow_host``, ``host``
    (any port) or ``host:port``. ``refused`` keeps the last refusals as (method, path,
    status, reason)."""

    def __init__(self, port: int, address: str = "localhost", allow_host: Iterable[str] = ()):
        self.port = port
        self.refused: collections.deque = collections.deque(maxlen=200)
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

    def is_own_page(self, url: str) -> bool:
        """Whether ``url`` (an Origin or a Referer) is of a page of an allowed host."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or "@" in parts.netloc:
            return False
        return self.allows(parts.netloc, 443 if parts.scheme == "https" else 80)

    def refusal(self, request) -> str | None:
        """Why ``request`` (a Tornado request) is refused with 403, or None when it is not."""
        headers = request.headers
        host = headers.get("Host", "")
        if not self.allows(host):
            return f"Host {host!r} is not this server ({self.hint})"
        origin = headers.get("Origin")
        if origin is not None and not self.is_own_page(origin):
            return f"Origin {_cut(origin)!r} is not a page of this server ({self.hint})"
        page = _opens_the_page(request)
        referer = headers.get("Referer")
        if referer and not page and not self.is_own_page(referer):
            return f"Referer {_cut(referer)!r} is not a page of this server ({self.hint})"
        site = headers.get("Sec-Fetch-Site", "").strip().lower()
        if site in ("cross-site", "same-site") and not page:
            dest = _cut(headers.get("Sec-Fetch-Dest", "?"), 40)
            return (
                f"a {site} request ({dest!r}) from a page elsewhere: another site may only open "
                "the app's page (a top-level GET /)"
            )
        return None

    def unknown(self, request) -> str | None:
        """Why ``request``'s path is not one of the app's (404), or None when it is."""
        path = request.path
        if len(path) > MAX_PATH:
            return f"a path of {len(path)} characters"
        if ROUTES.fullmatch(path) is None:
            return f"no page {_cut(path)!r}: this server answers only the app's own pages"
        decoded = unquote(path)
        segments = decoded.split("/")
        if any(c in decoded for c in _SEGMENT_HAZARDS) or "." in segments or ".." in segments:
            return f"no page {_cut(path)!r}: a path with a . or .. segment, a NUL or a backslash"
        return None

    def record(self, request, status: int, reason: str) -> None:
        """Keep a refusal in ``refused`` and log it (``passlens.serve``, level INFO)."""
        entry = (request.method, _cut(request.path), status, reason)
        self.refused.append(entry)
        log.info("refused %s %r (%d): %s", *entry)

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
        HTTP requests and websocket upgrades alike go through its first routing rules (the
        refusals, the unknown paths, then the components' files), before Bokeh's and Panel's
        own, whatever routes they or their plugins add."""
        app = getattr(server, "_tornado", None)  # Bokeh keeps its Tornado application there
        if not isinstance(app, Application):
            raise RuntimeError(
                "bokeh's Server no longer keeps its Tornado application in `_tornado`: passlens "
                "cannot check the Host of requests, and does not serve without that check"
            )
        app.default_router.rules[0:0] = [
            Rule(_Refusal(self, self.refusal, 403), _Refused),
            Rule(_Refusal(self, self.unknown, 404), _Refused),
            Rule(PathMatches(r"/components/(.*)"), _Components, {"guard": self}),
        ]


def _cut(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _opens_the_page(request) -> bool:
    """Whether ``request`` is a browser's top-level navigation to the page itself."""
    h = request.headers
    return (
        request.method in ("GET", "HEAD")
        and request.path == "/"
        and h.get("Sec-Fetch-Mode", "").lower() == "navigate"
        and h.get("Sec-Fetch-Dest", "").lower() == "document"
    )


class _Refusal(Matcher):
    """Matches the requests a :class:`HostGuard` test (``refusal`` or ``unknown``) refuses;
    the status and the reason go to the handler."""

    def __init__(self, guard: HostGuard, test, status: int):
        self.guard, self.test, self.status = guard, test, status

    def match(self, request) -> dict | None:
        reason = self.test(request)
        if reason is None:
            return None
        self.guard.record(request, self.status, reason)
        return {"path_args": [], "path_kwargs": {"reason": reason, "status": str(self.status)}}


class _Refused(RequestHandler):
    """The status and the reason as plain text, whatever the method (a websocket upgrade
    too)."""

    def prepare(self) -> None:
        status = int(self.path_kwargs["status"])
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        word = "refused" if status == 403 else "not found"
        self.finish(f"passlens: {word}: {self.path_kwargs['reason']}\n")


def own_components() -> tuple[type, ...]:
    """The app's own components, whose listed files ``/components/`` may serve."""
    return (GraphPane, MapPane, TabBar, Timeline)


def component(module_name: str, class_name: str) -> type | None:
    """The component ``/components/MODULE/CLASS/...`` may name, or None: one of
    :func:`own_components`, or a class defined in a module of Panel's; only modules already
    loaded are looked at (``sys.modules``, the module's own ``__dict__``): nothing is imported
    and no module ``__getattr__`` runs."""
    for cls in own_components():
        if (cls.__module__, cls.__name__) == (module_name, class_name):
            return cls
    if module_name != "panel" and not module_name.startswith("panel."):
        return None
    module = sys.modules.get(module_name)
    cls = getattr(module, "__dict__", {}).get(class_name)
    if isinstance(cls, type) and issubclass(cls, param.Parameterized):
        return cls if cls.__module__ == module_name else None
    return None


class _Components(ComponentResourceHandler):
    """Panel's ``/components/MODULE/CLASS/ATTRIBUTE/PATH`` route (a file a component lists in
    one of its resource attributes), answering only for a :func:`component`: Panel's own
    handler imports MODULE, whatever it is."""

    def initialize(self, guard: HostGuard) -> None:
        super().initialize()
        self.guard = guard

    def parse_url_path(self, path: str) -> str:
        parts = path.split("/")
        if len(parts) < 4 or component(parts[0], parts[1]) is None:
            reason = f"no component {_cut('/'.join(parts[:2]))!r} of this app"
            self.guard.record(self.request, 404, reason)
            raise HTTPError(404, reason)
        # the module is loaded (component() found the class in it): Panel's lookup of it
        # imports nothing; its checks (a resource attribute, a listed file) then apply
        return super().parse_url_path(path)

    def write_error(self, status_code: int, **kwargs) -> None:
        """The error as plain text (Panel's reason, or passlens')."""
        error = kwargs.get("exc_info", (None, None))[1]
        reason = getattr(error, "log_message", None) or self._reason
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(f"passlens: {status_code}: {reason}\n")


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
    """A running app (from ``serve(..., block=False)``): ``url``, ``port``, ``stop()``,
    ``apps``, the :class:`PassApp` of every browser session opened so far, and ``refused``,
    the last requests its :class:`HostGuard` refused (method, path, status, reason)."""

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
    """Serve the app for a trace (or a saved ``.passlens`` file) on ``address:port`` (a free
    port when 0), with a check ``report`` (by default the trace's last one, which a file
    saved after a check holds; False for none). ``show`` opens a browser. With ``block``
    (the default) prints the URL and serves until Ctrl-C; else serves from a thread and
    returns a :class:`Server`.

    Only requests to localhost, 127.0.0.1 or [::1] on that port (or to ``address``) are
    answered, from pages of those hosts (another site may only open the page), for the paths
    the app's pages ask for; ``allow_host`` adds hosts (``host`` for any port, or
    ``host:port``), e.g. the name of a reverse proxy in front of it. See :class:`HostGuard`.
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
