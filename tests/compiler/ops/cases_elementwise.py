"""OpCases for every elementwise op, checked against torch (float16 with a float16 tolerance)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import compiler.ops.elementwise  # noqa: F401  (registers the ops)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(0)
F16 = {"rtol": 2e-3, "atol": 2e-3}


def _randn(*shape: int, dtype=np.float32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


def _positive(*shape: int, dtype=np.float32) -> np.ndarray:
    return (_rng.random(shape) * 3 + 0.1).astype(dtype)


def _ints(*shape: int, low: int = -10, high: int = 10, dtype=np.int32) -> np.ndarray:
    return _rng.integers(low, high, shape).astype(dtype)


def _nonzero_ints(*shape: int, low: int = -5, high: int = 6, dtype=np.int32) -> np.ndarray:
    x = _ints(*shape, low=low, high=high, dtype=dtype)
    return np.where(x == 0, np.ones_like(x), x)


def _bools(*shape: int) -> np.ndarray:
    return _rng.random(shape) < 0.5


CASES: list[OpCase] = []

# ----- unary float ops: f32, f16 and f64 ---------------------------------------------------

_FLOAT_UNARY = {
    # op: (torch function, input generator)
    "exp": (torch.exp, _randn),
    "log": (torch.log, _positive),
    "sqrt": (torch.sqrt, _positive),
    "rsqrt": (torch.rsqrt, _positive),
    "tanh": (torch.tanh, _randn),
    "sigmoid": (torch.sigmoid, _randn),
    "erf": (torch.erf, _randn),
    "sin": (torch.sin, _randn),
    "cos": (torch.cos, _randn),
    "floor": (torch.floor, _randn),
    "ceil": (torch.ceil, _randn),
    "round": (torch.round, _randn),
    "reciprocal": (torch.reciprocal, _positive),
    "silu": (F.silu, _randn),
    "softplus": (F.softplus, _randn),
    "log1p": (torch.log1p, _positive),
    "expm1": (torch.expm1, _randn),
}

for _op, (_fn, _gen) in _FLOAT_UNARY.items():
    CASES += [
        OpCase(_op, [_gen(2, 3, 4)], reference=_fn, id=f"{_op}-f32"),
        OpCase(_op, [_gen(7, dtype=np.float16)], reference=_fn, id=f"{_op}-f16", **F16),
        OpCase(_op, [_gen(3, 2, dtype=np.float64)], reference=_fn, id=f"{_op}-f64-3x2"),
        OpCase(_op, [_gen(dtype=np.float32)], reference=_fn, id=f"{_op}-f32-scalar"),
    ]

_HALVES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7], np.float32)
CASES += [
    OpCase("round", [_HALVES], reference=torch.round, id="round-half-to-even"),
    OpCase("floor", [_HALVES], reference=torch.floor, id="floor-halves"),
    OpCase("ceil", [-_HALVES], reference=torch.ceil, id="ceil-halves"),
    OpCase(
        "softplus",
        [np.array([-30.0, 25.0, 0.0], np.float32)],
        reference=F.softplus,
        id="softplus-large",
    ),
]

for _mode in ("none", "tanh"):
    CASES += [
        OpCase(
            "gelu",
            [_randn(3, 5)],
            {"approximate": _mode},
            reference=lambda x, approximate: F.gelu(x, approximate=approximate),
            id=f"gelu-{_mode}-f32",
        ),
        OpCase(
            "gelu",
            [_randn(9, dtype=np.float16)],
            {"approximate": _mode},
            reference=lambda x, approximate: F.gelu(x, approximate=approximate),
            id=f"gelu-{_mode}-f16",
            **F16,
        ),
    ]
CASES.append(OpCase("gelu", [_randn(4)], reference=F.gelu, id="gelu-default"))

# ----- unary ops on any dtype --------------------------------------------------------------

_SIGNED = {
    "float32": lambda: _randn(3, 4),
    "float16": lambda: _randn(6, dtype=np.float16),
    "int32": lambda: _ints(3, 4),
    "int64": lambda: _ints(5, dtype=np.int64),
    "int8": lambda: np.array([-128, -1, 0, 1, 127], np.int8),
}
for _op, _fn in (("neg", torch.neg), ("abs", torch.abs), ("sign", torch.sign)):
    for _dt, _gen in _SIGNED.items():
        CASES.append(OpCase(_op, [_gen()], reference=_fn, id=f"{_op}-{_dt}"))
CASES.append(
    OpCase(
        "sign",
        [np.array([-2.0, -0.0, 0.0, 3.0], np.float32)],
        reference=torch.sign,
        id="sign-zeros",
    )
)

for _dt, _x in (
    ("f32", _randn(2, 5)),
    ("f16", _randn(6, dtype=np.float16)),
    ("i32", _ints(7)),
    ("i8", _ints(4, dtype=np.int8)),
):
    CASES.append(OpCase("relu", [_x], reference=torch.relu, id=f"relu-{_dt}"))

for _dt, _x in (
    ("f32", _randn(2, 3)),
    ("bool", _bools(4)),
    ("i64", _ints(3, dtype=np.int64)),
    ("u8", _ints(3, low=0, high=255, dtype=np.uint8)),
):
    CASES.append(OpCase("identity", [_x], reference=lambda x: x, id=f"identity-{_dt}"))

CASES += [
    OpCase("logical_not", [_bools(3, 4)], reference=torch.logical_not, id="logical_not"),
    OpCase(
        "isnan",
        [np.array([1.0, np.nan, -np.inf, 0.0], np.float32)],
        reference=torch.isnan,
        id="isnan-f32",
    ),
    OpCase(
        "isnan",
        [np.array([np.nan, 2.0, np.inf], np.float16)],
        reference=torch.isnan,
        id="isnan-f16",
    ),
    OpCase("isnan", [np.array([[np.nan], [1.0]])], reference=torch.isnan, id="isnan-f64"),
]

# ----- leaky_relu, clip, cast --------------------------------------------------------------

CASES += [
    OpCase("leaky_relu", [_randn(3, 4)], reference=F.leaky_relu, id="leaky_relu-default"),
    OpCase(
        "leaky_relu",
        [_randn(3, 4)],
        {"alpha": 0.2},
        reference=lambda x, alpha: F.leaky_relu(x, negative_slope=alpha),
        id="leaky_relu-alpha",
    ),
    OpCase(
        "leaky_relu",
        [_randn(8, dtype=np.float16)],
        {"alpha": 0.1},
        reference=lambda x, alpha: F.leaky_relu(x, negative_slope=alpha),
        id="leaky_relu-f16",
        **F16,
    ),
]


def _clamp(x, min=None, max=None):  # noqa: A002  (the attribute names)
    return torch.clamp(x, min=min, max=max)


CASES += [
    OpCase("clip", [_randn(4, 5)], {"min": -0.5, "max": 0.5}, reference=_clamp, id="clip-both"),
    OpCase("clip", [_randn(4, 5)], {"min": 0.0}, reference=_clamp, id="clip-min"),
    OpCase("clip", [_randn(4, 5)], {"max": 0.25}, reference=_clamp, id="clip-max"),
    OpCase("clip", [_randn(6) * 8], {"min": 0.0, "max": 6.0}, reference=_clamp, id="clip-relu6"),
    OpCase("clip", [_ints(3, 4)], {"min": -3, "max": 4}, reference=_clamp, id="clip-i32"),
    OpCase(
        "clip",
        [_randn(7, dtype=np.float16)],
        {"min": -0.3, "max": 0.7},
        reference=_clamp,
        id="clip-f16",
        **F16,
    ),
    OpCase(
        "clip",
        [np.array([np.nan, -2.0, 2.0], np.float32)],
        {"min": -1.0, "max": 1.0},
        reference=_clamp,
        id="clip-nan",
    ),
]


def _to(x, dtype):
    return x.to(getattr(torch, dtype))


_FRACTIONS = np.array([-2.7, -1.5, -0.4, 0.0, 0.6, 1.5, 2.5, 99.9], np.float32)
CASES += [
    OpCase("cast", [_randn(3, 4)], {"dtype": "float16"}, reference=_to, id="cast-f32-f16"),
    OpCase(
        "cast",
        [_randn(3, dtype=np.float16)],
        {"dtype": "float32"},
        reference=_to,
        id="cast-f16-f32",
    ),
    OpCase("cast", [_randn(3, 4)], {"dtype": "float64"}, reference=_to, id="cast-f32-f64"),
    OpCase("cast", [_FRACTIONS], {"dtype": "int32"}, reference=_to, id="cast-f32-i32-trunc"),
    OpCase(
        "cast",
        [_FRACTIONS.astype(np.float64)],
        {"dtype": "int64"},
        reference=_to,
        id="cast-f64-i64-trunc",
    ),
    OpCase("cast", [np.abs(_FRACTIONS)], {"dtype": "uint8"}, reference=_to, id="cast-f32-u8"),
    OpCase("cast", [_FRACTIONS], {"dtype": "bool"}, reference=_to, id="cast-f32-bool"),
    OpCase(
        "cast", [_ints(5, dtype=np.int64)], {"dtype": "float32"}, reference=_to, id="cast-i64-f32"
    ),
    OpCase(
        "cast",
        [np.array([-129, 127, 128, 300], np.int32)],
        {"dtype": "int8"},
        reference=_to,
        id="cast-i32-i8-wraps",
    ),
    OpCase("cast", [_bools(2, 3)], {"dtype": "float32"}, reference=_to, id="cast-bool-f32"),
    OpCase("cast", [_ints(4)], {"dtype": "bool"}, reference=_to, id="cast-i32-bool"),
    OpCase(
        "cast",
        [_ints(4, dtype=np.int64)],
        {"dtype": "i32"},
        reference=lambda x, dtype: x.to(torch.int32),
        id="cast-short-name",
    ),
]

# ----- binary arithmetic -------------------------------------------------------------------

_ARITH = {
    "add": torch.add,
    "subtract": torch.sub,
    "multiply": torch.mul,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
}
for _op, _fn in _ARITH.items():
    CASES += [
        OpCase(_op, [_randn(2, 3, 4), _randn(2, 3, 4)], reference=_fn, id=f"{_op}-f32"),
        OpCase(_op, [_randn(2, 3, 4), _randn(3, 1)], reference=_fn, id=f"{_op}-broadcast"),
        OpCase(_op, [_randn(1, 4), _randn(3, 1)], reference=_fn, id=f"{_op}-broadcast-both"),
        OpCase(_op, [_randn(2, 3), _randn()], reference=_fn, id=f"{_op}-scalar-rhs"),
        OpCase(_op, [_ints(3, 4), _ints(4)], reference=_fn, id=f"{_op}-i32"),
        OpCase(
            _op,
            [_ints(5, dtype=np.int64), _ints(5, dtype=np.int64)],
            reference=_fn,
            id=f"{_op}-i64",
        ),
        OpCase(
            _op,
            [_ints(6, low=0, high=256, dtype=np.uint8), _ints(6, low=0, high=256, dtype=np.uint8)],
            reference=_fn,
            id=f"{_op}-u8-wraps",
        ),
        OpCase(
            _op,
            [_randn(5, dtype=np.float16), _randn(5, dtype=np.float16)],
            reference=_fn,
            id=f"{_op}-f16",
            **F16,
        ),
    ]
_NAN = np.array([np.nan, 1.0, -1.0, np.nan], np.float32)
CASES += [
    OpCase("maximum", [_NAN, np.zeros(4, np.float32)], reference=torch.maximum, id="maximum-nan"),
    OpCase("minimum", [np.zeros(4, np.float32), _NAN], reference=torch.minimum, id="minimum-nan"),
    OpCase("maximum", [_bools(5), _bools(5)], reference=torch.maximum, id="maximum-bool"),
]

# divide: true division for floats, truncation toward zero for integers
_A = np.array([7, -7, 7, -7, 0, 9, -1, 1], np.int32)
_B = np.array([2, 2, -2, -2, 3, 3, 2, -2], np.int32)


def _div_trunc(a, b):
    return torch.div(a, b, rounding_mode="trunc")


CASES += [
    OpCase("divide", [_randn(3, 4), _positive(4)], reference=torch.div, id="divide-f32"),
    OpCase(
        "divide",
        [_randn(6, dtype=np.float16), _positive(6, dtype=np.float16)],
        reference=torch.div,
        id="divide-f16",
        **F16,
    ),
    OpCase("divide", [_A, _B], reference=_div_trunc, id="divide-i32-trunc"),
    OpCase(
        "divide",
        [_A.astype(np.int64), _B[:1].astype(np.int64)],
        reference=_div_trunc,
        id="divide-i64-broadcast",
    ),
    OpCase(
        "divide", [_A.astype(np.int8), _B.astype(np.int8)], reference=_div_trunc, id="divide-i8"
    ),
    OpCase(
        "divide",
        [np.array([255, 7, 0], np.uint8), np.array([2, 3, 5], np.uint8)],
        reference=_div_trunc,
        id="divide-u8",
    ),
    OpCase("floor_divide", [_A, _B], reference=torch.floor_divide, id="floor_divide-i32"),
    OpCase(
        "floor_divide",
        [_nonzero_ints(3, 4, dtype=np.int64), _nonzero_ints(4, dtype=np.int64)],
        reference=torch.floor_divide,
        id="floor_divide-i64-broadcast",
    ),
    OpCase(
        "floor_divide",
        [_randn(3, 4) * 5, _randn(4)],
        reference=torch.floor_divide,
        id="floor_divide-f32",
    ),
    OpCase("mod", [_A, _B], reference=torch.remainder, id="mod-i32"),
    OpCase(
        "mod",
        [_ints(3, 4, dtype=np.int64), _nonzero_ints(4, dtype=np.int64)],
        reference=torch.remainder,
        id="mod-i64-broadcast",
    ),
    OpCase("mod", [_randn(3, 4) * 5, _randn(4)], reference=torch.remainder, id="mod-f32"),
    OpCase(
        "mod",
        [
            np.array([-7.5, 7.5, -7.5, 7.5], np.float32),
            np.array([2.0, -2.0, -2.0, 2.0], np.float32),
        ],
        reference=torch.remainder,
        id="mod-f32-signs",
    ),
    OpCase("power", [_positive(3, 4), _randn(4)], reference=torch.pow, id="power-f32"),
    OpCase(
        "power",
        [_randn(5), np.full(5, 2.0, np.float32)],
        reference=torch.pow,
        id="power-f32-square-negative-base",
    ),
    OpCase(
        "power",
        [_positive(6, dtype=np.float16), _randn(6, dtype=np.float16)],
        reference=torch.pow,
        id="power-f16",
        **F16,
    ),
    OpCase("power", [_ints(3, 4), _ints(4, low=0, high=4)], reference=torch.pow, id="power-i32"),
    OpCase(
        "power",
        [_ints(5, dtype=np.int64), _ints(5, low=0, high=5, dtype=np.int64)],
        reference=torch.pow,
        id="power-i64",
    ),
]

# ----- comparisons and logical ops ---------------------------------------------------------

_X = np.array([[1.0, 2.0, np.nan], [-1.0, 2.0, 3.0]], np.float32)
_Y = np.array([2.0, 2.0, np.nan], np.float32)
_COMPARE = {
    "equal": torch.eq,
    "not_equal": torch.ne,
    "less": torch.lt,
    "less_equal": torch.le,
    "greater": torch.gt,
    "greater_equal": torch.ge,
}
for _op, _fn in _COMPARE.items():
    CASES += [
        OpCase(_op, [_X, _Y], reference=_fn, id=f"{_op}-f32-nan-broadcast"),
        OpCase(
            _op,
            [_ints(3, 4, low=-2, high=3), _ints(3, 1, low=-2, high=3)],
            reference=_fn,
            id=f"{_op}-i32",
        ),
        OpCase(
            _op,
            [_ints(5, low=0, high=3, dtype=np.uint8), _ints(5, low=0, high=3, dtype=np.uint8)],
            reference=_fn,
            id=f"{_op}-u8",
        ),
        OpCase(_op, [_bools(4), _bools(4)], reference=_fn, id=f"{_op}-bool"),
        OpCase(
            _op,
            [_randn(5, dtype=np.float16), _randn(1, dtype=np.float16)],
            reference=_fn,
            id=f"{_op}-f16",
        ),
    ]

for _op, _fn in (
    ("logical_and", torch.logical_and),
    ("logical_or", torch.logical_or),
    ("logical_xor", torch.logical_xor),
):
    CASES += [
        OpCase(_op, [_bools(3, 4), _bools(3, 4)], reference=_fn, id=f"{_op}"),
        OpCase(_op, [_bools(2, 1, 4), _bools(3, 1)], reference=_fn, id=f"{_op}-broadcast"),
    ]

# ----- where -------------------------------------------------------------------------------

CASES += [
    OpCase(
        "where", [_bools(3, 4), _randn(3, 4), _randn(3, 4)], reference=torch.where, id="where-f32"
    ),
    OpCase(
        "where",
        [_bools(2, 1), _randn(2, 3), _randn(3)],
        reference=torch.where,
        id="where-broadcast",
    ),
    OpCase(
        "where",
        [_bools(4), _ints(4, dtype=np.int64), _ints(1, dtype=np.int64)],
        reference=torch.where,
        id="where-i64",
    ),
    OpCase(
        "where",
        [_bools(1, 1, 5), np.zeros((), np.float16), np.full((2, 1), -np.inf, np.float16)],
        reference=torch.where,
        id="where-f16-mask",
    ),
    OpCase("where", [_bools(3), _bools(3), _bools(3)], reference=torch.where, id="where-bool"),
]

# ----- cases that fail today: bugs reported to the lead (see test_reduce_index.py) ---------

PENDING_FIX: list[OpCase] = [
    # divide of int64 goes through float64, which has 53 bits: big quotients come out wrong
    OpCase(
        "divide",
        [np.array([2**62 + 1, -(2**62) - 3, 2**53 + 1], np.int64), np.array([1, 1, 1], np.int64)],
        reference=_div_trunc,
        id="divide-i64-beyond-2**53",
    ),
    # leaky_relu rounds alpha to float16 before multiplying: 1-ulp errors on negative inputs,
    # where every other float op of the module rounds once from float64
    OpCase(
        "leaky_relu",
        [np.array([-3.0, -1.1, -0.7, -2.3], np.float16)],
        reference=F.leaky_relu,
        rtol=0,
        atol=0,
        id="leaky_relu-f16-exact",
    ),
]
