"""Lowering graph ops to loop-IR kernels: the values rules work on, the kernel builder, the
rule registry, and the lowering of a group of calls (one op, or a fused primitive function)
into one kernel.

Rules (`lower_*.py`, one file per op family, registered with `lowering`) see their
inputs as `Tensor` values. A tensor is either a buffer, or *lazy*: a function from an
output index to a scalar expression, which is how elementwise and injective ops fuse: a
fused `permute_dims -> multiply -> add` becomes one loop nest whose store computes the
whole chain. A rule that needs memory (a reduction, a convolution, a library call) asks the
builder to *materialize* its inputs into buffers and emits its own stages. The last value
of a group is stored into the kernel's output buffer; when that final stage only re-reads a
workspace element by element, the workspace is replaced by the output buffer (the epilogue
runs in place, e.g. bias and gelu after a library matmul).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from compiler.backend import loops as L
from compiler.errors import PasslensError
from compiler.ir.names import fresh_name
from compiler.ir.nodes import Call, Constant, Expr
from compiler.ir.op_registry import get_op
from compiler.ir.symbolic import SymExpr
from compiler.ir.types import DType, TensorType, TupleType


class LoweringError(PasslensError):
    """A graph op cannot be lowered; the message names the op and why."""


# ----- values ---------------------------------------------------------------------------------


class Tensor:
    """A value during lowering: a shape (i64 expressions), a dtype and element access."""

    shape: tuple[L.Expr, ...]
    dtype: DType

    def at(self, idx: Sequence[L.Expr]) -> L.Expr:
        """The element at `idx` (one expression per dim)."""
        raise NotImplementedError

    @property
    def ndim(self) -> int:
        """The number of dims."""
        return len(self.shape)


class BufferTensor(Tensor):
    """A value held in a buffer."""

    def __init__(self, buffer: L.Buffer):
        self.buffer = buffer
        self.shape = buffer.shape
        self.dtype = buffer.dtype

    def at(self, idx: Sequence[L.Expr]) -> L.Expr:
        return L.Load(self.buffer, tuple(idx))


class LazyTensor(Tensor):
    """A value computed where it is read: `fn(idx)` gives the element at `idx`.

    Reading the same index again gives the same expression object, not a new copy: an op that
    reads a value twice (`add(v, v)`) would otherwise build it twice, doubling the work with
    every such op in a chain. A shared expression is computed once by codegen and printed
    once (`let`)."""

    def __init__(self, shape: Sequence[L.Expr], dtype: DType, fn: Callable[[tuple], L.Expr]):
        self.shape = tuple(L.as_expr(d) for d in shape)
        self.dtype = dtype
        self.fn = fn
        self._reads: dict[tuple, tuple[tuple, L.Expr]] = {}

    def at(self, idx: Sequence[L.Expr]) -> L.Expr:
        idx = tuple(idx)
        # Index expressions compare by identity (hashing one walks all of it), constants and
        # variables by value; the entry keeps ``idx`` alive, so no id in a key is reused.
        key = tuple(e if isinstance(e, (L.Const, L.Var)) else id(e) for e in idx)
        read = self._reads.get(key)
        if read is None:
            value = self.fn(idx)
            if value.dtype is not self.dtype:
                raise LoweringError(f"a lazy value of {self.dtype} gave {value.dtype}")
            read = self._reads[key] = (idx, value)
        return read[1]


def scalar_tensor(value: L.Expr) -> LazyTensor:
    """A rank-0 tensor holding one expression."""
    return LazyTensor((), value.dtype, lambda idx: value)


def compute_dtype(dtype: DType) -> DType:
    """The dtype arithmetic on `dtype` is done in: f32 for the 16-bit floats."""
    return DType.float32 if dtype in (DType.float16, DType.bfloat16) else dtype


def broadcast_index(t: Tensor, idx: Sequence[L.Expr]) -> tuple[L.Expr, ...]:
    """The index into `t` for an output index `idx` under numpy broadcasting."""
    offset = len(idx) - t.ndim
    out = []
    for j, d in enumerate(t.shape):
        out.append(L.Const(0, L.INDEX) if L.static_int(d) == 1 else idx[offset + j])
    return tuple(out)


def elementwise(
    inputs: Sequence[Tensor],
    shape: Sequence[L.Expr],
    dtype: DType,
    fn: Callable[..., L.Expr],
    promote: bool = True,
) -> LazyTensor:
    """A lazy value computing `fn` of the broadcast inputs' elements. With `promote`,
    16-bit float inputs are read as f32 and the result is cast to `dtype`."""

    def at(idx):
        vals = [t.at(broadcast_index(t, idx)) for t in inputs]
        if promote:
            vals = [L.cast(compute_dtype(v.dtype), v) for v in vals]
        return L.cast(dtype, fn(*vals))

    return LazyTensor(shape, dtype, at)


# ----- the op being lowered ------------------------------------------------------------------


@dataclass
class OpCall:
    """What a rule needs to know about the call it lowers."""

    op: str
    attrs: dict
    arg_types: tuple[TensorType, ...]
    out_type: TensorType
    out_shape: tuple[L.Expr, ...]
    label: str
    # for an op with a tuple result (topk): the field the kernel computes (``out_type`` is
    # its type); the rule returns one Tensor per field and ``dest`` is that field's buffer
    field: int | None = None

    @property
    def out_dtype(self) -> DType:
        """The result dtype."""
        return self.out_type.dtype


Rule = Callable[
    ["KernelBuilder", OpCall, list[Tensor], L.Buffer | None], Tensor | tuple[Tensor, ...]
]
LOWERINGS: dict[str, Rule] = {}


def lowering(*ops: str):
    """Decorator: register a rule `rule(kb, call, inputs, dest) -> Tensor` for `ops`.
    `dest` is the kernel's output buffer when the call is the group's result (a rule that
    emits stages may write into it directly and return it), else None. A rule for an op with
    a tuple result returns one Tensor per field; `dest` then holds `call.field`."""

    def register(rule: Rule) -> Rule:
        for op in ops:
            if op in LOWERINGS:
                raise ValueError(f"lowering for {op!r} is registered twice")
            LOWERINGS[op] = rule
        return rule

    return register


def supported_ops() -> set[str]:
    """Graph ops legalize-ops can lower."""
    return set(LOWERINGS)


# ----- the kernel builder ---------------------------------------------------------------------


class KernelBuilder:
    """Collects a kernel's buffers and stages while rules run."""

    def __init__(self, base: str, source: str = ""):
        self.base = base
        self.source = source
        self.inputs: list[L.Buffer] = []
        self.output: L.Buffer | None = None
        self.workspaces: list[L.Buffer] = []
        self.body: list[L.Stmt] = []
        self.dims: list[str] = []
        self._names: set[str] = set()
        self._counter = 0

    def unique(self, hint: str) -> str:
        """A buffer or variable name not used yet in this kernel."""
        hint = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "v"
        return fresh_name(hint, self._names, sep="")

    def var(self, hint: str = "i") -> L.Var:
        """A fresh i64 loop variable."""
        self._counter += 1
        return L.Var(self.unique(f"{hint}{self._counter - 1}" if hint == "i" else hint))

    def note_dims(self, shape: Sequence[L.Expr]) -> None:
        for d in shape:
            for name in sorted(L.free_vars(d)):
                if name not in self.dims:
                    self.dims.append(name)
                    self._names.add(name)

    def add_input(self, hint: str, ty: TensorType) -> L.Buffer:
        """A new input buffer."""
        shape = dims_of(ty)
        self.note_dims(shape)
        buf = L.Buffer(self.unique(hint), shape, ty.dtype, "in")
        self.inputs.append(buf)
        return buf

    def set_output(self, ty: TensorType) -> L.Buffer:
        """The output buffer."""
        shape = dims_of(ty)
        self.note_dims(shape)
        self.output = L.Buffer(self.unique("out"), shape, ty.dtype, "out")
        return self.output

    def workspace(self, shape: Sequence[L.Expr], dtype: DType, hint: str = "tmp") -> L.Buffer:
        """A buffer the runtime allocates for one call of the kernel."""
        buf = L.Buffer(self.unique(hint), tuple(shape), dtype, "work")
        self.note_dims(buf.shape)
        self.workspaces.append(buf)
        return buf

    def local(self, dtype: DType, hint: str = "acc") -> L.Buffer:
        """A scalar accumulator (declare it with `L.Local` around its uses)."""
        return L.Buffer(self.unique(hint), (), dtype, "local")

    def stage(self, label: str, stmt: L.Stmt) -> None:
        """Append a loop-nest stage."""
        self.body.append(L.Stage(label, stmt))

    def libcall(
        self, routine: str, out: L.View, args: Sequence[L.View], label: str, **attrs
    ) -> None:
        """Append a library call stage."""
        self.body.append(L.LibCall(routine, out, tuple(args), tuple(sorted(attrs.items())), label))

    def nest(
        self,
        shape: Sequence[L.Expr],
        body: Callable[[tuple[L.Var, ...]], L.Stmt],
        parallel: int | None = None,
    ) -> L.Stmt:
        """Loops over `shape` around `body(index_vars)`; the first `parallel` loops
        (default: all) are marked parallel."""
        # a dim of size 1 needs no loop: its index is 0
        idx = tuple(L.Const(0, L.INDEX) if L.static_int(d) == 1 else self.var() for d in shape)
        stmt = body(idx)
        n_par = len(shape) if parallel is None else parallel
        for k in reversed(range(len(shape))):
            if isinstance(idx[k], L.Var):
                stmt = L.For(idx[k], L.as_expr(shape[k]), stmt, parallel=k < n_par)
        return stmt

    def materialize(self, t: Tensor, label: str, dest: L.Buffer | None = None) -> L.Buffer:
        """`t` held in a buffer: itself if it is one (and no `dest` is asked for), else a
        stage storing it into `dest` or a new workspace."""
        if isinstance(t, BufferTensor) and (dest is None or dest == t.buffer):
            return t.buffer
        buf = dest if dest is not None else self.workspace(t.shape, t.dtype)
        self.stage(label, self.nest(t.shape, lambda idx: L.Store(buf, idx, t.at(idx))))
        return buf

    def finish(self, result: Tensor, label: str) -> L.Kernel:
        """Store the group's result into the output buffer (in place over a workspace when
        possible) and build the kernel."""
        assert self.output is not None
        out = self.output
        if not (isinstance(result, BufferTensor) and result.buffer == out):
            if tuple(result.shape) != tuple(out.shape) or result.dtype is not out.dtype:
                raise LoweringError(
                    f"{label}: lowered value {result.dtype.short}{list(map(str, result.shape))} "
                    f"does not fit the result {L.buffer_type(out)}"
                )
            self.materialize(result, label, dest=out)
            self._reuse_output_for_workspace()
        return L.Kernel(
            self.base,
            tuple(self.inputs) + (out,),
            tuple(self.workspaces),
            tuple(self.dims),
            tuple(self.body),
            self.source,
        )

    def _reuse_output_for_workspace(self) -> None:
        """If the final stage reads a workspace of the output's type only at the element it
        stores, and nothing else reads that workspace, compute it in the output buffer."""
        final = self.body[-1]
        out = self.output
        stores = [s for s in L.walk_stmt(final) if isinstance(s, L.Store)]
        if len(stores) != 1:
            return
        store = stores[0]
        for w in list(self.workspaces):
            if w.shape != out.shape or w.dtype is not out.dtype:
                continue
            loads = [e for e in L.walk_expr(store.value) if isinstance(e, L.Load) and e.buffer == w]
            if not loads or any(ld.indices != store.indices for ld in loads):
                continue
            if any(_reads(s, w) for s in self.body[:-1]) or _reads_in_indices(store, w):
                continue
            self.body = [L.replace_buffers(s, {w: out}) for s in self.body]
            self.workspaces.remove(w)
            return


