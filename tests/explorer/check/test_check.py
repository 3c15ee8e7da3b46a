"""trace.check: numerics against the reference, shapes, parameter bloat, signature changes and
failed passes at every step, and the the bugs of docs/bugs.md it must make obvious."""

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import Call, Constant, FuncCall, Function, Module, Var, tensor
from compiler.ir.provenance import Provenance
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from explorer.check import CheckError, Finding, Report
from tests.compiler.passes.test_dynamic_to_static import SEEDS_PAD_SQUEEZE, seeds_input
from tests.compiler.passes.test_lazy_params import MODEL as LAZY_MODEL
from tests.compiler.passes.test_lazy_params import NESTED, W1, W2, X
from tests.compiler.passes.test_lazy_params import B as NESTED_B
from tests.compiler.passes.test_lazy_params import W as NESTED_W
from tests.compiler.passes.test_lift_transform_params import SEEDS_BEFORE


@register_pass
@dataclass(frozen=True)
class _FlipAdd(Pass):
    """A deliberately wrong pass: every add becomes a subtract."""

    name: ClassVar[str] = "test-check-flip-add"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "add":
                return Call("subtract", node.args)  # inherits the add's provenance and name
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


def kinds(report: Report) -> list[str]:
    return [f.kind for f in report.findings]


@pytest.fixture(scope="module")
def mlp_trace():
    return explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu"))


# ----- correct pipelines check clean ------------------------------------------------------------


def test_default_pipeline_on_mlp_is_ok(mlp_trace):
    report = mlp_trace.check()
    assert report.ok and report.findings == [] and report.first_failure is None
    rows = report.rows()
    assert len(rows) == len(mlp_trace)
    assert all(r["status"] == "ok" for r in rows)
    assert max(r["max_abs"] for r in rows) < 1e-5  # decompose / fuse change rounding only
    assert "the source is IR" in report.reference  # the imported step is the reference
    assert "random" in str(report)  # no inputs were given: the report says what it used


def test_default_pipeline_on_small_convnext_is_ok_and_reuses_values():
    trace = explorer.explore(models.convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32))
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    report = trace.check((x,))
    assert report.ok, str(report)
    # Nodes shared between snapshots are computed once: the stem before the first linear
    # layer is the same objects after decompose-ops and fold-constant.
    assert report.cache_hits > 0
    assert any(c.reused > 0 for c in report.steps if c.step.kind == "pass")
    naive = sum(
        sum(1 for fn in s.module.functions.values() for _ in fn.iter_nodes())
        for s in trace
        if s.module is not None and s.kind != "source"
    )
    assert report.computed < naive
    # Passes that rebuild nodes around the same values run nothing again: fold-constant's
    # weight constants are views of the memory permute_dims gave before, and fuse-ops's
    # function bodies compute what the unfused nodes did.
    # decompose-ops' matmul and add too: the check computes a linear as its decomposition
    # (the reference rounds alike), each part kept by what computes it.
    for name in ("decompose-ops", "fold-constant", "fuse-ops"):
        c = report.steps[trace[name].index]
        assert c.computed == 0 and c.reused > 0, (name, c)
    assert report.memo_hits > 0
    # Unchanged steps are not run again: they point at the step whose module they show.
    unchanged = [c for c in report.steps if c.step.status == "unchanged"]
    assert unchanged and all(c.same_as is not None and c.computed == 0 for c in unchanged)
    assert "reused from earlier steps" in str(report)


def test_numpy_and_torch_inputs_are_both_accepted(mlp_trace):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    a, b = mlp_trace.check((x,)), mlp_trace.check((torch.from_numpy(x),))
    assert a.ok and b.ok
    assert [r["max_abs"] for r in a.rows()] == [r["max_abs"] for r in b.rows()]


def test_wrong_number_of_inputs_is_a_clear_error(mlp_trace):
    x = np.zeros((4, 32), np.float32)
    with pytest.raises(CheckError, match="@main takes 1 input"):
        mlp_trace.check((x, x))


# ----- bug 3: a wrong shape after dynamic-to-static ------------------------------------


def test_squeeze_replica_is_one_shape_mismatch_at_the_squeeze_and_its_step():
    trace = explorer.explore(
        SEEDS_PAD_SQUEEZE, (seeds_input(),), pipeline="replica-dynamic-to-static-squeeze"
    )
    report = trace.check()
    assert kinds(report) == ["shape-mismatch"]  # the values stay right: no divergence
    f = report.first_failure
    assert f is report.findings[0] and f.step is trace["replica-dynamic-to-static-squeeze"]
    (node,) = f.nodes
    assert isinstance(node, Call) and node.op == "squeeze"
    assert str(f.details["annotated"]) == "f32[13, 13, 1, 1]" and f.details["shape"] == (
        13,
        1,
        1,
        1,
    )
    assert "annotated f32[13, 13, 1, 1] but computes f32[13, 1, 1, 1]" in f.message
    assert "/Squeeze" in f.message  # where it came from in the ONNX graph
    assert report.steps[f.step.index].status == "shape-mismatch"


