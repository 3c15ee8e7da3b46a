"""OpCases for the nn ops, checked against torch.

Each reference takes the case's attrs as keywords and maps them to torch: layouts are
permuted to torch's NCHW / OIHW, asymmetric padding goes through ``F.pad``. References compute
in float64 and round to the result dtype (as the ops do), so float16 cases compare tightly;
a few ``-torch-f16`` cases compare with torch's own float16 kernels at a float16 tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

import compiler.ops.nn  # noqa: F401  (registers the ops)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(0)
F16 = {"rtol": 2e-3, "atol": 2e-3}


def _randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


def _positive(*shape: int, dtype=np.float32) -> np.ndarray:
    return (_rng.random(shape) + 0.5).astype(dtype)


def _perm(layout: str, canonical: str) -> list[int]:
    """The permutation taking a tensor in ``layout`` to ``canonical`` order."""
    return [layout.index(c) for c in canonical]


def _f64(*tensors):
    return [None if t is None else t.double() for t in tensors]


CASES: list[OpCase] = []

# ----- matmul and linear ------------------------------------------------------------------


def _matmul_ref(a, b, out_dtype=None, transpose_b=False):
    out = getattr(torch, out_dtype) if out_dtype else a.dtype
    b = b.transpose(-1, -2) if transpose_b else b
    if a.dtype.is_floating_point:
        return torch.matmul(a.double(), b.double()).to(out)
    return torch.matmul(a, b).to(out)


_MATMUL_SHAPES = [
    ((4,), (4,), "vec-vec"),
    ((4,), (4, 3), "vec-mat"),
    ((3, 4), (4,), "mat-vec"),
    ((3, 4), (4, 5), "mat-mat"),
    ((2, 3, 4), (4,), "3d-vec"),
    ((4,), (2, 4, 5), "vec-3d"),
    ((2, 3, 4), (4, 5), "3d-2d"),
    ((3, 4), (2, 4, 5), "2d-3d"),
    ((2, 3, 4), (2, 4, 5), "batched"),
    ((2, 1, 3, 4), (5, 4, 6), "4d-broadcast"),
    ((1, 3, 4), (6, 4, 2), "batch-1-broadcast"),
    ((2, 3, 0), (0, 4), "empty-contraction"),
]
for _a, _b, _id in _MATMUL_SHAPES:
    CASES.append(
        OpCase("matmul", [_randn(*_a), _randn(*_b)], reference=_matmul_ref, id=f"matmul-{_id}")
    )
CASES += [
    OpCase(
        "matmul",
        [_randn(2, 5, 8, dtype=np.float16), _randn(8, 3, dtype=np.float16)],
        reference=_matmul_ref,
        id="matmul-f16",
    ),
    OpCase(
        "matmul",
        [_randn(2, 5, 8, dtype=np.float16), _randn(8, 3, dtype=np.float16)],
        reference=torch.matmul,
        id="matmul-torch-f16",
        **F16,
    ),
    OpCase(
        "matmul",
        [_randn(5, 8, dtype=np.float16), _randn(8, 3, dtype=np.float16)],
        attrs={"out_dtype": "float32"},
        reference=_matmul_ref,
        id="matmul-f16-out-f32",
    ),
    OpCase(
        "matmul",
        [_randn(3, 4, dtype=np.float64), _randn(4, 2, dtype=np.float64)],
        reference=_matmul_ref,
        id="matmul-f64",
    ),
    OpCase(
        "matmul",
        [
            _rng.integers(-9, 9, (2, 3, 4)).astype(np.int32),
            _rng.integers(-9, 9, (4, 5)).astype(np.int32),
        ],
        reference=_matmul_ref,
        id="matmul-i32",
    ),
]


# transpose_b: rhs read with its last two dims swapped (a linear layer's (out, in) weight)
_TRANSPOSED_SHAPES = [
    ((4,), (3, 4), "vec"),
    ((3, 4), (5, 4), "2d"),
    ((2, 3, 4), (5, 4), "3d-2d"),
    ((2, 3, 4), (2, 5, 4), "batched"),
    ((2, 1, 3, 4), (5, 6, 4), "4d-broadcast"),
]
for _a, _b, _id in _TRANSPOSED_SHAPES:
    CASES.append(
        OpCase(
            "matmul",
            [_randn(*_a), _randn(*_b)],
            attrs={"transpose_b": True},
            reference=_matmul_ref,
            id=f"matmul-transpose-b-{_id}",
        )
    )
CASES.append(
    OpCase(
        "matmul",
        [
            _rng.integers(-9, 9, (3, 4)).astype(np.int32),
            _rng.integers(-9, 9, (5, 4)).astype(np.int32),
        ],
        attrs={"transpose_b": True},
        reference=_matmul_ref,
        id="matmul-transpose-b-i32",
    )
)


def _linear_ref(x, w, b=None, out_dtype=None):
    out = getattr(torch, out_dtype) if out_dtype else x.dtype
    return F.linear(*_f64(x, w, b)).to(out)


CASES += [
    OpCase("linear", [_randn(8), _randn(4, 8)], reference=_linear_ref, id="linear-1d"),
    OpCase(
        "linear",
        [_randn(3, 8), _randn(4, 8), _randn(4)],
        reference=_linear_ref,
        id="linear-2d-bias",
    ),
    OpCase(
        "linear",
        [_randn(2, 3, 8), _randn(5, 8), _randn(5)],
        reference=_linear_ref,
        id="linear-3d-bias",
    ),
    OpCase("linear", [_randn(2, 2, 3, 8), _randn(5, 8)], reference=_linear_ref, id="linear-4d"),
    OpCase(
        "linear",
        [_randn(3, 8), _randn(4, 8), np.float32(0.5) * np.ones((), np.float32)],
        reference=_linear_ref,
        id="linear-scalar-bias",
    ),
    OpCase(
        "linear",
        [
            _randn(3, 16, dtype=np.float16),
            _randn(4, 16, dtype=np.float16),
            _randn(4, dtype=np.float16),
        ],
        reference=_linear_ref,
        id="linear-f16",
    ),
    OpCase(
        "linear",
        [_randn(3, 16, dtype=np.float16), _randn(4, 16, dtype=np.float16)],
        attrs={"out_dtype": "float32"},
        reference=_linear_ref,
        id="linear-f16-out-f32",
    ),
]

# ----- convolution ------------------------------------------------------------------------

_CANON = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW")}


def _conv_ref(nd):
    def ref(
        x,
        w,
        b=None,
        strides=None,
        padding=None,
        dilation=None,
        groups=1,
        data_layout=None,
        kernel_layout=None,
        out_dtype=None,
    ):
        cd, ck = _CANON[nd]
        data_layout, kernel_layout = data_layout or cd, kernel_layout or ck
        strides, dilation = strides or (1,) * nd, dilation or (1,) * nd
        padding = padding or (0,) * (2 * nd)
        out = getattr(torch, out_dtype) if out_dtype else x.dtype
        x = x.permute(_perm(data_layout, cd))
        w = w.permute(_perm(kernel_layout, ck))
        # F.pad lists the last dim first: (left, right[, top, bottom])
        pads = [p for k in reversed(range(nd)) for p in (padding[k], padding[k + nd])]
        x, w, b = _f64(F.pad(x, pads), w, b)
        conv = F.conv1d if nd == 1 else F.conv2d
        y = conv(x, w, b, stride=strides, dilation=dilation, groups=groups)
        return y.permute(_perm(cd, data_layout)).to(out)

    return ref


def _conv_case(nd, x_shape, w_shape, bias=False, dtype=np.float32, id="", **attrs):
    inputs = [_randn(*x_shape, dtype=dtype), _randn(*w_shape, dtype=dtype)]
    if bias:
        o = w_shape[attrs.get("kernel_layout", _CANON[nd][1]).index("O")]
        inputs.append(_randn(o, dtype=dtype))
    return OpCase(f"conv{nd}d", inputs, attrs=attrs, reference=_conv_ref(nd), id=id)


CASES += [
    _conv_case(2, (1, 3, 8, 8), (4, 3, 3, 3), id="conv2d-basic"),
    _conv_case(2, (2, 3, 7, 9), (5, 3, 3, 3), bias=True, id="conv2d-bias"),
    _conv_case(
        2,
        (1, 3, 9, 9),
        (4, 3, 3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        id="conv2d-stride2-pad1",
    ),
    _conv_case(
        2, (1, 2, 10, 11), (3, 2, 3, 2), strides=(1, 3), dilation=(2, 1), id="conv2d-dilation-rect"
    ),
    _conv_case(
        2, (1, 2, 6, 6), (3, 2, 3, 3), padding=(0, 1, 2, 3), bias=True, id="conv2d-asymmetric-pad"
    ),
    _conv_case(2, (2, 4, 6, 6), (6, 2, 3, 3), groups=2, bias=True, id="conv2d-groups2"),
    _conv_case(
        2, (1, 8, 7, 7), (8, 1, 3, 3), groups=8, padding=(1, 1, 1, 1), id="conv2d-depthwise"
    ),
    _conv_case(
        2,
        (1, 4, 9, 9),
        (8, 1, 7, 7),
        groups=4,
        padding=(3, 3, 3, 3),
        id="conv2d-depthwise-multiplier2",
    ),
    _conv_case(2, (2, 16, 5, 5), (8, 16, 1, 1), bias=True, id="conv2d-1x1"),
    _conv_case(2, (1, 3, 8, 8), (4, 3, 4, 4), strides=(4, 4), id="conv2d-patchify"),
    _conv_case(
        2,
        (1, 8, 8, 3),
        (3, 3, 3, 4),
        data_layout="NHWC",
        kernel_layout="HWIO",
        padding=(1, 1, 1, 1),
        strides=(2, 2),
        bias=True,
        id="conv2d-nhwc-hwio",
    ),
    _conv_case(
        2,
        (2, 6, 7, 4),
        (6, 3, 3, 2),
        data_layout="NHWC",
        kernel_layout="OHWI",
        groups=2,
        id="conv2d-nhwc-ohwi-groups",
    ),
    _conv_case(
        2,
        (1, 6, 6, 4),
        (3, 3, 1, 4),
        data_layout="NHWC",
        kernel_layout="HWIO",
        groups=4,
        padding=(1, 1, 1, 1),
        id="conv2d-nhwc-depthwise",
    ),
    _conv_case(
        2,
        (1, 3, 8, 8),
        (4, 3, 3, 3),
        dtype=np.float16,
        bias=True,
        padding=(1, 1, 1, 1),
        id="conv2d-f16",
    ),
    _conv_case(
        2,
        (1, 3, 8, 8),
        (4, 3, 3, 3),
        dtype=np.float16,
        out_dtype="float32",
        id="conv2d-f16-out-f32",
    ),
    _conv_case(1, (2, 3, 10), (4, 3, 3), bias=True, id="conv1d-basic"),
    _conv_case(
        1,
        (1, 4, 17),
        (6, 2, 3),
        strides=(2,),
        padding=(1, 2),
        dilation=(2,),
        groups=2,
        id="conv1d-stride-pad-dilation-groups",
    ),
    _conv_case(
        1,
        (2, 11, 4),
        (5, 3, 4),
        data_layout="NWC",
        kernel_layout="OWI",
        padding=(1, 1),
        id="conv1d-nwc",
    ),
]
CASES.append(
    OpCase(
        "conv2d",
        [_randn(1, 3, 8, 8, dtype=np.float16), _randn(4, 3, 3, 3, dtype=np.float16)],
        attrs={"padding": (1, 1, 1, 1)},
        reference=lambda x, w, padding: F.conv2d(x, w, padding=1),
        id="conv2d-torch-f16",
        rtol=1e-2,
        atol=1e-2,
    )
)

# ----- pooling ----------------------------------------------------------------------------


def _pool_ref(kind):
    def ref(
        x,
        pool_size,
        strides=None,
        padding=(0, 0, 0, 0),
        dilation=(1, 1),
        ceil_mode=False,
        count_include_pad=True,
        layout="NCHW",
    ):
        x = x.permute(_perm(layout, "NCHW"))
        strides = strides or pool_size
        pt, pl, pb, pr = padding
        if kind == "max":
            if (pt, pl) == (pb, pr):
                y = F.max_pool2d(x, pool_size, strides, (pt, pl), dilation, ceil_mode)
            else:  # torch pads symmetrically only
                assert not ceil_mode
                fill = -math.inf if x.dtype.is_floating_point else torch.iinfo(x.dtype).min
                x = F.pad(x, (pl, pr, pt, pb), value=fill)
                y = F.max_pool2d(x, pool_size, strides, 0, dilation)
        else:
            x64 = x.double()
            if (pt, pl) == (pb, pr):
                y = F.avg_pool2d(x64, pool_size, strides, (pt, pl), ceil_mode, count_include_pad)
            else:
                assert not ceil_mode
                total = F.avg_pool2d(F.pad(x64, (pl, pr, pt, pb)), pool_size, strides)
                ones = torch.ones_like(x64) if not count_include_pad else None
                if ones is None:
                    y = total
                else:
                    y = total / F.avg_pool2d(F.pad(ones, (pl, pr, pt, pb)), pool_size, strides)
            y = y.to(x.dtype)
        return y.permute(_perm("NCHW", layout))

    return ref


def _pool_case(kind, x, id, **attrs):
    return OpCase(f"{kind}_pool2d", [x], attrs=attrs, reference=_pool_ref(kind), id=id)


for _kind in ("max", "avg"):
    CASES += [
        _pool_case(_kind, _randn(2, 3, 8, 8), f"{_kind}_pool2d-2x2", pool_size=(2, 2)),
        _pool_case(
            _kind,
            _randn(1, 2, 9, 9),
            f"{_kind}_pool2d-3x3-s2-p1",
            pool_size=(3, 3),
            strides=(2, 2),
            padding=(1, 1, 1, 1),
        ),
        _pool_case(
            _kind,
            _randn(1, 2, 10, 7),
            f"{_kind}_pool2d-ceil",
            pool_size=(3, 3),
            strides=(2, 2),
            ceil_mode=True,
        ),
        _pool_case(
            _kind,
            _randn(1, 2, 6, 6),
            f"{_kind}_pool2d-ceil-pad",
            pool_size=(3, 3),
            strides=(2, 2),
            padding=(1, 1, 1, 1),
            ceil_mode=True,
        ),
        _pool_case(
            _kind,
            _randn(1, 2, 5, 5),
            f"{_kind}_pool2d-ceil-last-window-dropped",
            pool_size=(2, 2),
            strides=(2, 2),
            padding=(1, 1, 1, 1),
            ceil_mode=True,
        ),
        _pool_case(
            _kind,
            _randn(1, 2, 2, 2),
            f"{_kind}_pool2d-ceil-kernel-over-input",  # torch: one window (EfficientNet)
            pool_size=(3, 3),
            strides=(3, 3),
            ceil_mode=True,
        ),
        _pool_case(
            _kind, _randn(1, 2, 7, 9), f"{_kind}_pool2d-rect", pool_size=(2, 3), strides=(1, 2)
        ),
        _pool_case(
            _kind,
            _randn(2, 8, 8, 3),
            f"{_kind}_pool2d-nhwc",
            pool_size=(3, 3),
            strides=(2, 2),
            padding=(1, 1, 1, 1),
            layout="NHWC",
        ),
        _pool_case(
            _kind,
            _randn(1, 2, 7, 7),
            f"{_kind}_pool2d-asymmetric-pad",
            pool_size=(3, 3),
            strides=(2, 2),
            padding=(0, 1, 2, 0),
        ),
        _pool_case(
            _kind,
            _randn(1, 3, 8, 8, dtype=np.float16),
            f"{_kind}_pool2d-f16",
            pool_size=(3, 3),
            strides=(2, 2),
            padding=(1, 1, 1, 1),
        ),
    ]
CASES += [
    _pool_case(
        "max",
        _randn(1, 2, 11, 11),
        "max_pool2d-dilation",
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        dilation=(2, 2),
    ),
    _pool_case(
        "max",
        _rng.integers(-100, 100, (1, 2, 6, 6)).astype(np.int32),
        "max_pool2d-i32",
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
    ),
    _pool_case(
        "avg",
        _randn(1, 2, 9, 9),
        "avg_pool2d-exclude-pad",
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        count_include_pad=False,
    ),
    _pool_case(
        "avg",
        _randn(1, 2, 6, 8),
        "avg_pool2d-ceil-exclude-pad",
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
        ceil_mode=True,
        count_include_pad=False,
    ),
    _pool_case(
        "avg",
        _randn(1, 2, 7, 7),
        "avg_pool2d-asymmetric-exclude-pad",
        pool_size=(3, 3),
        strides=(2, 2),
        padding=(0, 1, 2, 0),
        count_include_pad=False,
    ),
]


def _adaptive_ref(x, output_size=None, layout="NCHW"):
    x = x.permute(_perm(layout, "NCHW"))
    y = F.adaptive_avg_pool2d(x.double(), output_size or x.shape[2:]).to(x.dtype)
    return y.permute(_perm("NCHW", layout))


CASES += [
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(2, 3, 7, 7)],
        attrs={"output_size": (1, 1)},
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-global",
    ),
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(1, 2, 7, 7)],
        attrs={"output_size": (3, 3)},
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-overlapping-bins",
    ),
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(1, 2, 5, 11)],
        attrs={"output_size": (2, 4)},
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-rect",
    ),
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(1, 2, 3, 4)],
        attrs={"output_size": (6, 5)},
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-upsample",
    ),
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(1, 2, 4, 5)],
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-default-size",
    ),
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(2, 7, 7, 3)],
        attrs={"output_size": (2, 2), "layout": "NHWC"},
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-nhwc",
    ),
    OpCase(
        "adaptive_avg_pool2d",
        [_randn(1, 4, 6, 6, dtype=np.float16)],
        attrs={"output_size": (1, 1)},
        reference=_adaptive_ref,
        id="adaptive_avg_pool2d-f16",
    ),
]

# ----- normalisation ----------------------------------------------------------------------


def _batch_norm_ref(x, gamma, beta, mean, var, axis=1, epsilon=1e-5):
    xd = x.double().movedim(axis, 1)
    y = F.batch_norm(xd, *_f64(mean, var, gamma, beta), training=False, eps=epsilon)
    return y.movedim(1, axis).to(x.dtype)


def _bn_case(shape, axis=1, dtype=np.float32, id="", **attrs):
    c = shape[axis]
    inputs = [
        _randn(*shape, dtype=dtype),
        _randn(c, dtype=dtype),
        _randn(c, dtype=dtype),
        _randn(c, dtype=dtype),
        _positive(c, dtype=dtype),
    ]
    if axis != 1:
        attrs["axis"] = axis
    return OpCase("batch_norm", inputs, attrs=attrs, reference=_batch_norm_ref, id=id)


CASES += [
    _bn_case((2, 3, 4, 5), id="batch_norm-nchw"),
    _bn_case((4, 6), id="batch_norm-2d"),
    _bn_case((2, 5, 3), axis=-1, id="batch_norm-channels-last", epsilon=1e-3),
    _bn_case((2, 4, 3, 3), dtype=np.float16, id="batch_norm-f16"),
]


def _layer_norm_ref(x, gamma=None, beta=None, axes=(-1,), epsilon=1e-5):
    axes = sorted(a % x.dim() for a in axes)
    if axes == list(range(x.dim() - len(axes), x.dim())):
        shape = [x.shape[a] for a in axes]
        return F.layer_norm(*_f64(x), shape, *_f64(gamma, beta), eps=epsilon).to(x.dtype)
    xd = x.double()  # non-trailing axes: torch has no such layer_norm, spell it out
    mean = xd.mean(dim=axes, keepdim=True)
    var = xd.var(dim=axes, keepdim=True, unbiased=False)
    y = (xd - mean) / torch.sqrt(var + epsilon)
    shape = [x.shape[a] if a in axes else 1 for a in range(x.dim())]
    if gamma is not None:
        y = y * gamma.double().reshape(shape)
    if beta is not None:
        y = y + beta.double().reshape(shape)
    return y.to(x.dtype)


CASES += [
    OpCase(
        "layer_norm",
        [_randn(2, 3, 8), _randn(8), _randn(8)],
        reference=_layer_norm_ref,
        id="layer_norm-last",
    ),
    OpCase(
        "layer_norm",
        [_randn(2, 3, 4), _randn(3, 4), _randn(3, 4)],
        attrs={"axes": (-2, -1), "epsilon": 1e-6},
        reference=_layer_norm_ref,
        id="layer_norm-last-two",
    ),
    OpCase("layer_norm", [_randn(4, 8)], reference=_layer_norm_ref, id="layer_norm-no-affine"),
    OpCase(
        "layer_norm",
        [_randn(4, 8), _randn(8)],
        reference=_layer_norm_ref,
        id="layer_norm-gamma-only",
    ),
    OpCase(
        "layer_norm",
        [_randn(2, 5, 3, 3), _randn(5), _randn(5)],
        attrs={"axes": (1,)},
        reference=_layer_norm_ref,
        id="layer_norm-channels-axis",
    ),
    OpCase(
        "layer_norm",
        [
            _randn(2, 16, dtype=np.float16),
            _randn(16, dtype=np.float16),
            _randn(16, dtype=np.float16),
        ],
        reference=_layer_norm_ref,
        id="layer_norm-f16",
    ),
    OpCase(
        "layer_norm",
        [_randn(2, 16, dtype=np.float16) * np.float16(100) + np.float16(500)],
        reference=_layer_norm_ref,
        id="layer_norm-f16-large-mean",
    ),
]


def _group_norm_ref(x, gamma=None, beta=None, num_groups=1, channel_axis=1, epsilon=1e-5):
    xd = x.double().movedim(channel_axis, 1)
    y = F.group_norm(xd, num_groups, *_f64(gamma, beta), eps=epsilon)
    return y.movedim(1, channel_axis).to(x.dtype)


CASES += [
    OpCase(
        "group_norm",
        [_randn(2, 6, 4, 4), _randn(6), _randn(6)],
        attrs={"num_groups": 3},
        reference=_group_norm_ref,
        id="group_norm-nchw",
    ),
    OpCase(
        "group_norm",
        [_randn(2, 8, 5)],
        attrs={"num_groups": 4},
        reference=_group_norm_ref,
        id="group_norm-3d-no-affine",
    ),
    OpCase(
        "group_norm",
        [_randn(2, 4, 3, 3), _randn(4), _randn(4)],
        attrs={"num_groups": 1},
        reference=_group_norm_ref,
        id="group_norm-one-group",
    ),
    OpCase(
        "group_norm",
        [_randn(2, 4, 3, 3), _randn(4), _randn(4)],
        attrs={"num_groups": 4},
        reference=_group_norm_ref,
        id="group_norm-instance",
    ),
    OpCase(
        "group_norm",
        [_randn(2, 3, 3, 6), _randn(6), _randn(6)],
        attrs={"num_groups": 2, "channel_axis": -1, "epsilon": 1e-3},
        reference=_group_norm_ref,
        id="group_norm-channels-last",
    ),
    OpCase(
        "group_norm",
        [
            _randn(1, 8, 4, 4, dtype=np.float16),
            _randn(8, dtype=np.float16),
            _randn(8, dtype=np.float16),
        ],
        attrs={"num_groups": 2},
        reference=_group_norm_ref,
        id="group_norm-f16",
    ),
]

# ----- softmax ----------------------------------------------------------------------------

for _op, _fn in (("softmax", torch.softmax), ("log_softmax", torch.log_softmax)):

    def _ref(x, axis=-1, _fn=_fn):
        return _fn(x.double(), dim=axis).to(x.dtype)

    CASES += [
        OpCase(_op, [_randn(3, 7)], reference=_ref, id=f"{_op}-last"),
        OpCase(_op, [_randn(4, 5)], attrs={"axis": 0}, reference=_ref, id=f"{_op}-axis0"),
        OpCase(_op, [_randn(2, 3, 4)], attrs={"axis": 1}, reference=_ref, id=f"{_op}-middle"),
        OpCase(_op, [_randn(6) * 1000], reference=_ref, id=f"{_op}-large-values"),
        OpCase(_op, [_randn(2, 9, dtype=np.float16)], reference=_ref, id=f"{_op}-f16"),
        OpCase(
            _op,
            [_randn(2, 9, dtype=np.float16)],
            reference=lambda x, _fn=_fn: _fn(x, -1),
            id=f"{_op}-torch-f16",
            **F16,
        ),
        OpCase(_op, [_randn(5, dtype=np.float64)], reference=_ref, id=f"{_op}-f64"),
    ]

# ----- attention --------------------------------------------------------------------------


def _sdpa_ref(q, k, v, mask=None, is_causal=False, scale=None):
    dtype = q.dtype
    q, k, v = _f64(q, k, v)
    if mask is not None and mask.dtype != torch.bool:
        mask = mask.double()
    if is_causal and mask is not None:  # torch refuses both; combine them as ONNX Attention
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        if mask.dtype == torch.bool:
            mask, is_causal = mask & causal, False
        else:
            mask, is_causal = mask.masked_fill(~causal, -math.inf), False
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, scale=scale)
    return y.to(dtype)


def _sdpa_case(q, k, v, mask=None, dtype=np.float32, id="", **attrs):
    inputs = [_randn(*q, dtype=dtype), _randn(*k, dtype=dtype), _randn(*v, dtype=dtype)]
    if mask is not None:
        inputs.append(mask)
    return OpCase(
        "scaled_dot_product_attention", inputs, attrs=attrs, reference=_sdpa_ref, id=f"sdpa-{id}"
    )


_KEEP = _rng.random((5, 7)) < 0.6
_KEEP[:, 0] = True
_NONE_ROW = np.ones((4, 6), bool)
_NONE_ROW[1] = False
CASES += [
    _sdpa_case((2, 5, 8), (2, 7, 8), (2, 7, 8), id="3d"),
    _sdpa_case((2, 3, 5, 16), (2, 3, 7, 16), (2, 3, 7, 4), id="heads-value-dim"),
    _sdpa_case((1, 2, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8), is_causal=True, id="causal"),
    _sdpa_case((1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8), is_causal=True, id="causal-L-lt-S"),
    _sdpa_case((1, 6, 8), (1, 4, 8), (1, 4, 8), is_causal=True, id="causal-L-gt-S"),
    _sdpa_case((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), mask=_KEEP, id="bool-mask-broadcast"),
    _sdpa_case((2, 5, 8), (2, 7, 8), (2, 7, 8), mask=_randn(2, 1, 7), id="float-mask"),
    _sdpa_case((2, 5, 8), (2, 7, 8), (2, 7, 8), scale=0.3, id="scale"),
    _sdpa_case((3, 2, 5, 8), (7, 8), (7, 8), id="broadcast-batch"),
    _sdpa_case((1, 4, 8), (1, 6, 8), (1, 6, 8), mask=_NONE_ROW, id="fully-masked-row"),
    _sdpa_case(
        (1, 5, 8), (1, 7, 8), (1, 7, 8), mask=_KEEP, is_causal=True, id="causal-and-bool-mask"
    ),
    _sdpa_case(
        (1, 5, 8),
        (1, 7, 8),
        (1, 7, 8),
        mask=_randn(5, 7),
        is_causal=True,
        id="causal-and-float-mask",
    ),
    _sdpa_case(
        (2, 5, 16),
        (2, 7, 16),
        (2, 7, 16),
        dtype=np.float16,
        mask=_randn(5, 7, dtype=np.float16),
        id="f16",
    ),
]

# ----- resize -----------------------------------------------------------------------------


def _interpolate_ref(mode: str, align_corners: bool | None = None):
    """torch's F.interpolate over the trailing dims (the leading two are kept)."""

    def ref(x, sizes, **_):
        y = F.interpolate(x.double(), size=tuple(sizes[2:]), mode=mode, align_corners=align_corners)
        return y.to(x.dtype)

    return ref


