"""The reference interpreter.

`run(module, *inputs)` evaluates a function on numpy arrays. `evaluate` also returns every
intermediate value and can reuse a `ValueCache`: nodes are immutable and shared between
modules, so a node already evaluated for the same inputs (in another snapshot, say) is not
computed again.

`kernels` picks what computes an op: `"torch"` (the default when torch is installed) runs
it with torch's CPU kernel where the op's semantics equal a torch op's
(compiler/torch_kernels.py says where and how the values differ) and with the op's numpy
reference otherwise; `"numpy"` runs every op with its reference. Arrays pass between the two
without copies. `Evaluation.by_kernel` says which ops each computed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.errors import PasslensError
from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    children,
    get_op,
)
from compiler.ir.symbolic import ANY, SymExpr, solve_dim
from compiler.ir.types import (
    TensorType,
    TupleType,
    Type,
    empty_scan_shape,
    is_float_dtype,
    shape_matches,
)
from compiler.ir.verify import symbols_of

# The largest value one binding may hold; the annotated size is checked before computing.
MAX_VALUE_BYTES = 4 << 30
MAX_LOOP_ITERATIONS = 1_000_000
"""Iterations one Loop may run (a Loop whose condition never ends is a hostile model)."""
MAX_LOOP_WORK = 250_000
"""Work all the loops of one run may do together, nested loops included: each iteration
counts one plus the bindings of its body (a unit costs 20-40 microseconds, so about 10 s at
most; an RNN of 1,000 steps of 50 bindings is 51,000). Loops each under MAX_LOOP_ITERATIONS,
nested, would otherwise multiply. A longer legitimate loop: raise it in code."""
_LOOP_WORK: ContextVar[list[int] | None] = ContextVar("passlens_loop_work", default=None)

_STATIC_BYTES: dict[tuple, int] = {}
"""The bytes of a value of each static tensor type seen, by its shape and dtype's id (compared
as a type compares, without Python's ``__eq__``; ``check_size`` works each out once)."""

KERNEL_SETS = ("torch", "numpy")
"""What ``evaluate(..., kernels=)`` takes (see the module docstring)."""
# the kernel set of the evaluation running (nested evaluations and the memo's hooks use it)
_KERNELS: ContextVar[str | None] = ContextVar("passlens_kernels", default=None)


@functools.cache
def default_kernels() -> str:
    """`"torch"` when torch can be imported, else `"numpy"`."""
    from compiler.torch_kernels import torch_available

    return "torch" if torch_available() else "numpy"


_WARM: set[str] = set()  # the kernel sets warmed up in this process


def warm_up_kernels(kernels: str | None = None) -> str:
    """Load what the first op of `kernels` (default: `default_kernels`) would wait
    for, so it can be done (and shown) apart from a run: for `"torch"`, import torch and run
    one small call of each kernel family (a matmul large enough to start torch's threads,
    a convolution, a layer norm, softmax, gelu), 1-2 s when torch is not imported yet;
    nothing for `"numpy"`. The check does it as a phase of its own (its progress says
    so). Returns the kernel set. Calling it again does nothing."""
    kernels = _kernel_set(kernels)
    if kernels == "torch" and kernels not in _WARM:
        from compiler import torch_kernels

        torch_kernels.warm_up()
    _WARM.add(kernels)
    return kernels


def _kernel_set(kernels: str | None) -> str:
    if kernels is None:
        return _KERNELS.get() or default_kernels()
    if kernels not in KERNEL_SETS:
        raise InterpretError(f"kernels must be 'torch' or 'numpy', got {kernels!r}")
    if kernels == "torch" and default_kernels() != "torch":
        raise InterpretError("kernels='torch' needs torch, which is not installed")
    return kernels


def _torch_kernels():
    """compiler/torch_kernels.py, imported on first use (it imports torch)."""
    global _TORCH_KERNELS
    if _TORCH_KERNELS is None:
        from compiler import torch_kernels

        _TORCH_KERNELS = torch_kernels
    return _TORCH_KERNELS


_TORCH_KERNELS = None


def _op_value(op: str, values: list, attrs, kernels: str) -> tuple[Any, str]:
    """The value of `op` and the kernel set that computed it."""
    if kernels == "torch":
        torch_kernels = _TORCH_KERNELS or _torch_kernels()
        if op in torch_kernels.KERNELS:
            out = torch_kernels.compute(op, values, attrs)
            if out is not None:
                return out, "torch"
    return get_op(op).compute(values, attrs), "numpy"


