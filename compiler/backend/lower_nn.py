"""Lowerings of the neural-network ops.

- ``matmul`` / ``linear``: a call of the library routine ``numpy.matmul`` (BLAS sgemm for
  f32): writing our own would be slower, and the kernel text says it is a library call.
  A 2-D right operand makes the left one a single (rows, K) matrix, so a channels-last
  linear layer on (1, 56, 56, 128) is one GEMM. Bias and the fused epilogue (gelu, ...) are a
  loop nest after it, run in place in the output buffer.
- ``conv1d`` / ``conv2d``: depthwise-like convolutions (one input channel per group) are
  direct loops, vectorised along the output row, over a zero-padded copy of the input; the
  others are im2col (a loop nest) followed by a library matmul per group. Both work in the
  canonical NC(H)W layout and map other layouts by index.
- pooling, ``batch_norm`` (lazy), ``layer_norm``, ``group_norm``, ``softmax`` and
  ``log_softmax``: loop nests with scalar accumulators (statistics in f64).
"""

from __future__ import annotations

from compiler.backend import loops as L
from compiler.backend.lower_reduce import lowest, nan_max
from compiler.backend.lower_shape import clamp
from compiler.backend.lowering import (
    BufferTensor,
    KernelBuilder,
    LazyTensor,
    OpCall,
    Tensor,
    broadcast_index,
    compute_dtype,
    lowering,
)
from compiler.ir.shape_inference import normalize_axis
from compiler.ir.types import DType

F64 = DType.float64


def _product_dtype(dtype: DType) -> DType:
    """The dtype a matrix product of ``dtype`` is computed in (numpy.matmul's ``compute``)."""
    return compute_dtype(dtype) if dtype.is_float else DType.int64


def _buffer(kb: KernelBuilder, t: Tensor, label: str) -> L.Buffer:
    return kb.materialize(t, label)


def _result_buffer(
    kb: KernelBuilder, call: OpCall, dest: L.Buffer | None, dtype: DType
) -> L.Buffer:
    if dest is not None and dest.dtype is dtype and tuple(dest.shape) == tuple(call.out_shape):
        return dest
    return kb.workspace(call.out_shape, dtype, call.op)


def _rows_view(buf: L.Buffer, shape) -> L.View:
    """``buf`` as a (rows, last) matrix when it has rank > 2, else as is."""
    if len(shape) <= 2:
        return L.View(buf, tuple(shape))
    return L.View(buf, (L.product(shape[:-1]), shape[-1]))


# ----- matmul, linear ----------------------------------------------------------------------------


@lowering("matmul")
def _matmul(kb, call, inputs, dest):
    a, b = inputs
    compute = _product_dtype(a.dtype)
    ab, bb = _buffer(kb, a, "matmul operand"), _buffer(kb, b, "matmul operand")
    out = _result_buffer(kb, call, dest, call.out_dtype)
    if b.ndim == 2 and a.ndim >= 2:
        av, ov = _rows_view(ab, a.shape), _rows_view(out, call.out_shape)
    else:
        av, ov = L.View(ab, ab.shape), L.View(out, out.shape)
    bv = L.View(bb, bb.shape, transpose=call.attrs["transpose_b"])  # BLAS reads either layout
    kb.libcall("numpy.matmul", ov, [av, bv], "matmul", compute=compute)
    return BufferTensor(out)


@lowering("linear")
def _linear(kb, call, inputs, dest):
    x, w, *bias = inputs
    compute = _product_dtype(x.dtype)
    xb, wb = _buffer(kb, x, "linear input"), _buffer(kb, w, "linear weight")
    prod_dtype = call.out_dtype
    out = _result_buffer(kb, call, dest if not bias else None, prod_dtype)
    wv = L.View(wb, wb.shape, transpose=True)
    kb.libcall(
        "numpy.matmul",
        _rows_view(out, call.out_shape),
        [_rows_view(xb, x.shape), wv],
        "linear",
        compute=compute,
    )
    y = BufferTensor(out)
    if not bias:
        return y
    (b,) = bias
    acc = compute_dtype(prod_dtype) if prod_dtype.is_float else prod_dtype

    def at(idx):
        return L.cast(
            prod_dtype, L.cast(acc, y.at(idx)) + L.cast(acc, b.at(broadcast_index(b, idx)))
        )

    return LazyTensor(call.out_shape, prod_dtype, at)


