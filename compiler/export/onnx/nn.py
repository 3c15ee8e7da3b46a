"""The ONNX form of neural-network IR ops: matrix products, convolution and pooling (in the
layout ONNX wants), normalisation, softmax, attention and resizing."""

from __future__ import annotations

import math

import numpy as np

from compiler.export.onnx.common import dtype_of, scalar_like
from compiler.export.onnx.reduce import reduce_node
from compiler.export.onnx.registry import ExportError, exporter
from compiler.export.onnx.writer import node_label
from compiler.frontend.onnx_context import ONNX_DTYPE
from compiler.ir.types import DType


def _out_cast(e, n, y: str, dtype: DType) -> str:
    out = n.attrs.get("out_dtype")
    return y if out is None or out is dtype else e.node("Cast", [y], to=ONNX_DTYPE[out])


@exporter("matmul")
def _matmul(e, n, a):
    lhs, rhs = n.args
    if not n.attrs["transpose_b"]:
        return _out_cast(e, n, e.node("MatMul", a), dtype_of(lhs))
    if rhs.ty.shape is None:
        raise ExportError("matmul with transpose_b: the rank of rhs is unknown")
    rank = len(rhs.ty.shape)
    gemm = lhs.ty.shape is not None and len(lhs.ty.shape) == 2 and rank == 2
    if gemm and lhs.ty.dtype in (DType.float32, DType.float64):
        y = e.node("Gemm", a, transB=1)  # a linear layer's (out, in) weight, as torch writes it
    else:
        perm = [*range(rank - 2), rank - 1, rank - 2]
        y = e.node("MatMul", [a[0], e.node("Transpose", [a[1]], perm=perm)])
    return _out_cast(e, n, y, dtype_of(lhs))


@exporter("linear")
def _linear(e, n, a):
    x = n.args[0]
    if x.ty.shape is not None and len(x.ty.shape) == 2:
        y = e.node("Gemm", a, transB=1)
    else:
        y = e.node("MatMul", [a[0], e.node("Transpose", [a[1]], perm=[1, 0])])
        if len(a) > 2:
            y = e.node("Add", [y, a[2]])
    return _out_cast(e, n, y, dtype_of(x))


def _perm(layout: str, canonical: str) -> list[int]:
    """Transpose a tensor in ``layout`` into ``canonical``."""
    return [layout.index(c) for c in canonical]


def _to_canonical(e, x: str, layout: str, canonical: str) -> str:
    return x if layout == canonical else e.node("Transpose", [x], perm=_perm(layout, canonical))


def _from_canonical(e, y: str, layout: str, canonical: str) -> str:
    return y if layout == canonical else e.node("Transpose", [y], perm=_perm(canonical, layout))


@exporter("conv1d", "conv2d")
def _conv(e, n, a):
    nd = 1 if n.op == "conv1d" else 2
    canon_d, canon_k = ("NCW", "OIW") if nd == 1 else ("NCHW", "OIHW")
    layout = n.attrs["data_layout"]
    x = _to_canonical(e, a[0], layout, canon_d)
    w = _to_canonical(e, a[1], n.attrs["kernel_layout"], canon_k)
    y = e.node(
        "Conv",
        [x, w, *a[2:]],
        strides=list(n.attrs["strides"]),
        pads=list(n.attrs["padding"]),
        dilations=list(n.attrs["dilation"]),
        group=n.attrs["groups"],
    )
    return _out_cast(e, n, _from_canonical(e, y, layout, canon_d), dtype_of(n.args[0]))


@exporter("max_pool2d", "avg_pool2d")
def _pool(e, n, a):
    layout = n.attrs["layout"]
    x = _to_canonical(e, a[0], layout, "NCHW")
    pool = list(n.attrs["pool_size"])
    strides = list(n.attrs["strides"] or pool)
    common = {
        "kernel_shape": pool,
        "strides": strides,
        "pads": list(n.attrs["padding"]),
        "ceil_mode": int(n.attrs["ceil_mode"]),
    }
    if n.op == "max_pool2d":
        y = e.node("MaxPool", [x], dilations=list(n.attrs["dilation"]), **common)
    else:
        y = e.node(
            "AveragePool", [x], count_include_pad=int(n.attrs["count_include_pad"]), **common
        )
    return _from_canonical(e, y, layout, "NCHW")


