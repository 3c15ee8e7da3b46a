"""The error map (``report.error_map()``: each source layer's error against the reference at
every step) and the parameter map (``trace.param_map()``: each layer's weight bytes at every
step, where they start to grow)."""

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import ANY, Call, Function, Module, Var, tensor
from compiler.ir.provenance import Provenance
from explorer.check import ErrorMap, ParamMap
from explorer.check import layer_errors
from explorer.check.layer_errors import CHUNK, TORCH_MIN, _errors
from explorer.check.layers import layer_order
from tests.explorer.check.test_check import _FlipAdd, _torch_mlp, linear_on_4d_input  # noqa: F401

WRONG = "decompose-ops{ops=[linear]},test-check-flip-add,fold-constant,dead-code-elimination"


@pytest.fixture(scope="module")
def flipped():
    """The wrong pass of the widget tests' ``checked_trace`` (every add made a subtract)."""
    trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2), pipeline=WRONG)
    return trace, trace.check()


def test_the_error_map_of_a_wrong_pass(flipped):
    trace, report = flipped
    m = report.error_map()
    assert isinstance(m, ErrorMap) and report.error_map() is m  # built once
    assert m.layers == ["layers.0", "layers.1", "layers.2"]
    names = ["module", "decompose-ops", "test-check-flip-add", "fold-constant"]
    assert m.steps == [0, 1, 2, 3, 4] and m.step_names == [*names, "dead-code-elimination"]
    assert m.errors.shape == m.tolerance.shape == m.over.shape == (5, 3)
    # the import is the reference; decompose-ops computes the very same bits
    assert (m.errors[:2] == 0).all() and not m.over[:2].any()
    # from the wrong pass on, every layer is beyond tolerance (the last step reuses #3's run)
    assert m.over[2:].all() and (m.tolerance[2:] > 1).all()
    assert (m.errors[4] == m.errors[3]).all()
    assert m.first_step == 2 and m.first_layer == "layers.0"
    page = m._repr_html_()  # in Jupyter: the heat map, the first failing cell marked
    assert page.startswith("<style>") and "pl-map-first-cell" in page and "layers.0" in page
    # the same number and node as the diverged finding's first node error
    f = report.first_failure
    first = f.details["node_errors"][0]
    assert m.errors[2, 0] == pytest.approx(first.max_rel, rel=1e-5)
    assert m.nodes[2][0] == trace[2].graph.node_of(f.nodes[0]).id == "main/subtract"
    assert m.nodes[0] == ["main/linear", "main/relu", "main/linear_1"]
    assert "first failing step #2 test-check-flip-add" in str(m)
    assert "layers.0 (143 rel)" in str(m)


def test_blank_cells_where_a_step_has_no_value_of_the_layer():
    trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2, activation="gelu"))
    report = trace.check()
    m = report.error_map()
    fuse = m.row(trace["fuse-ops"].index)
    default = m.row(trace["default"].index)  # the nested pipeline: what its last child made
    # fuse-ops moved the first linear into a fused function: no value of it in @main
    assert np.isnan(m.errors[fuse, 0]) and m.nodes[fuse][0] == "" and not m.over[fuse, 0]
    assert m.nodes[fuse][1] == "main/fused_matmul_add_gelu"  # the call stands for the gelu
    assert np.array_equal(m.errors[default], m.errors[fuse], equal_nan=True)
    assert m.nodes[default] == m.nodes[fuse]
    assert m.first_step is None and m.first_layer is None and "no step diverged" in str(m)
    assert not np.isnan(np.delete(m.errors, [fuse, default], axis=0)).any()


def test_a_model_without_provenance_has_no_layers():
    x = Var("x", tensor([4]))
    trace = explorer.explore(Module({"main": Function.from_output([x], Call("exp", [x]))}))
    m = trace.check().error_map()
    assert m.layers == [] and m.errors.shape == (len(trace), 0) and m.first_layer is None
    assert trace.param_map().layers == []


def test_without_inputs_numbers_are_not_checked_and_the_map_is_blank():
    x = Var("x", tensor([ANY]))
    y = Call("exp", [x], prov=Provenance(module_path="act"))
    trace = explorer.explore(Module({"main": Function.from_output([x], y)}), pipeline="dce")
    report = trace.check()
    assert not report.numbers_checked
    m = report.error_map()
    assert m.layers == ["act"] and np.isnan(m.errors).all() and m.nodes == [[""], [""]]


