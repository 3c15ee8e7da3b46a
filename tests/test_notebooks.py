"""Every notebook in notebooks/ runs top to bottom in a fresh kernel (nbclient, no network),
and its assertion cells check the findings it teaches; notebooks are stored without outputs."""

from __future__ import annotations

import pathlib
import re

import nbformat
import pytest

NOTEBOOKS = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = [
    "00_tour.ipynb",
    "01_linear_weight_bloat.ipynb",
    "02_torch_to_ir.ipynb",
    "03_squeeze_dynamic_to_static.ipynb",
    "04_lift_transform_params.ipynb",
    "05_lazy_transform_params.ipynb",
]


def test_the_notebooks_are_the_tour_and_one_per_seed():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_stored_without_outputs_and_with_prose_and_assertions(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), (
        f"{name} has stored outputs: clear them before committing"
    )
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 3  # it explains itself
    assert any("assert " in c.source for c in code)  # and checks what it teaches


@pytest.mark.notebook
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs(name, tmp_path):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    except CellExecutionError as e:  # names the cell and the error, without the whole notebook
        plain = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
        pytest.fail(f"{name}: {plain[-3000:]}", pytrace=False)
