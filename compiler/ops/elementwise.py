"""Elementwise ops: unary math, binary arithmetic and comparisons with numpy broadcasting,
logical ops, where, cast, clip."""

from __future__ import annotations

import numpy as np
from scipy import special

from compiler.ir.op_registry import (
    BROADCAST,
    ELEMWISE,
    AttrSpec,
    TypeInferenceError,
    define_op,
)
from compiler.ir.shape_inference import broadcast_shapes, same_dtype, tensor_input
from compiler.ir.types import DType, TensorType, is_float_dtype

# ----- unary ------------------------------------------------------------------------------


def _unary_infer(kind: str):
    def infer(types, attrs):
        (t,) = types
        t = tensor_input(t)
        if kind == "float" and not t.dtype.is_float:
            raise TypeInferenceError(f"needs a floating-point input, got {t.dtype}")
        if kind == "bool" and t.dtype is not DType.bool:
            raise TypeInferenceError(f"needs a bool input, got {t.dtype}")
        if kind == "signed" and (t.dtype is DType.bool or t.dtype.is_unsigned):
            raise TypeInferenceError(f"needs a signed input, got {t.dtype}")
        return t

    return infer


def _same_dtype_result(fn):
    def compute(values, attrs):
        (x,) = values
        return np.asarray(fn(x), dtype=x.dtype)

    return compute


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    xf = x.astype(np.float64)
    if approximate == "tanh":
        y = 0.5 * xf * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (xf + 0.044715 * xf**3)))
    else:
        y = 0.5 * xf * (1.0 + special.erf(xf / np.sqrt(2.0)))
    return y.astype(x.dtype)


def _float_compute(fn):
    """Compute in float64 (or the input's own type for float64) and round to the input dtype,
    so float16/bfloat16 results are correctly rounded, like a framework's reference kernel."""

    def compute(values, attrs):
        (x,) = values
        return np.asarray(fn(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)

    return compute


_FLOAT_UNARY = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "tanh": np.tanh,
    "sigmoid": lambda x: special.expit(x),
    "erf": special.erf,
    "sin": np.sin,
    "cos": np.cos,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,  # round half to even, like torch.round and ONNX Round
    "reciprocal": lambda x: 1.0 / x,
    "silu": lambda x: x * special.expit(x),
    "softplus": lambda x: np.logaddexp(0.0, x),
    "log1p": np.log1p,
    "expm1": np.expm1,
}

for _name, _fn in _FLOAT_UNARY.items():
    if _fn is None:
        continue
    define_op(
        _name,
        inputs=("x",),
        infer=_unary_infer("float"),
        compute=_float_compute(_fn),
        pattern=ELEMWISE,
        doc=f"Elementwise {_name} of a floating-point tensor.",
    )

define_op(
    "gelu",
    inputs=("x",),
    attrs={"approximate": AttrSpec("str", "none", "'none' (erf) or 'tanh'")},
    infer=_unary_infer("float"),
    compute=lambda v, a: _gelu(v[0], a["approximate"]),
    pattern=ELEMWISE,
    doc="Gaussian error linear unit, exact (erf) or with the tanh approximation.",
)

_ANY_UNARY = {
    "neg": (np.negative, "signed"),
    "abs": (np.abs, "signed"),
    "sign": (np.sign, "signed"),
    "relu": (lambda x: np.maximum(x, np.zeros((), x.dtype)), "any"),
    "identity": (lambda x: x, "any"),
    "logical_not": (np.logical_not, "bool"),
}
for _name, (_fn, _kind) in _ANY_UNARY.items():
    define_op(
        _name,
        inputs=("x",),
        infer=_unary_infer(_kind),
        compute=_same_dtype_result(_fn),
        pattern=ELEMWISE,
        doc=f"Elementwise {_name}.",
    )


def _isnan_infer(types, attrs):
    t = _unary_infer("float")(types, attrs)
    return t.with_dtype(DType.bool)


define_op(
    "isnan",
    inputs=("x",),
    infer=_isnan_infer,
    compute=lambda v, a: np.isnan(v[0].astype(np.float64)),
    pattern=ELEMWISE,
    doc="Whether each element is NaN.",
)


