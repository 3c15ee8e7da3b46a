"""Every item of ../shared/SEEDS.md end to end through the public API: the explorer must make
each real compiler bug obvious (using the replicas where the bug is not in our own passes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer
from compiler.frontend import UnsupportedOperatorError
from tests.compiler.passes.test_lazy_params import NESTED
from tests.compiler.passes.test_lift_transform_params import SEEDS_BEFORE


class LinearModel(torch.nn.Module):
    """One Linear(128, 512), as in the first SEEDS report."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.linear = torch.nn.Linear(128, 512)

    def forward(self, x):
        return self.linear(x)


# ----- 1. Linear layers that bloat the compiled model ------------------------------------


@pytest.mark.parametrize("shape, copies", [((2, 8, 128), 2), ((1, 56, 56, 128), 56)])
def test_bloat_names_the_step_the_constant_and_the_copies(shape, copies):
    x = torch.randn(*shape)
    trace = explorer.explore(LinearModel(), (x,), pipeline="replica-linear-broadcast,fold-constant")
    fold = trace["fold-constant"]
    weight_bytes = 512 * 128 * 4
    assert fold.param_bytes - trace.imported.param_bytes == (copies - 1) * weight_bytes
    messages = " ".join(fold.diff().params.messages())
    assert f"{copies} copies of `linear.weight`" in messages
    report = trace.check((x,))
    bloat = [f for f in report.findings if f.kind == "param-bloat"]
    assert bloat and bloat[0].step is fold
    assert "linear.weight" in bloat[0].message
    assert not [f for f in report.findings if f.kind == "diverged"]  # the values stay right


def test_bloat_torch_path_beside_the_onnx_path():
    x = torch.randn(1, 56, 56, 128)
    model = LinearModel()
    torch_trace = explorer.explore(model, (x,), pipeline="replica-linear-broadcast,fold-constant")
    import io

    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=17, dynamo=False)
    onnx_trace = explorer.explore(buf.getvalue(), pipeline="fold-constant")
    comparison = explorer.compare(torch_trace, onnx_trace)
    assert comparison.a.param_bytes[-1] > 40 * comparison.b.param_bytes[-1]
    assert comparison.first_divergence is not None


# ----- 2. Converting PyTorch models ------------------------------------------------------


def test_symbolic_shapes_and_provenance_from_torch():
    x = torch.randn(4, 128)
    batch = torch.export.Dim("batch", min=1)
    trace = explorer.explore(LinearModel(), (x,), dynamic_shapes={"x": {0: batch}})
    main = trace.imported.module.main
    assert str(main.params[0].ty) == "f32[batch, 128]"
    linear = next(b for b in main.bindings if getattr(b, "op", None) == "linear")
    assert linear.prov.module_path == "linear" and linear.prov.source_op == "aten.linear.default"
    assert trace[0].kind == "source" and linear.prov.source_node in trace[0].graph.nodes


def test_unsupported_operators_are_one_clear_error():
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.linalg.inv(x) + torch.fft.rfft(x).real.sum()

    with pytest.raises(UnsupportedOperatorError) as err:
        explorer.explore(Odd(), (torch.randn(3, 3),), strict=True)
    assert "linalg_inv" in str(err.value) and "fft_rfft" in str(err.value)


# ----- 3. A wrong shape after DynamicToStatic ---------------------------------------------


def pad_squeeze_onnx() -> tuple[bytes, torch.Tensor]:
    """bug 3's model (reflection pad with negative pads, then squeeze) as ONNX bytes,
    and an input (used by tests/explorer/reduce/test_reduce.py and bench/reduce.py too)."""
    import io

    class PadSqueeze(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pad = torch.nn.ReflectionPad3d(padding=(0, 0, -43, 0, 0, -46))

        def forward(self, x):
            return self.pad(x).squeeze(1)

    buf = io.BytesIO()
    x = torch.randn(13, 1, 47, 44, 1)
    torch.onnx.export(PadSqueeze(), (x,), buf, opset_version=17, dynamo=False)
    return buf.getvalue(), x


def test_dynamic_to_static_folds_the_if_to_13_1_1_1():
    data, x = pad_squeeze_onnx()
    trace = explorer.explore(data, pipeline="dynamic-to-static")
    assert trace.imported.module.main.ret_type.shape is None  # the If's branches: rank 4 and 5
    assert trace.final.module.main.ret_type.shape == (13, 1, 1, 1)
    assert trace.check((x,)).first_failure is None


def test_the_shape_check_catches_the_replica_at_its_node_and_step():
    data, x = pad_squeeze_onnx()
    trace = explorer.explore(data, pipeline="replica-dynamic-to-static-squeeze")
    report = trace.check((x,))
    first = report.first_failure
    assert first is not None and first.kind == "shape-mismatch"
    assert first.step is trace["replica-dynamic-to-static-squeeze"]
    assert first.nodes and first.nodes[0].op == "squeeze"
    assert "13, 13, 1, 1" in first.message


def test_relay_if_converter_replica_puts_13_in_dim_1_found_at_the_frontend_step():
    """Upstream's account (apache/tvm#17383): Relay's ONNX If converter broadcast the rank-4
    squeeze like the rank-5 branch; DynamicToStatic only made the 13 in dim 1 visible."""
    data, x = pad_squeeze_onnx()
    trace = explorer.explore(data, pipeline="replica-relay-onnx-if,dynamic-to-static")
    assert trace.final.module.main.ret_type.shape == (13, 13, 1, 1, 1)
    first = trace.check((x,)).first_failure
    assert first is not None and first.kind == "diverged"
    assert first.step is trace["replica-relay-onnx-if"]  # the frontend's step, not the fold
    assert "[13, 13, 1, 1, 1]" in first.message and "[13, 1, 1, 1]" in first.message


# ----- 4. LiftTransformParams changes the function signature ------------------------------


def test_lift_transform_params_checks_clean_and_says_it_composed():
    trace = explorer.explore(SEEDS_BEFORE, pipeline="lift-transform-params")
    a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    report = trace.check((a, b))
    assert report.first_failure is None
    info = [f for f in report.findings if f.kind == "signature-changed"]
    assert info and "main_transform_params" in info[0].message
    d = trace["lift-transform-params"].diff()
    assert [s.name for s in d.functions_added] == ["main_transform_params"]


# ----- 5. LazyTransformParams and tuples returned by a nested function --------------------


def test_the_replica_is_a_recorded_failure_with_the_binding_named():
    trace = explorer.explore(NESTED, pipeline="replica-lazy-transform-params")
    fail = trace.failure
    assert fail is not None and isinstance(fail.error, AssertionError)
    assert fail.failed_function == "main_transform_params"
    line = fail.text.splitlines()[fail.failed_line]
    assert "call @transform" in line
    report = trace.check()
    assert report.first_failure.kind == "pass-failed"


def test_our_lazy_transform_params_handles_the_nested_tuple():
    trace = explorer.explore(NESTED, pipeline="lazy-transform-params")
    assert trace.failure is None and trace.final.changed
    assert "set_item" in trace.final.text
