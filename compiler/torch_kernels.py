"""torch's CPU kernels for the interpreter: an op computed by torch where the IR op's semantics
equal a torch op's (``compiler.interpret.evaluate(..., kernels="torch")``, the default when torch
is installed); numpy's reference (the op registry's ``compute``) for every other op and as the
fallback.

What a kernel here computes, against the numpy reference:

- float32 and float64 values are computed by torch in their own dtype, as torch eager computes
  them (a convolution, a norm or a reduction accumulates in float32 where the reference
  accumulates in float64 and rounds once): the values differ from the reference's as two
  float32 kernels differ, and equal torch eager's where the IR does what eager did.
- float16 / bfloat16 values are computed in float64 and rounded once, as the reference does
  (elementwise arithmetic, whose float32 result rounds to them exactly, in their own dtype).
- ``linear`` is ``matmul`` then ``add``, so it rounds exactly as its decomposition
  (``compiler.passes.rounds_as_decomposed`` holds for either kernel set). Attention is torch's
  fused ``scaled_dot_product_attention``, as eager runs it (an imported model's attention has
  eager's bits; op by op, the float32 rounding of a 2048-wide decoder's 16 layers drifted past
  the check's tolerance), and op by op as decompose-ops writes it where the fused kernel may
  not give the op's value (a query with no key left, broadcast batch dims, a result that is
  not finite); numpy's attention is op by op. The check's memo (explorer/passlens/memo.py)
  gives decompose-ops' parts of a fused attention the values they compute and its last part
  the fused value, when the two agree to rounding.
- numpy computes what torch computes differently: integer division and remainder (a division
  by zero, ``INT_MIN // -1``), casts from floats to integers (NaN, out of range: the ``cast``
  op's rule, computed explicitly; torch's is the platform's conversion), ``sign`` of
  NaN, dtypes torch lacks (unsigned beyond uint8, the float8 / int4 types), negative strides,
  attribute combinations torch has no argument for (asymmetric pooling pads, resize modes);
  an error inside torch also falls back (numpy then gives the value or its own error).

Arrays pass without a copy both ways (``torch.from_numpy``, ``Tensor.numpy()``): a weight is
never copied to reach torch (a read-only one is read as it is: no kernel writes its inputs).
torch is imported on the first kernel call, so ``import compiler`` stays light.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from compiler.ir.op_registry import Attrs
from compiler.shared_calls import shared_call, sharing, sharing_calls

KERNELS: dict[str, Callable[[list, Attrs], Any]] = {}
"""The torch kernel of each op that has one, by op name (see the module docstring)."""


class Unsupported(Exception):
    """Raised by a kernel for inputs or attributes it does not compute: numpy does."""


def torch_available() -> bool:
    """Whether torch can be imported (without importing it)."""
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


_TORCH: Any = None
_DTYPES: dict = {}  # numpy dtype -> torch dtype (bfloat16 through an int16 view)
_BF16: Any = None  # ml_dtypes.bfloat16 as a numpy dtype, when ml_dtypes is there


def _torch():
    """torch, imported and set up on first use."""
    global _TORCH, _BF16
    if _TORCH is not None:
        return _TORCH
    import torch

    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8"):
        _DTYPES[np.dtype(name)] = getattr(torch, name)
    _DTYPES[np.dtype(np.bool_)] = torch.bool
    try:
        import ml_dtypes

        _BF16 = np.dtype(ml_dtypes.bfloat16)
        _DTYPES[_BF16] = torch.bfloat16
    except ImportError:
        pass
    # torch warns once per process that a read-only array makes a tensor it could write to: no
    # kernel here writes its inputs, so that one warning is taken here, silenced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frozen = np.zeros(1, np.float32)
        frozen.flags.writeable = False
        torch.from_numpy(frozen)
    _TORCH = torch
    return torch


_ATEN: dict[str, Any] = {}


def _aten(name: str):
    """ATen op `name` ("matmul.default"), looked up once."""
    op = _ATEN.get(name)
    if op is None:
        base, overload = name.split(".")
        op = _ATEN[name] = getattr(getattr(_torch().ops.aten, base), overload)
    return op


def _shared(name: str) -> Callable:
    """ATen op `name` called through the shared calls (`shared_call`)."""
    op = _aten(name)
    return lambda *args: shared_call(op, *args)


def warm_up() -> None:
    """Import torch and run one small call of each kernel family (what the first op of each
    would otherwise wait for: torch's import, its thread pool, oneDNN's set-up)."""
    torch = _torch()
    F = torch.nn.functional
    with torch.inference_mode():
        torch.matmul(torch.ones(64, 256), torch.ones(256, 256))  # big enough for the threads
        F.conv2d(torch.ones(1, 3, 8, 8), torch.ones(4, 3, 3, 3))
        F.layer_norm(torch.ones(2, 8), [8])
        torch.softmax(torch.ones(2, 8), -1)
        F.gelu(torch.ones(8))


def compute(op: str, values: list, attrs: Attrs) -> Any:
    """The value of ``op`` by its torch kernel, or None: no kernel, or one that does not take
    these inputs (numpy then computes it)."""
    kernel = KERNELS.get(op)
    if kernel is None:
        return None
    torch = _torch()
    try:
        with torch.inference_mode():
            return kernel(values, attrs)
    except Unsupported:
        return None
    except (RuntimeError, ValueError, TypeError, IndexError):
        return None  # torch refused: the reference computes it, or says what is wrong


def kernel(*ops: str):
    """Register the decorated function as the torch kernel of ``ops``."""

    def register(fn):
        for op in ops:
            KERNELS[op] = fn
        return fn

    return register


# ----- between numpy and torch --------------------------------------------------------------


def tensor(a: Any):
    """``a`` (a numpy array) as a torch tensor on the same memory."""
    if not isinstance(a, np.ndarray):
        raise Unsupported
    td = _DTYPES.get(a.dtype)
    if td is None or not a.dtype.isnative:
        raise Unsupported
    if any(s < 0 or s % a.itemsize for s in a.strides):
        raise Unsupported  # torch has no negative strides, and no weight is copied for it
    if a.dtype == _BF16:
        return _TORCH.from_numpy(a.view(np.int16)).view(td)
    return _TORCH.from_numpy(a)


def array(t) -> np.ndarray:
    """A torch tensor's values as a numpy array on the same memory."""
    if t.dtype == _TORCH.bfloat16:
        return t.view(_TORCH.int16).numpy().view(_BF16)
    return t.numpy()