def kernels_in_use() -> str:
    """The kernel set of the evaluation running (`evaluate(..., kernels=)`; nested
    evaluations and a memo's hooks run inside one), else `default_kernels`."""
    return _kernel_set(None)


def rounds_otherwise(op: str, kernels: str | None = None) -> bool:
    """Whether `op`'s kernel in `kernels` (default: `kernels_in_use`) may not round
    exactly as its decomposition although its numpy reference does
    (`compiler.passes.rounds_as_decomposed`): torch's fused attention."""
    if _kernel_set(kernels) != "torch":
        return False
    return op in (_TORCH_KERNELS or _torch_kernels()).ROUNDS_OTHERWISE


def compute_op(op: str, values: list, attrs, kernels: str | None = None) -> Any:
    """The value of op `op` on `values` (arrays) with `attrs` (normalised), as the
    interpreter computes a call: with `kernels` (default: those of the evaluation running,
    else `default_kernels`)."""
    return _op_value(op, values, attrs, _kernel_set(kernels))[0]


def _one_loop_budget(fn):
    """The outermost `evaluate` of a run opens the loop work budget its nested calls share."""

    @functools.wraps(fn)
    def evaluate_within_budget(*args, **kwargs):
        if _LOOP_WORK.get() is not None:
            return fn(*args, **kwargs)
        token = _LOOP_WORK.set([0])
        try:
            return fn(*args, **kwargs)
        finally:
            _LOOP_WORK.reset(token)

    return evaluate_within_budget


class InterpretError(PasslensError, RuntimeError):
    """Evaluation failed; the message names the binding, its op and provenance."""

    def __init__(self, message: str, node: Expr | None = None):
        super().__init__(message)
        self.node = node


class ValueCache:
    """Values of nodes for one set of inputs, shared between evaluations of related modules.

    The cache remembers which array each parameter was bound to; binding a parameter to a
    different value later raises, because every cached value downstream would be stale.
    """

    def __init__(self) -> None:
        self.values: dict[Expr, Any] = {}
        self.hits = 0
        self.misses = 0
        # a call of another function -> the functions its value was computed with (the callee
        # and all it calls): a pass may change a callee while the call node stays the same
        self.callees: dict[Expr, tuple] = {}

    def drop_stale_calls(self, module: Module, fn: Function) -> None:
        """Forget the values of calls in `fn` whose callee (or anything it calls) is not the
        function their value was computed with, and of everything that depends on them."""
        if not self.callees:
            return
        closures: dict[str, tuple] = {}
        stale: set[int] = set()

        def visit(bindings: Sequence[Expr]) -> None:
            for node in bindings:
                if isinstance(node, If):
                    visit(node.then_branch.bindings)
                    visit(node.else_branch.bindings)
                if node not in self.values:
                    continue
                bad = any(id(c) in stale for c in children(node))
                if not bad and isinstance(node, FuncCall):
                    if node.func not in closures:
                        closures[node.func] = callee_closure(module, node.func)
                    old = self.callees.get(node)
                    new = closures[node.func]
                    bad = (
                        old is None
                        or len(old) != len(new)
                        or any(a[0] != b[0] or a[1] is not b[1] for a, b in zip(old, new))
                    )
                if bad:
                    stale.add(id(node))
                    del self.values[node]
                    self.callees.pop(node, None)

        visit(fn.bindings)

    def __len__(self) -> int:
        return len(self.values)

    def bind(self, var: Var, value: np.ndarray) -> None:
        """Bind a parameter; raises if it is already bound to a different value."""
        old = self.values.get(var)
        if old is not None and old is not value:
            if not _same_value(old, value):
                raise InterpretError(
                    f"ValueCache reused with a different value for parameter %{var.name}: "
                    "use one cache per set of inputs"
                )
            return
        self.values[var] = value


