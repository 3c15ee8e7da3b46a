"""IR nodes: immutable, shared between modules, built through constructors that infer types.

Expressions form a DAG: a node refers to its operands directly, so a node that a pass keeps
is the very same object in the module before and after the pass, and it has the same value
for the same inputs. A function lists its non-leaf nodes as *bindings* in SSA order (each
bound once, after its operands); leaves (Var, Constant) are never bound.

Nobody mutates a node: `node.replace(field=value)` returns a new node, or the same node
when nothing changes. Names on nodes (`name`) are hints for the printer, not semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from compiler.errors import PasslensError
from compiler.ir.attrs import Attrs, TypeInferenceError
from compiler.ir.op_registry import get_op
from compiler.ir.provenance import NO_PROVENANCE, Provenance
from compiler.ir.types import DType, TensorType, TupleType, Type, join_types, type_of_array


class IRError(PasslensError):
    """An IR node or module could not be built as asked; the message says why and where."""


class Node:
    """Base of all IR objects: immutable, with `replace` returning self when unchanged."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __setattr__(self, key, value):
        raise AttributeError(f"IR nodes are immutable; use .replace({key}=...) instead")

    def __delattr__(self, key):
        raise AttributeError("IR nodes are immutable")

    def replace(self, **changes: Any):
        """A copy with `changes` applied, or `self` when every change is a no-op."""
        for key in changes:
            if key not in self._fields:
                raise TypeError(f"{type(self).__name__} has no field {key!r}")
        if all(_same(getattr(self, k), v) for k, v in changes.items()):
            return self
        if changes.keys() <= {"prov", "name"} and isinstance(self, Expr):
            # provenance and name hints are not semantic: copy the node without re-inferring
            clone = object.__new__(type(self))
            for cls in type(self).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if hasattr(self, slot):
                        object.__setattr__(clone, slot, getattr(self, slot))
            for k, v in changes.items():
                object.__setattr__(clone, k, _check_prov(v) if k == "prov" else v)
            return clone
        kwargs = {f: getattr(self, f) for f in self._fields}
        kwargs.update(changes)
        return type(self)(**kwargs)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    if isinstance(a, (str, int, float, Attrs, Provenance, Type)) and type(a) is type(b):
        return a == b
    return False


def _set(obj: Node, **values: Any) -> None:
    for k, v in values.items():
        object.__setattr__(obj, k, v)


class Expr(Node):
    """A value-producing node: has a type `ty`, a provenance `prov` and a name hint."""

    __slots__ = ("ty", "prov", "name")

    @property
    def operands(self) -> tuple[Expr, ...]:
        """The expressions this one reads directly (for If: the condition only)."""
        return ()

    def __repr__(self) -> str:
        label = f" %{self.name}" if self.name else ""
        return f"<{type(self).__name__}{label}: {self.ty}>"


def _check_prov(prov: Provenance | None) -> Provenance:
    if prov is None:
        return NO_PROVENANCE
    if not isinstance(prov, Provenance):
        raise TypeError(f"prov must be a Provenance, got {prov!r}")
    return prov


def _check_expr(value: Any, what: str) -> Expr:
    if not isinstance(value, Expr):
        raise TypeError(f"{what} must be an IR expression, got {value!r}")
    return value


class Var(Expr):
    """A function parameter (runtime input or, with `num_input`, a weight passed in)."""

    __slots__ = ()
    _fields = ("name", "ty", "prov")

    def __init__(self, name: str, ty: Type, prov: Provenance | None = None):
        if not isinstance(name, str) or not name:
            raise TypeError(f"a Var needs a non-empty name, got {name!r}")
        if not isinstance(ty, Type):
            raise TypeError(f"Var {name!r}: ty must be a Type, got {ty!r}")
        _set(self, name=name, ty=ty, prov=_check_prov(prov))


