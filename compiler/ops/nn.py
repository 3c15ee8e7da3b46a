"""Neural-network ops: matmul and linear, convolutions, pooling, normalisations, softmax and
scaled dot-product attention: their declarations and type inference (their numpy computations
are in compiler/ir/nn_compute.py).

Float ops compute in float64 and round to the result dtype, so float16/bfloat16 results are
correctly rounded; but a float32 matmul / linear accumulates in float32 (BLAS sgemm), and
float32 attention is computed op by op as decompose-ops writes it (each part rounded to
float32), as torch's CPU kernels compute them: the values then differ from torch eager's as two
float32 kernels differ, they take eager's time, and decompose-ops changes no float32 value.
(This is the numpy reference; the interpreter's torch kernels, compiler/torch_kernels.py, compute
float32 ops in float32 as torch eager does, with the same semantics.)
Semantic choices, where frameworks differ:

- ``matmul``: numpy / torch semantics (1-D operands get a dim prepended / appended and then
  removed, leading dims broadcast). Contraction dims are an error only when provably different
  (``3`` vs ``4``); ``n`` vs ``m`` is accepted, as TVM Relax does. ``out_dtype`` (default: the
  input dtype) lets mixed precision keep f16 inputs with an f32 result. ``transpose_b`` reads
  ``rhs`` (rank >= 2) with its last two dims swapped, like ONNX Gemm's ``transB``: a linear
  layer's ``(out, in)`` weight is read as it is stored, so no transposed copy of it is made
  (a tied embedding stays one array).
- ``linear``: torch's ``F.linear``, ``weight`` is ``(out_features, in_features)``.
- ``conv1d`` / ``conv2d``: ``padding`` lists every begin then every end (``top, left, bottom,
  right``); layouts are any permutation of the letters of ``NCHW`` / ``OIHW`` (``NHWC``,
  ``HWIO``, ``OHWI``, ...), the result is in ``data_layout``. An optional ``bias`` of shape
  ``(out_channels,)`` is added, as in torch.
- Pooling windows follow torch: with ``ceil_mode`` the last window must start inside the input
  or its begin padding; ``avg_pool2d`` with ``count_include_pad`` divides by the window clipped
  to the padded input, otherwise by the number of input elements in the window.
- ``batch_norm`` is the inference form: one result (no running-stat outputs, unlike Relax).
- ``scaled_dot_product_attention``: torch layout ``(..., L, E)`` with broadcasting batch dims;
  a bool mask keeps True, a float mask is added to the scores; ``is_causal`` keeps the lower
  triangle aligned top-left and may be combined with a mask (ONNX Attention allows both). A
  query row with no key left gives zeros, as torch does.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.ir.nn_compute import (
    CONV_LAYOUTS,
    adaptive_compute,
    batch_norm_compute,
    check_ints,
    conv_compute,
    group_norm_compute,
    layer_norm_compute,
    layout_perm,
    linear_compute,
    matmul_compute,
    pool_compute,
    pool_params,
    resize_compute,
    scaled_dim,
    sdpa_compute,
    softmax64,
    window_count,
)
from compiler.ir.op_registry import (
    ANCHOR,
    BROADCAST,
    OPAQUE,
    Attrs,
    AttrSpec,
    TypeInferenceError,
    define_op,
)
from compiler.ir.shape_inference import (
    broadcast_shapes,
    known_rank,
    normalize_axes,
    normalize_axis,
    same_dtype,
    tensor_input,
)
from compiler.ir.symbolic import (
    ANY,
    Dim,
    dim_mul,
    dim_str,
    dims_equal,
)
from compiler.ir.types import DType, TensorType, Type

# ----- shared helpers ---------------------------------------------------------------------


def _shape_text(shape: Sequence[Dim]) -> str:
    return "[" + ", ".join(dim_str(d) for d in shape) + "]"


def _float_input(t: Type, what: str) -> TensorType:
    t = tensor_input(t, what)
    if not t.dtype.is_float:
        raise TypeInferenceError(f"{what} must be floating-point, got {t}")
    return t


def _numeric_input(t: Type, what: str) -> TensorType:
    t = tensor_input(t, what)
    if t.dtype is DType.bool:
        raise TypeInferenceError(f"{what} must be numeric, got {t}")
    return t


def _rank(t: TensorType, rank: int, what: str, layout: str = "") -> tuple:
    """The shape of ``t``, which must have exactly ``rank`` dims."""
    n = known_rank(t, what)
    if n != rank:
        how = f" (layout {layout})" if layout else ""
        raise TypeInferenceError(f"{what} must have rank {rank}{how}, got {t}")
    return t.shape


def _out_dtype(attrs: Attrs, dtype: DType) -> DType:
    return attrs["out_dtype"] if attrs.get("out_dtype") is not None else dtype


def _to_layout(canonical_dims: Sequence, canonical: str, layout: str) -> tuple:
    """Dims given in ``canonical`` order, rearranged into ``layout`` order."""
    return tuple(canonical_dims[canonical.index(c)] for c in layout)


# ----- matmul and linear ------------------------------------------------------------------


def _matmul_infer(types, attrs):
    a = _numeric_input(types[0], "lhs")
    b = _numeric_input(types[1], "rhs")
    dtype = same_dtype([a, b], "lhs and rhs")
    out_dtype = _out_dtype(attrs, dtype)
    if a.shape is None or b.shape is None:
        return TensorType(None, out_dtype)
    for t, what in ((a, "lhs"), (b, "rhs")):
        if len(t.shape) == 0:
            raise TypeInferenceError(f"{what} must have rank >= 1, got {t}")
    bshape = b.shape
    if attrs["transpose_b"]:
        if len(bshape) < 2:
            raise TypeInferenceError(f"transpose_b needs an rhs of rank >= 2, got {b}")
        bshape = (*bshape[:-2], bshape[-1], bshape[-2])
    ash = a.shape if len(a.shape) > 1 else (1, *a.shape)
    bsh = bshape if len(bshape) > 1 else (*bshape, 1)
    rhs = f"rhs {b}" + (" read transposed" if attrs["transpose_b"] else "")
    if dims_equal(ash[-1], bsh[-2]) is False:
        raise TypeInferenceError(
            f"contraction dims differ: lhs {a} has {dim_str(ash[-1])} columns "
            f"but {rhs} has {dim_str(bsh[-2])} rows"
        )
    try:
        batch = broadcast_shapes(ash[:-2], bsh[:-2])
    except TypeInferenceError:
        raise TypeInferenceError(
            f"batch dims {_shape_text(ash[:-2])} of lhs and {_shape_text(bsh[:-2])} of rhs "
            "do not broadcast"
        ) from None
    rows = ash[-2:-1] if len(a.shape) > 1 else ()
    cols = bsh[-1:] if len(bshape) > 1 else ()
    return TensorType((*batch, *rows, *cols), out_dtype)


_OUT_DTYPE = AttrSpec("dtype", None, "the result dtype; none = the input dtype")

define_op(
    "matmul",
    inputs=("lhs", "rhs"),
    attrs={
        "out_dtype": _OUT_DTYPE,
        "transpose_b": AttrSpec("bool", False, "read rhs with its last two dims swapped"),
    },
    infer=_matmul_infer,
    compute=matmul_compute,
    pattern=ANCHOR,
    doc="Matrix product with numpy semantics: 1-D operands and broadcast batch dims; "
    "transpose_b reads rhs transposed (a linear layer's weight as it is stored).",
)


def _linear_infer(types, attrs):
    x = _numeric_input(types[0], "x")
    w = _numeric_input(types[1], "weight")
    bias = _numeric_input(types[2], "bias") if len(types) > 2 else None
    dtype = same_dtype([x, w] + ([bias] if bias else []), "x, weight and bias")
    out_dtype = _out_dtype(attrs, dtype)
    out_f, in_f = _rank(w, 2, "weight", "(out_features, in_features)")
    if bias is not None:
        brank = known_rank(bias, "bias")
        if brank > 1 or (brank == 1 and dims_equal(bias.shape[0], out_f) is False):
            raise TypeInferenceError(
                f"bias must have shape [{dim_str(out_f)}] (out_features), got {bias}"
            )
    if x.shape is None:
        return TensorType(None, out_dtype)
    if len(x.shape) == 0:
        raise TypeInferenceError(f"x must have rank >= 1, got {x}")
    if dims_equal(x.shape[-1], in_f) is False:
        raise TypeInferenceError(
            f"x has {dim_str(x.shape[-1])} features but weight {w} expects {dim_str(in_f)}"
        )
    return TensorType((*x.shape[:-1], out_f), out_dtype)


define_op(
    "linear",
    inputs=("x", "weight", "bias?"),
    attrs={"out_dtype": _OUT_DTYPE},
    infer=_linear_infer,
    compute=linear_compute,
    pattern=ANCHOR,
    doc="x @ weight.T + bias with weight of shape (out_features, in_features), like torch.",
)


# ----- convolution ------------------------------------------------------------------------
_SPATIAL_NAMES = {1: ("width",), 2: ("height", "width")}


def _conv_attrs(nd: int) -> dict[str, AttrSpec]:
    data_layout, kernel_layout = CONV_LAYOUTS[nd]
    pad_doc = "left, right" if nd == 1 else "top, left, bottom, right"
    return {
        "strides": AttrSpec("ints", (1,) * nd, "step of the window per spatial dim"),
        "padding": AttrSpec("ints", (0,) * (2 * nd), f"zero padding: {pad_doc}"),
        "dilation": AttrSpec("ints", (1,) * nd, "spacing of kernel elements"),
        "groups": AttrSpec("int", 1, "channel groups (groups = channels: depthwise)"),
        "data_layout": AttrSpec("str", data_layout, f"layout of data and result ({data_layout})"),
        "kernel_layout": AttrSpec("str", kernel_layout, f"layout of weight ({kernel_layout})"),
        "out_dtype": _OUT_DTYPE,
    }


def _conv_infer(nd: int):
    canon_data, canon_kernel = CONV_LAYOUTS[nd]

    def infer(types, attrs):
        data = _float_input(types[0], "data")
        weight = _float_input(types[1], "weight")
        bias = _float_input(types[2], "bias") if len(types) > 2 else None
        dtype = same_dtype([data, weight] + ([bias] if bias else []), "data, weight and bias")
        layout, kernel_layout = attrs["data_layout"], attrs["kernel_layout"]
        dperm = layout_perm(layout, canon_data, "data_layout")
        kperm = layout_perm(kernel_layout, canon_kernel, "kernel_layout")
        strides = check_ints(attrs, "strides", nd, 1, "one per spatial dim")
        dilation = check_ints(attrs, "dilation", nd, 1, "one per spatial dim")
        pad_doc = "left, right" if nd == 1 else "top, left, bottom, right"
        padding = check_ints(attrs, "padding", 2 * nd, 0, pad_doc)
        groups = attrs["groups"]
        if groups < 1:
            raise TypeInferenceError(f"groups must be >= 1, got {groups}")
        dshape = _rank(data, nd + 2, "data", layout)
        kshape = _rank(weight, nd + 2, "weight", kernel_layout)
        n, c, *spatial = (dshape[p] for p in dperm)
        o, i, *kernel = (kshape[p] for p in kperm)
        expected = dim_mul(i, groups)
        if dims_equal(c, expected) is False:
            raise TypeInferenceError(
                f"data has {dim_str(c)} channels but weight expects {dim_str(expected)} "
                f"(groups={groups})"
            )
        if isinstance(o, int) and o % groups:
            raise TypeInferenceError(
                f"weight has {o} output channels, which groups={groups} does not divide"
            )
        if bias is not None and (
            known_rank(bias, "bias") != 1 or dims_equal(bias.shape[0], o) is False
        ):
            raise TypeInferenceError(
                f"bias must have shape [{dim_str(o)}] (one per output channel), got {bias}"
            )
        out_spatial = [
            window_count(
                spatial[k],
                padding[k],
                padding[k + nd],
                kernel[k],
                strides[k],
                dilation[k],
                what=f"input {_SPATIAL_NAMES[nd][k]}",
            )
            for k in range(nd)
        ]
        out = _to_layout((n, o, *out_spatial), canon_data, layout)
        return TensorType(out, _out_dtype(attrs, dtype))

    return infer


for _nd in (1, 2):
    _dl, _kl = CONV_LAYOUTS[_nd]
    define_op(
        f"conv{_nd}d",
        inputs=("data", "weight", "bias?"),
        attrs=_conv_attrs(_nd),
        infer=_conv_infer(_nd),
        compute=conv_compute(_nd),
        pattern=ANCHOR,
        doc=f"{_nd}-D convolution (cross-correlation) with groups, data {_dl}, weight {_kl}.",
    )


# ----- pooling ----------------------------------------------------------------------------


def _pool_attrs(kind: str) -> dict[str, AttrSpec]:
    attrs = {
        "pool_size": AttrSpec("ints", doc="window size (height, width)"),
        "strides": AttrSpec("ints", None, "step of the window; none = pool_size (torch)"),
        "padding": AttrSpec("ints", (0, 0, 0, 0), "padding: top, left, bottom, right"),
        "dilation": AttrSpec("ints", (1, 1), "spacing of window elements"),
        "ceil_mode": AttrSpec("bool", False, "round the window count up, like torch"),
        "layout": AttrSpec("str", "NCHW", "layout of data and result (NCHW or NHWC)"),
    }
    if kind == "avg":
        del attrs["dilation"]
        attrs["count_include_pad"] = AttrSpec(
            "bool", True, "divide by the whole window (true) or only its input elements"
        )
    return attrs


def _pool_infer(kind: str):
    def infer(types, attrs):
        data = _float_input(types[0], "data") if kind == "avg" else _numeric_input(types[0], "data")
        layout = attrs["layout"]
        perm = layout_perm(layout, "NCHW", "layout")
        pool, strides, dilation, padding = pool_params(attrs)
        shape = _rank(data, 4, "data", layout)
        n, c, h, w = (shape[p] for p in perm)
        out = [
            window_count(
                size,
                padding[k],
                padding[k + 2],
                pool[k],
                strides[k],
                dilation[k],
                attrs["ceil_mode"],
                f"input {_SPATIAL_NAMES[2][k]}",
            )
            for k, size in enumerate((h, w))
        ]
        return data.with_shape(_to_layout((n, c, *out), "NCHW", layout))

    return infer


define_op(
    "max_pool2d",
    inputs=("data",),
    attrs=_pool_attrs("max"),
    infer=_pool_infer("max"),
    compute=pool_compute("max"),
    pattern=ANCHOR,
    doc="2-D max pooling over windows (padding never wins), torch semantics incl. ceil_mode.",
)

define_op(
    "avg_pool2d",
    inputs=("data",),
    attrs=_pool_attrs("avg"),
    infer=_pool_infer("avg"),
    compute=pool_compute("avg"),
    pattern=ANCHOR,
    doc="2-D average pooling over windows, torch semantics incl. ceil_mode, count_include_pad.",
)


def _adaptive_infer(types, attrs):
    data = _float_input(types[0], "data")
    layout = attrs["layout"]
    perm = layout_perm(layout, "NCHW", "layout")
    shape = _rank(data, 4, "data", layout)
    n, c, h, w = (shape[p] for p in perm)
    size = attrs["output_size"]
    if size is None:
        size = (h, w)
    else:
        size = check_ints(attrs, "output_size", 2, 1, "height, width")
    return data.with_shape(_to_layout((n, c, *size), "NCHW", layout))


define_op(
    "adaptive_avg_pool2d",
    inputs=("data",),
    attrs={
        "output_size": AttrSpec("ints", None, "(height, width) of the result; none = the input's"),
        "layout": AttrSpec("str", "NCHW", "layout of data and result (NCHW or NHWC)"),
    },
    infer=_adaptive_infer,
    compute=adaptive_compute,
    pattern=ANCHOR,
    doc="2-D average pooling into a fixed output size (torch's bins), e.g. global pooling.",
)


# ----- normalisation ----------------------------------------------------------------------


def _param_input(t: Type, what: str, dims: Sequence[Dim], meaning: str) -> TensorType:
    """A scale / shift / statistics input, which must have shape ``dims``."""
    t = _float_input(t, what)
    ok = (
        t.shape is not None
        and len(t.shape) == len(dims)
        and all(dims_equal(a, b) is not False for a, b in zip(t.shape, dims, strict=True))
    )
    if not ok:
        raise TypeInferenceError(f"{what} must have shape {_shape_text(dims)} ({meaning}), got {t}")
    return t


def _batch_norm_infer(types, attrs):
    data = _float_input(types[0], "data")
    rank = known_rank(data, "data")
    if rank < 2:
        raise TypeInferenceError(f"data must have rank >= 2, got {data}")
    axis = normalize_axis(attrs["axis"], rank)
    c = data.shape[axis]
    params = [
        _param_input(t, what, (c,), f"one per channel of axis {axis}")
        for t, what in zip(types[1:], ("gamma", "beta", "moving_mean", "moving_var"), strict=True)
    ]
    same_dtype([data, *params], "data and the batch_norm parameters")
    return data


_EPSILON = AttrSpec("float", 1e-5, "added to the variance")

define_op(
    "batch_norm",
    inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    attrs={"axis": AttrSpec("int", 1, "the channel axis"), "epsilon": _EPSILON},
    infer=_batch_norm_infer,
    compute=batch_norm_compute,
    pattern=BROADCAST,
    doc="Inference batch norm: (x - moving_mean) / sqrt(moving_var + eps) * gamma + beta.",
)


def _layer_norm_infer(types, attrs):
    data = _float_input(types[0], "data")
    rank = known_rank(data, "data")
    if not attrs["axes"]:
        raise TypeInferenceError("axes must name at least one axis")
    axes = sorted(normalize_axes(attrs["axes"], rank))
    dims = tuple(data.shape[a] for a in axes)
    params = [
        _param_input(t, what, dims, f"the normalized dims of axes {axes}")
        for t, what in zip(types[1:], ("gamma", "beta"), strict=False)
    ]
    same_dtype([data, *params], "data, gamma and beta")
    return data


define_op(
    "layer_norm",
    inputs=("data", "gamma?", "beta?"),
    attrs={"axes": AttrSpec("ints", (-1,), "the axes normalized together"), "epsilon": _EPSILON},
    infer=_layer_norm_infer,
    compute=layer_norm_compute,
    pattern=OPAQUE,
    doc="Layer norm over axes, then an optional elementwise scale gamma and shift beta.",
)


def _group_norm_infer(types, attrs):
    data = _float_input(types[0], "data")
    rank = known_rank(data, "data")
    if rank < 2:
        raise TypeInferenceError(f"data must have rank >= 2 (batch, channels, ...), got {data}")
    axis = normalize_axis(attrs["channel_axis"], rank, "channel_axis")
    if axis == 0:
        raise TypeInferenceError("channel_axis must not be 0, the batch axis")
    groups = attrs["num_groups"]
    if groups < 1:
        raise TypeInferenceError(f"num_groups must be >= 1, got {groups}")
    c = data.shape[axis]
    if isinstance(c, int) and c % groups:
        raise TypeInferenceError(f"{c} channels are not divisible by num_groups={groups}")
    params = [
        _param_input(t, what, (c,), "one per channel")
        for t, what in zip(types[1:], ("gamma", "beta"), strict=False)
    ]
    same_dtype([data, *params], "data, gamma and beta")
    return data


define_op(
    "group_norm",
    inputs=("data", "gamma?", "beta?"),
    attrs={
        "num_groups": AttrSpec("int", doc="channel groups normalized separately"),
        "channel_axis": AttrSpec("int", 1, "the channel axis (axis 0 is the batch)"),
        "epsilon": _EPSILON,
    },
    infer=_group_norm_infer,
    compute=group_norm_compute,
    pattern=OPAQUE,
    doc="Group norm: each group of channels normalized over it and all non-batch dims.",
)


# ----- softmax ----------------------------------------------------------------------------


def _softmax_infer(types, attrs):
    data = _float_input(types[0], "data")
    if data.shape is not None:
        normalize_axis(attrs["axis"], len(data.shape))
    return data


for _name, _log in (("softmax", False), ("log_softmax", True)):
    define_op(
        _name,
        inputs=("data",),
        attrs={"axis": AttrSpec("int", -1, "the axis normalized")},
        infer=_softmax_infer,
        compute=lambda v, a, _log=_log: softmax64(v[0], a["axis"], _log).astype(v[0].dtype),
        pattern=OPAQUE,
        doc=f"{'Log of the s' if _log else 'S'}oftmax along an axis (max-shifted for stability).",
    )


# ----- attention --------------------------------------------------------------------------


def _sdpa_infer(types, attrs):
    q, k, v = (
        _float_input(t, what) for t, what in zip(types[:3], ("query", "key", "value"), strict=True)
    )
    dtype = same_dtype([q, k, v], "query, key and value")
    for t, what in ((q, "query"), (k, "key"), (v, "value")):
        if known_rank(t, what) < 2:
            raise TypeInferenceError(f"{what} must have rank >= 2 (..., length, features), got {t}")
    (qlen, e), (klen, ek), (vlen, ev) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    if dims_equal(e, ek) is False:
        raise TypeInferenceError(
            f"query {q} has {dim_str(e)} features but key {k} has {dim_str(ek)}"
        )
    if dims_equal(klen, vlen) is False:
        raise TypeInferenceError(
            f"key {k} has {dim_str(klen)} positions but value {v} has {dim_str(vlen)}"
        )
    try:
        scores_batch = broadcast_shapes(q.shape[:-2], k.shape[:-2])
        batch = broadcast_shapes(scores_batch, v.shape[:-2])
    except TypeInferenceError:
        raise TypeInferenceError(
            f"batch dims of query {q}, key {k} and value {v} do not broadcast"
        ) from None
    if len(types) > 3:
        mask = tensor_input(types[3], "attn_mask")
        if mask.dtype is not DType.bool and mask.dtype is not dtype:
            raise TypeInferenceError(
                f"attn_mask must be bool (True = attend) or {dtype} (added to the scores), "
                f"got {mask}"
            )
        scores = (*scores_batch, qlen, klen)
        mrank = known_rank(mask, "attn_mask")
        fits = mrank <= len(scores) and all(
            d == 1 or dims_equal(d, s) is not False
            for d, s in zip(mask.shape[::-1], scores[::-1], strict=False)
        )
        if not fits:
            raise TypeInferenceError(
                f"attn_mask {mask} does not broadcast to the attention scores {_shape_text(scores)}"
            )
    if attrs["scale"] is not None and not attrs["scale"] > 0:
        raise TypeInferenceError(f"scale must be positive, got {attrs['scale']}")
    return TensorType((*batch, qlen, ev), dtype)


define_op(
    "scaled_dot_product_attention",
    inputs=("query", "key", "value", "attn_mask?"),
    attrs={
        "is_causal": AttrSpec("bool", False, "attend only to keys at or before the query"),
        "scale": AttrSpec("float", None, "score scale; none = 1/sqrt(features)"),
    },
    infer=_sdpa_infer,
    compute=sdpa_compute,
    pattern=OPAQUE,
    doc="softmax(query @ key^T * scale + mask) @ value over (..., length, features), like torch.",
)


# ----- resize -----------------------------------------------------------------------------


_RESIZE_MODES = ("nearest", "linear", "cubic")
_COORDINATE_MODES = (
    "half_pixel",
    "half_pixel_symmetric",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
)
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_check(types: list[Type], attrs: Attrs) -> TensorType:
    data = tensor_input(types[0], "data")
    for name, allowed in (
        ("mode", _RESIZE_MODES),
        ("coordinate_transformation_mode", _COORDINATE_MODES),
        ("nearest_mode", _NEAREST_MODES),
    ):
        if attrs[name] not in allowed:
            raise TypeInferenceError(
                f"{name} must be one of {', '.join(allowed)}, got {attrs[name]!r}"
            )
    if attrs["mode"] != "nearest" and not data.dtype.is_float:
        raise TypeInferenceError(f"{attrs['mode']} resize needs floating-point data, got {data}")
    rank = known_rank(data, "data")
    if len(attrs["sizes"]) != rank:
        raise TypeInferenceError(
            f"sizes must give all {rank} dims of data {data}, got {_shape_text(attrs['sizes'])}"
        )
    scales = attrs["scales"]
    if scales is not None and (len(scales) != rank or any(s <= 0 for s in scales)):
        raise TypeInferenceError(f"scales must be {rank} positive numbers, got {list(scales)}")
    return data


def _resize_infer(types: list[Type], attrs: Attrs) -> Type:
    """The sizes as the result's dims; a '?' size (learnt when the op runs) as what the
    input's dim gives where that is known in dims (``(3*h) // 2`` of ``h`` by 1.5: the input
    named at run time, see legalize-ops' name_dynamic_dims), else '?'."""
    data = _resize_check(types, attrs)
    scales = attrs["scales"]
    dims = [
        out
        if out is not ANY
        else (d if scales is None or d is ANY else scaled_dim(d, scales[axis]))
        for axis, (d, out) in enumerate(zip(data.shape, attrs["sizes"], strict=True))
    ]
    return data.with_shape(tuple(dims))


