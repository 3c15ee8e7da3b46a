"""Converters for the ops that stopped real models (issue 29): sort / argsort, histc /
bincount, meshgrid, bicubic resize, weight_norm, in-place updates of views and pooling with
``ceil_mode``. Each is compared with torch eager through the interpreter and the compiled
backend, and (where torch.onnx.export takes the op) through the ONNX path against
onnxruntime."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn import functional as F

from compiler import build
from compiler.frontend import from_onnx, from_torch
from compiler.interpret import run
from compiler.ir import verify
from compiler.ir.nodes import IRError
from compiler.ir.symbolic import ANY
from tests.compiler.frontend.onnx_helpers import ort_run

pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"
)


class Fn(nn.Module):
    """A module that calls ``fn(*inputs)``."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def _flat(out) -> list[np.ndarray]:
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out.detach().numpy()]


def _assert_same(got, want, label, rtol, atol):
    assert len(got) == len(want), label
    for g, w in zip(got, want, strict=True):
        g = np.asarray(g)
        assert g.shape == w.shape, f"{label}: shape {g.shape} vs torch {w.shape}"
        assert g.dtype == w.dtype, f"{label}: dtype {g.dtype} vs torch {w.dtype}"
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g, w, err_msg=label)
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=label)


def check_torch(fn, *args, compiled=True, rtol=1e-5, atol=1e-6, dynamic_shapes=None):
    """Import ``fn`` (a module or a function of the inputs); the interpreter (and the compiled
    backend) give torch eager's results. Returns the imported module."""
    model = fn if isinstance(fn, nn.Module) else Fn(fn)
    model.eval()
    with torch.no_grad():
        want = _flat(model(*args))
    module = from_torch(model, args, dynamic_shapes=dynamic_shapes)
    verify(module)
    inputs = [a.numpy() for a in args]
    _assert_same(run(module, *inputs), want, "interpreter", rtol, atol)
    if compiled:
        _assert_same(build(module)(*inputs), want, "compiled", rtol, atol)
    return module


def onnx_bytes(fn, *args, dynamo=False, opset=17) -> bytes:
    """``fn`` exported by torch.onnx.export (TorchScript exporter unless ``dynamo``)."""
    model = fn if isinstance(fn, nn.Module) else Fn(fn)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            program = torch.onnx.export(model, args, dynamo=True, verbose=False)
            return program.model_proto.SerializeToString()
        f = io.BytesIO()
        torch.onnx.export(model, args, f, opset_version=opset, dynamo=False)
        return f.getvalue()


def check_onnx(fn, *args, dynamo=False, compiled=True, rtol=1e-5, atol=1e-6, opset=17):
    """Export ``fn`` to ONNX, import it: the interpreter (and the compiled backend) give
    onnxruntime's results, and those are torch eager's."""
    import onnx

    data = onnx_bytes(fn, *args, dynamo=dynamo, opset=opset)
    inputs = [a.numpy() for a in args]
    want = [np.asarray(v) for v in ort_run(onnx.load_from_string(data), *inputs)]
    model = fn if isinstance(fn, nn.Module) else Fn(fn)
    with torch.no_grad():
        eager = _flat(model(*args))
    _assert_same(want, eager, "onnxruntime vs torch", rtol, atol)
    module = from_onnx(data)
    verify(module)
    _assert_same(run(module, *inputs), want, "interpreter (onnx)", rtol, atol)
    if compiled:
        _assert_same(build(module)(*inputs), want, "compiled (onnx)", rtol, atol)
    return module


def _ops(module) -> set[str]:
    from compiler.ir.nodes import Call

    return {b.op for b in module.main.bindings if isinstance(b, Call)}


# ----- sort / argsort -------------------------------------------------------------------------


