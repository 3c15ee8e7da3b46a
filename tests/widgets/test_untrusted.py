"""Untrusted inputs (issue #14): a ``.passlens`` trace and an HTML report are shared between
people, so every string in them is untrusted.

- ``passlens serve`` answers only requests addressed to it by a local name, from its own
  pages: real HTTP requests and websocket handshakes with forged ``Host`` / ``Origin`` headers
  (DNS rebinding) are refused, ``--allow-host`` lets a named host in.
- A trace with markup in every string it can hold (names of values, functions and weights,
  module paths, provenance, pass names, errors, attributes, a source graph, backend texts) and
  a check report with markup in its findings: no render path (report, a step in a notebook
  cell, the stepper, the Panel app, the tables, the static SVG) makes an element of it, and in
  Chromium stepping, selecting, hovering and searching runs none of it.
"""

import asyncio
import html.parser
import http.client
import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

import explorer
from compiler.ir.nodes import Call, Constant, FuncCall, Function, Module, Var
from compiler.ir.provenance import Provenance
from compiler.ir.types import TensorType
from explorer.check import Finding, LayerError, NodeError, Report, StepCheck
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param, Signature
from explorer.store import load, save
from explorer.trace import Step, Trace
from passlens.cli import main
from tests.explorer.store.test_store import rewrite_member
from tests.widgets.graph_page import Graph, expect
from tests.widgets.serving import passlens_serve
from widgets import ir_text, views
from widgets.app import HostError, HostGuard, PassApp, serve
from widgets.render import summary_html
from widgets.report import report_html, step_html, write_html
from widgets.snapshot import GraphSnapshot, graph_page
from widgets.stepper import PassStepper
from widgets.tables import NumericsTable, ParamTable, ShapeTable, TextDiff
from widgets.tables_html import SORT_JS

ROOT = Path(__file__).parents[2]

# ===== DNS rebinding: Host and Origin ===========================================================


@pytest.fixture(scope="module")
def served(mlp_trace):
    """The app on a free port, and the same trace served with two hosts allowed."""
    with serve(mlp_trace, block=False) as srv:
        with serve(
            mlp_trace, block=False, allow_host=["proxy.example", "lan.example:8080"]
        ) as open_srv:
            yield srv, open_srv


