"""Recurrent ops and loops: RNN, GRU, LSTM, Scan and Loop, unrolled into existing IR ops or
run as Loop nodes.

A static sequence length (trip count) up to :data:`MAX_UNROLL` is unrolled step by step, as
a compiler would: the input projection of every step is one ``matmul`` over the whole
sequence, then each step is a ``matmul`` of the hidden state and elementwise gates. A
symbolic (or longer) sequence, a trip count known only at run time and an early exit on data
become a ``Loop`` node (compiler.ir.Loop) over a private body function built once: the body's
reads of outer values are captured as its extra parameters (compiler.ir.closure), the scanned
outputs stacked by the loop (a reverse direction reversed after it).

``sequence_lens`` is honoured with masks: at step ``t`` a batch entry whose length is at most
``t`` keeps its state and outputs zeros, which also gives the reverse direction its meaning
(each sequence read backwards from its own last element).

Loop (a trip count that is a constant or computed from static shapes, a condition that stays
known-true) and Scan (versions 8 and 9+, a static length) unroll by converting their body
graph once per iteration with its inputs bound to the iteration's values; a carried ONNX
sequence (a tuple whose length may change) cannot be a Loop node's state. What an import
may unroll in all is bounded (:data:`MAX_UNROLLED_NODES`).
"""

from __future__ import annotations

import numpy as np

from compiler.frontend.onnx_context import ConversionError, ConvertContext, Scope, Unsupported
from compiler.frontend.onnx_ops.registry import converter
from compiler.ir.nodes import Expr
from compiler.ir.symbolic import ANY, dim_str
from compiler.ir.types import TensorType

MAX_UNROLL = 4096
"""Sequence lengths and trip counts unrolled up to this many steps."""

MAX_UNROLLED_NODES = 1 << 17
"""What one import may unroll in all (steps times the nodes of a step; nested loops add up)."""

MAX_HIDDEN = 1 << 16
"""A hidden_size above this is refused (a corrupt model)."""


def _spend(ctx: ConvertContext, nodes: int) -> None:
    """Count ``nodes`` unrolled nodes against the import's budget (a corrupt or hostile model
    nesting loops cannot make the import run for ever)."""
    importer = ctx.importer
    spent = getattr(importer, "_unrolled_nodes", 0) + nodes
    if spent > MAX_UNROLLED_NODES:
        raise Unsupported(
            f"{ctx.node.op_type}: unrolling would make more than {MAX_UNROLLED_NODES} nodes"
        )
    importer._unrolled_nodes = spent


# ----- activations ------------------------------------------------------------------------

# name: (number of alpha values, number of beta values, default alpha, default beta)
_ACTIVATIONS = {
    "Relu": (0, 0, None, None),
    "Tanh": (0, 0, None, None),
    "Sigmoid": (0, 0, None, None),
    "Softsign": (0, 0, None, None),
    "Softplus": (0, 0, None, None),
    "Affine": (1, 1, None, None),
    "LeakyRelu": (1, 0, 0.01, None),
    "ThresholdedRelu": (1, 0, 1.0, None),
    "ScaledTanh": (1, 1, None, None),
    "HardSigmoid": (1, 1, 0.2, 0.5),
    "Elu": (1, 0, 1.0, None),
}
_BY_LOWER = {k.lower(): k for k in _ACTIVATIONS}


def _activation(ctx: ConvertContext, name: str, alpha, beta):
    """A function building activation ``name`` on an expression."""

    def c(v, x):
        return ctx.like(v, x)

    def apply(x: Expr) -> Expr:
        call = ctx.call
        if name == "Relu":
            return call("relu", x)
        if name == "Tanh":
            return call("tanh", x)
        if name == "Sigmoid":
            return call("sigmoid", x)
        if name == "Softsign":
            return call("divide", x, call("add", c(1, x), call("abs", x)))
        if name == "Softplus":
            return call("softplus", x)
        if name == "Affine":
            return call("add", call("multiply", c(alpha, x), x), c(beta, x))
        if name == "LeakyRelu":
            return call("leaky_relu", x, alpha=float(alpha))
        if name == "ThresholdedRelu":
            return call("where", call("greater", x, c(alpha, x)), x, c(0, x))
        if name == "ScaledTanh":
            return call("multiply", c(alpha, x), call("tanh", call("multiply", c(beta, x), x)))
        if name == "HardSigmoid":
            y = call("add", call("multiply", c(alpha, x), x), c(beta, x))
            return call("clip", y, min=0.0, max=1.0)
        if name == "Elu":
            neg = call("multiply", c(alpha, x), call("expm1", x))
            return call("where", call("greater_equal", x, c(0, x)), x, neg)
        raise AssertionError(name)

    return apply