def _ties(*shape, seed=0, nan=False, dtype=torch.float32):
    """Values with many ties (small integers), a few nans when asked."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if nan:
        x.view(-1)[:: max(1, x.numel() // 4)] = float("nan")
    return x


@pytest.mark.parametrize(
    "dim, descending, stable",
    [(-1, False, False), (1, True, False), (0, False, True), (-2, True, True)],
)
def test_sort_keeps_torch_stable_order_of_ties_and_nans(dim, descending, stable):
    x = _ties(4, 5, 6, nan=True)
    module = check_torch(lambda t: torch.sort(t, dim=dim, descending=descending, stable=stable), x)
    assert _ops(module) == {"topk"}


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.int32])
def test_argsort_of_other_dtypes(dtype):
    x = _ties(3, 7, dtype=dtype)
    check_torch(lambda t: (torch.argsort(t, dim=1), torch.argsort(t, dim=0, descending=True)), x)


def test_sort_without_stable_on_a_long_axis_is_torchs_stable_order():
    """torch's default CPU sort is std::sort beyond 16 elements: ties in any order. The
    values are torch's; the indices are those of ``stable=True`` (a valid answer)."""
    x = _ties(2, 40, seed=7)
    module = from_torch(Fn(lambda t: torch.sort(t, dim=1, descending=True)), (x,))
    values, indices = run(module, x.numpy())
    want = torch.sort(x, dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(values, want.values.numpy())
    np.testing.assert_array_equal(indices, want.indices.numpy())


def test_sort_of_a_0d_tensor():
    check_torch(lambda t: torch.sort(t), torch.tensor(2.5), compiled=False)


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
    descending=st.booleans(),
    data=st.data(),
)
def test_sort_matches_torch_on_random_shapes(shape, descending, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = _ties(*shape, seed=data.draw(st.integers(0, 99)), nan=data.draw(st.booleans()))
    check_torch(lambda t: torch.sort(t, dim=dim, descending=descending), x, compiled=False)


def test_sort_along_a_symbolic_dim():
    """A topk of the whole axis (k=-1) whatever its size: one build runs at other sizes."""
    import onnxruntime as ort

    from compiler.frontend import to_onnx

    n = torch.export.Dim("n", min=2)
    fn = Fn(lambda t: torch.sort(t, dim=0, descending=True))
    module = check_torch(fn, _ties(5, 3, nan=True), dynamic_shapes=(({0: n},),))
    exe = build(module)
    sess = ort.InferenceSession(to_onnx(module).SerializeToString())
    for rows in (2, 9):
        x = _ties(rows, 3, seed=rows, nan=True)
        want = [v.numpy() for v in fn(x)]
        for got in (run(module, x.numpy()), exe(x.numpy())):
            _assert_same(got, want, f"{rows} rows", 0, 0)
        got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("dynamo", [False, True])
def test_sort_through_onnx(dynamo):
    x = _ties(3, 8, seed=3)
    check_onnx(lambda t: torch.sort(t, dim=1, descending=True), x, dynamo=dynamo)


# ----- pooling with ceil_mode ------------------------------------------------------------------


POOLS = {
    # a kernel larger than the input: torch gives one window (1x1)
    "avg_kernel_over_input": (nn.AvgPool2d(3, ceil_mode=True), (1, 2, 2, 2)),
    "max_kernel_over_input": (nn.MaxPool2d(3, ceil_mode=True), (1, 2, 2, 2)),
    # the last window starts in the end padding: torch drops it
    "avg_last_window_in_padding": (nn.AvgPool2d(2, 2, padding=1, ceil_mode=True), (1, 3, 4, 5)),
    "avg_ceil_exclude_pad": (
        nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False),
        (2, 3, 6, 7),
    ),
    "avg_ceil_include_pad": (nn.AvgPool2d((3, 2), (2, 3), padding=1, ceil_mode=True), (1, 2, 6, 7)),
    "avg_divisor_override": (
        nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, divisor_override=5),
        (1, 2, 6, 7),
    ),
    "max_ceil_dilated": (nn.MaxPool2d(3, 2, padding=1, dilation=2, ceil_mode=True), (1, 2, 9, 8)),
    "avg1d_ceil": (nn.AvgPool1d(3, 2, padding=1, ceil_mode=True), (2, 3, 8)),
    "avg1d_unbatched": (nn.AvgPool1d(4, ceil_mode=True, count_include_pad=False), (3, 6)),
    "max1d_ceil": (nn.MaxPool1d(3, 2, ceil_mode=True), (2, 3, 8)),
    "avg3d_ceil": (
        nn.AvgPool3d(3, 2, padding=1, ceil_mode=True, count_include_pad=False),
        (1, 2, 4, 5, 6),
    ),
    "avg3d_divisor": (nn.AvgPool3d((2, 3, 2), ceil_mode=True, divisor_override=3), (1, 2, 3, 5, 5)),
    "max3d_ceil": (nn.MaxPool3d(2, ceil_mode=True), (1, 2, 3, 5, 4)),
    "max3d_unbatched": (nn.MaxPool3d(3, 2, padding=1), (2, 4, 5, 6)),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_pooling_matches_torch(name):
    model, shape = POOLS[name]
    check_torch(model, torch.randn(*shape, generator=torch.Generator().manual_seed(1)))


