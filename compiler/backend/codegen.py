"""Code generation: loop-IR kernels to LLVM IR (llvmlite), optimised for the host CPU at O3 so
inner loops vectorise, then JIT-compiled with MCJIT or emitted as object code.

Each loop stage of a kernel becomes one function ``<kernel>__s<i>(ptr args, ptr dims, i64 lo,
i64 hi)``: ``args`` holds the kernel's buffer pointers (params, then workspaces), ``dims`` its
symbolic dim values, and ``[lo, hi)`` is the slice of the stage's parallel iterations to run
(its leading ``parallel`` loops, collapsed into one), so the runtime can split a stage over
threads. The stage's body is an internal function taking the buffers as ``noalias`` pointers
(inlined, so the vectoriser knows they do not overlap). Library calls are not compiled: they
are steps the runtime performs (see runtime.py).

Semantics the code keeps: integer arithmetic wraps; integer division by zero gives 0 (the
reference interpreter raises) and ``INT_MIN / -1`` wraps instead of trapping; float to int
casts truncate, and give NaN, infinities and values out of range what the ``cast`` op's rule
says (compiler/ops/elementwise.py: x86-64's conversions, as torch eager gives them); float ops
may be contracted into FMAs and reassociated (so reductions vectorise). float16 is LLVM
``half``; bfloat16 is kept as i16 bits and converted by shifts (round to nearest even), so no
runtime library is needed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
import llvmlite.ir as ir

from compiler.backend import loops as L
from compiler.backend.mathlib import FAST_F32, fast_f32
from compiler.errors import PasslensError
from compiler.ir.types import DType

_I1, _I8, _I16, _I32, _I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
_PTR = ir.PointerType()
_F16, _F32, _F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
_FAST = ("reassoc", "contract")

_VALUE_TYPES = {
    DType.float16: _F16,
    DType.bfloat16: _I16,  # bits
    DType.float32: _F32,
    DType.float64: _F64,
    DType.int8: _I8,
    DType.int16: _I16,
    DType.int32: _I32,
    DType.int64: _I64,
    DType.uint8: _I8,
    DType.uint16: _I16,
    DType.uint32: _I32,
    DType.uint64: _I64,
    DType.bool: _I1,
}


def _value_type(dtype: DType) -> ir.Type:
    try:
        return _VALUE_TYPES[dtype]
    except KeyError:
        raise CodegenError(
            f"the LLVM backend does not compile {dtype.name} ({dtype.short}) values"
        ) from None


def _unsigned(dtype: DType) -> bool:
    """Whether integer values of ``dtype`` use the unsigned instructions (bool included)."""
    return dtype.is_unsigned or dtype is DType.bool


def _storage_type(dtype: DType) -> ir.Type:
    return _I8 if dtype is DType.bool else _VALUE_TYPES[dtype]


class CodegenError(PasslensError):
    """A kernel could not be turned into LLVM IR; the message names the kernel and why."""


# ----- the host target ------------------------------------------------------------------------

_init_lock = threading.Lock()
_target: HostTarget | None = None


@dataclass
class HostTarget:
    """The host's triple, CPU and features, and a target machine for them (O3)."""

    triple: str
    cpu: str
    features: str
    machine: llvm.TargetMachine

    def describe(self) -> str:
        """``x86_64-unknown-linux-gnu, cpu znver3``."""
        return f"{self.triple}, cpu {self.cpu}"

    def new_machine(self) -> llvm.TargetMachine:
        """Another target machine for the host (an execution engine owns the one it gets)."""
        return _make_machine(self.triple, self.cpu, self.features)


def _make_machine(triple: str, cpu: str, features: str) -> llvm.TargetMachine:
    return llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default"
    )


def host_target() -> HostTarget:
    """The (cached) host target, initialising LLVM on first use."""
    global _target
    with _init_lock:
        if _target is None:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            triple = llvm.get_process_triple()
            cpu = llvm.get_host_cpu_name()
            features = llvm.get_host_cpu_features().flatten()
            _target = HostTarget(triple, cpu, features, _make_machine(triple, cpu, features))
        return _target


# ----- steps (what the runtime runs) -------------------------------------------------------