class Constant(Expr):
    """A named, read-only numpy array (a weight, or a literal when unnamed).

    The array is taken as is when it is already read-only, so a pass that keeps a constant
    never copies its data; a writeable array is copied once and frozen, so no later change
    by the caller can alter the IR.
    """

    __slots__ = ("data",)
    _fields = ("data", "name", "prov")

    def __init__(self, data: Any, name: str | None = None, prov: Provenance | None = None):
        if isinstance(data, np.ndarray):
            arr = data
        elif isinstance(data, np.generic):
            arr = np.asarray(data)
        else:
            raise TypeError(
                f"Constant {name or ''} needs a numpy array or numpy scalar, got {type(data)}"
            )
        ty = type_of_array(arr)  # raises for unsupported dtypes
        if arr.flags.writeable:
            arr = np.array(arr, copy=True)
            arr.flags.writeable = False
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"a Constant's name must be a non-empty string, got {name!r}")
        _set(self, data=arr, name=name, ty=ty, prov=_check_prov(prov))

    @staticmethod
    def scalar(value: Any, dtype: DType | str = "float32", prov=None) -> Constant:
        """An unnamed 0-d constant of `dtype`."""
        return Constant(np.asarray(value, dtype=DType.of(dtype).numpy), prov=prov)

    @property
    def nbytes(self) -> int:
        """Bytes of the array."""
        return int(self.data.nbytes)


class Call(Expr):
    """A call of a registered op with attributes; its type is inferred from the op.

    `ty` may be given to *annotate* a type; when it differs from the inferred one the node
    keeps the annotation (the verifier and the shape check report the disagreement). This is
    how a faulty pass's wrong annotation is represented faithfully.
    """

    __slots__ = ("op", "args", "attrs")
    _fields = ("op", "args", "attrs", "ty", "prov", "name")

    def __init__(
        self,
        op: str,
        args: Sequence[Expr],
        attrs: Mapping[str, Any] | None = None,
        ty: Type | None = None,
        prov: Provenance | None = None,
        name: str | None = None,
    ):
        try:
            opdef = get_op(op)
        except KeyError as e:
            raise IRError(str(e.args[0])) from None
        args = tuple(_check_expr(a, f"argument {i} of {op}") for i, a in enumerate(args))
        try:
            opdef.check_arity(len(args))
            norm = opdef.normalize_attrs(attrs)
            inferred = opdef.infer([a.ty for a in args], norm)
        except TypeInferenceError as e:
            arg_types = ", ".join(str(a.ty) for a in args)
            where = f" at {prov.describe()}" if prov is not None and not prov.is_empty else ""
            raise IRError(f"{op}({arg_types}): {e}{where}") from None
        if ty is None or ty == inferred:
            ty = inferred
        elif not isinstance(ty, Type):
            raise TypeError(f"ty must be a Type, got {ty!r}")
        _set(self, op=op, args=args, attrs=norm, ty=ty, prov=_check_prov(prov), name=name)

    @property
    def operands(self) -> tuple[Expr, ...]:
        return self.args

    def inferred_type(self) -> Type:
        """The type the op's inference gives for the current arguments."""
        return get_op(self.op).infer([a.ty for a in self.args], self.attrs)


class FuncCall(Expr):
    """A call of another function of the module (`call @name(args)`); `ty` is its result
    type, which the verifier checks against the callee."""

    __slots__ = ("func", "args")
    _fields = ("func", "args", "ty", "prov", "name")

    def __init__(
        self,
        func: str,
        args: Sequence[Expr],
        ty: Type,
        prov: Provenance | None = None,
        name: str | None = None,
    ):
        if not isinstance(func, str) or not func:
            raise TypeError(f"FuncCall needs a function name, got {func!r}")
        if not isinstance(ty, Type):
            raise TypeError(f"FuncCall @{func}: ty must be a Type, got {ty!r}")
        args = tuple(_check_expr(a, f"argument {i} of @{func}") for i, a in enumerate(args))
        _set(self, func=func, args=args, ty=ty, prov=_check_prov(prov), name=name)

    @property
    def operands(self) -> tuple[Expr, ...]:
        return self.args