def _activations(ctx: ConvertContext, defaults: list[str], num_dir: int) -> list[list]:
    """The activation functions of each direction (``activations``, ``activation_alpha``,
    ``activation_beta``; alpha and beta values are taken in order by the functions that use
    them, as onnxruntime does)."""
    names = ctx.attr("activations")
    n = len(defaults)
    if names is None:
        names = defaults * num_dir
    else:
        names = list(names)
        if len(names) == n and num_dir == 2:
            names = names * 2
        if len(names) != n * num_dir:
            raise ConversionError(
                f"activations must list {n * num_dir} functions ({n} per direction), "
                f"got {len(names)}"
            )
    alphas = list(ctx.attr("activation_alpha", []) or [])
    betas = list(ctx.attr("activation_beta", []) or [])
    fns = []
    for raw in names:
        name = _BY_LOWER.get(str(raw).lower())
        if name is None:
            raise Unsupported(f"{ctx.node.op_type} activation {raw!r}")
        na, nb, da, db = _ACTIVATIONS[name]
        alpha = alphas.pop(0) if na and alphas else da
        beta = betas.pop(0) if nb and betas else db
        if (na and alpha is None) or (nb and beta is None):
            raise ConversionError(f"activation {name} needs activation_alpha/beta values")
        fns.append(_activation(ctx, name, alpha, beta))
    return [fns[d * n : (d + 1) * n] for d in range(num_dir)]


def _differ(a, b) -> bool:
    """Whether two dims are both static and differ."""
    return isinstance(a, int) and isinstance(b, int) and a != b


# ----- the shared unrolling ---------------------------------------------------------------

_DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}