def request(port: int, host: str | None, path: str = "/", method: str = "GET", **headers):
    """``method path`` to 127.0.0.1:port with this Host header (none when None):
    ``(status, content type, body)``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        for k, v in headers.items():
            conn.putheader(k.replace("_", "-"), v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def handshake(port: int, host: str, origin: str | None = None, **headers) -> int:
    """A Bokeh websocket handshake (with a session token of a page the server gave) sent to
    127.0.0.1:port with these headers: 101 when the socket opened, else the HTTP status."""
    from tornado.httpclient import HTTPClientError, HTTPRequest
    from tornado.websocket import websocket_connect

    _, _, page = request(port, f"localhost:{port}")
    token = re.search(r'"token":"([^"]+)"', page).group(1)
    sent = {"Host": host, **{k.replace("_", "-"): v for k, v in headers.items()}}
    if origin is not None:
        sent["Origin"] = origin

    async def connect() -> int:
        req = HTTPRequest(f"ws://127.0.0.1:{port}/ws", headers=sent, request_timeout=30)
        try:
            conn = await websocket_connect(req, subprotocols=["bokeh", token])
        except HTTPClientError as e:
            return e.code
        conn.close()
        return 101

    return asyncio.run(connect())


def test_local_hosts_are_answered(served):
    srv, _ = served
    p = srv.port
    for host in (f"localhost:{p}", f"127.0.0.1:{p}", f"[::1]:{p}", f"LocalHost:{p}"):
        status, _, page = request(p, host)
        assert status == 200 and "bokeh" in page, host


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{p}",  # DNS rebinding: the attacker's name, resolved to 127.0.0.1
        "evil.example",
        "localhost.evil.example:{p}",
        "127.0.0.1.nip.io:{p}",
        "localhost:{q}",  # another port: another server
        "",
    ],
)
def test_a_forged_host_is_refused(served, host):
    srv, _ = served
    p = srv.port
    host = host.format(p=p, q=p + 1)
    for method, path in (("GET", "/"), ("GET", "/ws"), ("HEAD", "/"), ("POST", "/")):
        status, kind, body = request(p, host, path, method)
        assert status == 403 and kind.startswith("text/plain"), (method, path, status)
        if method != "HEAD":
            assert body.startswith("passlens: refused: Host") and "--allow-host" in body
    # the websocket too, even with an Origin equal to the Host
    assert handshake(p, host, f"http://{host}") == 403


@pytest.mark.parametrize("host", ["localhost:{p}, evil.example:{p}", "localhost:{p}/x", None])
def test_a_malformed_host_is_refused(served, host):
    """Tornado answers 400 to these before routing; the guard would refuse them with 403."""
    srv, _ = served
    p = srv.port
    host = None if host is None else host.format(p=p)
    for method, path in (("GET", "/"), ("GET", "/ws"), ("POST", "/")):
        assert request(p, host, path, method)[0] in (400, 403)


def test_the_websocket_origin_must_be_a_page_of_the_server(served):
    srv, _ = served
    p = srv.port
    local = f"localhost:{p}"
    assert handshake(p, local, f"http://{local}") == 101
    assert handshake(p, f"127.0.0.1:{p}", f"http://127.0.0.1:{p}") == 101
    assert handshake(p, local) == 101  # no Origin: not a browser, nothing to forge
    # DNS rebinding: Origin and Host both the attacker's (Tornado takes that as same-origin)
    assert handshake(p, f"evil.example:{p}", f"http://evil.example:{p}") == 403
    # a page elsewhere, even when it claims to be same-origin
    evil = f"http://evil.example:{p}"
    assert handshake(p, local, evil) == 403
    assert handshake(p, local, evil, Sec_Fetch_Site="same-origin") == 403
    for origin in ("null", f"http://localhost:{p + 1}", f"file://{local}", "http://localhost"):
        assert handshake(p, local, origin) == 403, origin
    # a script's request from a page elsewhere
    status, _, body = request(p, local, "/", Origin=evil)
    assert status == 403 and body.startswith("passlens: refused: Origin")


def test_allow_host_lets_a_named_host_in(served):
    _, srv = served
    p = srv.port
    for host in ("proxy.example", f"proxy.example:{p}", "proxy.example:8443", "lan.example:8080"):
        assert request(p, host)[0] == 200, host
    for host in (f"lan.example:{p}", f"evil.example:{p}", "sub.proxy.example"):
        assert request(p, host)[0] == 403, host
    assert handshake(p, "proxy.example", "https://proxy.example") == 101
    assert handshake(p, f"localhost:{p}", "https://proxy.example") == 101  # a rewriting proxy
    assert handshake(p, "proxy.example", "https://evil.example") == 403


def test_host_guard_rules():
    guard = HostGuard(5006, allow_host=["Proxy.Example", "lan.example:80", "[fe80::1]:9"])
    assert guard.allows("localhost:5006") and guard.allows("[::1]:5006")
    assert not guard.allows("localhost") and not guard.allows("localhost:5007")
    assert guard.allows("proxy.example") and guard.allows("proxy.example:1")
    assert guard.allows("lan.example") and not guard.allows("lan.example:8080")
    assert guard.allows("[FE80::1]:9") and not guard.allows("[fe80::1]:5006")
    assert not guard.allows("localhost:5006/x") and not guard.allows("user@localhost:5006")
    assert HostGuard(80).allows("localhost")  # no port in Host: port 80
    assert HostGuard(5006, address="192.168.1.5").allows("192.168.1.5:5006")
    assert HostGuard(5006, address="::1").allows("[::1]:5006")
    assert not HostGuard(5006, address="0.0.0.0").allows("0.0.0.0:5006")
    # Bokeh's own websocket origin list agrees (it cannot read IPv6 brackets)
    assert guard.websocket_origins() == [
        "127.0.0.1:5006",
        "lan.example:80",
        "localhost:5006",
        "proxy.example",
    ]


@pytest.mark.parametrize(
    "host", ["http://proxy.example", "*", "*.example", "proxy.example/app", "a b", "x:99999", ""]
)
def test_a_bad_host_to_allow_is_an_error(mlp_trace, host):
    with pytest.raises(HostError, match="cannot allow host") as info:
        serve(mlp_trace, block=False, allow_host=[host])
    assert isinstance(info.value, explorer.PasslensError)


def test_passlens_serve_allow_host(mlp_trace, tmp_path, capsys):
    path = tmp_path / "t.passlens"
    mlp_trace.save(path)
    assert main(["serve", str(path), "--allow-host", "http://proxy.example"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("passlens: error: cannot allow host 'http://proxy.example'")
    allow = ["--allow-host", "proxy.example", "--allow-host", "lan.example:8080"]
    with passlens_serve(path, *allow) as (_url, port, _line):
        assert request(port, f"localhost:{port}")[0] == 200
        assert request(port, f"proxy.example:{port}")[0] == 200
        assert request(port, "lan.example:8080")[0] == 200
        assert request(port, f"evil.example:{port}")[0] == 403
        assert handshake(port, f"evil.example:{port}", f"http://evil.example:{port}") == 403


# ===== markup in every string of a trace ======================================================

PAYLOAD = "<img src=x onerror=alert(1)></script><script>alert(2)</script>\"'><svg onload=alert(3)>"


def evil(tag: str) -> str:
    """The payload after a short tag saying which field it is in (labels are cut at 44
    characters: the tag and the ``<img`` survive)."""
    return tag + PAYLOAD


# tags of the fields the views show (local value names are made safe by the IR printer, and
# a step's spec, a source graph's signatures and a parameter's own name are not shown)
SHOWN = (
    "source pass codegen failing pl fe err tb ff "  # trace and steps
    "in w fn at fw mp op fx file pn "  # the IR: names, attributes, provenance
    "id0 kind sop slabel sfn stype dtype akey aval pkey pval sfile sgroup wid wlabel wtype "
    "etype0 "  # a source graph
    "textname text llvm "  # backend texts
    "msg where mismatch bloat pf status"  # a check report
).split()


def payload_trace(path: Path) -> Trace:
    """A trace with the payload in every string it can hold, saved to ``path`` (with an
    error type of the file's own naming) and loaded back: a source step (a framework graph),
    the import, fold-constant (a weight folded: a changed node and a ghost), a compiled step
    with backend texts, and a failed pass."""
    prov = Provenance(
        framework=evil("fw"),
        module_path=evil("mp") + ".sub",
        source_op=evil("op"),
        source_node=evil("fx"),
        location=f"/models/{evil('file')}.py:12",
        pass_name=evil("pn"),
    )
    t = TensorType((2, 3), "float32")
    x = Var(evil("in"), t, prov)
    w = Constant(np.arange(6, dtype=np.float32).reshape(2, 3), name=evil("w"), prov=prov)
    p = Var(evil("pa"), t)
    callee = Function.from_output([p], Call("relu", (p,), {}, prov=prov, name=evil("rv")), {})
    gelu = Call("gelu", (x,), {"approximate": evil("at")}, prov=prov, name=evil("gv"))
    call = FuncCall(evil("fn"), (gelu,), t, prov, evil("cv"))
    y = Call("add", (call, Call("exp", (w,), {}, prov=prov, name=evil("ev"))), {}, prov=prov)
    main_fn = Function.from_output([x], y, {"num_input": 1})
    imported, folded = explorer.explore(
        Module({"main": main_fn, evil("fn"): callee}), pipeline="fold-constant"
    ).steps

    g = GraphModel()
    for i in range(2):
        g.nodes[evil(f"id{i}")] = GraphNode(
            id=evil(f"id{i}"),
            kind=evil("kind") if i else "op",
            op=evil("sop"),
            label=evil("slabel"),
            function=evil("sfn"),
            type=evil("stype"),
            shape=(2, evil("dim")),
            dtype=evil("dtype"),
            attrs={evil("akey"): evil("aval")},
            provenance={evil("pkey"): evil("pval"), "file": evil("sfile")},
            group=evil("sgroup") + ".a",
            nbytes=8,
        )
    g.nodes[evil("wid")] = GraphNode(
        evil("wid"), "weight", "const", evil("wlabel"), "", evil("wtype"), group=evil("sgroup")
    )
    g.edges += [
        GraphEdge(evil("id0"), evil("id1"), 0, evil("etype0")),
        GraphEdge(evil("wid"), evil("id1"), 1, evil("etype1")),
    ]
    g.params[evil("pkey")] = Param(evil("pname"), (2, 3), evil("pdtype"), 24, evil("wid"))
    g.signatures[evil("sig")] = Signature(
        evil("sig"), [(evil("sp"), evil("st"))], evil("sr"), 1, {evil("sa"): evil("sv")}
    )
    source = Step(0, "source", evil("source"), source_graph=g)

    imported.index, folded.index = 1, 2
    folded.name, folded.spec = evil("pass"), evil("spec")
    compiled = Module(folded.module.functions, {"backend": "llvm-cpu"})
    codegen = Step(3, "pass", evil("codegen"), before=folded.module, module=compiled)
    codegen._texts = {
        "loop IR": evil("loop"),
        evil("textname"): evil("text"),
        "LLVM IR": evil("llvm"),
    }
    codegen.artifact_bytes = 100  # recorded: the summary does not build the module to know
    failing = Step(
        4,
        "pass",
        evil("failing"),
        before=folded.module,
        error=RuntimeError(evil("err")),
        traceback=evil("tb"),
        failed_node=folded.module.functions["main"].bindings[0],
        failed_function=evil("ff"),
    )
    trace = Trace(
        [source, imported, folded, codegen, failing], pipeline=evil("pl"), frontend=evil("fe")
    )
    save(trace, path)
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    manifest["steps"][4]["error"].update(type=evil("etype"), module=evil("emodule"))
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    return load(path)


def payload_report(trace: Trace) -> Report:
    """A check report on ``trace`` whose findings say the payload (a divergence with per-node
    errors, a shape mismatch, parameter bloat, the failed pass)."""
    s = trace.steps
    node = s[2].module.functions["main"].bindings[0]
    errors = [NodeError(node, evil("where"), 1.0, 0.5, (2, 3))]
    weight = next(iter(s[2].graph.params))
    findings = [
        Finding("diverged", s[2], [node], evil("msg"), {"node_errors": errors}),
        Finding("shape-mismatch", s[2], [node], evil("mismatch")),
        Finding("param-bloat", s[2], [], evil("bloat"), {"growth": [(weight, 24, 24, "why")]}),
        Finding("pass-failed", s[4], [], evil("pf")),
    ]
    checks = [StepCheck(x, evil("status")) for x in s]
    checks[2].layers = {evil("mp") + ".sub": LayerError(0.5, 2.0, node)}  # the error map's
    return Report(trace, findings, checks, "source", 1e-4, 1e-5)


@pytest.fixture(scope="module")
def payload(tmp_path_factory):
    trace = payload_trace(tmp_path_factory.mktemp("untrusted") / "evil.passlens")
    return trace, payload_report(trace)


@pytest.fixture
def cut_texts(monkeypatch):
    """Backend texts longer than shown (the note saying where the rest is names the text)."""
    monkeypatch.setattr(ir_text, "MAX_BACKEND_TEXT", 40)


class Markup(html.parser.HTMLParser):
    """An HTML document as a browser's parser splits it: its elements with their
    attributes, the code of its scripts, and the text it shows (text, attribute values and
    the strings of its JSON data scripts, the graph payloads)."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list]] = []
        self.code: list[str] = []
        self.text: list[str] = []
        self._script: dict | None = None  # the attributes of the script being read
        self.feed(document)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, attrs))
        self.text.extend(v or "" for _, v in attrs)
        if tag == "script":
            self._script = dict(attrs)

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None

    def handle_data(self, data):
        if self._script is None:
            self.text.append(data)
        elif self._script.get("type") == "application/json":
            self.text.extend(_strings(json.loads(data)))  # one JSON value, not cut short
        else:
            self.code.append(data)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


