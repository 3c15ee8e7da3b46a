"""fold-qdq: rewrite the float ops a QDQ model wraps in ``dequantize`` -> op -> ``quantize``
into integer arithmetic on the quantized values, so the model computes what an integer
kernel would (TVM's QNN canonicalization, onnxruntime's QDQ fusions).

``quantize(op(dequantize(x, sx, zx), dequantize(w, sw, zw)), sy, zy)`` becomes

- ``conv2d``: ``acc = conv2d(x - zx, w - zw) + bias_q`` on the integer values, then
  requantized: ``quantize(acc * (sx * sw / sy), 1, zy)``. The IR's convolution takes floats:
  it runs in f32 when the constant weights bound every partial sum below 2^24 (exact),
  else in f64 (exact for any i32 accumulator), and is cast back to i32;
- ``matmul`` / ``linear``: the same with ``matmul(x - zx, w - zw, out_dtype=i32)`` (a
  linear's weight transposed, its bias added);
- ``add``: both inputs rescaled to the output scale, ``(a - za) * sa / sy + (b - zb) * sb /
  sy`` requantized;
- ``relu``, ``max_pool2d`` and data movement (reshape, flatten, permute_dims, squeeze,
  unsqueeze, identity) with the same scale and zero point in and out: the op on the
  quantized values (``relu`` as ``maximum(x, zx)``), exact; ``quantize(dequantize(x))`` with
  equal parameters is ``x``.

The bias is the int32 tensor a QDQ model dequantizes with scale ``sx * sw`` (used as is), or
a float constant rounded to that scale. Scales and zero points must be constants (or ops on
constants); a per-axis weight scale is supported along the output channels, the input's
must be per tensor. Anything else is left as it is. Rounding differs from the float path
only where a value is within float error of a rounding tie: results agree within one
quantization step. Run it before fold-constant (which would fold the weights' dequantize
into float constants): ``fold-qdq,default,...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from compiler.ir.nodes import Call, Constant, Expr, Module
from compiler.ir.op_registry import TypeInferenceError, get_op
from compiler.ir.types import DType, TensorType
from compiler.ops.quantize import quant_range
from compiler.passes.dead_code_elimination import eliminate_dead_bindings
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_module

I32, F32, F64 = DType.int32, DType.float32, DType.float64

# ops that commute with dequantize (same scale and zero point in and out): moved to the
# quantized values unchanged
_MOVEMENT = {"reshape", "flatten", "permute_dims", "squeeze", "unsqueeze", "identity",
             "max_pool2d"}  # fmt: skip
_MAX_CONST_ELEMENTS = 1 << 16  # scales and zero points evaluated at compile time


def _op(op: str, *args: Expr, **attrs) -> Call:
    return Call(op, args, attrs)


def _const(e: Expr) -> np.ndarray | None:
    """The value of a constant, or of small ops on constants (a reshaped scale)."""
    if isinstance(e, Constant):
        return e.data
    if not isinstance(e, Call) or not isinstance(e.ty, TensorType):
        return None
    numel = e.ty.numel
    if not isinstance(numel, int) or numel > _MAX_CONST_ELEMENTS:
        return None
    values = [_const(a) for a in e.args]
    if any(v is None for v in values):
        return None
    out = get_op(e.op).compute(values, e.attrs)
    return out if isinstance(out, np.ndarray) else None


def _dq(e: Expr):
    """(q, scale, zero point values) of a dequantize with constant parameters, else None."""
    if not (isinstance(e, Call) and e.op == "dequantize"):
        return None
    q, s, z = e.args
    sv, zv = _const(s), _const(z)
    if sv is None or zv is None or not np.all(sv > 0):
        return None
    return q, sv.astype(np.float64), zv


def _scalar(v: np.ndarray) -> bool:
    return v.size == 1


def _minus_zp(q: Expr, zp: np.ndarray) -> Expr:
    q32 = q if q.ty.dtype is I32 else _op("cast", q, dtype=I32)
    if not np.any(zp):
        return q32
    return _op("subtract", q32, Constant(zp.astype(np.int32)))


def _requantize(acc: Expr, multiplier: np.ndarray, zy: Expr) -> Call:
    real = _op("multiply", _op("cast", acc, dtype=F32), Constant(multiplier.astype(np.float32)))
    return _op("quantize", real, Constant(np.float32(1.0)), zy)


def _along(v: np.ndarray, axis: int, rank: int, size) -> np.ndarray | None:
    """A broadcast-shaped parameter as a vector along ``axis`` of a rank-``rank`` value (a
    scalar stays one); None when it varies along another axis."""
    if v.size == 1:
        return v.reshape(())
    shape = (1,) * (rank - v.ndim) + v.shape
    if len(shape) != rank or any(d != 1 for k, d in enumerate(shape) if k != axis):
        return None
    if isinstance(size, int) and shape[axis] != size:
        return None
    return v.reshape(-1)


def _bias_q(bias: Expr, real_scale: np.ndarray) -> Expr | None:
    """The bias as i32 in units of ``real_scale`` (the accumulator's scale)."""
    d = _dq(bias)
    if d is not None:
        bq, bs, bz = d
        if bq.ty.dtype is I32 and not np.any(bz):
            if np.allclose(np.broadcast_to(bs, real_scale.shape), real_scale, rtol=1e-5):
                return bq
    value = _const(bias)
    if value is None or not np.issubdtype(value.dtype, np.floating):
        return None
    with np.errstate(all="ignore"):
        q = np.rint(value.astype(np.float64) / real_scale)
    if not np.all(np.isfinite(q)) or np.any(np.abs(q) > 2**31 - 1):
        return None
    return Constant(q.astype(np.int32))


def _exact_float(xq: Expr, zx: np.ndarray, wq: Expr, zw: np.ndarray, bias: Expr | None) -> DType:
    """f32 when every partial sum of the convolution is an integer below 2^24 in magnitude
    (so f32 adds it exactly, in any order), bounded from the constant weights and the input
    dtype's range; else f64 (exact below 2^53)."""
    w, b = _const(wq), _const(bias) if bias is not None else np.zeros(1)
    if w is None or b is None:
        return F64
    try:
        lo, hi = quant_range(xq.ty.dtype)
    except TypeInferenceError:
        return F64
    zx_v = int(np.asarray(zx).reshape(()))
    x_max = max(abs(lo - zx_v), abs(hi - zx_v))
    w32 = w.astype(np.int64) - np.asarray(zw, np.int64)
    per_channel = np.abs(w32).reshape(w32.shape[0], -1).sum(axis=1) * x_max
    bound = per_channel.max(initial=0) + np.abs(b.astype(np.int64)).max(initial=0)
    return F32 if bound < 2**24 else F64


def _fold_conv(f: Call, sy: np.ndarray, zy: Expr) -> Expr | None:
    if f.attrs.get("data_layout") != "NCHW" or f.attrs.get("kernel_layout") != "OIHW":
        return None
    dx, dw = _dq(f.args[0]), _dq(f.args[1])
    if dx is None or dw is None:
        return None
    (xq, sx, zx), (wq, sw, zw) = dx, dw
    out_c = f.ty.shape[1]
    sw_vec = _along(sw, 0, 4, out_c)
    if not (_scalar(sx) and _scalar(zx)) or sw_vec is None:
        return None
    real = (sx.reshape(()) * sw_vec).astype(np.float64)
    b = None
    if len(f.args) > 2:
        b = _bias_q(f.args[2], np.broadcast_to(real, (out_c,)))
        if b is None:
            return None
    ct = _exact_float(xq, zx, wq, zw, b)
    args = [_op("cast", _minus_zp(xq, zx), dtype=ct), _op("cast", _minus_zp(wq, zw), dtype=ct)]
    if b is not None:
        args.append(_op("cast", b, dtype=ct))
    attrs = {k: v for k, v in f.attrs.items() if k != "out_dtype"}
    acc = _op("cast", _op("conv2d", *args, **attrs), dtype=I32)
    multiplier = real / sy.reshape(())
    if multiplier.ndim:
        multiplier = multiplier.reshape(1, -1, 1, 1)
    return _requantize(acc, multiplier, zy)


def _fold_matmul(f: Call, sy: np.ndarray, zy: Expr) -> Expr | None:
    da, db = _dq(f.args[0]), _dq(f.args[1])
    if da is None or db is None or f.ty.shape is None:
        return None
    (aq, sa, za), (bq, sb, zb) = da, db
    if not (_scalar(sa) and _scalar(za)) or bq.ty.shape is None:
        return None
    rb = len(bq.ty.shape)
    if f.op == "linear":  # weight (out, in): per output channel along axis 0
        sb_vec = _along(sb, 0, rb, bq.ty.shape[0]) if rb == 2 else None
    elif f.attrs["transpose_b"]:  # rhs (..., out, in): per output channel along axis -2
        sb_vec = _along(sb, rb - 2, rb, bq.ty.shape[-2])
    else:
        sb_vec = _along(sb, rb - 1, rb, bq.ty.shape[-1]) if rb >= 2 else _along(sb, 0, 1, 1)
    if sb_vec is None:
        return None
    real = (sa.reshape(()) * sb_vec).astype(np.float64)
    a32, b32 = _minus_zp(aq, za), _minus_zp(bq, zb)
    if f.op == "linear":  # as matmul + add (what decompose-ops makes of it)
        acc = _op("matmul", a32, _op("permute_dims", b32, axes=[1, 0]), out_dtype=I32)
        if len(f.args) > 2:
            b = _bias_q(f.args[2], np.broadcast_to(real, (f.ty.shape[-1],)))
            if b is None:
                return None
            acc = _op("add", acc, b)
    else:
        acc = _op("matmul", a32, b32, out_dtype=I32, transpose_b=f.attrs["transpose_b"])
    return _requantize(acc, real / sy.reshape(()), zy)


def _fold_add(f: Call, sy: np.ndarray, zy: Expr) -> Expr | None:
    da, db = _dq(f.args[0]), _dq(f.args[1])
    if da is None or db is None:
        return None
    terms = []
    for q, s, z in (da, db):
        terms.append(
            _op(
                "multiply",
                _op("cast", _minus_zp(q, z), dtype=F32),
                Constant((s / sy).astype(np.float32)),
            )
        )
    return _op("quantize", _op("add", *terms), Constant(np.float32(1.0)), zy)


def _fold_movement(f: Expr, sy: np.ndarray, zy_v: np.ndarray, dtype: DType) -> Expr | None:
    """``f`` (a chain of movement ops over a dequantize with the output's parameters) on the
    quantized values, else None."""
    chain: list[Call] = []
    e = f
    while isinstance(e, Call) and (e.op in _MOVEMENT or e.op == "relu") and len(e.args) >= 1:
        if e.op != "reshape" and len(e.args) != 1:
            return None
        chain.append(e)
        e = e.args[0]
    d = _dq(e)
    if d is None:
        return None
    q, s, z = d
    if q.ty.dtype is not dtype or not (_scalar(s) and _scalar(z) and _scalar(sy)):
        return None
    if not (
        _scalar(zy_v) and s.reshape(()) == sy.reshape(()) and z.reshape(()) == zy_v.reshape(())
    ):
        return None
    out = q
    for c in reversed(chain):
        if c.op == "relu":
            out = _op("maximum", out, Constant(np.asarray(z.reshape(()), dtype.numpy)))
        else:
            out = Call(c.op, (out, *c.args[1:]), c.attrs)
    return out


def fold_quantize(node: Call) -> Expr | None:
    """The integer form of ``quantize(op(dequantize ...))``, or None to leave it."""
    f, sy_e, zy = node.args
    sy, zy_v = _const(sy_e), _const(zy)
    if sy is None or zy_v is None or not np.all(sy > 0):
        return None
    sy = sy.astype(np.float64)
    if not isinstance(f, Call):
        return None
    if f.op in _MOVEMENT or f.op in ("relu", "dequantize"):
        return _fold_movement(f, sy, zy_v, node.ty.dtype)
    if not _scalar(sy) or not _scalar(zy_v):
        return None
    if f.op == "conv2d":
        return _fold_conv(f, sy, zy)
    if f.op in ("matmul", "linear"):
        return _fold_matmul(f, sy, zy)
    if f.op == "add":
        return _fold_add(f, sy, zy)
    return None


@register_pass
@dataclass(frozen=True)
class FoldQDQ(Pass):
    """Rewrite dequantize -> conv2d / matmul / linear / add / relu / max_pool2d / reshape ->
    quantize into integer arithmetic on the quantized values (see the module docstring)."""

    name: ClassVar[str] = "fold-qdq"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        def rule(node: Expr) -> Expr | None:
            if isinstance(node, Call) and node.op == "quantize":
                return fold_quantize(node)
            return None

        out = rewrite_module(module, lambda name, fn: rule, self.name)
        if out is module:
            return module
        functions = {
            name: fn if fn is module.functions.get(name) else eliminate_dead_bindings(fn)
            for name, fn in out.functions.items()
        }
        return out.replace(functions=functions)