class _Recurrence:
    """What RNN, GRU and LSTM share: inputs in the time-major layout, checked shapes, and the
    unrolled steps of each direction."""

    def __init__(self, ctx: ConvertContext, gates: int):
        self.ctx = ctx
        self.memo: dict = {}
        op = ctx.node.op_type
        self.layout = ctx.attr("layout", 0)
        if self.layout not in (0, 1):
            raise ConversionError(f"layout must be 0 or 1, got {self.layout}")
        self.direction = ctx.attr("direction", "forward")
        if self.direction not in _DIRECTIONS:
            raise ConversionError(
                f"direction must be forward, reverse or bidirectional, got {self.direction!r}"
            )
        self.num_dir = _DIRECTIONS[self.direction]
        for i, what in ((0, "X"), (1, "W"), (2, "R")):
            if ctx.rank(i) != 3:
                raise ConversionError(f"{what} must have rank 3, got {ctx.ty(i)}")
        x = _refined(ctx, ctx.input(0))
        if not x.ty.dtype.is_float:
            raise ConversionError(f"X must be a float tensor, got {x.ty}")
        if self.layout == 1:
            x = ctx.call("permute_dims", x, axes=[1, 0, 2])
        self.x = x  # [seq, batch, input]
        steps = x.ty.shape[0]
        # a static sequence is unrolled; a symbolic (or long) one runs as a Loop node
        self.looped = not isinstance(steps, int) or steps > MAX_UNROLL
        if isinstance(steps, int) and steps < 1:
            raise Unsupported(f"{op} over an empty sequence")
        self.steps = steps
        _spend(ctx, (1 if self.looped else steps) * self.num_dir * 8 * gates)
        hidden = ctx.attr("hidden_size")
        r_hidden = ctx.ty(2).shape[2]
        if hidden is None:
            hidden = r_hidden
            if not isinstance(hidden, int):
                raise Unsupported(f"{op} without hidden_size and a symbolic R")
        if not isinstance(hidden, int) or not 0 < hidden <= MAX_HIDDEN:
            raise ConversionError(f"hidden_size must be in 1..{MAX_HIDDEN}, got {hidden}")
        self.hidden = hidden
        self.gates = gates
        want = {
            1: (self.num_dir, gates * hidden, x.ty.shape[2]),
            2: (self.num_dir, gates * hidden, hidden),
        }
        for i, shape in want.items():
            got = ctx.ty(i).shape
            for g, w in zip(got, shape, strict=True):
                if isinstance(g, int) and isinstance(w, int) and g != w:
                    raise ConversionError(
                        f"{'WR'[i - 1]} must have shape {list(shape)}, got {ctx.ty(i)}"
                    )
        for i in (1, 2):
            if ctx.ty(i).dtype is not x.ty.dtype:
                raise ConversionError(f"X, W and R must share a dtype, got {ctx.ty(i)}")
        self.clip = ctx.attr("clip")
        if self.clip is not None and not self.clip > 0:
            raise ConversionError(f"clip must be positive, got {self.clip}")
        self.mask_lens = None
        if ctx.has(4):
            lens = ctx.input(4)
            lt = lens.ty
            if not lt.dtype.is_int or lt.shape is None or len(lt.shape) != 1:
                raise ConversionError(f"sequence_lens must be a 1-D integer tensor, got {lt}")
            if _differ(lt.shape[0], x.ty.shape[1]):
                raise ConversionError(f"sequence_lens {lt} must have one length per batch entry")
            value = ctx.const(4)
            if value is None or not (value.astype(np.int64) >= steps).all():
                self.mask_lens = ctx.call("unsqueeze", lens, axes=[1])  # [batch, 1]

    # ----- helpers ------------------------------------------------------------------------
    def state(self, i: int, d: int) -> Expr | None:
        """Initial state input ``i`` of direction ``d`` as [batch, hidden], or None."""
        ctx = self.ctx
        if not ctx.has(i):
            return None
        s = ctx.input(i)
        if ctx.rank(i) != 3:
            raise ConversionError(f"input {i} (an initial state) must have rank 3, got {s.ty}")
        if s.ty.dtype is not self.x.ty.dtype:
            raise ConversionError(f"input {i} must have the dtype of X, got {s.ty}")
        dirs, batch = (s.ty.shape[1], s.ty.shape[0]) if self.layout else s.ty.shape[:2]
        if _differ(dirs, self.num_dir) or _differ(batch, self.x.ty.shape[1]):
            raise ConversionError(
                f"input {i} (an initial state) of {s.ty} does not match {self.num_dir} "
                f"direction(s) and the batch of X"
            )
        return ctx.call("take", s, ctx.constant(d, "int64"), axis=1 if self.layout else 0)

    def weight(self, i: int, d: int) -> Expr:
        """Direction ``d`` of weight input ``i`` (made once, shared by every step)."""
        key = ("weight", i, d)
        if key not in self.memo:
            w = self.ctx.input(i)
            self.memo[key] = self.ctx.call("take", w, self.ctx.constant(d, "int64"), axis=0)
        return self.memo[key]

    def transposed(self, i: int, d: int, k: int = 0, count: int | None = None) -> Expr:
        """Gate rows ``k .. k + count`` of direction ``d`` of weight ``i``, transposed (the
        right operand of a matmul; made once)."""
        key = ("transposed", i, d, k, count)
        if key not in self.memo:
            w = self.weight(i, d)
            if count is not None:
                h = self.hidden
                w = self.ctx.call(
                    "strided_slice", w, begin=[k * h], end=[(k + count) * h], axes=[0]
                )
            self.memo[key] = self.ctx.call("permute_dims", w, axes=[1, 0])
        return self.memo[key]

    def project(self, x: Expr, i: int, d: int, bias: Expr | None, k=0, count=None) -> Expr:
        """``x @ W^T (+ bias)`` for weight input ``i`` of direction ``d``."""
        y = self.ctx.call("matmul", x, self.transposed(i, d, k, count))
        return y if bias is None else self.ctx.call("add", y, bias)

    def biases(self, d: int) -> tuple[Expr | None, Expr | None]:
        """The input and recurrence biases (Wb, Rb) of direction ``d``, or Nones."""
        if ("bias", d) not in self.memo:
            self.memo[("bias", d)] = self._biases(d)
        return self.memo[("bias", d)]

    def bias_cols(self, d: int, k: int, count: int) -> Expr | None:
        """Gate columns ``k .. k + count`` of the recurrence bias of direction ``d`` (made
        once), or None."""
        key = ("bias_cols", d, k, count)
        if key not in self.memo:
            rb = self.biases(d)[1]
            self.memo[key] = None if rb is None else self.cols(rb, k, count)
        return self.memo[key]

    def _biases(self, d: int) -> tuple[Expr | None, Expr | None]:
        ctx = self.ctx
        if not ctx.has(3):
            return None, None
        b = ctx.input(3)
        n = 2 * self.gates * self.hidden
        bt = b.ty
        if (
            bt.shape is None
            or len(bt.shape) != 2
            or (isinstance(bt.shape[1], int) and bt.shape[1] != n)
        ):
            raise ConversionError(f"B must have shape [{self.num_dir}, {n}], got {bt}")
        if bt.dtype is not self.x.ty.dtype:
            raise ConversionError(f"B must have the dtype of X, got {bt}")
        bd = ctx.call("take", b, ctx.constant(d, "int64"), axis=0)
        half = n // 2
        wb = ctx.call("strided_slice", bd, begin=[0], end=[half], axes=[0])
        rb = ctx.call("strided_slice", bd, begin=[half], end=[n], axes=[0])
        return wb, rb

    def cols(self, x: Expr, k: int, count: int = 1) -> Expr:
        """Gate columns ``k .. k + count`` (each ``hidden`` wide) of the last axis of ``x``."""
        h = self.hidden
        axis = len(x.ty.shape) - 1
        return self.ctx.call("strided_slice", x, begin=[k * h], end=[(k + count) * h], axes=[axis])

    def clipped(self, x: Expr) -> Expr:
        if self.clip is None:
            return x
        return self.ctx.call("clip", x, min=-float(self.clip), max=float(self.clip))

    def zeros(self, xw: Expr) -> Expr:
        """A [batch, hidden] zero state (the batch dim may be symbolic)."""
        first = self.ctx.call("take", xw, self.ctx.constant(0, "int64"), axis=0)
        return self.ctx.call("zeros_like", self.cols(first, 0))

    def order(self, d: int) -> list[int]:
        reverse = self.direction == "reverse" or d == 1
        return list(reversed(range(self.steps))) if reverse else list(range(self.steps))

    def mask(self, t: int) -> Expr | None:
        """[batch, 1] bool: which batch entries step ``t`` is inside of, or None (all)."""
        if self.mask_lens is None:
            return None
        lens = self.mask_lens
        return self.ctx.call("less", self.ctx.constant(t, lens.ty.dtype), lens)

    def keep(self, mask, new: Expr, old: Expr) -> Expr:
        return new if mask is None else self.ctx.call("where", mask, new, old)

    def mask_at(self, t: Expr) -> Expr | None:
        """``mask`` for a step number known at run time (a 0-d i64)."""
        if self.mask_lens is None:
            return None
        lens = self.mask_lens
        return self.ctx.call("less", self.ctx.call("cast", t, dtype=lens.ty.dtype), lens)

    def run(self, step) -> list[Expr]:
        """Unroll every direction (or loop over it, see ``looped``): ``step(d, t, xt,
        states) -> (output, states)``, with ``xt`` the step's projected input [batch, gates *
        hidden] and states the list given by ``self.initial(d, xw)``; returns Y, then each
        final state, in the ONNX layouts."""
        ctx = self.ctx
        ys, finals = [], []
        for d in range(self.num_dir):
            wb, _rb = self.biases(d)
            xw = self.project(self.x, 1, d, wb)  # [seq, batch, gates * hidden]
            states = self.initial(d, xw)
            if self.looped:
                y, states = self.loop(step, d, xw, states)
                ys.append(ctx.call("unsqueeze", y, axes=[1]))
                finals.append(states)
                continue
            outs: dict[int, Expr] = {}
            for t in self.order(d):
                xt = ctx.call("take", xw, ctx.constant(t, "int64"), axis=0)
                mask = self.mask(t)
                y, new = step(d, t, xt, states)
                states = [self.keep(mask, n, o) for n, o in zip(new, states, strict=True)]
                outs[t] = y if mask is None else ctx.call("where", mask, y, ctx.like(0, y))
            seq = [ctx.call("unsqueeze", outs[t], axes=[0, 1]) for t in range(self.steps)]
            ys.append(seq[0] if len(seq) == 1 else ctx.call("concat", *seq, axis=0))
            finals.append(states)
        y = ys[0] if len(ys) == 1 else ctx.call("concat", *ys, axis=1)  # [seq, dir, batch, h]
        if self.layout == 1:
            y = ctx.call("permute_dims", y, axes=[2, 0, 1, 3])
        results = [y]
        for k in range(len(finals[0])):
            parts = [ctx.call("unsqueeze", f[k], axes=[1 if self.layout else 0]) for f in finals]
            results.append(
                parts[0]
                if len(parts) == 1
                else ctx.call("concat", *parts, axis=1 if self.layout else 0)
            )
        return results

    def loop(self, step, d: int, xw: Expr, states: list[Expr]) -> tuple[Expr, list[Expr]]:
        """One direction as a Loop node over the sequence: ``(Y [seq, batch, hidden], final
        states)``."""
        from compiler.frontend.onnx_ops.registry import dim_value

        ctx = self.ctx
        n = dim_value(ctx, xw, 0)
        reverse = self.direction == "reverse" or d == 1

        def build(i, c, st):
            t = (
                ctx.call("subtract", ctx.call("subtract", n, ctx.constant(1, "int64")), i)
                if reverse
                else i
            )
            xt = ctx.call("take", xw, t, axis=0)
            mask = self.mask_at(t)
            y, new = step(d, t, xt, st)
            new = [self.keep(mask, a, b) for a, b in zip(new, st, strict=True)]
            y = y if mask is None else ctx.call("where", mask, y, ctx.like(0, y))
            return c, new, [y]

        outs = _make_loop(ctx, states, build, n, length=self.steps)
        final, y = outs[:-1], outs[-1]
        if reverse:  # the steps ran from the end: put Y back in sequence order
            y = _reversed_axis0(ctx, y, n)
        return y, final

    def initial(self, d: int, xw: Expr) -> list[Expr]:
        raise NotImplementedError