SORT = (SORT_JS, "plSort(this)")  # the only inline handler: a table's sorting


def injected(document: str, svg: bool = False) -> list[str]:
    """The elements and handlers in ``document`` that the payload would make: images,
    frames, event-handler attributes (but the tables' sorting), scripts calling alert, and
    SVG (unless ``svg``: the static graph is one)."""
    found = []
    page = Markup(document)
    for tag, attrs in page.elements:
        if tag in ("img", "iframe", "object", "embed") or (tag == "svg" and not svg):
            found.append(f"<{tag}>")
        for k, v in attrs:
            if k.startswith("on") and not (k == "onclick" and v in SORT):
                found.append(f"<{tag} {k}={v!r}>")
    found += [f"script: {c[:60]!r}" for c in page.code if "alert(" in c]
    return found


def shown(documents) -> str:
    return "\n".join(t for d in documents for t in Markup(d).text)


def assert_safe(documents: dict[str, str], svg: bool = False) -> None:
    bad = {name: found for name, d in documents.items() if (found := injected(d, svg))}
    assert bad == {}


def test_the_report_makes_no_element_of_the_trace(payload, cut_texts):
    trace, report = payload
    documents = {"report": report_html(trace, report), "no report": report_html(trace)}
    assert_safe(documents)
    text = shown(documents.values())
    assert [tag for tag in SHOWN if evil(tag)[:24] not in text] == []


