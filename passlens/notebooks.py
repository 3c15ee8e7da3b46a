"""``make notebooks-html``: the notebooks executed and published as static HTML, readable with
no kernel, no network and no widget manager.

Each notebook runs top to bottom in a fresh ``python3`` kernel (nbclient) and is converted with
nbconvert's HTML exporter:

- cells tagged ``hide`` (a notebook's own assertions: its tests, not its lesson) are left out;
- images a markdown cell shows (``img/stepper.png``, the screenshot under a stepper cell) are
  embedded, so one HTML file stands on its own;
- widget outputs are left out with the notebook's widget state: no kernel drives them in a
  static page (the page would load a widget manager from a CDN and still show an empty box).
  A notebook puts a screenshot in a markdown cell under each widget it shows; a progress bar
  (an ``HBox`` holding an ``IntProgress``, shown while a job runs) has nothing to show.

    .venv/bin/python -m passlens.notebooks [--out build/notebooks] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import tempfile
import time
from pathlib import Path

HIDE_TAG = "hide"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
_PROGRESS_MODELS = {"IntProgressModel", "FloatProgressModel"}


def execute(nb, cwd: Path, timeout: int = 300) -> str | None:
    """Run ``nb`` in place in a fresh python3 kernel with ``cwd`` as its working directory;
    None when every cell ran, else which cell failed, its source and the error."""
    from nbclient import NotebookClient

    from passlens.demo import describe_failure

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    try:
        client.execute()
    except Exception as e:  # a failed cell, a timeout or a dead kernel
        return describe_failure(nb, e)
    return None


def _widget_models(nb) -> dict:
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {})
    return state.get("state", {}) if isinstance(state, dict) else {}


def is_progress_bar(nb, output) -> bool:
    """Whether a widget output is a progress bar (an HBox with an IntProgress or FloatProgress
    among its children, as ``explorer.progress`` shows while a job runs)."""
    models = _widget_models(nb)
    view = output.get("data", {}).get(WIDGET_VIEW) or {}
    model = models.get(view.get("model_id"), {})
    if model.get("model_name") != "HBoxModel":
        return False
    children = model.get("state", {}).get("children", [])
    ids = [c.removeprefix("IPY_MODEL_") for c in children if isinstance(c, str)]
    return any(models.get(i, {}).get("model_name") in _PROGRESS_MODELS for i in ids)


def widget_cells(nb) -> list[int]:
    """Indices of the code cells that show a widget other than a progress bar (a stepper):
    in a static page each needs a screenshot in the markdown cell below it."""
    out = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        views = [o for o in cell.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
        if any(not is_progress_bar(nb, o) for o in views):
            out.append(k)
    return out


_LINK = re.compile(r"(\]\()([^)\s#]+)((?:#[^)\s]*)?\))")


def _relink(source: str, folder: Path, page_dir: Path) -> str:
    """Markdown links of a notebook in ``folder``, for its page in ``page_dir``: a sibling
    notebook becomes its page (``01_x.ipynb`` -> ``01_x.html``), any other relative link
    points to the same file from the page's folder; absolute links and images (embedded) are
    kept."""

    def fix(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            return m.group(0)
        start = m.start()
        if start > 0 and source.rfind("![", 0, start) > source.rfind("]", 0, start):
            return m.group(0)  # the closing bracket of an image: embedded, not a link
        path = folder / target
        if path.suffix == ".ipynb" and path.parent.resolve() == folder.resolve():
            new = path.with_suffix(".html").name
        else:
            new = os.path.relpath(path, page_dir)
        return m.group(1) + new.replace(os.sep, "/") + m.group(3)

    return _LINK.sub(fix, source)


def static_copy(nb, folder: Path | None = None, page_dir: Path | None = None):
    """A copy of an executed notebook for a static page: widget outputs and the widget state
    left out (the cells tagged ``hide`` are left out by the exporter); with ``folder`` (the
    notebook's) and ``page_dir`` (the page's), relative links relinked for the page."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]
        elif cell.cell_type == "markdown" and folder is not None and page_dir is not None:
            cell.source = _relink(cell.source, folder, page_dir)
    return nb


def to_html(nb, images: Path = NOTEBOOKS, page_dir: Path | None = None) -> str:
    """An executed notebook as one static HTML page (nbconvert's lab template): cells tagged
    ``hide`` left out, widget outputs left out, markdown images read from ``images`` (the
    notebooks' folder) and embedded; with ``page_dir`` (where the page goes), relative links
    relinked from there (a sibling notebook to its page)."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    exporter.register_preprocessor(
        TagRemovePreprocessor(remove_cell_tags={HIDE_TAG}, enabled=True), enabled=True
    )
    body, _ = exporter.from_notebook_node(
        static_copy(nb, images, page_dir), resources={"metadata": {"path": str(images)}}
    )
    return body


def publish(paths: list[Path], out: Path) -> int:
    """Execute each notebook and write ``out/<name>.html``; returns a process exit code (1 when
    a notebook failed: the others are still written)."""
    import nbformat

    from passlens.demo import kernel_problem

    problem = kernel_problem()
    if problem:
        print(f"notebooks-html: {problem}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in paths:
        start = time.perf_counter()
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory() as cwd:  # what a notebook writes stays out of the repo
            failure = execute(nb, Path(cwd))
        if failure:
            failed += 1
            print(f"{path.name}: FAILED\n{failure}", file=sys.stderr)
            continue
        target = out / (path.stem + ".html")
        target.write_text(to_html(nb, images=path.parent, page_dir=out), encoding="utf-8")
        seconds = time.perf_counter() - start
        print(f"{target} ({target.stat().st_size / 1e6:.1f} MB, {seconds:.0f} s)", flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--out", type=Path, default=Path("build/notebooks"))
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(f"notebooks-html: no notebook at {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    return publish(paths, args.out)


if __name__ == "__main__":
    sys.exit(main())