def test_kernel_over_the_input_gives_one_window_of_the_padded_input():
    x = torch.arange(8.0).reshape(1, 2, 2, 2)
    module = check_torch(nn.AvgPool2d(3, ceil_mode=True), x)
    assert module.main.output.ty.shape == (1, 2, 1, 1)
    # torch divides by the window clipped to the input (4), not the kernel (9)
    np.testing.assert_allclose(run(module, x.numpy())[0].reshape(-1), [1.5, 5.5])


@pytest.mark.parametrize("ceil_mode, kernel", [(False, 3), (True, 4)])
def test_pooling_without_any_window_is_a_type_error(ceil_mode, kernel):
    from compiler.ir.nodes import Var, call
    from compiler.ir.types import DType, TensorType

    x = Var("x", TensorType((1, 1, 2, 2), DType.float32))
    with pytest.raises(IRError, match=f"smaller than the kernel {kernel}"):
        call("avg_pool2d", x, pool_size=[kernel, kernel], strides=[1, 1], ceil_mode=ceil_mode)


@pytest.mark.parametrize("dynamo", [False, True])
@pytest.mark.parametrize(
    "name", ["avg_kernel_over_input", "max_kernel_over_input", "avg_last_window_in_padding",
             "avg_ceil_exclude_pad", "avg1d_ceil", "avg3d_ceil"],
)  # fmt: skip
def test_pooling_through_onnx(name, dynamo):
    model, shape = POOLS[name]
    check_onnx(model, torch.randn(*shape, generator=torch.Generator().manual_seed(2)),
               dynamo=dynamo)  # fmt: skip


@pytest.mark.parametrize("dynamic", [False, True])
def test_explore_and_check_an_onnx_pool_larger_than_its_input(dynamic):
    """EfficientNet's pooler (AvgPool2d(hidden_dim, ceil_mode=True) on a small map): the
    import, dynamic-to-static and the check all take the one window torch gives."""
    import explorer

    model = nn.Sequential(nn.Conv2d(2, 2, 1), nn.AvgPool2d(3, ceil_mode=True))
    x = torch.randn(1, 2, 2, 2)
    f = io.BytesIO()
    axes = {"x": {0: "n", 2: "h", 3: "w"}} if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), f, dynamo=False, input_names=["x"], dynamic_axes=axes)
    trace = explorer.explore(f.getvalue(), (x.numpy(),))
    assert trace.failure is None, trace.failure
    report = trace.check((x.numpy(),))
    assert not report.findings, report.findings


# ----- weight_norm, meshgrid --------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, None])
def test_weight_norm_matches_torch(dim):
    conv = nn.Conv1d(3, 4, 3)
    if dim is None or dim < -1:  # (the old API: dim=None is the norm of the whole weight)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = nn.utils.weight_norm(conv, dim=dim)
    else:
        model = nn.utils.parametrizations.weight_norm(conv, dim=dim)
    module = check_torch(model, torch.randn(2, 3, 8))
    assert "sqrt" in _ops(module)


