"""The loop IR's statements and kernels: loops, stores, lets, conditionals, local buffers,
stages and library calls, and the `Kernel` that holds them, with their traversal and
printer (a kernel's `text` and its `name`, a hash of that text, are made here).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.backend.loops.exprs import (
    Buffer,
    Expr,
    Load,
    Var,
    as_expr,
    buffer_type,
    format_dims,
    format_expr,
    map_expr,
    shared_subexpressions,
)
from compiler.ir.types import DType

# ----- statements -------------------------------------------------------------------------


class Stmt:
    """A statement of the loop IR."""

    __slots__ = ()

    def __str__(self) -> str:
        return "\n".join(_Printer().stmt(self, ""))


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """`for var in 0..extent { body }`; a `parallel` loop's iterations are independent and
    may run on several threads (codegen collapses the leading parallel loops of a stage)."""

    var: Var
    extent: Expr
    body: Stmt
    parallel: bool = False

    def __post_init__(self):
        object.__setattr__(self, "extent", as_expr(self.extent))


@dataclass(frozen=True, slots=True)
class Store(Stmt):
    """`buffer[indices] = value` (the value is converted to the buffer's dtype)."""

    buffer: Buffer
    indices: tuple[Expr, ...]
    value: Expr

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(as_expr(i) for i in self.indices))
        if len(self.indices) != self.buffer.ndim:
            raise ValueError(
                f"{self.buffer} has {self.buffer.ndim} dims, indexed with {len(self.indices)}"
            )
        if self.value.dtype is not self.buffer.dtype:
            raise TypeError(
                f"storing {self.value.dtype} into {self.buffer} of {self.buffer.dtype}: "
                "insert a cast"
            )


@dataclass(frozen=True, slots=True)
class Let(Stmt):
    """`let var = value` for the statements of `body`."""

    var: Var
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True)
class Seq(Stmt):
    """Statements in order."""

    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class IfThen(Stmt):
    """`if cond { then } else { orelse }`."""

    cond: Expr
    then: Stmt
    orelse: Stmt | None = None


@dataclass(frozen=True, slots=True)
class Local(Stmt):
    """Scalar accumulators (`local` buffers of shape ()) alive in `body`."""

    buffers: tuple[Buffer, ...]
    body: Stmt


@dataclass(frozen=True, slots=True)
class Stage(Stmt):
    """A top-level loop nest, run as one step; `label` names the graph op(s) it computes."""

    label: str
    body: Stmt


@dataclass(frozen=True, slots=True)
class View:
    """A buffer seen with another shape of the same element count (a free, row-major view)."""

    buffer: Buffer
    shape: tuple[Expr, ...]
    transpose: bool = False  # the view's last two axes swapped (a strided library operand)

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(as_expr(d) for d in self.shape))

    def __str__(self) -> str:
        same = self.shape == self.buffer.shape
        text = str(self.buffer) if same else f"{self.buffer} as [{format_dims(self.shape)}]"
        return text + ".T" if self.transpose else text


@dataclass(frozen=True, slots=True)
class LibCall(Stmt):
    """A top-level call of a library routine (`numpy.matmul`) on buffer views, run as one
    step: not generated code, and the kernel's text says so."""

    routine: str
    out: View
    args: tuple[View, ...]
    attrs: tuple[tuple[str, Any], ...] = ()
    label: str = ""


LIBRARY_ROUTINES = {
    "numpy.matmul": "out = lhs @ rhs (numpy: BLAS sgemm/dgemm for f32/f64), "
    "attrs compute = the dtype the product is computed in",
}


