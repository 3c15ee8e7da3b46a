"""The type of every value of an ONNX model, for the graph view and the text.

Three sources, each asked only for the values the ones before left unknown:

1. what the model declares (its inputs, outputs and `value_info`), then onnx's shape
   inference with data propagation (so a `Reshape` to a shape a small initializer holds is
   known);
2. ONNX Runtime's symbolic shape inference
   (`onnxruntime.tools.symbolic_shape_infer.SymbolicShapeInference`), which knows
   onnxruntime's contrib ops (`com.microsoft::SkipLayerNormalization`, `FusedMatMul`,
   `Attention`, ...) that onnx's does not; it stops at the first op it does not know, and
   what it found up to there is kept;
3. for ops neither knows (ORT's NCHWc layout ops, `com.microsoft.nchwc::Conv`), when every
   input of the model has a static shape: the shapes of the values of one run of the model in
   onnxruntime with its optimizations off, on zeros, in a child process under a memory budget
   (`compiler.opaque.run_onnx_model`): the shapes ORT gives those values. Only a model
   whose ops may all run untrusted (`explorer.trust.onnx_refusals`) or are ORT's layout ops
   (`LAYOUT_OPS`, which ORT itself writes) is run.

A type is `(text, shape, dtype)`: `f32[2, 8, 32]`; '?' for a dim or a type nothing knows.
A model is untrusted: inference that fails leaves the values it did not type unknown.
"""

from __future__ import annotations

from typing import Any

import numpy as np

FILLED_ELEMENTS = 4096  # initializers this small are given their data for inference (shapes)
RUN_BUDGET = 1 << 30  # bytes the values of a shapes run may take in its child process

# ORT's NCHWc layout ops (onnxruntime/core/graph/contrib_ops/nchwc_schema_defs.cc): pure
# computations that ORT's NchwcTransformer writes, in a domain the allowlist does not name
LAYOUT_DOMAIN = "com.microsoft.nchwc"
LAYOUT_OPS = frozenset(
    {
        "ReorderInput",
        "ReorderOutput",
        "Conv",
        "MaxPool",
        "AveragePool",
        "GlobalMaxPool",
        "GlobalAveragePool",
        "Upsample",
    }
)

Type = tuple[str, tuple | None, str | None]
UNKNOWN: Type = ("?", None, None)

_DTYPES = {
    1: "f32",
    2: "u8",
    3: "i8",
    4: "u16",
    5: "i16",
    6: "i32",
    7: "i64",
    8: "str",
    9: "bool",
    10: "f16",
    11: "f64",
    12: "u32",
    13: "u64",
    14: "c64",
    15: "c128",
    16: "bf16",
}


def dtype_name(elem_type: int) -> str:
    """`f32` of ONNX's element type 1 (`dtype17` for one this table does not name)."""
    return _DTYPES.get(int(elem_type), f"dtype{int(elem_type)}")


def _dim_text(d: Any) -> str:
    s = str(d)
    return s if len(s) <= 40 else s[:39] + "…"


def type_text(dtype: str, shape: tuple) -> str:
    return f"{dtype}[{', '.join(str(d) for d in shape)}]"


def type_of_vi(vi: Any) -> Type:
    """The type of a ValueInfoProto (a tensor type, else its kind)."""
    t = vi.type
    if not t.HasField("tensor_type"):
        kind = t.WhichOneof("value")
        return (kind or "?"), None, None
    tt = t.tensor_type
    dt = dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return f"{dt}[...]", None, dt
    dims: list = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(_dim_text(d.dim_param))
        else:
            dims.append("?")
    return type_text(dt, tuple(dims)), tuple(dims), dt


def known(t: Type | None) -> int:
    """How much a type says: 0 nothing, 1 a dtype, 2 a rank, 3 every dim (a number or a
    name)."""
    if t is None or t[2] is None:
        return 0
    if t[1] is None:
        return 1
    return 3 if "?" not in t[1] else 2


def _merge(types: dict[str, Type], found: dict[str, Type]) -> None:
    for name, t in found.items():
        if known(t) > known(types.get(name)):
            types[name] = t


def _unknown(types: dict[str, Type], produced: set[str]) -> set[str]:
    return {v for v in produced if known(types.get(v)) < 3}


def _for_inference(model: Any, weights: dict[str, np.ndarray]) -> Any:
    """A copy of `model` (a skeleton: initializers without data) whose small initializers
    hold their data (the shapes a Reshape or an Expand reads); big ones keep dims and dtype."""
    import onnx
    from onnx import numpy_helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        arr = weights.get(t.name)
        del t.external_data[:]
        t.ClearField("data_location")
        if arr is not None and arr.size <= FILLED_ELEMENTS:
            t.CopyFrom(numpy_helper.from_array(np.asarray(arr), t.name))
    return m