# ----- convolution -----------------------------------------------------------------------------

_CANON = {1: ("NCW", "OIW"), 2: ("NCHW", "OIHW")}


def _perm(layout: str, canonical: str) -> list[int]:
    """For each letter of ``canonical``, its position in ``layout``."""
    return [layout.index(c) for c in canonical]


def canonical(t: Tensor, layout: str, canon: str) -> LazyTensor:
    """``t`` (in ``layout``) seen in the canonical layout's dim order."""
    if layout == canon:
        return t  # type: ignore[return-value]
    perm = _perm(layout, canon)
    shape = tuple(t.shape[p] for p in perm)

    def at(idx):
        src = [None] * len(idx)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        return t.at(src)

    return LazyTensor(shape, t.dtype, at)


def _canonical_buffer(kb, t: Tensor, dtype: DType, label: str) -> L.Buffer:
    """A canonical-layout buffer of ``dtype`` holding ``t`` (itself when it already is one)."""
    if isinstance(t, BufferTensor) and t.dtype is dtype:
        return t.buffer
    src = t
    conv = LazyTensor(src.shape, dtype, lambda idx: L.cast(dtype, src.at(idx)))
    return kb.materialize(conv, label)


@lowering("conv1d", "conv2d")
def _conv(kb, call, inputs, dest):
    nd = 1 if call.op == "conv1d" else 2
    canon_d, canon_k = _CANON[nd]
    attrs = call.attrs
    layout = attrs["data_layout"]
    x = canonical(inputs[0], layout, canon_d)
    w = canonical(inputs[1], attrs["kernel_layout"], canon_k)
    bias = inputs[2] if len(inputs) > 2 else None
    strides, dilation, padding, groups = (
        attrs["strides"],
        attrs["dilation"],
        attrs["padding"],
        attrs["groups"],
    )
    acc = compute_dtype(call.arg_types[0].dtype)
    cg = w.shape[1]
    out_canon_shape = tuple(call.out_shape[p] for p in _perm(layout, canon_d))
    direct = L.static_int(cg) == 1
    fits_dest = layout == canon_d and call.out_dtype is acc
    if direct:
        result = _direct_conv(
            kb,
            x,
            w,
            bias,
            out_canon_shape,
            strides,
            dilation,
            padding,
            groups,
            acc,
            dest if fits_dest else None,
        )
        with_bias = None
    else:
        result = _im2col_conv(
            kb,
            x,
            w,
            out_canon_shape,
            strides,
            dilation,
            padding,
            groups,
            acc,
            dest if fits_dest and bias is None else None,
        )
        with_bias = bias
    if with_bias is None and fits_dest:
        return BufferTensor(result)
    perm = _perm(layout, canon_d)
    out_dtype = call.out_dtype
    rb = BufferTensor(result)

    def at(idx):
        cidx = [idx[p] for p in perm]
        v = rb.at(cidx)
        if with_bias is not None:
            v = v + L.cast(acc, with_bias.at((cidx[1],)))
        return L.cast(out_dtype, v)

    return LazyTensor(call.out_shape, out_dtype, at)


def _padded_input(kb, x: Tensor, padding, nd: int, acc: DType) -> L.Buffer:
    """The canonical input in ``acc`` with zero padding around its spatial dims."""
    if not any(padding) and isinstance(x, BufferTensor) and x.dtype is acc:
        return x.buffer
    n, c, *size = x.shape
    begins, ends = padding[:nd], padding[nd:]
    shape = (n, c, *[s + b + e for s, b, e in zip(size, begins, ends, strict=False)])
    buf = kb.workspace(shape, acc, "padded")
    zero = L.Const(0.0, acc)

    def body(idx):
        src, inside = list(idx[:2]), L.Const(True, DType.bool)
        for k in range(nd):
            j = idx[2 + k] - begins[k]
            if begins[k] or ends[k]:
                inside = L.logical_and(
                    inside, L.logical_and(L.compare("ge", j, 0), L.compare("lt", j, size[k]))
                )
                j = clamp(j, size[k])
            src.append(j)
        return L.Store(buf, idx, L.select(inside, L.cast(acc, x.at(src)), zero))

    kb.stage("pad", kb.nest(shape, body, parallel=2))
    return buf