class Loop(FuncCall):
    """A loop over a private function of the module, the body (like ONNX `Loop`):
    `loop @body(max_trips, cond, carried..., captured...)`.

    The body takes `(iteration: i64, cond: bool, carried..., captured...)` and returns the
    tuple `(cond', carried'..., scanned...)`. The loop runs while the iteration count is
    below `max_trips` (a scalar integer) and `cond` holds; the carried values thread
    through the iterations, the captured ones (the values of the outer function the body
    reads) are passed unchanged to every iteration, and each scanned output is stacked along
    a new leading axis. The result is the tuple `(carried..., scanned...)`: `ty` gives it
    (the stacked length is the trip count when the caller knows it, else `?`); the
    verifier checks it against the body. A Loop is a FuncCall of its body, so whatever
    collects the functions a module calls sees the body; whatever runs, inlines or rebuilds
    a FuncCall must test for Loop first.
    """

    __slots__ = ("num_carried",)
    _fields = ("func", "args", "ty", "num_carried", "prov", "name")

    def __init__(
        self,
        func: str,
        args: Sequence[Expr],
        ty: Type,
        num_carried: int,
        prov: Provenance | None = None,
        name: str | None = None,
    ):
        super().__init__(func, args, ty, prov=prov, name=name)
        if not isinstance(num_carried, int) or isinstance(num_carried, bool) or num_carried < 0:
            raise IRError(f"loop @{func}: num_carried must be an int >= 0, got {num_carried!r}")
        if len(self.args) < 2 + num_carried:
            raise IRError(
                f"loop @{func}: takes max_trips, cond and {num_carried} carried values, "
                f"got {len(self.args)} arguments"
            )
        if not isinstance(ty, TupleType) or len(ty.fields) < num_carried:
            raise IRError(
                f"loop @{func}: its type must be a tuple of the {num_carried} carried values "
                f"and the scanned outputs, got {ty}"
            )
        for what, arg, dtypes in (("max_trips", self.args[0], None), ("cond", self.args[1], 1)):
            t = arg.ty
            ok = isinstance(t, TensorType) and t.shape is not None and t.numel == 1
            ok = ok and (t.dtype is DType.bool if dtypes else t.dtype.is_int)
            if not ok:
                kind = "a scalar bool" if dtypes else "a scalar integer"
                raise IRError(f"loop @{func}: {what} must be {kind}, got {t}")
        _set(self, num_carried=num_carried)

    @property
    def max_trips(self) -> Expr:
        return self.args[0]

    @property
    def cond(self) -> Expr:
        return self.args[1]

    @property
    def carried(self) -> tuple[Expr, ...]:
        return self.args[2 : 2 + self.num_carried]

    @property
    def captured(self) -> tuple[Expr, ...]:
        return self.args[2 + self.num_carried :]

    @property
    def num_scan(self) -> int:
        return len(self.ty.fields) - self.num_carried


def loop_type(body: Function, num_carried: int, annotated: Type | None = None) -> Type | None:
    """The type of a Loop over `body`: `(carried..., scanned...)`, each scanned output
    with a leading axis: the annotated one's when given (the trip count the caller knows),
    else `?`. None when the body does not return `(cond, carried..., scanned...)`."""
    from compiler.ir.symbolic import ANY

    out = body.ret_type
    if not isinstance(out, TupleType) or len(out.fields) < 1 + num_carried:
        return None
    if len(body.params) < 2 + num_carried:
        return None
    try:  # no iteration gives the initial values: what enters the body covers both
        carried = [join_types(body.params[2 + j].ty, out.fields[1 + j]) for j in range(num_carried)]
    except TypeError:
        return None
    scans = []
    for j, f in enumerate(out.fields[1 + num_carried :]):
        if not isinstance(f, TensorType):
            return None
        lead = ANY
        if isinstance(annotated, TupleType) and len(annotated.fields) == len(out.fields) - 1:
            a = annotated.fields[num_carried + j]
            if isinstance(a, TensorType) and a.shape:
                lead = a.shape[0]
        scans.append(f if f.shape is None else f.with_shape((lead, *f.shape)))
    return TupleType(carried + scans)


class Tuple(Expr):
    """A tuple of values."""

    __slots__ = ("fields",)
    _fields = ("fields", "prov", "name")

    def __init__(
        self, fields: Sequence[Expr], prov: Provenance | None = None, name: str | None = None
    ):
        fields = tuple(_check_expr(f, f"tuple field {i}") for i, f in enumerate(fields))
        ty = TupleType(f.ty for f in fields)
        _set(self, fields=fields, ty=ty, prov=_check_prov(prov), name=name)

    @property
    def operands(self) -> tuple[Expr, ...]:
        return self.fields


class TupleGetItem(Expr):
    """Field `index` of a tuple value."""

    __slots__ = ("tuple_value", "index")
    _fields = ("tuple_value", "index", "prov", "name")

    def __init__(
        self,
        tuple_value: Expr,
        index: int,
        prov: Provenance | None = None,
        name: str | None = None,
    ):
        _check_expr(tuple_value, "tuple_value")
        if not isinstance(tuple_value.ty, TupleType):
            raise IRError(f"get item {index} of a non-tuple value of type {tuple_value.ty}")
        n = len(tuple_value.ty.fields)
        if isinstance(index, bool) or not isinstance(index, int) or not -n <= index < n:
            raise IRError(f"tuple index {index!r} out of range for {tuple_value.ty}")
        index = index % n
        ty = tuple_value.ty.fields[index]
        _set(self, tuple_value=tuple_value, index=index, ty=ty, prov=_check_prov(prov), name=name)

    @property
    def operands(self) -> tuple[Expr, ...]:
        return (self.tuple_value,)


