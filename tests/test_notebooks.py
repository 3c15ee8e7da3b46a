"""Every notebook in notebooks/ runs top to bottom in a fresh kernel (nbclient, no network),
and its assertion cells (tagged ``hide``) check the findings it teaches; notebooks are stored
without outputs. Each executed notebook is then rendered to static HTML as ``make
notebooks-html`` publishes it (passlens/notebooks.py), and the page is read as a learner reads
it: a takeaway, a link to the real upstream report, a picture where a widget stands, no
temporary paths, and no test scaffolding.

The kernel is ``python3`` run by this interpreter (the venv's kernelspec says ``python``, which
jupyter_client replaces by ``sys.executable``): run the tests with the venv's python."""

from __future__ import annotations

import ast
import base64
import html
import pathlib
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from passlens.demo import kernel_problem
from passlens.notebooks import (
    BUGS_PAGE,
    HIDE_TAG,
    ROOT,
    WIDGET_STATE,
    WIDGET_VIEW,
    bugs_html,
    execute,
    to_html,
    widget_cells,
)

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = [
    "00_tour.ipynb",
    "01_linear_weight_bloat.ipynb",
    "02_torch_to_ir.ipynb",
    "03_squeeze_dynamic_to_static.ipynb",
    "04_lift_transform_params.ipynb",
    "05_lazy_transform_params.ipynb",
    "06_reduce_and_error_map.ipynb",
    "07_tvm.ipynb",
    "08_torch_compile.ipynb",
    "09_onnxruntime.ipynb",
    "10_your_first_pass.ipynb",
    "11_iree.ipynb",
]
# a link to where the bug (or the tool) is discussed upstream: TVM's issues and forum, PyTorch's,
# ONNX's and onnxruntime's, IREE's
UPSTREAM = re.compile(
    r"""href=["']https?://(?:github\.com/(?:apache/tvm|pytorch/|onnx/|microsoft/onnxruntime|iree-org/)"""
    r"""|discuss\.tvm\.apache\.org|(?:[a-z-]+\.)?pytorch\.org|onnx\.ai)"""
)
TAKEAWAY = re.compile(r"takeaway|why it matters", re.IGNORECASE)
IMAGE = re.compile(r"""!\[[^\]]*\]\(([^)\s]+)\)|<img[^>]*\ssrc=["']([^"']+)["']""")
TEMP_PATHS = ("/tmp/", "ipykernel_")
NETWORK_SCRIPT = re.compile(
    r"""<script\b[^>]*\bsrc=["']?https?://|<script\b[^>]*>(?:(?!</script>).)*?\bimport\(["'`]?https?://"""
    r"""|<script\b[^>]*>(?:(?!</script>).)*?"https?://cdn""",
    re.DOTALL | re.IGNORECASE,
)
PROMPT = re.compile(r"In\xa0\[(\d+)\]:")


def _execute(nb, cwd: pathlib.Path) -> str | None:
    """Run ``nb`` in a fresh python3 kernel with ``cwd`` as its working directory; None when
    every cell ran, else which cell failed, its source and the error."""
    return execute(nb, cwd)


@pytest.fixture(scope="session")
def executed(tmp_path_factory):
    """``executed(name)``: the notebook run once per test session, ``(notebook, failure)``
    (the run test and the HTML test share it: each notebook runs once)."""
    runs: dict[str, tuple] = {}

    def run(name: str):
        if name not in runs:
            nb = nbformat.read(NOTEBOOKS / name, as_version=4)
            runs[name] = (nb, _execute(nb, tmp_path_factory.mktemp(name.split("_")[0])))
        return runs[name]

    return run


def test_the_notebooks_are_the_tour_and_one_per_bug():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_stored_without_outputs_and_with_prose_and_assertions(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), (
        f"{name} has stored outputs: clear them before committing"
    )
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 3  # it explains itself
    assert any("assert " in c.source for c in code)  # and checks what it teaches


def test_the_python3_kernel_runs_this_interpreter():
    assert kernel_problem() is None, kernel_problem()