def _same_value(old: Any, value: Any) -> bool:
    """Whether two input values are equal (arrays, or tuples of them: ONNX sequences)."""
    if isinstance(old, tuple):
        return (
            isinstance(value, tuple)
            and len(old) == len(value)
            and all(_same_value(a, b) for a, b in zip(old, value, strict=True))
        )
    return (
        isinstance(old, np.ndarray)
        and isinstance(value, np.ndarray)
        and old.shape == value.shape
        and old.dtype == value.dtype
        and np.array_equal(old, value, equal_nan=is_float_dtype(old.dtype))
    )


@dataclass
class TypeMismatch:
    """A node whose computed value disagrees with its annotated type."""

    node: Expr
    annotated: Type
    shape: tuple
    dtype: str

    @classmethod
    def of(cls, node: Expr, value: Any) -> TypeMismatch:
        """The mismatch of `node` computing `value`."""
        if isinstance(value, np.ndarray):
            return cls(node, node.ty, tuple(value.shape), str(value.dtype))
        return cls(
            node,
            node.ty,
            (),
            _value_desc(value) if isinstance(value, tuple) else type(value).__name__,
        )

    def __str__(self) -> str:
        name = f"%{self.node.name}" if self.node.name else type(self.node).__name__
        computed = f"{self.dtype}{list(self.shape)}" if self.dtype.isidentifier() else self.dtype
        return f"{name}: annotated {self.annotated}, computed {computed}"


@dataclass
class Evaluation:
    """The result of `evaluate`: outputs, every value (`values[node]`), symbol values,
    and type mismatches found when `check_types` was on."""

    outputs: tuple
    values: dict
    symbols: dict[str, int]
    mismatches: list[TypeMismatch] = field(default_factory=list)
    kernels: str = "numpy"
    """The kernel set asked for (``"torch"`` or ``"numpy"``)."""
    by_kernel: dict[str, dict[str, int]] = field(default_factory=dict)
    """Ops computed by each kernel set, with their counts (``{"torch": {"conv2d": 3},
    "numpy": {"reshape": 2}}``), called functions and loop bodies included."""


def _describe(node: Expr) -> str:
    label = f"%{node.name} = " if node.name else ""
    if isinstance(node, Call):
        args = ", ".join(str(a.ty) for a in node.args)
        text = f"{label}{node.op}({args}) -> {node.ty}"
    elif isinstance(node, FuncCall):
        text = f"{label}call @{node.func} -> {node.ty}"
    else:
        text = f"{label}{type(node).__name__} -> {node.ty}"
    if not node.prov.is_empty:
        text += f" from {node.prov.describe()}"
    return text


def _resolve(value: Any, env: dict[str, int]) -> Any:
    if isinstance(value, SymExpr):
        return value.evaluate(env)
    if isinstance(value, tuple) and any(isinstance(v, (SymExpr, tuple)) for v in value):
        return tuple(_resolve(v, env) for v in value)
    if value is ANY:
        raise InterpretError("an attribute has an unknown dimension ('?') at run time")
    return value


def _resolved_attrs(node: Call, env: dict[str, int]):
    attrs = node.attrs
    if attrs.symbolic:
        specs = get_op(node.op).attrs
        resolved = {}
        for k, v in attrs.items():
            try:
                resolved[k] = _resolve(v, env)
            except KeyError:
                spec = specs.get(k)
                if spec is None or not spec.may_stay_symbolic:
                    raise
                resolved[k] = v
        return attrs.with_(**resolved)
    return attrs


def _to_array(value: Any, param: Var, index: int) -> np.ndarray:
    if value.__class__ is np.ndarray:  # (the common case: what np.asarray gives back as is)
        return value
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if not isinstance(value, (np.ndarray, np.generic)):
        raise InterpretError(
            f"input {index} (%{param.name}) must be a numpy array, got {type(value).__name__}"
        )
    return np.asarray(value)


def _to_value(value: Any, ty: Type, param: Var, index: int) -> Any:
    """An input as the interpreter holds it: arrays for tensors, tuples for tuple parameters
    (a list is taken as a tuple, None as the empty tuple: an ONNX sequence or optional)."""
    if not isinstance(ty, TupleType):
        return _to_array(value, param, index) if not isinstance(value, tuple) else value
    if value is None and not ty.fields:
        return ()
    if not isinstance(value, (tuple, list)):
        raise InterpretError(
            f"input {index} (%{param.name}) must be a tuple of {len(ty.fields)} value(s) "
            f"({ty}), got {type(value).__name__}"
        )
    if len(value) != len(ty.fields):
        return tuple(value)  # reported by the type check that follows
    return tuple(_to_value(v, t, param, index) for v, t in zip(value, ty.fields, strict=True))