def _half(t) -> bool:
    return t.dtype in (_TORCH.float16, _TORCH.bfloat16)


def _native(*ts) -> bool:
    """Whether float tensors ``ts`` (None skipped) are all float32 or all float64: torch then
    computes in their dtype; otherwise in float64, rounded once (as the reference)."""
    dtypes = {t.dtype for t in ts if t is not None}
    return len(dtypes) == 1 and dtypes <= {_TORCH.float32, _TORCH.float64}


def _up(t):
    return None if t is None else t.to(_TORCH.float64)


def _out(t, dtype) -> np.ndarray:
    """``t`` rounded to ``dtype`` (a torch dtype) as an array (no copy when it has it)."""
    return array(t if t.dtype == dtype else t.to(dtype))


def _float(t) -> None:
    if not t.is_floating_point():
        raise Unsupported


def _scalar_of(a: np.ndarray) -> float | None:
    """The one value of a 0-d float array, or None."""
    if isinstance(a, np.ndarray) and a.ndim == 0 and a.dtype.kind == "f":
        return float(a)
    return None


# ----- elementwise --------------------------------------------------------------------------


def _float_unary(fn):
    """A float unary op: in the input's dtype for float32 / float64, else in float64."""

    def compute(values, attrs):
        x = tensor(values[0])
        _float(x)
        if _half(x):
            with sharing_calls(None):  # (a float64 copy: no other run makes this call)
                return _out(fn(_up(x), attrs), x.dtype)
        return array(fn(x, attrs))

    return compute