def test_a_step_in_a_notebook_cell_makes_no_element_of_the_trace(payload):
    trace, report = payload
    documents = {}
    for s in trace.steps:
        documents[f"#{s.index}"] = s._repr_html_()
        documents[f"#{s.index} checked"] = step_html(s, s.previous, report)
    documents["trace"] = trace._repr_html_()
    assert_safe(documents)
    text = shown(documents.values())
    assert all(evil(tag)[:24] in text for tag in ("source", "pass", "in", "w", "fw", "wlabel"))


def test_the_stepper_and_the_app_make_no_element_of_the_trace(payload, cut_texts):
    trace, report = payload
    stepper, app = PassStepper(trace, report), PassApp(trace, report, title=evil("title"))
    documents = {"stepper rows": stepper.timeline.rows, "app rows": app.timeline.rows}
    documents["app title"] = app.layout[0].object
    for s in trace.steps:
        stepper.index = app.index = s.index
        assert stepper.tab_names == app.tab_names
        for tab in stepper.tab_names:
            stepper.tab = app.tab = tab
        documents[f"stepper #{s.index}"] = stepper.header.value
        documents[f"app #{s.index}"] = app.header.object
        for tab in (v.title for v in stepper.views if v.scope == "step"):
            documents[f"stepper #{s.index} {tab}"] = stepper.panes[tab].value
            documents[f"app #{s.index} {tab}"] = app.panes[tab].object
    for tab in ("error map", "param map"):  # the layer maps, one per trace
        stepper.tab = app.tab = tab
        documents[f"stepper {tab}"] = stepper.map_views[tab].html
        documents[f"app {tab}"] = app.map_views[tab].html
        assert evil("mp")[:24] in shown([documents[f"app {tab}"]])
    assert_safe(documents)
    # what the headers, timelines and tabs show (the graph is data for the graph component,
    # drawn in the browser tests)
    text = shown(documents.values())
    tabs = "source pass codegen failing err ff w fn at mp op id0 sop stype sgroup textname text "
    tabs += "llvm msg where mismatch bloat pf status"
    assert [tag for tag in tabs.split() if evil(tag)[:24] not in text] == []
    assert all(evil(tag)[:24] in shown([documents["app title"]]) for tag in ("title", "pl", "fe"))


