"""Every notebook in notebooks/ runs top to bottom in a fresh kernel (nbclient, no network),
and its assertion cells check the findings it teaches; notebooks are stored without outputs.

The kernel is ``python3`` run by this interpreter (the venv's kernelspec says ``python``, which
jupyter_client replaces by ``sys.executable``): run the tests with the venv's python."""

from __future__ import annotations

import pathlib

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from passlens.demo import describe_failure, kernel_problem

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = [
    "00_tour.ipynb",
    "01_linear_weight_bloat.ipynb",
    "02_torch_to_ir.ipynb",
    "03_squeeze_dynamic_to_static.ipynb",
    "04_lift_transform_params.ipynb",
    "05_lazy_transform_params.ipynb",
    "06_reduce_and_error_map.ipynb",
]


def _execute(nb, cwd: pathlib.Path) -> str | None:
    """Run ``nb`` in a fresh python3 kernel with ``cwd`` as its working directory; None when
    every cell ran, else which cell failed, its source and the error."""
    from nbclient import NotebookClient

    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
    )
    try:
        client.execute()
    except Exception as e:  # a failed cell, a timeout or a dead kernel
        return describe_failure(nb, e)
    return None


def test_the_notebooks_are_the_tour_and_one_per_seed():
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
def test_notebook_runs(name, tmp_path):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    failure = _execute(nb, tmp_path)
    if failure:
        pytest.fail(f"{name}: {failure}", pytrace=False)


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
}


@pytest.mark.notebook
@pytest.mark.parametrize("name", sorted(SABOTAGE))
def test_a_broken_detector_fails_the_notebook(name, tmp_path):
    sabotage, failing_cell = SABOTAGE[name]
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.insert(0, new_code_cell(sabotage))
    failure = _execute(nb, tmp_path)
    assert failure is not None, f"{name} passed with its detector broken"
    assert "failed: AssertionError" in failure and failing_cell in failure, failure
