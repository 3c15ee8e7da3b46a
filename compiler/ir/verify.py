"""The verifier: checks a module's invariants and shows the bindings around each problem.

Invariants checked, per function:

1. Parameters are distinct Vars with distinct names; `num_input` is an int in
   `[0, len(params)]`.
2. Every non-leaf node (Call, FuncCall, Tuple, TupleGetItem, If) is bound exactly once, and
   only after every node it reads (SSA order, defined before use). A node bound inside an If
   branch is visible only inside that branch.
3. Every Var read is a parameter of the function (no value leaks in from another function).
4. Each Call's annotated type equals what its op's type inference gives for its arguments.
5. Each FuncCall names a function of the module, passes as many arguments as it has
   parameters, with matching types, and its type equals the callee's result type. A Loop's
   body takes (iteration, cond, carried..., captured...) and returns (cond, carried...,
   scanned...), the carried types unchanged, and the Loop's type is (carried..., each
   scanned type with one more leading axis).
6. Each If's condition is a one-element tensor and its annotated type covers both branches.
7. The output is defined.
8. A weight's name identifies one value across the module: named Constants that share a name
   have the same type and contents (the text format and `Module.constants()` refer to a
   weight by its name).
9. Every symbolic dim a binding uses (in its type or an attribute) is bound by the type of a
   parameter: the function is called with nothing else that could give its value.
10. No function calls itself, directly or through others: a call's result would need the
    call itself (the interpreter would recurse without end).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.errors import PasslensError
from compiler.ir.attrs import TypeInferenceError
from compiler.ir.nodes import (
    Block,
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Node,
    TupleGetItem,
    Var,
)
from compiler.ir.printer import Printer
from compiler.ir.symbolic import ANY, SymExpr, dims_equal
from compiler.ir.types import DType, TensorType, TupleType, Type, is_float_dtype, join_types


@dataclass
class Problem:
    """One broken invariant: the function, where (the bad binding; a Block for its `yield`,
    the Function for its `return`; None for the signature) and what is wrong."""

    function: str
    message: str
    node: Node | None = None

    def __str__(self) -> str:
        return f"@{self.function}: {self.message}"


class VerifyError(PasslensError, ValueError):
    """The module breaks invariants; `problems` lists them, the message shows context."""

    def __init__(self, problems: list[Problem], context: str):
        self.problems = problems
        super().__init__(context)


def _covers(annotated: Type, actual: Type) -> bool:
    """Whether an annotated type admits values of `actual` (ANY dims / unknown rank cover)."""
    if isinstance(annotated, TupleType) or isinstance(actual, TupleType):
        return (
            isinstance(annotated, TupleType)
            and isinstance(actual, TupleType)
            and len(annotated) == len(actual)
            and all(_covers(a, b) for a, b in zip(annotated.fields, actual.fields))
        )
    assert isinstance(annotated, TensorType) and isinstance(actual, TensorType)
    if annotated.dtype is not actual.dtype:
        return False
    if annotated.shape is None:
        return True
    if actual.shape is None or len(actual.shape) != len(annotated.shape):
        return False
    return all(
        a is ANY or dims_equal(a, b) is not False for a, b in zip(annotated.shape, actual.shape)
    )


class _Checker:
    def __init__(self, module: Module | None, name: str, fn: Function, weights: dict | None = None):
        self.module, self.name, self.fn = module, name, fn
        self.problems: list[Problem] = []
        self.bound: set[int] = set()
        self.params = {id(p) for p in fn.params}
        # name -> the first Constant of that name; ids of Constants already compared to it
        self.weights: dict[str, Constant] = {} if weights is None else weights
        self.seen_weights: set[int] = set()
        self.symbols = set().union(*(symbols_of(p.ty) for p in fn.params))
        self.unbound: set[str] = set()  # reported once each
        self._printer = None

    def show(self, node: Expr) -> str:
        """`%name` of a node as the context printout names it (names are only hints)."""
        if self._printer is None:
            self._printer = Printer()
            self._printer.function(self.name, self.fn)
        return "%" + self._printer.name_of(node)

    def problem(self, message: str, node: Node | None = None) -> None:
        self.problems.append(Problem(self.name, message, node))

    def check_weight(self, const: Constant, user: Node) -> None:
        if const.name is None or id(const) in self.seen_weights:
            return
        self.seen_weights.add(id(const))
        first = self.weights.setdefault(const.name, const)
        if first is const or (
            first.ty == const.ty
            and np.array_equal(first.data, const.data, equal_nan=is_float_dtype(first.data.dtype))
        ):
            return
        what = "other values" if first.ty == const.ty else f"type {first.ty}"
        self.problem(
            f"reads weight ${const.name} of type {const.ty}, but another weight named "
            f"${const.name} has {what} (one name must hold one value)",
            user,
        )

    def check_operand(self, op: Expr, user: Node, visible: list[set[int]]) -> None:
        if isinstance(op, Constant):
            self.check_weight(op, user)
            return
        if isinstance(op, Var):
            if id(op) not in self.params:
                self.problem(
                    f"reads {self.show(op)}, which is not a parameter of @{self.name}", user
                )
            return
        if not any(id(op) in scope for scope in visible):
            what = self.show(op)
            if id(op) in self.bound:
                self.problem(f"reads {what}, which is bound in another branch", user)
            else:
                self.problem(f"reads {what} before it is bound (or it is never bound)", user)

    def check_bindings(self, bindings, visible: list[set[int]]) -> None:
        scope = visible[-1]
        for node in bindings:
            if isinstance(node, (Var, Constant)):
                self.problem(f"a {type(node).__name__} cannot be a binding", node)
                continue
            if id(node) in self.bound:
                self.problem(f"{self.show(node)} is bound twice", node)
                continue
            for op in node.operands:
                self.check_operand(op, node, visible)
            self.check_node(node, visible)
            self.bound.add(id(node))
            scope.add(id(node))

    def check_block(self, blk: Block, visible: list[set[int]]) -> None:
        inner = visible + [set()]
        self.check_bindings(blk.bindings, inner)
        self.check_operand(blk.result, blk, inner)

    def check_symbols(self, node: Expr) -> None:
        if isinstance(node, Call) and node.op == "match_shape":
            self.symbols = self.symbols | symbols_of(tuple(node.attrs.values()))  # binds them
        used = symbols_of(node.ty)
        if isinstance(node, Call):
            used |= symbols_of(tuple(node.attrs.values()))
        missing = sorted(used - self.symbols - self.unbound)
        if missing:
            self.unbound.update(missing)
            self.problem(
                f"uses symbolic dim(s) {', '.join(missing)}, which no parameter's type binds",
                node,
            )

    def check_node(self, node: Expr, visible: list[set[int]]) -> None:
        self.check_symbols(node)
        if isinstance(node, Call):
            try:
                inferred = node.inferred_type()
            except TypeInferenceError as e:
                self.problem(f"{node.op}: {e}", node)
                return
            if inferred != node.ty:
                self.problem(
                    f"{node.op} is annotated {node.ty} but its inputs give {inferred}", node
                )
        elif isinstance(node, Loop):
            self.check_loop(node)
        elif isinstance(node, FuncCall):
            self.check_func_call(node)
        elif isinstance(node, TupleGetItem):
            ty = node.tuple_value.ty
            if not isinstance(ty, TupleType) or node.index >= len(ty.fields):
                self.problem(f"tuple index {node.index} out of range for {ty}", node)
        elif isinstance(node, If):
            ct = node.cond.ty
            if not isinstance(ct, TensorType) or (ct.shape is not None and ct.numel != 1):
                self.problem(f"If condition must hold one element, got {ct}", node)
            self.check_block(node.then_branch, visible)
            self.check_block(node.else_branch, visible)
            try:
                joined = join_types(node.then_branch.result.ty, node.else_branch.result.ty)
            except TypeError as e:
                self.problem(str(e), node)
                return
            if not _covers(node.ty, joined):
                self.problem(
                    f"If is annotated {node.ty} but its branches give "
                    f"{node.then_branch.result.ty} and {node.else_branch.result.ty}",
                    node,
                )

    def check_func_call(self, node: FuncCall) -> None:
        if self.module is None:
            return
        callee = self.module.functions.get(node.func)
        if callee is None:
            self.problem(f"calls @{node.func}, which is not in the module", node)
            return
        if len(node.args) != len(callee.params):
            self.problem(
                f"calls @{node.func} with {len(node.args)} argument(s), it takes "
                f"{len(callee.params)}",
                node,
            )
            return
        self.check_args(node, callee, f"@{node.func}", 0)
        if not _covers(node.ty, callee.ret_type) and not _symbolically_compatible(
            callee.ret_type, node.ty
        ):
            self.problem(
                f"call of @{node.func} is annotated {node.ty}, the function returns "
                f"{callee.ret_type}",
                node,
            )

    def check_args(self, node: FuncCall, callee: Function, where: str, first: int) -> None:
        """Each argument of a call (from `first` on) fits the callee's parameter."""
        for i in range(first, len(node.args)):
            a, p = node.args[i], callee.params[i]
            if not _covers(p.ty, a.ty) and not _symbolically_compatible(p.ty, a.ty):
                self.problem(
                    f"argument {i} of {where} has type {a.ty}, parameter %{p.name} expects {p.ty}",
                    node,
                )

    def check_loop(self, node: Loop) -> None:
        if self.module is None:
            return
        body = self.module.functions.get(node.func)
        where = f"loop @{node.func}"
        if body is None:
            self.problem(f"{where}: the body is not in the module", node)
            return
        if len(node.args) != len(body.params):
            self.problem(
                f"{where} passes {len(node.args)} argument(s) (max_trips, cond, carried, "
                f"captured), the body takes {len(body.params)}",
                node,
            )
            return
        for i, what in ((0, "the iteration number: a scalar integer"), (1, "a scalar bool")):
            t = body.params[i].ty
            ok = isinstance(t, TensorType) and t.shape == ()
            ok = ok and (t.dtype.is_int if i == 0 else t.dtype is DType.bool)
            if not ok:
                self.problem(f"{where}: body parameter {i} must be {what}, got {t}", node)
        self.check_args(node, body, where, 2)  # max_trips and cond are not the body's i, cond
        out = body.ret_type
        k = node.num_carried
        fields = out.fields if isinstance(out, TupleType) else ()
        if len(fields) != 1 + len(node.ty.fields):
            self.problem(
                f"{where}: the body must return (cond, {k} carried, {node.num_scan} scanned), "
                f"it returns {out}",
                node,
            )
            return
        c = fields[0]
        if not (isinstance(c, TensorType) and c.dtype is DType.bool and c.shape == ()):
            self.problem(f"{where}: the body's first output must be a scalar bool, got {c}", node)
        for j in range(k):
            p, o, r = body.params[2 + j].ty, fields[1 + j], node.ty.fields[j]
            if not _covers(p, o) and not _symbolically_compatible(p, o):
                self.problem(
                    f"{where}: carried value {j} enters the body as {p} and leaves it as {o}",
                    node,
                )
            if not _covers(r, p) and not _symbolically_compatible(p, r):
                self.problem(f"{where}: carried value {j} is annotated {r}, the body has {p}", node)
        for j in range(node.num_scan):
            o, r = fields[1 + k + j], node.ty.fields[k + j]
            ok = isinstance(o, TensorType) and isinstance(r, TensorType)
            ok = ok and o.dtype is r.dtype
            if ok and o.shape is not None and r.shape is not None:
                ok = len(r.shape) == len(o.shape) + 1 and (
                    _covers(r.with_shape(r.shape[1:]), o)
                    or _symbolically_compatible(o, r.with_shape(r.shape[1:]))
                )
            if not ok:
                self.problem(
                    f"{where}: scanned output {j} is annotated {r}, the body yields {o} "
                    "per iteration (expected one more leading axis)",
                    node,
                )

    def run(self) -> list[Problem]:
        fn = self.fn
        names = [p.name for p in fn.params]
        if len(set(map(id, fn.params))) != len(fn.params):
            self.problem("a parameter appears twice")
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            self.problem(f"parameter name(s) used twice: {', '.join(dup)}")
        num_input = fn.attrs.get("num_input")
        if num_input is not None and (
            not isinstance(num_input, int)
            or isinstance(num_input, bool)
            or not 0 <= num_input <= len(fn.params)
        ):
            self.problem(f"num_input = {num_input!r}, but the function has {len(fn.params)} params")
        self.check_bindings(fn.bindings, [set()])
        self.check_operand(fn.output, fn, [{id(b) for b in fn.bindings}])
        return self.problems