def _unary_table() -> dict[str, Callable]:
    torch = _torch()

    def unary(name: str):  # the ATen op torch's function of that name calls, shared
        f = _shared(f"{name}.default")
        return lambda x, a: f(x)

    table = {name: unary(name) for name in _SHARED_UNARY}
    return {
        **table,
        "floor": lambda x, a: torch.floor(x),
        "ceil": lambda x, a: torch.ceil(x),
        "round": lambda x, a: torch.round(x),  # half to even, as np.round
        "log1p": lambda x, a: torch.log1p(x),
        "expm1": lambda x, a: torch.expm1(x),
        "gelu": lambda x, a: shared_call(_aten("gelu.default"), x, approximate=a["approximate"]),
        "leaky_relu": lambda x, a: shared_call(_aten("leaky_relu.default"), x, a["alpha"]),
    }


_SHARED_UNARY = "exp log sqrt rsqrt tanh sigmoid erf sin cos reciprocal silu softplus".split()


_FLOAT_UNARY = (
    "exp log sqrt rsqrt tanh sigmoid erf sin cos floor ceil round reciprocal silu softplus "
    "log1p expm1 gelu leaky_relu"
).split()


def _float_unary_kernel(name: str):
    table: dict = {}

    def fn(x, attrs):
        if not table:
            table.update(_unary_table())
        return table[name](x, attrs)

    return _float_unary(fn)


for _name in _FLOAT_UNARY:
    KERNELS[_name] = _float_unary_kernel(_name)


@kernel("isnan")
def _isnan(values, attrs):
    x = tensor(values[0])
    return array(_TORCH.isnan(x))


def _same_dtype_unary(name: str):
    def compute(values, attrs):
        x = tensor(values[0])
        if x.dtype == _TORCH.bool:
            raise Unsupported
        fn = {"neg": _TORCH.neg, "abs": _TORCH.abs, "relu": _TORCH.relu}[name]
        return array(fn(x))

    return compute


for _name in ("neg", "abs", "relu"):
    KERNELS[_name] = _same_dtype_unary(_name)


@kernel("logical_not")
def _logical_not(values, attrs):
    return array(_TORCH.logical_not(tensor(values[0])))


@kernel("clip")
def _clip(values, attrs):
    x = tensor(values[0])
    _float(x)  # integer bounds are rounded inward by the reference
    lo, hi = attrs["min"], attrs["max"]
    if lo is None and hi is None:
        return array(x.clone())
    # each bound in the input's dtype, as the reference rounds it
    dtype = values[0].dtype
    lo = None if lo is None else float(np.asarray(lo).astype(dtype).astype(np.float64))
    hi = None if hi is None else float(np.asarray(hi).astype(dtype).astype(np.float64))
    if lo is not None and hi is not None and lo > hi:
        raise Unsupported
    return array(_TORCH.clamp(x, lo, hi))


def _cast_ok(src: np.dtype, dst: np.dtype) -> bool:
    """Casts torch makes as numpy does (ml_dtypes for bfloat16): between floats but from
    float64 to half precision (torch goes through float32: two roundings), from integers and
    bool to float32 / float64 and to other integers (both wrap)."""
    f, half = "fV", (np.dtype(np.float16), _BF16)
    if src.kind in f and dst.kind in f:
        return not (src == np.float64 and dst in half)
    if src.kind in "iub" and dst in (np.dtype(np.float32), np.dtype(np.float64)):
        return True
    return src.kind in "iub" and dst.kind in "iu"


@kernel("cast")
def _cast(values, attrs):
    x = values[0]
    target = np.dtype(attrs["dtype"].numpy)
    if target not in _DTYPES or not _cast_ok(x.dtype, target) or target == x.dtype:
        raise Unsupported
    return array(tensor(x).to(_DTYPES[target]))