@pytest.mark.notebook
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs(name, executed):
    _, failure = executed(name)
    if failure:
        pytest.fail(f"{name}: {failure}", pytrace=False)


# ===== the published HTML ========================================================================


def _hidden(cell) -> bool:
    return HIDE_TAG in cell.get("metadata", {}).get("tags", [])


def _page_text(page: str) -> str:
    """The page as a reader sees its text: tags (the syntax highlighting's spans) dropped,
    entities decoded; the styles and scripts of the template left out."""
    page = re.sub(r"<(style|script)\b.*?</\1>", "", page, flags=re.DOTALL | re.IGNORECASE)
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def _local_images(source: str) -> list[str]:
    found = [a or b for a, b in IMAGE.findall(source)]
    return [f for f in found if not re.match(r"[a-z]+:", f)]


def page_problems(nb, page: str, folder: pathlib.Path = NOTEBOOKS) -> list[str]:
    """What a reader of the published page would miss or trip on, in words (empty: none)."""
    problems = []
    visible = [c for c in nb.cells if not _hidden(c)]
    text = _page_text(page)

    # a takeaway: a markdown cell that says why it matters, and it is on the page
    takeaways = [
        c
        for c in visible
        if c.cell_type == "markdown" and TAKEAWAY.search((c.source.strip().splitlines() or [""])[0])
    ]
    if not takeaways:
        problems.append(
            "no takeaway (a markdown cell whose first line says 'Takeaway' or 'Why it matters')"
        )
    elif TAKEAWAY.search(text) is None:
        problems.append("the takeaway is not on the page")

    # a link to the real upstream report or discussion
    if UPSTREAM.search(page) is None:
        problems.append(
            "no link to an upstream issue or discussion (github.com/apache/tvm, "
            "discuss.tvm.apache.org, pytorch, onnx)"
        )

    # a picture under every widget: the page has no kernel to draw it
    for k in widget_cells(nb):
        below = nb.cells[k + 1] if k + 1 < len(nb.cells) else None
        images = (
            _local_images(below.source)
            if below is not None and below.cell_type == "markdown"
            else []
        )
        first = (nb.cells[k].source.strip().splitlines() or [""])[0]
        if not images:
            problems.append(f"a widget ({first!r}) with no screenshot in a markdown cell below it")
            continue
        for image in images:
            path = folder / image
            if not path.is_file():
                problems.append(f"the screenshot under {first!r} is missing: {image}")
            elif base64.b64encode(path.read_bytes()).decode()[:2000] not in page:
                problems.append(f"the screenshot under {first!r} is not embedded in the page")

    # no kernel's temporary paths (/tmp/ipykernel_<pid>/<hash>.py:10, a temp dir it wrote to)
    for needle in TEMP_PATHS:
        at = text.find(needle)
        if at >= 0:
            problems.append(f"a temporary path on the page: {text[max(0, at - 40) : at + 60]!r}")

    # the page stands alone: no script from the network, no path of the machine that built it
    if NETWORK_SCRIPT.search(page):
        problems.append("a script loaded from the network (the page must stand alone)")
    if str(ROOT) in text:
        at = text.find(str(ROOT))
        problems.append(f"a path of this machine on the page: {text[max(0, at - 40) : at + 60]!r}")

    # no prose line that starts with "#9536" (an issue number wrapped to a line's start): the
    # page's Markdown renderer makes it a heading
    for c in visible:
        if c.cell_type == "markdown":
            for line in re.findall(r"^ {0,3}#+[^#\s].*$", c.source, re.MULTILINE):
                problems.append(f"a prose line the page makes a heading: {line.strip()!r}")

    # the code cells shown are numbered 1, 2, 3 ... (no gap where a hidden cell ran)
    counts = [int(n) for n in PROMPT.findall(page)]
    if counts != list(range(1, len(counts) + 1)):
        problems.append(f"the cells' numbers are not 1, 2, 3 ...: {counts}")

    # the assertions are kept, tagged hide, and stay off the page
    hidden = [c for c in nb.cells if _hidden(c)]
    if not any(c.cell_type == "code" and "assert " in c.source for c in hidden):
        problems.append(f"no code cell of assertions tagged {HIDE_TAG!r}")
    shown = {line.strip() for c in visible for line in c.source.splitlines()}
    for c in hidden:
        for line in c.source.splitlines():
            line = line.strip()
            if line and line not in shown and line in text:
                problems.append(f"a cell tagged {HIDE_TAG!r} is on the page: {line!r}")
                break
    for c in visible:
        if c.cell_type == "code" and re.search(r"^\s*assert\b", c.source, re.MULTILINE):
            first = (c.source.strip().splitlines() or [""])[0]
            problems.append(f"assertions in a visible cell (tag it {HIDE_TAG!r}): {first!r}")
    return problems