def _resize_case(x, id, reference=None, expected=None, tol=None, **attrs):
    tols = tol or {}
    return OpCase("resize", [x], attrs=attrs, reference=reference, expected=expected, id=id, **tols)


_x1 = np.array([[[1.0, 2.0, 3.0, 4.0]]], dtype=np.float32)
CASES += [
    _resize_case(
        _randn(1, 2, 3, 4),
        "resize-nearest-up-torch",
        _interpolate_ref("nearest"),
        sizes=(1, 2, 7, 9),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    ),
    _resize_case(
        _randn(2, 1, 8, 6),
        "resize-nearest-down-torch",
        _interpolate_ref("nearest"),
        sizes=(2, 1, 3, 4),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    ),
    _resize_case(
        _randn(1, 2, 5, 4),
        "resize-nearest-exact-torch",
        _interpolate_ref("nearest-exact"),
        sizes=(1, 2, 8, 3),
        coordinate_transformation_mode="half_pixel",
        nearest_mode="round_prefer_ceil",
    ),
    _resize_case(
        np.arange(12, dtype=np.int64).reshape(1, 1, 3, 4),
        "resize-nearest-int-torch",
        _interpolate_ref("nearest"),
        sizes=(1, 1, 6, 8),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    ),
    _resize_case(
        _randn(1, 2, 3, 4),
        "resize-bilinear-torch",
        _interpolate_ref("bilinear", False),
        sizes=(1, 2, 7, 5),
        mode="linear",
        coordinate_transformation_mode="pytorch_half_pixel",
    ),
    _resize_case(
        _randn(1, 2, 6, 7),
        "resize-bilinear-down-torch",
        _interpolate_ref("bilinear", False),
        sizes=(1, 2, 4, 3),
        mode="linear",
        coordinate_transformation_mode="pytorch_half_pixel",
    ),
    _resize_case(
        _randn(2, 3, 4, 3),
        "resize-bilinear-align-corners-torch",
        _interpolate_ref("bilinear", True),
        sizes=(2, 3, 7, 1),
        mode="linear",
        coordinate_transformation_mode="align_corners",
    ),
    _resize_case(
        _randn(1, 2, 3, 4, dtype=np.float16),
        "resize-bilinear-f16-torch",
        _interpolate_ref("bilinear", False),
        sizes=(1, 2, 6, 8),
        mode="linear",
        coordinate_transformation_mode="half_pixel",
        tol=F16,
    ),
    # the ONNX-only modes, worked by hand: 4 -> 8 with scale 2
    _resize_case(
        _x1,
        "resize-linear-asymmetric",
        expected=np.array([[[1, 1.5, 2, 2.5, 3, 3.5, 4, 4]]], dtype=np.float32),
        sizes=(1, 1, 8),
        mode="linear",
        coordinate_transformation_mode="asymmetric",
    ),
    _resize_case(
        _x1,
        "resize-nearest-half-pixel-round-prefer-floor",
        # sources -0.25, 0.25, 0.75, ... round to 0, 0, 1, 1, 2, 2, 3, 3
        expected=np.array([[[1, 1, 2, 2, 3, 3, 4, 4]]], dtype=np.float32),
        sizes=(1, 1, 8),
    ),
    _resize_case(
        _x1,
        "resize-nearest-asymmetric-round-prefer-floor",
        # sources 0, 0.5, 1, ... : halfway rounds down, then up with ceil
        expected=np.array([[[1, 1, 2, 2, 3, 3, 4, 4]]], dtype=np.float32),
        sizes=(1, 1, 8),
        coordinate_transformation_mode="asymmetric",
    ),
    _resize_case(
        _x1,
        "resize-nearest-asymmetric-round-prefer-ceil",
        expected=np.array([[[1, 2, 2, 3, 3, 4, 4, 4]]], dtype=np.float32),
        sizes=(1, 1, 8),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="round_prefer_ceil",
    ),
    _resize_case(
        _x1,
        "resize-nearest-asymmetric-ceil",
        expected=np.array([[[1, 2, 2, 3, 3, 4, 4, 4]]], dtype=np.float32),
        sizes=(1, 1, 8),
        coordinate_transformation_mode="asymmetric",
        nearest_mode="ceil",
    ),
    _resize_case(
        _x1,
        "resize-linear-scales-differ-from-sizes",
        # scale 0.6 gives 2 results; sources (x + 0.5) / 0.6 - 0.5 = 0.3333, 2
        expected=np.array([[[4 / 3, 3.0]]], dtype=np.float32),
        sizes=(1, 1, 2),
        scales=(1.0, 1.0, 0.6),
        mode="linear",
    ),
    _resize_case(
        _x1,
        "resize-linear-half-pixel-symmetric",
        # 4 -> 2 with scale 0.6: offset 2 * (1 - 2 / 2.4) = 1/3, sources 2/3 and 2.3333
        expected=np.array([[[5 / 3, 10 / 3]]], dtype=np.float32),
        sizes=(1, 1, 2),
        scales=(1.0, 1.0, 0.6),
        mode="linear",
        coordinate_transformation_mode="half_pixel_symmetric",
    ),
    # cubic: torch's bicubic (a = -0.75, the edge repeated), both coordinate modes
    _resize_case(
        _randn(1, 2, 5, 6),
        "resize-cubic-up-torch",
        _interpolate_ref("bicubic", align_corners=False),
        sizes=(1, 2, 9, 4),
        mode="cubic",
    ),
    _resize_case(
        _randn(1, 2, 5, 6),
        "resize-cubic-align-corners-torch",
        _interpolate_ref("bicubic", align_corners=True),
        sizes=(1, 2, 3, 11),
        mode="cubic",
        coordinate_transformation_mode="align_corners",
    ),
    _resize_case(
        _x1,
        "resize-cubic-exclude-outside",
        # 4 -> 2, half_pixel: sources 0.5 and 2.5, tap weights (a = -0.5) -0.0625, 0.5625,
        # 0.5625, -0.0625; the taps -1 and 4 lie outside: weight 0, the rest / 1.0625
        expected=np.array(
            [
                [
                    [
                        (0.5625 * 1 + 0.5625 * 2 - 0.0625 * 3) / 1.0625,
                        (-0.0625 * 2 + 0.5625 * 3 + 0.5625 * 4) / 1.0625,
                    ]
                ]
            ],  # fmt: skip
            dtype=np.float32,
        ),
        sizes=(1, 1, 2),
        mode="cubic",
        cubic_coeff_a=-0.5,
        exclude_outside=True,
    ),
]