def _recurrence_attrs(*extra: str) -> tuple[str, ...]:
    return (
        "activation_alpha",
        "activation_beta",
        "activations",
        "clip",
        "direction",
        "hidden_size",
        "layout",
        *extra,
    )


def _recurrent(ctx: ConvertContext, gates: int, defaults: list[str], states: int, step_fn):
    rec = _Recurrence(ctx, gates)
    acts = _activations(ctx, defaults, rec.num_dir)

    def initial(d, xw):
        out = []
        for k in range(states):
            s = rec.state(5 + k, d)
            out.append(rec.zeros(xw) if s is None else s)
        return out

    rec.initial = initial
    return rec.run(lambda d, t, xt, st: step_fn(rec, ctx, acts[d], d, xt, st))


# ----- RNN --------------------------------------------------------------------------------


def _rnn_step(rec, ctx, acts, d, xt, states):
    (h,) = states
    hr = rec.project(h, 2, d, rec.biases(d)[1])
    new = acts[0](rec.clipped(ctx.call("add", xt, hr)))
    return new, [new]


@converter("RNN", attrs=_recurrence_attrs(), min_version=7)
def _rnn(ctx):
    """A simple RNN, unrolled: Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb)."""
    return _recurrent(ctx, 1, ["Tanh"], 1, _rnn_step)


# ----- GRU --------------------------------------------------------------------------------


def _gru_step(rec, ctx, acts, d, xt, states):
    (h,) = states
    f, g = acts
    rb_zr = rec.bias_cols(d, 0, 2)
    rb_h = rec.bias_cols(d, 2, 1)
    zr = ctx.call("add", rec.cols(xt, 0, 2), rec.project(h, 2, d, rb_zr, 0, 2))
    z = f(rec.clipped(rec.cols(zr, 0)))
    rg = f(rec.clipped(rec.cols(zr, 1)))
    if ctx.attr("linear_before_reset", 0):
        hh = ctx.call("multiply", rg, rec.project(h, 2, d, rb_h, 2, 1))
    else:
        hh = rec.project(ctx.call("multiply", rg, h), 2, d, rb_h, 2, 1)
    cand = g(rec.clipped(ctx.call("add", rec.cols(xt, 2), hh)))
    # Ht = (1 - z) * cand + z * Ht-1 = cand + z * (Ht-1 - cand)
    new = ctx.call("add", cand, ctx.call("multiply", z, ctx.call("subtract", h, cand)))
    return new, [new]


