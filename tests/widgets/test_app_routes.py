"""``passlens serve`` answers only its own pages (issue #39): no route imports a module a
request names (Panel's ``/components/MODULE/...`` did: ``this``, and ``unittest.__main__``
ended the server), no path leaves the app's files, unknown routes are 404, requests a browser
marks as coming from another site are refused except a top-level navigation to the page, and
no request stops the server. The app is served in this process (``block=False``), so what the
server imports shows in ``sys.modules``."""

from __future__ import annotations

import importlib.abc
import sys

import pytest

from tests.widgets.serving import passlens_serve
from tests.widgets.test_untrusted import handshake, request
from widgets.app import MAX_PATH, Timeline, component, serve

# modules a request may name: importing them prints (this), opens a browser (antigravity),
# ends the process (unittest.__main__), starts a server or a GUI; and ones already loaded
DANGEROUS = (
    "this",
    "antigravity",
    "unittest.__main__",
    "idlelib.idle",
    "turtle",
    "xmlrpc.server",
    "pydoc",
    "panel.__main__",  # Panel's own command line: a module of Panel's, not loaded
    "panel.tests.conftest",
    "__phello__",
    "tests.widgets._not_a_module",
)
LOADED = ("os", "sys", "subprocess", "builtins", "__main__", "panel.io.server", "widgets.app")

FUZZ = [
    *(f"/components/{m}/x/y/z" for m in DANGEROUS + LOADED),
    "/components/os/system/__css__/x",
    "/components/subprocess/Popen/__javascript__/x",
    "/components/panel.io.server/ComponentResourceHandler/_css/x",  # not a component
    "/components/panel/__getattr__/_css/x",
    "/components/widgets.app_maps/GraphPane/__css__/..%2f..%2fpasslens%2fcli.py",
    "/components/widgets.app_maps/GraphPane/_esm/../../passlens/cli.py",
    "/components/%2e%2e/x/y/z",
    "/components/..%2f..%2fetc/x/y/z",
    "/components/this%00/x/y/z",
    "/components/this%2ex/y/z/w",
    "/components/" + "a." * 3000 + "this/x/y/z",  # very long
    "/components/" + "a/" * 5000,  # very deep
    "/components/this",
    "/components/",
    "/" + "../" * 200 + "etc/passwd",
    "/static/" + "..%2f" * 50 + "etc/passwd",
    "/static/js/..%2f..%2f..%2f..%2fserver%2ftornado.py",
    "/static/extensions/panel/" + "%2e%2e%2f" * 20 + "etc/passwd",
    "/static/extensions/panel/..%2f__init__.py",
    "/static/extensions/panel/%2e%2e/io/server.py",
    "/static/extensions/panel/..\\..\\__init__.py",
    "/static/extensions/bokeh/x.js",
    "/static/%00",
    "/static/js/bokeh.min.js%00.py",
    "/static//etc/passwd",
    "//etc/passwd",
    "/autoload.js?bokeh-autoload-element=x&bokeh-absolute-url=http://evil.example",
    "/metadata",
    "/liveness",
    "/rest/session_info",
    "/admin",
    "/ws/../components/this/x/y/z",
    "/x" * 3000,
    "/%ff%fe%00",
]


class _Blocker(importlib.abc.MetaPathFinder):
    """Records every module looked for while it is first on ``sys.meta_path`` (the server's
    thread included) and refuses the dangerous ones, so a failing run stays harmless."""

    def __init__(self):
        self.looked_for: list[str] = []

    def find_spec(self, fullname, path=None, target=None):
        self.looked_for.append(fullname)
        if fullname.split(".")[0] in {d.split(".")[0] for d in DANGEROUS}:
            raise ImportError(f"test: {fullname} may not be imported")
        return None


@pytest.fixture(scope="module")
def app(mlp_trace):
    with serve(mlp_trace, block=False) as srv:
        yield srv


def get(srv, path: str, method: str = "GET", **headers) -> int:
    return request(srv.port, f"localhost:{srv.port}", path, method, **headers)[0]


def answering(srv) -> bool:
    return get(srv, "/static/js/bokeh.min.js", "HEAD") == 200


def test_no_request_imports_a_module_or_stops_the_server(app):
    assert get(app, "/") == 200 and answering(app)  # warm: the first page loads what it needs
    before = set(sys.modules)
    assert not {"this", "antigravity", "unittest.__main__", "panel.__main__"} & before
    blocker = _Blocker()
    sys.meta_path.insert(0, blocker)
    try:
        for path in FUZZ:
            for method in ("GET", "HEAD"):
                status = get(app, path, method)
                assert status in (400, 403, 404, 414, 431), (method, path[:100], status)
                assert answering(app), (method, path[:100])
    finally:
        sys.meta_path.remove(blocker)
    assert blocker.looked_for == []
    assert set(sys.modules) - before == set()
    assert not [m for m in DANGEROUS if m in sys.modules and m not in before]
    assert app.thread.is_alive() and get(app, "/") == 200
    # each was refused by passlens, with a reason (not by Panel's handler after an import)
    refused = {path for _method, path, _status, _reason in app.refused}
    assert "/components/this/x/y/z" in refused and "/components/unittest.__main__/x/y/z" in refused


