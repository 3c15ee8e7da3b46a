"""Locations of the model's code: a notebook cell is named by its prompt (``In[5]:10``), never by
the kernel's temporary file (``/tmp/ipykernel_<pid>/<hash>.py``), which means nothing to a reader
and is gone with the kernel."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from compiler.frontend import UnsupportedOperatorError, from_torch
from compiler.frontend.locations import source_location
from compiler.ir import Call

CELL = "/tmp/ipykernel_4242/1234567890.py"
SOURCE = """
import torch

class Cell(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.proj(x)  # line 10


class Unsupported(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.inv(x)  # line 15
"""


def _cell_module(name: str):
    """A class defined as IPython defines a cell's: compiled under the kernel's file name."""
    namespace: dict = {}
    exec(compile(SOURCE, CELL, "exec"), namespace)  # noqa: S102 (our own source)
    return namespace[name]()


@pytest.fixture
def shell(monkeypatch):
    """A running IPython shell that compiled CELL as In[7] (the interface IPython 8 has:
    ``get_ipython().compile.format_code_name(file) -> ("Cell", "In[7]")``)."""
    compiler = types.SimpleNamespace(
        format_code_name=lambda name: ("Cell", "In[7]") if name == CELL else None
    )
    running = types.SimpleNamespace(compile=compiler)
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: running))


@pytest.fixture
def no_shell(monkeypatch):
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))


def _linear_location() -> str | None:
    module = from_torch(_cell_module("Cell").eval(), (torch.randn(2, 3),))
    (linear,) = [b for b in module.main.bindings if isinstance(b, Call) and b.op == "linear"]
    return linear.prov.location


def test_a_file_is_kept_as_it_is(no_shell):
    assert source_location("/home/me/model.py", 12) == "/home/me/model.py:12"
    assert source_location("ipykernel_1/notes.txt", 3) == "ipykernel_1/notes.txt:3"


def test_a_cell_the_running_kernel_knows_is_named_by_its_prompt(shell):
    assert source_location(CELL, 10) == "In[7]:10"
    assert _linear_location() == "In[7]:10"
    with pytest.raises(UnsupportedOperatorError) as e:
        from_torch(_cell_module("Unsupported"), (torch.randn(3, 3),), strict=True)
    assert "(In[7]:15)" in str(e.value) and "ipykernel" not in str(e.value)


def test_a_cell_unknown_here_is_a_notebook_cell_not_a_temporary_path(no_shell):
    assert source_location(CELL, 10) == "<notebook cell>:10"
    assert source_location("C:\\Temp\\ipykernel_9\\77.py", 2) == "<notebook cell>:2"
    assert source_location("<ipython-input-3-0a1b2c>", 4) == "<notebook cell>:4"
    assert _linear_location() == "<notebook cell>:10"


def test_a_shell_that_does_not_know_the_file_falls_back_to_the_pattern(shell):
    assert source_location("/tmp/ipykernel_4242/other.py", 1) == "<notebook cell>:1"
    assert source_location("/srv/model.py", 1) == "/srv/model.py:1"