_BINARY_FNS: dict[str, Callable] = {}
_ARITH = ("add", "subtract", "multiply", "maximum", "minimum")
_COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
_LOGICAL = ("logical_and", "logical_or", "logical_xor")


def _binary_fns() -> None:
    torch = _torch()
    _BINARY_FNS.update(  # (torch.add is aten's add.Tensor: the same call, shared)
        add=_shared("add.Tensor"),
        subtract=_shared("sub.Tensor"),
        multiply=_shared("mul.Tensor"),
        maximum=_shared("maximum.default"),
        minimum=_shared("minimum.default"),
        equal=torch.eq,
        not_equal=torch.ne,
        less=torch.lt,
        less_equal=torch.le,
        greater=torch.gt,
        greater_equal=torch.ge,
        logical_and=torch.logical_and,
        logical_or=torch.logical_or,
        logical_xor=torch.logical_xor,
    )


def _binary_kernel(name: str):
    def compute(values, attrs):
        if not _BINARY_FNS:
            _binary_fns()
        a, b = (tensor(v) for v in values)
        if name in _ARITH and a.dtype == _TORCH.bool:
            raise Unsupported  # numpy's bool arithmetic (or and and) is not torch's
        return array(_BINARY_FNS[name](a, b))

    return compute


for _name in (*_ARITH, *_COMPARE, *_LOGICAL):
    KERNELS[_name] = _binary_kernel(_name)


@kernel("divide")
def _divide(values, attrs):
    a, b = (tensor(v) for v in values)
    _float(a)  # integer division truncates, and by zero raises, in the reference
    return array(shared_call(_aten("div.Tensor"), a, b))


@kernel("power")
def _power(values, attrs):
    a, b = (tensor(v) for v in values)
    _float(a)
    if _half(a):
        return _out(_TORCH.pow(_up(a), _up(b)), a.dtype)
    e = _scalar_of(values[1])
    # a 0-d exponent as a number, as eager's ``x.pow(2)`` (2 is x * x, 0.5 the square root)
    if e is not None:
        return array(shared_call(_aten("pow.Tensor_Scalar"), a, e))
    return array(_TORCH.pow(a, b))


@kernel("where")
def _where(values, attrs):
    c, a, b = (tensor(v) for v in values)
    return array(_TORCH.where(c, a, b))


# ----- reductions ---------------------------------------------------------------------------


def _axes(x: np.ndarray, attrs: Attrs) -> list[int]:
    axes = attrs["axes"]
    if axes is None:
        axes = range(x.ndim)
    dims = sorted({a % x.ndim for a in axes}) if x.ndim else []
    if not dims:
        raise Unsupported  # rank 0: the reference returns the input
    return dims


def _reduction(name: str):
    def compute(values, attrs):
        x = tensor(values[0])
        dims = _axes(values[0], attrs)
        keep = attrs["keepdims"]
        torch = _TORCH
        if name in ("max", "min"):
            if values[0].size == 0:
                raise Unsupported  # no identity: the reference says so
            fn = torch.amax if name == "max" else torch.amin
            return array(fn(x, dim=dims, keepdim=keep))
        if name == "sum" and not x.is_floating_point():
            if x.dtype == torch.bool:
                raise Unsupported
            return array(torch.sum(x, dim=dims, keepdim=keep, dtype=x.dtype))  # wraps
        _float(x)
        t = _up(x) if _half(x) else x
        if name == "sum":
            y = torch.sum(t, dim=dims, keepdim=keep)
        elif name == "mean" and t is x:
            y = shared_call(_aten("mean.dim"), x, dims, keep)
        elif name == "mean":
            y = torch.mean(t, dim=dims, keepdim=keep)
        else:
            c = attrs["correction"]
            n = math.prod(values[0].shape[d] for d in dims)
            if n - c <= 0:
                raise Unsupported  # the reference's inf / nan
            y = torch.var(t, dim=dims, keepdim=keep, correction=c)
            if name == "std":
                y = torch.sqrt(y)
        return _out(y, x.dtype)

    return compute


