"""Screenshots of the widgets for the README, taken in headless Chromium (Debian's chromium):

- notebooks/img/stepper.png: ``trace.stepper()`` in JupyterLab (served on localhost),
- notebooks/img/report.png: the self-contained HTML report (``trace.to_html``),
- notebooks/img/app.png: the Panel app (``passlens serve``),

each at 1600x1000 on the fold-constant step of a small ConvNeXt through the linear-broadcast
replica and fold-constant (the weight-bloat bug of docs/bugs.md: fold-constant bakes 8 copies of
each pointwise weight), with the check's findings drawn on the graph; and in the report

- notebooks/img/param_map.png: the parameter map of that trace (where the bloat starts),
- notebooks/img/error_map.png: the error map of the same model through a deliberately wrong
  pass (tests/explorer/test_check.py's test-check-flip-add: every add made a subtract).

    .venv/bin/python bench/screenshots.py [--out notebooks/img]
"""

from __future__ import annotations

import argparse
import os
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="notebooks/img", help="folder (default: %(default)s)")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import expect, sync_playwright

    import explorer
    from compiler import models
    from tests.widgets.lab import jupyterlab, run_all
    from widgets.app import serve

    trace = explorer.explore(eval(MODEL, {"models": models}), pipeline=PIPELINE)  # noqa: S307
    report_ = trace.check()
    step = trace["fold-constant"]
    expect.set_options(timeout=60000)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000}, device_scale_factor=1)
        page.set_default_timeout(60000)

        # the HTML report at its first view of the step
        report = Path(tmp) / "report.html"
        trace.to_html(report, report=report_)
        page.goto(report.as_uri())
        page.click(f".pl-step-row[data-step='{step.index}']")
        page.locator("#pl-graph .plg-n").first.wait_for()
        page.screenshot(path=str(out / "report.png"))
        print(f"wrote {out / 'report.png'}")

        # the layer maps in the report: where the weights grow, where the numbers go wrong
        page.click("#pl-tabs button[data-tab=param-map]")
        page.locator("#pl-pane-param-map td.pl-map-first-cell").wait_for()
        page.screenshot(path=str(out / "param_map.png"))
        print(f"wrote {out / 'param_map.png'}")
        from tests.explorer.test_check import _FlipAdd  # noqa: F401 (registers the wrong pass)

        wrong = explorer.explore(eval(MODEL, {"models": models}), pipeline=WRONG)  # noqa: S307
        errors = Path(tmp) / "errors.html"
        wrong.to_html(errors, report=wrong.check())
        page.goto(errors.as_uri())
        page.click("#pl-tabs button[data-tab=error-map]")
        page.locator("#pl-pane-error-map td.pl-map-first-cell").wait_for()
        page.screenshot(path=str(out / "error_map.png"))
        print(f"wrote {out / 'error_map.png'}")

        # the Panel app, a node clicked
        with serve(trace, block=False, report=report_) as srv:
            page.goto(srv.url)
            page.locator(".plg-n").first.wait_for()
            page.locator(f".pl-step-row[data-step='{step.index}']").click()
            expect(page.locator(".pl-step-title")).to_have_text(f"#{step.index} fold-constant")
            expect(page.locator(".plg-s-added").first).to_be_visible()
            page.locator("g.plg-n.plg-bad[data-i]").first.click()
            expect(page.locator(".plg-details")).to_contain_text("copies")
            page.screenshot(path=str(out / "app.png"))
            print(f"wrote {out / 'app.png'}")

        # the stepper in JupyterLab: the output cell only
        cells = [
            f"import explorer\nfrom compiler import models\ntrace = explorer.explore({MODEL})\n"
            f"stepper = trace.stepper()\nstepper.index = {step.index}\nstepper"
        ]
        cells[0] = cells[0].replace(")\nstepper =", f", pipeline={PIPELINE!r})\nstepper =")
        with jupyterlab(Path(tmp), cells) as url:
            page.goto(url)
            run_all(page)
            output = page.locator(".jp-OutputArea-output").first
            expect(output.locator(".plg-n").first).to_be_visible()
            expect(output.locator(".pl-header")).to_contain_text("fold-constant")
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            time.sleep(0.5)  # the layout settles after the side panel closes (a screenshot only)
            output.scroll_into_view_if_needed()
            box = output.bounding_box()
            clip = {**box, "height": min(box["height"], 1000 - box["y"])}
            page.screenshot(path=str(out / "stepper.png"), clip=clip)
            print(f"wrote {out / 'stepper.png'}")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
