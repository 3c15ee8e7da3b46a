"""Red-team break of issue 39's promise that another site may only *open* the served page:
Bokeh takes ``bokeh-absolute-url`` from the page's query string and writes it into every
``<script src>`` of the page; ``https:evil.example/...`` on an http page is, by the WHATWG URL
rules browsers follow, ``https://evil.example/...``. So a link from any site (an allowed
top-level navigation) makes the app's page run that site's script in the app's origin.
Fixed: the guard refuses every bokeh-* query argument (403)."""

from __future__ import annotations

import http.client

import explorer

TEXT = "def @main(%x: f32[2]) -> f32[2] {\n  %a: f32[2] = relu(%x)\n  return %a\n}"


def test_a_link_from_another_site_cannot_choose_where_the_page_loads_scripts_from():
    from widgets.app import serve

    server = serve(explorer.explore(TEXT), port=0, block=False)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request(
            "GET",
            "/?bokeh-absolute-url=https%3A%2F%2Fevil.example%2F",
            headers={
                "Host": f"localhost:{server.port}",
                "Sec-Fetch-Site": "cross-site",
                "Sec-Fetch-Mode": "navigate",
                "Sec-Fetch-Dest": "document",
                "Referer": "https://evil.example/",
            },
        )
        response = conn.getresponse()
        body = response.read().decode("utf-8", "replace")
        conn.close()
    finally:
        server.stop()
    assert response.status == 403 and "evil.example" not in body
    assert "bokeh-absolute-url" in body
