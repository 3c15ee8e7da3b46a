"""Converters for the ops that real models left opaque (issue 41): ``multiply`` (mul's alias),
``addcmul``, ``einsum`` (transposes, reshapes and matmuls), batch norm in training form
(weight standardisation), ``im2col`` (nn.Unfold), ``col2im`` (nn.Fold: VOLO's outlooker) and
``Tensor.unfold`` (HaloNet's windows). Each is compared with torch eager through the
interpreter and the compiled backend, and explored: no opaque op, check ok."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from compiler import build
from compiler.frontend import from_torch
from compiler.frontend.torch_convert import ATEN_CONVERTERS
from compiler.ir.nodes import Call
from tests.compiler.frontend.test_torch_converters_real_models import Fn, check_torch

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)

g = torch.Generator().manual_seed(41)


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=g).to(dtype)


def randint(*shape):
    return torch.randint(-5, 6, shape, generator=g)


def _ops(module) -> list[str]:
    nodes = [n for fn in module.functions.values() for n in fn.iter_nodes()]
    return [n.op for n in nodes if isinstance(n, Call)]


def _targets(model, args) -> set[str]:
    return {str(n.target) for n in torch.export.export(model, args).graph.nodes}


# ----- multiply ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, args",
    [
        (lambda x, y: torch.multiply(x, y), (randn(3, 4), randn(4))),
        (lambda x, y: torch.multiply(x, y), (randint(2, 3), randint(2, 1))),
        (lambda x, y: torch.multiply(x, 2.5) * y, (randn(3), randn(2, 3))),
        (lambda x, y: torch.multiply(x, y), (randint(3), randn(3))),  # int * float -> float
        (lambda x: torch.ops.aten.multiply.Scalar(x, 3), (randint(4),)),
    ],
)
def test_multiply_matches_torch(fn, args):
    module = check_torch(fn, *args)
    assert "opaque" not in _ops(module) and "multiply" in _ops(module)


def test_multiply_targets_are_what_torch_export_records():
    targets = _targets(Fn(lambda x: torch.multiply(x, x) * 2), (randn(2),))
    assert "aten.multiply.Tensor" in targets
    assert {"aten.multiply.Tensor", "aten.multiply.Scalar"} <= set(ATEN_CONVERTERS)


# ----- addcmul -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn, args",
    [
        (lambda x, a, b: torch.addcmul(x, a, b), (randn(3, 4), randn(3, 4), randn(3, 4))),
        (lambda x, a, b: torch.addcmul(x, a, b, value=0.3), (randn(3, 4), randn(4), randn(3, 1))),
        (lambda x, a, b: torch.addcmul(x, a, b, value=-2), (randn(1), randn(2, 1, 5), randn(3, 1))),
        (
            lambda x, a, b: torch.addcmul(x, a, b, value=3),
            (randint(2, 3), randint(3), randint(2, 1)),
        ),
        (lambda x, a, b: torch.addcmul(x, a, b), (randint(2, 3), randn(3), randint(2, 3))),
    ],
)
def test_addcmul_matches_torch(fn, args):
    module = check_torch(fn, *args)
    assert "opaque" not in _ops(module)


# ----- einsum ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "equation, shapes",
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ij,jk", [(3, 4), (4, 2)]),  # implicit output
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),  # attention scores
        ("bhqk,bhkd->bqhd", [(1, 2, 3, 4), (1, 2, 4, 5)]),
        ("i,j->ij", [(3,), (4,)]),  # outer product
        ("i,i->", [(5,), (5,)]),  # dot
        ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),  # bilinear, three operands
        ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 2)]),  # ellipsis
        ("ij->ji", [(3, 4)]),
        ("ijk->ki", [(2, 3, 4)]),  # a sum and a transpose
        ("ii->i", [(4, 4)]),  # diagonal
        ("ii", [(3, 3)]),  # trace
        ("bii,bij->bj", [(2, 3, 3), (2, 3, 4)]),
    ],
)
def test_einsum_matches_torch(equation, shapes):
    args = [randn(*s) for s in shapes]
    module = check_torch(lambda *xs: torch.einsum(equation, *xs), *args, rtol=1e-5, atol=1e-5)
    ops = _ops(module)
    assert "opaque" not in ops
    if len(shapes) > 1 and "ii" not in equation and equation != "i,j->ij":
        assert "matmul" in ops


def test_einsum_of_integers_matches_torch():
    a, b = randint(2, 3, 4), randint(2, 4, 5)
    module = check_torch(lambda x, y: torch.einsum("bij,bjk->bik", x, y), a, b)
    assert "matmul" in _ops(module)


def test_einsum_broadcasting_a_size_one_axis_is_kept_opaque_and_matches_torch():
    """``...`` axes of size 1 against longer ones: the check refuses, torch runs the op."""
    a, b = randn(1, 3, 4), randn(2, 4, 5)
    module = check_torch(lambda x, y: torch.einsum("...ij,...jk->...ik", x, y), a, b)
    assert "opaque" in _ops(module)


@pytest.mark.parametrize(
    "equation", ["ij,jk->iq", "ij,jk->ii", "ij,jk->ik->x", "ij,jk,kl->il", "ijk,jk->ik"]
)
def test_an_einsum_torch_refuses_stays_opaque_and_fails_with_torchs_reason(equation):
    """A crafted program (a .pt2 from someone else) can name any equation: one the converter
    cannot read is left to torch, whose refusal is the run's one clear error, never a
    ValueError from inside the converter."""
    import explorer

    class Mul(nn.Module):
        def forward(self, a, b):
            return torch.einsum("ij,jk->ik", a, b)

    a, b = randn(2, 3), randn(3, 4)
    program = torch.export.export(Mul(), (a, b))
    for node in program.graph.nodes:
        if node.target is torch.ops.aten.einsum.default:
            node.args = (equation, *node.args[1:])
    trace = explorer.explore(program, (a, b))
    assert "opaque" in _ops(trace[1].module)
    report = trace.check((a, b), progress=False)
    (finding,) = report.findings
    assert finding.kind == "run-failed" and "torch aten.einsum.default failed" in finding.message


# ----- batch norm with the batch's statistics -----------------------------------------------------


class WSConv(nn.Conv2d):
    """A convolution with weight standardisation, as timm's StdConv2d writes it."""

    def forward(self, x):
        w = F.batch_norm(
            self.weight.reshape(1, self.out_channels, -1),
            None,
            None,
            training=True,
            momentum=0.0,
            eps=1e-5,
        ).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias, self.stride, self.padding)