def test_the_tables_and_the_graph_snapshot_make_no_element_of_the_trace(payload):
    trace, report = payload
    documents = {}
    for s in trace.steps:
        documents[f"#{s.index} tables"] = "".join(
            w.html.value
            for w in (ParamTable(s), ShapeTable(s, report), NumericsTable(s, report), TextDiff(s))
        )
        documents[f"#{s.index} snapshot"] = graph_page(s, s.previous, report, title=evil("title"))
        documents[f"#{s.index} collapsed snapshot"] = graph_page(s, s.previous, max_boxes=2)
    documents["summary"] = summary_html(trace, report)
    assert_safe(documents)
    # the snapshot's names are data for the graph component (drawn in the browser tests), and
    # its page title is text
    last = trace.steps[-1]
    page = documents[f"#{last.index} snapshot"]
    assert evil("title")[:24] in shown([page])
    data = [
        json.loads(m.group(1))
        for m in re.finditer(r"id='pl-snapshot'>(.*?)</script>", "".join(documents.values()))
    ]
    assert len(data) == 2 * len(trace.steps)
    assert evil("wlabel")[:24] in "\n".join(_strings(data))
    # in a notebook cell: one iframe whose document is that page, escaped as an attribute
    cell = GraphSnapshot(last, last.previous, report).iframe_html()
    (tag, attrs), *more = Markup(cell).elements
    attrs = dict(attrs)
    assert tag == "iframe" and not more and not [k for k in attrs if k.startswith("on")]
    assert attrs["srcdoc"] == graph_page(last, last.previous, report)