@pytest.mark.notebook
@pytest.mark.parametrize("name", EXPECTED)
def test_the_published_page_teaches(name, executed):
    nb, failure = executed(name)
    if failure:
        pytest.fail(f"{name} did not run, so it has no page: {failure}", pytrace=False)
    problems = page_problems(nb, to_html(nb))
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


# the checks above, on a small notebook made here (no kernel): each can fail
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _widget_output(model_id: str, result: bool = True):
    data = {
        WIDGET_VIEW: {"model_id": model_id, "version_major": 2, "version_minor": 0},
        "text/plain": "<PassStepper step 0/3: module>",
    }
    if result:
        return new_output("execute_result", data=data, execution_count=2)
    return new_output("display_data", data=data)


def _model(name: str, **state):
    return {
        "model_name": name,
        "model_module": "@jupyter-widgets/controls",
        "model_module_version": "2.0.0",
        "state": state,
    }


def _made(tmp_path, *, below: str | None = "![the stepper](img/shot.png)", progress=True):
    (tmp_path / "img").mkdir(exist_ok=True)
    (tmp_path / "img" / "shot.png").write_bytes(PNG)
    stepper = new_code_cell("trace.stepper()", outputs=[_widget_output("stepper")])
    work = new_code_cell("report = trace.check()", outputs=[_widget_output("bar", result=False)])
    cells = [
        new_markdown_cell(
            "# A bug\n\n[apache/tvm#17546](https://github.com/apache/tvm/issues/17546)"
        ),
        stepper,
        *([new_markdown_cell(below)] if below is not None else []),
        *([work] if progress else []),
        new_code_cell(
            "print('report ok')", outputs=[new_output("stream", name="stdout", text="report ok\n")]
        ),
        new_code_cell(
            "assert report.ok, report\nassert secret_check()", metadata={"tags": [HIDE_TAG]}
        ),
        new_markdown_cell("## Takeaway\n\nLook at every step."),
    ]
    nb = new_notebook(cells=cells)
    nb.metadata["widgets"] = {
        WIDGET_STATE: {
            "version_major": 2,
            "version_minor": 0,
            "state": {
                "stepper": {"model_name": "AnyModel", "model_module": "anywidget", "state": {}},
                "bar": _model("HBoxModel", children=["IPY_MODEL_label", "IPY_MODEL_progress"]),
                "label": _model("LabelModel", value="checking"),
                "progress": _model("IntProgressModel", value=3, max=3),
            },
        }
    }
    return nb


def test_a_page_that_teaches_has_no_problems(tmp_path):
    nb = _made(tmp_path)
    assert widget_cells(nb) == [1]  # the stepper, not the progress bar
    page = to_html(nb, images=tmp_path)
    assert page_problems(nb, page, tmp_path) == []
    text = _page_text(page)
    assert "secret_check" not in text and "report ok" in text  # the hidden cell is gone
    assert "data:image/png;base64," in page  # the screenshot is in the page
    # no widget state, so no widget manager from a CDN, and no empty widget boxes
    assert WIDGET_VIEW not in page and WIDGET_STATE not in page and "PassStepper" not in page


