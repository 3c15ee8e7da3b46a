"""An exported step opens in Google's Model Explorer (``ai-edge-model-explorer``, offline):
the ``model-explorer`` command serves the graph JSON and its node data, headless Chromium
loads it, and the nodes are found by their labels (in the search and in the node data
table); names from the model stay text.

The command is ``$PASSLENS_MODEL_EXPLORER``, else ``model-explorer`` next to this Python (what
``pip install ai-edge-model-explorer`` in the project's venv gives), else on PATH; or a venv of
its own (``python3 -m venv /tmp/mevenv && /tmp/mevenv/bin/pip install ai-edge-model-explorer``,
then ``PASSLENS_MODEL_EXPLORER=/tmp/mevenv/bin/model-explorer``)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import explorer
from compiler import models
from tests.explorer.test_interop import EVIL, evil_trace

pytestmark = pytest.mark.browser

sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")
if CHROMIUM is None:
    pytest.skip("chromium is not installed", allow_module_level=True)


def _model_explorer() -> str | None:
    """$PASSLENS_MODEL_EXPLORER, else model-explorer next to this Python (the venv's bin,
    not always on PATH), else on PATH."""
    if os.environ.get("PASSLENS_MODEL_EXPLORER"):
        return os.environ["PASSLENS_MODEL_EXPLORER"]
    beside = Path(sys.executable).parent / "model-explorer"
    return str(beside) if beside.is_file() else shutil.which("model-explorer")


MODEL_EXPLORER = _model_explorer()
if not MODEL_EXPLORER:
    pytest.skip(
        "Model Explorer is not installed: pip install ai-edge-model-explorer (model-explorer on "
        "PATH), or set PASSLENS_MODEL_EXPLORER to its model-explorer command",
        allow_module_level=True,
    )

ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
expect = sync_api.expect
TRAP = "window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));"
RESULTS = re.compile(r"^\s*\d+ results?\s*$")
LOCAL = re.compile(r"^(https?://(127\.0\.0\.1|localhost)(:\d+)?/|data:|blob:|about:)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """``model-explorer PATHS`` on a free port; ``url`` is the page that opens them."""

    def __init__(self, graph, node_data=()):
        cmd = [MODEL_EXPLORER, str(graph), "--no_open_in_browser", "--host", "127.0.0.1"]
        cmd += ["--port", str(_free_port())]
        if node_data:
            cmd.append("--node_data_paths=" + ",".join(str(p) for p in node_data))
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.log: list[str] = []
        self.url = None
        found = threading.Event()

        def read() -> None:
            for line in self.proc.stdout:
                self.log.append(line)
                m = re.search(r"(http://\S+/\?data=\S+)", line)
                if m and self.url is None:
                    self.url = m.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.close()
            pytest.fail("model-explorer did not start:\n" + "".join(self.log))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_in_model_explorer(browser, served: Served):
    page = browser.new_page(viewport={"width": 1300, "height": 850})
    page.set_default_timeout(30000)
    problems: list[str] = []
    page.add_init_script(TRAP)
    page.on("pageerror", lambda e: problems.append(f"error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    # offline: only the local server answers (web fonts and version checks are cut)
    page.route(
        "**/*",
        lambda route: route.continue_() if LOCAL.match(route.request.url) else route.abort(),
    )
    page.goto(served.url)
    return page, problems


def node_data_rows(page) -> list[str]:
    """The node labels of the side panel's node data table."""
    table = page.locator("table", has=page.get_by_text("max rel error")).last
    return [t.strip() for t in table.locator("tr td:nth-child(2)").all_inner_texts()]


def test_checked_step_opens_and_nodes_are_found(browser, tmp_path):
    trace = explorer.explore(models.mlp((8, 16, 4), batch=2, seed=1))
    report = trace.check()
    step = trace["fold-constant"].index
    paths = trace.export(step, tmp_path / "mlp.json", report=report)
    graph, *node_data = paths
    assert [p.name for p in node_data] == ["mlp.param_bytes.json", "mlp.max_error.json"]
    served = Served(graph, node_data[1:])
    try:
        page, problems = open_in_model_explorer(browser, served)
        expect(page.get_by_text(f"passlens step {step} fold-constant")).to_be_visible()
        # the per-node error: one row per node the check compared, by label
        expect(page.get_by_text("max rel error").first).to_be_visible()
        rows = node_data_rows(page)
        assert "matmul" in rows or "linear" in rows, rows
        # the search finds a node by its label; Alt+click selects it: its attributes show
        search = page.get_by_placeholder(re.compile("Search nodes"))
        search.fill("relu")
        expect(page.get_by_text(RESULTS)).to_be_visible()
        hit = page.get_by_text("relu", exact=True).first
        expect(hit).to_be_visible()
        hit.click(modifiers=["Alt"])
        expect(page.get_by_role("cell", name="provenance.module")).to_be_visible()
        expect(page.get_by_role("cell", name="f32[2,16]").first).to_be_visible()  # the shape
        page.screenshot(path=str(tmp_path / "mlp.png"))
        assert not problems, problems
    finally:
        served.close()


def test_untrusted_names_stay_text(browser, tmp_path):
    trace = evil_trace()
    graph, *_ = trace.export(trace.final, tmp_path / "evil.json")
    served = Served(graph)
    try:
        page, problems = open_in_model_explorer(browser, served)
        expect(page.get_by_text(f"passlens step {trace.final.index}").first).to_be_visible()
        # the input's name (made of every hazard) is found by its label and shown as text
        search = page.get_by_placeholder(re.compile("Search nodes"))
        search.fill("ünïcödé")
        expect(page.get_by_text(RESULTS)).to_be_visible()
        expect(page.get_by_text(EVIL.split("\n")[0]).first).to_be_visible()
        page.screenshot(path=str(tmp_path / "evil.png"))
        assert page.evaluate("window.__alerts") == []
        assert not problems, problems
    finally:
        served.close()


def test_an_infinite_error_opens_with_its_node_data(browser, tmp_path):
    """The float16 overflow's export: Model Explorer reads the node data (JSON.parse) with
    "inf" where the error is infinite, lists the node, and the page raises no error."""
    from tests.explorer.test_interop import f16_overflow

    trace, report = f16_overflow()
    step = trace["convert-dtype"].index
    graph, *node_data = trace.export(step, tmp_path / "f16.json", report=report)
    errors = [p for p in node_data if p.name.endswith(".max_error.json")]
    served = Served(graph, errors)
    try:
        page, problems = open_in_model_explorer(browser, served)
        expect(page.get_by_text(f"passlens step {step} convert-dtype")).to_be_visible()
        expect(page.get_by_text("max rel error").first).to_be_visible()
        table = page.locator("table", has=page.get_by_text("max rel error")).last
        expect(table.get_by_text("inf", exact=True).first).to_be_visible()
        page.screenshot(path=str(tmp_path / "f16.png"))
        assert not problems, problems
        assert not any("Failed to" in line for line in served.log), served.log
    finally:
        served.close()
