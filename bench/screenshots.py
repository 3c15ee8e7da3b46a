"""Screenshots of the widgets for the README, taken in headless Chromium (Debian's chromium):

- notebooks/img/stepper.png: ``trace.stepper()`` in JupyterLab (served on localhost),
- notebooks/img/<notebook>_stepper.png (``_stepper_2.png``, ... for a later one): each stepper
  cell of each notebook (a cell calling ``.stepper(``), the notebook run in JupyterLab up to that
  cell, its cells tagged ``hide`` left out: the picture the notebook shows under that cell for
  readers without a kernel (the published pages of ``make notebooks-html``),
- notebooks/img/report.png: the self-contained HTML report (``trace.to_html``),
- notebooks/img/app.png: the Panel app (``passlens serve``),
- notebooks/img/rerun_stepper.png: a re-run in JupyterLab (issue 42): a stepper on a user's
  wrong pass (tests/widgets/user_passes.py's fast-gelu, a node selected), then a cell
  re-running the trace with the fix and calling ``new.stepper()``: the same stepper, on the
  same step and node, the old run beside the new one; the picture is of that second cell,
- notebooks/img/compare.png: ``explorer.compare(old, new).to_html(...)`` of that re-run,

each at 1600x1000 on the fold-constant step of a small ConvNeXt through the linear-broadcast
replica and fold-constant (the weight-bloat bug of docs/bugs.md: fold-constant bakes 8 copies of
each pointwise weight), with the check's findings drawn on the graph; and in the report

- notebooks/img/param_map.png: the parameter map of that trace (where the bloat starts),
- notebooks/img/error_map.png: the error map of the same model through a deliberately wrong
  pass (tests/explorer/check/test_check.py's test-check-flip-add: every add made a subtract).

With ``--onnxruntime bert`` (or ``cnn``) the pictures are of an ONNX Runtime trace instead
(``explore(..., compiler="onnxruntime")`` of bench/ort_models.py's BERT-like layer or small
CNN, checked), on the step each shows best (SkipLayerNormFusion, NchwcTransformer):
ort_<model>_report.png (the graph), ort_<model>_rewrites.png and ort_<model>_text.png (the
report's rewrites and IR tabs), ort_<model>_app.png (a fused node clicked) and
ort_<model>_stepper.png.

The pictures go to build/screenshots/ (a look at what would change, nothing tracked is touched);
``--refresh`` writes them over the tracked ones in notebooks/img/ (what the README and the
notebooks show), ``--out`` anywhere else.

    .venv/bin/python bench/screenshots.py [--refresh | --out DIR] [--only notebooks,stepper,...]
        [--notebook notebooks/00_tour.ipynb ...] [--onnxruntime bert|cnn]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL = "models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)"
PIPELINE = "replica-linear-broadcast,fold-constant"
WRONG = "decompose-ops,test-check-flip-add,fold-constant,dead-code-elimination,fuse-ops"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
SHOTS = ("report", "maps", "app", "stepper", "notebooks", "rerun", "compare")
ORT_SHOTS = ("report", "rewrites", "text", "app", "stepper")
BENCH = Path(__file__).resolve().parent
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TRACKED = NOTEBOOKS / "img"  # what the README and the notebooks show: written with --refresh
PREVIEW = Path("build/screenshots")


def stepper_runs(path: Path) -> list[tuple[str, list[str]]]:
    """For each stepper cell of a notebook (a code cell calling ``.stepper(``): the name of its
    screenshot (``00_tour_stepper.png``, then ``..._stepper_2.png``) and the code cells to run
    up to and including it, the cells tagged ``hide`` (the notebook's assertions) left out."""
    import nbformat

    runs, cells = [], []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or "hide" in cell.metadata.get("tags", []):
            continue
        cells.append(cell.source)
        if ".stepper(" in cell.source:
            suffix = f"_{len(runs) + 1}" if runs else ""
            runs.append((f"{path.stem}_stepper{suffix}.png", list(cells)))
    return runs


def shoot_stepper(page, folder: Path, cells: list[str], path: Path, step: str) -> None:
    """Run ``cells`` in JupyterLab and take the last stepper output (on ``step``) at ``path``."""
    from playwright.sync_api import expect

    from tests.widgets.lab import jupyterlab, run_all

    with jupyterlab(folder, cells) as url:
        page.goto(url)
        run_all(page)
        output = page.locator(".jp-OutputArea-output:has(.pl-header)").last
        expect(output.locator(".pl-header")).to_contain_text(step)
        # the graph may open on another tab (an error map) or away from the first node
        expect(output.locator(".plg-n, .pl-errmap, table").first).to_be_attached()
        time.sleep(1.0)
        page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
        time.sleep(0.5)  # the layout settles after the side panel closes (a screenshot only)
        output.scroll_into_view_if_needed()
        box = output.bounding_box()
        clip = {**box, "height": min(box["height"], 1000 - box["y"])}
        page.screenshot(path=str(path), clip=clip)
        print(f"wrote {path}")


def shoot_rerun(page, tmp: str, out: Path, only: set[str]) -> None:
    """The re-run pictures (see the module docstring)."""
    from playwright.sync_api import expect

    from tests.widgets.lab import jupyterlab, run_all
    from tests.widgets.user_passes import RERUN_NODE, RERUN_SETUP

    if "rerun" in only:
        first = (
            RERUN_SETUP + "stepper = trace.stepper()\nstepper.index = trace['fast-gelu'].index\n"
            f"stepper.graph.selected = {RERUN_NODE!r}\nstepper"
        )
        second = (
            "new = rerun_with_fix(trace, pipeline, FastGeluFixed())\nnew.check()\n"
            "assert new.stepper() is stepper\nnew.stepper()"
        )
        folder = Path(tmp) / "rerun"
        folder.mkdir()
        with jupyterlab(folder, [first, second]) as url:
            page.goto(url)
            run_all(page)
            output = page.locator(".jp-OutputArea-output:has(.pl-header)").last
            expect(output.locator(".pl-run-old")).to_contain_text("diverged")
            expect(output.locator(".plg-n.plg-sel").first).to_be_attached()
            time.sleep(1.5)  # both graphs settle on the selected node
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            time.sleep(0.5)
            output.scroll_into_view_if_needed()
            box = output.bounding_box()
            clip = {**box, "height": min(box["height"], 1000 - box["y"])}
            page.screenshot(path=str(out / "rerun_stepper.png"), clip=clip)
            print(f"wrote {out / 'rerun_stepper.png'}")
    if "compare" in only:
        import explorer
        from compiler import models
        from tests.widgets.user_passes import MODEL, FastGelu, FastGeluFixed, rerun_with_fix

        pipeline = ["default", FastGelu()]
        trace = explorer.explore(eval(MODEL, {"models": models}), pipeline=pipeline)  # noqa: S307
        trace.check()
        new = rerun_with_fix(trace, pipeline, FastGeluFixed())
        new.check()
        path = Path(tmp) / "compare.html"
        explorer.compare(trace, new).to_html(path)
        page.goto(path.as_uri())
        for frame in page.frames[1:]:  # each side's graph, drawn in its iframe
            frame.locator("#pl-graph .plg-n").first.wait_for()
        time.sleep(1.0)
        page.screenshot(path=str(out / "compare.png"))
        print(f"wrote {out / 'compare.png'}")


def shoot_onnxruntime(page, which: str, out: Path, only: set[str], tmp: str) -> None:
    """The ONNX Runtime trace's pictures (see the module docstring)."""
    from playwright.sync_api import expect

    import explorer
    from widgets.app import serve

    sys.path.insert(0, str(BENCH))
    from ort_models import MODELS, STEPS

    model, inputs = MODELS[which]()
    trace = explorer.explore(model, inputs, compiler="onnxruntime")
    report_ = trace.check()
    step = trace[STEPS[which]]
    prefix = f"ort_{which}_"
    if only & {"report", "rewrites", "text"}:
        report = Path(tmp) / f"{prefix}report.html"
        trace.to_html(report, report=report_)
        page.goto(report.as_uri())
        page.click(f".pl-step-row[data-step='{step.index}']")
        page.locator("#pl-graph:not([data-layout=pending]) .plg-n").first.wait_for()
        if "report" in only:
            page.screenshot(path=str(out / f"{prefix}report.png"))
            print(f"wrote {out / f'{prefix}report.png'}")
        for shot, tab in (("rewrites", "rewrites"), ("text", "ir")):
            if shot in only:
                page.click(f"#pl-tabs button[data-tab='{tab}']")
                time.sleep(0.5)
                page.screenshot(path=str(out / f"{prefix}{shot}.png"))
                print(f"wrote {out / f'{prefix}{shot}.png'}")
    if "app" in only:
        with serve(trace, block=False, report=report_) as srv:
            page.goto(srv.url)
            page.locator(".plg-n").first.wait_for()
            page.locator(f".pl-step-row[data-step='{step.index}']").click()
            expect(page.locator(".pl-step-title")).to_contain_text(STEPS[which])
            expect(page.locator(".plg")).not_to_have_attribute("data-layout", "pending")
            time.sleep(1.0)  # the view settles on the first change
            added = page.locator("g.plg-n.plg-k-op.plg-s-added")
            for k in range(min(added.count(), 40)):  # an added node on screen: its details
                box = added.nth(k).bounding_box()
                if box and box["y"] > 150 and box["y"] + box["height"] < 950 and box["x"] > 600:
                    added.nth(k).click()
                    expect(page.locator(".plg-details.plg-open")).to_be_visible()
                    break
            time.sleep(0.5)
            page.screenshot(path=str(out / f"{prefix}app.png"))
            print(f"wrote {out / f'{prefix}app.png'}")
    if "stepper" in only:
        cell = (
            f"import sys\nsys.path.insert(0, {str(BENCH)!r})\nimport explorer\n"
            f"from ort_models import MODELS\nmodel, inputs = MODELS[{which!r}]()\n"
            "trace = explorer.explore(model, inputs, compiler='onnxruntime')\n"
            f"stepper = trace.stepper()\nstepper.index = trace[{STEPS[which]!r}].index\nstepper"
        )
        folder = Path(tmp) / f"{prefix}stepper"
        folder.mkdir()
        shoot_stepper(page, folder, [cell], out / f"{prefix}stepper.png", STEPS[which])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--refresh",
        action="store_true",
        help=f"write over the tracked pictures in {TRACKED} (default: {PREVIEW})",
    )
    where.add_argument("--out", help=f"another folder (default: {PREVIEW})")
    parser.add_argument(
        "--only", default=",".join(SHOTS), help="comma-separated subset of %(default)s"
    )
    parser.add_argument(
        "--notebook",
        action="append",
        type=Path,
        help="the notebooks whose stepper cells to take (default: every notebook in notebooks/)",
    )
    parser.add_argument(
        "--onnxruntime",
        choices=("bert", "cnn"),
        help=f"an ONNX Runtime trace of that model instead (shots: {', '.join(ORT_SHOTS)})",
    )
    args = parser.parse_args()
    out = TRACKED if args.refresh else Path(args.out) if args.out else PREVIEW
    shots = ORT_SHOTS if args.onnxruntime else SHOTS
    only = set(args.only.split(",")) if args.only != ",".join(SHOTS) else set(shots)
    if only - set(shots):
        parser.error(f"--only: unknown {', '.join(sorted(only - set(shots)))}; one of {shots}")
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import expect, sync_playwright

    if args.onnxruntime:
        expect.set_options(timeout=60000)
        with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
            browser = p.chromium.launch(executable_path=chromium, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
            page.set_default_timeout(60000)
            shoot_onnxruntime(page, args.onnxruntime, out, only, tmp)
            browser.close()
        return 0

    if not only - {"rerun", "compare"}:  # only the re-run's pictures: no other trace needed
        expect.set_options(timeout=60000)
        with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
            browser = p.chromium.launch(executable_path=chromium, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
            page.set_default_timeout(60000)
            shoot_rerun(page, tmp, out, only)
            browser.close()
        return 0

    import explorer
    from compiler import models
    from widgets.app import serve

    trace = explorer.explore(eval(MODEL, {"models": models}), pipeline=PIPELINE)  # noqa: S307
    report_ = trace.check()
    step = trace["fold-constant"]
    expect.set_options(timeout=60000)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
        page.set_default_timeout(60000)

        if only & {"report", "maps"}:
            # the HTML report at its first view of the step
            report = Path(tmp) / "report.html"
            trace.to_html(report, report=report_)
            page.goto(report.as_uri())
            page.click(f".pl-step-row[data-step='{step.index}']")
            # drawn once its layouts are back from the component's worker
            page.locator("#pl-graph:not([data-layout=pending]) .plg-n").first.wait_for()
            if "report" in only:
                page.screenshot(path=str(out / "report.png"))
                print(f"wrote {out / 'report.png'}")

        if "maps" in only:
            # the layer maps in the report: where the weights grow, where the numbers go wrong
            page.click("#pl-tabs button[data-tab=param-map]")
            page.locator("#pl-pane-param-map td.pl-map-first-cell").wait_for()
            page.screenshot(path=str(out / "param_map.png"))
            print(f"wrote {out / 'param_map.png'}")
            from tests.explorer.check.test_check import _FlipAdd  # noqa: F401 (registers the pass)

            wrong = explorer.explore(eval(MODEL, {"models": models}), pipeline=WRONG)  # noqa: S307
            errors = Path(tmp) / "errors.html"
            wrong.to_html(errors, report=wrong.check())
            page.goto(errors.as_uri())
            page.click("#pl-tabs button[data-tab=error-map]")
            page.locator("#pl-pane-error-map td.pl-map-first-cell").wait_for()
            page.screenshot(path=str(out / "error_map.png"))
            print(f"wrote {out / 'error_map.png'}")

        if "app" in only:
            # the Panel app, a node clicked
            with serve(trace, block=False, report=report_) as srv:
                page.goto(srv.url)
                page.locator(".plg-n").first.wait_for()
                page.locator(f".pl-step-row[data-step='{step.index}']").click()
                expect(page.locator(".pl-step-title")).to_have_text(f"#{step.index} fold-constant")
                expect(page.locator(".plg-s-added").first).to_be_visible()
                expect(page.locator(".plg")).not_to_have_attribute("data-layout", "pending")
                # the finding the view opened on (another one may be out of view)
                page.locator("g.plg-n.plg-bad.plg-focus[data-i]").first.click()
                expect(page.locator(".plg-details")).to_contain_text("copies")
                page.screenshot(path=str(out / "app.png"))
                print(f"wrote {out / 'app.png'}")

        if "stepper" in only:
            # the stepper in JupyterLab on the bloat replica's fold-constant: the output only
            cell = (
                f"import explorer\nfrom compiler import models\n"
                f"trace = explorer.explore({MODEL}, pipeline={PIPELINE!r})\n"
                f"stepper = trace.stepper()\nstepper.index = {step.index}\nstepper"
            )
            folder = Path(tmp) / "stepper"
            folder.mkdir()
            shoot_stepper(page, folder, [cell], out / "stepper.png", "fold-constant")

        if "notebooks" in only:
            # each notebook's own stepper cells, run from the notebook's cells
            for path in args.notebook or sorted(NOTEBOOKS.glob("*.ipynb")):
                for name, cells in stepper_runs(Path(path)):
                    # the step it opens on, when the cell says (stepper.index = x["name"].index)
                    opened = re.search(r"""\[["']([^"']+)["']\]\.index""", cells[-1])
                    folder = Path(tmp) / name.removesuffix(".png")
                    folder.mkdir()
                    step_name = opened.group(1) if opened else ""
                    shoot_stepper(page, folder, cells, out / name, step_name)
        if only & {"rerun", "compare"}:
            shoot_rerun(page, tmp, out, only)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