def _direct_conv(kb, x, w, bias, out_shape, strides, dilation, padding, groups, acc, dest):
    """One input channel per group: out[n, o, ..., ow] += xp[n, o // og, ...] * w[o, 0, ...]
    with the output row innermost (contiguous, vectorised)."""
    nd = len(out_shape) - 2
    xp = _padded_input(kb, x, padding, nd, acc)
    out = dest if dest is not None else kb.workspace(out_shape, acc, "conv")
    o_total = out_shape[1]
    og = o_total // groups
    n_v, o_v = kb.var("n"), kb.var("o")
    ci = o_v // og if L.static_int(og) != 1 else o_v
    row = [kb.var("s") for _ in range(nd - 1)]  # outer spatial dims
    ow = kb.var("ow")
    kvars = [kb.var("k") for _ in range(nd)]
    kernel = w.shape[2:]

    def out_at(last):
        return (n_v, o_v, *row, last)

    init_v = L.cast(acc, bias.at((o_v,))) if bias is not None else L.Const(0.0, acc)
    init = L.For(ow, out_shape[-1], L.Store(out, out_at(ow), init_v))
    ow2 = kb.var("ow")
    src = [n_v, ci]
    for k in range(nd - 1):
        src.append(row[k] * strides[k] + kvars[k] * dilation[k])
    src.append(ow2 * strides[-1] + kvars[-1] * dilation[-1])
    weight = L.cast(acc, w.at((o_v, L.Const(0, L.INDEX), *kvars)))
    update = L.Store(out, out_at(ow2), out[out_at(ow2)] + xp[tuple(src)] * weight)
    stmt: L.Stmt = L.For(ow2, out_shape[-1], update)
    for k in reversed(range(nd)):
        stmt = L.For(kvars[k], kernel[k], stmt)
    stmt = L.seq([init, stmt])
    for k in reversed(range(nd - 1)):
        stmt = L.For(row[k], out_shape[2 + k], stmt)
    stmt = L.For(n_v, out_shape[0], L.For(o_v, o_total, stmt, parallel=True), parallel=True)
    kb.stage("conv (direct)", stmt)
    return out


def _im2col_conv(kb, x, w, out_shape, strides, dilation, padding, groups, acc, dest):
    """im2col into a (N, G, K, P) workspace, then numpy.matmul of the (G, OG, K) weight."""
    nd = len(out_shape) - 2
    n, c, *size = x.shape
    o, cg, *kernel = w.shape
    out_sp = out_shape[2:]
    og = o // groups
    K = cg * L.product(kernel)
    P = L.product(out_sp)
    col = kb.workspace((n, groups, K, P), acc, "col")
    begins = padding[:nd]

    def body(idx):
        nv, gv, civ, *rest = idx
        kv, sv = rest[:nd], rest[nd:]
        src, inside = [nv, gv * cg + civ], L.Const(True, DType.bool)
        for k in range(nd):
            j = sv[k] * strides[k] + kv[k] * dilation[k] - begins[k]
            if padding[k] or padding[k + nd]:
                inside = L.logical_and(
                    inside, L.logical_and(L.compare("ge", j, 0), L.compare("lt", j, size[k]))
                )
                j = clamp(j, size[k])
            src.append(j)
        kflat = civ
        for k in range(nd):
            kflat = kflat * kernel[k] + kv[k]
        pflat = L.Const(0, L.INDEX)
        for k in range(nd):
            pflat = pflat * out_sp[k] + sv[k]
        value = L.select(inside, L.cast(acc, x.at(src)), L.Const(0.0, acc))
        return L.Store(col, (nv, gv, kflat, pflat), value)

    kb.stage("im2col", kb.nest((n, groups, cg, *kernel, *out_sp), body, parallel=3 + nd))
    wbuf = _canonical_buffer(kb, w, acc, "weight")
    out = dest if dest is not None else kb.workspace(out_shape, acc, "conv")
    if L.static_int(groups) == 1:
        wv, cv, ov = L.View(wbuf, (o, K)), L.View(col, (n, K, P)), L.View(out, (n, o, P))
    else:
        wv, cv, ov = (
            L.View(wbuf, (groups, og, K)),
            L.View(col, (n, groups, K, P)),
            L.View(out, (n, groups, og, P)),
        )
    kb.libcall("numpy.matmul", ov, [wv, cv], "conv (im2col + matmul)", compute=acc)
    return out