def test_a_saved_report_with_markup_comes_back_the_same_and_escaped(payload, tmp_path):
    """The report saved with the trace (findings, node and layer errors, statuses with the
    payload) renders as the report it was: escaped everywhere."""
    from widgets.tables_html import numerics_table_html

    trace, report = payload
    trace.report = report
    try:
        path = save(trace, tmp_path / "evil-report.passlens")
    finally:
        trace.report = None
    loaded = load(path)
    got = loaded.report
    documents = {
        "report": report_html(loaded, got),
        "numerics": "".join(numerics_table_html(s, got) for s in loaded),
        "repr": got._repr_html_(),
        "app": PassApp(loaded).timeline.rows,  # the app shows the saved report by default
    }
    assert_safe(documents)
    assert documents["report"] == report_html(trace, report)
    assert documents["repr"] == report._repr_html_()
    text = shown(documents.values())
    assert [
        t for t in "msg where mismatch bloat pf status".split() if evil(t)[:24] not in text
    ] == []


# ----- in Chromium ----------------------------------------------------------------------------

# Elements and handlers made from the page's data, searched through open shadow roots (the
# Panel app's panes): images, frames, any on* attribute (but the tables' sorting), and scripts
# calling alert (but JSON data scripts, which hold the payload as data and are never run).
INJECTED = """(sort) => {
  const found = [];
  const walk = (root) => {
    for (const e of root.querySelectorAll("*")) {
      const tag = e.tagName.toLowerCase();
      if (["img", "iframe", "object", "embed"].includes(tag)) found.push("<" + tag + ">");
      for (const a of e.attributes)
        if (a.name.startsWith("on") && !(a.name === "onclick" && sort.includes(a.value)))
          found.push("<" + tag + " " + a.name + ">");
      if (tag === "script" && e.type !== "application/json" && e.textContent.includes("alert("))
        found.push("script");
      if (e.shadowRoot) walk(e.shadowRoot);
    }
  };
  walk(document);
  return found;
}"""