@converter("GRU", attrs=_recurrence_attrs("linear_before_reset"), min_version=7)
def _gru(ctx):
    """A GRU (gates z, r, h), unrolled."""
    lbr = ctx.attr("linear_before_reset", 0)
    if lbr not in (0, 1):
        raise ConversionError(f"linear_before_reset must be 0 or 1, got {lbr}")
    return _recurrent(ctx, 3, ["Sigmoid", "Tanh"], 1, _gru_step)


# ----- LSTM -------------------------------------------------------------------------------


def _lstm_step(rec, ctx, acts, d, xt, states):
    h, c = states
    f, g, hact = acts
    hr = rec.project(h, 2, d, rec.biases(d)[1])
    pre = ctx.call("add", xt, hr)  # gates i, o, f, c
    peep = rec.peepholes[d]

    def gate(k, cell):
        x = rec.cols(pre, k)
        if peep is not None:
            x = ctx.call("add", x, ctx.call("multiply", peep[k], cell))
        return f(rec.clipped(x))

    i = gate(0, c)
    if rec.input_forget:
        forget = ctx.call("subtract", ctx.like(1, i), i)
    else:
        forget = gate(2, c)
    cand = g(rec.clipped(rec.cols(pre, 3)))
    c_new = ctx.call("add", ctx.call("multiply", forget, c), ctx.call("multiply", i, cand))
    o = gate(1, c_new)
    h_new = ctx.call("multiply", o, hact(c_new))
    return h_new, [h_new, c_new]


@converter("LSTM", attrs=_recurrence_attrs("input_forget"), min_version=7)
def _lstm(ctx):
    """An LSTM (gates i, o, f, c; peepholes i, o, f), unrolled."""
    input_forget = ctx.attr("input_forget", 0)
    if input_forget not in (0, 1):
        raise ConversionError(f"input_forget must be 0 or 1, got {input_forget}")
    rec = _Recurrence(ctx, 4)
    rec.input_forget = bool(input_forget)
    peepholes = [None] * rec.num_dir
    if ctx.has(7):
        p = ctx.input(7)
        pt = p.ty
        if pt.shape is None or len(pt.shape) != 2 or pt.dtype is not rec.x.ty.dtype:
            raise ConversionError(f"P must have shape [{rec.num_dir}, {3 * rec.hidden}], got {pt}")
        if isinstance(pt.shape[1], int) and pt.shape[1] != 3 * rec.hidden:
            raise ConversionError(f"P must have shape [{rec.num_dir}, {3 * rec.hidden}], got {pt}")
        peepholes = [[rec.cols(rec.weight(7, d), k) for k in range(3)] for d in range(rec.num_dir)]
    rec.peepholes = peepholes
    acts = _activations(ctx, ["Sigmoid", "Tanh", "Tanh"], rec.num_dir)

    def initial(d, xw):
        out = []
        for k in (5, 6):
            s = rec.state(k, d)
            out.append(rec.zeros(xw) if s is None else s)
        return out

    rec.initial = initial
    return rec.run(lambda d, t, xt, st: _lstm_step(rec, ctx, acts[d], d, xt, st))


# ----- Loop and Scan: bodies unrolled -----------------------------------------------------


class LoopBody:
    """A loop body graph converted once per iteration with its inputs bound to given values
    (its initializers converted once)."""

    def __init__(
        self, ctx: ConvertContext, name: str, num_inputs: int | None = None, sequences=False
    ):
        a = ctx.attrs.get(name)
        if a is None or a.type != 5:
            raise ConversionError(f"attribute {name} must be a graph")
        self.ctx, self.graph, self.name = ctx, a.g, name
        self.sequences = sequences  # whether outputs may be sequences (tuples of tensors)
        if num_inputs is not None and len(self.graph.input) != num_inputs:
            raise ConversionError(
                f"the {name} graph must take {num_inputs} inputs, got {len(self.graph.input)}"
            )
        self.scope = Scope(parent=ctx.scope)
        ctx.importer.initializers(self.graph, self.scope, f"{ctx.label}/{name}:")

    def __call__(self, values: list[Expr], iteration: int) -> list[Expr]:
        ctx = self.ctx
        _spend(ctx, max(len(self.graph.node), 1))
        prefix = f"{ctx.label}/{self.name}[{iteration}]:"
        scope = Scope(parent=self.scope)
        for vi, v in zip(self.graph.input, values, strict=True):
            scope.values[vi.name] = v
        ctx.importer.nodes(self.graph, scope, prefix)
        outs = ctx.importer.graph_outputs(self.graph, scope, prefix)
        if any(not isinstance(v, Expr) for v in outs):  # the importer's marker of a failure
            raise Unsupported(f"{ctx.node.op_type} with a {self.name} that does not convert")
        for o, v in zip(self.graph.output, outs, strict=True):
            if not isinstance(v.ty, TensorType) and not (self.sequences and _is_sequence(v.ty)):
                raise Unsupported(f"{ctx.node.op_type} body output {o.name!r} is not a tensor")
        return outs