@dataclass(frozen=True)
class LoopStep:
    """A compiled stage: call ``symbol(args, dims, lo, hi)`` for ``lo..hi`` in
    ``0..extent`` (None: not parallel, one call with 0, 1). ``work`` estimates the loop
    iterations inside one parallel iteration (the runtime runs small stages on one thread)."""

    symbol: str
    label: str
    extent: L.Expr | None
    work: int


@dataclass(frozen=True)
class LibStep:
    """A library call performed by the runtime."""

    call: L.LibCall


# ----- the emitter ------------------------------------------------------------------------


def _parallel_prefix(body: L.Stmt) -> list[L.For]:
    """The leading parallel loops to collapse: perfectly nested, never the innermost loop of
    a deeper nest (it is the one that vectorises)."""
    chain: list[L.For] = []
    s = body
    while isinstance(s, L.For) and s.parallel:
        chain.append(s)
        s = s.body
    if len(chain) >= 2 and not any(isinstance(x, L.For) for x in L.walk_stmt(chain[-1].body)):
        chain.pop()  # keep the innermost loop a plain loop
    return chain


def _work(s: L.Stmt) -> int:
    """Estimated loop iterations of a statement (a loop of unknown extent counts as 16)."""
    if isinstance(s, L.For):
        n = L.static_int(s.extent)
        return (16 if n is None else max(n, 0)) * max(_work(s.body), 1)
    if isinstance(s, L.Store):
        return 1
    return sum(_work(c) for c in L.stmt_children(s))