def test_weight_norm_of_a_hubert_style_positional_conv():
    """A grouped, padded convolution whose weight is normalised over dim 2 (wav2vec2,
    HuBERT: the convolutional position embedding)."""
    conv = nn.Conv1d(8, 8, kernel_size=5, padding=2, groups=2)
    model = nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)
    check_torch(model, torch.randn(1, 8, 12), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_torch(indexing):
    def fn(a, b, c):
        grids = torch.meshgrid(a, b, c, indexing=indexing)
        return (*grids, torch.stack(torch.meshgrid(a, b, indexing=indexing)))

    check_torch(fn, torch.arange(3.0), torch.randn(4), torch.tensor([7.0, 8.0]))


def test_meshgrid_of_0d_and_single_inputs():
    check_torch(lambda a, b: torch.meshgrid(a, b, indexing="xy"), torch.tensor(2),
                torch.arange(3))  # fmt: skip
    check_torch(lambda a: torch.meshgrid(a, indexing="ij"), torch.arange(4))


def test_meshgrid_of_a_symbolic_length():
    n = torch.export.Dim("n", min=3)
    module = check_torch(
        lambda a, b: torch.meshgrid(a, b, indexing="ij"),
        torch.arange(5.0),
        torch.arange(3.0),
        dynamic_shapes=(({0: n}, None),),
    )
    out = run(module, np.arange(7.0, dtype=np.float32), np.arange(3.0, dtype=np.float32))
    assert out[0].shape == (7, 3)
    np.testing.assert_array_equal(out[0][:, 1], np.arange(7.0))


@pytest.mark.parametrize("dynamo", [False, True])
def test_meshgrid_and_weight_norm_through_onnx(dynamo):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 4, 3), dim=0)

        def forward(self, x, a):
            gi, gj = torch.meshgrid(a, a[:3], indexing="xy")
            return self.conv(x), gi * 2 + gj

    with torch.no_grad():
        check_onnx(Model(), torch.randn(1, 3, 8), torch.arange(5.0), dynamo=dynamo, atol=1e-5)


# ----- in-place updates of views (functionalised) -----------------------------------------------


def _beit_relative_position_index(window_size):
    """transformers' BeitRelativePositionBias.generate_relative_position_index (5.x), as
    BEiT / Data2VecVision compute it in forward."""
    num_relative_distance = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
    window_area = window_size[0] * window_size[1]
    grid = torch.meshgrid(torch.arange(window_size[0]), torch.arange(window_size[1]), indexing="ij")
    coords_flatten = torch.flatten(torch.stack(grid), start_dim=1)
    relative_coords = (coords_flatten[:, :, None] - coords_flatten[:, None, :]).permute(1, 2, 0)
    relative_coords = relative_coords.contiguous()
    relative_coords[:, :, 0] += window_size[0] - 1
    relative_coords[:, :, 1] += window_size[1] - 1
    relative_coords[:, :, 0] *= 2 * window_size[1] - 1
    index = torch.zeros(size=(window_area + 1,) * 2, dtype=relative_coords.dtype)
    index[1:, 1:] = relative_coords.sum(-1)
    index[0, 0:] = num_relative_distance - 3
    index[0:, 0] = num_relative_distance - 2
    index[0, 0] = num_relative_distance - 1
    return index


class RelativeBias(nn.Module):
    def __init__(self, window=(3, 2), heads=2):
        super().__init__()
        self.window = window
        n = (2 * window[0] - 1) * (2 * window[1] - 1) + 3
        self.table = nn.Parameter(torch.randn(n, heads))

    def forward(self, scores):
        index = _beit_relative_position_index(self.window)
        area = self.window[0] * self.window[1] + 1
        bias = self.table[index.view(-1)].view(area, area, -1).permute(2, 0, 1)
        return scores + bias


def test_beit_relative_position_index_is_functionalised():
    model = RelativeBias()
    module = check_torch(model, torch.randn(1, 2, 7, 7))
    assert {"where"} <= _ops(module)


VIEW_WRITES = {
    "add_into_select": lambda x: _then(x.clone(), lambda t: t[:, 0].add_(1.0)),
    "relu_into_select": lambda x: _then(x * 1, lambda t: t[:, 0].relu_()),
    "mul_into_view": lambda x: _then(x.clone(), lambda t: t.view(-1).mul_(2.0)),
    "copy_into_slice": lambda x: _then(x.clone(), lambda t: t[1:, ::2].copy_(x[:-1, :3] * 3)),
    "fill_into_narrow": lambda x: _then(x.clone(), lambda t: t.narrow(1, 1, 2).fill_(-1.0)),
    "setitem_neg": lambda x: _then(x.clone(), lambda t: t.__setitem__((-1, slice(-2, None)), 5)),
    "nested_views": lambda x: _then(x.clone(), lambda t: t[1:][:, 1].sub_(x[0, 0])),
    "earlier_view_sees_write": lambda x: _aliased(x),
    "index_put_into_view": lambda x: _then(
        x.clone(), lambda t: t[1].index_put_((torch.tensor([0, 2]),), torch.tensor(9.0))
    ),
}  # fmt: skip