def _leaky_relu(values, attrs):
    (x,) = values
    xf = x.astype(np.float64)
    return np.where(xf >= 0, xf, xf * attrs["alpha"]).astype(x.dtype)


define_op(
    "leaky_relu",
    inputs=("x",),
    attrs={"alpha": AttrSpec("float", 0.01, "slope for negative inputs")},
    infer=_unary_infer("float"),
    compute=_leaky_relu,
    pattern=ELEMWISE,
    doc="x where x >= 0, alpha * x elsewhere.",
)


def _clip_compute(values, attrs):
    (x,) = values
    lo, hi = attrs["min"], attrs["max"]
    y = x
    integer = x.dtype.kind in "iub"
    if lo is not None:
        y = np.maximum(y, np.asarray(np.ceil(lo) if integer else lo).astype(x.dtype))
    if hi is not None:
        y = np.minimum(y, np.asarray(np.floor(hi) if integer else hi).astype(x.dtype))
    return np.asarray(y, dtype=x.dtype)


define_op(
    "clip",
    inputs=("x",),
    attrs={
        "min": AttrSpec("float", None, "lower bound, or none"),
        "max": AttrSpec("float", None, "upper bound, or none"),
    },
    infer=_unary_infer("any"),
    compute=_clip_compute,
    pattern=ELEMWISE,
    doc="Clamp each element into [min, max] (relu6 is clip(0, 6)).",
)


def _cast_infer(types, attrs):
    (t,) = types
    return tensor_input(t).with_dtype(attrs["dtype"])


# the signed width a float -> integer cast converts through, as torch's CPU kernels do on
# x86-64 (cvttss2si / cvttsd2si): 32 bits for int8, int16 and uint16; 64 for uint8 (torch
# casts to uint8 through int64, c10's static_cast_with_inter_type), uint32 and the 64-bit types
_THROUGH = {np.dtype(t): 32 for t in (np.int8, np.int16, np.uint16, np.int32)}
_THROUGH.update({np.dtype(t): 64 for t in (np.uint8, np.uint32, np.int64, np.uint64)})


def _indefinite(t: np.ndarray, bits: int) -> np.ndarray:
    """Truncated floats `t` as `bits`-bit signed ints, INT_MIN where out of range or NaN."""
    lo = -(2.0 ** (bits - 1))
    fits = (t >= lo) & (t < -lo)  # (NaN is False)
    return np.where(fits, t, lo).astype(f"int{bits}")


def float_to_int(x: np.ndarray, target: np.dtype) -> np.ndarray:
    """Float array `x` cast to integer dtype `target` (int8 to uint64) by the rule of
    `cast`, computed explicitly (numpy's own cast is the platform's where out of range)."""
    if x.dtype not in (np.float32, np.float64):  # float16, bfloat16, float8: exact in float32
        x = x.astype(np.float32)
    info = np.iinfo(target)
    with np.errstate(invalid="ignore"):  # (a signalling NaN flags it in min and trunc)
        # every truncation in range (a NaN fails both tests): numpy's cast truncates exactly
        if x.size == 0 or info.min - 1 < float(x.min()) and float(x.max()) < info.max + 1:
            return x.astype(target)
        t = np.trunc(x)
    if target != np.uint64:
        return _indefinite(t, _THROUGH[target]).astype(target)  # integer casts keep low bits
    big = t >= 2.0**63  # [2**63, 2**64) exactly, 0 beyond; below as int64, then wrapped
    r = _indefinite(np.where(big, 0.0, t), 64).view(np.uint64)
    if big.any():
        r[big] = np.where(t[big] < 2.0**64, t[big], 0.0).astype(np.uint64)
    return r


def _cast_compute(values, attrs):
    (x,) = values
    target = np.dtype(attrs["dtype"].numpy)
    if is_float_dtype(x.dtype) and target in _THROUGH:
        return float_to_int(x, target)
    return x.astype(target)


