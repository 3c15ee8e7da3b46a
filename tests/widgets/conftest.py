"""Traces shared by the widget tests (built once per session; rendering is what is tested)."""

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir.nodes import Call, Constant, Function, Module, Var
from compiler.ir.provenance import Provenance
from compiler.ir.types import TensorType
from tests.compiler.passes.test_lazy_params import NESTED
from tests.explorer.test_diff import LINEAR_4D, linear_module

# a name with everything that must be escaped (kept short: labels are cut at 48 characters)
EVIL = "<script>alert(1)</script> \"q\" 'a' & b"


@pytest.fixture(scope="session")
def mlp_trace():
    return explorer.explore(models.mlp())


@pytest.fixture(scope="session")
def convnext_trace():
    return explorer.explore(models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10))


@pytest.fixture(scope="session")
def failed_trace():
    """fold-constant, then the TVM lazy-transform-params replica failing on a nested tuple."""
    trace = explorer.explore(NESTED, pipeline="fold-constant,replica-lazy-transform-params")
    assert trace.failure is not None and trace.failure.failed_node is not None
    return trace


@pytest.fixture(scope="session")
def broadcast_trace():
    """The linear-broadcast replica then fold-constant: 56 copies of one weight."""
    return explorer.explore(
        linear_module(LINEAR_4D), pipeline="replica-linear-broadcast,fold-constant"
    )


@pytest.fixture(scope="session")
def evil_trace():
    """Names, module paths and weights that are HTML / DOT / JSON hazards."""
    x = Var(EVIL, TensorType((2, 3), "float32"))
    w = Constant(np.arange(6, dtype=np.float32).reshape(2, 3), name=EVIL + ".w")
    prov = Provenance(module_path=EVIL + ".layer")
    y = Call("add", (x, Call("exp", (w,), {}, prov=prov)), {}, prov=prov)  # exp(w) folds
    module = Module({"main": Function.from_output([x], y, {"num_input": 1})})
    return explorer.explore(module, pipeline="fold-constant")


@pytest.fixture(scope="session")
def base_trace():
    """ConvNeXt-base (~350 bindings, 692 graph nodes) through the default pipeline."""
    return explorer.explore(models.convnext())


@pytest.fixture(scope="session")
def checked_trace():
    """A deliberately wrong pass (every add made a subtract) and the check report naming it."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    spec = "decompose-ops{ops=[linear]},test-check-flip-add,fold-constant,dead-code-elimination"
    trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2), pipeline=spec)
    return trace, trace.check()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium, one per test module (the browser tests import test_browser, whose
    import skips them where Playwright or Chromium is missing)."""
    from tests.widgets.test_browser import ARGS, CHROMIUM, sync_api

    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def bloat_checked():
    """A small ConvNeXt through the linear-broadcast replica and fold-constant, checked: one
    param-bloat finding naming 12 copies, the one that grew most (features.3.0, x4) not the
    first in the graph (features.1.0, x8)."""
    model = models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    return trace, trace.check()