def test_weight_standardised_conv_matches_torch():
    model = WSConv(3, 4, 3, padding=1)
    x = randn(2, 3, 8, 8)
    assert "aten.batch_norm.default" in _targets(model.eval(), (x,))
    module = check_torch(model, x, rtol=1e-4, atol=1e-4)
    ops = _ops(module)
    assert "opaque" not in ops and "conv2d" in ops


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (2, 3, 4, 4), (1, 2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_training_batch_norm_matches_torch(shape, affine):
    c = shape[1]
    w, b = (randn(c), randn(c)) if affine else (None, None)
    x = randn(*shape) * 3 + 1

    def fn(x):
        return F.batch_norm(x, None, None, w, b, training=True, eps=1e-3)

    module = check_torch(fn, x, rtol=1e-4, atol=1e-5)
    assert "opaque" not in _ops(module)


def test_batch_norm_without_running_stats_matches_torch():
    """``BatchNorm2d(track_running_stats=False)``: torch uses the batch's statistics in eval."""
    model = nn.BatchNorm2d(3, track_running_stats=False)
    with torch.no_grad():
        model.weight.copy_(randn(3))
        model.bias.copy_(randn(3))
    module = check_torch(model, randn(2, 3, 4, 4), rtol=1e-4, atol=1e-5)
    assert "opaque" not in _ops(module)


# ----- im2col (nn.Unfold) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, shape",
    [
        ({"kernel_size": 2}, (1, 3, 6, 6)),
        ({"kernel_size": (2, 3), "stride": (2, 1)}, (2, 2, 5, 7)),
        ({"kernel_size": 3, "padding": 1, "dilation": 2, "stride": 2}, (1, 2, 7, 6)),
        ({"kernel_size": 3, "padding": (0, 2)}, (3, 4, 5)),  # unbatched
        ({"kernel_size": 1}, (1, 4, 3, 3)),
    ],
)
def test_unfold_matches_torch(kwargs, shape):
    model = nn.Unfold(**kwargs)
    x = randn(*shape)
    assert "aten.im2col.default" in _targets(model, (x,))
    module = check_torch(model, x)
    assert "opaque" not in _ops(module)


def test_unfold_of_float64_matches_torch():
    """(torch has no integer im2col: "im2col_out_cpu" not implemented for 'Int')"""
    check_torch(nn.Unfold(2, stride=2), randn(1, 2, 4, 4, dtype=torch.float64))


