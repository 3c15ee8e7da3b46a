"""A user's own pass as a notebook defines it, for the tests of issue 42: the source of a
cell, executed the way IPython executes one (a fresh ``__main__`` namespace each run, the
source kept in the line cache under the cell's name), and a registry each test gets back as it
was (``registry``)."""

from __future__ import annotations

import linecache

import numpy as np
import pytest

from compiler.ir import parse
from compiler.passes.infra import manager, rules

# gelu -> relu: the bug ("fast" gelu), an unregistered pass
FAST_GELU = '''
from dataclasses import dataclass
from typing import ClassVar

from compiler.ir import Call
from compiler.passes import Pass, Rule, Rules
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import op

RELU = Rule("gelu-to-relu", op("gelu"), lambda n, ctx: Call("relu", [n.args[0]]))


@dataclass(frozen=True)
class FastGelu(Pass):
    """gelu -> relu (wrong: the bug to find)."""

    name: ClassVar[str] = "fast-gelu"

    def transform(self, module, ctx):
        table = Rules(self.name, [RELU])
        return rewrite_module(module, lambda name, fn: table, self.name)
'''

# the fix: gelu -> x/2 * (1 + erf(x / sqrt 2)), the same values; written self-contained
FAST_GELU_FIXED = '''
from dataclasses import dataclass
from typing import ClassVar

from compiler.ir import Call, Constant
from compiler.passes import Pass, Rule, Rules
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import op

SQRT_HALF = 0.7071067811865476


def exact(node, ctx):
    x = node.args[0]
    half = Call("multiply", [x, Constant.scalar(0.5)])
    erf = Call("erf", [Call("multiply", [x, Constant.scalar(SQRT_HALF)])])
    return Call("multiply", [half, Call("add", [erf, Constant.scalar(1.0)])])


@dataclass(frozen=True)
class FastGeluFixed(Pass):
    """gelu -> its erf form (right)."""

    name: ClassVar[str] = "fast-gelu"

    def transform(self, module, ctx):
        table = Rules(self.name, [Rule("gelu-exact", op("gelu"), exact)])
        return rewrite_module(module, lambda name, fn: table, self.name)
'''

# the buggy pass written to be self-contained (its rule inside the class): a reduction's test
# file can be written from this source alone
FAST_GELU_SELF_CONTAINED = '''
from dataclasses import dataclass
from typing import ClassVar

from compiler.ir import Call
from compiler.passes import Pass, Rule, Rules, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import op


def to_relu(node, ctx):
    return Call("relu", [node.args[0]])


@register_pass
@dataclass(frozen=True)
class FastGelu(Pass):
    """gelu -> relu (wrong: the bug to find)."""

    name: ClassVar[str] = "fast-gelu"
    scale: float = 1.0

    def transform(self, module, ctx):
        table = Rules(self.name, [Rule("gelu-to-relu", op("gelu"), to_relu)])
        return rewrite_module(module, lambda name, fn: table, self.name)
'''

TEXT = """
def @main(%x: f32[2, 8]) -> f32[2, 8] {
  %a: f32[2, 8] = gelu(%x)
  %b: f32[2, 8] = add(%a, %x)
  %c: f32[2, 8] = multiply(%b, %x)
  return %c
}
"""

_cells = [0]


def run_cell(source: str, module: str = "__main__", cached: bool = True) -> dict:
    """Execute ``source`` as a notebook cell: in a fresh namespace named ``module``, the
    source in the line cache under a new cell name (``cached=False``: as ``exec`` of a string,
    which leaves no source). Returns the namespace."""
    _cells[0] += 1
    filename = f"<cell-{_cells[0]}>" if cached else "<string>"
    if cached:
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"__name__": module}
    exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    return namespace


def model_and_input():
    """The module with a gelu and an input for it."""
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    return parse(TEXT), x


@pytest.fixture
def registry(monkeypatch):
    """The pass registry and the rule tables as they were, after the test."""
    monkeypatch.setattr(manager, "_PASSES", dict(manager._PASSES))
    monkeypatch.setattr(rules, "_TABLES", dict(rules._TABLES))
    monkeypatch.setattr(rules, "_TABLE_WHERE", dict(rules._TABLE_WHERE))
