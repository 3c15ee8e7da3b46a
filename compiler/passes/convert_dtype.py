"""convert-dtype and to-mixed-precision: run float32 compute in a narrower float type.

``convert-dtype{dtype=float16}`` converts every float32 computation of each function to
``dtype``. Function signatures do not change (as TVM's ToMixedPrecision keeps them): float32
inputs are cast once at the start, float32 outputs cast back at the end, and calls of other
functions cast their arguments and results at the call. Named float32 weights get a ``cast``
op (fold-constant turns it into a new ``dtype`` weight named ``<weight>.cast``); inline
literals are converted in place; ``dtype`` attributes that say float32 (``full``, ``cast``, ...)
say ``dtype``. An op that rejects ``dtype`` inputs runs in float32 between casts, and so does
an opaque op (run by its framework on the dtypes it was recorded with).

``to-mixed-precision{out_dtype=float32}`` touches only the compute-heavy ops (convolutions,
matmul, linear): their float32 inputs are cast to float16, they accumulate and output in
``out_dtype`` (through their ``out_dtype`` attribute when they have one, else a cast of the
result), and a float16 result is cast back to float32, so the rest stays float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    IRError,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    collect_bindings,
    function_constants,
)
from compiler.ir.op_registry import get_op
from compiler.ir.provenance import Provenance
from compiler.ir.types import DType, TensorType, TupleType, Type, join_types
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import Rewriter, progress, rewrite_module
from compiler.passes.infra.rules import Rule, Rules, kind, note, op, rule_table

F32 = DType.float32

# Ops to-mixed-precision runs in float16 (TVM's "always" list); absent ones are skipped.
HEAVY_OPS = ("conv1d", "conv2d", "conv3d", "conv2d_transpose", "matmul", "linear")


def _has_dtype(ty: Type, dtype: DType) -> bool:
    if isinstance(ty, TupleType):
        return any(_has_dtype(f, dtype) for f in ty.fields)
    return isinstance(ty, TensorType) and ty.dtype is dtype


def cast_to(value: Expr, ty: Type, prov=None) -> Expr:
    """``value`` with casts wherever its dtype differs from ``ty``'s (tuples field by field);
    the nodes made get provenance ``prov``."""
    if isinstance(ty, TupleType) and isinstance(value.ty, TupleType):
        if value.ty == ty:
            return value
        items = value.fields if isinstance(value, Tuple) else None
        get = (lambda i: items[i]) if items else (lambda i: TupleGetItem(value, i, prov=prov))
        return Tuple([cast_to(get(i), t, prov) for i, t in enumerate(ty.fields)], prov=prov)
    if isinstance(ty, TensorType) and isinstance(value.ty, TensorType):
        if value.ty.dtype is not ty.dtype:
            return Call("cast", [value], {"dtype": ty.dtype}, prov=prov)
    return value


def _retyped(ty: Type, frm: DType, to: DType) -> Type:
    if isinstance(ty, TupleType):
        return TupleType(_retyped(f, frm, to) for f in ty.fields)
    return ty.with_dtype(to) if isinstance(ty, TensorType) and ty.dtype is frm else ty


def _used_vars(fn: Function) -> set[int]:
    used = {id(fn.output)}
    for node in fn.iter_nodes():
        used.update(id(o) for o in node.operands)
        if isinstance(node, If):
            used.update({id(node.then_branch.result), id(node.else_branch.result)})
    return used


@dataclass(frozen=True)
class Conversion:
    """What convert-dtype's rules read: the dtype computations are in (``frm``), the one they
    move to (``to``), and the pass (marks the casts it makes)."""

    frm: DType
    to: DType
    pass_name: str = "convert-dtype"


class FunctionResult(NamedTuple):
    """A function's result ``value``, the type its signature keeps (``ty``) and the
    provenance of the result before the pass (``prov``)."""

    value: Expr
    ty: Type
    prov: Provenance


def _cast_leaf(leaf: Expr, c: Conversion) -> Expr:
    return Call("cast", [leaf], {"dtype": c.to}, prov=leaf.prov.with_pass(c.pass_name))


def _in_place(k: Constant, c: Conversion) -> Expr:
    return Constant(k.data.astype(c.to.numpy), prov=k.prov)


def _cast_back(r: FunctionResult, c: Conversion) -> Expr | None:
    final = cast_to(r.value, r.ty, prov=r.prov.with_pass(c.pass_name))
    return None if final is r.value else final


def _in_frm(value: Expr, c: Conversion) -> Expr:
    return cast_to(value, _retyped(value.ty, c.to, c.frm))


def _opaque(node: Call, c: Conversion) -> Expr | None:
    args = [_in_frm(a, c) for a in node.args]
    if args == list(node.args) and not _has_dtype(node.ty, c.frm):
        return None
    return cast_to(node.replace(args=tuple(args)), _retyped(node.ty, c.frm, c.to))


def _converted_attrs(node: Call, c: Conversion) -> dict:
    return {k: (c.to if v is c.frm else v) for k, v in node.attrs.items()}


def _computes_in_frm(node: Call, c: Conversion) -> bool:
    if node.op == "opaque":
        return False
    return _converted_attrs(node, c) != dict(node.attrs) or _has_dtype(node.ty, c.frm)


def _convert_call(node: Call, c: Conversion) -> Expr | None:
    try:
        new: Expr = Call(node.op, node.args, _converted_attrs(node, c))
    except IRError:  # the op does not take `to` inputs: the next rule runs it in `frm`
        return None
    return cast_to(new, _retyped(new.ty, c.frm, c.to))


def _call_between_casts(node: Call, c: Conversion) -> Expr | None:
    new = Call(node.op, [_in_frm(a, c) for a in node.args], node.attrs)
    return cast_to(new, _retyped(new.ty, c.frm, c.to))


def _retype_if(node: If, c: Conversion) -> Expr | None:
    joined = join_types(node.then_branch.result.ty, node.else_branch.result.ty)
    return None if joined == node.ty else If(node.cond, node.then_branch, node.else_branch)


def _cast_at_call(node: FuncCall, c: Conversion) -> Expr | None:
    args = [_in_frm(a, c) for a in node.args]
    if args == list(node.args) and not _has_dtype(node.ty, c.frm):
        return None
    # (a Loop stays a Loop: replace keeps the node's class)
    return cast_to(node.replace(args=tuple(args)), _retyped(node.ty, c.frm, c.to))


CONVERT_RULES = rule_table(
    "convert-dtype",
    Rule(
        "opaque-between-casts",
        op("opaque"),
        _opaque,
        "opaque(x) -> cast(opaque(cast(x, f32))): its framework runs it as it was recorded",
    ),
    Rule(
        "convert-call",
        op(where=_computes_in_frm),
        _convert_call,
        "an op computing in f32 computes in the new dtype (dtype attributes too)",
    ),
    Rule(
        "call-between-casts",
        op(where=_computes_in_frm),
        _call_between_casts,
        "an op refusing the new dtype -> cast(op(cast(x, f32))): it runs in f32",
    ),
    Rule("retype-if", kind(If), _retype_if, "an If gets the type of its converted branches"),
    Rule(
        "cast-at-call",
        kind(FuncCall),
        _cast_at_call,
        "call @f(x) -> cast(call @f(cast(x, f32))): the callee keeps its signature",
    ),
    # the function's boundary (applied by convert_function, not by the rewriter's walk)
    Rule(
        "cast-input",
        kind(Var, lambda v, c: isinstance(v.ty, TensorType) and v.ty.dtype is c.frm),
        _cast_leaf,
        "a float32 input -> cast(x) to the new dtype, once at the start",
    ),
    Rule(
        "convert-literal",
        kind(Constant, lambda k, c: k.name is None and k.ty.dtype is c.frm),
        _in_place,
        "an inline float32 literal -> the same literal in the new dtype",
    ),
    Rule(
        "cast-weight",
        kind(Constant, lambda k, c: k.ty.dtype is c.frm),
        _cast_leaf,
        "a named float32 weight -> cast(w) (fold-constant makes it a new weight)",
    ),
    Rule(
        "cast-result-back",
        kind(FunctionResult),
        _cast_back,
        "the function's result -> cast back to the dtype its signature keeps",
    ),
)


def convert_function(fn: Function, fname: str, frm: DType, to: DType, pass_name: str) -> Function:
    """``fn`` computing in ``to`` where it computed in ``frm``, with the same signature."""
    used = _used_vars(fn)
    entry: dict[int, Expr] = {}
    prelude: list[Expr] = []
    rules = Rules(pass_name, CONVERT_RULES, Conversion(frm, to, pass_name))
    for leaf in (*(p for p in fn.params if id(p) in used), *function_constants(fn)):
        fired = rules.fire(leaf)  # cast-input, cast-weight, convert-literal
        if fired is not None:
            entry[id(leaf)] = fired[1]
            if isinstance(fired[1], Call):
                prelude.append(fired[1])
            note(f"{pass_name}/{fired[0].name}", fname, (leaf,), (fired[1],))
    # A Rewriter run by hand: the prelude is bound first and the leaves it replaces are
    # mapped to it. Constants count as known so the rewriter never re-creates them.
    rewriter = Rewriter(rules, pass_name, fname)
    rewriter.mapping.update(entry)
    old = [*fn.params, *fn.iter_nodes(), *function_constants(fn), *prelude, *entry.values()]
    rewriter.known = {id(n) for n in old}
    progress.function = fname
    body = rewriter.bindings(fn.bindings, {id(n) for n in prelude})
    progress.node = None
    output = rewriter.mapping.get(id(fn.output), fn.output)
    fired = rules.fire(FunctionResult(output, fn.output.ty, fn.output.prov))  # cast-result-back
    final = output if fired is None else fired[1]
    if final is not output:
        final = final.replace(name=output.name) if isinstance(final, Tuple) else final
        if isinstance(output, Tuple) and not any(output in b.operands for b in body):
            body = tuple(b for b in body if b is not output)  # replaced by the cast tuple
    if not entry and body == fn.bindings and final is fn.output:
        return fn
    tail = collect_bindings([final], {id(b) for b in (*prelude, *body)})
    if fired is not None:
        note(f"{pass_name}/{fired[0].name}", fname, (fn.output,), (final, *tail))
    return fn.replace(bindings=tuple(prelude) + body + tuple(tail), output=final)


def _check_float(dtype: DType, what: str) -> DType:
    dtype = DType.of(dtype)
    if not dtype.is_float:
        raise ValueError(f"{what} must be a floating-point dtype, got {dtype.name}")
    return dtype


@register_pass
@dataclass(frozen=True)
class ConvertDtype(Pass):
    """Run every float32 computation in ``dtype``; signatures stay float32 (casts at the
    function boundary)."""

    name: ClassVar[str] = "convert-dtype"
    dtype: DType

    def __post_init__(self):
        object.__setattr__(self, "dtype", _check_float(self.dtype, "dtype"))

    def transform(self, module: Module, ctx: PassContext) -> Module:
        if self.dtype is F32:
            return module
        functions = {
            name: convert_function(fn, name, F32, self.dtype, self.name)
            for name, fn in module.functions.items()
        }
        return module.replace(functions=functions)


@register_pass
@dataclass(frozen=True)
class ToMixedPrecision(Pass):
    """Run convolutions and matmuls on float16 inputs, accumulating in ``out_dtype``; every
    other op stays float32."""

    name: ClassVar[str] = "to-mixed-precision"
    out_dtype: DType = F32

    def __post_init__(self):
        object.__setattr__(self, "out_dtype", _check_float(self.out_dtype, "out_dtype"))

    def transform(self, module: Module, ctx: PassContext) -> Module:
        rules = Rules(self.name, MIXED_RULES, self)
        return rewrite_module(module, lambda name, fn: rules, self.name)


def _half(node: Call, p: ToMixedPrecision) -> Expr:
    args = [cast_to(a, _retyped(a.ty, F32, DType.float16)) for a in node.args]
    attrs = dict(node.attrs)
    if "out_dtype" in get_op(node.op).attrs:
        attrs["out_dtype"] = p.out_dtype
    result = cast_to(Call(node.op, args, attrs), _retyped(node.ty, F32, p.out_dtype))
    return cast_to(result, node.ty)  # the rest of the graph stays float32


MIXED_RULES = rule_table(
    "to-mixed-precision",
    Rule(
        "heavy-op-in-half",
        op(*HEAVY_OPS, where=lambda n, p: any(_has_dtype(a.ty, F32) for a in n.args)),
        _half,
        "conv2d(x, w) -> cast(conv2d(cast(x, f16), cast(w, f16), out_dtype), f32)",
    ),
)