for _name in ("sum", "mean", "max", "min", "variance", "std"):
    KERNELS[_name] = _reduction(_name)


# ----- softmax ------------------------------------------------------------------------------


def _softmax(log: bool):
    def compute(values, attrs):
        x = tensor(values[0])
        _float(x)
        if x.dim() == 0:
            raise Unsupported
        axis = attrs["axis"] % x.dim()
        if _half(x):
            fn = _TORCH.log_softmax if log else _TORCH.softmax
            return _out(fn(_up(x), axis), x.dtype)
        return array(shared_call(_aten("log_softmax.int" if log else "softmax.int"), x, axis))

    return compute


KERNELS["softmax"] = _softmax(False)
KERNELS["log_softmax"] = _softmax(True)


# ----- matmul and linear --------------------------------------------------------------------


def _result_dtype(attrs: Attrs, like):
    out = attrs.get("out_dtype")
    if out is None:
        return like
    td = _DTYPES.get(np.dtype(out.numpy))
    if td is None:
        raise Unsupported
    return td


def _matmul_tensors(a, b, out):
    """``a @ b`` rounded to ``out``: float32 (float64) products accumulated in float32
    (float64) when the result is that dtype, other floats in float64; integers in int64."""
    torch = _TORCH
    if a.is_floating_point():
        if _native(a, b) and out == a.dtype:
            return shared_call(_aten("matmul.default"), a, b)
        return torch.matmul(_up(a), _up(b)).to(out)
    raise Unsupported  # integers: the reference (torch has no integer BLAS)


@kernel("matmul")
def _matmul(values, attrs):
    a, b = (tensor(v) for v in values)
    if attrs["transpose_b"]:
        b = b.transpose(-1, -2)
    return array(_matmul_tensors(a, b, _result_dtype(attrs, a.dtype)))


@kernel("linear")
def _linear(values, attrs):
    x, w = tensor(values[0]), tensor(values[1])
    _float(x)
    out = _result_dtype(attrs, x.dtype)
    bias = tensor(values[2]) if len(values) > 2 else None
    if _native(x, w) and out == x.dtype:
        # as its decomposition: the product rounded, then the bias added (in the result dtype)
        y = shared_call(_aten("matmul.default"), x, w.T)
        fits = bias is not None and y.shape == _TORCH.broadcast_shapes(y.shape, bias.shape)
        if fits and not sharing():  # (a shared value is never written)
            return array(y.add_(bias.to(out)))  # in place: the same bits, one pass less
        return array(y if bias is None else shared_call(_aten("add.Tensor"), y, bias.to(out)))
    y = _TORCH.matmul(_up(x), _up(w).T)
    return _out(y if bias is None else y + _up(bias), out)


# ----- convolution and pooling --------------------------------------------------------------

_CONV_LAYOUTS = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW")}


def _perm(layout: str, canonical: str) -> list[int]:
    """For each letter of ``canonical``, its position in ``layout``."""
    if sorted(layout) != sorted(canonical):
        raise Unsupported
    return [layout.index(c) for c in canonical]


def _symmetric_pads(padding, nd: int) -> tuple[list[int], list[int] | None]:
    """torch's per-dim padding when begin and end pads are equal, else zeros and the F.pad
    widths (last dim first)."""
    begin, end = list(padding[:nd]), list(padding[nd:])
    if begin == end:
        return begin, None
    widths: list[int] = []
    for k in reversed(range(nd)):
        widths += [begin[k], end[k]]
    return [0] * nd, widths