def _then(t, write):
    write(t)
    return t


def _aliased(x):
    t = x * 1
    v = t[:, 1:]  # a view taken before the write through another view
    t[0].add_(10.0)
    return v + 0, t


@pytest.mark.parametrize("name", list(VIEW_WRITES))
def test_in_place_writes_into_views_match_torch(name):
    check_torch(VIEW_WRITES[name], torch.randn(4, 5, generator=torch.Generator().manual_seed(3)))


def test_in_place_write_into_a_view_of_a_symbolic_tensor():
    n = torch.export.Dim("n", min=3)
    fn = VIEW_WRITES["copy_into_slice"]
    module = check_torch(fn, torch.randn(4, 5), dynamic_shapes=(({0: n},),))
    x = torch.randn(7, 5)
    np.testing.assert_allclose(run(module, x.numpy())[0], fn(x).numpy(), rtol=1e-6)


def test_explore_and_check_a_model_writing_into_views():
    """The explorer shows, and checks per node against, the functionalised program."""
    import explorer

    x = torch.randn(1, 2, 7, 7)
    trace = explorer.explore(RelativeBias(), (x,))
    assert trace.failure is None
    report = trace.check((x,))
    assert not report.findings, [f.message for f in report.findings]


@pytest.mark.parametrize("dynamo", [False, True])
def test_view_writes_through_onnx(dynamo):
    check_onnx(RelativeBias(), torch.randn(1, 2, 7, 7), dynamo=dynamo)


# ----- bicubic (and antialiased) resizing --------------------------------------------------------


class Interpolate(nn.Module):
    def __init__(self, **options):
        super().__init__()
        self.options = options

    def forward(self, x):
        return F.interpolate(x, **self.options)


RESIZES = [
    {"size": (11, 13)},
    {"size": (4, 5)},
    {"size": (1, 1)},
    {"size": (15, 3)},
    {"scale_factor": 1.7},
    {"scale_factor": (0.5, 2.3)},
]