@exporter("adaptive_avg_pool2d")
def _adaptive_avg_pool(e, n, a):
    layout = n.attrs["layout"]
    size = n.attrs["output_size"]
    if size is None:
        return e.node("Identity", a)
    x = _to_canonical(e, a[0], layout, "NCHW")
    perm = _perm(layout, "NCHW")
    shape = n.args[0].ty.shape
    h, w = shape[perm[2]], shape[perm[3]]
    if tuple(size) == (1, 1):
        y = e.node("GlobalAveragePool", [x])
    else:
        if not (isinstance(h, int) and isinstance(w, int)):
            raise ExportError(
                f"{node_label(n)}: adaptive pooling to {list(size)} needs static H, W"
            )
        y = x
        for axis, (n_in, n_out) in ((2, (h, size[0])), (3, (w, size[1]))):
            bins = []
            for i in range(n_out):
                lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
                part = e.node("Slice", [y, e.i64([lo]), e.i64([hi]), e.i64([axis])])
                bins.append(
                    e.node("ReduceMean", [part], axes=[axis], keepdims=1)
                    if e.opset < 18
                    else e.node("ReduceMean", [part, e.i64([axis])], keepdims=1)
                )
            y = bins[0] if len(bins) == 1 else e.node("Concat", bins, axis=axis)
    return _from_canonical(e, y, layout, "NCHW")


def _move_axis_to_1(e, x: str, rank: int, axis: int) -> tuple[str, list[int] | None]:
    axis %= rank
    if axis == 1:
        return x, None
    perm = [0, axis] + [i for i in range(1, rank) if i != axis]
    inverse = [perm.index(i) for i in range(rank)]
    return e.node("Transpose", [x], perm=perm), inverse


@exporter("batch_norm")
def _batch_norm(e, n, a):
    rank = len(n.args[0].ty.shape)
    x, inverse = _move_axis_to_1(e, a[0], rank, n.attrs["axis"])
    y = e.node("BatchNormalization", [x, *a[1:]], epsilon=n.attrs["epsilon"])
    return y if inverse is None else e.node("Transpose", [y], perm=inverse)


@exporter("layer_norm")
def _layer_norm(e, n, a):
    rank = len(n.args[0].ty.shape)
    axes = sorted(ax % rank for ax in n.attrs["axes"])
    eps = n.attrs["epsilon"]
    suffix = axes == list(range(axes[0], rank))
    if suffix and len(a) >= 2:
        return e.node("LayerNormalization", a, axis=axes[0], epsilon=eps)
    x = a[0]
    mean = reduce_node(e, "ReduceMean", x, axes, True)
    d = e.node("Sub", [x, mean])
    var = reduce_node(e, "ReduceMean", e.node("Mul", [d, d]), axes, True)
    y = e.node("Div", [d, e.node("Sqrt", [e.node("Add", [var, scalar_like(e, eps, n)])])])
    if len(a) > 1:
        shape = [n.args[0].ty.shape[i] if i in axes else 1 for i in range(rank)]
        for p, op in zip(a[1:], ("Mul", "Add"), strict=False):
            y = e.node(op, [y, e.node("Reshape", [p, e.dims(shape)])])
    return y