def _conv(nd: int):
    canon_data, canon_kernel = _CONV_LAYOUTS[nd]

    def compute(values, attrs):
        torch = _TORCH
        x, w = tensor(values[0]), tensor(values[1])
        bias = tensor(values[2]) if len(values) > 2 else None
        _float(x)
        layout = attrs["data_layout"]
        x = x.permute(_perm(layout, canon_data))
        w = w.permute(_perm(attrs["kernel_layout"], canon_kernel))
        out = _result_dtype(attrs, x.dtype)
        if not (_native(x, w, bias) and out == x.dtype):
            x, w, bias = _up(x), _up(w), _up(bias)
        pads, widths = _symmetric_pads(attrs["padding"], nd)
        if widths is not None:
            x = torch.nn.functional.pad(x, widths)
        args = (x, w, bias, list(attrs["strides"]), pads, list(attrs["dilation"]), attrs["groups"])
        if widths is None and x.dtype == out:  # (what another run may call as it is)
            y = shared_call(_aten("conv1d.default" if nd == 1 else "conv2d.default"), *args)
        else:
            conv = torch.nn.functional.conv1d if nd == 1 else torch.nn.functional.conv2d
            y = conv(*args)
        y = y.permute(_perm(canon_data, layout))
        return _out(y, out)

    return compute


KERNELS["conv1d"] = _conv(1)
KERNELS["conv2d"] = _conv(2)


def _pool_args(attrs: Attrs, with_dilation: bool):
    pool = list(attrs["pool_size"])
    strides = list(attrs["strides"]) if attrs["strides"] is not None else pool
    dilation = list(attrs["dilation"]) if with_dilation else [1, 1]
    padding = list(attrs["padding"])
    if padding[:2] != padding[2:]:
        raise Unsupported  # torch pads both ends alike
    for k in range(2):  # torch: at most half the (dilated) kernel
        if padding[k] > (dilation[k] * (pool[k] - 1) + 1) // 2:
            raise Unsupported
    return pool, strides, dilation, padding[:2]


def _pool(kind: str):
    def compute(values, attrs):
        F = _TORCH.nn.functional
        x = tensor(values[0])
        layout = attrs["layout"]
        xc = x.permute(_perm(layout, "NCHW"))
        if kind == "max":
            pool, strides, dilation, pads = _pool_args(attrs, True)
            y = shared_call(
                _aten("max_pool2d.default"), xc, pool, strides, pads, dilation, attrs["ceil_mode"]
            )
        else:
            _float(x)
            pool, strides, _, pads = _pool_args(attrs, False)
            t = _up(xc) if _half(x) else xc
            args = (t, pool, strides, pads, attrs["ceil_mode"], attrs["count_include_pad"])
            y = shared_call(_aten("avg_pool2d.default"), *args) if t is xc else F.avg_pool2d(*args)
        return _out(y.permute(_perm("NCHW", layout)), x.dtype)

    return compute


KERNELS["max_pool2d"] = _pool("max")
KERNELS["avg_pool2d"] = _pool("avg")


@kernel("adaptive_avg_pool2d")
def _adaptive(values, attrs):
    x = tensor(values[0])
    _float(x)
    layout = attrs["layout"]
    xc = x.permute(_perm(layout, "NCHW"))
    size = list(attrs["output_size"] or xc.shape[2:])
    if _half(x):
        y = _TORCH.nn.functional.adaptive_avg_pool2d(_up(xc), size)
    else:
        y = shared_call(_aten("adaptive_avg_pool2d.default"), xc, size)
    return _out(y.permute(_perm("NCHW", layout)), x.dtype)


# ----- normalisation ------------------------------------------------------------------------


@kernel("batch_norm")
def _batch_norm(values, attrs):
    x, g, b, m, v = (tensor(a) for a in values)
    _float(x)
    if x.dim() < 2:
        raise Unsupported
    axis = attrs["axis"] % x.dim()
    xc = x.movedim(axis, 1)
    params = [g, b, m, v]
    if not _native(x, *params):
        xc, params = _up(xc), [_up(p) for p in params]
    g, b, m, v = params
    y = _TORCH.nn.functional.batch_norm(xc, m, v, g, b, False, 0.0, attrs["epsilon"])
    return _out(y.movedim(1, axis), x.dtype)