@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("options", RESIZES, ids=str)
def test_bicubic_matches_torch(options, align_corners, antialias):
    model = Interpolate(mode="bicubic", align_corners=align_corners, antialias=antialias,
                        **options)  # fmt: skip
    x = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(4))
    check_torch(model, x, compiled=options is RESIZES[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("align_corners", [False, True])
def test_antialiased_bilinear_matches_torch(align_corners):
    model = Interpolate(size=(3, 10), mode="bilinear", align_corners=align_corners,
                        antialias=True)  # fmt: skip
    check_torch(model, torch.randn(1, 2, 8, 6), rtol=1e-5, atol=1e-5)


def test_bicubic_of_float64_and_the_weights_sum_to_one():
    x = torch.randn(1, 1, 5, 6, dtype=torch.float64)
    module = check_torch(Interpolate(size=(9, 4), mode="bicubic"), x, rtol=1e-6, atol=1e-6)
    ones = np.ones((1, 1, 5, 6))
    np.testing.assert_allclose(run(module, ones)[0], np.ones((1, 1, 9, 4)), rtol=1e-12)


def test_beit_style_position_table_interpolation():
    """Position embeddings interpolated to the image size (ViT, DINOv2, BEiT)."""

    class PosEmbed(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.randn(1, 16, 8))

        def forward(self, x):
            grid = self.table.reshape(1, 4, 4, 8).permute(0, 3, 1, 2)
            grid = F.interpolate(grid, scale_factor=(1.5, 1.5), mode="bicubic",
                                 align_corners=False)  # fmt: skip
            return x + grid.permute(0, 2, 3, 1).reshape(1, -1, 8)

    check_torch(PosEmbed(), torch.randn(1, 36, 8), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dynamo", [False, True])
@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_through_onnx(align_corners, dynamo):
    model = Interpolate(size=(10, 5), mode="bicubic", align_corners=align_corners)
    check_onnx(model, torch.randn(1, 2, 6, 7), dynamo=dynamo, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_antialiased_resize_through_onnx(mode):
    """The dynamo exporter writes Resize with antialias=1 (the TorchScript one refuses it);
    a constant scale gives the taps a static count, so the compiled backend takes it."""
    model = Interpolate(size=(3, 10), mode=mode, antialias=True)
    check_onnx(model, torch.randn(1, 2, 8, 6), dynamo=True, rtol=1e-5, atol=1e-5)


# ----- histc / bincount ---------------------------------------------------------------------------


def _edges(dtype=torch.float32):
    """Values on and around bin edges, outside the range, and a nan."""
    x = torch.cat([torch.linspace(-1.2, 1.2, 241), torch.arange(-100, 101) / 100,
                   torch.arange(0, 21) * 0.03, torch.tensor([float("nan")])])  # fmt: skip
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bins, lo, hi", [(20, -1, 1), (7, -0.3, 0.9), (13, 0.1, 0.7), (3, 0, 0)])
def test_histc_matches_torch_on_bin_edges(bins, lo, hi, dtype):
    """torch's float arithmetic bins every edge value alike, in the compiled backend too."""
    x = _edges(dtype)
    if lo == hi:  # the data's range: no nan (torch refuses a nan range)
        x = x[:-1]
    check_torch(lambda t: torch.histc(t, bins=bins, min=lo, max=hi), x, atol=0)


def test_histc_of_one_value_widens_the_range():
    check_torch(lambda t: torch.histc(t, bins=4), torch.full((2, 3), 3.0), atol=0)


def test_histc_of_moe_expert_ids():
    """transformers' MoE load balancing: tokens per expert from top-k expert ids."""

    def fn(logits):
        _, experts = torch.topk(logits.softmax(-1), 2, dim=-1)
        return torch.histc(experts.float(), bins=4, min=0, max=3)

    check_torch(fn, torch.randn(6, 4), atol=0)


@settings(max_examples=25, deadline=None)
@given(
    bins=st.integers(1, 12),
    lo=st.floats(-3, 3, width=32),
    width=st.floats(0.125, 4, width=32),
    seed=st.integers(0, 99),
)
def test_histc_matches_torch_on_random_ranges(bins, lo, width, seed):
    x = torch.randn(60, generator=torch.Generator().manual_seed(seed)) * 2
    hi = float(np.float32(lo + width))
    check_torch(lambda t: torch.histc(t, bins=bins, min=lo, max=hi), x, compiled=False, atol=0)


@pytest.mark.parametrize(
    "weights, minlength",
    [(None, 0), (None, 9), (torch.float32, 0), (torch.float64, 3)],
)
def test_bincount_matches_torch(weights, minlength):
    x = torch.tensor([1, 3, 3, 0, 5, 1, 1])
    w = None if weights is None else torch.randn(7, dtype=weights)
    module = check_torch(lambda t: torch.bincount(t, weights=w, minlength=minlength), x)
    assert module.main.output.ty.shape == (ANY,)


def test_bincount_of_a_symbolic_length_and_of_other_data():
    n = torch.export.Dim("n", min=2)
    fn = Fn(lambda t: torch.bincount(t * 2, minlength=3))
    module = check_torch(fn, torch.tensor([1, 0, 4]), dynamic_shapes=(({0: n},),))
    exe = build(module)
    for data in ([0, 0], [7, 1, 2, 2, 9]):
        x = torch.tensor(data)
        want = fn(x).numpy()
        np.testing.assert_array_equal(run(module, x.numpy())[0], want)
        np.testing.assert_array_equal(exe(x.numpy())[0], want)


def test_histc_and_bincount_export_to_onnx():
    """Neither torch exporter takes histc or bincount; to_onnx writes them for onnxruntime."""
    import onnxruntime as ort

    from compiler.frontend import to_onnx

    def fn(t, w, f):
        return torch.bincount(t, weights=w, minlength=8), torch.histc(f, bins=5)

    args = (torch.tensor([1, 3, 3, 0, 5]), torch.randn(5), torch.randn(40))
    module = check_torch(fn, *args)
    sess = ort.InferenceSession(to_onnx(module).SerializeToString())
    feed = zip(sess.get_inputs(), args, strict=True)
    got = sess.run(None, {i.name: a.numpy() for i, a in feed})
    for g, w in zip(got, fn(*args), strict=True):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)


# ----- scatter / index_add (JetMoE's router and expert sums) -------------------------------------


def test_scatter_and_index_add_match_torch():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4, 6, generator=g)
    index = torch.tensor([[0, 5, 2], [1, 1, 3], [4, 0, 0], [2, 3, 5]])
    rows = torch.tensor([2, 0, 2])
    src = torch.randn(4, 3, generator=g)

    def fn(t):
        return (
            torch.zeros_like(t).scatter(1, index, 1.0),
            t.scatter(1, index[:, :1], src[:, :1]),
            t.scatter_add(1, index, src),
            t.scatter_reduce(1, index, src, "amax"),
            t.index_add(0, rows, t[:3] * 2, alpha=0.5),
            t.index_add(1, torch.tensor([5, 5]), t[:, :2]),
        )

    check_torch(fn, x)


# ----- to_onnx of what the converters build ------------------------------------------------------

TO_ONNX = {
    "bicubic": (Interpolate(size=(9, 4), mode="bicubic"), (1, 2, 5, 6)),
    "bicubic_antialias": (Interpolate(size=(3, 4), mode="bicubic", antialias=True), (1, 2, 7, 9)),
    "relative_bias": (RelativeBias(), (1, 2, 7, 7)),
    "view_writes": (Fn(VIEW_WRITES["earlier_view_sees_write"]), (4, 5)),
    "avg_pool3d_divisor": (POOLS["avg3d_divisor"][0], (1, 2, 3, 5, 5)),
    "max_pool1d_ceil": (POOLS["max1d_ceil"][0], (2, 3, 8)),
    "weight_norm": (nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 4, 3)), (1, 3, 8)),
    "sort": (Fn(lambda t: torch.sort(t, dim=0)), (5, 3)),
}


