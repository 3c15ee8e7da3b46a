"""Branch-free float32 exp, log, tanh and erf in LLVM IR, inlined into loops so they vectorise.

libm's ``expf`` / ``erff`` are scalar calls the loop vectoriser cannot widen (no vector math
library is configured), and gelu, softmax and sigmoid spend their time in them. These
versions use only arithmetic, bit casts and selects: after inlining, a loop of them becomes
AVX code. Accuracy, measured against float64 over [-6, 6] (tests/compiler/backend): exp and
log within 2 ulp, tanh and erf within 4.5e-7 (Eigen's rational approximations, as in TVM's
fast_tanh / fast_erf). float64 keeps libm.
"""

from __future__ import annotations

import llvmlite.ir as ir

F32 = ir.FloatType()
I32 = ir.IntType(32)
I1 = ir.IntType(1)

_FLAGS = ("contract",)


def _c(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def _poly(b: ir.IRBuilder, x: ir.Value, coeffs: list[float]) -> ir.Value:
    """Horner's rule: coeffs[0] * x^n + ... + coeffs[-1]."""
    acc: ir.Value = _c(coeffs[0])
    for c in coeffs[1:]:
        acc = b.fadd(b.fmul(acc, x, flags=_FLAGS), _c(c), flags=_FLAGS)
    return acc


def _clamp(b: ir.IRBuilder, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """min(max(x, lo), hi), keeping nan."""
    x = b.select(b.fcmp_ordered("<", x, _c(lo)), _c(lo), x)
    return b.select(b.fcmp_ordered(">", x, _c(hi)), _c(hi), x)


def _pow2(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """2**n as a float, for an i32 n in [-126, 127]."""
    bits = b.shl(b.add(n, ir.Constant(I32, 127)), ir.Constant(I32, 23))
    return b.bitcast(bits, F32)


def _exp(b: ir.IRBuilder, x: ir.Value, module: ir.Module) -> ir.Value:
    # Cephes expf: x = n ln2 + r, |r| <= ln2/2, exp(r) by a degree-6 polynomial; 2**n is
    # applied in two halves so results down to the smallest subnormal stay representable.
    xc = _clamp(b, x, -103.0, 88.72283935546875)
    floor = _intrinsic(module, "llvm.floor.f32")
    n = b.call(floor, [b.fadd(b.fmul(xc, _c(1.44269504088896341)), _c(0.5))])
    r = b.fsub(xc, b.fmul(n, _c(0.693359375)))
    r = b.fsub(r, b.fmul(n, _c(-2.12194440e-4)))
    p = _poly(b, r, [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                     1.6666665459e-1, 5.0000001201e-1])  # fmt: skip
    y = b.fadd(b.fadd(b.fmul(b.fmul(p, r), r), r), _c(1.0))
    ni = b.fptosi(n, I32)
    half = b.ashr(ni, ir.Constant(I32, 1))
    y = b.fmul(b.fmul(y, _pow2(b, half)), _pow2(b, b.sub(ni, half)))
    y = b.select(b.fcmp_ordered(">", x, _c(88.72283935546875)), _c(float("inf")), y)
    y = b.select(b.fcmp_ordered("<", x, _c(-103.97208)), _c(0.0), y)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def _log(b: ir.IRBuilder, x: ir.Value, module: ir.Module) -> ir.Value:
    # Cephes logf: x = m * 2**e with m in [sqrt(1/2), sqrt(2)), log(m) by a polynomial.
    tiny = b.fcmp_ordered("<", x, _c(1.17549435e-38))  # subnormal: scale up by 2**23 first
    xs = b.select(tiny, b.fmul(x, _c(8388608.0)), x)
    bits = b.bitcast(xs, I32)
    e = b.sub(b.lshr(bits, ir.Constant(I32, 23)), ir.Constant(I32, 126))
    e = b.select(tiny, b.sub(e, ir.Constant(I32, 23)), e)
    m = b.bitcast(
        b.or_(b.and_(bits, ir.Constant(I32, 0x007FFFFF)), ir.Constant(I32, 0x3F000000)), F32
    )
    small = b.fcmp_ordered("<", m, _c(0.707106781186547524))
    e = b.select(small, b.sub(e, ir.Constant(I32, 1)), e)
    m = b.select(small, b.fsub(b.fadd(m, m), _c(1.0)), b.fsub(m, _c(1.0)))
    ef = b.sitofp(e, F32)
    z = b.fmul(m, m)
    p = _poly(b, m, [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                     1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                     3.3333331174e-1])  # fmt: skip
    y = b.fmul(b.fmul(p, m), z)
    y = b.fadd(y, b.fmul(ef, _c(-2.12194440e-4)))
    y = b.fsub(y, b.fmul(z, _c(0.5)))
    y = b.fadd(b.fadd(m, y), b.fmul(ef, _c(0.693359375)))
    y = b.select(b.fcmp_ordered("==", x, _c(float("inf"))), x, y)
    y = b.select(b.fcmp_ordered("==", x, _c(0.0)), _c(float("-inf")), y)
    y = b.select(b.fcmp_ordered("<", x, _c(0.0)), _c(float("nan")), y)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def _rational(b: ir.IRBuilder, x: ir.Value, alpha: list[float], beta: list[float]) -> ir.Value:
    """x * P(x^2) / Q(x^2) with P's and Q's coefficients from the highest power down."""
    x2 = b.fmul(x, x)
    return b.fdiv(b.fmul(x, _poly(b, x2, alpha)), _poly(b, x2, beta))


def _tanh(b: ir.IRBuilder, x: ir.Value, module: ir.Module) -> ir.Value:
    # Eigen's ptanh_float rational approximation on [-7.9, 7.9] (exactly +-1 beyond in f32).
    xc = _clamp(b, x, -7.90531110763549805, 7.90531110763549805)
    y = _rational(
        b,
        xc,
        [-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
         5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
         4.89352455891786e-03],
        [1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
         4.89352518554385e-03],
    )  # fmt: skip
    fabs = _intrinsic(module, "llvm.fabs.f32")
    return b.select(b.fcmp_ordered("<", b.call(fabs, [x]), _c(0.0004)), x, y)


def _erf(b: ir.IRBuilder, x: ir.Value, module: ir.Module) -> ir.Value:
    # Eigen's generic_fast_erf_float rational approximation on [-4, 4] (+-1 beyond in f32).
    xc = _clamp(b, x, -4.0, 4.0)
    return _rational(
        b,
        xc,
        [-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
         -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
         -1.60960333262415e-02],
        [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
         -7.37332916720468e-03, -1.42647390514189e-02],
    )  # fmt: skip


_BUILDERS = {"exp": _exp, "log": _log, "tanh": _tanh, "erf": _erf}


def _intrinsic(module: ir.Module, name: str) -> ir.Function:
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(F32, [F32]), name)
    return fn


def fast_f32(module: ir.Module, name: str) -> ir.Function:
    """The module's always-inlined f32 implementation of ``name`` (exp, log, tanh, erf)."""
    symbol = f"passlens.{name}f"
    fn = module.globals.get(symbol)
    if fn is not None:
        return fn
    fn = ir.Function(module, ir.FunctionType(F32, [F32]), symbol)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(_BUILDERS[name](b, fn.args[0], module))
    return fn


FAST_F32 = tuple(_BUILDERS)