def test_the_page_links_to_pages_and_files_from_where_it_is(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = _made(folder)
    nb.cells[-1].source += (
        "\n\nNext: [the bloat](01_bloat.ipynb), [its case](../docs/bugs.md#1-a-weight), "
        "[upstream](https://github.com/apache/tvm/issues/17546)."
    )
    page = to_html(nb, images=folder, page_dir=tmp_path / "build" / "notebooks")
    assert 'href="01_bloat.html"' in page  # a sibling notebook: its page
    assert 'href="../../docs/bugs.md#1-a-weight"' in page  # a file: from the page's folder
    assert 'href="https://github.com/apache/tvm/issues/17546"' in page
    assert "img/shot.png" not in page  # the image is embedded, not relinked


def test_the_page_stands_alone(tmp_path):
    """No script from the network, cells numbered as shown, no path of this machine, and the
    link to docs/bugs.md pointing at its page beside the notebooks'."""
    nb = _made(tmp_path)
    nb.cells.insert(3, new_code_cell("secret = 1", metadata={"tags": [HIDE_TAG]}))
    for k, count in ((1, 1), (3, 2), (4, 3), (5, 4)):  # the hidden cell ran second
        nb.cells[k].execution_count = count
    nb.cells[5].outputs[0].text = f"wrote {ROOT / 'build' / 'x.html'}\n"
    nb.cells[0].source += "\n\n[its case](../docs/bugs.md#1-a-weight-copied-once-per-batch-row)"
    page = to_html(nb, images=tmp_path, page_dir=tmp_path / "out")
    assert "<script" not in page.replace('<script type="text/javascript">', "")  # none at all
    assert not NETWORK_SCRIPT.search(page)
    assert [int(n) for n in PROMPT.findall(page)] == [1, 2, 3]
    assert str(ROOT) not in page and "wrote build/x.html" in _page_text(page)
    # a link to the repository's docs/bugs.md, from a notebook in the repository's notebooks/
    real = _made(tmp_path)
    case3 = "3-a-wrong-shape-after-dynamic-to-static"
    real.cells[0].source += f"\n\n[its case](../docs/bugs.md#{case3})"
    from passlens.notebooks import static_copy

    copied = static_copy(real, NOTEBOOKS, tmp_path / "out")
    assert f"]({BUGS_PAGE}#{case3})" in copied.cells[0].source
    assert page_problems(nb, page, tmp_path) == []


def test_bugs_page_has_every_anchor_the_notebooks_link():
    page = bugs_html()
    assert "<script" not in page and "ipynb" not in re.sub(r"<code>[^<]*</code>", "", page)
    ids = set(re.findall(r'<h[1-6] id="([^"]+)"', page))
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        source = "".join(c.source for c in nbformat.read(path, as_version=4).cells)
        for anchor in re.findall(r"\]\(\.\./docs/bugs\.md#([^)]+)\)", source):
            assert anchor in ids, (path.name, anchor)
    assert set(re.findall(r'href="#([^"]+)"', page)) <= ids  # its own table of contents


def test_each_check_of_the_page_can_fail(tmp_path):
    def problems(nb):
        return page_problems(nb, to_html(nb, images=tmp_path), tmp_path)

    nb = _made(tmp_path, below=None)  # the stepper's screenshot missing
    assert any("no screenshot" in p for p in problems(nb))
    nb = _made(tmp_path, below="![gone](img/nowhere.png)")
    assert any("is missing: img/nowhere.png" in p for p in problems(nb))

    nb = _made(tmp_path)
    nb.cells[-1].source = "## In short\n\nLook at every step."
    assert any("no takeaway" in p for p in problems(nb))

    nb = _made(tmp_path)
    nb.cells[-1].source += "\nas the issues\n#9536 and #9716 say."
    assert any("makes a heading: '#9536 and #9716 say.'" in p for p in problems(nb))

    nb = _made(tmp_path)
    nb.cells[0].source = "# A bug\n\n[a page](https://example.org/tvm)"
    assert any("no link to an upstream" in p for p in problems(nb))

    nb = _made(tmp_path)
    nb.cells[4].outputs[0].text = "wrote /tmp/pytest-of-me/report.html\n"
    assert any("temporary path" in p and "/tmp/pytest-of-me" in p for p in problems(nb))
    nb.cells[4].outputs[0].text = "IR -> proj (/tmp/ipykernel_1/2.py:10)\n"
    assert any("temporary path" in p for p in problems(nb))

    nb = _made(tmp_path)
    nb.cells[5].metadata["tags"] = []  # the assertions shown
    found = problems(nb)
    assert any("no code cell of assertions" in p for p in found)
    assert any("assertions in a visible cell" in p for p in found)

    nb = _made(tmp_path)
    page = to_html(nb, images=tmp_path)
    cdn = '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js">'
    assert any(
        "from the network" in p for p in page_problems(nb, page + cdn + "</script>", tmp_path)
    )
    assert any(
        "this machine" in p for p in page_problems(nb, page + f"<pre>{ROOT}/x</pre>", tmp_path)
    )
    nb.cells[1].execution_count, nb.cells[3].execution_count = 1, 2
    gap = to_html(nb, images=tmp_path).replace("In\xa0[2]:", "In\xa0[7]:")
    assert "In\xa0[7]:" in gap
    assert any("not 1, 2, 3" in p for p in page_problems(nb, gap, tmp_path))

    # a page that shows a hidden cell (an exporter that ignored the tag) is caught
    nb = _made(tmp_path)
    page = to_html(nb, images=tmp_path) + "<pre>assert secret_check()</pre>"
    assert any("tagged 'hide' is on the page" in p for p in page_problems(nb, page, tmp_path))


# A notebook's assertion cells are its tests: with the detector it teaches broken (patched in
# the kernel by a first cell), the notebook must fail, at the assertion about that finding.
SABOTAGE = {
    "01_linear_weight_bloat.ipynb": (
        "from explorer.check.registry import kind_of\n"
        'kind_of("param-bloat").detect = lambda facts: []',
        'bloat = [f for f in report.findings if f.kind == "param-bloat"]',
    ),
    "03_squeeze_dynamic_to_static.ipynb": (
        "import explorer.check\nfrom explorer.check.registry import kind_of\n"
        'kind_of("shape-mismatch").detect = lambda facts: ['
        'explorer.check.Finding("diverged", facts.step, [], "no shape check", {})'
        " for _ in (facts.run.mismatches if facts.run else ())]",
        'assert first.kind == "shape-mismatch"',
    ),
    # the error map records no layer: the map cannot say where the error starts
    "06_reduce_and_error_map.ipynb": (
        "from explorer.check.layer_errors import LayerErrors\n"
        "LayerErrors.of_step = lambda self, main, values, reference: {}",
        'assert m.first_layer == "blocks.0.attn"',
    ),
    # the torch.compile check names no node: the finding cannot say where the pass broke it
    "08_torch_compile.ipynb": (
        "from explorer.inductor.check import InductorStepRunner\n"
        "InductorStepRunner._name_nodes = lambda self, step: None",
        'assert [n.name for n in first.nodes] == ["add_4"]',
    ),
    # the ONNX Runtime check names no node: the finding cannot say which fused node is wrong
    "09_onnxruntime.ipynb": (
        "from explorer.onnxruntime.check import ORTStepRunner\n"
        "ORTStepRunner._name_nodes = lambda self, step: None",
        'assert [fusion.graph.node_of(n).op for n in first.nodes] == ["LayerNormalization"]',
    ),
    # the IREE check's bisection sees no run diverge: it cannot say which pass changed the numbers
    "11_iree.ipynb": (
        "from explorer.iree.check import IREEStepRunner\n"
        "IREEStepRunner._bad = lambda self, run: False",
        'assert first.kind == "diverged" and first.step.name == DEMOTE, report',
    ),
}


def _names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell's code reads and those it binds (assignments, loop and comprehension
    variables, defs, classes, imports)."""
    tree = ast.parse(source)
    reads, binds = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (reads if isinstance(n.ctx, ast.Load) else binds).add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            binds.update((a.asname or a.name).split(".")[0] for a in n.names)
    return reads, binds


def cut_to_the_failing_cell(nb, failing_line: str):
    """`nb` cut for a sabotage run: its cells up to the last code cell binding a name the
    failing cell reads before and on `failing_line`, then the failing cell. Only a tail is cut
    (every cell before the last one needed still runs, in order), so nothing the failing line
    sees differs from a whole run; the cells cut are those a whole run would run after it was
    decided (the stepper, reduce, the try-it cells)."""
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    k = next(i for i in code if failing_line in nb.cells[i].source)
    source = nb.cells[k].source
    prefix = source[: source.index(failing_line) + len(failing_line)]
    try:
        reads, own = _names(prefix)
    except SyntaxError:  # the line is inside a statement: the whole cell
        reads, own = _names(source)
    reads -= own
    last = max((i for i in code if i < k and _names(nb.cells[i].source)[1] & reads), default=0)
    out = nbformat.from_dict(nb)
    out.cells = nb.cells[: last + 1] + [nb.cells[k]]
    return out


def test_the_sabotage_runs_cut_only_what_runs_after_the_failing_line_is_decided():
    nb = nbformat.read(NOTEBOOKS / "08_torch_compile.ipynb", as_version=4)
    cut = cut_to_the_failing_cell(nb, SABOTAGE["08_torch_compile.ipynb"][1])
    sources = [c.source for c in cut.cells if c.cell_type == "code"]
    assert any("report = trace.check(" in s for s in sources)  # what the failing line reads
    assert not any("report.reduce()" in s or "ablation = {}" in s for s in sources)
    assert sources[-1].startswith("first = report.first_failure")
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert sources[:-1] == code[: len(sources) - 1]  # a head of the notebook, in order


@pytest.mark.notebook
@pytest.mark.parametrize("name", sorted(SABOTAGE))
def test_a_broken_detector_fails_the_notebook(name, tmp_path):
    sabotage, failing_cell = SABOTAGE[name]
    nb = cut_to_the_failing_cell(nbformat.read(NOTEBOOKS / name, as_version=4), failing_cell)
    nb.cells.insert(0, new_code_cell(sabotage))
    failure = _execute(nb, tmp_path)
    assert failure is not None, f"{name} passed with its detector broken"
    assert "failed: AssertionError" in failure and failing_cell in failure, failure


# ===== the stories as the upstream reports tell them (issue 45) ==================================


def _prose(name: str) -> str:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    return " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")


def _outputs(nb) -> str:
    out = []
    for c in nb.cells:
        for o in c.get("outputs", []) if c.cell_type == "code" else []:
            out.append(o.get("text", "") or o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


BUGS_TEXT = " ".join((ROOT / "docs" / "bugs.md").read_text().split())


def test_01_and_bugs_md_tell_the_reports_batch_of_2_and_its_units():
    text = _prose("01_linear_weight_bloat.ipynb")
    weight = 512 * 128 * 4
    # the report's repro: a batch of 2, batch dims (2, 56), 112 copies = the reported 29.4 MB
    assert round(2 * 56 * weight / 1e6, 2) == 29.36
    for page in (text, BUGS_TEXT):
        assert "torch.randn(2, 3, 224, 224)" in page and "(2, 56)" in page
        assert "112" in page and "29.4 MB" in page and "29.36 MB" in page
        assert "354.4 MB" in page and "338 MiB" in page  # 88,591,464 x 4 B, in both units
        assert "8.3 GB" in page and "larger than 3GB" in page
        assert "339 MB of weights" not in page and "a 339 MB model" not in page
        assert "batch is 1" not in page
        assert "does not give" not in page  # the report's input is known
    assert round(88_591_464 * 4 / 1e6, 1) == 354.4 and round(88_591_464 * 4 / 2**20) == 338
    for name in ("00_tour.ipynb", "06_reduce_and_error_map.ipynb"):
        assert "339 MB" not in _prose(name) and "3.8 GB engine" not in _prose(name), name


def test_04_and_bugs_md_give_the_reports_int32_figures_and_say_0964_is_ours():
    for page in (_prose("04_lift_transform_params.ipynb"), BUGS_TEXT):
        assert "Mismatched elements: 16 / 16" in page and "dtype=int32" in page
        assert "Max absolute difference among violations: 10" in page
        at = page.index("0.964")
        assert "our" in page[max(0, at - 80) : at + 80], page[at - 80 : at + 80]
    assert "with the report's inputs" not in _prose("04_lift_transform_params.ipynb")


def test_03_and_bugs_md_say_what_upstream_saw_and_what_the_replica_shows():
    text = _prose("03_squeeze_dynamic_to_static.ipynb")
    for page in (text, BUGS_TEXT):
        assert "type error" in page and "shape mismatch" in page
    assert "What upstream saw" in text and "What the replica lets you see" in text
    assert "the result was typed" not in text


def test_08_says_modelled_on_and_names_torchs_own_tools_with_the_recorded_bisector():
    text = _prose("08_torch_compile.ipynb")
    assert (
        "*modelled on* #121253" in text
        and "same kind of mistake as #121253 is installed" not in text
    )
    for tool in ('`backend="eager"`', '`"aot_eager"`', "`TORCH_LOGS`", "tlparse",
                 "TORCHDYNAMO_REPRO_AFTER=aot", "TORCHDYNAMO_REPRO_LEVEL=4",
                 "torch._inductor.compiler_bisector"):  # fmt: skip
        assert tool in text, tool
    answer = "('inductor', 'post_grad_passes', 8, 'post_grad_custom_post_pass')"
    assert answer in text and "13 compiles, 205 s" in text and "622 MB" in text
    assert "shown as recorded, not run" in text and "bench/compiler_bisector.py" in text
    bench = (ROOT / "BENCHMARKS.md").read_text()
    assert f"compiler bisector: {answer}" in bench and "bench/compiler_bisector.py" in bench
    assert (ROOT / "bench" / "compiler_bisector.py").is_file()
    assert "## 7. torch.compile" in (ROOT / "docs" / "bugs.md").read_text()


def test_00s_map_says_which_notebooks_follow_a_real_report():
    text = _prose("00_tour.ipynb")
    assert "one real bug each" not in text
    assert "02 is not a bug" in text and "08's bug is a pass written for the notebook" in text
    for path in sorted(NOTEBOOKS.glob("*.ipynb"))[1:]:
        assert f"]({path.name})" in text, path.name  # the map lists every notebook


def test_06_defines_rel_before_the_first_output_that_prints_it():
    nb = nbformat.read(NOTEBOOKS / "06_reduce_and_error_map.ipynb", as_version=4)
    first_map = next(k for k, c in enumerate(nb.cells) if "print(m_strict)" in c.source)
    before = " ".join(c.source for c in nb.cells[:first_map] if c.cell_type == "markdown")
    assert "**rel**" in before and "`|x - ref| / (|ref| + atol)`" in before


# what the prose says (left), printed by a cell of the executed notebook (right)
PRINTED = {
    "11_iree.ipynb": [
        ("Of 155 steps, 21 changed the module", "155 steps, 21 of them changed the module"),
        ("the check ran the import and 7 of them", "the check ran the import and 7 of them"),
        (
            "#97 `iree-global-opt-demote-contraction-inputs`",
            "first at #97 iree-global-opt-demote-contraction-inputs",
        ),
        (
            "#88 as the last that agrees",
            "#88 iree-dispatch-creation-insert-tensor-barriers, agrees",
        ),
        (
            "The diff starts from #96",
            "#96 iree-dispatch-creation-fold-reshapes-into-tensor-barriers -> #97",
        ),
        ("`arith.truncf`", "+4 arith.truncf"),
    ],
    "00_tour.ipynb": [("same module as its last pass #N", "same module as its last pass #9")],
    "01_linear_weight_bloat.ipynb": [
        ("112 copies", "112 copies of `linear.weight`"),
        ("29.36 MB", "112 copies = 29,360,128 B = 29.36 MB"),
        ("354.4 MB", "88,591,464 parameters = 354.4 MB = 338 MiB"),
        ("8.3 GB", "= 8.28 GB"),
        ("3.86 GiB", "= 3.86 GiB"),
        ("29.4 MB", "= 29.4 MB (reported: 29.4 MB)"),
    ],
    "06_reduce_and_error_map.ipynb": [
        ("0.383 at `atol = 1e-5`", "embed                        0.383          0.0262"),
        ("0.026 at `1e-2`", "0.0262"),
    ],
    "07_tvm.ipynb": [
        ("`R.permute_dims`", "R.permute_dims(p_fc_weight"),
        ("`R.nn.relu`", "R.nn.relu("),
    ],
    "08_torch_compile.ipynb": [
        ("`In[n]:line`", "dynamo 0/0 forward (In["),
        (
            "`add_4` of `gpt2.transformer.h.0.ln_1`",
            "passlens: diverged at #26 SplitVarMean, on add_4 of gpt2.transformer.h.0.ln_1",
        ),
        # the post-grad passes' row counts against view_to_reshape's graph: SplitVarMean's ops
        (
            "`SplitVarMean`'s (−3 nodes",
            "124    -3     234.2 kB                        ",
        ),
        (
            "+3 `aten.var.correction`, +3 `aten.mean.dim`",
            "+3 aten.mean.dim, +3 aten.var.correction",
        ),
        ("`view_to_reshape` row", "+14 aten.reshape.default, -14 aten.view.default"),
    ],
}


@pytest.mark.notebook
@pytest.mark.parametrize("name", sorted(PRINTED))
def test_the_numbers_in_the_prose_are_printed_by_a_cell(name, executed):
    nb, failure = executed(name)
    if failure:
        pytest.fail(f"{name} did not run: {failure}", pytrace=False)
    prose, printed = _prose(name), _outputs(nb) + "\n" + to_html(nb)
    for said, shown in PRINTED[name]:
        assert said in prose, (name, said)
        assert shown in printed, (name, shown)


# ===== the pages' frame: navigation, header, glossary (issue 45) ================================


def test_a_published_page_has_prev_next_a_header_and_glossary_links():
    from passlens.pages import GLOSSARY, GLOSSARY_PAGE, GUIDE, glossary_html, versions

    nb = new_notebook(
        cells=[
            new_markdown_cell("# A page\n\nThe ATen graph, and `ATen` in code, and ATen again."),
            new_markdown_cell("FX first here: [FX](https://pytorch.org/docs/stable/fx.html) FX."),
            new_code_cell("x = 1", execution_count=1),
        ]
    )
    pages = [("00_tour", "A tour"), ("01_linear_weight_bloat", "One"), ("02_torch_to_ir", "Two")]
    page = to_html(nb, name="01_linear_weight_bloat", pages=pages)
    assert page.count("href='00_tour.html'") == 2 and page.count("href='02_torch_to_ir.html'") == 2
    assert "← A tour" in page and "Two →" in page and f"href='{BUGS_PAGE}'" in page
    learn, before = GUIDE["01_linear_weight_bloat"]
    text = _page_text(page)
    assert "What you will learn:" in text and html.unescape(learn) in text
    assert "Prerequisites:" in text and before in text
    for package, version in versions():
        assert f"{package} {version}" in text
    assert any(p == "torch" for p, _ in versions())
    # the first use in prose is linked, once; code and an existing link are left alone
    assert page.count(f'href="{GLOSSARY_PAGE}#aten"') == 1
    assert page.count(f'href="{GLOSSARY_PAGE}#fx"') == 1
    assert page.index(f'href="{GLOSSARY_PAGE}#fx"') < page.index("pytorch.org/docs/stable/fx")
    glossary = glossary_html(pages)
    for _, anchor, _ in GLOSSARY:
        assert f"id='{anchor}'" in glossary
    for term in ("ATen", "FX", "Relay", "opset", "Relax", "freezing"):
        assert any(t == term for t, _, _ in GLOSSARY), term
    # the first and the last page have no prev / no next
    first = to_html(nb, name="00_tour", pages=pages)
    assert "rel='prev'" not in first and "rel='next'" in first
    assert "rel='next'" not in to_html(nb, name="02_torch_to_ir", pages=pages)
    # every notebook has its header's text
    assert sorted(GUIDE) == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def test_the_bugs_page_links_every_notebooks_page():
    page = bugs_html()
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        assert f"href='{path.stem}.html'" in page, path.stem
    assert "href='glossary.html'" in page
    assert page.count("href='00_tour.html'") >= 2  # the list, and the nav's start