@pytest.mark.parametrize("name", list(TO_ONNX))
def test_converted_models_export_to_onnx(name):
    """to_onnx writes what the converters build, and onnxruntime gives torch's numbers."""
    import onnxruntime as ort

    from compiler.frontend import to_onnx

    model, shape = TO_ONNX[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(6))
    module = from_torch(model.eval(), (x,))
    sess = ort.InferenceSession(to_onnx(module).SerializeToString())
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():
        _assert_same(got, _flat(model(x)), "onnxruntime", 1e-5, 1e-5)


def test_bincount_of_a_huge_value_is_refused_not_allocated():
    from compiler.ops.index import MAX_BINS

    module = from_torch(Fn(lambda t: torch.bincount(t)), (torch.tensor([1, 2]),))
    with pytest.raises(Exception, match=f"more than {MAX_BINS}"):
        run(module, np.array([1, 2**40], np.int64))


# ----- a transformers model that stopped on these ops ---------------------------------------------


@pytest.mark.parametrize("path", ["torch", "onnx"])
def test_beit_with_relative_position_bias_explores_and_checks_clean(path):
    """BEiT builds its relative position index in forward (meshgrid, in-place writes into
    views); small random config. The dynamo ONNX exporter fails inside torch on it."""
    from transformers import BeitConfig, BeitModel

    import explorer

    torch.manual_seed(0)
    config = BeitConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64,
                        use_relative_position_bias=True)  # fmt: skip
    model = BeitModel(config).eval()
    x = torch.randn(1, 3, 32, 32)
    if path == "torch":
        trace, inputs = explorer.explore(model, (x,)), (x,)
    else:
        data = onnx_bytes(model, x)
        trace, inputs = explorer.explore(data, (x.numpy(),)), (x.numpy(),)
    assert trace.failure is None, trace.failure
    report = trace.check(inputs)
    assert not report.findings, [f.message for f in report.findings]


def test_onnx_topk_with_a_computed_k_along_a_symbolic_axis():
    """A TopK whose k is an input sorts the whole axis (topk k=-1), then keeps k."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0, largest=1)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = from_onnx(model)
    for n, k in ((5, 2), (9, 9)):
        x = _ties(n, 3, seed=n).numpy()
        want = ort_run(onnx.load_from_string(model.SerializeToString()), x, np.array([k]))
        _assert_same(run(module, x, np.array([k])), [np.asarray(w) for w in want], "", 0, 0)