def _reads(s: L.Stmt, buf: L.Buffer) -> bool:
    if isinstance(s, L.LibCall):
        return any(a.buffer == buf for a in s.args)
    for x in L.walk_stmt(s):
        for e in L.stmt_exprs(x):
            if any(isinstance(y, L.Load) and y.buffer == buf for y in L.walk_expr(e)):
                return True
    return False


def _reads_in_indices(store: L.Store, buf: L.Buffer) -> bool:
    return any(
        isinstance(y, L.Load) and y.buffer == buf for i in store.indices for y in L.walk_expr(i)
    )


def dims_of(ty: TensorType) -> tuple[L.Expr, ...]:
    """A graph tensor type's shape as i64 expressions (a clear error for unknown sizes)."""
    if not isinstance(ty, TensorType) or ty.shape is None:
        raise LoweringError(f"cannot lower a value of type {ty}: its rank must be known")
    try:
        return tuple(L.as_expr(d) for d in ty.shape)
    except ValueError:
        raise LoweringError(
            f"cannot lower a value of type {ty}: a '?' dim has no size to loop over "
            "(run dynamic-to-static, or give the dim a symbolic name)"
        ) from None


def static_dims(ty: TensorType, what: str) -> tuple[int, ...]:
    """The static shape of `ty`; symbolic dims are a clear error naming `what`."""
    if not ty.is_static:
        raise LoweringError(f"{what} needs static dims, got {ty}")
    return tuple(ty.shape)