# ----- pooling ---------------------------------------------------------------------------------


def _pool(kb, call, inputs, dest, kind: str):
    from compiler.ir.nn_compute import pool_params

    layout = call.attrs["layout"]
    x = canonical(inputs[0], layout, "NCHW")
    pool, strides, dilation, padding = pool_params(call.attrs)
    perm = _perm(layout, "NCHW")
    out = _result_buffer(kb, call, dest, call.out_dtype)
    cd = compute_dtype(x.dtype)
    h, w = x.shape[2], x.shape[3]
    acc = kb.local(cd if kind == "max" else F64)
    count = kb.local(DType.int64, "count")
    include_pad = call.attrs.get("count_include_pad", True)

    def body(idx):
        n_, c_, oh, ow = (idx[p] for p in perm)
        ks = [kb.var("kh"), kb.var("kw")]
        ih = oh * strides[0] - padding[0] + ks[0] * dilation[0]
        iw = ow * strides[1] - padding[1] + ks[1] * dilation[1]
        inside = L.logical_and(
            L.logical_and(L.compare("ge", ih, 0), L.compare("lt", ih, h)),
            L.logical_and(L.compare("ge", iw, 0), L.compare("lt", iw, w)),
        )
        v = L.cast(acc.dtype, x.at((n_, c_, clamp(ih, h), clamp(iw, w))))
        if kind == "max":
            update = L.IfThen(inside, L.Store(acc, (), nan_max(acc[()], v, "max")))
            init = [L.Store(acc, (), lowest(cd, "max"))]
            result = acc[()]
        else:
            counted = inside
            if include_pad:  # the window clipped to the padded input (not the ceil_mode excess)
                counted = L.logical_and(
                    L.logical_and(
                        L.compare("ge", ih, -padding[0]), L.compare("lt", ih, h + padding[2])
                    ),
                    L.logical_and(
                        L.compare("ge", iw, -padding[1]), L.compare("lt", iw, w + padding[3])
                    ),
                )
            update = L.seq(
                [
                    L.IfThen(inside, L.Store(acc, (), acc[()] + v)),
                    L.IfThen(counted, L.Store(count, (), count[()] + 1)),
                ]
            )
            init = [
                L.Store(acc, (), L.Const(0.0, F64)),
                L.Store(count, (), L.Const(0, DType.int64)),
            ]
            result = acc[()] / L.cast(F64, count[()])
        loopnest = L.For(ks[0], pool[0], L.For(ks[1], pool[1], update))
        return L.Local(
            (acc, count), L.seq(init + [loopnest, L.Store(out, idx, L.cast(out.dtype, result))])
        )

    kb.stage(call.op, kb.nest(call.out_shape, body))
    return BufferTensor(out)


@lowering("max_pool2d")
def _max_pool(kb, call, inputs, dest):
    return _pool(kb, call, inputs, dest, "max")


@lowering("avg_pool2d")
def _avg_pool(kb, call, inputs, dest):
    return _pool(kb, call, inputs, dest, "avg")