@exporter("group_norm")
def _group_norm(e, n, a):
    data = n.args[0]
    rank = len(data.ty.shape)
    x, inverse = _move_axis_to_1(e, a[0], rank, n.attrs["channel_axis"])
    groups = n.attrs["num_groups"]
    shape = e.node("Shape", [x])
    grouped = e.node("Reshape", [x, e.i64([0, groups, -1])])
    mean = reduce_node(e, "ReduceMean", grouped, [2], True)
    d = e.node("Sub", [grouped, mean])
    var = reduce_node(e, "ReduceMean", e.node("Mul", [d, d]), [2], True)
    eps = scalar_like(e, n.attrs["epsilon"], data)
    y = e.node("Div", [d, e.node("Sqrt", [e.node("Add", [var, eps])])])
    y = e.node("Reshape", [y, shape])
    per_channel = e.i64([-1] + [1] * (rank - 2))
    for p, op in zip(a[1:], ("Mul", "Add"), strict=False):
        y = e.node(op, [y, e.node("Reshape", [p, per_channel])])
    return y if inverse is None else e.node("Transpose", [y], perm=inverse)


@exporter("softmax", "log_softmax")
def _softmax(e, n, a):
    return e.node("Softmax" if n.op == "softmax" else "LogSoftmax", a, axis=n.attrs["axis"])


@exporter("scaled_dot_product_attention")
def _sdpa(e, n, a):
    q, k, v = n.args[:3]
    qk_rank = len(k.ty.shape)
    perm = list(range(qk_rank - 2)) + [qk_rank - 1, qk_rank - 2]
    scores = e.node("MatMul", [a[0], e.node("Transpose", [a[1]], perm=perm)])
    scale = n.attrs["scale"]
    if scale is None:
        feat = q.ty.shape[-1]
        if isinstance(feat, int):
            scale_name = scalar_like(e, 1.0 / math.sqrt(feat), q)
        else:
            f = e.node("Cast", [e.scalar(feat)], to=ONNX_DTYPE[dtype_of(q)])
            scale_name = e.node("Reciprocal", [e.node("Sqrt", [f])])
    else:
        scale_name = scalar_like(e, scale, q)
    scores = e.node("Mul", [scores, scale_name])
    neg_inf = scalar_like(e, -np.inf, q)
    if n.attrs["is_causal"]:
        shape = e.node("Shape", [scores], start=-2)
        ones = e.node("ConstantOfShape", [shape], value=_bool_tensor(True))
        keep = e.node("Trilu", [ones], upper=0)
        scores = e.node("Where", [keep, scores, neg_inf])
    if len(a) > 3:
        mask = n.args[3]
        if dtype_of(mask) is DType.bool:
            scores = e.node("Where", [a[3], scores, neg_inf])
        else:
            scores = e.node("Add", [scores, a[3]])
    probs = e.node("Softmax", [scores], axis=-1)
    # a row with nothing to attend to is NaN in onnxruntime and zeros in the IR (torch)
    probs = e.node("Where", [e.node("IsNaN", [probs]), scalar_like(e, 0, q), probs])
    return e.node("MatMul", [probs, a[2]])


def _bool_tensor(value: bool):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray([value], dtype=np.bool_))


@exporter("resize")
def _resize(e, n, a):
    how = n.attrs["coordinate_transformation_mode"]
    if how == "half_pixel_symmetric" and e.opset < 19:
        raise ExportError(f"{node_label(n)}: coordinate mode {how} needs opset 19")
    # given scales take part in the coordinate transform, so they are written, not sizes
    if n.attrs["scales"] is not None:
        scales, sizes = e.const(list(n.attrs["scales"]), DType.float32), ""
    else:
        scales, sizes = "", e.dims(list(n.attrs["sizes"]))
    cubic = {}
    if n.attrs["mode"] == "cubic":
        cubic = {
            "cubic_coeff_a": float(n.attrs["cubic_coeff_a"]),
            "exclude_outside": int(n.attrs["exclude_outside"]),
        }
    return e.node(
        "Resize",
        [a[0], "", scales, sizes],
        mode=n.attrs["mode"],
        coordinate_transformation_mode=how,
        nearest_mode=n.attrs["nearest_mode"],
        **cubic,
    )