def has_symbols(value) -> bool:
    """Whether an attribute value holds a symbolic dim."""
    if isinstance(value, SymExpr):
        return True
    return isinstance(value, tuple) and any(has_symbols(v) for v in value)


# ----- lowering a group of calls ----------------------------------------------------------------


def _slot_names(op: str, n: int) -> list[str]:
    names = [s.rstrip("?").lstrip("*") for s in get_op(op).inputs]
    if names and get_op(op).inputs[-1].startswith("*"):
        names += [names[-1]] * max(0, n - len(names))
    return (names + ["arg"] * n)[:n]


def inline_constant(c: Constant) -> L.Expr | None:
    """An unnamed one-element constant as an immediate (else None: it becomes a buffer)."""
    if c.name is not None or c.data.size != 1:
        return None
    value = c.data.reshape(()).item()
    dtype = c.ty.dtype
    if dtype in (DType.float16, DType.bfloat16):
        return L.Cast(
            dtype, L.Const(float(np.float32(c.data.reshape(()).astype(np.float32))), DType.float32)
        )
    return L.Const(value, dtype)


MAX_LAZY_CHAIN = 32
"""The most lazy values a fused group reads through one another. Reading an element of a lazy
value reads its inputs' elements (recursively) into one expression, so a longer chain is cut:
the value at the limit is stored into a workspace, and the chain goes on reading that buffer.
A chain of any length then lowers within a fixed recursion depth."""