# ----- col2im (nn.Fold) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, out, shape",
    [
        ({"kernel_size": 3, "padding": 1, "stride": 2}, (6, 6), (2, 2 * 9, 9)),  # VOLO's
        ({"kernel_size": 3, "padding": 1}, (4, 5), (1, 3 * 9, 20)),  # overlapping windows
        ({"kernel_size": 2, "stride": 3}, (7, 5), (1, 4 * 4, 2 * 2)),  # gaps between windows
        ({"kernel_size": (2, 3), "dilation": (2, 1), "stride": (1, 2)}, (5, 6), (2, 12, 6)),
        ({"kernel_size": 3, "padding": (2, 0), "stride": 2}, (5, 7), (9 * 2, 4 * 3)),  # unbatched
        ({"kernel_size": 1}, (3, 3), (1, 4, 9)),
        ({"kernel_size": 2, "stride": 2}, (5, 5), (1, 4, 4)),  # the last row and column: zeros
    ],
)
def test_fold_matches_torch(kwargs, out, shape):
    model = nn.Fold(out, **kwargs)
    x = randn(*shape)
    assert "aten.col2im.default" in _targets(model, (x,))
    module = check_torch(model, x)
    assert "opaque" not in _ops(module)


def test_fold_adds_each_pixels_windows_in_torchs_order():
    """Overlapping windows of values of very different sizes: float32 sums that depend on the
    order, each the one torch's col2im computes (bit for bit in the interpreter)."""
    x = randn(1, 2 * 9, 16) * torch.logspace(-6, 6, 16)
    model = nn.Fold((4, 4), kernel_size=3, padding=1)
    (got,) = from_torch_run(model, x)
    np.testing.assert_array_equal(got, model(x).numpy())


def test_fold_of_float64_and_a_dynamic_batch_matches_torch():
    n = torch.export.Dim("n", min=1)
    model = nn.Fold((5, 4), kernel_size=2, stride=1)
    x = randn(2, 3 * 4, 12, dtype=torch.float64)
    module = check_torch(model, x, dynamic_shapes=({0: n},))
    other = randn(3, 3 * 4, 12, dtype=torch.float64)
    (got,) = build(module)(other.numpy())
    np.testing.assert_allclose(got, model(other).numpy(), rtol=1e-12)


# ----- Tensor.unfold -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dim, size, step, shape",
    [
        (2, 3, 2, (1, 2, 7, 4)),
        (-1, 2, 1, (3, 5)),  # the last axis: no transpose
        (0, 4, 4, (8, 3)),  # tiles
        (1, 2, 3, (2, 9, 2)),  # gaps between windows
        (0, 5, 1, (5,)),  # one window of the whole axis
    ],
)
def test_tensor_unfold_matches_torch(dim, size, step, shape):
    x = randn(*shape)
    fn = Fn(lambda t: t.unfold(dim, size, step))
    assert "aten.unfold.default" in _targets(fn, (x,))
    module = check_torch(fn, x)
    assert "opaque" not in _ops(module) and "take" in _ops(module)


def test_tensor_unfold_of_a_long_axis_puts_no_index_table_in_the_module():
    """501 windows of 500: the (windows, size) index is computed when the module runs."""
    from compiler.ir.nodes import Constant

    module = from_torch(Fn(lambda t: t.unfold(0, 500, 1)), (randn(1000),))
    nodes = [n for fn in module.functions.values() for n in fn.iter_nodes()]
    assert "opaque" not in _ops(module)
    assert max((n.data.nbytes for n in nodes if isinstance(n, Constant)), default=0) < 1024


def test_tensor_unfold_of_integers_matches_torch():
    check_torch(lambda t: t.unfold(1, 3, 1) * 2, randint(2, 6))


def test_halo_windows_match_torch():
    """HaloNet's overlapping key-value windows: an unfold of each spatial axis, then one
    reshape of the windows."""

    def halo(kv):  # (B, C, 12, 12): blocks of 4 with a halo of 2
        win = kv.unfold(2, 8, 4).unfold(3, 8, 4)  # (B, C, 2, 2, 8, 8)
        return win.reshape(2, 3, 4, 64).permute(0, 2, 3, 1)

    module = check_torch(halo, randn(2, 3, 12, 12))
    assert "opaque" not in _ops(module)


