"""Screenshots of the widgets for the README, taken in headless Chromium (Debian's chromium):

- notebooks/img/stepper.png: ``trace.stepper()`` in JupyterLab (served on localhost),
- notebooks/img/report.png: the self-contained HTML report (``trace.to_html``),
- notebooks/img/app.png: the Panel app (``passlens serve``),

each on the fold-constant step of a small ConvNeXt through the default pipeline, where
fold-constant adds transposed copies of the linear weights.

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

    trace = explorer.explore(eval(MODEL, {"models": models}))  # noqa: S307 (our own constant)
    step = trace["fold-constant"]
    expect.set_options(timeout=60000)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 900}, device_scale_factor=1)
        page.set_default_timeout(60000)

        # the HTML report, a node clicked
        report = Path(tmp) / "report.html"
        trace.to_html(report)
        page.goto(report.as_uri())
        page.click(f".pl-step-row[data-step='{step.index}']")
        page.click("#pl-canvas g[data-node-id='main/conv2d']")
        page.screenshot(path=str(out / "report.png"))
        print(f"wrote {out / 'report.png'}")

        # the Panel app, a node clicked
        with serve(trace, block=False) as srv:
            page.goto(srv.url)
            page.locator(".pl-gv-canvas svg").nth(1).wait_for()
            page.locator(f".pl-step-row[data-step='{step.index}']").click()
            expect(page.locator(".pl-step-title")).to_have_text(f"#{step.index} fold-constant")
            after = page.locator(".pl-gv-canvas").nth(1)
            expect(after.locator("g.pl_added").first).to_be_visible()
            after.locator("g[data-node-id='main/conv2d']").click()
            expect(page.locator(".pl-gv-details").nth(1)).to_contain_text("conv2d")
            page.screenshot(path=str(out / "app.png"))
            print(f"wrote {out / 'app.png'}")

        # the stepper in JupyterLab: the output cell only
        cells = [
            f"import explorer\nfrom compiler import models\ntrace = explorer.explore({MODEL})\n"
            f"stepper = trace.stepper()\nstepper.index = {step.index}\nstepper"
        ]
        page.set_viewport_size({"width": 1500, "height": 1600})
        with jupyterlab(Path(tmp), cells) as url:
            page.goto(url)
            run_all(page)
            output = page.locator(".jp-OutputArea-output").first
            expect(output.locator(".pl-stepper-graph svg.pl_graph")).to_have_count(2)
            expect(output.locator(".pl-header")).to_contain_text("fold-constant")
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
            time.sleep(0.5)  # the layout settles after the side panel closes (a screenshot only)
            output.scroll_into_view_if_needed()
            box = output.bounding_box()
            clip = {**box, "height": min(box["height"], 1000)}
            page.screenshot(path=str(out / "stepper.png"), clip=clip)
            print(f"wrote {out / 'stepper.png'}")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