define_op(
    "cast",
    inputs=("x",),
    attrs={"dtype": AttrSpec("dtype", doc="the target dtype")},
    infer=_cast_infer,
    compute=_cast_compute,
    pattern=ELEMWISE,
    doc="Convert each element to another dtype. Floats to integers truncate toward zero; "
    "NaN, infinities and values out of range give what torch eager gives on x86-64: int32 / "
    "int64 give INT_MIN; int8, int16 and uint16 convert through int32 (INT_MIN where it does "
    "not fit) and keep the low bits, uint8 and uint32 through int64 likewise, so NaN gives 0, "
    "300.0 gives 44 as int8, -1.0 gives 255 as uint8; uint64 takes [2**63, 2**64) exactly, "
    "gives 0 from 2**64 up (inf too), and below converts as int64 and wraps (NaN gives 2**63). "
    "(To uint32 that is torch's scalar loop; its vectorised loops differ for NaN, -inf and "
    "values below -2**31 or from 2**32 up: 2**31 for NaN.) To a float8 / float4 type floats "
    "round to nearest even without saturating, like ml_dtypes.",
)

# ----- binary -----------------------------------------------------------------------------


def _binary_infer(kind: str):
    def infer(types, attrs):
        a, b = (tensor_input(t, w) for t, w in zip(types, ("lhs", "rhs")))
        dtype = same_dtype([a, b])
        if kind == "bool" and dtype is not DType.bool:
            raise TypeInferenceError(f"needs bool inputs, got {dtype}")
        if kind == "numeric" and dtype is DType.bool:
            raise TypeInferenceError("needs numeric inputs, got bool")
        shape = broadcast_shapes(a.shape, b.shape)
        return TensorType(shape, DType.bool if kind in ("compare", "bool") else dtype)

    return infer


def _check_int_divisor(a: np.ndarray, b: np.ndarray) -> None:
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        # integer division truncates toward zero (C, ONNX Div); numpy floors. Exact in ints.
        _check_int_divisor(a, b)
        q = np.floor_divide(a, b)
        q = q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
        return q.astype(a.dtype)
    return np.true_divide(a, b).astype(a.dtype)


def _floor_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check_int_divisor(a, b)
    return np.floor_divide(a, b).astype(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if is_float_dtype(a.dtype):
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)
    return np.power(a, b).astype(a.dtype)


def _mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _check_int_divisor(a, b)
    return np.mod(a, b).astype(a.dtype)  # sign follows the divisor, like torch.remainder


_BINARY = {
    "add": (np.add, "numeric"),
    "subtract": (np.subtract, "numeric"),
    "multiply": (np.multiply, "numeric"),
    "divide": (_divide, "numeric"),
    "floor_divide": (_floor_divide, "numeric"),
    "mod": (_mod, "numeric"),
    "power": (_power, "numeric"),
    "maximum": (np.maximum, "any"),
    "minimum": (np.minimum, "any"),
    "equal": (np.equal, "compare"),
    "not_equal": (np.not_equal, "compare"),
    "less": (np.less, "compare"),
    "less_equal": (np.less_equal, "compare"),
    "greater": (np.greater, "compare"),
    "greater_equal": (np.greater_equal, "compare"),
    "logical_and": (np.logical_and, "bool"),
    "logical_or": (np.logical_or, "bool"),
    "logical_xor": (np.logical_xor, "bool"),
}


def _binary_compute(fn, kind):
    def compute(values, attrs):
        a, b = values
        out = fn(a, b)
        if kind in ("compare", "bool"):
            return np.asarray(out, dtype=np.bool_)
        return np.asarray(out, dtype=a.dtype)

    return compute


for _name, (_fn, _kind) in _BINARY.items():
    define_op(
        _name,
        inputs=("lhs", "rhs"),
        infer=_binary_infer(_kind),
        compute=_binary_compute(_fn, _kind),
        pattern=BROADCAST,
        doc=f"Elementwise {_name} with numpy broadcasting; both inputs share one dtype.",
    )


def _where_infer(types, attrs):
    c, a, b = (tensor_input(t, w) for t, w in zip(types, ("condition", "x", "y")))
    if c.dtype is not DType.bool:
        raise TypeInferenceError(f"condition must be bool, got {c.dtype}")
    dtype = same_dtype([a, b], "x and y")
    return TensorType(broadcast_shapes(c.shape, a.shape, b.shape), dtype)


define_op(
    "where",
    inputs=("condition", "x", "y"),
    infer=_where_infer,
    compute=lambda v, a: np.where(v[0], v[1], v[2]).astype(v[1].dtype),
    pattern=BROADCAST,
    doc="x where condition holds, y elsewhere, with broadcasting (masking).",
)
