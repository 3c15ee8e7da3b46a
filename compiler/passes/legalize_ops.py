"""legalize-ops: lower every op call, and every fused primitive function, to a loop-IR kernel
(compiler/backend), replacing it in the graph by a ``call_lowered`` of that kernel.

A fused function becomes one kernel (its elementwise tail fused into the loop nest of its
anchor or reduction) and its call in the caller becomes the ``call_lowered``; the function
itself is then dropped. The weights a fused function held move to the call's arguments, so
they stay visible (and exported) as the module's parameters. Stays as it is:

- a standalone reshape / flatten / squeeze / unsqueeze: a view of its input, no code;
- an op without inputs (``full``, ``arange`` of a symbolic size): filled by the host;
- a resize whose result length its type cannot state (:func:`host_resize`): the host sizes
  and computes it from the value.

A value whose size only the run gives (a '?' dim: ``nonzero``, a fill or a reshape to a
computed shape, such a resize) is followed by a ``match_shape`` naming that dim
(:func:`name_dynamic_dims`), so the kernels after it compile: a resize of a named ``n`` by 2
or 1.5 is a kernel whose result is ``2*n`` or ``(3*n) // 2``.

``split`` lowers as one slice kernel per result, ``scaled_dot_product_attention`` as its
decomposition (matmul, softmax, matmul) and ``topk`` as a kernel for its indices and a
gather_elements of the values by them. A call that cannot be lowered (an op without a
lowering, a value of unknown rank or with a '?' dim) is left in the graph, where it is
visible, and the codegen pass fails on it with the reason, naming the op and where it came
from; with ``strict=true`` legalize-ops fails there itself. An opaque op (an op of the source
model without a converter) stays as it is: the host calls its framework (torch or onnxruntime)
between the kernels, as it runs ``nonzero``, so a compiled model holding one needs that
framework where it runs. The module holds the kernels it calls (``module.attrs["kernels"]``,
a ``compiler.backend.kernels.KernelSet``: no table outside it); they are listed by
``compiler.backend.lowered_text(module)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.attrs import TypeInferenceError
from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
    Var,
    collect_bindings,
    remap_operands,
)
from compiler.ir.op_registry import get_op
from compiler.ir.symbolic import ANY, sym
from compiler.ir.types import TensorType, TupleType
from compiler.passes.fold_constant import fold_call
from compiler.passes.infra.manager import Pass, PassContext, PassError, register_pass
from compiler.passes.infra.rewrite import rewrite_function

VIEW_OPS = ("reshape", "flatten", "squeeze", "unsqueeze")
# the calls left in a legalized graph that the host runs (a view, or a fill without inputs)
# ops the host runs because their result's size depends on the data (``nonzero``,
# ``bincount``), and
# ``match_shape``, which names such a size so that what follows compiles
# and opaque ops (no converter: their framework, torch or onnxruntime, runs them)
RUNTIME_OPS = ("nonzero", "bincount", "match_shape", "opaque")
HOST_OPS = (*VIEW_OPS, "full", "zeros", "ones", "arange", *RUNTIME_OPS)


def is_host_call(node: Expr) -> bool:
    """Whether the host computes this call in legalized code: a view, a fill, a runtime op, or
    a call made from constants alone that folding left (a scalar broadcast to a symbolic size,
    ``broadcast_to(1.0, [2*batch*seq])``): it reads no buffer, so no kernel makes it."""
    if not isinstance(node, Call) or node.op == "call_lowered":
        return False
    return (
        node.op in HOST_OPS
        or host_resize(node)
        or (bool(node.args) and all(isinstance(a, Constant) for a in node.args))
    )


def host_resize(node: Call) -> bool:
    """Whether ``node`` is a resize whose result has a '?' dim with its input's dims known: a
    length its type cannot state (a symbolic size by a scale like 0.7, whose float32 product
    onnxruntime truncates), which the host computes from the value, as it sizes ``nonzero``;
    a match_shape names it for what follows. (A resize of named dims by 2 or 1.5 is a kernel,
    its result ``2*n`` or ``(3*n) // 2``.)"""
    if node.op != "resize" or not isinstance(node.ty, TensorType) or node.ty.shape is None:
        return False
    data = node.args[0].ty
    known = isinstance(data, TensorType) and data.shape is not None and ANY not in data.shape
    return known and ANY in node.ty.shape


# what may leave a '?' dim that only its value at run time gives: a fill of a computed size,
# a reshape to a computed shape, a resize whose length its type cannot state
_DYNAMIC_PRODUCERS = (
    "nonzero", "bincount", "full", "zeros", "ones", "arange", "opaque", "reshape", "resize"
)  # fmt: skip


def _source(ops: list[str], fused: bool) -> str:
    text = ("fused " if fused else "") + ", ".join(ops)
    return f"lowered from {text}"


def _base_name(ops: list[str], fused: bool) -> str:
    return (("fused_" if fused else "") + "_".join(ops))[:60]


def _determined_dims(args: list[Expr], like: Expr) -> set[str]:
    """Symbols that appear alone in some dim of the call's arguments or result (``n``,
    ``2*n + 1``, ``n // 2``): the kernel's runtime finds them from the buffers' sizes."""
    out: set[str] = set()
    for e in [*args, like]:
        shape = getattr(e.ty, "shape", None) or ()
        for d in shape:
            free = getattr(d, "free_symbols", None)
            if free and len(free) == 1:
                out |= set(free)
    return out


def lowered_call(kernel, args: list[Expr], like: Expr, kernels: dict) -> Call | None:
    """The ``call_lowered`` replacing ``like`` (same type, provenance and name hint), its
    kernel added to ``kernels`` (name -> kernel: what the module will hold); None when the
    kernel would read no buffer (made from constants only: the host computes it)."""
    if not args:
        return None

    kernels.setdefault(kernel.name, kernel)
    libs = kernel.libraries
    attrs = {
        "kernel": kernel.name,
        "shape": like.ty.shape,
        "dtype": like.ty.dtype,
        "library": ", ".join(libs) if libs else None,
    }
    # symbolic dims the buffers' sizes do not determine (``batch * seq``): their values are
    # passed by whoever runs the call (the interpreter or the executable)
    implicit = [d for d in kernel.dims if d not in _determined_dims(args, like)]
    if implicit:
        attrs["dims"] = [sym(d) for d in implicit]
        attrs["dim_names"] = ", ".join(implicit)
    return Call("call_lowered", args, attrs, prov=like.prov, name=like.name)


class _Legalizer:
    def __init__(self, module: Module, pass_name: str, strict: bool = True):
        import compiler.backend.lowering as lowering  # the module, not the package (above us)

        self.lowering = lowering
        self.module = module
        self.pass_name = pass_name
        self.strict = strict
        self.kernels: dict = {}  # name -> the kernels lowered so far (the module will hold them)

    def rule(self, node: Expr) -> Expr | None:
        """The lowered replacement of a binding (None: keep it)."""
        try:
            if isinstance(node, Call):
                self.check_annotation(node)
                return self.lower_call(node)
            if isinstance(node, FuncCall):
                return self.lower_fused(node)
        except PassError:
            if self.strict:
                raise
        return None

    def error(self, message: str, node: Expr) -> PassError:
        where = "" if node.prov.is_empty else f" (at {node.prov.describe()})"
        return PassError(f"{message}{where}", node)

    def check_annotation(self, node: Call) -> None:
        """Kernels are generated from the annotated types (loop extents, buffer shapes), so an
        annotation its inputs do not give (a faulty pass, a crafted file) would make a kernel
        that reads or writes outside its buffers: such a call is never compiled."""
        try:
            inferred = node.inferred_type()
        except TypeInferenceError as e:
            raise self.error(f"{node.op} cannot be compiled: {e}", node) from None
        if inferred != node.ty:
            raise self.error(
                f"{node.op} is annotated {node.ty} but its inputs give {inferred}; a call whose "
                "annotation is wrong is not compiled",
                node,
            )

    def lower_call(self, node: Call) -> Expr | None:
        if node.op == "call_lowered" or node.op in VIEW_OPS or node.op in RUNTIME_OPS:
            return None
        if host_resize(node):
            return None
        if not node.args:
            return None
        expand = EXPANSIONS.get(node.op)
        if expand is not None:
            return self.lower_tree(expand(node, self), node)
        try:
            kernel, args = self.lowering.lower_group(
                _base_name([node.op], False), [node], node, _source([node.op], False)
            )
        except self.lowering.LoweringError as e:
            raise self.error(str(e), node) from None
        return lowered_call(kernel, args, node, self.kernels)

    def lower_tree(self, root: Expr, origin: Call) -> Expr:
        """Lower every call of a freshly built subgraph (its leaves are existing values)."""
        mapping: dict[int, Expr] = {}
        known = {id(a) for a in origin.args}
        for b in collect_bindings([root], known):
            new = b
            if isinstance(b, Call):
                call = b.replace(
                    args=tuple(mapping.get(id(a), a) for a in b.args), prov=origin.prov
                )
                value = fold_call(call)  # e.g. the ones() of a causal mask
                if value is not None:
                    new = Constant(value, prov=origin.prov.with_pass(self.pass_name))
                else:
                    new = self.lower_call(call) or call
            elif isinstance(b, Tuple):
                new = remap_operands(b, mapping)
            mapping[id(b)] = new
        return mapping.get(id(root), root)

    def lower_fused(self, node: FuncCall) -> Expr | None:
        callee = self.module.functions.get(node.func)
        if callee is None or not callee.attrs.get("primitive", False):
            return None
        calls = [b for b in callee.bindings]
        if not all(isinstance(b, Call) for b in calls) or not isinstance(callee.output, Call):
            raise self.error(f"fused function @{node.func} holds more than op calls", node)
        if len(callee.params) != len(node.args):
            raise self.error(f"fused function @{node.func}: called with a wrong arity", node)
        for p, a in zip(callee.params, node.args, strict=True):
            if p.ty != a.ty and not _symbolic_param(p.ty, a.ty):
                raise self.error(
                    f"fused function @{node.func}: parameter %{p.name} is {p.ty} but the call "
                    f"passes {a.ty}; it is not compiled",
                    node,
                )
        for c in calls:
            self.check_annotation(c)
        ops = [c.op for c in calls]
        try:
            kernel, inner_args = self.lowering.lower_group(
                _base_name(ops, True), calls, callee.output, _source(ops, True)
            )
        except self.lowering.LoweringError as e:
            raise self.error(f"in fused function @{node.func}: {e}", node) from None
        params = {id(p): a for p, a in zip(callee.params, node.args, strict=False)}
        args = [params.get(id(a), a) for a in inner_args]
        for a in args:
            if not isinstance(a, Constant) and id(a) in {id(p) for p in callee.params}:
                raise self.error(f"fused function @{node.func}: unmapped parameter", node)
        if not args:  # reads no buffer (its parameters only bind symbolic dims): inline it
            return self.inline(node, callee, params)
        return lowered_call(kernel, args, node, self.kernels)

    def inline(self, node: FuncCall, callee, params: dict[int, Expr]) -> Expr:
        """The callee's ops in place of the call, each lowered on its own (an op with no
        argument, e.g. ``arange(stop=n)``, is computed by the host)."""
        mapping = dict(params)
        for b in callee.bindings:
            call = remap_operands(b, mapping).replace(prov=node.prov)
            mapping[id(b)] = self.lower_call(call) or call
        out = mapping[id(callee.output)]
        return out.replace(name=node.name) if out.name != node.name else out


def _symbolic_param(param, arg) -> bool:
    """A parameter with symbolic dims takes a more specific argument of the same dtype and
    rank (the kernel binds the dims from the buffers' sizes at run time and checks them)."""
    from compiler.ir.types import TensorType

    if not (isinstance(param, TensorType) and isinstance(arg, TensorType)):
        return False
    if param.dtype is not arg.dtype or param.shape is None or arg.shape is None:
        return False
    return len(param.shape) == len(arg.shape) and all(
        not isinstance(p, int) or p == a for p, a in zip(param.shape, arg.shape, strict=True)
    )


def name_dynamic_dims(module: Module, pass_name: str) -> Module:
    """A ``match_shape`` after each value whose size only the data gives (``nonzero``, a fill
    of a computed size: a '?' dim), naming that dim with a fresh symbol (``nonzero_n``), and
    the '?' dims of what reads it made precise from there (their inputs now name them). A
    '?' has no size to loop over; a symbol is bound at run time, so the kernels after it
    compile. Annotations other than '?' are never changed (a wrong one is still refused)."""
    from compiler.ir.names import fresh_name
    from compiler.ir.verify import symbols_of

    used: set[str] = set()
    for fn in module.functions.values():
        for p in fn.params:
            used |= symbols_of(p.ty)
        for n in fn.iter_nodes():
            used |= symbols_of(n.ty)

    def unknown(ty) -> bool:
        return isinstance(ty, TensorType) and ty.shape is not None and ANY in ty.shape

    def precise(old, new) -> bool:
        """Whether ``new`` is ``old`` with some '?' dims named (nothing else changed)."""
        if isinstance(old, TupleType) and isinstance(new, TupleType):
            return len(old) == len(new) and all(
                precise(a, b) for a, b in zip(old.fields, new.fields, strict=True)
            )
        return (
            isinstance(old, TensorType)
            and isinstance(new, TensorType)
            and old.dtype is new.dtype
            and old.shape is not None
            and new.shape is not None
            and len(old.shape) == len(new.shape)
            and all(a is ANY or a == b for a, b in zip(old.shape, new.shape, strict=True))
        )

    functions = dict(module.functions)

    def specialized(node: FuncCall) -> FuncCall | None:
        """A call of a fused function whose '?' parameters now receive named dims: the call
        of a copy typed with them (its inside made precise the same way)."""
        callee = functions.get(node.func)
        if callee is None or not callee.attrs.get("primitive", False) or isinstance(node, Loop):
            return None
        if not any(
            p.ty != a.ty and precise(p.ty, a.ty)
            for p, a in zip(callee.params, node.args, strict=False)
        ):
            return None
        params = [
            Var(p.name, a.ty, p.prov) if precise(p.ty, a.ty) else p
            for p, a in zip(callee.params, node.args, strict=False)
        ]
        body = _retyped_function(callee, params, rule, pass_name, node.func)
        name = fresh_name(f"{node.func}_named", set(functions))
        functions[name] = body
        ty = body.ret_type if precise(node.ty, body.ret_type) else node.ty
        return FuncCall(name, node.args, ty, prov=node.prov, name=node.name)

    def rule(node: Expr) -> Expr | None:
        if isinstance(node, FuncCall):
            return specialized(node)
        if not isinstance(node, Call) or not unknown(node.ty) or node.op == "match_shape":
            return None
        new = node
        try:
            inferred = node.inferred_type()
        except TypeInferenceError:
            inferred = None
        if inferred is not None and precise(node.ty, inferred):
            new = node.replace(ty=inferred)  # only '?' dims made precise
        if unknown(new.ty) and new.op in _DYNAMIC_PRODUCERS:
            shape = [sym(fresh_name(f"{new.op}_n", used)) if d is ANY else d for d in new.ty.shape]
            return Call("match_shape", [new], {"shape": shape})
        return None if new is node else new

    if not any(
        isinstance(n, Call) and n.op in _DYNAMIC_PRODUCERS and unknown(n.ty)
        for fn in module.functions.values()
        for n in fn.iter_nodes()
    ):
        return module
    for name, fn in module.functions.items():
        if not fn.attrs.get("primitive", False):
            functions[name] = rewrite_function(fn, rule, pass_name, name)
    return module.replace(functions=functions)


def _retyped_function(fn: Function, params: list, rule, pass_name: str, fname: str) -> Function:
    """``fn`` with new parameters (more precise types), its bindings rebuilt on them."""
    mapping = {id(old): new for old, new in zip(fn.params, params, strict=True) if old is not new}
    out = []
    for b in fn.bindings:
        new = remap_operands(b, mapping)
        r = rule(new)
        new = r if r is not None else new
        if new is not b:
            mapping[id(b)] = new
        out.append(new)
    output = mapping.get(id(fn.output), fn.output)
    return Function(params, out, output, fn.attrs, fn.prov)


def unlowered_reason(module: Module, node: Expr) -> str | None:
    """Why legalize-ops leaves ``node`` (a binding of ``module``) unlowered; None if it
    lowers or needs no lowering."""
    try:
        _Legalizer(module, LegalizeOps.name, strict=True).rule(node)
    except PassError as e:
        return str(e)
    return None


def _split(node: Call, legalizer: _Legalizer) -> Expr:
    x = node.args[0]
    axis = node.attrs["axis"] % len(x.ty.shape)
    fields, start = [], 0
    for ty in node.ty.fields:
        size = ty.shape[axis]
        if not isinstance(size, int) or not isinstance(start, int):
            raise legalizer.error("split: sections of symbolic size cannot be lowered", node)
        fields.append(
            Call("strided_slice", [x], {"begin": [start], "end": [start + size], "axes": [axis]})
        )
        start += size
    return Tuple(fields)


def _attention(node: Call, legalizer: _Legalizer) -> Expr:
    from compiler.passes.decompose_ops import DECOMPOSITIONS

    out = DECOMPOSITIONS["scaled_dot_product_attention"](node)
    if out is None:
        raise legalizer.error("scaled_dot_product_attention with a symbolic feature size", node)
    # a query row with no key left (softmax of only -inf: nan) gives zeros, as the op does
    probs, value = out.args
    zero = Constant.scalar(0, probs.ty.dtype)
    safe = Call("where", [Call("isnan", [probs]), zero, probs])
    return Call("matmul", [safe, value], out.attrs)


def _topk(node: Call, legalizer: _Legalizer) -> Expr:
    """topk as two kernels: the indices (a selection), then the values gathered by them."""
    x = node.args[0]
    like = TupleGetItem(node, 1, prov=node.prov)
    try:
        kernel, args = legalizer.lowering.lower_group(
            _base_name(["topk"], False), [node], node, _source(["topk"], False), field=1
        )
    except legalizer.lowering.LoweringError as e:
        raise legalizer.error(str(e), node) from None
    indices = lowered_call(kernel, args, like, legalizer.kernels)
    if indices is None:  # a one-element constant: the host computes it
        prov = node.prov.with_pass(legalizer.pass_name)
        values, order = get_op("topk").compute([x.data], node.attrs)
        return Tuple([Constant(values, prov=prov), Constant(order, prov=prov)])
    values = Call("gather_elements", [x, indices], {"axis": node.attrs["axis"]})
    return Tuple([values, indices])


# Ops lowered through a graph-level expansion into ops that have lowerings.
EXPANSIONS = {"split": _split, "scaled_dot_product_attention": _attention, "topk": _topk}


@register_pass
@dataclass(frozen=True)
class LegalizeOps(Pass):
    """Lower op calls and fused primitive functions to loop-IR kernels (call_lowered);
    ``strict``: fail on a call that cannot be lowered instead of leaving it."""

    name: ClassVar[str] = "legalize-ops"
    strict: bool = False

    def transform(self, module: Module, ctx: PassContext) -> Module:
        module = name_dynamic_dims(module, self.name)
        legalizer = _Legalizer(module, self.name, self.strict)
        functions: dict[str, Function] = {}
        for fname, fn in module.functions.items():
            if fn.attrs.get("primitive", False):
                continue
            functions[fname] = rewrite_function(fn, legalizer.rule, self.name, fname)
        called = {
            b.func for fn in functions.values() for b in fn.iter_nodes() if isinstance(b, FuncCall)
        }
        for fname, fn in module.functions.items():
            if fn.attrs.get("primitive", False) and fname in called:
                functions[fname] = fn  # still called (from an If branch we could not reach)
        unchanged = functions.keys() == module.functions.keys() and all(
            functions[k] is module.functions[k] for k in functions
        )
        if unchanged and module.attrs.get("backend") == "loops":
            return module
        from compiler.backend.kernels import ATTR, kernel_calls, module_kernels

        # the module holds the kernels it calls (those of an earlier lowering too); marked
        # "loops" even when nothing lowered, so codegen checks what was left
        lowered = Module(functions, module.attrs)
        held = module_kernels(module).with_kernels(legalizer.kernels.values())
        kernels = held.only(n for n in kernel_calls(lowered) if n in held)
        return Module(functions, module.attrs.with_(backend="loops", **{ATTR: kernels}))