def symbols_of(value) -> set[str]:
    """The symbolic dims in a type or an attribute value (a dim or a list of them)."""
    if isinstance(value, SymExpr):
        return set(value.free_symbols)
    if isinstance(value, TupleType):
        return set().union(*(symbols_of(f) for f in value.fields))
    if isinstance(value, TensorType):
        return set().union(*(symbols_of(d) for d in value.shape or ()))
    if isinstance(value, (tuple, list)):
        return set().union(*(symbols_of(v) for v in value))
    return set()


def _symbolically_compatible(param: Type, arg: Type) -> bool:
    """A callee's symbolic param type accepts a more specific argument (same dtype and rank)."""
    if isinstance(param, TupleType) and isinstance(arg, TupleType):
        return len(param) == len(arg) and all(
            _symbolically_compatible(p, a) for p, a in zip(param.fields, arg.fields)
        )
    if isinstance(param, TensorType) and isinstance(arg, TensorType):
        if param.dtype is not arg.dtype:
            return False
        if param.shape is None or arg.shape is None:
            return True
        return len(param.shape) == len(arg.shape) and all(
            not (isinstance(p, int) and isinstance(a, int) and p != a)
            for p, a in zip(param.shape, arg.shape)
        )
    return False


def _call_cycles(module: Module) -> list[Problem]:
    """Invariant 10: one problem per recursive call found, at the call that closes a cycle of
    the call graph. A depth-first walk with its own stack: a call chain of any length."""
    calls = {
        name: [(n.func, n) for n in fn.iter_nodes() if isinstance(n, FuncCall)]
        for name, fn in module.functions.items()
    }
    on_path: dict[str, int] = {}  # function -> its position in ``path``
    done: set[str] = set()
    problems: list[Problem] = []
    for root in module.functions:
        if root in done:
            continue
        path, todo = [root], [iter(calls[root])]
        on_path[root] = 0
        while todo:
            step = next(todo[-1], None)
            if step is None:
                done.add(path[-1])
                del on_path[path.pop()]
                todo.pop()
                continue
            callee, node = step
            if callee in on_path:
                cycle = path[on_path[callee] :] + [callee]
                if len(cycle) == 2:
                    what = "itself"
                else:
                    what = f"@{callee}, which leads back to @{path[-1]}"
                message = f"calls {what} ({_chain(cycle)}): recursive calls are not supported"
                problems.append(Problem(path[-1], message, node))
            elif callee in calls and callee not in done:
                on_path[callee] = len(path)
                path.append(callee)
                todo.append(iter(calls[callee]))
    return problems