def watch(page) -> list[str]:
    """Record what the page must not do: dialogs (dismissed) and errors."""
    seen: list[str] = []
    page.on("dialog", lambda d: (seen.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: seen.append(f"error: {e}"))
    return seen


def poke(g: Graph) -> None:
    """What a user does to the graph that renders strings: open every group, select and
    hover every box (the details drawer), search (the result list) and pick each hit, show
    the other side."""
    expand = g.root.locator(".plg-expand-all")
    expand.click()
    g.settle()
    boxes = g.root.locator("g.plg-n")
    for k in range(boxes.count()):
        boxes.nth(k).dispatch_event("mouseover")
        boxes.nth(k).dispatch_event("click")
        expect(g.details).to_be_visible()
    for query in ("img", "/on(error|load)/", "<"):
        if g.search(query):
            hits = g.root.locator(".plg-results .plg-r-item")
            for k in range(min(hits.count(), 12)):
                hits.nth(k).dispatch_event("click")
    g.search("")
    if g.root.locator(".plg-mode").is_visible():
        g.root.locator(".plg-before").click()
        expand.click()
        g.root.locator(".plg-after").click()


@pytest.mark.browser
def test_the_report_runs_nothing_from_the_trace_in_chromium(browser, payload, cut_texts, tmp_path):
    trace, report = payload
    path = tmp_path / "evil.html"
    write_html(trace, path, report=report)
    page = browser.new_page(viewport={"width": 1300, "height": 850})
    page.set_default_timeout(10000)
    seen = watch(page)
    page.goto(path.as_uri())
    scripts = page.evaluate("document.scripts.length")
    g = Graph(page, page.locator("#pl-graph.plg"))
    for s in trace.steps:
        page.click(f".pl-step-row[data-step='{s.index}']")
        expect(page.locator("#pl-title")).to_have_text(f"#{s.index} {s.name}")
        for tab in (*(v.key for v in views.views_for(trace, report)), "graph"):
            page.click(f"#pl-tabs button[data-tab={tab}]")
        poke(g)
    expect(page.locator("#pl-error")).to_contain_text(evil("err"))  # the failed pass, last
    page.click("#pl-tabs button[data-tab=error-map]")
    page.click("#pl-pane-error-map td.pl-map-cell")  # to its step, its node selected
    expect(page.locator("#pl-title")).to_have_text(f"#2 {trace.steps[2].name}")
    page.click("#pl-banner")  # to the first finding's numerics
    expect(page.locator("#pl-pane-numerics")).to_contain_text(evil("msg"))
    assert page.evaluate(INJECTED, list(SORT)) == []
    assert page.evaluate("document.scripts.length") == scripts
    assert page.query_selector("img[src=x]") is None and page.query_selector("svg[onload]") is None
    assert seen == []
    page.close()


@pytest.mark.browser
def test_a_step_in_a_notebook_cell_runs_nothing_from_the_trace_in_chromium(browser, payload):
    trace, report = payload
    page = browser.new_page(viewport={"width": 1300, "height": 850})
    page.set_default_timeout(10000)
    seen = watch(page)
    for s in trace.steps:
        page.set_content(f"<!DOCTYPE html><body>{step_html(s, s.previous, report)}</body>")
        g = Graph(page, page.locator(".plg"))
        expect(g.root.locator("g.plg-n").first).to_be_attached()
        poke(g)
        assert page.evaluate(INJECTED, list(SORT)) == []
        assert page.query_selector("img[src=x]") is None
    assert seen == []
    page.close()


@pytest.mark.browser
def test_the_app_runs_nothing_from_the_trace_in_chromium(browser, payload, cut_texts):
    trace, report = payload
    with serve(trace, report=report, block=False, title=evil("title")) as srv:
        page = browser.new_page(viewport={"width": 1400, "height": 950})
        page.set_default_timeout(15000)
        seen = watch(page)
        page.goto(srv.url)
        g = Graph(page, page.locator(".plg"))
        expect(g.root.locator("g.plg-n").first).to_be_attached()
        for s in trace.steps:
            page.locator(f".pl-step-row[data-step='{s.index}']").click()
            expect(page.locator(".pl-step-title")).to_have_text(f"#{s.index} {s.name}")
            for tab in (*(v.key for v in views.views_for(trace, report)), "graph"):
                page.locator(f".pl-tabs button[data-tab={tab}]").click()
            poke(g)
        expect(page.locator(".pl-error")).to_contain_text(evil("err"))
        assert page.evaluate(INJECTED, list(SORT)) == []
        assert page.query_selector("img[src=x]") is None
        assert seen == []
        page.close()