def test_model_order_puts_a_block_after_the_layers_inside_it():
    """A block's own ops (here the residual add) are its output: the block comes after the
    layers inside it, so the first failing layer is where the numbers first go wrong."""
    x = Var("x", tensor([2, 8]))

    def prov(path: str, node: str) -> Provenance:
        return Provenance(module_path=path, source_node=node)

    pre = Call("neg", [x], prov=prov("block", "neg"))
    act = Call("relu", [pre], prov=prov("block.act", "relu"))
    out = Call("add", [act, x], prov=prov("block", "add"))
    trace = explorer.explore(
        Module({"main": Function.from_output([x], out)}), pipeline="test-check-flip-add"
    )
    assert layer_order(trace) == ["block.act", "block"]
    m = trace.check().error_map()
    assert m.layers == ["block.act", "block"] and m.first_layer == "block"
    assert list(m.over[1]) == [False, True]  # the add, made a subtract; relu was right


def test_torch_source_first_layer_is_the_findings_module():
    model, x = _torch_mlp()
    trace = explorer.explore(
        model, (x,), pipeline="decompose-ops{ops=[linear]},test-check-flip-add"
    )
    report = trace.check()
    m = report.error_map()
    assert trace.steps[0].kind == "source" and m.steps[0] == trace.imported.index  # no FX row
    assert m.layers == ["0", "1", "2"]
    f = report.first_failure
    assert m.first_step == f.step.index and m.first_layer == f.nodes[0].prov.module_path == "0"
    row = m.row(trace.imported.index)
    # within the tolerance (on torch's kernels, which compute as eager does: equal to it)
    assert (m.tolerance[row] < 1).all() and np.isfinite(m.errors[row]).all()