def _matches(ty: Type, value: Any, env: dict[str, int]) -> bool:
    if isinstance(ty, TupleType):
        return (
            isinstance(value, tuple)
            and len(value) == len(ty.fields)
            and all(_matches(t, v, env) for t, v in zip(ty.fields, value))
        )
    assert isinstance(ty, TensorType)
    if not isinstance(value, np.ndarray) or value.dtype != ty.dtype.numpy:
        return False
    # equal tuples: every annotated dim an int and the same (nothing to bind)
    return value.shape == ty.shape or shape_matches(ty.shape, value.shape, env)


def _value_desc(value: Any) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_value_desc(v) for v in value) + ")"
    return f"{value.dtype} array of shape {tuple(value.shape)}"


def callee_closure(module: Module, fname: str) -> tuple:
    """`(name, Function)` of `fname` and every function it calls, directly or not."""
    seen: dict[str, Function] = {}
    stack = [fname]
    while stack:
        name = stack.pop()
        if name in seen or name not in module.functions:
            continue
        seen[name] = module.functions[name]
        stack.extend(n.func for n in seen[name].iter_nodes() if isinstance(n, FuncCall))
    return tuple(sorted(seen.items(), key=lambda kv: kv[0]))


class CallMemo:
    """Hooks around each op call of an evaluation (see `evaluate(memo=)`): `lookup` may
    give the value of a call from its argument values without running the op; `record`
    sees every value computed and returns the array to keep (e.g. an equal one seen before).
    The base class does nothing."""

    hits = 0

    def lookup(self, node: Call, args: list) -> Any:
        return None

    def record(self, node: Call, args: list, value: Any) -> Any:
        return value