def _chain(names: list[str]) -> str:
    """`@a -> @b -> @a`, the middle of a long chain elided."""
    text = [f"@{n}" for n in names]
    if len(text) > 7:
        text = [*text[:3], f"... ({len(text) - 6} more)", *text[-3:]]
    return " -> ".join(text)


def check(module: Module | Function, name: str = "main") -> list[Problem]:
    """Every broken invariant of a module (or a lone function); empty when it is well formed."""
    if isinstance(module, Function):
        return _Checker(None, name, module).run()
    problems: list[Problem] = []
    weights: dict = {}  # shared: a weight's name means one value in every function
    for fname, fn in module.functions.items():
        problems.extend(_Checker(module, fname, fn, weights).run())
    return problems + _call_cycles(module)


def context(module: Module | Function, problems: list[Problem], radius: int = 3) -> str:
    """The problems, each with the bindings around it printed and the bad one marked."""
    out = [f"the module breaks {len(problems)} invariant(s):"]
    printed: dict[str, Printer] = {}
    for prob in problems:
        out.append(f"- {prob}")
        fn = module if isinstance(module, Function) else module.functions.get(prob.function)
        if fn is None:
            continue
        if prob.function not in printed:
            pr = Printer()
            pr.function(prob.function, fn)
            printed[prob.function] = pr
        pr = printed[prob.function]
        # a problem of the signature (no node) points at the `def` line
        line = pr.node_lines.get(id(prob.node)) if prob.node is not None else 0
        if line is None:
            continue
        lo, hi = max(0, line - radius), min(len(pr.lines), line + radius + 1)
        for i in range(lo, hi):
            out.append(f"    {'>>' if i == line else '  '} {pr.lines[i]}")
    return "\n".join(out)


def verify(module: Module | Function, name: str = "main") -> None:
    """Raise VerifyError (listing every problem with context) unless the module is well formed."""
    problems = check(module, name)
    if problems:
        raise VerifyError(problems, context(module, problems))


__all__ = ["verify", "check", "Problem", "VerifyError"]