def test_real_dynamic_to_static_checks_clean():
    trace = explorer.explore(SEEDS_PAD_SQUEEZE, (seeds_input(),), pipeline="dynamic-to-static")
    assert trace.check().ok


# ----- bug 1: bloat from a broadcast weight -----------------------------------------------


def linear_on_4d_input() -> Module:
    """``linear`` on a channels-last 4-D input, as in ConvNeXt's blocks."""
    rng = np.random.default_rng(0)
    x = Var("x", tensor([2, 4, 5, 16]))
    w = Constant(rng.standard_normal((32, 16)).astype(np.float32), name="fc.weight")
    b = Constant(rng.standard_normal(32).astype(np.float32), name="fc.bias")
    y = Call("linear", [x, w, b], prov=Provenance(module_path="fc"))
    return Module({"main": Function.from_output([x], y)})


def test_linear_broadcast_then_fold_is_param_bloat_naming_the_new_constant():
    trace = explorer.explore(
        linear_on_4d_input(), pipeline="replica-linear-broadcast,fold-constant"
    )
    report = trace.check()
    assert kinds(report) == ["param-bloat"]  # the numbers are right, the size is not
    f = report.first_failure
    assert f.step is trace["fold-constant"]
    const = f.nodes[0]
    assert isinstance(const, Constant) and const.data.shape == (2, 4, 16, 32)
    assert f"`{const.name}` is 2 × 4 = 8 copies of `fc.weight`" in f.message
    assert f.details["bytes_after"] > 7 * f.details["bytes_before"] // 2
    assert f.details["growth"][0][0] == const.name


def test_convnext_channels_last_linears_bloat_the_same_way():
    model = models.convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    f = trace.check().first_failure
    assert f.kind == "param-bloat" and f.step is trace["fold-constant"]
    # the two linear layers of each block, weights copied along the (1, H) batch dims; the
    # last stage's block runs at 1 x 1 (one copy: no growth)
    assert len(f.details["growth"]) == 8
    reasons = [g[3] for g in f.details["growth"]]
    assert any("is 1 × 8 = 8 copies of `features.1.0.block.3.weight`" in r for r in reasons)


def test_the_same_model_without_the_replica_does_not_bloat():
    trace = explorer.explore(linear_on_4d_input(), pipeline="default")
    assert trace.check().ok


# ----- bug 4 and 5: signatures that change, lazy callbacks, failed passes ----------------


def test_lift_transform_params_is_a_signature_change_not_a_failure():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    trace = explorer.explore(SEEDS_BEFORE, (a, b), pipeline="lift-transform-params")
    report = trace.check()
    assert report.ok and kinds(report) == ["signature-changed"]
    f = report.findings[0]
    assert f.severity == "info" and not f.is_failure and report.first_failure is None
    assert f.step is trace["lift-transform-params"]
    assert "ran @main_transform_params on the weights, then @main" in f.message
    # Composed, the numbers are exact (called the old way they would be off by |A|).
    assert report.steps[f.step.index].max_abs == 0


def test_lazy_passes_get_callbacks_and_check_clean():
    spec = (
        "lift-transform-params,lazy-transform-params,fold-constant,lazy-get-input,lazy-set-output"
    )
    trace = explorer.explore(LAZY_MODEL, (X, W1, W2), pipeline=spec)
    report = trace.check()
    assert report.ok, str(report)
    changed = {f.step.name: f for f in report.of_kind("signature-changed")}
    assert set(changed) == {
        "lift-transform-params",
        "lazy-transform-params",
        "lazy-get-input",
        "lazy-set-output",
    }
    lazy = changed["lazy-transform-params"]
    assert lazy.details["get_item_calls"] == 2 and lazy.details["set_item_calls"] == 2
    assert "get_item" in lazy.message and "served the weights" in lazy.message
    assert all(r["max_abs"] == 0 for r in report.rows())