class _Evaluator:
    def __init__(
        self,
        module: Module | None,
        values: dict,
        env: dict,
        check_types: bool,
        memo: CallMemo | None = None,
        cache: ValueCache | None = None,
        kernels: str = "numpy",
    ):
        self.kernels = kernels
        self.by_kernel: dict[str, dict[str, int]] = {}
        self.cache = cache
        self.module = module
        self.values = values
        self.env = env
        self.check_types = check_types
        self.memo = memo
        self.mismatches: list[TypeMismatch] = []
        self.cache_hits = 0
        self.computed = 0  # bindings evaluated (If branches included)

    def value(self, expr: Expr) -> Any:
        if isinstance(expr, Constant):
            return expr.data
        try:
            return self.values[expr]
        except KeyError:
            raise InterpretError(f"{_describe(expr)} is used before it is computed", expr) from None

    def check_size(self, node: Call) -> None:
        """Refuse a value whose annotated size is over MAX_VALUE_BYTES before computing it (a
        crafted `zeros(shape=[10000000000])` would otherwise take the machine's memory)."""
        ty = node.ty
        if not isinstance(ty, TensorType) or ty.shape is None:
            return
        key = (ty.shape, id(ty.dtype))
        nbytes = _STATIC_BYTES.get(key)
        if nbytes is None:
            n = 1
            for d in ty.shape:
                try:
                    n *= d if isinstance(d, int) else _resolve(d, self.env)
                except (KeyError, InterpretError, TypeError):
                    return  # not known before computing: the op's own checks apply
            nbytes = n * ty.dtype.numpy.itemsize
            if ty.is_static:  # worked out once per static type
                if len(_STATIC_BYTES) > 50_000:
                    _STATIC_BYTES.clear()
                _STATIC_BYTES[key] = nbytes
        if nbytes > MAX_VALUE_BYTES:
            n = nbytes // ty.dtype.numpy.itemsize
            raise InterpretError(
                f"{_describe(node)} would hold {n:,} elements ({ty}), over the interpreter's "
                f"limit of {MAX_VALUE_BYTES >> 30} GiB for one value "
                "(compiler.interpret.MAX_VALUE_BYTES)",
                node,
            )

    def run_bindings(self, bindings: Sequence[Expr]) -> None:
        values = self.values
        for node in bindings:
            if node in values:
                self.cache_hits += 1
                continue
            self.computed += 1
            try:
                result = self.compute(node)
            except InterpretError:
                raise
            except Exception as e:  # an op's reference code failed: say where
                raise InterpretError(
                    f"while executing {_describe(node)}: {type(e).__name__}: {e}", node
                ) from e
            if self.check_types:
                ty = node.ty
                if not (  # the common case first: a static tensor type met exactly
                    isinstance(result, np.ndarray)
                    and isinstance(ty, TensorType)
                    and result.shape == ty.shape
                    and result.dtype == ty.dtype.numpy
                ) and not _matches(ty, result, dict(self.env)):
                    self.mismatches.append(TypeMismatch.of(node, result))
            values[node] = result

    def compute(self, node: Expr) -> Any:
        if isinstance(node, Call) and node.op not in ("match_shape", "opaque"):
            return self.call(node)
        if isinstance(node, Call) and node.op == "match_shape":
            value = np.asarray(self.value(node.args[0]))
            if not shape_matches(node.ty.shape, value.shape, self.env):
                raise InterpretError(
                    f"match_shape: a value of shape {value.shape} does not fit {node.ty} "
                    f"(with {', '.join(f'{k} = {v}' for k, v in sorted(self.env.items()))})",
                    node,
                )
            return value
        if isinstance(node, Call) and node.op == "opaque":
            return self.opaque(node)
        if isinstance(node, Tuple):
            return tuple(self.value(f) for f in node.fields)
        if isinstance(node, TupleGetItem):
            return self.value(node.tuple_value)[node.index]
        if isinstance(node, If):
            cond = np.asarray(self.value(node.cond))
            if cond.size != 1:
                raise InterpretError(f"If condition has {cond.size} elements, expected 1", node)
            branch = node.then_branch if bool(cond.reshape(())) else node.else_branch
            self.run_bindings(branch.bindings)
            return self.value(branch.result)
        if isinstance(node, Loop):
            return self.loop(node)
        if isinstance(node, FuncCall):
            return self.func_call(node)
        raise InterpretError(f"cannot evaluate {type(node).__name__}", node)

    def call(self, node: Call) -> Any:
        """The value of a call of an op (other than match_shape and opaque)."""
        self.check_size(node)
        values = self.values
        try:
            args = [a.data if isinstance(a, Constant) else values[a] for a in node.args]
        except KeyError:
            args = [self.value(a) for a in node.args]  # (says which is not computed)
        memo = self.memo
        if memo is not None:
            out = memo.lookup(node, args)
            if out is not None:
                return out
        attrs = _resolved_attrs(node, self.env)
        if node.op == "call_lowered":
            out = self.kernel_call(node, args, attrs)
        else:
            out, used = _op_value(node.op, args, attrs, self.kernels)
            counts = self.by_kernel.setdefault(used, {})
            counts[node.op] = counts.get(node.op, 0) + 1
        if isinstance(out, list):
            out = tuple(out)
        return out if memo is None else memo.record(node, args, out)

    def run_function(self, func: str, args: list) -> Any:
        """Function `func` of this run's module evaluated on `args` as this run evaluates (its
        type checks, memo and kernels): a call's or a loop body's run."""
        return evaluate(
            self.module,
            args,
            function=func,
            check_types=self.check_types,
            memo=self.memo,
            kernels=self.kernels,
        )

    def func_call(self, node: FuncCall) -> Any:
        """The value of a call of another function of the module."""
        if self.module is None:
            raise InterpretError(f"call of @{node.func} outside a module", node)
        args = [self.value(a) for a in node.args]
        sub = self.run_function(node.func, args)
        if self.cache is not None:
            self.cache.callees[node] = callee_closure(self.module, node.func)
        self.mismatches.extend(sub.mismatches)
        self.merge_counts(sub.by_kernel)
        out = sub.outputs
        return out if isinstance(self.module[node.func].output.ty, TupleType) else out[0]

    def merge_counts(self, by_kernel: dict[str, dict[str, int]]) -> None:
        """Add a nested evaluation's counts of ops by kernel set to this one's."""
        for used, ops in by_kernel.items():
            counts = self.by_kernel.setdefault(used, {})
            for op, n in ops.items():
                counts[op] = counts.get(op, 0) + n

    def kernel_call(self, node: Call, args: list, attrs) -> Any:
        """Run a `call_lowered` with the kernel its module holds (compiled on first use)."""
        from compiler.backend.kernels import KernelNotFound, module_kernels, opt_level_of
        from compiler.ops.lowered import run_kernel

        if self.module is None:
            raise InterpretError(
                "a kernel call runs only inside the module that holds its kernel", node
            )
        try:
            level = opt_level_of(self.module)
            compiled = module_kernels(self.module).compiled(attrs["kernel"], level)
        except KernelNotFound as e:
            raise InterpretError(str(e), node) from None
        return run_kernel(compiled.runnable, args, attrs)

    def opaque(self, node: Call) -> Any:
        """Run an opaque op with its framework (torch, onnxruntime) and check that what it
        gives has the type the exporter recorded, binding the symbols that type names."""
        from compiler.opaque.layout import describe, resolve_symbols

        self.check_size(node)
        args = [self.value(a) for a in node.args]
        attrs = node.attrs
        try:
            attrs = attrs.with_(
                args=resolve_symbols(attrs["args"], self.env),
                kwargs=resolve_symbols(attrs["kwargs"], self.env),
            )
        except KeyError as e:
            raise InterpretError(
                f"{_describe(node)}: its arguments name the size {e.args[0]}, which no input gives",
                node,
            ) from None
        memo = self.memo
        out = memo.lookup(node, args) if memo is not None else None
        if out is None:
            try:
                out = get_op("opaque").compute(args, attrs)
            except PasslensError as e:
                raise InterpretError(f"while executing {_describe(node)}: {e}", node) from e
            if isinstance(out, list):
                out = tuple(out)
        if not _matches(node.ty, out, self.env):
            raise InterpretError(
                f"{_describe(node)}: {describe(node.attrs)} gave {_value_desc(out)}, not the "
                f"{node.ty} the exporter recorded",
                node,
            )
        return out if memo is None else memo.record(node, args, out)

    def loop(self, node: Loop) -> tuple:
        """Run a Loop: the body once per iteration while the count is below max_trips and
        the condition holds; the scanned outputs stacked along a new first axis."""
        if self.module is None or node.func not in self.module:
            raise InterpretError(f"loop over @{node.func}, which is not in the module", node)
        body = self.module[node.func]
        max_trips = int(np.asarray(self.value(node.max_trips)).reshape(()))
        cond = bool(np.asarray(self.value(node.cond)).reshape(()))
        carried = [self.value(a) for a in node.carried]
        captured = [self.value(a) for a in node.captured]
        k, nscan = node.num_carried, node.num_scan
        scans: list[list] = [[] for _ in range(nscan)]
        scan_bytes = [0] * nscan  # each stack sized before it is made (MAX_VALUE_BYTES)
        for j in range(nscan):  # an annotated size over the limit: refused before running
            ty = node.ty.fields[k + j]
            if isinstance(ty, TensorType) and ty.shape is not None:
                if all(isinstance(d, int) for d in ty.shape):
                    n = int(np.prod(ty.shape, dtype=object)) * np.dtype(ty.dtype.numpy).itemsize
                    if n > MAX_VALUE_BYTES:
                        raise InterpretError(
                            f"loop @{node.func}: scanned output {j} is annotated {ty}, "
                            f"{n:,} bytes, over the interpreter's limit of "
                            f"{MAX_VALUE_BYTES >> 30} GiB for one value "
                            "(compiler.interpret.MAX_VALUE_BYTES)",
                            node,
                        )
        i = 0
        it_dtype = body.params[0].ty.dtype.numpy
        work = _LOOP_WORK.get() or [0]
        while i < max_trips and cond:
            if i >= MAX_LOOP_ITERATIONS:
                raise InterpretError(
                    f"loop @{node.func} ran {MAX_LOOP_ITERATIONS} iterations without ending "
                    "(passlens' limit for one loop)",
                    node,
                )
            work[0] += 1 + len(body.bindings)
            if work[0] > MAX_LOOP_WORK:
                raise InterpretError(
                    f"loop @{node.func} (iteration {i:,}): the loops of this run did "
                    f"{work[0]:,} units of work (an iteration and its body's bindings), over "
                    f"the interpreter's budget of {MAX_LOOP_WORK:,} for all loops of one run, "
                    "nested loops included (compiler.interpret.MAX_LOOP_WORK)",
                    node,
                )
            args = [np.asarray(i, dtype=it_dtype), np.asarray(cond), *carried, *captured]
            sub = self.run_function(node.func, args)
            self.mismatches.extend(sub.mismatches)
            self.merge_counts(sub.by_kernel)
            out = sub.outputs
            cond = bool(np.asarray(out[0]).reshape(()))
            carried = list(out[1 : 1 + k])
            for j in range(nscan):
                scanned = np.asarray(out[1 + k + j])
                scan_bytes[j] += scanned.nbytes
                if scan_bytes[j] > MAX_VALUE_BYTES:
                    raise InterpretError(
                        f"loop @{node.func}: scanned output {j} would hold more than "
                        f"{scan_bytes[j]:,} bytes after {i + 1:,} iterations, over the "
                        f"interpreter's limit of {MAX_VALUE_BYTES >> 30} GiB for one value "
                        "(compiler.interpret.MAX_VALUE_BYTES)",
                        node,
                    )
                scans[j].append(scanned)
            i += 1
        if self.cache is not None:
            self.cache.callees[node] = callee_closure(self.module, node.func)
        stacked = []
        for j in range(nscan):
            ty = node.ty.fields[k + j]
            if scans[j]:
                shapes = {a.shape for a in scans[j]}
                if len(shapes) > 1:
                    raise InterpretError(
                        f"loop @{node.func}: scanned output {j} changes shape between "
                        f"iterations ({', '.join(map(str, sorted(shapes)))})",
                        node,
                    )
                stacked.append(np.stack(scans[j]))
            else:  # no iteration: an empty stack of the per-iteration shape
                per = body.ret_type.fields[1 + k + j]
                dims = empty_scan_shape([p.ty for p in body.params[2:]], [*carried, *captured], per)
                if dims is None:
                    raise InterpretError(
                        f"loop @{node.func} ran no iteration and scanned output {j} has no "
                        f"known per-iteration shape ({per})",
                        node,
                    )
                stacked.append(np.zeros((0, *dims), dtype=ty.dtype.numpy))
        return (*carried, *stacked)


