"""JupyterLab on localhost for the browser tests and bench/screenshots.py: a free port, a
token, its config in a given folder, one notebook with given cells."""

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).parents[2]
TOKEN = "passlens-test"
JUPYTER = Path(sys.executable).parent / "jupyter"
NOTEBOOK = "widgets.ipynb"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(folder: Path, cells: list[str], timeout: float = 60):
    """Serve JupyterLab on ``folder`` holding ``widgets.ipynb`` made of ``cells``; yields the
    URL that opens the notebook (with its token). Shut down on exit."""
    import nbformat

    folder = Path(folder)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, folder / NOTEBOOK)
    settings = folder / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)  # no "get notified about Jupyter news?" toast
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "JUPYTER_CONFIG_DIR": str(folder / "config"),
        "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(folder / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(folder / "workspaces"),
    }
    log_path = folder / "lab.log"
    log = open(log_path, "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [
            str(JUPYTER), "lab", "--no-browser", "--allow-root", f"--port={port}",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={folder}", "--LabApp.news_url=",
            "--LabApp.expose_app_in_browser=True",
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "JupyterLab did not start:\n" + log_path.read_text()
                    ) from None
                time.sleep(0.1)
        yield f"{base}/lab/tree/{NOTEBOOK}?token={TOKEN}&reset"
    finally:
        try:
            req = urllib.request.Request(f"{base}/api/shutdown?token={TOKEN}", method="POST")
            urllib.request.urlopen(req, timeout=10)
            proc.wait(30)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        log.close()


def run_all(page) -> None:
    """In an opened JupyterLab page: wait for the kernel, then run every cell."""
    page.wait_for_function(
        "(document.querySelector('#jp-main-statusbar')?.innerText || '').includes('Idle')"
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