def test_failed_pass_is_reported_with_the_binding_it_failed_on():
    x = np.ones((2, 4), np.float32)
    spec = "infer-types,replica-lazy-transform-params,dead-code-elimination"
    trace = explorer.explore(NESTED, (x, NESTED_W, NESTED_B), pipeline=spec)
    report = trace.check()
    assert kinds(report) == ["pass-failed"]
    f = report.first_failure
    assert f.step is trace.failure and f.step.name == "replica-lazy-transform-params"
    (node,) = f.nodes
    assert isinstance(node, FuncCall) and node.func == "transform"
    assert f.details["line_text"].endswith("call @transform(%w, %b)")
    assert "in @main_transform_params: AssertionError (no message)" in f.message
    assert report.steps[f.step.index].status == "failed"


def test_our_lazy_transform_params_on_the_nested_tuple_checks_clean():
    x = np.ones((2, 4), np.float32)
    spec = "infer-types,lazy-transform-params,dead-code-elimination"
    report = explorer.explore(NESTED, (x, NESTED_W, NESTED_B), pipeline=spec).check()
    assert report.ok and kinds(report) == ["signature-changed"]


# ----- a wrong pass: where the numbers go wrong -----------------------------------------------


def test_wrong_pass_diverges_at_its_step_naming_the_first_bad_node(mlp_trace):
    spec = "decompose-ops{ops=[linear]},test-check-flip-add,fold-constant,dead-code-elimination"
    trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2), pipeline=spec)
    report = trace.check()
    # Only the step that broke the numbers: later steps keep the same wrong numbers.
    assert kinds(report) == ["diverged"]
    f = report.first_failure
    assert f.step is trace["test-check-flip-add"]
    assert f.details["max_abs"] > 0.1 and f.details["node_errors"]
    node = f.nodes[0]
    assert node.op == "subtract" and node.prov.module_path == "layers.0"
    assert f.message.startswith("after test-check-flip-add, layers.0 differs by ")
    statuses = [r["status"] for r in report.rows()]
    assert statuses[trace["fold-constant"].index] == "diverged"  # still wrong, not re-reported
    assert statuses[trace["decompose-ops"].index] == "ok"


def test_a_changed_private_function_is_not_served_from_the_cache():
    # The pass changes @f only: the call node in @main is the same object before and after,
    # but its value is not.
    text = """
    def @main(%x: f32[4]) -> f32[4] {
      %y: f32[4] = call @f(%x)
      %z: f32[4] = exp(%y)
      return %z
    }
    def @f(%a: f32[4]) -> f32[4] attrs {private = true} {
      %b: f32[4] = add(%a, const(f32[], 1.0))
      return %b
    }
    """
    trace = explorer.explore(text, pipeline="test-check-flip-add")
    flipped = trace["test-check-flip-add"]
    assert flipped.module["main"] is trace.imported.module["main"]
    report = trace.check()
    assert kinds(report) == ["diverged"] and report.first_failure.step is flipped


def test_without_inputs_weights_are_made_up_or_numbers_are_not_checked():
    report = explorer.explore(NESTED, pipeline="lazy-transform-params").check()
    assert report.ok and report.numbers_checked and "inputs and weights: random" in str(report)
    text = """
    def @main(%x: f32[*]) -> f32[*] {
      %y: f32[*] = relu(%x)
      return %y
    }
    """
    report = explorer.explore(text, pipeline="dce").check()
    assert not report.numbers_checked and report.headline() == "check ok, but numbers not checked"
    assert all(r["status"] == "not run" for r in report.rows())
    assert "numbers not checked: %x: f32[*] has no known shape" in str(report)


# ----- reports and progress -------------------------------------------------------------------


def test_report_text_and_html_name_the_first_failure():
    trace = explorer.explore(
        linear_on_4d_input(), pipeline="replica-linear-broadcast,fold-constant"
    )
    report = trace.check()
    text = str(report)
    assert text.splitlines()[0] == "check: 1 problem; first at #2 fold-constant (param-bloat)"
    assert "copies of `fc.weight`" in text and "max abs" in text
    page = report._repr_html_()
    assert "<table>" in page and "param-bloat" in page and "fc.weight" in page
    assert isinstance(report.findings[0], Finding) and report.at("fold-constant") == report.findings


def test_progress_callback_and_stderr_line(capsys):
    trace = explorer.explore(linear_on_4d_input(), pipeline=",".join(["dce"] * 24))
    seen = []
    trace.check(progress=lambda i, n, name: seen.append((i, n, name)))
    steps = [c for c in seen if ": " not in c[2]]  # then each step's phases, "<step>: <what>"
    assert len(steps) == len(trace) == 25 and seen[-1][1] == 25
    assert [c[0] for c in steps] == [s.index for s in trace.steps]
    names = {s.index: s.name for s in trace.steps}
    assert all(c[2].startswith(names[c[0]] + ": ") for c in seen if c not in steps)
    assert capsys.readouterr().err == ""
    trace.check(progress=True)  # stderr is no terminal here: one line for the job
    err = capsys.readouterr().err
    assert re.fullmatch(
        r"checking: 25/25 steps in \d+\.\d s \(last: dead-code-elimination\)\n", err
    )
    trace.check()  # quick: nothing (see tests/explorer/test_progress.py)
    assert capsys.readouterr().err == ""
    small = explorer.explore(linear_on_4d_input(), pipeline="dce")
    small.check()
    assert capsys.readouterr().err == ""