def _solve_expression_dims(params: Sequence[Var], arrays: Sequence[Any], env: dict) -> None:
    """Bind a symbol that appears only inside dims linear in it (`2*n + 1` of size 7 gives
    n = 3); a dim that is not linear in its one unbound symbol, or not solvable in integers,
    binds nothing (the check that follows then reports it)."""
    pairs: list[tuple[SymExpr, int]] = []

    def collect(ty: Type, value: Any) -> None:
        if isinstance(ty, TupleType) and isinstance(value, (tuple, list)):
            for t, v in zip(ty.fields, value):
                collect(t, v)
        elif isinstance(ty, TensorType) and ty.shape is not None and hasattr(value, "shape"):
            if len(ty.shape) == len(value.shape):
                pairs.extend(
                    (d, int(n)) for d, n in zip(ty.shape, value.shape) if isinstance(d, SymExpr)
                )

    for p, arr in zip(params, arrays):
        collect(p.ty, arr)
    progress = True
    while progress:
        progress = False
        for d, actual in pairs:
            unbound = [s for s in d.free_symbols if s not in env]
            if len(unbound) != 1:
                continue
            (name,) = unbound
            n = solve_dim(lambda v, d=d, name=name: d.evaluate({**env, name: v}), actual)
            if n is not None:
                env[name] = n
                progress = True