def lower_group(
    base: str, calls: Sequence[Call], result: Call, source: str = "", field: int | None = None
) -> tuple[L.Kernel, list[Expr]]:
    """One kernel computing `result` from `calls` (in dependency order, `result` last);
    returns the kernel and the graph values to pass as its arguments, in order. For a
    `result` of tuple type (topk), `field` says which of its fields the kernel computes."""
    for call in calls:
        # first the low-precision types (float8, int4, ...): the backend has no values of
        # them, so an op making or reading them (to_float8e8m0, a cast) has no lowering
        for ty in [a.ty for a in call.args] + [call.ty]:
            for t in ty.fields if isinstance(ty, TupleType) else (ty,):
                if isinstance(t, TensorType) and t.dtype.is_storage_only:
                    raise LoweringError(
                        f"{call.op}: the LLVM backend does not compile {t.dtype.name} "
                        f"({t.dtype.short}) values; run this module with the interpreter"
                    )
        if call.op not in LOWERINGS:
            raise LoweringError(unsupported_message(call.op))
    kb = KernelBuilder(base, source)
    values: dict[int, Tensor] = {}
    args: list[Expr] = []
    inside = {id(c) for c in calls}
    for call in calls:
        for a, slot in zip(call.args, _slot_names(call.op, len(call.args)), strict=False):
            if id(a) in inside or id(a) in values:
                continue
            if isinstance(a, Constant):
                imm = inline_constant(a)
                if imm is not None:
                    if a.ty.shape:  # a one-element array: broadcast as its shape
                        values[id(a)] = LazyTensor(dims_of(a.ty), imm.dtype, lambda idx, v=imm: v)
                    else:
                        values[id(a)] = scalar_tensor(imm)
                    continue
            if not isinstance(a.ty, TensorType):
                raise LoweringError(f"{call.op}: argument of type {a.ty} is not a tensor")
            values[id(a)] = BufferTensor(kb.add_input(slot, a.ty))
            args.append(a)
    result_ty = _field_type(result, field)
    out = kb.set_output(result_ty)
    labels = []
    # id(lazy value) -> (the value, kept alive for its id; the ops of the longest lazy chain
    # ending at it)
    chains: dict[int, tuple[Tensor, list[str]]] = {}

    def chain(t: Tensor) -> list[str]:
        return chains[id(t)][1] if id(t) in chains else []

    for call in calls:
        rule = LOWERINGS[call.op]
        call_field = field if call is result else None
        call_ty = result_ty if call is result else call.ty
        if not isinstance(call_ty, TensorType):
            raise LoweringError(f"{call.op}: a result of type {call.ty} cannot be lowered")
        for k, v in call.attrs.items():
            if has_symbols(v) and call.op not in SYMBOLIC_ATTR_OK:
                raise LoweringError(f"{call.op}: attribute {k}={v} is symbolic; it must be static")
        oc = OpCall(
            call.op,
            dict(call.attrs),
            tuple(a.ty for a in call.args),
            call_ty,
            dims_of(call_ty),
            call.op,
            call_field,
        )
        labels.append(call.op)
        inputs = []
        for a in call.args:
            ops = chain(values[id(a)])
            if len(ops) >= MAX_LAZY_CHAIN:
                label = ", ".join(dict.fromkeys(ops))
                values[id(a)] = BufferTensor(kb.materialize(values[id(a)], label))
            inputs.append(values[id(a)])
        try:
            value = rule(kb, oc, inputs, out if call is result else None)
        except LoweringError as e:
            raise LoweringError(f"{call.op}: {e}") from None
        if isinstance(value, tuple):
            if call_field is None:
                raise LoweringError(
                    f"{call.op}: a tuple result is lowered one field per kernel (give field)"
                )
            value = value[call_field]
        if isinstance(value, LazyTensor) and id(value) not in chains:
            longest = max((chain(t) for t in inputs), key=len, default=[])
            chains[id(value)] = (value, [*longest, call.op])
        values[id(call)] = value
    kernel = kb.finish(values[id(result)], ", ".join(dict.fromkeys(labels)))
    return kernel, args


