"""Hypothesis strategies for random well-formed IR modules.

``modules()`` draws a :class:`Generated`: a verified module built through the node API (random
DAGs of elementwise ops with broadcasting over symbolic shapes, named weights small enough to
print inline and larger ones passed back through ``params=``, unnamed scalar constants, tuples
and get-items, ``If`` with two branch blocks, calls of private functions, weights passed as
parameters after ``num_input``, provenance and odd name hints), with what is needed to parse its
text back (``params``) and to run it (``inputs(rng)``). Reusable for "every pass preserves
results" properties: ``interpret.run(gen.module, *gen.inputs(rng))``.

Only ops from ``compiler/ops/elementwise.py`` are used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

import compiler.ops  # noqa: F401  (registers the ops)
from compiler.ir import (
    ANY,
    Block,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Module,
    Provenance,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    call,
    sym,
)
from compiler.ir.names import fresh_name
from compiler.ir.symbolic import SymExpr, evaluate_dim
from compiler.ir.types import TupleType

N, M = sym("n"), sym("m")
SYMBOL_VALUES = {"n": 2, "m": 3}
"""The symbol values ``Generated.inputs`` uses (each helper renames ``n`` to ``k``); a ``?``
dim is 2 at run time and a value of unknown rank has the function's whole base shape."""