class Block(Node):
    """A branch of an If: its own bindings (SSA order) and a result expression."""

    __slots__ = ("bindings", "result")
    _fields = ("bindings", "result")

    def __init__(self, bindings: Sequence[Expr], result: Expr):
        bindings = tuple(_check_expr(b, "block binding") for b in bindings)
        _check_expr(result, "block result")
        _set(self, bindings=bindings, result=result)

    @staticmethod
    def of(result: Expr, bound_outside: Iterable[Expr] = ()) -> Block:
        """A block whose bindings are every unbound node `result` needs, in order."""
        return Block(collect_bindings([result], set(map(id, bound_outside))), result)

    def __repr__(self) -> str:
        return f"<Block {len(self.bindings)} bindings -> {self.result!r}>"


class If(Expr):
    """`if cond { then } else { else }`: evaluates one branch; cond is a scalar bool."""

    __slots__ = ("cond", "then_branch", "else_branch")
    _fields = ("cond", "then_branch", "else_branch", "ty", "prov", "name")

    def __init__(
        self,
        cond: Expr,
        then_branch: Block,
        else_branch: Block,
        ty: Type | None = None,
        prov: Provenance | None = None,
        name: str | None = None,
    ):
        _check_expr(cond, "If condition")
        if not isinstance(then_branch, Block) or not isinstance(else_branch, Block):
            raise TypeError("If branches must be Blocks")
        ct = cond.ty
        if not (isinstance(ct, TensorType) and ct.dtype is DType.bool and ct.shape in ((), None)):
            if not (isinstance(ct, TensorType) and ct.shape is not None and ct.numel == 1):
                raise IRError(f"an If condition must be a scalar bool, got {ct}")
        if ty is None:
            try:
                ty = join_types(then_branch.result.ty, else_branch.result.ty)
            except TypeError as e:
                raise IRError(str(e)) from None
        _set(
            self,
            cond=cond,
            then_branch=then_branch,
            else_branch=else_branch,
            ty=ty,
            prov=_check_prov(prov),
            name=name,
        )

    @property
    def operands(self) -> tuple[Expr, ...]:
        return (self.cond,)


def children(node: Expr) -> tuple[Expr, ...]:
    """Every expression `node` depends on, including what its branches read."""
    if isinstance(node, If):
        return (
            node.cond,
            *node.then_branch.bindings,
            node.then_branch.result,
            *node.else_branch.bindings,
            node.else_branch.result,
        )
    return node.operands


def operands(expr: Expr) -> tuple[Expr, ...]:
    """The expressions `expr` reads directly, in order: a call's arguments (a Loop's
    included), a tuple's fields, a get-item's tuple, an If's condition (its branches are
    blocks, see `children`); none for a leaf."""
    return expr.operands


