"""The calling convention (``compiler.passes.calling_convention``): the passes that change how
a module is called declare ``changes_signature`` and give the convention described here; every
other pass leaves it as it was."""

import numpy as np
import pytest

from compiler import models, passes
from compiler.ir import Module, parse
from compiler.passes import (
    CallingConvention,
    PipelineError,
    build_pipeline,
    calling_convention,
    transform_function,
    weight_params,
)
from compiler.passes.bind_params import bind_params
from tests.compiler.passes.helpers import apply
from tests.compiler.passes.test_lazy_params import MODEL

MARKED = {
    "bind-params",
    "lazy-get-input",
    "lazy-set-output",
    "lazy-transform-params",
    "lift-transform-params",
    "replica-lazy-transform-params",
}

# weights as parameters, with work for decompose-ops, fold-constant, fuse-ops and legalize-ops
LINEAR = """
def @main(%x: f32[2, 4], %w: f32[3, 4], %b: f32[3]) -> f32[2, 3] attrs {num_input = 1} {
  %y: f32[2, 3] = linear(%x, %w, %b, out_dtype=none)
  %r: f32[2, 3] = relu(%y)
  %s: f32[2, 3] = multiply(%r, const(f32[], 2.0))
  return %s
}
"""


def test_exactly_the_passes_that_change_the_signature_say_so():
    marked = {name for name, cls in passes.all_passes().items() if cls.changes_signature}
    assert marked == MARKED


def _modules() -> dict[str, Module]:
    lifted = apply(MODEL, "lift-transform-params")
    return {
        "weights as parameters": parse(MODEL),
        "linear": parse(LINEAR),
        "lifted": lifted,
        "lifted linear": apply(LINEAR, "lift-transform-params"),
        "lazy transform": apply(lifted, "lazy-transform-params"),
        "lazy main": apply(MODEL, "lazy-get-input,lazy-set-output"),
        "weights as constants": models.mlp((8, 16, 4), batch=2, seed=0),
    }


def _unmarked_specs() -> list[str]:
    specs = []
    for name, cls in sorted(passes.all_passes().items()):
        if cls.changes_signature or name == "sequential" or name.startswith("test-"):
            continue
        try:
            build_pipeline(name)
        except PipelineError:
            continue
        specs.append(name)
    return [*specs, "convert-dtype{dtype=float16}", "convert-layout{layout=NHWC}", "default"]


@pytest.mark.parametrize("spec", _unmarked_specs())
def test_a_pass_not_marked_leaves_the_calling_convention_as_it_was(spec):
    for label, module in _modules().items():
        result = passes.run(module, spec)
        assert result.ok, f"{spec} on {label}: {result.failure and result.failure.traceback}"
        after = calling_convention(result.module)
        assert after == calling_convention(module), f"{spec} on {label}: {after.describe()}"


def test_lift_transform_params_runs_the_transform_on_the_weights_first():
    after = apply(MODEL, "lift-transform-params")
    conv = calling_convention(after)
    assert conv == CallingConvention(
        "main", "main_transform_params", 2, False, False, 2, False, False
    )
    assert conv.describe() == (
        "@main_transform_params on the weights, then @main on the inputs and its results"
    )
    assert [p.name for p in weight_params(after)] == ["w1", "w2"]


@pytest.mark.parametrize("name", ["lazy-transform-params", "replica-lazy-transform-params"])
def test_lazy_transform_params_serves_and_collects_the_transform(name):
    conv = calling_convention(apply(apply(MODEL, "lift-transform-params"), name))
    assert conv == CallingConvention(
        "main", "main_transform_params", 0, True, True, 2, False, False
    )
    assert conv.describe() == (
        "@main_transform_params on the weights (through get_item and set_item), "
        "then @main on the inputs and its results"
    )


def test_lazy_get_input_and_lazy_set_output_make_main_lazy():
    before = calling_convention(parse(MODEL))
    assert before == CallingConvention("main", None, 0, False, False, 2, False, False)
    assert before.describe() == "@main on the inputs and the weights"
    got = calling_convention(apply(MODEL, "lazy-get-input"))
    assert got == CallingConvention("main", None, 0, False, False, 0, True, False)
    both = calling_convention(apply(MODEL, "lazy-get-input,lazy-set-output"))
    assert both == CallingConvention("main", None, 0, False, False, 0, True, True)
    assert both.describe() == (
        "@main on the inputs; @main's weights served by get_item; "
        "@main's results collected from set_item"
    )


def test_bind_params_takes_the_bound_weights_out_of_the_signature():
    module = parse(MODEL)
    bound = bind_params(module, {"w2": np.ones(3, np.float32)})
    assert calling_convention(bound).entry_weights == 1
    assert [p.name for p in weight_params(bound)] == ["w1"]


def test_another_entry_is_found_with_its_transform():
    module = apply(MODEL.replace("@main", "@forward"), "lift-transform-params")
    assert transform_function(module, "forward") == "forward_transform_params"
    assert transform_function(module) is None
    conv = calling_convention(module, entry="forward")
    assert (conv.entry, conv.transform, conv.entry_weights) == (
        "forward",
        "forward_transform_params",
        2,
    )
    assert conv.describe().endswith("then @forward on the inputs and its results")
