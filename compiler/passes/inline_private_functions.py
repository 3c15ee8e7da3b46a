"""inline-private-functions: replace every call of a private function (``private = true``) by
a copy of its body (TVM Relax's InlinePrivateFunctions), then drop the private functions no
longer called.

Each call site gets fresh copies of the callee's nodes (the callee may be called twice).
Copies keep the callee nodes' provenance; those without one get the call site's, marked with
this pass. The copy of the callee's result takes the call's name hint (the caller's readers
keep seeing the name they read). The callee's symbolic dims become the caller's dims they
stand for; a call where one cannot be told (``f32[n*m]`` given ``f32[12]``) is not inlined,
nor are recursive functions. Calls inside If branches are inlined into the branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from compiler.ir.nodes import (
    Block,
    Call,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Tuple,
    remap_operands,
)
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import Dim, SymExpr
from compiler.ir.types import TensorType, TupleType, symbol_bindings
from compiler.ir.verify import symbols_of
from compiler.passes.infra import rewrite
from compiler.passes.infra.manager import Pass, PassContext, register_pass


def calls_of(fn: Function) -> set[str]:
    """Names of the functions ``fn`` calls."""
    return {n.func for n in fn.iter_nodes() if isinstance(n, FuncCall)}


def _recursive(module: Module) -> set[str]:
    """Functions that can reach themselves through calls."""
    graph = {n: calls_of(f) & set(module.functions) for n, f in module.functions.items()}
    out = set()
    for start in graph:
        seen, stack = set(), list(graph[start])
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(graph[n])
        if start in seen:
            out.add(start)
    return out


def _substituted(value: Any, env: dict[str, Dim]) -> Any:
    """A type or attribute value with the callee's symbols replaced by the caller's dims."""
    if isinstance(value, SymExpr):
        return value.substitute(env)
    if isinstance(value, TensorType) and value.shape is not None:
        return TensorType([_substituted(d, env) for d in value.shape], value.dtype)
    if isinstance(value, TupleType):
        return TupleType([_substituted(f, env) for f in value.fields])
    if isinstance(value, (list, tuple)):
        return type(value)(_substituted(v, env) for v in value)
    return value


class _Copier:
    """Fresh copies of a callee's nodes for one call site; the callee's symbolic dims become
    the caller's (``reshape(shape=[n, 3])`` inlined where ``n`` is ``batch``)."""

    def __init__(self, mapping: dict[int, Expr], prov: Provenance, dims: dict[str, Dim]):
        self.mapping, self.prov, self.dims = mapping, prov, dims

    def block(self, blk: Block) -> Block:
        bindings = [self.node(b) for b in blk.bindings]
        return Block(bindings, self.mapping.get(id(blk.result), blk.result))

    def node(self, node: Expr, name=None) -> Expr:
        fields = {f: getattr(node, f) for f in node._fields}
        m = self.mapping.get
        if isinstance(node, (Call, FuncCall)):
            fields["args"] = tuple(m(id(a), a) for a in node.args)
        elif isinstance(node, If):
            fields["cond"] = m(id(node.cond), node.cond)
            fields["then_branch"] = self.block(node.then_branch)
            fields["else_branch"] = self.block(node.else_branch)
        elif isinstance(node, Tuple):
            fields["fields"] = tuple(m(id(f), f) for f in node.fields)
        else:
            fields["tuple_value"] = m(id(node.tuple_value), node.tuple_value)
        if self.dims:
            if "ty" in fields:
                fields["ty"] = _substituted(node.ty, self.dims)
            if isinstance(node, Call):
                fields["attrs"] = {k: _substituted(v, self.dims) for k, v in node.attrs.items()}
        if isinstance(node, Call) and node.ty == node.inferred_type():
            fields["ty"] = None  # re-infer: the arguments may be more specific than the params
        if node.prov.is_empty:
            fields["prov"] = self.prov
        fields["name"] = name or node.name
        copy = type(node)(**fields)
        self.mapping[id(node)] = copy
        return copy


class _Inliner:
    """Inlines calls of ``inlinable`` functions, each function once (callees first)."""

    def __init__(self, module: Module, inlinable: set[str], pass_name: str):
        self.module, self.inlinable, self.pass_name = module, inlinable, pass_name
        self.done: dict[str, Function] = {}

    def function(self, fname: str) -> Function:
        """Function ``fname`` with the calls it makes inlined."""
        if fname not in self.done:
            saved = (rewrite.progress.function, rewrite.progress.node)
            rewrite.progress.function = fname
            fn = self.module[fname]
            mapping: dict[int, Expr] = {}
            bindings = self.bindings(fn.bindings, mapping)
            output = mapping.get(id(fn.output), fn.output)
            self.done[fname] = fn.replace(bindings=bindings, output=output)
            rewrite.progress.function, rewrite.progress.node = saved
        return self.done[fname]

    def bindings(self, bindings: tuple[Expr, ...], mapping: dict[int, Expr]) -> tuple[Expr, ...]:
        """``bindings`` with each inlinable call replaced by a copy of the callee's body."""
        out: list[Expr] = []
        for node in bindings:
            rewrite.progress.node = node
            new = remap_operands(node, mapping)
            if isinstance(new, If):
                new = new.replace(
                    then_branch=self.block(new.then_branch, mapping),
                    else_branch=self.block(new.else_branch, mapping),
                )
            dims = None
            # a Loop runs its body many times: never inlined
            if (
                isinstance(new, FuncCall)
                and not isinstance(new, Loop)
                and new.func in self.inlinable
            ):
                callee = self.function(new.func)
                dims = symbol_bindings([p.ty for p in callee.params], [a.ty for a in new.args])
                if set().union(*(symbols_of(p.ty) for p in callee.params)) - dims.keys():
                    dims = None  # a callee symbol the caller's dims do not give: keep the call
            if dims is not None:
                args = dict(zip(map(id, callee.params), new.args, strict=True))
                copier = _Copier(args, node.prov.with_pass(self.pass_name), dims)
                for b in callee.bindings:
                    out.append(copier.node(b, node.name if b is callee.output else None))
                mapping[id(node)] = copier.mapping.get(id(callee.output), callee.output)
                continue
            if new is not node:
                mapping[id(node)] = new
            out.append(new)
        return tuple(out)

    def block(self, blk: Block, mapping: dict[int, Expr]) -> Block:
        bindings = self.bindings(blk.bindings, mapping)
        return blk.replace(bindings=bindings, result=mapping.get(id(blk.result), blk.result))


@register_pass
@dataclass(frozen=True)
class InlinePrivateFunctions(Pass):
    """Inline calls of private functions; remove the private functions left unused."""

    name: ClassVar[str] = "inline-private-functions"

    def transform(self, module: Module, ctx: PassContext) -> Module:
        private = {n for n, f in module.functions.items() if f.is_private}
        inliner = _Inliner(module, private - _recursive(module), self.name)
        functions = {name: inliner.function(name) for name in module.functions}
        # Drop the private functions that were called and no longer are.
        called_before = set().union(*(calls_of(f) for f in module.functions.values()))
        reachable = {n for n, f in functions.items() if not f.is_private}
        stack = list(reachable)
        while stack:
            for callee in calls_of(functions[stack.pop()]) - reachable:
                reachable.add(callee)
                stack.append(callee)
        if reachable:
            unused = (inliner.inlinable & called_before) - reachable
            functions = {n: f for n, f in functions.items() if n not in unused}
        return module.replace(functions=functions)
