"""Who may talk to the app's server (`widgets.app`): the `HostGuard` in front of
every Bokeh and Panel handler (Host, Origin, Referer, Sec-Fetch-Site, the paths the app's page
asks for) and the component route that imports nothing (`_Components`)."""

from __future__ import annotations

import collections
import logging
import re
import sys
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

import param
from panel.io.server import ComponentResourceHandler
from tornado.routing import Matcher, PathMatches, Rule
from tornado.web import Application, HTTPError, RequestHandler

from compiler import PasslensError
from widgets.app_maps import GraphPane, MapPane, TabBar, Timeline

# ===== who may talk to the server =============================================================

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
_ANY_ADDRESS = {"", "0.0.0.0", "::", "[::]"}  # listen everywhere: not a name a browser uses
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9_.-]*[a-z0-9_-])(?::(\d{1,5}))?")


class HostError(PasslensError, ValueError):
    """A host to allow (`serve(allow_host=...)`, `passlens serve --allow-host`) that is not
    a host name or address with an optional port."""


def _split_host(text: str) -> tuple[str, int | None] | None:
    """`host[:port]` as (host in lower case, IPv6 in brackets; port or None), or None when
    `text` is not one (a scheme, a path, a wildcard, a bad port, several values)."""
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

    - `Host` must name this server (else 403);
    - an `Origin` (sent by browsers with every websocket and with scripts' requests) and a
      `Referer` must be a page of this server (else 403);
    - a request a browser marks as coming from another site (`Sec-Fetch-Site: cross-site`
      or `same-site`: another port of localhost is the same site) is refused (403) unless it
      is a top-level navigation to the page itself (`GET /`, `Sec-Fetch-Mode: navigate`,
      `Sec-Fetch-Dest: document`), which may also carry another site's `Referer`: a
      link may open the app; an `<img>`, `<script>`, `<iframe>`, `fetch` or
      websocket of another site's page may not reach it;
    - the path must be one the app's pages ask for (`ROUTES`; no `.` or `..`
      segment, NUL or backslash once decoded, at most `MAX_PATH` characters), else
      404. `/components/MODULE/CLASS/...` serves only files listed by the app's own
      components or Panel's, from modules already loaded: nothing is imported
      (`_Components`).

    Why: a page of any web site can make the browser talk to `localhost`: plainly (an
    `<img src=http://localhost:5006/...>`), or through DNS rebinding (its own name, resolved
    to 127.0.0.1 once the page is loaded; the browser then sends `Host` and `Origin` of
    that site, equal to each other). Tornado accepts a websocket whose Origin equals its Host
    (or says `Sec-Fetch-Site: same-origin`) without asking Bokeh's origin list, Bokeh checks
    nothing on plain HTTP requests, and Panel's `/components/` route imports the module its
    URL names (`/components/unittest.__main__/x/y/z` ended the server).

    Allowed hosts: localhost, 127.0.0.1 and [::1] on the served `port`; the listening
    `address` on it (unless it listens everywhere); and each of `allow_host`, `host`
    (any port) or `host:port`. `refused` keeps the last refusals as (method, path,
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
        """Whether `netloc` (`host[:port]`, the port `default_port` when left out)
        is an allowed host."""
        entry = _split_host(netloc)
        if entry is None:
            return False
        host, port = entry[0], default_port if entry[1] is None else entry[1]
        return any(host == h and p in (None, port) for h, p in self.allowed)

    def is_own_page(self, url: str) -> bool:
        """Whether `url` (an Origin or a Referer) is of a page of an allowed host."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or "@" in parts.netloc:
            return False
        return self.allows(parts.netloc, 443 if parts.scheme == "https" else 80)

    def refusal(self, request) -> str | None:
        """Why `request` (a Tornado request) is refused with 403, or None when it is not."""
        headers = request.headers
        host = headers.get("Host", "")
        if not self.allows(host):
            return f"Host {host!r} is not this server ({self.hint})"
        steering = [k for k in request.query_arguments if k.lower().startswith("bokeh-")]
        if steering:
            # Bokeh reads these from the page's URL: bokeh-absolute-url=https:evil.example/
            # makes every script of the page load from another site, in the app's origin
            return (
                f"the query argument {_cut(steering[0], 60)!r}: the app's pages take no "
                "bokeh-* arguments (they would choose where the page loads its scripts from)"
            )
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
        """Why `request`'s path is not one of the app's (404), or None when it is."""
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
        """Keep a refusal in `refused` and log it (`passlens.serve`, level INFO)."""
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
        """Put the guard in front of every handler of a Bokeh `server` (not started yet):
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
    """Whether `request` is a browser's top-level navigation to the page itself."""
    h = request.headers
    return (
        request.method in ("GET", "HEAD")
        and request.path == "/"
        and h.get("Sec-Fetch-Mode", "").lower() == "navigate"
        and h.get("Sec-Fetch-Dest", "").lower() == "document"
    )


class _Refusal(Matcher):
    """Matches the requests a `HostGuard` test (`refusal` or `unknown`) refuses;
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
    """The app's own components, whose listed files `/components/` may serve."""
    return (GraphPane, MapPane, TabBar, Timeline)


def component(module_name: str, class_name: str) -> type | None:
    """The component `/components/MODULE/CLASS/...` may name, or None: one of
    `own_components`, or a class defined in a module of Panel's; only modules already
    loaded are looked at (`sys.modules`, the module's own `__dict__`): nothing is imported
    and no module `__getattr__` runs."""
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
    """Panel's `/components/MODULE/CLASS/ATTRIBUTE/PATH` route (a file a component lists in
    one of its resource attributes), answering only for a `component`: Panel's own
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


__all__ = [
    "LOCAL_HOSTS",
    "MAX_PATH",
    "ROUTES",
    "HostError",
    "HostGuard",
    "component",
    "own_components",
]