@kernel("layer_norm")
def _layer_norm(values, attrs):
    """torch's layer_norm over the trailing dims; other axes are moved last (a view) and back."""
    x = tensor(values[0])
    _float(x)
    nd = x.dim()
    axes = sorted({a % nd for a in attrs["axes"]}) if nd else []
    if not axes:
        raise Unsupported
    order = [a for a in range(nd) if a not in axes] + axes
    shape = [x.shape[a] for a in axes]
    params = [tensor(p).reshape(shape) for p in values[1:]]
    g = params[0] if params else None
    b = params[1] if len(params) > 1 else None
    t = x.permute(order)
    if not _native(x, g, b):
        t, g, b = _up(t), _up(g), _up(b)
        y = _TORCH.nn.functional.layer_norm(t, shape, g, b, attrs["epsilon"])
    else:
        y = shared_call(_aten("layer_norm.default"), t, shape, g, b, attrs["epsilon"])
    return _out(y.permute([order.index(a) for a in range(nd)]), x.dtype)


@kernel("group_norm")
def _group_norm(values, attrs):
    x = tensor(values[0])
    _float(x)
    if x.dim() < 2:
        raise Unsupported
    axis = attrs["channel_axis"] % x.dim()
    xc = x.movedim(axis, 1)
    params = [tensor(p).reshape(-1) for p in values[1:]]
    g = params[0] if params else None
    b = params[1] if len(params) > 1 else None
    if not _native(x, g, b):
        xc, g, b = _up(xc), _up(g), _up(b)
        y = _TORCH.nn.functional.group_norm(xc, attrs["num_groups"], g, b, attrs["epsilon"])
    else:
        groups, eps = attrs["num_groups"], attrs["epsilon"]
        y = shared_call(_aten("group_norm.default"), xc, groups, g, b, eps)
    return _out(y.movedim(1, axis), x.dtype)


# ----- attention ----------------------------------------------------------------------------


def _part(op: str, values: list, **attrs) -> np.ndarray:
    """An op's value as the interpreter computes a call with these kernels: torch's where it
    has one, else the reference."""
    from compiler.ir.op_registry import get_op

    d = get_op(op)
    a = d.normalize_attrs(attrs)
    out = compute(op, values, a)
    return out if out is not None else d.compute(values, a)


@kernel("scaled_dot_product_attention")
def _attention(values, attrs):
    """torch's own ``scaled_dot_product_attention`` (its fused CPU kernel, as eager runs it:
    an imported model's attention then has eager's very bits) where it computes what the op
    means; otherwise op by op as decompose-ops writes it (``compiler.ir.nn_compute.
    sdpa_parts``), each part by its kernel: a query row with no key left (the op gives zeros),
    batch dims that broadcast, a result that is not finite."""
    from compiler.ir.nn_compute import sdpa_parts

    if values[0].dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise Unsupported  # half precision: in float64, rounded once, by the reference
    if values[1].shape[-2] == 0:
        raise Unsupported  # no key at all: the reference says what it makes of it
    out = _fused_attention(values, attrs)
    return out if out is not None else sdpa_parts(values, attrs, part=_part)