def _is_sequence(ty) -> bool:
    """Whether a type is an ONNX sequence as the importer keeps it (a tuple of tensors)."""
    from compiler.ir.types import TupleType

    return isinstance(ty, TupleType) and all(isinstance(f, TensorType) for f in ty.fields)


def _stack(ctx: ConvertContext, items: list[Expr], axis: int) -> Expr:
    """Tensors of one shape stacked along a new ``axis``."""
    parts = [ctx.call("unsqueeze", x, axes=[axis]) for x in items]
    return parts[0] if len(parts) == 1 else ctx.call("concat", *parts, axis=axis)


_TENSOR_ARG_ATTRS = {"reshape": "shape", "pad": "pads"}
"""Ops whose second input, when its value is known, can be given as this attribute."""


def _refined(ctx: ConvertContext, e: Expr, depth: int = 0) -> Expr:
    """``e`` rebuilt with static shapes where it has unknown dims only because a shape input
    was computed (from static shapes: the importer leaves those to dynamic-to-static): a
    ``reshape`` or ``pad`` whose shape input has a known value takes it as its attribute, and
    the calls above it are made again (their types inferred anew)."""
    from compiler.frontend.onnx_ops.control import static_value
    from compiler.ir.nodes import Call

    ty = e.ty
    if not isinstance(e, Call) or (isinstance(ty, TensorType) and ty.is_static) or depth > 32:
        return e
    attr = _TENSOR_ARG_ATTRS.get(e.op)
    if attr is not None and len(e.args) == 2:
        value = static_value(e.args[1])
        if value is not None and e.attrs.get(attr) is None:
            data = _refined(ctx, e.args[0], depth + 1)
            attrs = {**e.attrs, attr: [int(v) for v in value.reshape(-1)]}
            return Call(e.op, (data,), attrs, prov=e.prov)
        return e
    args = tuple(_refined(ctx, a, depth + 1) for a in e.args)
    if all(a is b for a, b in zip(args, e.args, strict=True)):
        return e
    return Call(e.op, args, e.attrs, prov=e.prov)


def _static_true(e: Expr) -> bool | None:
    """The value of a one-element condition known without running (None when computed)."""
    from compiler.frontend.onnx_ops.control import static_value

    v = static_value(e)
    if v is None or v.size != 1:
        return None
    return bool(v.reshape(-1)[0])


# ----- the loop construct: what cannot be unrolled -----------------------------------------


def _make_loop(
    ctx, carried: list[Expr], build, max_trips: Expr, cond: Expr | None = None, length=None
) -> list[Expr]:
    """A Loop node over a body made by ``build`` (see compiler.ir.closure.build_loop), named
    after the ONNX node; what cannot be a loop is unsupported, with the reason."""
    from compiler.ir.closure import LoopError, build_loop

    def add(body) -> str:
        return ctx.importer.add_function(f"{ctx.node.name or ctx.node.op_type.lower()}_body", body)

    try:
        return build_loop(carried, build, add, max_trips, cond, length, prov=ctx.prov)
    except LoopError as e:
        raise Unsupported(f"{ctx.node.op_type}: {e}") from None


def _reversed_axis0(ctx, x: Expr, n: Expr) -> Expr:
    """``x`` with its first axis (of run-time length ``n``, a 0-d i64) reversed. The indices
    are counted along ``x`` itself, so they keep its (symbolic) length and compile."""
    from compiler.ir.types import DType

    i64 = DType.int64
    col = x
    for _ in range(len(x.ty.shape) - 1):
        col = ctx.call("take", col, ctx.constant(0, i64), axis=1)  # [n]
    ones = ctx.call(
        "add", ctx.call("zeros_like", ctx.call("cast", col, dtype=i64)), ctx.constant(1, i64)
    )
    pos = ctx.call("cumsum", ones, axis=0, exclusive=True)  # 0 .. n-1
    idx = ctx.call("subtract", ctx.call("subtract", n, ctx.constant(1, i64)), pos)
    return ctx.call("take", x, idx, axis=0)


@converter("Loop", attrs=("body",), min_version=11)
def _loop(ctx):
    """A Loop with a constant trip count (or one computed from static shapes) and a condition
    that stays known-true is unrolled; any other (a trip count known at run time, a while
    loop, an early exit on data, more than MAX_UNROLL iterations) becomes a Loop node over a
    body function, its scan outputs of a length known at run time."""
    from compiler.frontend.onnx_ops.control import static_value
    from compiler.ir.types import DType

    op = "Loop"
    carried = [ctx.input(i) for i in range(2, len(ctx.inputs))]
    if any(not isinstance(v.ty, TensorType) and not _is_sequence(v.ty) for v in carried):
        raise Unsupported(f"{op} carrying a value that is not a tensor or a sequence")
    cond = ctx.input(1) if ctx.has(1) else ctx.constant(True, DType.bool)
    body = LoopBody(ctx, "body", 2 + len(carried), sequences=True)
    num_scan = len(body.graph.output) - 1 - len(carried)
    if num_scan < 0:
        raise ConversionError(
            f"the body must give a condition and {len(carried)} carried values, "
            f"got {len(body.graph.output)} outputs"
        )
    trip = static_value(ctx.input(0)) if ctx.has(0) else None
    if trip is not None:
        if trip.size != 1 or not np.issubdtype(trip.dtype, np.integer):
            raise ConversionError(f"the trip count must be one integer, got {trip!r}")
        if int(trip.reshape(-1)[0]) < 0:
            raise ConversionError(f"the trip count must not be negative, got {trip!r}")
    unrolled = None
    if trip is not None and int(trip.reshape(-1)[0]) <= MAX_UNROLL:
        unrolled = _unrolled_loop(ctx, body, int(trip.reshape(-1)[0]), cond, carried, num_scan)
    if unrolled is not None:
        return unrolled
    if any(_is_sequence(v.ty) for v in carried):
        raise Unsupported(
            f"{op} carrying a sequence that passlens cannot unroll (a trip count known only at "
            "run time or an early exit): a Loop node's state has a fixed type, a sequence grows"
        )
    max_trips = ctx.input(0) if ctx.has(0) else ctx.constant(2**63 - 1, DType.int64)

    def build(i, c, states):
        outs = body([i, c, *states], "loop")
        k = len(states)
        return outs[0], outs[1 : 1 + k], outs[1 + k :]

    return _make_loop(ctx, carried, build, max_trips, cond)