def test_the_pages_own_routes_are_answered(app):
    for path in (
        "/",
        "/favicon.ico",
        "/static/js/bokeh.min.js",
        "/static/extensions/panel/panel.min.js",
        "/static/extensions/panel/css/loading.css?v=1",
    ):
        assert get(app, path) == 200, path


def test_component_files_only_from_the_apps_and_panels_components(app, monkeypatch):
    import panel.template.vanilla  # noqa: F401  (a Panel component listing a file of its own)

    assert component("panel.template.vanilla", "VanillaTemplate") is not None
    assert get(app, "/components/panel.template.vanilla/VanillaTemplate/_css/vanilla.css") == 200
    # a file the component does not list; an attribute that is not a resource
    assert get(app, "/components/panel.template.vanilla/VanillaTemplate/_css/vanilla.html") == 403
    assert get(app, "/components/panel.template.vanilla/VanillaTemplate/__doc__/x") == 403
    # the app's own components: a file one lists is served, from its module's folder
    monkeypatch.setattr(Timeline, "__css__", ["static/timeline.js"], raising=False)
    assert get(app, "/components/widgets.app_maps/Timeline/__css__/static/timeline.js") == 200
    assert get(app, "/components/widgets.app_maps/Timeline/__css__/static/tabs.js") == 403
    # a class of ours that is not a component; a module that is not loaded
    assert component("widgets.app", "PassApp") is None
    assert get(app, "/components/widgets.app/PassApp/__css__/app.py") == 404
    assert "panel.io.admin" not in sys.modules
    assert get(app, "/components/panel.io.admin/Admin/_css/x.css") == 404
    assert "panel.io.admin" not in sys.modules


def sec(site: str, mode: str = "", dest: str = "", **more: str) -> dict:
    """The Sec-Fetch headers Chromium sends (those given), and more headers."""
    given = {"Sec_Fetch_Site": site, "Sec_Fetch_Mode": mode, "Sec_Fetch_Dest": dest}
    return {k: v for k, v in given.items() if v} | more


BOKEH = "/static/js/bokeh.min.js"
EVIL = "http://evil.example/"


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        # another site's page: an <img>, a <script>, a no-cors fetch, an <iframe> of the page
        ("/components/this/x/y/z", sec("cross-site", "no-cors", "image"), 403),
        (BOKEH, sec("cross-site", "no-cors", "script"), 403),
        ("/", sec("cross-site", "no-cors", "empty"), 403),
        ("/", sec("cross-site", "navigate", "iframe"), 403),
        # another port of localhost is the same site, not the same origin
        (BOKEH, sec("same-site", "no-cors", "script"), 403),
        # a Referer of another origin (an older browser, no Sec-Fetch headers)
        (BOKEH, {"Referer": "http://127.0.0.1:1/page.html"}, 403),
        ("/", {"Referer": EVIL}, 403),
        ("/", {"Referer": "http://localhost:{p}@evil.example/"}, 403),
        ("/", {"Referer": "null"}, 403),
        # a link on another site opens the page (a top-level navigation)
        ("/", sec("cross-site", "navigate", "document", Referer=EVIL), 200),
        ("/", sec("same-site", "navigate", "document"), 200),
        # but not a form posted to it, nor another path
        ("/", sec("cross-site", "navigate", "document", Origin=EVIL.rstrip("/")), 403),
        (BOKEH, sec("cross-site", "navigate", "document"), 403),
        # the page's own requests, a typed URL
        (BOKEH, sec("same-origin", "no-cors", "script", Referer="http://localhost:{p}/"), 200),
        ("/", sec("none", "navigate", "document"), 200),
        ("/", {"Referer": "http://127.0.0.1:{p}/"}, 200),
    ],
)
def test_requests_from_another_site(app, path, headers, status):
    headers = {k: v.format(p=app.port) for k, v in headers.items()}
    assert get(app, path, **headers) == status


def test_the_websocket_of_another_site_is_refused(app):
    p = app.port
    local = f"localhost:{p}"
    assert handshake(p, local, f"http://{local}", Sec_Fetch_Site="same-origin") == 101
    assert handshake(p, local, f"http://127.0.0.1:{p + 1}", Sec_Fetch_Site="cross-site") == 403
    # no Origin, yet marked cross-site: refused all the same
    assert handshake(p, local, None, Sec_Fetch_Site="cross-site", Sec_Fetch_Mode="websocket") == 403
    assert handshake(p, local, None, Referer="http://evil.example/") == 403


def test_a_long_path_is_not_found(app):
    assert get(app, "/static/js/" + "a" * MAX_PATH) == 404
    assert answering(app)


def test_passlens_serve_survives_the_requests(tmp_path, mlp_trace):
    """`passlens serve` (its own process): what ended it is answered 404, and it still serves
    and stops on Ctrl-C with status 0."""
    path = tmp_path / "t.passlens"
    mlp_trace.save(path)
    with passlens_serve(path) as (_url, port, _line):
        host = f"localhost:{port}"
        for mod in ("unittest.__main__", "this", "antigravity"):
            status, _, body = request(port, host, f"/components/{mod}/x/y/z")
            assert status == 404 and "no component" in body, (mod, status)
        assert request(port, host, "/")[0] == 200