# ----- framework references -------------------------------------------------------------------


def test_onnx_source_is_checked_against_onnxruntime():
    pytest.importorskip("onnxruntime")
    from compiler.frontend import to_onnx

    proto = to_onnx(models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu"))
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    report = explorer.explore(proto, (x,)).check()
    assert report.ok and report.reference.startswith("onnxruntime")
    assert report.steps[0].status == "reference" and report.steps[1].max_abs < 1e-5


def _torch_mlp():
    torch = pytest.importorskip("torch")
    from compiler.frontend import torch_convert, torch_ops  # noqa: F401  (registers converters)

    aten = torch.ops.aten
    if not all(torch_convert.find_converter(t) for t in (aten.linear.default, aten.gelu.default)):
        pytest.skip("the torch frontend has no linear / gelu converter yet")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    return model, torch.randn(3, 8)


def test_torch_source_is_checked_against_eager():
    model, x = _torch_mlp()
    model.train()
    trace = explorer.explore(model, (x,))
    report = trace.check()
    assert report.ok, str(report)
    assert report.reference.startswith("torch eager")
    assert model.training  # the check put the model in eval mode and back
    assert report.steps[0].status == "reference" and report.steps[1].max_abs < 1e-5
    by_import = trace.check(reference="import")
    assert by_import.ok and by_import.reference.startswith("the imported step")


def test_torch_source_with_a_wrong_pass_names_the_module_path():
    model, x = _torch_mlp()
    spec = "decompose-ops{ops=[linear]},test-check-flip-add"
    trace = explorer.explore(model, (x,), pipeline=spec)
    report = trace.check()
    assert kinds(report) == ["diverged"]
    f = report.first_failure
    assert f.step is trace["test-check-flip-add"]
    node = f.nodes[0]
    # matched through provenance with the FX node the add came from
    assert node.op == "subtract" and node.prov.module_path == "0"
    assert node.prov.source_node == "linear"
    assert "after test-check-flip-add, 0 (linear) differs by" in f.message
    assert "torch eager" in f.message


def test_exported_program_and_weights_as_inputs_check_clean():
    model, x = _torch_mlp()
    import torch

    ep = torch.export.export(model, (x,))
    report = explorer.explore(ep, (x,)).check()
    assert report.ok
    assert report.reference == (
        "torch eager (the exported graph run op by op, no_grad; a linear's bias added after "
        "its product)"
    )
    # Weights as parameters after the input: the check takes them from the imported module.
    spec = "lift-transform-params,lazy-transform-params,default"
    trace = explorer.explore(model, (x,), keep_params_as_input=True, pipeline=spec)
    report = trace.check()
    assert report.ok and report.steps[trace.imported.index].max_abs < 1e-5


def test_a_value_recomputed_with_equal_bits_is_shared_downstream():
    """A pass that rebuilds a node so it computes the very same bits (here multiply(x, 2)
    becomes add(x, x)) changes nothing after it: the check reuses every later value."""
    from compiler.ir import parse

    before = """
def @main(%x: f32[4, 64]) -> f32[4, 64] {
  %a: f32[4, 64] = multiply(%x, const(f32[], 2.0))
  %b: f32[4, 64] = exp(%a)
  %c: f32[4, 64] = tanh(%b)
  return %c
}
"""
    m2 = parse(before.replace("multiply(%x, const(f32[], 2.0))", "add(%x, %x)"))
    from explorer.passlens.memo import Memo, MemoHooks

    memo = Memo()
    hooks = MemoHooks(memo)
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    from compiler.interpret import ValueCache, evaluate

    m1 = parse(before)
    memo.start(None)
    first = evaluate(m1, [x], cache=ValueCache(), memo=hooks)
    memo.start(memo.generation)
    second = evaluate(m2, [x], cache=ValueCache(), memo=hooks)
    assert memo.content_hits == 1  # add(x, x) gave multiply(x, 2)'s bits
    assert hooks.hits == 2  # so exp and tanh were found, not run
    assert second.outputs[0] is first.outputs[0]
