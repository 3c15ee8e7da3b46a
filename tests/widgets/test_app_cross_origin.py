"""A page of another origin in headless Chromium (issue #39): served by a second local HTTP
server (127.0.0.1 on another port), it points an ``<img>``, ``<script>``s, an ``<iframe>``,
a ``fetch(..., {mode: "no-cors"})`` and a ``WebSocket`` at the app on localhost. The app's
server refuses every one (its refusal log says why), imports nothing they name, and still
serves its own page, which a link on that page opens. Skipped where Chromium or Playwright is
missing."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.widgets.graph_page import wait_until
from tests.widgets.test_browser import TRAP  # skips where Chromium is missing
from widgets.app import serve

pytestmark = pytest.mark.browser

NAMED = ("this", "antigravity", "unittest.__main__")

PAGE = """<!doctype html><meta charset=utf-8><title>elsewhere</title>
<img src="{app}/components/this/x/y/z">
<img referrerpolicy="no-referrer" src="{app}/components/antigravity/x/y/z">
<script src="{app}/components/unittest.__main__/x/y/z"></script>
<script src="{app}/static/js/bokeh.min.js"></script>
<iframe src="{app}/"></iframe>
<a id="open" href="{app}/">open the app</a>
<script>
  window.fetched = "pending";
  fetch("{app}/components/this/fetch/y/z", {{mode: "no-cors"}})
    .then(() => window.fetched = "answered", () => window.fetched = "failed");
  window.socket = "pending";
  const ws = new WebSocket("{ws}/ws");
  ws.onopen = () => window.socket = "open";
  ws.onerror = () => window.socket = "error";
</script>
"""

# what the page asks of the app: path -> the refusal's reason starts with
EXPECTED = {
    "/components/this/x/y/z": "Referer 'http://127.0.0.1:",
    "/components/antigravity/x/y/z": "a cross-site request ('image')",  # no Referer sent
    "/components/unittest.__main__/x/y/z": "Referer",
    "/static/js/bokeh.min.js": "Referer",
    "/": "Referer",  # the iframe
    "/components/this/fetch/y/z": "Referer",
    "/ws": "Origin 'http://127.0.0.1:",
}


@contextmanager
def elsewhere(html: str) -> Iterator[str]:
    """Serve ``html`` at http://127.0.0.1:PORT/ from a thread: another origin (and site) than
    http://localhost:APP/."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_page_of_another_origin_reaches_nothing(browser, mlp_trace):
    assert not [m for m in NAMED if m in sys.modules]
    with serve(mlp_trace, block=False) as srv:
        app = f"http://localhost:{srv.port}"
        html = PAGE.format(app=app, ws=f"ws://localhost:{srv.port}")
        with elsewhere(html) as other:
            page = browser.new_page()
            page.set_default_timeout(15000)
            page.add_init_script(TRAP)
            try:
                page.goto(other)

                def refused() -> dict:
                    return {path: reason for _m, path, _s, reason in srv.refused}

                wait_until(page, lambda: EXPECTED.keys() <= refused().keys(), "the refusals")
                wait_until(page, lambda: page.evaluate("window.fetched") != "pending", "fetch")
                wait_until(page, lambda: page.evaluate("window.socket") == "error", "socket")
                reasons = refused()
                for path, start in EXPECTED.items():
                    assert reasons[path].startswith(start), (path, reasons[path])
                assert {s for _m, _p, s, _r in srv.refused} == {403}
                assert not [m for m in NAMED if m in sys.modules]
                # the page could not read a thing; the iframe shows the refusal, not the app
                assert page.evaluate("typeof window.Bokeh") == "undefined"
                frame = page.frames[1]
                assert frame.locator("body").inner_text().startswith("passlens: refused")
                assert srv.apps == []  # no session was opened for that page
                # a link opens the app (a top-level navigation), which then works
                page.click("#open")
                page.wait_for_url(f"{app}/")
                page.locator(".plg g.plg-n").first.wait_for()
                page.locator(".pl-next button").click()
                wait_until(page, lambda: srv.apps and srv.apps[0].index > 0, "a step")
                # its own requests all answered: no refusal but those of the other page
                assert {path for _m, path, _s, _r in srv.refused} == EXPECTED.keys()
            finally:
                page.close()
        assert srv.thread.is_alive()