@_one_loop_budget
def evaluate(
    module: Module | Function,
    inputs: Sequence[Any],
    function: str = "main",
    cache: ValueCache | None = None,
    check_types: bool = False,
    memo: CallMemo | None = None,
    kernels: str | None = None,
) -> Evaluation:
    """Evaluate `function` on `inputs`; returns outputs and every intermediate value.

    `cache`: a ValueCache for these inputs, shared between calls so nodes computed before
    are reused. `check_types`: record nodes whose value disagrees with the annotated type.
    `memo`: hooks around every op call (a `CallMemo`), e.g. to reuse values by what
    computes them rather than by node. `kernels`: `"torch"` or `"numpy"` (see the module
    docstring; default: the evaluation this one runs inside, else `default_kernels`).
    """
    kernels = _kernel_set(kernels)
    token = _KERNELS.set(kernels)
    try:
        return _evaluate(module, inputs, function, cache, check_types, memo, kernels)
    finally:
        _KERNELS.reset(token)


def bind_inputs(
    params: Sequence[Var], inputs: Sequence[Any], function: str = "main"
) -> tuple[list, dict[str, int]]:
    """`inputs` as the values of `params` (arrays of their dtypes) and the sizes of their
    symbolic dims (`{"n": 4}`); an InterpretError names the first input whose dtype, rank
    or dims do not match its parameter's type. Inputs beyond `params` are not looked at."""
    env: dict[str, int] = {}
    arrays = [_to_value(v, p.ty, p, i) for i, (p, v) in enumerate(zip(params, inputs))]
    for p, arr in zip(params, arrays):  # the common case: static types met exactly
        ty = p.ty
        if not (
            isinstance(arr, np.ndarray)
            and isinstance(ty, TensorType)
            and arr.shape == ty.shape
            and arr.dtype == ty.dtype.numpy
        ):
            break
    else:
        return arrays, env  # (no symbol to bind: equal tuples hold ints only)
    # Two rounds: the first binds symbols from plain dims (`n`); then a symbol seen only inside
    # an expression (`2*n + 1`) is solved for; the second round checks every dim, including
    # expressions of symbols bound by a later input (`2*n + 1` before `n`).
    for round_ in range(2):
        if round_ == 1:
            _solve_expression_dims(params, arrays, env)
        for i, (p, arr) in enumerate(zip(params, arrays)):
            if not _matches(p.ty, arr, env):
                bound = sorted(s for s in symbols_of(p.ty) if s in env)
                where = ", ".join(f"{s} = {env[s]}" for s in bound)
                raise InterpretError(
                    f"input {i} (%{p.name}) of @{function} expects {p.ty}, got "
                    f"{_value_desc(arr)}" + (f" (where {where})" if where else "")
                )
    return arrays, env