def test_tensor_unfold_along_a_symbolic_axis_is_kept_opaque_and_matches_torch():
    n = torch.export.Dim("n", min=4)
    module = check_torch(
        lambda t: t.unfold(0, 3, 1), randn(6, 2), compiled=False, dynamic_shapes=(({0: n},),)
    )
    assert "opaque" in _ops(module)


@pytest.mark.parametrize(
    "target, args",
    [
        ("aten.unfold.default", (0, 9, 1)),  # a window longer than the axis
        ("aten.unfold.default", (0, 2, 0)),  # no step
        ("aten.col2im.default", ([5, 5], [3, 3], [1, 1], [0, 0], [1, 1])),  # 9 windows, not 16
    ],
)
def test_a_window_op_torch_refuses_stays_opaque_and_fails_with_torchs_reason(target, args):
    """A crafted program's unfold or col2im whose arguments do not fit its input is left to
    torch, whose refusal is the run's one clear error (not a FrontendError at import)."""
    import explorer

    class Windows(nn.Module):
        def forward(self, x, cols):
            return x.unfold(0, 2, 1), F.fold(cols, (6, 6), 3)

    x, cols = randn(4, 3), randn(1, 9, 16)
    program = torch.export.export(Windows(), (x, cols))
    for node in program.graph.nodes:
        if str(node.target) == target:
            node.args = (node.args[0], *args)
    trace = explorer.explore(program, (x, cols))
    assert "opaque" in _ops(trace[1].module)
    report = trace.check((x, cols), progress=False)
    (finding,) = report.findings
    assert finding.kind == "run-failed" and f"torch {target} failed" in finding.message


# ----- explored: nothing opaque, check ok ---------------------------------------------------------


class Block(nn.Module):
    """Each op of this file in one model."""

    def __init__(self):
        super().__init__()
        self.conv = WSConv(3, 4, 3, padding=1)
        self.unfold = nn.Unfold(2, stride=2)

    def forward(self, x):
        y = self.conv(x)  # (1, 4, 6, 6)
        cols = self.unfold(y)  # (1, 16, 9)
        z = torch.einsum("bcl,bdl->bcd", cols, cols)
        z = torch.addcmul(z, z, z, value=0.01)
        return torch.multiply(z, 0.5)


def test_the_ops_are_not_opaque_in_an_explored_trace_and_it_checks_ok():
    import explorer
    from explorer.summary import opaque_ops

    model, x = Block().eval(), randn(1, 3, 6, 6)
    trace = explorer.explore(model, (x,))
    assert trace.failure is None
    assert opaque_ops(trace) == []
    report = trace.check()
    assert report.ok, report
    eager = model(x).detach().numpy()
    (got,) = from_torch_run(model, x)
    np.testing.assert_allclose(got, eager, rtol=1e-4, atol=1e-4)


class Outlooker(nn.Module):
    """VOLO's outlook attention: values unfolded into 3x3 windows, weighted per window, then
    folded back (overlapping windows added)."""

    def __init__(self, dim=8, stride=2):
        super().__init__()
        self.v, self.attn = nn.Linear(dim, dim), nn.Linear(dim, 9 * 9)
        self.unfold = nn.Unfold(3, padding=1, stride=stride)
        self.pool, self.stride = nn.AvgPool2d(stride, stride, ceil_mode=True), stride

    def forward(self, x):  # (B, H, W, C)
        b, h, w, c = x.shape
        oh, ow = -(-h // self.stride), -(-w // self.stride)
        v = self.unfold(self.v(x).permute(0, 3, 1, 2)).reshape(b, c, 9, oh * ow)
        v = v.permute(0, 3, 2, 1)  # (B, N, 9, C)
        a = self.attn(self.pool(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1))
        a = a.reshape(b, oh * ow, 9, 9).softmax(dim=-1)
        y = (a @ v).permute(0, 3, 2, 1).reshape(b, c * 9, oh * ow)
        y = F.fold(y, (h, w), 3, padding=1, stride=self.stride)
        return y.permute(0, 2, 3, 1) + x.unfold(1, 1, 1).squeeze(-1)


def test_an_outlooker_is_not_opaque_in_an_explored_trace_and_it_checks_ok():
    import explorer

    model, x = Outlooker().eval(), randn(2, 6, 6, 8)
    trace = explorer.explore(model, (x,))
    assert trace.failure is None and trace.opaque_ops() == []
    report = trace.check()
    assert report.ok, report
    (got,) = from_torch_run(model, x)
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def from_torch_run(model, x):
    from compiler.interpret import run

    return run(from_torch(model, (x,)), x.numpy())