@lowering("adaptive_avg_pool2d")
def _adaptive(kb, call, inputs, dest):
    layout = call.attrs["layout"]
    x = canonical(inputs[0], layout, "NCHW")
    perm = _perm(layout, "NCHW")
    out = _result_buffer(kb, call, dest, call.out_dtype)
    h, w = x.shape[2], x.shape[3]
    oh_n, ow_n = (call.out_shape[perm[2]], call.out_shape[perm[3]])
    acc = kb.local(F64)

    def body(idx):
        n_, c_, oh, ow = (idx[p] for p in perm)
        sh, eh = (oh * h) // oh_n, ((oh + 1) * h + oh_n - 1) // oh_n
        sw, ew = (ow * w) // ow_n, ((ow + 1) * w + ow_n - 1) // ow_n
        r, s = kb.var("r"), kb.var("s")
        add = L.Store(acc, (), acc[()] + L.cast(F64, x.at((n_, c_, sh + r, sw + s))))
        loopnest = L.For(r, eh - sh, L.For(s, ew - sw, add))
        mean = acc[()] / L.cast(F64, (eh - sh) * (ew - sw))
        return L.Local(
            (acc,),
            L.seq(
                [
                    L.Store(acc, (), L.Const(0.0, F64)),
                    loopnest,
                    L.Store(out, idx, L.cast(out.dtype, mean)),
                ]
            ),
        )

    kb.stage(call.op, kb.nest(call.out_shape, body))
    return BufferTensor(out)


# ----- normalisation ---------------------------------------------------------------------------


@lowering("batch_norm")
def _batch_norm(kb, call, inputs, dest):
    x, gamma, beta, mean, var = inputs
    axis = call.attrs["axis"] % x.ndim
    eps = call.attrs["epsilon"]
    cd = compute_dtype(x.dtype)

    def at(idx):
        c = (idx[axis],)
        g, b, m, v = (L.cast(cd, p.at(c)) for p in (gamma, beta, mean, var))
        y = (L.cast(cd, x.at(idx)) - m) / L.unary("sqrt", v + L.Const(eps, cd)) * g + b
        return L.cast(call.out_dtype, y)

    return LazyTensor(call.out_shape, call.out_dtype, at)


def _stats_stage(kb, x: Tensor, label, outer_shape, place, inner_shape, write, epsilon: float):
    """Per outer index (parallel): mean and variance (plus ``epsilon``) over the inner loops
    (f64, two passes), then ``write(outer, inner, normalized)`` statements. ``place(outer, inner)``
    gives the index into ``x``."""
    mean, var = kb.local(F64, "mean"), kb.local(F64, "var")
    count = L.cast(F64, L.product(inner_shape))

    def over(fn):
        iv = tuple(kb.var("j") for _ in inner_shape)
        stmt = fn(iv)
        for k in reversed(range(len(inner_shape))):
            stmt = L.For(iv[k], inner_shape[k], stmt)
        return stmt

    def body(outer):
        xv = lambda inner: L.cast(F64, x.at(place(outer, inner)))  # noqa: E731
        d = lambda inner: xv(inner) - mean[()]  # noqa: E731
        rstd = L.Const(1.0, F64) / L.unary("sqrt", var[()])
        stmts = [
            L.Store(mean, (), L.Const(0.0, F64)),
            over(lambda i: L.Store(mean, (), mean[()] + xv(i))),
            L.Store(mean, (), mean[()] / count),
            L.Store(var, (), L.Const(0.0, F64)),
            over(lambda i: L.Store(var, (), var[()] + d(i) * d(i))),
            L.Store(var, (), var[()] / count + L.Const(epsilon, F64)),
            over(lambda i: write(outer, i, d(i) * rstd)),
        ]
        return L.Local((mean, var), L.seq(stmts))

    kb.stage(label, kb.nest(outer_shape, body))


@lowering("layer_norm")
def _layer_norm(kb, call, inputs, dest):
    x, *params = inputs
    rank = x.ndim
    axes = sorted(a % rank for a in call.attrs["axes"])
    outer = [k for k in range(rank) if k not in axes]
    out = _result_buffer(kb, call, dest, call.out_dtype)

    def place(o, i):
        vals = dict(zip(outer, o, strict=False))
        vals.update(zip(axes, i, strict=False))
        return tuple(vals[k] for k in range(rank))

    def write(o, i, y):
        for p, op in zip(params, ("mul", "add"), strict=False):
            y = L.binary(op, y, L.cast(F64, p.at(i)))
        return L.Store(out, place(o, i), L.cast(out.dtype, y))

    _stats_stage(
        kb,
        x,
        "layer_norm",
        [x.shape[k] for k in outer],
        place,
        [x.shape[a] for a in axes],
        write,
        call.attrs["epsilon"],
    )
    return BufferTensor(out)