def _evaluate(module, inputs, function, cache, check_types, memo, kernels) -> Evaluation:
    if isinstance(module, Function):
        fn, mod = module, None
    else:
        fn, mod = module[function], module
    params = fn.params
    if len(inputs) != len(params):
        sig = ", ".join(f"%{p.name}: {p.ty}" for p in params)
        raise InterpretError(
            f"@{function} takes {len(params)} input(s) ({sig}), got {len(inputs)}"
            + (
                f"; its first {fn.num_input} are runtime inputs and the rest are weights"
                if fn.num_input != len(params)
                else ""
            )
        )
    arrays, env = bind_inputs(params, inputs, function)
    values: dict = cache.values if cache is not None else {}
    if cache is not None:
        for p, arr in zip(params, arrays):
            cache.bind(p, arr)
    else:
        values.update(zip(params, arrays))
    if cache is not None and mod is not None:
        cache.drop_stale_calls(mod, fn)
    ev = _Evaluator(mod, values, env, check_types, memo, cache, kernels)
    ev.run_bindings(fn.bindings)
    if cache is not None:
        cache.hits += ev.cache_hits
        cache.misses += ev.computed
    out = ev.value(fn.output)
    outputs = out if isinstance(fn.output.ty, TupleType) else (out,)
    return Evaluation(tuple(outputs), values, env, ev.mismatches, kernels, ev.by_kernel)


def matmul_float64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a @ b` accumulated in float64 (a big 2-D `b` upcast a block at a time, never
    whole, the blocks shared among threads), as the interpreter's matmul computes all but
    float32 products; the float64 result."""
    from compiler.ir.nn_compute import matmul_f64

    return np.asarray(matmul_f64(a, b), dtype=np.float64)


def run(
    module: Module | Function, *inputs: Any, function: str = "main", kernels: str | None = None
) -> tuple:
    """Run `function` of `module` on numpy inputs; returns a tuple of output arrays
    (`kernels`: as for `evaluate`)."""
    return evaluate(module, inputs, function=function, kernels=kernels).outputs


__all__ = [
    "run",
    "matmul_float64",
    "evaluate",
    "bind_inputs",
    "compute_op",
    "default_kernels",
    "kernels_in_use",
    "rounds_otherwise",
    "warm_up_kernels",
    "KERNEL_SETS",
    "CallMemo",
    "Evaluation",
    "ValueCache",
    "InterpretError",
    "TypeMismatch",
]