def _unrolled_loop(ctx, body, count: int, cond, carried, num_scan) -> list[Expr] | None:
    """The Loop unrolled ``count`` times; None when it cannot be (a condition computed from
    data, an empty scan output)."""
    from compiler.ir.types import DType

    scans: list[list[Expr]] = [[] for _ in range(num_scan)]
    for i in range(count):
        known = _static_true(cond)
        if known is None:
            return None  # an early exit on data: a Loop node
        if not known:
            break
        cond = ctx.constant(True, DType.bool)  # known: the next body reads a constant
        outs = body([ctx.constant(i, DType.int64), cond, *carried], i)
        cond, carried = outs[0], outs[1 : 1 + len(carried)]
        for k, v in enumerate(outs[1 + len(carried) :]):
            if not isinstance(v.ty, TensorType):
                raise Unsupported("Loop with a scan output that is not a tensor")
            scans[k].append(v)
    if any(not s for s in scans):
        return None  # no iteration ran: the Loop node gives the empty scan outputs
    return [*carried, *[_stack(ctx, s, 0) for s in scans]]


@converter(
    "Scan",
    attrs=(
        "body",
        "num_scan_inputs",
        "scan_input_axes",
        "scan_input_directions",
        "scan_output_axes",
        "scan_output_directions",
    ),
    min_version=9,
)
def _scan(ctx):
    """A Scan over a static number of iterations, unrolled."""
    from compiler.ir.types import DType

    m = ctx.attr("num_scan_inputs")
    n_in = len(ctx.inputs)
    if not isinstance(m, int) or not 1 <= m <= n_in:
        raise ConversionError(f"num_scan_inputs must be in 1..{n_in}, got {m}")
    n_state = n_in - m
    states = [_refined(ctx, ctx.input(i)) for i in range(n_state)]
    xs = [_refined(ctx, ctx.input(n_state + j)) for j in range(m)]
    in_axes = list(ctx.attr("scan_input_axes", [0] * m))
    in_dirs = list(ctx.attr("scan_input_directions", [0] * m))
    if len(in_axes) != m or len(in_dirs) != m:
        raise ConversionError(f"scan_input_axes and scan_input_directions need {m} values")
    length = None
    axes = []
    for j, (x, ax) in enumerate(zip(xs, in_axes, strict=True)):
        rank = len(x.ty.shape) if x.ty.shape is not None else ctx.rank(n_state + j)
        if not -rank <= ax < rank:
            raise ConversionError(f"scan input axis {ax} is out of range for rank {rank}")
        ax %= rank
        axes.append(ax)
        d = x.ty.shape[ax]
        if d is ANY:
            raise Unsupported("Scan over an input whose scan axis has an unknown ('?') length")
        if length is not None and isinstance(d, int) and isinstance(length, int) and d != length:
            raise ConversionError(f"the scan inputs have lengths {length} and {d}")
        if length is None or isinstance(d, int):
            length = d
    if any(v not in (0, 1) for v in in_dirs):
        raise ConversionError(f"scan_input_directions must be 0 or 1, got {in_dirs}")
    looped = not isinstance(length, int) or length > MAX_UNROLL  # else unrolled
    body = LoopBody(ctx, "body", n_state + m)
    k = len(body.graph.output) - n_state
    if k < 0:
        raise ConversionError(f"the body must give at least {n_state} outputs (the states)")
    out_axes = list(ctx.attr("scan_output_axes", [0] * k))
    out_dirs = list(ctx.attr("scan_output_directions", [0] * k))
    if len(out_axes) != k or len(out_dirs) != k:
        raise ConversionError(f"scan_output_axes and scan_output_directions need {k} values")
    if any(v not in (0, 1) for v in out_dirs):
        raise ConversionError(f"scan_output_directions must be 0 or 1, got {out_dirs}")
    if looped:
        return _scan_loop(ctx, body, states, xs, axes, in_dirs, out_axes, out_dirs, length)
    if length == 0 and k:
        raise Unsupported("Scan of length 0 with scan outputs (empty outputs)")
    scans: list[list[Expr]] = [[] for _ in range(k)]
    for i in range(length):
        elems = []
        for x, ax, rev in zip(xs, axes, in_dirs, strict=True):
            t = length - 1 - i if rev else i
            elems.append(ctx.call("take", x, ctx.constant(t, DType.int64), axis=ax))
        outs = body([*states, *elems], i)
        states = outs[:n_state]
        for j, v in enumerate(outs[n_state:]):
            scans[j].append(v)
    results = list(states)
    for j, items in enumerate(scans):
        if out_dirs[j]:
            items = items[::-1]
        rank = len(items[0].ty.shape) + 1 if items[0].ty.shape is not None else None
        if rank is None:
            raise Unsupported("Scan output of unknown rank")
        ax = out_axes[j]
        if not -rank <= ax < rank:
            raise ConversionError(f"scan output axis {ax} is out of range for rank {rank}")
        results.append(_stack(ctx, items, ax % rank))
    return results