class _FunctionEmitter:
    """Emits one stage's body function."""

    def __init__(self, module: ir.Module, kernel: L.Kernel, fn: ir.Function):
        self.module = module
        self.kernel = kernel
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(self.entry)
        self.env: dict[str, ir.Value] = {}
        self.pointers: dict[L.Buffer, ir.Value] = {}
        self.strides: dict[L.Buffer, list[ir.Value]] = {}
        self.locals: dict[L.Buffer, ir.Value] = {}
        self.memo: dict[int, ir.Value] = {}

    # ----- helpers ------------------------------------------------------------------------
    def fail(self, message: str) -> CodegenError:
        return CodegenError(f"kernel @{self.kernel.name}: {message}")

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    def libm(self, name: str, ty: ir.Type, nargs: int = 1) -> ir.Function:
        symbol = name + ("f" if ty is _F32 else "")
        return self.intrinsic(symbol, ty, [ty] * nargs)

    def const(self, c: L.Const) -> ir.Value:
        ty = _value_type(c.dtype)
        if c.dtype is DType.bfloat16:
            raise self.fail("bfloat16 constants must be built in f32 and cast")
        if c.dtype is DType.bool:
            return ir.Constant(_I1, int(bool(c.value)))
        if c.dtype.is_float:
            return ir.Constant(ty, float(c.value))
        bits = ty.width
        return ir.Constant(ty, int(c.value) & ((1 << bits) - 1))

    # ----- buffers ------------------------------------------------------------------------
    def setup(self, params: dict[L.Buffer, ir.Value]) -> None:
        """Record buffer pointers and compute row-major strides in the entry block."""
        self.pointers = dict(params)
        for buf in self.pointers:
            strides: list[ir.Value] = []
            acc: ir.Value = ir.Constant(_I64, 1)
            for d in reversed(buf.shape):
                strides.append(acc)
                acc = self.b.mul(acc, self.expr(d), flags=("nsw",))
            self.strides[buf] = list(reversed(strides))

    def address(self, buf: L.Buffer, indices: tuple[L.Expr, ...]) -> ir.Value:
        if buf.role == "local":
            return self.locals[buf]
        if buf not in self.pointers:
            raise self.fail(f"buffer %{buf.name} is not an argument of the kernel")
        offset: ir.Value | None = None
        for idx, stride in zip(indices, self.strides[buf], strict=False):
            term = self.b.mul(self.expr(idx), stride, flags=("nsw",))
            offset = term if offset is None else self.b.add(offset, term, flags=("nsw",))
        if offset is None:
            offset = ir.Constant(_I64, 0)
        return self.b.gep(
            self.pointers[buf], [offset], inbounds=True, source_etype=_storage_type(buf.dtype)
        )

    # ----- expressions --------------------------------------------------------------------
    def expr(self, e: L.Expr) -> ir.Value:
        """The value of ``e``: each computed node is emitted once per statement (memo), its
        operands first, left to right. The walk keeps its own stack, so that ``_expr`` only
        looks its operands up: an expression's depth is not limited by Python's recursion."""
        stack: list[tuple[L.Expr, bool]] = [(e, False)]
        while stack:
            x, operands_done = stack.pop()
            if id(x) in self.memo or isinstance(x, (L.Const, L.Var)):
                continue  # (constants and variables are values already, never memoized)
            if not operands_done:
                stack.append((x, True))
                stack.extend((o, False) for o in reversed(L.expr_children(x)))
                continue
            self.memo[id(x)] = self._expr(x)
        return self.memo[id(e)] if id(e) in self.memo else self._expr(e)

    def _expr(self, e: L.Expr) -> ir.Value:
        b = self.b
        if isinstance(e, L.Const):
            return self.const(e)
        if isinstance(e, L.Var):
            if e.name not in self.env:
                raise self.fail(f"variable {e.name} is not defined")
            return self.env[e.name]
        if isinstance(e, L.Load):
            ptr = self.address(e.buffer, e.indices)
            v = b.load(ptr, typ=_storage_type(e.buffer.dtype))
            if e.buffer.dtype is DType.bool:
                return b.icmp_unsigned("!=", v, ir.Constant(_I8, 0))
            return v
        if isinstance(e, L.Binary):
            return self.binary(e.op, e.a.dtype, self.expr(e.a), self.expr(e.b), e.b)
        if isinstance(e, L.Compare):
            return self.compare(e.op, e.a.dtype, self.expr(e.a), self.expr(e.b))
        if isinstance(e, L.Math):
            return self.math(e.fn, e.x.dtype, self.expr(e.x))
        if isinstance(e, L.Select):
            return b.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))
        if isinstance(e, L.Cast):
            return self.cast(self.expr(e.value), e.value.dtype, e.dtype)
        if isinstance(e, L.Bitcast):
            return self.bitcast(self.expr(e.value), e.value.dtype, e.dtype)
        raise self.fail(f"cannot compile expression {e!r}")

    def binary(self, op: str, dtype: DType, a: ir.Value, b_: ir.Value, b_expr: L.Expr) -> ir.Value:
        b = self.b
        if dtype in (DType.float16, DType.bfloat16):
            raise self.fail(f"{op} on {dtype}: arithmetic on 16-bit floats must be done in f32")
        if dtype.is_float:
            if op == "add":
                return b.fadd(a, b_, flags=_FAST)
            if op == "sub":
                return b.fsub(a, b_, flags=_FAST)
            if op == "mul":
                return b.fmul(a, b_, flags=_FAST)
            if op == "div":
                return b.fdiv(a, b_)
            if op in ("min", "max"):  # nan propagates, like numpy.minimum / maximum
                pick_a = b.fcmp_ordered("<" if op == "min" else ">", a, b_)
                pick_a = b.or_(pick_a, b.fcmp_unordered("uno", a, a))
                return b.select(pick_a, a, b_)
            if op == "pow":
                return b.call(
                    self.intrinsic(f"llvm.pow.{_fname(a.type)}", a.type, [a.type] * 2), [a, b_]
                )
            if op in ("floordiv", "floormod"):
                r = b.frem(a, b_)
                fix = b.and_(
                    b.fcmp_ordered("!=", r, ir.Constant(a.type, 0.0)),
                    b.xor(
                        b.fcmp_ordered("<", r, ir.Constant(a.type, 0.0)),
                        b.fcmp_ordered("<", b_, ir.Constant(a.type, 0.0)),
                    ),
                )
                if op == "floormod":
                    return b.select(fix, b.fadd(r, b_), r)
                q = b.fdiv(b.fsub(a, r), b_)
                return b.select(fix, b.fsub(q, ir.Constant(a.type, 1.0)), q)
            raise self.fail(f"float {op} is not supported")
        signed = not _unsigned(dtype)
        if op == "add":
            return b.add(a, b_)
        if op == "sub":
            return b.sub(a, b_)
        if op == "mul":
            return b.mul(a, b_)
        if op in ("and", "or", "xor"):
            return {"and": b.and_, "or": b.or_, "xor": b.xor}[op](a, b_)
        if op in ("min", "max"):
            cmp = b.icmp_signed if signed else b.icmp_unsigned
            return b.select(cmp("<" if op == "min" else ">", a, b_), a, b_)
        if op == "pow":  # through f64: exact while |result| < 2**53
            fa = b.sitofp(a, _F64) if signed else b.uitofp(a, _F64)
            fb = b.sitofp(b_, _F64) if signed else b.uitofp(b_, _F64)
            p = b.call(self.intrinsic("llvm.pow.f64", _F64, [_F64, _F64]), [fa, fb])
            return self.cast(p, DType.float64, dtype)
        if op in ("div", "floordiv", "floormod"):
            return self.int_division(op, a, b_, signed, b_expr)
        raise self.fail(f"integer {op} is not supported")

    def int_division(self, op: str, a: ir.Value, d: ir.Value, signed: bool, d_expr: L.Expr):
        b = self.b
        zero, one = ir.Constant(a.type, 0), ir.Constant(a.type, 1)
        known = L.const_value(d_expr)
        safe_d = d
        if known is None or known == 0 or (signed and known == -1):
            # division by zero gives 0 and INT_MIN / -1 wraps, instead of trapping
            bad = b.icmp_signed("==", d, zero)
            if signed:
                bad = b.or_(bad, b.icmp_signed("==", d, ir.Constant(a.type, -1)))
            safe_d = b.select(bad, one, d)
        if not signed:
            q, r = b.udiv(a, safe_d), b.urem(a, safe_d)
        else:
            q, r = b.sdiv(a, safe_d), b.srem(a, safe_d)
            if op != "div":  # floor: adjust when the remainder's sign differs from d's
                fix = b.and_(
                    b.icmp_signed("!=", r, zero),
                    b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", safe_d, zero)),
                )
                q = b.select(fix, b.sub(q, one), q)
                r = b.select(fix, b.add(r, safe_d), r)
        result = q if op in ("div", "floordiv") else r
        if safe_d is d:
            return result
        if signed:  # d == -1: a / -1 = -a (wrapping), a % -1 = 0
            neg1 = b.icmp_signed("==", d, ir.Constant(a.type, -1))
            result = b.select(neg1, b.sub(zero, a) if op != "floormod" else zero, result)
        return b.select(b.icmp_signed("==", d, zero), zero, result)

    def compare(self, op: str, dtype: DType, a: ir.Value, b_: ir.Value) -> ir.Value:
        sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[op]
        if dtype in (DType.float16, DType.bfloat16):
            raise self.fail(f"comparison of {dtype}: compare 16-bit floats in f32")
        if dtype.is_float:
            if op == "ne":
                return self.b.fcmp_unordered("!=", a, b_)
            return self.b.fcmp_ordered(sym, a, b_)
        if _unsigned(dtype):
            return self.b.icmp_unsigned(sym, a, b_)
        return self.b.icmp_signed(sym, a, b_)

    def math(self, fn: str, dtype: DType, x: ir.Value) -> ir.Value:
        b = self.b
        if fn == "not":
            return b.xor(x, ir.Constant(x.type, 1 if dtype is DType.bool else -1))
        if dtype in (DType.float16, DType.bfloat16):
            raise self.fail(f"{fn} of {dtype}: compute 16-bit floats in f32")
        if fn == "neg":
            return b.fneg(x) if dtype.is_float else b.sub(ir.Constant(x.type, 0), x)
        if fn == "abs":
            if dtype.is_float:
                return b.call(self.intrinsic(f"llvm.fabs.{_fname(x.type)}", x.type, [x.type]), [x])
            if _unsigned(dtype):
                return x
            return b.select(
                b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.sub(ir.Constant(x.type, 0), x), x
            )
        if fn == "isnan":
            return b.fcmp_unordered("uno", x, x)
        t = _fname(x.type)
        if fn in ("sqrt", "floor", "ceil"):
            return b.call(self.intrinsic(f"llvm.{fn}.{t}", x.type, [x.type]), [x])
        if fn == "round":  # half to even, like numpy / torch
            return b.call(self.intrinsic(f"llvm.roundeven.{t}", x.type, [x.type]), [x])
        if fn in FAST_F32 and x.type is _F32:
            return b.call(fast_f32(self.module, fn), [x])
        if fn in ("exp", "log", "tanh", "erf", "sin", "cos", "log1p", "expm1"):
            return b.call(self.libm(fn, x.type), [x])
        raise self.fail(f"math function {fn} is not supported")

    def bitcast(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        """The bits of ``v`` as ``dst`` (bool is a byte holding 0 or 1)."""
        b = self.b
        if src is DType.bool:
            v = b.zext(v, _I8)
        if dst is DType.bool:
            return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
        dt = _value_type(dst)
        return v if v.type == dt else b.bitcast(v, dt)

    def cast(self, v: ir.Value, src: DType, dst: DType) -> ir.Value:
        b = self.b
        if src is dst:
            return v
        if src is DType.bfloat16:  # bits -> f32, then on
            f = b.bitcast(b.shl(b.zext(v, _I32), ir.Constant(_I32, 16)), _F32)
            return self.cast(f, DType.float32, dst)
        if dst is DType.bfloat16:
            f = self.cast(v, src, DType.float32)
            bits = b.bitcast(f, _I32)
            lsb = b.and_(b.lshr(bits, ir.Constant(_I32, 16)), ir.Constant(_I32, 1))
            rounded = b.lshr(
                b.add(bits, b.add(ir.Constant(_I32, 0x7FFF), lsb)), ir.Constant(_I32, 16)
            )
            quiet = b.or_(b.lshr(bits, ir.Constant(_I32, 16)), ir.Constant(_I32, 0x40))
            nan = b.fcmp_unordered("uno", f, f)
            return b.trunc(b.select(nan, quiet, rounded), _I16)
        st, dt = _value_type(src), _value_type(dst)
        if dst is DType.bool:
            if src.is_float:
                return b.fcmp_unordered("!=", v, ir.Constant(st, 0.0))
            return b.icmp_unsigned("!=", v, ir.Constant(st, 0))
        if src.is_float and dst.is_float:
            if src is DType.float64 and dst is DType.float16:  # no f64 -> f16 instruction
                v, st = b.fptrunc(v, _F32), _F32
            return b.fpext(v, dt) if _fbits(st) < _fbits(dt) else b.fptrunc(v, dt)
        if src.is_float:
            return self.float_to_int(v, st, dst)
        src_signed = not _unsigned(src)
        if dst.is_float:
            return b.sitofp(v, dt) if src_signed else b.uitofp(v, dt)
        if st.width == dt.width:
            return v
        if st.width > dt.width:
            return b.trunc(v, dt)
        return b.sext(v, dt) if src_signed else b.zext(v, dt)

    def float_to_int(self, v: ir.Value, st: ir.Type, dst: DType) -> ir.Value:
        """Float ``v`` (LLVM type ``st``) to integer ``dst`` by the rule of the ``cast`` op
        (compiler/ops/elementwise.py): truncate; out of range, through int32 / int64 as torch
        converts on x86-64 (INT_MIN where it does not fit), then keep the low bits; uint64
        takes [2**63, 2**64) exactly and gives 0 beyond."""
        b = self.b
        if st is _F16:  # exact; the bounds below are not half values
            v, st = b.fpext(v, _F32), _F32
        name = _fname(st)

        def through(bits: int) -> ir.Value:  # trunc(v) where it fits, else INT_MIN (nan too)
            it = ir.IntType(bits)
            sat = b.call(self.intrinsic(f"llvm.fptosi.sat.i{bits}.{name}", it, [st]), [v])
            over = b.fcmp_unordered(">=", v, ir.Constant(st, 2.0 ** (bits - 1)))
            return b.select(over, ir.Constant(it, -(1 << (bits - 1))), sat)

        if dst is DType.uint64:
            usat = b.call(self.intrinsic(f"llvm.fptoui.sat.i64.{name}", _I64, [st]), [v])
            huge = b.fcmp_ordered(">=", v, ir.Constant(st, 2.0**64))
            big = b.select(huge, ir.Constant(_I64, 0), usat)
            upper = b.fcmp_ordered(">=", v, ir.Constant(st, 2.0**63))
            return b.select(upper, big, through(64))
        # (uint8 through int64 as the rule says; from f32 that gives what int32 gives: a
        # float32 beyond int32 is a multiple of 256)
        wide = dst in (DType.int64, DType.uint32) or dst is DType.uint8 and st is _F64
        bits = 64 if wide else 32
        r = through(bits)
        dt = _value_type(dst)
        return b.trunc(r, dt) if dt.width < bits else r

    # ----- statements ---------------------------------------------------------------------
    def stmt(self, s: L.Stmt) -> None:
        b = self.b
        self.memo = {}
        if isinstance(s, L.Seq):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, L.Store):
            value = self.expr(s.value)
            if s.buffer.dtype is DType.bool:
                value = b.zext(value, _I8)
            b.store(value, self.address(s.buffer, s.indices))
        elif isinstance(s, L.Let):
            self.env[s.var.name] = self.expr(s.value)
            self.stmt(s.body)
            del self.env[s.var.name]
        elif isinstance(s, L.For):
            self.loop(s.var.name, self.expr(s.extent), lambda: self.stmt(s.body))
        elif isinstance(s, L.IfThen):
            cond = self.expr(s.cond)
            if s.orelse is None:
                with b.if_then(cond):
                    self.stmt(s.then)
            else:
                with b.if_else(cond) as (then, orelse):
                    with then:
                        self.stmt(s.then)
                    with orelse:
                        self.stmt(s.orelse)
        elif isinstance(s, L.Local):
            for buf in s.buffers:
                if buf.shape:
                    raise self.fail(f"local %{buf.name} must be a scalar")
                with b.goto_entry_block():
                    self.locals[buf] = b.alloca(_storage_type(buf.dtype), name=buf.name)
            self.stmt(s.body)
        else:
            raise self.fail(f"cannot compile statement {type(s).__name__} inside a stage")
        self.memo = {}

    def loop(self, var: str, extent: ir.Value, body, start: ir.Value | None = None) -> None:
        b = self.b
        pre = b.block
        head = b.append_basic_block(f"{var}.head")
        inner = b.append_basic_block(f"{var}.body")
        done = b.append_basic_block(f"{var}.done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(_I64, name=var)
        i.add_incoming(start if start is not None else ir.Constant(_I64, 0), pre)
        b.cbranch(b.icmp_signed("<", i, extent), inner, done)
        b.position_at_end(inner)
        self.env[var] = i
        body()
        nxt = b.add(i, ir.Constant(_I64, 1), flags=("nsw",))
        i.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(done)
        del self.env[var]

    def stage(self, stage: L.Stage, chain: list[L.For], lo: ir.Value, hi: ir.Value) -> None:
        """The stage body with its leading parallel loops collapsed into ``lo..hi``."""
        if not chain:
            self.stmt(stage.body)
            return
        extents = [self.expr(f.extent) for f in chain]

        def body():
            rest: ir.Value = self.env["__t"]
            for f, ext in zip(reversed(chain), reversed(extents), strict=False):
                if f is chain[0]:
                    self.env[f.var.name] = rest
                else:
                    self.env[f.var.name] = self.b.urem(rest, ext)
                    rest = self.b.udiv(rest, ext)
            self.stmt(chain[-1].body)

        self.loop("__t", hi, body, start=lo)


def _fname(t: ir.Type) -> str:
    return {id(_F16): "f16", id(_F32): "f32", id(_F64): "f64"}[id(t)]


def _fbits(t: ir.Type) -> int:
    return {id(_F16): 16, id(_F32): 32, id(_F64): 64}[id(t)]


def _check_parallel(kernel: L.Kernel, chain: list[L.For]) -> None:
    loop_vars = {f.var.name for f in chain}
    for f in chain:
        if L.free_vars(f.extent) & loop_vars:
            raise CodegenError(
                f"kernel @{kernel.name}: parallel loop {f.var.name} has an extent that depends "
                "on another parallel loop"
            )


def emit_kernel(kernel: L.Kernel) -> tuple[str, list]:
    """The LLVM IR (text) of a kernel's loop stages and the steps to run them in order."""
    module = ir.Module(name=kernel.name)
    module.triple = host_target().triple
    buffers = kernel.buffers
    steps: list = []
    for i, stage in enumerate(kernel.body):
        if isinstance(stage, L.LibCall):
            steps.append(LibStep(stage))
            continue
        symbol = f"{kernel.name}__s{i}"
        chain = _parallel_prefix(stage.body)
        _check_parallel(kernel, chain)
        # body: (buffers..., dims..., lo, hi) with noalias buffers
        body_ty = ir.FunctionType(
            ir.VoidType(), [_PTR] * len(buffers) + [_I64] * (len(kernel.dims) + 2)
        )
        body_fn = ir.Function(module, body_ty, f"{symbol}.body")
        body_fn.linkage = "internal"
        body_fn.attributes.add("alwaysinline")
        body_fn.attributes.add("nounwind")
        for k in range(len(buffers)):
            body_fn.args[k].add_attribute("noalias")
        em = _FunctionEmitter(module, kernel, body_fn)
        for name, arg in zip(kernel.dims, body_fn.args[len(buffers) :], strict=False):
            em.env[name] = arg
        em.setup(dict(zip(buffers, body_fn.args[: len(buffers)], strict=False)))
        lo, hi = body_fn.args[-2], body_fn.args[-1]
        em.stage(stage, chain, lo, hi)
        em.b.ret_void()
        # wrapper: (ptr args, ptr dims, i64 lo, i64 hi)
        wrap = ir.Function(module, ir.FunctionType(ir.VoidType(), [_PTR, _PTR, _I64, _I64]), symbol)
        wb = ir.IRBuilder(wrap.append_basic_block("entry"))
        args_p, dims_p, wlo, whi = wrap.args
        call_args = [
            wb.load(
                wb.gep(args_p, [ir.Constant(_I64, k)], inbounds=True, source_etype=_PTR), typ=_PTR
            )
            for k in range(len(buffers))
        ]
        call_args += [
            wb.load(
                wb.gep(dims_p, [ir.Constant(_I64, k)], inbounds=True, source_etype=_I64), typ=_I64
            )
            for k in range(len(kernel.dims))
        ]
        wb.call(body_fn, call_args + [wlo, whi])
        wb.ret_void()
        extent = L.product([f.extent for f in chain]) if chain else None
        inner = chain[-1].body if chain else stage.body
        steps.append(LoopStep(symbol, stage.label, extent, max(_work(inner), 1)))
    return str(module), steps


# ----- optimisation, JIT, object code ------------------------------------------------------


def optimize(llvm_ir: str, opt_level: int = 3) -> llvm.ModuleRef:
    """Parse, verify and optimise LLVM IR for the host (loop and SLP vectorisation on)."""
    target = host_target()
    mod = llvm.parse_assembly(llvm_ir)
    mod.triple = target.triple
    mod.data_layout = str(target.machine.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.loop_vectorization = opt_level >= 2
    pto.slp_vectorization = opt_level >= 2
    pb = llvm.create_pass_builder(target.machine, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def assembly(mod: llvm.ModuleRef) -> str:
    """The host assembly of an optimised module."""
    return host_target().machine.emit_assembly(mod)


def object_code(mod: llvm.ModuleRef) -> bytes:
    """The host object code of an optimised module."""
    return host_target().machine.emit_object(mod)


class JIT:
    """An MCJIT engine that modules are added to; keeps them alive and gives addresses."""

    def __init__(self) -> None:
        self.engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(""), host_target().new_machine()
        )
        self.lock = threading.Lock()

    def add(self, mod: llvm.ModuleRef) -> None:
        """Compile an optimised module to machine code (the module then belongs to the JIT)."""
        with self.lock:
            self.engine.add_module(mod)
            self.engine.finalize_object()
            self.engine.run_static_constructors()

    def add_object(self, data: bytes) -> None:
        """Load object code (from an exported artifact)."""
        with self.lock:
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(data))
            self.engine.finalize_object()

    def address(self, symbol: str) -> int:
        """The address of a compiled function; a missing one raises."""
        addr = self.engine.get_function_address(symbol)
        if not addr:
            raise CodegenError(f"the JIT has no function {symbol!r}")
        return addr


__all__ = [
    "CodegenError",
    "HostTarget",
    "JIT",
    "LibStep",
    "LoopStep",
    "assembly",
    "emit_kernel",
    "host_target",
    "object_code",
    "optimize",
]