@lowering("group_norm")
def _group_norm(kb, call, inputs, dest):
    x, *params = inputs
    rank = x.ndim
    axis = call.attrs["channel_axis"] % rank
    groups = call.attrs["num_groups"]
    cpg = x.shape[axis] // groups
    rest = [k for k in range(1, rank) if k != axis]
    out = _result_buffer(kb, call, dest, call.out_dtype)

    def place(o, i):
        n_, g = o
        vals = {0: n_, axis: g * cpg + i[0]}
        vals.update(zip(rest, i[1:], strict=False))
        return tuple(vals[k] for k in range(rank))

    def write(o, i, y):
        ch = (o[1] * cpg + i[0],)
        for p, op in zip(params, ("mul", "add"), strict=False):
            y = L.binary(op, y, L.cast(F64, p.at(ch)))
        return L.Store(out, place(o, i), L.cast(out.dtype, y))

    _stats_stage(
        kb,
        x,
        "group_norm",
        [x.shape[0], L.as_expr(groups)],
        place,
        [cpg] + [x.shape[k] for k in rest],
        write,
        call.attrs["epsilon"],
    )
    return BufferTensor(out)


@lowering("softmax", "log_softmax")
def _softmax(kb, call, inputs, dest):
    (x,) = inputs
    out = _result_buffer(kb, call, dest, call.out_dtype)
    log = call.op == "log_softmax"
    if x.ndim == 0:
        kb.stage(call.op, L.Store(out, (), L.cast(out.dtype, L.Const(0.0 if log else 1.0, F64))))
        return BufferTensor(out)
    axis = normalize_axis(call.attrs["axis"], x.ndim)
    cd = compute_dtype(x.dtype)
    others = [x.shape[k] for k in range(x.ndim) if k != axis]
    m, s = kb.local(cd, "max"), kb.local(F64, "sum")

    def body(idx):
        def at(k):
            full = list(idx)
            full.insert(axis, k)
            return tuple(full)

        def over(fn):
            k = kb.var("k")
            return L.For(k, x.shape[axis], fn(k))

        shifted = lambda k: L.cast(cd, x.at(at(k))) - m[()]  # noqa: E731
        if log:
            value = lambda k: L.cast(F64, shifted(k)) - L.unary("log", s[()])  # noqa: E731
        else:
            value = lambda k: L.cast(F64, L.unary("exp", shifted(k))) / s[()]  # noqa: E731
        stmts = [
            L.Store(m, (), lowest(cd, "max")),
            over(lambda k: L.Store(m, (), nan_max(m[()], L.cast(cd, x.at(at(k))), "max"))),
            L.Store(s, (), L.Const(0.0, F64)),
            over(lambda k: L.Store(s, (), s[()] + L.cast(F64, L.unary("exp", shifted(k))))),
            over(lambda k: L.Store(out, at(k), L.cast(out.dtype, value(k)))),
        ]
        return L.Local((m, s), L.seq(stmts))

    kb.stage(call.op, kb.nest(others, body))
    return BufferTensor(out)


__all__ = ["canonical"]


# ----- resize ------------------------------------------------------------------------------------


def _resize_source(i: L.Expr, size, out, scale: float | None, how: str) -> L.Expr:
    """The f64 input position of result index ``i`` along one axis (the numpy reference's
    ``_resize_source``, with ``out / size`` as the scale when none is given)."""
    fi, fsize, fout = (L.cast(F64, L.as_expr(v)) for v in (i, size, out))
    s = L.Const(scale, F64) if scale is not None else fout / fsize
    half, one = L.Const(0.5, F64), L.Const(1.0, F64)
    if how == "align_corners":
        ratio = (fsize - one) / L.maximum(fout - one, one)
        return L.select(L.compare("gt", L.as_expr(out), 1), fi * ratio, L.Const(0.0, F64))
    if how == "asymmetric":
        return fi / s
    source = (fi + half) / s - half
    if how == "pytorch_half_pixel":
        return L.select(L.compare("gt", L.as_expr(out), 1), source, L.Const(0.0, F64))
    if how == "half_pixel_symmetric":
        source = source + fsize * half * (one - fout / (s * fsize))
    return source