def _fused_attention(values, attrs) -> np.ndarray | None:
    """Attention by torch's fused kernel, or None where it may not give the op's value."""
    torch = _TORCH
    q, k, v, *rest = values
    if not (q.dtype == k.dtype == v.dtype) or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        return None  # mixed dtypes, broadcast batch dims (kv heads): op by op
    length, keys = q.shape[-2], k.shape[-2]
    mask = None
    causal = bool(attrs["is_causal"])
    if rest:
        m = rest[0]
        if m.dtype != np.bool_ and m.dtype != q.dtype:
            return None
        mask = tensor(m)
    if causal and mask is not None:  # torch takes a mask or is_causal: the causal part masked
        tril = torch.ones(length, keys, dtype=torch.bool).tril()
        mask = mask & tril if mask.dtype == torch.bool else mask.masked_fill(~tril, -math.inf)
        causal = False
    if mask is not None:  # a query row with no key left: zeros in the op, op by op here
        keep = mask if mask.dtype == torch.bool else mask != -math.inf
        if not bool(keep.any(-1).all()):
            return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = shared_call(
            _aten("scaled_dot_product_attention.default"),
            tensor(q),
            tensor(k),
            tensor(v),
            mask,
            0.0,
            causal,
            scale=attrs["scale"],
        )
    if not bool(torch.isfinite(out).all()):
        return None  # infinities or NaN in: the op's value is its parts'
    return array(out)


# ----- resize -------------------------------------------------------------------------------

_LINEAR_RESIZE = {"half_pixel": False, "pytorch_half_pixel": False, "align_corners": True}
_INTERPOLATE = {1: "linear", 2: "bilinear", 3: "trilinear"}


@kernel("resize")
def _resize(values, attrs):
    """n-linear resize of one to three trailing dims (coordinates half_pixel,
    pytorch_half_pixel or align_corners) as torch's interpolate computes it. Nearest and cubic
    are the reference's: torch picks a nearest index in float32 (a scale of 0.7 can pick
    another pixel than ONNX's rule), and its cubic knows neither ONNX's coefficient nor
    exclude_outside."""
    from compiler.ir.nn_compute import resize_length

    data = values[0]
    how = attrs["coordinate_transformation_mode"]
    if attrs["mode"] != "linear" or how not in _LINEAR_RESIZE:
        raise Unsupported
    if not all(isinstance(o, (int, np.integer)) for o in attrs["sizes"]):
        raise Unsupported  # sized only now: the reference sizes it before making it
    scales = attrs["scales"]
    lengths = [
        resize_length(size, out, scales, axis)
        for axis, (size, out) in enumerate(zip(data.shape, attrs["sizes"], strict=True))
    ]
    resized = [
        a
        for a in range(data.ndim)
        if lengths[a] != data.shape[a] or (scales is not None and scales[a] != 1.0)
    ]
    if not resized or 0 in data.shape or 0 in lengths:
        raise Unsupported
    first = resized[0]
    spatial = data.ndim - first
    if first < 1 or spatial > 3:
        raise Unsupported  # torch resizes the dims after (N, C) only
    if how == "pytorch_half_pixel" and 1 in lengths[first:]:
        raise Unsupported  # ONNX reads position 0 for a length of 1, torch the centre
    x = tensor(data)
    _float(x)
    t = _up(x) if _half(x) else x
    t = t.reshape(-1, math.prod(data.shape[:first]), *data.shape[first:])  # (1, N*C, ...)
    kwargs: dict = {"mode": _INTERPOLATE[spatial], "align_corners": _LINEAR_RESIZE[how]}
    if scales is not None and not _LINEAR_RESIZE[how]:
        factors = [float(s) for s in scales[first:]]
        kwargs.update(scale_factor=factors, recompute_scale_factor=False)
    else:
        kwargs["size"] = lengths[first:]
    y = _TORCH.nn.functional.interpolate(t, **kwargs)
    if list(y.shape[2:]) != lengths[first:]:
        raise Unsupported  # torch sized it otherwise (ONNX rounds the length in float32)
    return _out(y.reshape(lengths), x.dtype)


OPS = frozenset(KERNELS)
"""The ops with a torch kernel (each may still leave some inputs to numpy)."""

ROUNDS_OTHERWISE = frozenset({"scaled_dot_product_attention"})
"""Ops whose torch kernel may not round exactly as their decomposition although their numpy
reference does (``compiler.passes.rounds_as_decomposed``): attention, fused as eager runs it."""