# Dims of the "base" shape every value of a function broadcasts into; a value's shape is a
# suffix of the base shape with some dims replaced by 1, so any two values broadcast.
BASE_DIMS = [1, 2, 3, 33, 33, N, N, M, 2 * N + 1, N // 2 + 1, ANY]
MAX_INLINE = 32  # the printer's default: larger weights print without values

HINTS = ["x", "y", "out", "add", "add_1", "fc.weight", "1st", "_", "a b", "tmp_", "v", "relu"]
WEIGHT_NAMES = ["w", "fc.weight", "blocks.0.bias", "odd name", 'q"uote', "layer/1", "_b"]
UNARY = ["relu", "neg", "abs", "tanh", "sigmoid", "identity", "exp"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
COMPARE = ["equal", "less", "greater_equal", "not_equal"]

provenances = st.builds(
    Provenance,
    framework=st.sampled_from([None, "torch", "onnx"]),
    module_path=st.sampled_from([None, "stages.1.blocks.0.pwconv1", "fc", 'we"ird\\path ü']),
    source_op=st.sampled_from([None, "aten.linear.default", "Gemm"]),
    source_node=st.sampled_from([None, "linear_3", "node 7"]),
    location=st.sampled_from([None, "model.py:12"]),
    pass_name=st.sampled_from([None, "fold-constant"]),
)


@dataclass
class Generated:
    """A random module, the ``params`` its printed text needs to parse, and its inputs."""

    module: Module
    params: dict[str, np.ndarray] = field(default_factory=dict)
    base: tuple = ()

    def inputs(self, rng: np.random.Generator, function: str = "main") -> list[np.ndarray]:
        """Random inputs for ``function`` (symbols take SYMBOL_VALUES)."""
        return [random_value(p.ty, rng, self.base) for p in self.module[function].params]


def concrete_shape(ty: TensorType, base: tuple = (), env: dict = SYMBOL_VALUES) -> tuple:
    """The run-time shape of a tensor type under ``env`` (see SYMBOL_VALUES)."""
    if ty.shape is None:
        return concrete_shape(TensorType(base, ty.dtype), (), env)
    return tuple(2 if d is ANY else evaluate_dim(d, env) for d in ty.shape)


def random_value(ty, rng: np.random.Generator, base: tuple = (), env: dict = SYMBOL_VALUES):
    """A random array (or tuple of arrays) of type ``ty``."""
    if isinstance(ty, TupleType):
        return tuple(random_value(f, rng, base, env) for f in ty.fields)
    shape = concrete_shape(ty, base, env)
    if ty.dtype.name == "bool":
        return rng.random(shape) < 0.5
    return rng.standard_normal(shape).astype(ty.dtype.numpy)


class _Builder:
    """Draws the values of one function (or branch) into a pool of f32 values."""

    def __init__(self, draw, base: tuple, gen: _ModuleState, depth: int):
        self.draw, self.base, self.gen, self.depth = draw, base, gen, depth
        self.pool: list[Expr] = []

    # ----- small pieces -----------------------------------------------------------------
    def hint(self):
        return self.draw(st.one_of(st.none(), st.sampled_from(HINTS)))

    def prov(self):
        return self.draw(st.one_of(st.none(), provenances))

    def sub_shape(self, static: bool = False) -> tuple | None:
        """A suffix of the base shape with some dims (all symbolic ones if ``static``) set to 1,
        or unknown rank (None) now and then."""
        if not static and self.draw(st.integers(0, 9)) == 0:
            return None
        k = self.draw(st.integers(0, len(self.base)))
        dims = self.base[len(self.base) - k :]
        ones = self.draw(st.lists(st.booleans(), min_size=k, max_size=k))
        return tuple(
            1 if one or (static and not isinstance(d, int)) else d
            for d, one in zip(dims, ones, strict=True)
        )

    def pick(self) -> Expr:
        return self.draw(st.sampled_from(self.pool))

    def scalar(self, dtype: str = "float32") -> Constant:
        value = self.draw(st.sampled_from([0.0, 1.0, -2.5, 0.1, 3.0, 1e-3]))
        return Constant.scalar(value, dtype, prov=self.prov())

    def weight(self) -> Constant:
        shape = self.sub_shape(static=True)
        size = int(np.prod(shape))
        if size <= MAX_INLINE:
            values = self.draw(
                st.lists(
                    st.floats(-4, 4, width=32, allow_subnormal=False)
                    | st.sampled_from([np.nan, np.inf, -np.inf, -0.0]),
                    min_size=size,
                    max_size=size,
                )
            )
            data = np.array(values, dtype=np.float32).reshape(shape)
        else:
            data = np.random.default_rng(size).standard_normal(shape).astype(np.float32)
        name = self.gen.weight_name(self.draw)
        const = Constant(data, name=name, prov=self.prov())
        if size > MAX_INLINE:
            self.gen.params[name] = data
        return const

    # ----- nodes --------------------------------------------------------------------------
    def step(self) -> None:
        """Add one new value to the pool."""
        kinds = ["unary", "binary", "binary", "scalar", "where", "cast", "attrs", "tuple"]
        if self.gen.weights_left > 0:
            kinds += ["weight", "weight"]
        if self.depth < 2:
            kinds.append("if")
        if self.gen.helpers and self.depth == 0 and self.gen.can_call:
            kinds += ["call", "call"]
        kind = self.draw(st.sampled_from(kinds))
        h, p = self.hint(), self.prov()
        if kind == "unary":
            node = call(self.draw(st.sampled_from(UNARY)), self.pick(), name=h, prov=p)
        elif kind == "binary":
            op = self.draw(st.sampled_from(BINARY))
            node = call(op, self.pick(), self.pick(), name=h, prov=p)
        elif kind == "scalar":
            op = self.draw(st.sampled_from(BINARY))
            a, c = self.pick(), self.scalar()
            node = call(op, *((a, c) if self.draw(st.booleans()) else (c, a)), name=h, prov=p)
        elif kind == "weight":
            self.gen.weights_left -= 1
            node = call("add", self.pick(), self.weight(), name=h, prov=p)
        elif kind == "where":
            cond = call(self.draw(st.sampled_from(COMPARE)), self.pick(), self.pick())
            node = call("where", cond, self.pick(), self.pick(), name=h, prov=p)
        elif kind == "cast":
            dtype = self.draw(st.sampled_from(["float16", "int32", "float64"]))
            mid = call("cast", self.pick(), dtype=dtype, prov=self.prov())
            if dtype != "int32" and self.draw(st.booleans()):
                mid = call("multiply", mid, self.scalar(dtype))
            node = call("cast", mid, dtype="float32", name=h, prov=p)
        elif kind == "attrs":
            x = self.pick()
            node = self.draw(
                st.sampled_from(
                    [
                        lambda: call("clip", x, min=-1.0, max=2.5, name=h, prov=p),
                        lambda: call("clip", x, max=0.5, name=h, prov=p),
                        lambda: call("leaky_relu", x, alpha=0.1, name=h, prov=p),
                        lambda: call("gelu", x, approximate="tanh", name=h, prov=p),
                    ]
                )
            )()
        elif kind == "tuple":
            fields = self.draw(st.lists(st.sampled_from(self.pool), min_size=1, max_size=3))
            tup = Tuple(fields, name=self.hint(), prov=self.prov())
            node = TupleGetItem(tup, self.draw(st.integers(-len(fields), len(fields) - 1)), p, h)
        elif kind == "if":
            node = self.if_node(h, p)
        else:
            node = self.func_call(h, p)
        self.pool.append(node)

    def if_node(self, h, p) -> If:
        x = self.pick()
        if self.draw(st.booleans()) and self.gen.flag is not None:
            cond = self.gen.flag
        else:
            cond = call(self.draw(st.sampled_from(COMPARE)), self.scalar(), self.scalar())
        branches = []
        for _ in range(2):
            # Branch-local nodes are fresh objects, so no node is bound in both branches.
            inner = _Builder(self.draw, self.base, self.gen, self.depth + 1)
            inner.pool = [*self.pool, call(self.draw(st.sampled_from(UNARY)), x)]
            for _ in range(self.draw(st.integers(0, 2))):
                inner.step()
            result = inner.pool[-1] if self.draw(st.booleans()) else x
            if result.ty != x.ty:  # keep both branches at x's type
                result = call("add", x, call("multiply", result, self.scalar()))
                result = result if result.ty == x.ty else x
            branches.append(Block.of(result, bound_outside=self.pool))
        return If(cond, *branches, prov=p, name=h)

    def func_call(self, h, p) -> Expr:
        name, fn = self.draw(st.sampled_from(self.gen.helpers))
        args = []
        for param in fn.params:
            ty = _rename(param.ty, {"k": N})
            candidates = [v for v in self.pool if v.ty == ty]
            args.append(self.draw(st.sampled_from(candidates)) if candidates else self.fit(ty))
        node = FuncCall(name, args, _rename(fn.ret_type, {"k": N}), prov=p, name=h)
        if isinstance(node.ty, TupleType):
            node = TupleGetItem(node, self.draw(st.integers(0, len(node.ty.fields) - 1)))
        return node

    def fit(self, ty: TensorType) -> Expr:
        """A value of exactly type ``ty``: a pool value broadcast against a zeros input."""
        zeros = self.gen.zeros_param(ty)
        value = call("add", zeros, call("multiply", self.pick(), self.scalar()))
        return value if value.ty == ty else zeros


def _rename(ty, env: dict[str, SymExpr]):
    def dim(d):
        return d.substitute(env) if isinstance(d, SymExpr) else d

    if isinstance(ty, TupleType):
        return TupleType(_rename(f, env) for f in ty.fields)
    return TensorType(None if ty.shape is None else [dim(d) for d in ty.shape], ty.dtype)


class _ModuleState:
    def __init__(self):
        self.params: dict[str, np.ndarray] = {}
        self.used_names: set[str] = set()
        self.weights_left = 3
        self.helpers: list[tuple[str, Function]] = []
        self.flag: Var | None = None
        self.extra_params: list[Var] = []
        self.can_call = False

    def weight_name(self, draw) -> str:
        return fresh_name(draw(st.sampled_from(WEIGHT_NAMES)), self.used_names, sep=".")

    def zeros_param(self, ty: TensorType) -> Var:
        for v in self.extra_params:
            if v.ty == ty:
                return v
        v = Var(f"z{len(self.extra_params)}", ty)
        self.extra_params.append(v)
        return v


def _function(draw, state: _ModuleState, base: tuple, private: bool) -> Function:
    b = _Builder(draw, base, state, depth=0)
    prov = b.prov
    params = []
    for i in range(draw(st.integers(1, 3))):
        name = b.hint() or "p"
        name = name if name not in {p.name for p in params} else f"{name}{i}"
        params.append(Var(name, TensorType(b.sub_shape(), "float32"), prov()))
    b.pool = list(params)
    state.flag = None
    if not private and draw(st.booleans()):
        state.flag = Var("flag", TensorType((), "bool"), prov())
    state.extra_params = []
    state.can_call = not private
    for _ in range(draw(st.integers(1, 6))):
        b.step()
    outs = draw(st.lists(st.sampled_from(b.pool), min_size=1, max_size=3, unique_by=id))
    if len(outs) == 1 and draw(st.booleans()):
        output = outs[0]
    else:
        output = Tuple(outs, name=b.hint())
    runtime = params + ([state.flag] if state.flag is not None else []) + state.extra_params
    attrs: dict = {"private": True} if private else {}
    weights_as_params: list[Var] = []
    if not private and draw(st.booleans()):
        # weights passed as inputs after the runtime ones (num_input, like Relax)
        for i in range(draw(st.integers(1, 2))):
            w = Var(f"wp{i}", TensorType(b.sub_shape(static=True), "float32"))
            weights_as_params.append(w)
            output = Tuple([output, call("add", b.pick(), w, name=b.hint())])
        attrs["num_input"] = len(runtime)
    return Function.from_output(runtime + weights_as_params, output, attrs, prov())


@st.composite
def modules(draw, max_helpers: int = 2) -> Generated:
    """A random well-formed module (see the module docstring)."""
    state = _ModuleState()
    base = tuple(draw(st.lists(st.sampled_from(BASE_DIMS), min_size=0, max_size=3)))

    functions: dict[str, Function] = {}
    for i in range(draw(st.integers(0, max_helpers))):
        hbase = tuple(_rename(TensorType(base, "float32"), {"n": sym("k")}).shape)
        fn = _function(draw, state, hbase, private=True)
        name = f"helper_{i}"
        functions[name] = fn
        state.helpers.append((name, fn))
    main = _function(draw, state, base, private=False)
    order = list(functions.items())
    order.insert(draw(st.integers(0, len(order))), ("main", main))
    return Generated(Module(dict(order)), dict(state.params), base)
