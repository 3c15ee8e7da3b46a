"""convert-layout{layout=NHWC}: run conv2d and the 2-D pools in another data layout (TVM's
ConvertLayout, NCHW <-> NHWC).

A converted op gets a ``permute_dims`` of its input into ``layout`` and one of its result
back; conv2d weights get one into ``kernel_layout`` (default HWIO for NHWC, OIHW for NCHW), an
op on the constant that fold-constant folds. The permutes back then move down, so the next
conv needs none: through elementwise / broadcast ops whose other inputs are scalars, the same
permute, or values computed from constants only (permuted too, by ops); through batch_norm and
reductions with ``axes`` (axes renumbered). Two permutes in a row merge, or vanish when they
cancel. Only permutes this pass made move (their provenance names the pass) and the ones left
unused are removed, so a module without conv2d or pools comes back unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from compiler.ir.nodes import Block, Call, Constant, Expr, Function, If, Module
from compiler.ir.op_registry import BROADCAST, ELEMWISE, REDUCE, get_op
from compiler.ir.types import TensorType
from compiler.passes.dead_code_elimination import live_nodes
from compiler.passes.infra.manager import Pass, PassContext, register_pass
from compiler.passes.infra.rewrite import rewrite_module

# Ops converted, and the attribute holding their data layout.
LAYOUT_ATTR = {
    "conv2d": "data_layout",
    "max_pool2d": "layout",
    "avg_pool2d": "layout",
    "adaptive_avg_pool2d": "layout",
}
DEFAULT_KERNEL_LAYOUT = {"NCHW": "OIHW", "NHWC": "HWIO"}
PASS_NAME = "convert-layout"


def layout_perm(src: str, dst: str) -> tuple[int, ...]:
    """The ``permute_dims`` axes taking a tensor in layout ``src`` to layout ``dst``."""
    return tuple(src.index(c) for c in dst)


def _inverse(axes: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def _axes_of(node: Call) -> tuple[int, ...]:
    axes = node.attrs["axes"]
    rank = len(node.ty.shape)
    return tuple(reversed(range(rank))) if axes is None else tuple(a % rank for a in axes)


def _is_permute(e: Expr) -> bool:
    return isinstance(e, Call) and e.op == "permute_dims" and e.ty.shape is not None


def _ours(e: Expr) -> bool:
    """A permute this pass made (the rewriter marks what a pass builds with its name)."""
    return _is_permute(e) and e.prov.pass_name == PASS_NAME


def permute(x: Expr, axes: Sequence[int]) -> Expr:
    """``permute_dims(x, axes)``, merged into ``x`` when ``x`` is a permute; ``x`` itself when
    the permutations cancel."""
    axes = tuple(axes)
    if _is_permute(x):
        inner = _axes_of(x)
        x, axes = x.args[0], tuple(inner[a] for a in axes)
    if axes == tuple(range(len(axes))):
        return x
    return Call("permute_dims", [x], {"axes": list(axes)})


def _from_constants(e: Expr, memo: dict[int, tuple[Expr, bool]]) -> bool:
    """Whether ``e`` is computed from constants only (fold-constant will fold it)."""
    if id(e) not in memo:  # the entry keeps ``e`` alive, so its id stays its own
        memo[id(e)] = (
            e,
            isinstance(e, Constant)
            or (isinstance(e, Call) and all(_from_constants(a, memo) for a in e.args)),
        )
    return memo[id(e)][1]


def _sink_elementwise(node: Call, memo: dict) -> Expr | None:
    """``op(permute(y, q), c)`` -> ``permute(op(y, c'), q)`` with c' = c permuted by q^-1."""
    q = _axes_of(next(a for a in node.args if _ours(a)))
    rank = len(q)
    args = []
    for a in node.args:
        if not isinstance(a.ty, TensorType) or a.ty.shape is None:
            return None
        arank = len(a.ty.shape)
        if _ours(a) and _axes_of(a) == q:
            args.append(a.args[0])
        elif arank == 0:
            args.append(a)
        elif arank <= rank and _from_constants(a, memo):
            if arank < rank:  # give it the full rank, then move its axes like y's
                a = Call("unsqueeze", [a], {"axes": list(range(rank - arank))})
            args.append(Call("permute_dims", [a], {"axes": list(_inverse(q))}))
        else:
            return None
    inner = Call(node.op, args, node.attrs)
    if inner.ty.shape is None or len(inner.ty.shape) != rank:
        return None
    return Call("permute_dims", [inner], {"axes": list(q)})


def _sink_batch_norm(node: Call) -> Expr | None:
    """``batch_norm(permute(y, q), axis=a)`` -> ``permute(batch_norm(y, axis=q[a]), q)``."""
    x = node.args[0]
    if not _ours(x) or any(_ours(a) for a in node.args[1:]):
        return None
    q = _axes_of(x)
    axis = q[node.attrs["axis"] % len(q)]
    inner = Call(node.op, [x.args[0], *node.args[1:]], node.attrs.with_(axis=axis))
    return Call("permute_dims", [inner], {"axes": list(q)})


def _sink_reduce(node: Call) -> Expr | None:
    """``reduce(permute(y, q), axes)`` -> ``reduce(y, q[axes])``, permuted as needed."""
    x = node.args[0]
    if len(node.args) != 1 or not _ours(x):
        return None
    q = _axes_of(x)
    rank = len(q)
    axes = node.attrs["axes"]
    reduced = set(range(rank)) if axes is None else {a % rank for a in axes}
    new_axes = None if axes is None else sorted(q[i] for i in reduced)
    inner = Call(node.op, [x.args[0]], node.attrs.with_(axes=new_axes))
    if node.attrs["keepdims"]:
        return Call("permute_dims", [inner], {"axes": list(q)})
    kept = [q[i] for i in range(rank) if i not in reduced]
    order = sorted(kept)
    rest = [order.index(a) for a in kept]
    if rest == list(range(len(rest))):
        return inner
    return Call("permute_dims", [inner], {"axes": rest})


def _drop_unused(fn: Function) -> Function:
    """``fn`` without the bindings this pass made that nothing reads any more."""
    live = live_nodes([fn.output])

    def keep(bindings) -> tuple:
        out = []
        for b in bindings:
            if id(b) not in live and b.prov.pass_name == PASS_NAME:
                continue
            if isinstance(b, If):
                b = b.replace(then_branch=block(b.then_branch), else_branch=block(b.else_branch))
            out.append(b)
        return tuple(out)

    def block(blk: Block) -> Block:
        return blk.replace(bindings=keep(blk.bindings))

    return fn.replace(bindings=keep(fn.bindings))


@register_pass
@dataclass(frozen=True)
class ConvertLayout(Pass):
    """Run conv2d and 2-D pools in ``layout`` (e.g. NHWC), conv weights in ``kernel_layout``,
    with the permutes this needs moved down and cancelled where they meet."""

    name: ClassVar[str] = PASS_NAME
    layout: str
    kernel_layout: str = ""

    def __post_init__(self):
        if sorted(self.layout) != sorted("NCHW"):
            raise ValueError(f"layout must be a permutation of NCHW, got {self.layout!r}")
        if self.kernel_layout and sorted(self.kernel_layout) != sorted("OIHW"):
            raise ValueError(
                f"kernel_layout must be a permutation of OIHW, got {self.kernel_layout!r}"
            )

    @property
    def target_kernel_layout(self) -> str:
        """The kernel layout conv2d weights get."""
        return self.kernel_layout or DEFAULT_KERNEL_LAYOUT.get(self.layout, "OIHW")

    def _convert(self, node: Call, attr: str) -> Expr | None:
        src, dst = node.attrs[attr], self.layout
        attrs = dict(node.attrs)
        attrs[attr] = dst
        args = [permute(node.args[0], layout_perm(src, dst))]
        if node.op == "conv2d":
            ksrc, kdst = node.attrs["kernel_layout"], self.target_kernel_layout
            if src == dst and ksrc == kdst:
                return None
            args.append(permute(node.args[1], layout_perm(ksrc, kdst)))
            args.extend(node.args[2:])  # the bias is per channel: no layout
            attrs["kernel_layout"] = kdst
        elif src == dst:
            return None
        new = Call(node.op, args, attrs)
        return new if src == dst else Call("permute_dims", [new], {"axes": layout_perm(dst, src)})

    def transform(self, module: Module, ctx: PassContext) -> Module:
        memo: dict[int, tuple[Expr, bool]] = {}

        def rule(node: Expr) -> Expr | None:
            if not isinstance(node, Call):
                return None
            if node.op in LAYOUT_ATTR:
                return self._convert(node, LAYOUT_ATTR[node.op])
            if not any(_ours(a) for a in node.args):
                return None
            if node.op == "permute_dims":
                return permute(node.args[0], _axes_of(node))
            if node.op == "batch_norm":
                return _sink_batch_norm(node)
            pattern = get_op(node.op).pattern
            if pattern in (ELEMWISE, BROADCAST) and not {"axis", "axes"} & set(node.attrs):
                return _sink_elementwise(node, memo)
            if pattern == REDUCE and {"axes", "keepdims"} <= set(node.attrs):
                return _sink_reduce(node)
            return None

        rewritten = rewrite_module(module, lambda name, fn: rule, self.name)
        if rewritten is module:
            return module
        return rewritten.replace(
            functions={n: _drop_unused(f) for n, f in rewritten.functions.items()}
        )
