"""The notebook front end renders the widgets: JupyterLab served on localhost (token, a free
port, its config in the test's folder), opened in headless Chromium, a notebook displaying
``trace.stepper()`` and a GraphView run in its kernel; the SVG graphs appear, a click on the
stepper's button reaches the kernel and back, a click on a node shows its details.

Why JupyterLab and not an exported notebook with the widget state embedded: ipywidgets'
embedding loads its widget manager (``@jupyter-widgets/html-manager``) from a CDN, which no
installed package ships, and these tests use no network."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.widgets.test_browser import ARGS, CHROMIUM, sync_api

pytestmark = [pytest.mark.browser, pytest.mark.notebook]

ROOT = Path(__file__).parents[2]
TOKEN = "passlens-test"
JUPYTER = Path(sys.executable).parent / "jupyter"

CELLS = [
    "import explorer\nfrom compiler import models\n"
    "trace = explorer.explore(models.mlp())\nstepper = trace.stepper()\nstepper.index = 6\nstepper",
    "from widgets import GraphView\nstep = trace['fold-constant']\nGraphView(step, step.previous)",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a free port serving ``tmp_path``: yields its base URL."""
    if not JUPYTER.exists():
        pytest.skip("jupyter is not installed in this environment")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, tmp_path / "widgets.ipynb")
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [
            str(JUPYTER), "lab", "--no-browser", "--allow-root", f"--port={port}",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=",
            "--LabApp.expose_app_in_browser=True",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        "JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()
                    ) from None
                time.sleep(0.1)
        yield base
    finally:
        try:
            req = urllib.request.Request(f"{base}/api/shutdown?token={TOKEN}", method="POST")
            urllib.request.urlopen(req, timeout=10)
            proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        log.close()


def test_jupyterlab_renders_the_stepper_and_the_graph_view(lab, tmp_path):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60000)
            expect = sync_api.expect
            expect.set_options(timeout=30000)
            problems = []
            local = (lab, "data:", "blob:", "about:")
            page.on(
                "request", lambda r: None if r.url.startswith(local) else problems.append(r.url)
            )
            page.goto(f"{lab}/lab/tree/widgets.ipynb?token={TOKEN}&reset")
            page.wait_for_function(
                "(document.querySelector('#jp-main-statusbar')?.innerText || '').includes('Idle')"
            )
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # the stepper (ipywidgets): its header and before / after graphs
            stepper = page.locator(".jp-OutputArea-output").nth(0)
            expect(stepper.locator(".pl-stepper-graph svg.pl_graph")).to_have_count(2)
            expect(stepper.locator(".pl-header")).to_contain_text("#6 fold-constant")
            expect(stepper.locator(".pl-stepper-graph g.pl_added").first).to_be_visible()
            # a click in the browser runs in the kernel and the new step comes back
            stepper.locator("button", has_text="next").click()
            expect(stepper.locator(".pl-header")).to_contain_text("#7 dead-code-elimination")
            expect(stepper.locator(".pl-stepper-graph g.pl_added")).to_have_count(0)
            # the GraphView (anywidget): click a node for its details
            view = page.locator(".jp-OutputArea-output").nth(1)
            canvas = view.locator(".pl-gv-canvas")
            expect(canvas.locator("svg.pl_graph")).to_be_visible()
            canvas.locator("g[data-node-id='main/matmul']").click()
            details = view.locator(".pl-gv-details")
            expect(details).to_contain_text("module=layers.0")
            expect(details).to_contain_text("f32[1, 256]")
            page.screenshot(path=str(tmp_path / "jupyterlab.png"))
            assert problems == []
        finally:
            browser.close()