def _onnx_inference(model: Any) -> dict[str, Type]:
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # a model onnx cannot infer (a bad file): nothing from it
        return {}
    return {vi.name: type_of_vi(vi) for vi in inferred.graph.value_info}


def _ort_inference(model: Any) -> dict[str, Type]:
    """What ORT's symbolic shape inference finds before the first op it does not know (its
    loop, run here: its `infer_shapes` raises on an incomplete model and writes a file)."""
    import logging

    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:
        return {}
    log = logging.getLogger("onnxruntime.tools.symbolic_shape_infer")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        sym = SymbolicShapeInference(2**31 - 1, True, False, 0)
        sym._preprocess(model)
        for _ in range(8):  # its loop runs again after a merge of symbolic dims; a bound
            if not sym.run_:
                break
            sym._infer_impl()
        values = dict(sym.known_vi_)
    except Exception:  # an op or a model it cannot read: what it had found
        values = dict(getattr(locals().get("sym"), "known_vi_", None) or {})
    finally:
        log.setLevel(level)
    out = {}
    for name, vi in values.items():
        try:
            out[name] = type_of_vi(vi)
        except Exception:  # a value info it left half-made
            continue
    return out


def _run_shapes(model: Any, weights: dict[str, np.ndarray], types: dict[str, Type]) -> dict:
    """The values' types in one run on zeros (see the module docstring); {} when an input's
    shape is not static or onnxruntime cannot run the model."""
    import onnx
    from onnx import numpy_helper

    from compiler.opaque import run_onnx_model
    from explorer.onnxruntime.check import exposed
    from explorer.trust import onnx_refusals

    layout = {f"{LAYOUT_DOMAIN}::{op}" for op in LAYOUT_OPS}
    if set(onnx_refusals(model)) - layout:
        return {}  # an op that may not run untrusted: those values stay unknown
    inits = {t.name for t in model.graph.initializer}
    feeds = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = types.get(vi.name, UNKNOWN)
        elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
        if known(t) < 3 or not all(isinstance(d, int) for d in t[1]) or not elem:
            return {}
        try:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        except Exception:  # a dtype numpy has no name for
            return {}
        if np.prod(t[1], dtype=np.int64) * np.dtype(dtype).itemsize > RUN_BUDGET:
            return {}
        feeds.append(np.zeros(t[1], dtype=dtype))
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for t in m.graph.initializer:
        if t.name in weights:
            t.CopyFrom(numpy_helper.from_array(np.asarray(weights[t.name]), t.name))
    names = [o.name for o in m.graph.output]
    names += exposed(m, copy=False)[1]
    try:
        values, _ = run_onnx_model(
            m.SerializeToString(),
            feeds,
            what="a run for the shapes of ONNX Runtime's own ops",
            budget=RUN_BUDGET,
            optimize=False,
        )
    except Exception:  # a model ORT cannot run here: those values stay unknown
        return {}
    out = {}
    for name, v in zip(names, values, strict=False):
        a = np.asarray(v)
        dt = _NUMPY.get(a.dtype.str[1:], a.dtype.name)
        out[name] = (type_text(dt, tuple(int(d) for d in a.shape)), tuple(a.shape), dt)
    return out


_NUMPY = {
    "f4": "f32",
    "f8": "f64",
    "f2": "f16",
    "i8": "i64",
    "i4": "i32",
    "i2": "i16",
    "i1": "i8",
    "u1": "u8",
    "u2": "u16",
    "u4": "u32",
    "u8": "u64",
    "b1": "bool",
}


def value_types(
    model: Any, weights: dict[str, np.ndarray] | None = None, run: bool = True
) -> dict[str, Type]:
    """Every value's type (see the module docstring). `model`: an `onnx.ModelProto`,
    possibly a skeleton whose initializers hold no data, with `weights` their data by name
    (`run=False`: no run in onnxruntime, for a model whose weights are not all kept)."""
    g = model.graph
    weights = weights or {}
    types: dict[str, Type] = {}
    for t in g.initializer:
        shape = tuple(int(d) for d in t.dims)
        dt = dtype_name(t.data_type)
        types[t.name] = (type_text(dt, shape), shape, dt)
    _merge(types, {vi.name: type_of_vi(vi) for vi in [*g.input, *g.value_info, *g.output]})
    produced = {o for n in g.node for o in n.output if o}
    if not _unknown(types, produced):
        return types
    filled = _for_inference(model, weights)
    _merge(types, _onnx_inference(filled))
    if _unknown(types, produced):
        _merge(types, _ort_inference(filled))
    if run and _unknown(types, produced) and len(weights) == len(g.initializer):
        _merge(types, _run_shapes(model, weights, types))
    return types


__all__ = ["UNKNOWN", "Type", "dtype_name", "known", "type_of_vi", "type_text", "value_types"]
