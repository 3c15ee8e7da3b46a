"""fold-constant: evaluate, as the interpreter does (its default kernels: torch's where an op
has one, compiler/torch_kernels.py, else the numpy reference), every op whose inputs are all
constants, and replace it by a new named constant: a folded value has the very bits the
interpreter computed for the op before, so a check finds everything after it in its memo.
Folding never compiles anything.

A folded value is held by the module (and by every snapshot of a trace), and a few bytes of
model can describe a huge one (``full(shape=[100000000])``): a value over ``max_bytes`` is left
to be computed at run time. Its size is known from its type before anything is computed.

Quantized values stay quantized (TVM's FoldConstant leaves QNN ops alone for the same reason):
by default a call that only *widens* a constant of a quantized storage type is not folded,

- ``dequantize(c, scale, zero_point)`` of a constant ``c``, and
- ``cast(c)`` of a constant ``c`` of a narrow integer type (at most 16 bits: i8, u8, i16,
  u16) to a wider type (what fold-qdq makes of a weight: ``cast(w_i8, dtype=i32)``),

since folding them multiplies the weights' bytes by 2 to 4 (an i8 weight becomes f32) and
the compressed model is lost; they run at run time, fused with their consumer (fuse-ops puts
an elementwise producer into the conv2d / matmul it feeds). Ops on the quantized constant
itself (a transpose of an i8 weight) still fold. Types the LLVM backend cannot compute on at
run time (int4, float8: :attr:`DType.is_storage_only`) are folded as before.
``fold-constant{fold_qdq=true}`` folds these too.

A transpose of a constant that something else reads as it is (a tied embedding table: read by
``take``, and transposed by the output layer, ``matmul(h, permute_dims(W))``) is not folded
when only matmuls read the transpose: folding it would store the constant twice. The matmuls
read the constant with ``transpose_b`` instead (BLAS reads either layout, so this costs nothing
at run time). A transpose of a constant nothing else reads (an ordinary linear layer's weight)
is folded as before: the copy replaces the original.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from compiler.ir.attrs import TypeInferenceError
from compiler.ir.names import fresh_name
from compiler.ir.nodes import Call, Constant, Expr, Function, If, Module, Tuple, TupleGetItem
from compiler.ir.symbolic import SymExpr
from compiler.ir.types import TensorType
from compiler.passes.infra.attribute_form import attribute_form
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass
from compiler.passes.infra.rewrite import rewrite_function
from compiler.passes.infra.rules import ITEM_OF_TUPLE, Rule, Rules, op, rule_table

DEFAULT_MAX_BYTES = 64 << 20
"""The largest value folded by default (64 MiB: a 4096 x 4096 f32 matrix)."""

DATA_DEPENDENT_GROWTH = 64
"""At most how many times the bytes of its inputs the value of an op whose size depends on its
input data may take (``nonzero``: an i64 per dim of each nonzero element). Such an op, whose
size no type gives, is computed only when its inputs fit in ``max_bytes / 64``."""

# Ops whose value must not be frozen into the module even with constant inputs (an opaque op
# is run by its framework, never at compile time: it is a barrier to every pass; a kernel call
# runs with its module's kernel, which a lone call does not have).
NOT_FOLDABLE: set[str] = {"opaque", "call_lowered"}


def _has_symbols(value) -> bool:
    if isinstance(value, SymExpr):
        return True
    return isinstance(value, tuple) and any(_has_symbols(v) for v in value)


class ConstantNamer:
    """Names for folded constants: the first named input's name plus the op
    (``fc.weight.permute_dims``), unique within the module."""

    def __init__(self, module: Module):
        self.used = set(module.constants())

    def name(self, node: Call) -> str:
        base = next((a.name for a in node.args if isinstance(a, Constant) and a.name), None)
        base = f"{base}.{node.op}" if base else f"const.{node.name or node.op}"
        return fresh_name(base, self.used)


def result_bytes(node: Call) -> int | None:
    """The size in bytes of the tensor a call on constants computes, from its type; None when
    no type gives it (a size that depends on the input data, or a failing inference). An
    annotation written before the inputs became constants (``i64[?]``) is inferred again; a
    shape given by the values of a constant input (``pad`` by a pads tensor) is read from
    them, as dynamic-to-static does."""
    ty = node.ty
    if isinstance(ty, TensorType) and not ty.is_static:
        try:
            ty = node.inferred_type()
            if isinstance(ty, TensorType) and not ty.is_static:
                static = attribute_form(node)
                ty = static.ty if static is not None else ty
        except (TypeInferenceError, PassError):
            return None
    if not isinstance(ty, TensorType) or not ty.is_static:
        return None
    return ty.numel * ty.dtype.itemsize


QUANTIZED_INT_BITS = 16
"""The widest integer type whose constants are kept when only widened (see the module doc)."""


def widens_quantized(node: Call) -> bool:
    """Whether ``node`` (a call on constants) only widens a quantized value: a ``dequantize``,
    or a ``cast`` of an integer of at most :data:`QUANTIZED_INT_BITS` bits to a wider type
    (int4 and the other types the backend cannot compute on excepted)."""
    if not node.args or not isinstance(node.args[0].ty, TensorType):
        return False
    src = node.args[0].ty.dtype
    if src.is_storage_only:
        return False
    if node.op == "dequantize":
        return True
    if node.op != "cast" or not isinstance(node.ty, TensorType):
        return False
    return src.is_int and src.bits <= QUANTIZED_INT_BITS and node.ty.dtype.bits > src.bits


def fold_call(
    node: Call, max_bytes: int = DEFAULT_MAX_BYTES, fold_qdq: bool = False
) -> np.ndarray | None:
    """The value of a call whose arguments are all constants, or None if it cannot fold, its
    value would take more than ``max_bytes`` (then nothing is computed, unless no type gives
    the size: see :data:`DATA_DEPENDENT_GROWTH`) or it only widens a quantized constant
    (:func:`widens_quantized`; unless ``fold_qdq``)."""
    if node.op in NOT_FOLDABLE or not all(isinstance(a, Constant) for a in node.args):
        return None
    if not fold_qdq and widens_quantized(node):
        return None
    if not isinstance(node.ty, TensorType) or any(_has_symbols(v) for v in node.attrs.values()):
        return None  # (ops with several outputs stay as they are)
    size = result_bytes(node)
    if size is None:
        size = DATA_DEPENDENT_GROWTH * sum(a.data.nbytes for a in node.args)
    if size > max_bytes:
        return None
    from compiler.interpret import compute_op

    out = compute_op(node.op, [a.data for a in node.args], node.attrs)
    if not isinstance(out, np.ndarray) or out.nbytes > max_bytes:
        return None
    return out


def swaps_last_two(node: Expr) -> bool:
    """Whether ``node`` is a ``permute_dims`` that swaps the last two dims and keeps the rest."""
    if not (isinstance(node, Call) and node.op == "permute_dims"):
        return False
    ty = node.args[0].ty
    if not isinstance(ty, TensorType) or ty.shape is None or len(ty.shape) < 2:
        return False
    rank = len(ty.shape)
    axes = node.attrs["axes"]
    axes = list(reversed(range(rank))) if axes is None else [a % rank for a in axes]
    return axes == [*range(rank - 2), rank - 1, rank - 2]


def _key(c: Constant) -> object:
    return c.name if c.name is not None else id(c)


def constant_reads(module: Module) -> Counter:
    """How many times each constant of ``module`` is read (by name, or identity when
    unnamed): as an operand, a branch's result or a function's output."""
    reads: Counter = Counter()
    for fn in module.functions.values():
        values = [fn.output]
        for node in fn.iter_nodes():
            values.extend(node.operands)
            if isinstance(node, If):
                values += [node.then_branch.result, node.else_branch.result]
        reads.update(_key(v) for v in values if isinstance(v, Constant))
    return reads


def shared_transposes(fn: Function, reads: Counter) -> dict[int, Call]:
    """The bindings of ``fn`` (top level) that transpose a constant (:func:`swaps_last_two`)
    which something else reads too (``reads``: :func:`constant_reads`), and are read only as
    the ``rhs`` of matmuls (by id): folding one would store the constant twice."""
    candidates = {
        id(b): b
        for b in fn.bindings
        if swaps_last_two(b) and isinstance(b.args[0], Constant) and reads[_key(b.args[0])] > 1
    }
    if not candidates:
        return {}
    other: set[int] = {id(fn.output)}  # returned: its value is needed as it is
    for node in fn.iter_nodes():
        if isinstance(node, If):
            other.update((id(node.then_branch.result), id(node.else_branch.result)))
        # a matmul of two constants folds whole: its transpose is folded as before
        by_matmul = (
            isinstance(node, Call)
            and node.op == "matmul"
            and not isinstance(node.args[0], Constant)
        )
        for i, arg in enumerate(node.operands):
            if not (by_matmul and i == 1):
                other.add(id(arg))
    if isinstance(fn.output, Tuple):
        other.update(id(f) for f in fn.output.fields)
    return {k: b for k, b in candidates.items() if k not in other}


def read_transposed(node: Call, transposes: dict[int, Call]) -> Call | None:
    """``matmul(x, permute_dims(W))`` as ``matmul(x, W, transpose_b=...)`` when the transpose
    is one of ``transposes``, else None."""
    if node.op != "matmul" or id(node.args[1]) not in transposes:
        return None
    (w,) = node.args[1].args
    flipped = node.attrs.with_(transpose_b=not node.attrs["transpose_b"])
    return Call("matmul", (node.args[0], w), flipped, name=node.name)


@register_pass
@dataclass(frozen=True)
class FoldConstant(Pass):
    """Replace ops on constants by their values (up to ``max_bytes`` each: a bigger one stays
    an op, computed at run time); simplify tuple items of constant tuples. Quantized
    constants stay quantized: a ``dequantize`` or widening ``cast`` of one is folded only
    with ``fold_qdq`` (see the module doc)."""

    name: ClassVar[str] = "fold-constant"
    # a safety limit: a spec may lower it, not raise it (compiler.passes.infra.pipeline.LIMIT)
    max_bytes: int = field(default=DEFAULT_MAX_BYTES, metadata={"limit": True})
    fold_qdq: bool = False

    def __post_init__(self):
        if self.max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {self.max_bytes}")

    def transform(self, module: Module, ctx: PassContext) -> Module:
        namer = ConstantNamer(module)
        reads = constant_reads(module)
        functions = {}
        for name, fn in module.functions.items():
            transposes = shared_transposes(fn, reads)
            out = rewrite_function(fn, self._rule(namer, transposes), self.name, name)
            if transposes:  # the transposes the matmuls no longer read
                kept = tuple(b for b in out.bindings if id(b) not in transposes)
                out = out.replace(bindings=kept)
            functions[name] = out
        return module.replace(functions=functions)

    def _rule(self, namer: ConstantNamer, transposes: dict[int, Call]) -> Rules:
        return Rules(self.name, RULES, _Folding(self, namer, transposes))


@dataclass(frozen=True)
class _Folding:
    """What fold-constant's rules read: the pass's options, the namer of new constants and
    the shared transposes of the function (read transposed by matmuls, never copied)."""

    fold: FoldConstant
    namer: ConstantNamer
    transposes: dict[int, Call]


def _fold(node: Call, ctx: _Folding) -> Constant | None:
    value = fold_call(node, ctx.fold.max_bytes, ctx.fold.fold_qdq)
    if value is None:
        return None
    return Constant(value, name=ctx.namer.name(node), prov=node.prov.with_pass(ctx.fold.name))


def _constant_field(node: TupleGetItem, ctx=None) -> Expr | None:
    field = node.tuple_value.fields[node.index]
    return field if isinstance(field, Constant) else None


RULES = rule_table(
    "fold-constant",
    Rule(
        "read-shared-transpose",
        op(
            "matmul",
            where=lambda n, c: id(n.args[1]) in c.transposes,
            also=lambda n: (n.args[1],),
        ),
        lambda n, c: read_transposed(n, c.transposes),
        "matmul(x, permute_dims(W)) of a W read elsewhere too -> matmul(x, W, transpose_b)",
    ),
    Rule(
        "fold-call",
        op(where=lambda n, c: id(n) not in c.transposes),
        _fold,
        "op(constants...) -> a new named constant (its value)",
    ),
    Rule(
        "fold-tuple-item",
        ITEM_OF_TUPLE,
        _constant_field,
        "(c, x)[0] -> c for a constant c",
    ),
)