def map_operands(expr: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """`expr` reading `fn(operand)` in place of each operand: the same object when
    `fn` returns every operand itself, else a copy that keeps the type annotation, the
    provenance and the name. An If's branches are left as they are (only its condition is
    an operand)."""
    if isinstance(expr, (Call, FuncCall)):
        return expr.replace(args=tuple(fn(a) for a in expr.args))
    if isinstance(expr, Tuple):
        return expr.replace(fields=tuple(fn(f) for f in expr.fields))
    if isinstance(expr, TupleGetItem):
        return expr.replace(tuple_value=fn(expr.tuple_value))
    if isinstance(expr, If):
        return expr.replace(cond=fn(expr.cond))
    return expr


def remap_operands(expr: Expr, mapping: Mapping[int, Expr]) -> Expr:
    """`map_operands` through a table: `mapping[id(old)]` replaces an operand `old`."""
    return map_operands(expr, lambda e: mapping.get(id(e), e))


def external_reads(node: Expr) -> list[Expr]:
    """What `node` reads from outside itself: its operands, and for an If everything its
    branches read that they do not bind themselves (Vars and Constants included)."""
    if not isinstance(node, If):
        return list(node.operands)
    inner, reads = set(), [node.cond]
    for blk in (node.then_branch, node.else_branch):
        for b in blk.bindings:
            reads.extend(r for r in external_reads(b) if id(r) not in inner)
            inner.add(id(b))
        if id(blk.result) not in inner:
            reads.append(blk.result)
    return reads


def substitute(
    bindings: Sequence[Expr],
    mapping: dict[int, Expr],
    on_binding: Callable[[Expr], None] | None = None,
) -> tuple[Expr, ...]:
    """`bindings` reading `mapping[id(old)]` in place of each value `old` they read,
    inside If branches too; `mapping` learns each rebuilt node. Unchanged nodes stay the
    same objects. `on_binding(node)` is told of each binding first (to say where a failure
    happened)."""
    out = []
    for node in bindings:
        if on_binding is not None:
            on_binding(node)
        new = remap_operands(node, mapping)
        if isinstance(new, If):
            new = new.replace(
                then_branch=_substitute_block(new.then_branch, mapping, on_binding),
                else_branch=_substitute_block(new.else_branch, mapping, on_binding),
            )
        if new is not node:
            mapping[id(node)] = new
        out.append(new)
    return tuple(out)


def _substitute_block(blk: Block, mapping: dict[int, Expr], on_binding) -> Block:
    bindings = substitute(blk.bindings, mapping, on_binding)
    return blk.replace(bindings=bindings, result=mapping.get(id(blk.result), blk.result))


def is_leaf(node: Expr) -> bool:
    """Leaves (Var, Constant) are never bound; every other expression is."""
    return isinstance(node, (Var, Constant))


def collect_bindings(roots: Sequence[Expr], already_bound: set[int] = frozenset()) -> list[Expr]:
    """Non-leaf nodes reachable from `roots` (not crossing into If branches), in dependency
    order, skipping ids in `already_bound`. Iterative, so deep graphs do not overflow."""
    order: list[Expr] = []
    seen: set[int] = set(already_bound)
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if is_leaf(node):
            continue
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for op in reversed(outer_operands(node)):
            if not is_leaf(op) and id(op) not in seen:
                stack.append((op, False))
    return order


def outer_operands(node: Expr) -> tuple[Expr, ...]:
    """Operands bound outside the node: for If, the condition and the branches' free nodes."""
    if not isinstance(node, If):
        return node.operands
    inner = set()
    for blk in (node.then_branch, node.else_branch):
        inner.update(id(b) for b in blk.bindings)
    free = []
    for blk in (node.then_branch, node.else_branch):
        # what the bindings read from outside (a nested If: only its own free nodes), then
        # the result itself (which may also be one of the bindings)
        reads = [op for b in blk.bindings for op in outer_operands(b)] + [blk.result]
        free.extend(op for op in reads if not is_leaf(op) and id(op) not in inner)
    return (node.cond, *free)


class Function(Node):
    """A function: parameters (runtime inputs first, then weights when weights are inputs:
    `attrs['num_input']` counts the runtime inputs), bindings in SSA order, an output
    expression (a Tuple for several outputs) and attributes (`private`, ...)."""

    __slots__ = ("params", "bindings", "output", "attrs", "prov", "_nodes")
    _fields = ("params", "bindings", "output", "attrs", "prov")

    def __init__(
        self,
        params: Sequence[Var],
        bindings: Sequence[Expr],
        output: Expr,
        attrs: Mapping[str, Any] | None = None,
        prov: Provenance | None = None,
    ):
        params = tuple(params)
        for p in params:
            if not isinstance(p, Var):
                raise TypeError(f"function parameters must be Vars, got {p!r}")
        bindings = tuple(_check_expr(b, "binding") for b in bindings)
        _check_expr(output, "function output")
        attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs or {})
        _set(
            self,
            params=params,
            bindings=bindings,
            output=output,
            attrs=attrs,
            prov=_check_prov(prov),
        )

    @staticmethod
    def from_output(
        params: Sequence[Var],
        output: Expr,
        attrs: Mapping[str, Any] | None = None,
        prov: Provenance | None = None,
    ) -> Function:
        """A function whose bindings are every node `output` needs, in dependency order."""
        return Function(params, collect_bindings([output]), output, attrs, prov)

    @property
    def ret_type(self) -> Type:
        """The type of the output."""
        return self.output.ty

    @property
    def num_input(self) -> int:
        """How many leading parameters are runtime inputs (the rest are weights)."""
        return int(self.attrs.get("num_input", len(self.params)))

    @property
    def is_private(self) -> bool:
        """Whether the function is private (only called from inside the module)."""
        return bool(self.attrs.get("private", False))

    def with_attrs(self, **changes: Any) -> Function:
        """The same function with some attributes changed."""
        return self.replace(attrs=self.attrs.with_(**changes))

    def iter_nodes(self) -> Iterator[Expr]:
        """Every bound node, entering If branches (depth first, in binding order)."""
        try:  # a function is immutable: its nodes are listed once (many walk them)
            return iter(self._nodes)
        except AttributeError:
            pass
        nodes = []
        stack = list(reversed(self.bindings))
        while stack:
            node = stack.pop()
            nodes.append(node)
            if isinstance(node, If):
                stack.extend(reversed(node.else_branch.bindings))
                stack.extend(reversed(node.then_branch.bindings))
        nodes = tuple(nodes) if len(nodes) > len(self.bindings) else self.bindings
        object.__setattr__(self, "_nodes", nodes)
        return iter(nodes)

    def __repr__(self) -> str:
        sig = ", ".join(f"%{p.name}: {p.ty}" for p in self.params)
        return f"<Function ({sig}) -> {self.ret_type}, {len(self.bindings)} bindings>"