define_op(
    "resize",
    inputs=("data",),
    attrs={
        "sizes": AttrSpec(
            "dims",
            doc="the result shape (every dim of data); a '?' is floor(size * scale) of the "
            "value when run (its size where no scales are given)",
        ),
        "scales": AttrSpec(
            "floats", None, "scale per dim for the coordinate transform; none = sizes / input"
        ),
        "mode": AttrSpec(
            "str", "nearest", "nearest, linear or cubic (n-linear / n-cubic over every dim)"
        ),
        "cubic_coeff_a": AttrSpec("float", -0.75, "the cubic kernel's coefficient (torch: -0.75)"),
        "exclude_outside": AttrSpec(
            "bool", False, "cubic: taps outside the input weigh 0 (else the edge repeats)"
        ),
        "coordinate_transformation_mode": AttrSpec(
            "str",
            "half_pixel",
            f"how result positions map to input ones: {', '.join(_COORDINATE_MODES)}",
        ),
        "nearest_mode": AttrSpec(
            "str", "round_prefer_floor", f"rounding: {', '.join(_NEAREST_MODES)}"
        ),
    },
    infer=_resize_infer,
    compute=resize_compute,
    pattern=OPAQUE,
    doc="Resize every dim by nearest, linear or cubic interpolation, with ONNX Resize's "
    "coordinate modes.",
)