def _field_type(result: Call, field: int | None) -> TensorType:
    """The type of the value a kernel for `result` (field `field` of it) computes."""
    ty = result.ty
    if field is not None:
        if not isinstance(ty, TupleType) or not 0 <= field < len(ty.fields):
            raise LoweringError(f"{result.op}: a result of type {ty} has no field {field}")
        ty = ty.fields[field]
    if not isinstance(ty, TensorType):
        raise LoweringError(f"{result.op}: a result of type {ty} cannot be lowered")
    return ty


# Ops whose attributes may hold symbolic dims (the rule evaluates them as expressions, or, for
# resize's ``sizes``, reads the same dims from the result type).
SYMBOLIC_ATTR_OK = {"reshape", "broadcast_to", "expand", "full", "zeros", "ones", "arange",
                    "tril", "triu", "resize"}  # fmt: skip


def unsupported_message(op: str) -> str:
    """The error text for an op without a lowering."""
    return (
        f"legalize-ops cannot lower op {op!r}: no loop-level lowering is registered for it "
        f"(supported: {len(LOWERINGS)} ops, see compiler.backend.supported_ops())"
    )


__all__ = [
    "BufferTensor",
    "KernelBuilder",
    "LOWERINGS",
    "LazyTensor",
    "LoweringError",
    "OpCall",
    "Tensor",
    "broadcast_index",
    "compute_dtype",
    "elementwise",
    "lower_group",
    "lowering",
    "supported_ops",
]