class Module(Node):
    """Named functions. Immutable; `with_function` returns a new module sharing the rest.
    `str(module)` is its text form (`__str__` comes from compiler/ir/printer.py)."""

    __slots__ = ("functions", "attrs")
    _fields = ("functions", "attrs")

    def __init__(
        self,
        functions: Mapping[str, Function] | Iterable[tuple[str, Function]],
        attrs: Mapping[str, Any] | None = None,
    ):
        funcs = dict(functions)
        for name, fn in funcs.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"function names must be non-empty strings, got {name!r}")
            if not isinstance(fn, Function):
                raise TypeError(f"module entry {name!r} is not a Function")
        attrs = attrs if isinstance(attrs, Attrs) else Attrs(attrs or {})
        _set(self, functions=MappingProxyType(funcs), attrs=attrs)

    def replace(self, **changes: Any):
        if "functions" in changes:
            new = dict(changes["functions"])
            if new.keys() == self.functions.keys() and all(
                new[k] is self.functions[k] for k in new
            ):
                changes.pop("functions")
        return super().replace(**changes) if changes else self

    def __getitem__(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise KeyError(
                f"module has no function @{name} (has {', '.join('@' + n for n in self.functions)})"
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def with_function(self, name: str, fn: Function) -> Module:
        """A module with function `name` added or replaced (others shared)."""
        if self.functions.get(name) is fn:
            return self
        return Module({**self.functions, name: fn}, self.attrs)

    def without_function(self, name: str) -> Module:
        """A module without function `name`."""
        return Module({k: v for k, v in self.functions.items() if k != name}, self.attrs)

    @property
    def main(self) -> Function:
        """The `main` function."""
        return self["main"]

    def constants(self) -> dict[str, Constant]:
        """Named constants (weights) used anywhere in the module, by name, first use first."""
        out: dict[str, Constant] = {}
        for fn in self.functions.values():
            for c in function_constants(fn):
                if c.name is not None and c.name not in out:
                    out[c.name] = c
        return out

    def __repr__(self) -> str:
        return f"<Module {', '.join('@' + n for n in self.functions)}>"


def function_constants(fn: Function) -> list[Constant]:
    """Every Constant a function reads (each object once), in order of first use."""
    out: list[Constant] = []
    seen: set[int] = set()

    def visit(expr: Expr) -> None:
        if isinstance(expr, Constant) and id(expr) not in seen:
            seen.add(id(expr))
            out.append(expr)

    for node in fn.iter_nodes():
        for op in node.operands:
            visit(op)
        if isinstance(node, If):
            visit(node.then_branch.result)
            visit(node.else_branch.result)
    visit(fn.output)
    return out


def call(op: str, *args: Expr, prov: Provenance | None = None, name=None, **attrs) -> Call:
    """Shorthand: `call("add", x, y)`, `call("sum", x, axes=[1])`."""
    return Call(op, args, attrs, prov=prov, name=name)


__all__ = [
    "IRError",
    "TypeInferenceError",
    "Node",
    "Expr",
    "Var",
    "Constant",
    "Call",
    "FuncCall",
    "Loop",
    "loop_type",
    "Tuple",
    "TupleGetItem",
    "Block",
    "If",
    "Function",
    "Module",
    "call",
    "children",
    "operands",
    "map_operands",
    "remap_operands",
    "external_reads",
    "outer_operands",
    "substitute",
    "is_leaf",
    "collect_bindings",
    "function_constants",
]