def _scan_loop(ctx, body, states, xs, axes, in_dirs, out_axes, out_dirs, length) -> list[Expr]:
    """A Scan of symbolic (or long) length as a Loop node: the scan inputs are captured and
    read at the iteration's index; the scanned outputs are reversed and moved to their axis
    after the loop."""
    from compiler.frontend.onnx_ops.registry import dim_value
    from compiler.ir.types import DType

    n = dim_value(ctx, xs[0], axes[0])
    last = ctx.call("subtract", n, ctx.constant(1, DType.int64))

    def build(i, c, st):
        elems = []
        for x, ax, rev in zip(xs, axes, in_dirs, strict=True):
            t = ctx.call("subtract", last, i) if rev else i
            elems.append(ctx.call("take", x, t, axis=ax))
        outs = body([*st, *elems], "loop")
        return c, outs[: len(st)], outs[len(st) :]

    outs = _make_loop(ctx, states, build, n, length=length)
    results = outs[: len(states)]
    for j, y in enumerate(outs[len(states) :]):
        if out_dirs[j]:
            y = _reversed_axis0(ctx, y, n)
        rank = len(y.ty.shape)
        ax = out_axes[j]
        if not -rank <= ax < rank:
            raise ConversionError(f"scan output axis {ax} is out of range for rank {rank}")
        ax %= rank
        if ax:
            perm = list(range(1, rank))
            perm.insert(ax, 0)
            y = ctx.call("permute_dims", y, axes=perm)
        results.append(y)
    return results


@converter("Scan", attrs=("body", "directions", "num_scan_inputs"), min_version=8, max_version=8)
def _scan8(ctx):
    """Scan-8: every input has a leading batch axis and the scan axis after it; the body runs
    per batch entry. Unrolled over a static batch and length; ``sequence_lens`` only when it
    is a constant covering every step."""
    from compiler.ir.types import DType

    m = ctx.attr("num_scan_inputs")
    n_in = len(ctx.inputs) - 1
    if not isinstance(m, int) or not 1 <= m <= n_in:
        raise ConversionError(f"num_scan_inputs must be in 1..{n_in}, got {m}")
    n_state = n_in - m
    values = [ctx.input(i) for i in range(1, len(ctx.inputs))]
    for i, v in enumerate(values, start=1):
        if ctx.rank(i) < (1 if i <= n_state else 2):
            raise ConversionError(f"input {i} lacks its batch (and scan) axis: {v.ty}")
    batch, length = values[0].ty.shape[0], values[n_state].ty.shape[1]
    for what, d in (("batch", batch), ("length", length)):
        if not isinstance(d, int):
            raise Unsupported(f"Scan-8 over a symbolic {what} {dim_str(d)}: needs a static one")
    for k, v in enumerate(values):
        if v.ty.shape[0] != batch or (k >= n_state and v.ty.shape[1] != length):
            raise ConversionError("the inputs of Scan-8 must share their batch and length")
    if batch == 0 or length == 0:
        raise Unsupported("Scan-8 over an empty batch or sequence")
    if ctx.has(0):
        lens = ctx.const(0)
        if lens is None or not (lens.reshape(-1) == length).all():
            raise Unsupported("Scan-8 with sequence_lens shorter than the inputs")
    dirs = list(ctx.attr("directions", [0] * m))
    if len(dirs) != m or any(d not in (0, 1) for d in dirs):
        raise ConversionError(f"directions must be {m} values, 0 or 1, got {dirs}")
    _spend(ctx, batch)
    body = LoopBody(ctx, "body", n_in)

    def pick(x, k):
        return ctx.call("take", x, ctx.constant(k, DType.int64), axis=0)

    finals, scans = [], []
    for b in range(batch):
        states = [pick(v, b) for v in values[:n_state]]
        xs = [pick(v, b) for v in values[n_state:]]
        outs_b: list[list[Expr]] = []
        for i in range(length):
            elems = [pick(x, length - 1 - i if r else i) for x, r in zip(xs, dirs, strict=True)]
            outs = body([*states, *elems], b * length + i)
            states = outs[:n_state]
            outs_b.append(outs[n_state:])
        finals.append(states)
        scans.append([_stack(ctx, [o[j] for o in outs_b], 0) for j in range(len(outs_b[0]))])
    results = [_stack(ctx, [f[k] for f in finals], 0) for k in range(n_state)]
    results += [_stack(ctx, [s[j] for s in scans], 0) for j in range(len(scans[0]))]
    return results