def _nearest(source: L.Expr, how: str) -> L.Expr:
    down = L.unary("floor", source)
    if how == "floor":
        return down
    if how == "ceil":
        return L.unary("ceil", source)
    tie = down if how == "round_prefer_floor" else L.unary("ceil", source)
    halfway = L.compare("eq", source - down, L.Const(0.5, F64))
    return L.select(halfway, tie, L.unary("round", source))


@lowering("resize")
def _resize(kb, call, inputs, dest):
    x = inputs[0]
    attrs = call.attrs
    how, scales = attrs["coordinate_transformation_mode"], attrs["scales"]
    # axes whose positions map one to one (same size, scale 1 or none) are read directly
    axes = [
        k
        for k, (size, out) in enumerate(zip(x.shape, call.out_shape, strict=True))
        if not (
            L.static_int(size) is not None
            and L.static_int(size) == L.static_int(out)
            and (scales is None or scales[k] == 1.0)
        )
    ]

    def source(idx, k):
        scale = scales[k] if scales is not None else None
        return _resize_source(idx[k], x.shape[k], call.out_shape[k], scale, how)

    def nearest(idx):
        src = list(idx)
        for k in axes:
            j = L.cast(L.INDEX, _nearest(source(idx, k), attrs["nearest_mode"]))
            src[k] = clamp(j, x.shape[k])
        return x.at(src)

    def linear(idx):
        corners = [(list(idx), L.Const(1.0, F64))]
        for k in axes:
            last = L.cast(F64, L.as_expr(x.shape[k])) - L.Const(1.0, F64)
            pos = L.minimum(L.maximum(source(idx, k), L.Const(0.0, F64)), last)
            low = L.cast(L.INDEX, L.unary("floor", pos))
            high = L.minimum(low + 1, x.shape[k] - 1)
            w = pos - L.cast(F64, low)
            step = []
            for at, weight in corners:
                step.append(([*at[:k], low, *at[k + 1 :]], weight * (L.Const(1.0, F64) - w)))
                step.append(([*at[:k], high, *at[k + 1 :]], weight * w))
            corners = step
        total = None
        for at, weight in corners:
            term = L.cast(F64, x.at(at)) * weight
            total = term if total is None else total + term
        return L.cast(call.out_dtype, total)

    def cubic(idx):
        """4 taps per resized axis (16 in 2-D): the reference's ``_cubic_axis``."""
        from compiler.ir.nn_compute import cubic_weights

        corners = [(list(idx), L.Const(1.0, F64))]
        for k in axes:
            pos = source(idx, k)
            down = L.unary("floor", pos)
            weights = cubic_weights(pos - down, float(attrs["cubic_coeff_a"]))
            low = L.cast(L.INDEX, down)
            taps = [low + (d - 1) for d in range(4)]
            if attrs["exclude_outside"]:
                inside = [
                    L.logical_and(L.compare("ge", j, 0), L.compare("lt", j, x.shape[k]))
                    for j in taps
                ]
                zero = L.Const(0.0, F64)
                weights = [L.select(c, w, zero) for c, w in zip(inside, weights, strict=True)]
                total = weights[0] + weights[1] + weights[2] + weights[3]
                weights = [w / total for w in weights]
            step = []
            for at, weight in corners:
                for j, w in zip(taps, weights, strict=True):
                    step.append(([*at[:k], clamp(j, x.shape[k]), *at[k + 1 :]], weight * w))
            corners = step
        total = None
        for at, weight in corners:
            term = L.cast(F64, x.at(at)) * weight
            total = term if total is None else total + term
        return L.cast(call.out_dtype, total)

    kinds = {"nearest": nearest, "linear": linear, "cubic": cubic}
    return LazyTensor(call.out_shape, call.out_dtype, kinds[attrs["mode"]])