def test_layer_errors_match_the_checks_numbers_and_handle_nan():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((64, 32)).astype(np.float32)
    got = ref + rng.standard_normal(ref.shape).astype(np.float32) * 1e-3
    rel, share = _errors(got, ref, 1e-4, 1e-5)
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    diff = np.abs(g64 - r64)
    assert rel == pytest.approx((diff / (np.abs(r64) + 1e-5)).max(), rel=1e-5)
    assert share == pytest.approx((diff / (1e-5 + 1e-4 * np.abs(r64))).max(), rel=1e-5)
    nan = np.array([np.nan, 1.0], np.float32)
    assert _errors(nan, nan.copy(), 1e-4, 1e-5) == (0.0, 0.0)  # NaN against NaN: equal
    assert _errors(nan, np.ones(2, np.float32), 1e-4, 1e-5) == (np.inf, np.inf)
    assert _errors(np.arange(3), np.arange(3), 1e-4, 1e-5) == (0.0, 0.0)  # integers
    # compared a chunk at a time: a NaN in the last chunk counts, the largest error anywhere
    big = np.ones(CHUNK + 10, np.float32)
    bad = big.copy()
    bad[-1] = np.nan
    assert _errors(bad, big, 1e-4, 1e-5) == (np.inf, np.inf)
    bad[-1], bad[3] = 1.5, 3.0
    assert _errors(bad, big, 1e-4, 1e-5) == pytest.approx((2 / (1 + 1e-5), 2 / (1e-5 + 1e-4)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_big_values_are_compared_by_torch_with_numpys_numbers(dtype, monkeypatch):
    """From TORCH_MIN elements on, torch's kernels compare a strided value (when torch is
    loaded): the same numbers as numpy's chunks within float32 rounding, strided and read-only
    values included, NaN still judged in float64; a contiguous one is numpy's (faster)."""
    pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    ref = rng.standard_normal((3, 256, 97)).astype(dtype)
    ref[0, 0, :5] = 0.0  # zeros: the atol term decides
    got = ref + rng.standard_normal(ref.shape).astype(dtype) * 1e-4
    assert ref.size >= TORCH_MIN
    cases = [
        (got, ref, 1e-4, 1e-5),
        (got.transpose(2, 0, 1), ref.transpose(2, 0, 1), 1e-4, 1e-5),  # strided: no copy
        (got[:, ::2], ref[:, ::2], 1e-3, 0.0),  # no atol: no zero divisor
    ]
    frozen = got.copy()
    frozen.flags.writeable = False
    cases.append((frozen, ref, 1e-4, 1e-5))
    by_torch = [_errors(*c) for c in cases]
    with monkeypatch.context() as m:
        m.setattr(layer_errors, "_torch_errors", lambda *a: None)  # numpy's chunks
        by_numpy = [_errors(*c) for c in cases]
    for (rel_t, share_t), (rel_n, share_n) in zip(by_torch, by_numpy, strict=True):
        assert rel_t == pytest.approx(rel_n, rel=1e-6) and share_t == pytest.approx(
            share_n, rel=1e-6
        )
        assert rel_t > 0 and share_t > 0
    assert layer_errors._torch_errors(*cases[1]) is not None  # torch really compared them
    with monkeypatch.context() as m:  # contiguous values: numpy's chunks, torch not asked
        m.setattr(layer_errors, "_torch_errors", lambda *a: pytest.fail("torch asked"))
        assert _errors(*cases[0]) == by_numpy[0] and _errors(*cases[3]) == by_numpy[3]
    bad = got.copy()
    bad[2, 255, 96] = np.nan
    assert layer_errors._torch_errors(bad, ref, 1e-4, 1e-5) is None
    assert _errors(bad, ref, 1e-4, 1e-5) == (np.inf, np.inf)  # NaN: in float64, as before
    flipped = got[::-1]  # negative strides: torch cannot take them, numpy compares
    assert layer_errors._torch_errors(flipped, ref[::-1], 1e-4, 1e-5) is None
    assert _errors(flipped, ref[::-1], 1e-4, 1e-5) == pytest.approx(by_numpy[0], rel=1e-6)


# ----- the parameter map: where bloat starts -----------------------------------------------------


def test_the_param_map_shows_where_the_broadcast_replica_bloats():
    trace = explorer.explore(
        linear_on_4d_input(), pipeline="replica-linear-broadcast,fold-constant"
    )
    m = trace.param_map()
    assert isinstance(m, ParamMap)
    # the weights have no provenance: they are in the layer of the linear reading them
    assert m.layers == ["fc"] and m.steps == [0, 1, 2]
    weight, bias = 32 * 16 * 4, 32 * 4
    assert list(m.nbytes[:, 0]) == [weight + bias, weight + bias, 8 * weight + bias]
    assert list(m.grew[:, 0]) == [False, False, True]
    assert m.first_step == 2 and m.first_layer == "fc"
    # the cell selects the layer's largest weight: the folded copies the check names
    bloat = trace.check().first_failure
    assert bloat.kind == "param-bloat" and bloat.step.index == m.first_step
    assert m.nodes[2][0] == "$" + bloat.details["growth"][0][0]
    assert m.nodes[0][0] == "$fc.weight"
    assert "weights first grew at #2 fold-constant, in fc (to 16.5 kB)" in str(m)
    # in Jupyter: the heat map with its style, the first cell marked (not the raw repr)
    page = m._repr_html_()
    assert page.startswith("<style>") and "pl-map-first-cell" in page and ">fc<" in page


def test_the_param_map_agrees_with_param_bloat_on_convnext():
    model = models.convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32)
    trace = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    m = trace.param_map()
    bloat = trace.check().first_failure
    grown = {name.split(".weight")[0] for name, *_ in bloat.details["growth"]}
    row = m.row(bloat.step.index)
    assert {m.layers[j] for j in np.flatnonzero(m.grew[row])} == grown
    assert not m.grew[:row].any() and m.first_step == bloat.step.index
    assert m.first_layer == "features.1.0.block.3"  # the first pointwise linear


def test_no_growth_without_the_replica_and_thresholds():
    trace = explorer.explore(linear_on_4d_input(), pipeline="default")
    assert trace.check().ok
    m = trace.param_map()
    assert not m.grew.any() and m.first_step is None and "no layer's weights grew" in str(m)
    bloated = explorer.explore(
        linear_on_4d_input(), pipeline="replica-linear-broadcast,fold-constant"
    )
    assert bloated.param_map(min_bytes=10**6).first_step is None  # 14 kB is under a megabyte
    assert bloated.param_map(threshold=10.0).first_step is None  # 8x is under 11x