@dataclass(frozen=True)
class Kernel:
    """A lowered function: `params` (inputs, then the output), workspaces, the symbolic dims
    it takes as i64 arguments, and its stages. `source` names what it was lowered from
    (a graph op or fused function and its ops, for the explorer)."""

    base: str
    params: tuple[Buffer, ...]
    workspaces: tuple[Buffer, ...]
    dims: tuple[str, ...]
    body: tuple[Stmt, ...]
    source: str = ""
    name: str = field(init=False)
    text: str = field(init=False, repr=False)

    def __post_init__(self):
        for s in self.body:
            if not isinstance(s, (Stage, LibCall)):
                raise TypeError(f"a kernel's body holds stages and library calls, got {s!r}")
        body_text = _Printer().kernel_body(self)
        digest = hashlib.sha1(body_text.encode()).hexdigest()[:8]
        object.__setattr__(self, "name", f"{self.base}_{digest}")
        object.__setattr__(self, "text", _Printer().kernel(self, body_text))

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        """The input buffers, in argument order."""
        return tuple(b for b in self.params if b.role == "in")

    @property
    def output(self) -> Buffer:
        """The result buffer."""
        return next(b for b in self.params if b.role == "out")

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        """Every non-local buffer: the params, then the workspaces (the runtime's order)."""
        return self.params + self.workspaces

    @property
    def libraries(self) -> tuple[str, ...]:
        """The library routines this kernel calls (empty: all generated code)."""
        return tuple(dict.fromkeys(s.routine for s in self.body if isinstance(s, LibCall)))

    def __str__(self) -> str:
        return self.text


# ----- building and traversal -----------------------------------------------------------------


def seq(stmts: Sequence[Stmt]) -> Stmt:
    """Statements in order, flattened (a single statement is returned as is)."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, Seq):
            flat.extend(s.stmts)
        elif s is not None:
            flat.append(s)
    return flat[0] if len(flat) == 1 else Seq(tuple(flat))


def stmt_exprs(s: Stmt) -> Iterator[Expr]:
    """The expressions a statement holds directly (not those of nested statements)."""
    if isinstance(s, For):
        yield s.extent
    elif isinstance(s, Store):
        yield from s.indices
        yield s.value
    elif isinstance(s, Let):
        yield s.value
    elif isinstance(s, IfThen):
        yield s.cond
    elif isinstance(s, LibCall):
        for v in (s.out, *s.args):
            yield from v.shape


def stmt_children(s: Stmt) -> tuple[Stmt, ...]:
    """The statements nested directly in `s`."""
    if isinstance(s, (For, Let, Local, Stage)):
        return (s.body,)
    if isinstance(s, Seq):
        return s.stmts
    if isinstance(s, IfThen):
        return (s.then,) if s.orelse is None else (s.then, s.orelse)
    return ()


def walk_stmt(s: Stmt) -> Iterator[Stmt]:
    """`s` and every statement nested in it (pre-order)."""
    stack = [s]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(stmt_children(x)))


def replace_buffers(s: Stmt, mapping: dict[Buffer, Buffer]) -> Stmt:
    """`s` with every use of the buffers in `mapping` redirected (loads, stores, views)."""

    memo: dict = {}

    def fn(x: Expr) -> Expr | None:
        if isinstance(x, Load) and x.buffer in mapping:
            return Load(mapping[x.buffer], x.indices)
        return None

    def ex(e: Expr) -> Expr:
        return map_expr(e, fn, memo)

    def view(v: View) -> View:
        return View(mapping.get(v.buffer, v.buffer), v.shape, v.transpose)

    def st(x: Stmt) -> Stmt:
        if isinstance(x, For):
            return For(x.var, ex(x.extent), st(x.body), x.parallel)
        if isinstance(x, Store):
            return Store(
                mapping.get(x.buffer, x.buffer), tuple(ex(i) for i in x.indices), ex(x.value)
            )
        if isinstance(x, Let):
            return Let(x.var, ex(x.value), st(x.body))
        if isinstance(x, Seq):
            return Seq(tuple(st(y) for y in x.stmts))
        if isinstance(x, IfThen):
            return IfThen(ex(x.cond), st(x.then), None if x.orelse is None else st(x.orelse))
        if isinstance(x, Local):
            return Local(x.buffers, st(x.body))
        if isinstance(x, Stage):
            return Stage(x.label, st(x.body))
        if isinstance(x, LibCall):
            return LibCall(x.routine, view(x.out), tuple(view(a) for a in x.args), x.attrs, x.label)
        raise TypeError(f"unknown statement {x!r}")

    return st(s)


# ----- printing -----------------------------------------------------------------------------


class _Printer:
    def exprs(self, roots: Sequence[Expr], ind: str) -> tuple[list[str], list[str]]:
        """`let` lines for the shared sub-expressions of `roots`, and the roots' texts."""
        names: dict[int, str] = {}
        lines = []
        for k, e in enumerate(shared_subexpressions(roots)):
            text = format_expr(e, 0, names)
            names[id(e)] = f"t{k}"
            lines.append(f"{ind}let t{k} = {text}")
        return lines, [format_expr(r, 0, names) for r in roots]

    def stmt(self, s: Stmt, ind: str) -> list[str]:
        if isinstance(s, For):
            head = "parallel for" if s.parallel else "for"
            return [
                f"{ind}{head} {s.var.name} in 0..{format_expr(s.extent)} {{",
                *self.stmt(s.body, ind + "  "),
                f"{ind}}}",
            ]
        if isinstance(s, Store):
            lets, texts = self.exprs([*s.indices, s.value], ind)
            idx = ", ".join(texts[:-1])
            return lets + [f"{ind}%{s.buffer.name}[{idx}] = {texts[-1]}"]
        if isinstance(s, Let):
            head = f"{ind}let {s.var.name}: {s.var.dtype.short} = {format_expr(s.value)}"
            return [head, *self.stmt(s.body, ind)]
        if isinstance(s, Seq):
            return [line for x in s.stmts for line in self.stmt(x, ind)]
        if isinstance(s, IfThen):
            lines = [f"{ind}if {format_expr(s.cond)} {{", *self.stmt(s.then, ind + "  ")]
            if s.orelse is not None:
                lines += [f"{ind}}} else {{", *self.stmt(s.orelse, ind + "  ")]
            return lines + [f"{ind}}}"]
        if isinstance(s, Local):
            decls = ", ".join(f"%{b.name}: {b.dtype.short}" for b in s.buffers)
            return [f"{ind}local {decls}", *self.stmt(s.body, ind)]
        if isinstance(s, Stage):
            return [f"{ind}stage {s.label} {{", *self.stmt(s.body, ind + "  "), f"{ind}}}"]
        if isinstance(s, LibCall):
            args = ", ".join(str(a) for a in s.args)
            attrs = "".join(f", {k}={_attr_text(v)}" for k, v in s.attrs)
            note = f"  # {s.label}: library call, not generated code" if s.label else ""
            return [f"{ind}{s.out} = call {s.routine}({args}{attrs}){note}"]
        raise TypeError(f"cannot print {s!r}")

    def kernel_body(self, k: Kernel) -> str:
        params = []
        for b in k.params:
            role = "out " if b.role == "out" else ""
            params.append(f"{role}%{b.name}: {buffer_type(b)}")
        lines = [f"({', '.join(params)})"]
        if k.dims:
            lines.append(f"  dims {', '.join(k.dims)}")
        for w in k.workspaces:
            lines.append(f"  workspace %{w.name}: {buffer_type(w)}")
        for s in k.body:
            lines.extend(self.stmt(s, "  "))
        return "\n".join(lines)

    def kernel(self, k: Kernel, body_text: str) -> str:
        head, _, rest = body_text.partition("\n")
        lines = []
        if k.source:
            lines.append(f"# {k.source}")
        lines.append(f"kernel @{k.name}{head} {{")
        if rest:
            lines.append(rest)
        lines.append("}")
        return "\n".join(lines)


def _attr_text(v: Any) -> str:
    return v.short if isinstance(v, DType) else repr(v)
