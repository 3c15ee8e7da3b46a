"""Check every step of a trace: numerics against the reference, shapes, parameters, failures.

``check(trace, inputs)`` runs the reference (torch eager, onnxruntime, or for an IR source the
imported step itself) and every step's module on the same inputs, and returns a
:class:`Report` of :class:`Finding` s:

- ``diverged``: a step's outputs differ from the reference beyond ``atol + rtol * |ref|``,
  reported where the divergence starts (the first such step, or a step that changed the
  numbers again), naming the earliest IR node that differs from the reference node it came
  from: the FX node named by its provenance (torch), or the imported step's node with the same
  provenance (other sources);
- ``shape-mismatch``: a node whose computed value disagrees with its annotated type, at the
  step that made the node;
- ``param-bloat``: parameter bytes grew by more than ``bloat_threshold`` over the previous
  step, naming the parameters responsible (with ``explorer.diff``: "N copies of `W`");
- ``signature-changed`` (info, never a failure): the way ``@main`` is called changed (after
  lift-transform-params the check runs ``@main_transform_params`` on the weights, then
  ``@main``; after the lazy passes it serves ``get_item`` / collects ``set_item``);
- ``pass-failed``: a pass raised, with the binding it failed on;
- ``run-failed``: a step's module could not be run by the interpreter.

Steps are run children before their parent (a nested pipeline's step shows its last child's
module) and a module already run is not run again. Values are reused two ways: one
``interpret.ValueCache`` serves the whole trace, so a node several snapshots share is computed
once; and a node a pass rebuilt around the very same values (a matmul whose weight is now a
folded constant viewing the same memory, a body outlined by fuse-ops) takes the value
computed before (see ``_Memo``). Cached values of calls whose callee changed, and of all that
depends on them, are dropped before a run; a value is dropped after the last step using it.
"""

from __future__ import annotations

import html
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from compiler.errors import PasslensError
from compiler.interpret import CallMemo, InterpretError, TypeMismatch, ValueCache, evaluate
from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Module,
    Tuple,
    TupleGetItem,
    children,
)
from compiler.ir.symbolic import ANY, SymExpr
from compiler.ir.types import DType, TensorType, TupleType
from compiler.ops.lazy_params import SIDE_EFFECT_OPS, lazy_callbacks
from compiler.ops.nn import LINEAR_ROUNDS_AS_DECOMPOSED
from compiler.passes.lift_transform_params import TRANSFORM_PARAMS_OF
from explorer.fmt import format_bytes, num
from explorer.trace import Step, Trace

BLOAT_THRESHOLD = 0.10  # relative growth of parameter bytes over the previous step
BLOAT_MIN_BYTES = 1024  # ... and at least this many bytes (folding a few literals is not bloat)
PROGRESS_AFTER = 20  # show progress on stderr for traces with more steps than this
NODE_ERRORS_KEPT = 20  # node errors kept per diverged finding

SEVERITY = {
    "pass-failed": "error",
    "run-failed": "error",
    "shape-mismatch": "error",
    "diverged": "error",
    "param-bloat": "warning",
    "signature-changed": "info",
}
_KIND_ORDER = {k: i for i, k in enumerate(SEVERITY)}

Progress = Callable[[int, int, str], None]


class CheckError(PasslensError, RuntimeError):
    """The check cannot run: no inputs, inputs that do not fit, an unusable reference."""


# ===== results ================================================================================


@dataclass(eq=False)
class Finding:
    """One thing the check found: its ``kind`` (see ``SEVERITY``), the step, the IR node(s),
    a plain-language ``message`` and kind-specific ``details``:

    - diverged: ``max_abs``, ``max_rel``, ``output`` (index of the worst output),
      ``reference`` (what was compared with), ``node_errors`` (list of :class:`NodeError`,
      earliest first; ``nodes[0]`` is the earliest node that differs, when one is matched);
    - shape-mismatch: ``annotated`` (Type), ``shape``, ``dtype``, ``function``;
    - param-bloat: ``bytes_before``, ``bytes_after``, ``growth`` (list of (name, bytes,
      net bytes added, reason)), ``previous`` (the step compared with);
    - signature-changed: ``before`` / ``after`` (how @main was called), ``get_item_calls``,
      ``set_item_calls``;
    - pass-failed: ``error``, ``traceback``, ``function``, ``line`` (0-based line of
      ``step.text``) and ``line_text``;
    - run-failed: ``error``.
    """

    kind: str
    step: Step
    nodes: list = field(default_factory=list)
    message: str = ""
    details: dict = field(default_factory=dict)

    @property
    def severity(self) -> str:
        """``error``, ``warning`` or ``info``."""
        return SEVERITY.get(self.kind, "error")

    @property
    def is_failure(self) -> bool:
        """Whether this is a problem (info findings such as signature-changed are not)."""
        return self.severity != "info"

    def __str__(self) -> str:
        return f"#{self.step.index} {self.step.name} [{self.kind}] {self.message}"

    def __repr__(self) -> str:
        return f"<Finding {self.kind} at #{self.step.index} {self.step.name}>"


@dataclass
class NodeError:
    """How far an IR node's value is from the reference value it was matched with."""

    node: Expr
    where: str  # ``module.path (fx_node)``: where the node came from in the source
    max_abs: float
    max_rel: float
    shape: tuple

    def __str__(self) -> str:
        return f"{self.where} differs by {num(self.max_abs)} (max abs, {num(self.max_rel)} rel)"


@dataclass(eq=False)
class StepCheck:
    """The numbers of one step: ``status`` is reference, ok, diverged, shape-mismatch,
    run-failed, failed (the pass raised) or not run; ``same_as`` is the index of the step
    whose module this one shows (its results reused); ``computed`` / ``reused`` count the
    bindings evaluated and taken from the cache for this step."""

    step: Step
    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    same_as: int | None = None
    computed: int = 0
    reused: int = 0
    seconds: float = 0.0


class Report:
    """What ``check`` found: ``findings`` in step order, ``first_failure`` (the bisection
    answer), ``ok``, per-step numbers (``steps`` / ``rows()``) and how many values were
    reused between steps. ``numbers_checked`` is False when no inputs were given and none
    could be made up (only failed passes and parameter bloat are then reported)."""

    def __init__(
        self,
        trace: Trace,
        findings: list[Finding],
        steps: list[StepCheck],
        reference: str,
        rtol: float,
        atol: float,
        computed: int = 0,
        cache_hits: int = 0,
        memo_hits: int = 0,
        seconds: float = 0.0,
        notes: Sequence[str] = (),
    ):
        self.trace = trace
        self.findings = sorted(findings, key=lambda f: (f.step.index, _KIND_ORDER.get(f.kind, 99)))
        self.steps = steps
        self.reference = reference
        self.rtol = rtol
        self.atol = atol
        self.computed = computed
        self.cache_hits = cache_hits
        self.memo_hits = memo_hits
        self.seconds = seconds
        self.notes = list(notes)
        self.numbers_checked = bool(reference)

    @property
    def failures(self) -> list[Finding]:
        """The findings that are problems (not info)."""
        return [f for f in self.findings if f.is_failure]

    @property
    def first_failure(self) -> Finding | None:
        """The earliest problem, by step order: where things first went wrong."""
        fails = self.failures
        return fails[0] if fails else None

    @property
    def ok(self) -> bool:
        """Whether no problem was found (info findings allowed)."""
        return not self.failures

    def of_kind(self, kind: str) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]

    def at(self, step: Step | int | str) -> list[Finding]:
        """The findings of one step (a Step, its index or its pass name)."""
        s = step if isinstance(step, Step) else self.trace[step]
        return [f for f in self.findings if f.step is s]

    def rows(self) -> list[dict]:
        """One row per step for a numerics table: step, depth, pass, status, max abs and max
        rel error against the reference, findings, the step whose results were reused."""
        counts: dict[int, list[str]] = {}
        for f in self.findings:
            counts.setdefault(f.step.index, []).append(f.kind)
        return [
            {
                "step": c.step.index,
                "depth": c.step.depth,
                "pass": c.step.name,
                "status": c.status,
                "max_abs": c.max_abs,
                "max_rel": c.max_rel,
                "findings": counts.get(c.step.index, []),
                "same_as": c.same_as,
                "computed": c.computed,
                "reused": c.reused,
            }
            for c in self.steps
        ]

    @property
    def reuse_text(self) -> str:
        """How much the shared value cache saved, in words."""
        reused = self.cache_hits + self.memo_hits
        total = reused + self.computed
        share = f" ({100 * reused / total:.0f}%)" if total else ""
        return (
            f"{self.computed} bindings computed, {reused} reused from earlier steps{share}: "
            f"{self.cache_hits} nodes shared between steps, {self.memo_hits} rebuilt nodes "
            "on the same values"
        )

    def headline(self) -> str:
        """One line: ok, or the count of problems and the first one."""
        fails = self.failures
        if not fails:
            info = len(self.findings)
            head = "check ok" if self.numbers_checked else "check ok, but numbers not checked"
            return head + (f" ({info} note{'s' if info != 1 else ''})" if info else "")
        first = fails[0]
        return (
            f"check: {len(fails)} problem{'s' if len(fails) != 1 else ''}; first at "
            f"#{first.step.index} {first.step.name} ({first.kind})"
        )

    def __str__(self) -> str:
        lines = [self.headline()]
        reference = self.reference or "none"
        lines.append(f"reference: {reference}; rtol={self.rtol:g}, atol={self.atol:g}")
        lines += self.notes
        lines.append(f"values: {self.reuse_text}; {self.seconds:.2f} s")
        lines.append(f"{'#':>3}  {'pass':<34} {'status':<15} {'max abs':>10} {'max rel':>10}")
        for r in self.rows():
            name = ("  " * r["depth"] + r["pass"])[:34]
            same = f"  (= #{r['same_as']})" if r["same_as"] is not None else ""
            lines.append(
                f"{r['step']:>3}  {name:<34} {r['status']:<15} {num(r['max_abs']):>10} "
                f"{num(r['max_rel']):>10}{same}"
            )
        if self.findings:
            lines.append("findings:")
            for f in self.findings:
                tag = "" if f.is_failure else " (info)"
                lines.append(f"  #{f.step.index} {f.step.name} [{f.kind}]{tag} {f.message}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        esc = html.escape
        colour = {"error": "#fdd", "warning": "#ffe9c6", "info": "#e8f0fe"}
        items = "".join(
            f"<li style='background:{colour[f.severity]}'><b>#{f.step.index} {esc(f.step.name)}"
            f"</b> [{esc(f.kind)}] {esc(f.message)}</li>"
            for f in self.findings
        )
        rows = []
        for r in self.rows():
            bad = r["status"] not in ("ok", "reference", "not run")
            style = " style='background:#fdd'" if bad else ""
            pad = "&nbsp;" * 4 * r["depth"]
            same = f" (= #{r['same_as']})" if r["same_as"] is not None else ""
            rows.append(
                f"<tr{style}><td>{r['step']}</td><td>{pad}{esc(r['pass'])}</td>"
                f"<td>{esc(r['status'])}{same}</td><td>{num(r['max_abs'])}</td>"
                f"<td>{num(r['max_rel'])}</td><td>{esc(', '.join(r['findings']))}</td></tr>"
            )
        notes = "".join(f"<br>{esc(n)}" for n in self.notes)
        return (
            f"<div><b>{esc(self.headline())}</b><br>reference: {esc(self.reference)}; "
            f"rtol={self.rtol:g}, atol={self.atol:g}{notes}<br>values: {esc(self.reuse_text)}"
            + (f"<ul>{items}</ul>" if items else "")
            + "<table><thead><tr><th>#</th><th>pass</th><th>status</th><th>max abs</th>"
            "<th>max rel</th><th>findings</th></tr></thead><tbody>"
            + "".join(rows)
            + "</tbody></table></div>"
        )


# ===== how a module is called ===================================================================


@dataclass(frozen=True)
class _Convention:
    """How ``@main`` of a module is called: through its transform-params function or not,
    how many weights each takes as parameters, and which fetch / hand over values lazily."""

    transform: str | None
    transform_params: int
    transform_get: bool
    transform_set: bool
    main_weights: int
    main_get: bool
    main_set: bool

    def describe(self) -> str:
        """How the check calls @main, in words."""
        parts = []
        if self.transform:
            lazy = [("get_item", self.transform_get), ("set_item", self.transform_set)]
            how = f"@{self.transform} on the weights"
            if any(on for _, on in lazy):
                how += " (through " + " and ".join(n for n, on in lazy if on) + ")"
            parts.append(how + ", then @main on the inputs and its results")
        elif self.main_weights:
            parts.append("@main on the inputs and the weights")
        else:
            parts.append("@main on the inputs")
        if self.main_get:
            parts.append("@main's weights served by get_item")
        if self.main_set:
            parts.append("@main's results collected from set_item")
        return "; ".join(parts)


def _lazy_ops(fn: Function) -> tuple[bool, bool]:
    """Whether ``fn`` calls get_item, and set_item."""
    ops = {n.op for n in fn.iter_nodes() if isinstance(n, Call)}
    return "get_item" in ops, "set_item" in ops


def _function_of(module: Module, node: Expr, default: str) -> str:
    """The name of the function of ``module`` that binds ``node``."""
    for name, fn in module.functions.items():
        if any(n is node for n in fn.iter_nodes()):
            return name
    return default


def _transform_of(module: Module) -> str | None:
    for name, fn in module.functions.items():
        if fn.attrs.get(TRANSFORM_PARAMS_OF) == "main":
            return name
    return "main_transform_params" if "main_transform_params" in module else None


def _convention(module: Module) -> _Convention:
    main = module["main"]
    tp = _transform_of(module)
    t_get = t_set = False
    t_params = 0
    if tp is not None:
        t_get, t_set = _lazy_ops(module[tp])
        t_params = len(module[tp].params)
    m_get, m_set = _lazy_ops(main)
    return _Convention(tp, t_params, t_get, t_set, len(main.params) - main.num_input, m_get, m_set)


def _signature_message(step: Step, before: _Convention, after: _Convention) -> str:
    tp = after.transform or before.transform
    what = []
    if after.transform and not before.transform:
        what.append(
            f"@main now takes the weights as transformed by @{tp}: the check ran @{tp} on the "
            "weights, then @main on the inputs and its results (calling @main with the "
            "original weights would give wrong numbers)"
        )
    elif before.transform and not after.transform:
        what.append(f"@{before.transform} is gone: the check ran {after.describe()}")
    if after.transform_get and not before.transform_get:
        what.append(f"@{tp} fetches its weights with get_item: the check served the weights")
    if after.transform_set and not before.transform_set:
        what.append(f"@{tp} hands its results to set_item: the check collected them for @main")
    if after.main_get and not before.main_get:
        what.append(
            "@main fetches its weights with get_item: the check served the "
            + ("transformed weights" if after.transform else "weights")
        )
    if after.main_set and not before.main_set:
        what.append("@main hands its results to set_item: the check compared what it was handed")
    if not what:
        what.append(
            f"@main is called another way (before: {before.describe()}): the check ran "
            f"{after.describe()}"
        )
    return f"after {step.name}, " + "; ".join(what)


# ===== reuse of values between steps ============================================================


class _Memo:
    """Values by what computes them: (op, attributes, annotated type, operand values by
    identity). The value cache reuses a node shared between snapshots; this reuses the value
    of a node a pass rebuilt around the very same values: once fold-constant has turned
    ``permute_dims(W)`` into a constant that is a view of the same memory, the matmul reading
    it, and everything after, get the values computed before instead of running again (and
    so do the bodies of functions fuse-ops outlined). Ops are pure, so equal keys mean equal
    values; the annotated type is in the key so a node with a new annotation is checked.

    An entry keeps its operand arrays alive (so no other array takes their id) and is kept
    while it was made or used by the module a pass was given or the one being run."""

    def __init__(self) -> None:
        self.entries: dict[tuple, list] = {}  # key -> [operand arrays, value, generation]
        self.views: dict[tuple, weakref.ref] = {}  # (base, address, layout) -> the first view
        self.contents: dict[tuple, list] = {}  # (shape, dtype, sampled bytes) -> arrays
        self.content_hits = 0
        self.generation = 0
        self.hits = 0

    def start(self, keep: int | None) -> int:
        """Begin a module's run, keeping the entries of generation ``keep``; its generation."""
        self.generation += 1
        live = {keep, self.generation}
        self.entries = {k: e for k, e in self.entries.items() if e[2] in live}
        self.views = {k: r for k, r in self.views.items() if r() is not None}
        self.contents = {
            k: live
            for k, refs in self.contents.items()
            if (live := [r for r in refs if r() is not None])
        }
        return self.generation

    def canonical(self, value: Any) -> Any:
        """The array standing for ``value``: itself, or for a view, the first view seen of
        the same memory with the same shape, strides and dtype."""
        if not isinstance(value, np.ndarray) or value.base is None:
            return value
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        key = (
            id(root),
            value.__array_interface__["data"][0],
            value.shape,
            value.strides,
            value.dtype.str,
        )
        ref = self.views.get(key)
        first = ref() if ref is not None else None
        if first is None:
            self.views[key] = weakref.ref(value)
            return value
        return first

    def key(self, node: Expr, operands: list) -> tuple:
        return (node.op, node.attrs, node.ty, *map(id, operands))

    def get(self, node: Call, operands: list) -> Any:
        entry = self.entries.get(self.key(node, operands))
        if entry is None:
            return None
        entry[2] = self.generation
        self.hits += 1
        return entry[1]

    def put(self, node: Call, operands: list, value: Any) -> None:
        k = self.key(node, operands)
        if k not in self.entries:
            self.entries[k] = [operands, value, self.generation]

    def same_content(self, value: Any) -> Any:
        """An array computed before with the very same bytes (shape, dtype, every bit), or
        ``value`` itself. A pass that rebuilds a node around equal values (decompose-ops'
        matmul + add for a linear, rounded alike) then hands its consumers the array they
        read before, so the memo reuses everything downstream."""
        if not isinstance(value, np.ndarray) or value.size < 64 or not value.flags.c_contiguous:
            return value
        flat = value.reshape(-1)
        probe = flat[:: max(1, flat.size // 32)][:32].tobytes()
        key = (value.shape, value.dtype.str, probe)
        refs = self.contents.setdefault(key, [])
        bits = flat.view(np.uint8)
        for ref in refs:
            old = ref()
            if (
                old is not None
                and old is not value
                and np.array_equal(old.reshape(-1).view(np.uint8), bits)
            ):
                self.content_hits += 1
                return old
        refs[:] = [r for r in refs if r() is not None][-3:]
        refs.append(weakref.ref(value))
        return value


# Ops the check computes as their decomposition (whose reference rounds the same way), so the
# values of decompose-ops' matmul and add are found in the memo instead of computed again.
_RUN_AS_DECOMPOSED = ("linear",)  # in the dtypes of LINEAR_ROUNDS_AS_DECOMPOSED


class _MemoHooks(CallMemo):
    """The memo, consulted by the interpreter at every op call while a step runs."""

    def __init__(self, memo: _Memo):
        self.memo = memo

    def _operands(self, node: Call, args: list) -> list | None:
        if node.op in SIDE_EFFECT_OPS or not all(isinstance(a, np.ndarray) for a in args):
            return None
        return [self.memo.canonical(a) for a in args]

    def lookup(self, node: Call, args: list) -> Any:
        ops = self._operands(node, args)
        if ops is None:
            return None
        value = self.memo.get(node, ops)
        if value is not None:
            self.hits += 1
            return value
        if node.op in _RUN_AS_DECOMPOSED and node.ty.dtype.numpy in LINEAR_ROUNDS_AS_DECOMPOSED:
            value = self._decomposed(node, args)
            if value is not None:
                self.memo.put(node, ops, value)
        return value

    def _decomposed(self, node: Call, args: list) -> Any:
        """The value of ``node`` computed as its decomposition, each part through the memo, so
        the parts decompose-ops makes later are found there. Only for ops whose reference
        rounds exactly like their decomposition (tested bitwise)."""
        from compiler.ops import get_op
        from compiler.passes.decompose_ops import DECOMPOSITIONS

        root = DECOMPOSITIONS[node.op](node)
        if root is None:
            return None
        known: dict[int, Any] = {id(a): v for a, v in zip(node.args, args, strict=False)}

        def value(e: Expr) -> Any:
            if id(e) in known:
                return known[id(e)]
            if isinstance(e, Constant):
                return e.data
            if not isinstance(e, Call):
                raise TypeError(f"unexpected {type(e).__name__} in a decomposition")
            vals = [value(a) for a in e.args]
            v = self.lookup(e, vals)
            if v is None:
                v = self.record(e, vals, get_op(e.op).compute(vals, e.attrs))
            known[id(e)] = v
            return v

        return value(root)

    def record(self, node: Call, args: list, value: Any) -> Any:
        ops = self._operands(node, args)
        if ops is None or not isinstance(value, np.ndarray):
            return value
        value = self.memo.same_content(value)
        self.memo.put(node, ops, value)
        return value


def _memo_operands(memo: _Memo, node: Call, values: dict, params: dict) -> list | None:
    """The canonical operand arrays of a call, or None when one is not known yet."""
    out = []
    for a in node.args:
        if isinstance(a, Constant):
            v = a.data
        else:
            v = values.get(a)
            if v is None:
                v = params.get(a)
        if not isinstance(v, np.ndarray):
            return None
        out.append(memo.canonical(v))
    return out


# ===== the check ================================================================================


@dataclass
class _Run:
    """The results of running one module."""

    outputs: tuple | None = None
    error: BaseException | None = None
    error_node: Expr | None = None
    mismatches: list = field(default_factory=list)  # (TypeMismatch, function name)
    convention: _Convention | None = None
    get_calls: int = 0
    set_calls: int = 0
    generation: int = 0
    diverged: bool = False
    computed: int = 0
    reused: int = 0
    seconds: float = 0.0


def check(
    trace: Trace,
    inputs: Any = None,
    reference: str = "source",
    rtol: float = 1e-4,
    atol: float = 1e-5,
    progress: Progress | bool | None = None,
    bloat_threshold: float = BLOAT_THRESHOLD,
    bloat_min_bytes: int = BLOAT_MIN_BYTES,
) -> Report:
    """Run the reference and every step of ``trace`` on ``inputs`` (default: the trace's
    example inputs; numpy arrays or torch tensors) and report what went wrong where.

    ``reference``: ``"source"`` (torch eager / onnxruntime; the imported step for IR
    sources) or ``"import"`` (the imported step's results). ``progress``: a callback
    ``(step_index, total, name)``, True / False to force the stderr line on / off, or None
    (on for traces of more than 20 steps).
    """
    if reference not in ("source", "import"):
        raise ValueError(f"reference must be 'source' or 'import', got {reference!r}")
    return _Checker(
        trace, inputs, reference, rtol, atol, progress, bloat_threshold, bloat_min_bytes
    ).run()


class _Checker:
    def __init__(self, trace, inputs, reference, rtol, atol, progress, bloat_threshold, bloat_min):
        self.trace = trace
        self.rtol, self.atol = rtol, atol
        self.reference_kind = reference
        self.bloat_threshold, self.bloat_min = bloat_threshold, bloat_min
        self.progress = progress
        self.notes: list[str] = []
        self.cache = ValueCache()
        self.memo = _Memo()
        self.seeded = 0  # values put in the cache before a run (from the memo)
        self.callees: dict[Expr, tuple] = {}  # call node -> the callee functions its value used
        self.closures: dict[int, dict[str, tuple]] = {}
        self.set_items: dict[int, bool] = {}  # id(function) -> whether it calls set_item
        self.findings: list[Finding] = []
        self.seen_mismatch: set[int] = set()
        self.results: dict[int, _Run] = {}  # id(module) -> its run
        self.ref_outputs: tuple | None = None
        self.reference = self.reference_name = ""
        self.fx_values: dict[str, np.ndarray] = {}  # torch: FX node name -> value
        self.node_ref: dict = {}  # other sources: provenance key -> imported values
        self.imported = trace.imported
        self.raw_inputs = inputs
        self.runtime, self.weights = self._split_inputs(inputs)

    # ----- inputs ----------------------------------------------------------------------------
    def _split_inputs(self, inputs) -> tuple[list | None, list | None]:
        """The runtime inputs and the weights @main's parameters take (None, None when no
        inputs were given and none can be made up: the numbers are then not checked)."""
        module = self.imported.module
        main = module["main"]
        k = main.num_input
        tp = _transform_of(module)
        weight_vars = module[tp].params if tp is not None else main.params[k:]
        stored = {c.name: c.data for c in module.attrs.get("param_values", ())}
        if inputs is None:
            inputs = self.trace.example_inputs
        if inputs is None:
            env: dict[str, int] = {}
            rng = np.random.default_rng(0)
            try:
                runtime = _random_arrays(main.params[:k], env, rng)
                if all(p.name in stored for p in weight_vars):
                    weights = [stored[p.name] for p in weight_vars]
                else:
                    weights = _random_arrays(weight_vars, env, rng)
            except CheckError as e:
                self.notes.append(f"numbers not checked: {e}")
                return None, None
            sizes = ", ".join(f"{name} = {n}" for name, n in sorted(env.items()))
            what = "inputs" if len(weights) == 0 or stored else "inputs and weights"
            self.notes.append(
                f"{what}: random (seed 0) from the signature"
                + (f" with {sizes}" if sizes else "")
                + "; none were given"
            )
            return runtime, weights
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        arrays = [_to_numpy(x) for x in inputs]
        runtime, weights = arrays[:k], arrays[k:]
        if len(runtime) < k:
            raise CheckError(f"@main takes {k} runtime input(s), {len(arrays)} given")
        if not weights and weight_vars:
            missing = [p.name for p in weight_vars if p.name not in stored]
            if missing:
                raise CheckError(
                    f"@main takes {len(weight_vars)} weight(s) after its {k} input(s) "
                    f"({', '.join('%' + n for n in missing[:5])}...): pass them after the inputs"
                )
            weights = [stored[p.name] for p in weight_vars]
        elif len(weights) != len(weight_vars):
            raise CheckError(
                f"@main takes {k} input(s) and {len(weight_vars)} weight(s); "
                f"{len(arrays)} value(s) given"
            )
        return runtime, weights

    # ----- running modules --------------------------------------------------------------------
    def _closure(self, module: Module, fname: str) -> tuple:
        memo = self.closures.setdefault(id(module), {})
        if fname not in memo:
            seen: dict[str, Function] = {}
            stack = [fname]
            while stack:
                name = stack.pop()
                if name in seen or name not in module:
                    continue
                seen[name] = module[name]
                stack.extend(n.func for n in module[name].iter_nodes() if isinstance(n, FuncCall))
            memo[fname] = tuple(sorted(seen.items(), key=lambda kv: kv[0]))
        return memo[fname]

    def _stores(self, closure: tuple) -> bool:
        """Whether a function of ``closure`` calls set_item (whose callback must see every
        run, so the call's value is never taken from the cache)."""
        for _, fn in closure:
            if id(fn) not in self.set_items:
                self.set_items[id(fn)] = _lazy_ops(fn)[1]
            if self.set_items[id(fn)]:
                return True
        return False

    def _drop_stale(self, module: Module, fname: str, args: Sequence, fetch: Sequence) -> None:
        """Remove cached values that would be wrong here: parameters bound to other values,
        calls whose callee changed, get_item results from another weight list, and all that
        depends on them."""
        values = self.cache.values
        fn = module[fname]
        stale: set[int] = set()
        for p, a in zip(fn.params, args, strict=False):
            old = values.get(p)
            if old is not None and old is not a and not _same_value(old, a):
                stale.add(id(p))
                del values[p]

        def visit(bindings) -> None:
            for node in bindings:
                if isinstance(node, If):
                    visit(node.then_branch.bindings)
                    visit(node.else_branch.bindings)
                bad = any(id(c) in stale for c in children(node))
                if not bad and node in values:
                    if isinstance(node, Call) and node.op == "set_item":
                        bad = True  # its callback must see this run
                    elif isinstance(node, FuncCall):
                        closure = self._closure(module, node.func)
                        bad = self.callees.get(node) != closure or self._stores(closure)
                    elif isinstance(node, Call) and node.op == "get_item":
                        i = node.attrs["index"]
                        bad = not (i < len(fetch) and values[node] is fetch[i])
                if bad:
                    stale.add(id(node))
                    values.pop(node, None)

        visit(fn.bindings)

    def _seed(self, run: _Run, module: Module, fname: str, values: dict, params: dict) -> None:
        """Put in ``values`` what the memo already knows for the bindings of ``fname``, in
        order (a call of another function is run here, through the memo, when its arguments
        are known)."""
        for node in module[fname].bindings:
            if node in values:
                continue
            v = None
            if isinstance(node, Call):
                if node.op in SIDE_EFFECT_OPS:
                    continue
                ops = _memo_operands(self.memo, node, values, params)
                v = self.memo.get(node, ops) if ops is not None else None
            elif isinstance(node, Tuple):
                fields = [_known(f, values, params) for f in node.fields]
                v = tuple(fields) if all(f is not None for f in fields) else None
            elif isinstance(node, TupleGetItem):
                t = _known(node.tuple_value, values, params)
                v = t[node.index] if isinstance(t, tuple) else None
            elif isinstance(node, FuncCall) and node.func in module:
                args = [_known(a, values, params) for a in node.args]
                if all(a is not None for a in args):
                    v = self._call(run, module, node, args)
            if v is not None:
                values[node] = v
                self.seeded += 1

    def _call(self, run: _Run, module: Module, node: FuncCall, args: list) -> Any:
        """The value of a call of another function, its body run through the memo."""
        callee = module[node.func]
        sub = ValueCache()
        params = dict(zip(callee.params, args, strict=False))
        seeded = self.seeded
        self._seed(run, module, node.func, sub.values, params)
        ev = evaluate(module, args, function=node.func, cache=sub, check_types=True)
        run.computed += sub.misses
        self.seeded = seeded  # hits inside the callee are not hits of the shared cache
        run.mismatches.extend((m, node.func) for m in ev.mismatches)
        self._remember(module, node.func, sub.values, params)
        return ev.outputs if isinstance(callee.output.ty, TupleType) else ev.outputs[0]

    def _remember(self, module: Module, fname: str, values: dict, params: dict) -> None:
        for node in module[fname].bindings:
            if isinstance(node, Call) and node.op not in SIDE_EFFECT_OPS:
                v = values.get(node)
                if isinstance(v, np.ndarray):
                    ops = _memo_operands(self.memo, node, values, params)
                    if ops is not None:
                        self.memo.put(node, ops, v)

    def _evaluate(self, run: _Run, module: Module, fname: str, args: Sequence, fetch: Sequence):
        self._drop_stale(module, fname, args, fetch)
        stored: dict[int, Any] = {}

        def get_item(i: int):
            run.get_calls += 1
            return fetch[i]

        def set_item(i: int, value):
            run.set_calls += 1
            stored[i] = value

        params = dict(zip(module[fname].params, args, strict=False))
        hits, misses, memo_hits = self.cache.hits, self.cache.misses, self.memo.hits
        hooks = _MemoHooks(self.memo)
        with lazy_callbacks(get_item=get_item, set_item=set_item):
            seeded = self.seeded
            self._seed(run, module, fname, self.cache.values, params)
            seeded = self.seeded - seeded
            ev = evaluate(
                module, list(args), function=fname, cache=self.cache, check_types=True, memo=hooks
            )
        # a memo hit inside the evaluation counts as a miss of the node cache
        run.reused += self.cache.hits - hits - seeded + self.memo.hits - memo_hits
        run.computed += self.cache.misses - misses - hooks.hits
        run.mismatches.extend((m, _function_of(module, m.node, fname)) for m in ev.mismatches)
        for node in module[fname].iter_nodes():
            if isinstance(node, FuncCall):
                self.callees[node] = self._closure(module, node.func)
        self._remember(module, fname, self.cache.values, params)
        outputs = ev.outputs
        if stored:  # what a runtime would keep is what was handed to set_item
            missing = [i for i in range(len(outputs)) if i not in stored]
            if missing:
                raise InterpretError(
                    f"@{fname} never handed result(s) {missing} to set_item "
                    f"(it returns {len(outputs)})"
                )
            outputs = tuple(stored[i] for i in range(len(outputs)))
        return outputs

    def run_module(self, module: Module) -> _Run:
        run = _Run()
        start = time.perf_counter()
        try:
            conv = run.convention = _convention(module)
            weights = self.weights
            if conv.transform:
                n = conv.transform_params
                if n not in (0, len(weights)):
                    raise CheckError(
                        f"@{conv.transform} takes {n} parameter(s); there are {len(weights)} "
                        "weights"
                    )
                args = weights if n else ()
                weights = list(self._evaluate(run, module, conv.transform, args, weights))
            n = conv.main_weights
            if n not in (0, len(weights)):
                raise CheckError(
                    f"@main takes {n} weight parameter(s); there are {len(weights)} "
                    + ("transformed weights" if conv.transform else "weights")
                )
            args = [*self.runtime, *(weights if n else ())]
            run.outputs = tuple(self._evaluate(run, module, "main", args, weights))
        except (InterpretError, CheckError) as e:
            run.error = e
            run.error_node = getattr(e, "node", None)
        except Exception as e:  # a step that cannot be computed is a finding, never a crash
            run.error = InterpretError(f"{type(e).__name__}: {str(e)[:500]}")
            run.error_node = None
        run.seconds = time.perf_counter() - start
        return run

    # ----- the reference -----------------------------------------------------------------------
    def _set_reference(self, import_run: _Run) -> None:
        """Reference outputs, per-node reference values (FX node values by name for torch,
        else the imported step's values by provenance) and their description."""
        frontend = self.trace.frontend
        label = f"the imported step (#{self.imported.index} {self.imported.name})"
        self.ref_outputs, self.reference_name = import_run.outputs, "the imported step"
        main = self.imported.module["main"]
        if import_run.outputs is not None:
            self.node_ref = _node_reference(main, self.cache.values)
        if self.reference_kind == "import" or frontend not in ("torch", "onnx"):
            why = "as asked" if self.reference_kind == "import" else "the source is IR"
            self.reference = f"{label}, {why}"
            return
        try:
            if frontend == "torch":
                outputs, fx, how = _torch_reference(self.trace.source, self._all_inputs())
                self.ref_outputs, self.fx_values = outputs, fx
                self.reference_name = "torch eager"
                self.reference = f"torch eager ({how})"
            else:
                self.ref_outputs = _onnx_reference(self.trace.source, self.runtime)
                self.reference = self.reference_name = "onnxruntime"
                self.reference += " (CPUExecutionProvider)"
            return
        except ImportError as e:
            reason = f"{e.name or e} is not installed"
        except Exception as e:  # the framework could not run the model: say so, go on
            reason = f"{type(e).__name__}: {e}"
        self.notes.append(f"the {frontend} reference could not run ({reason})")
        self.reference = f"{label}, as the {frontend} reference failed"

    def _all_inputs(self) -> list:
        raw = self.raw_inputs if self.raw_inputs is not None else self.trace.example_inputs
        if raw is None:
            return self.runtime
        return list(raw) if isinstance(raw, (tuple, list)) else [raw]

    # ----- the main loop -----------------------------------------------------------------------
    def run(self) -> Report:
        start = time.perf_counter()
        steps = self.trace.steps
        order = _run_order(steps)
        last_use = self._last_use(order)
        first_step: dict[int, Step] = {}  # id(module) -> the first step that ran it
        checks: dict[int, StepCheck] = {}
        show = self._progress_fn(len(steps))
        for k, step in enumerate(order):
            if show:
                show(step.index, len(steps), step.name)
            module = step.module
            if step.kind == "source":
                checks[step.index] = StepCheck(step, "reference")
            elif step.failed:
                checks[step.index] = StepCheck(step, "failed")
                if not step.children:  # a parent fails because a child did: report the child
                    self.findings.append(_pass_failed(step))
            elif module is None:
                checks[step.index] = StepCheck(step, "not run")
            elif id(module) in self.results:  # shown by a step already run: reuse its results
                status, max_abs, max_rel = self._numbers(self.results[id(module)])
                same = first_step[id(module)].index
                checks[step.index] = StepCheck(step, status, max_abs, max_rel, same_as=same)
            elif self.runtime is None:  # no inputs: only what needs no numbers
                checks[step.index] = StepCheck(step, "not run")
                if step.kind == "pass" and not step.children:
                    bloat = _param_bloat(step, self.bloat_threshold, self.bloat_min)
                    if bloat is not None:
                        self.findings.append(bloat)
            else:
                first_step[id(module)] = step
                checks[step.index] = self._check_step(step)
                self._release(order, k, last_use)
        if show is not None and not callable(self.progress):
            print(file=sys.stderr)
        return Report(
            self.trace,
            self.findings,
            [checks[s.index] for s in steps],
            self.reference,
            self.rtol,
            self.atol,
            sum(r.computed for r in self.results.values()),
            self.cache.hits - self.seeded,
            self.memo.hits,
            time.perf_counter() - start,
            self.notes,
        )

    def _numbers(self, run: _Run) -> tuple[str, float | None, float | None]:
        """Status, max abs and max rel error of a run against the reference outputs."""
        if run.error is not None:
            return "run-failed", None, None
        if self.ref_outputs is None or run.outputs is None:
            return "ok", None, None
        cmp = _compare_outputs(run.outputs, self.ref_outputs, self.rtol, self.atol)
        return ("diverged" if cmp.beyond else "ok"), cmp.max_abs, cmp.max_rel

    def _check_step(self, step: Step) -> StepCheck:
        """Run a step's module (new to this check) and record what it shows."""
        module = step.module
        before_mod = step.before if step.kind == "pass" else None
        before = self.results.get(id(before_mod)) if before_mod is not None else None
        generation = self.memo.start(before.generation if before is not None else None)
        run = self.run_module(module)
        run.generation = generation
        self.results[id(module)] = run
        if step is self.imported:
            self._set_reference(run)
        cmp = None
        if run.error is None and self.ref_outputs is not None and run.outputs is not None:
            cmp = _compare_outputs(run.outputs, self.ref_outputs, self.rtol, self.atol)
        run.diverged = cmp is not None and cmp.beyond > 0
        check = StepCheck(
            step,
            "run-failed" if run.error is not None else ("diverged" if run.diverged else "ok"),
            cmp.max_abs if cmp else None,
            cmp.max_rel if cmp else None,
            computed=run.computed,
            reused=run.reused,
            seconds=run.seconds,
        )
        label = f"after {step.name}" if step.kind == "pass" else f"the import ({step.name})"
        # A module that cannot run (reported where that starts).
        if run.error is not None and (before is None or before.error is None):
            node = [run.error_node] if run.error_node is not None else []
            message = f"{label}, the module could not be run: {run.error}"
            self.findings.append(Finding("run-failed", step, node, message, {"error": run.error}))
        # Annotated types that disagree with computed values (once per node, where it appears).
        for mm, fname in run.mismatches:
            if id(mm.node) not in self.seen_mismatch:
                self.seen_mismatch.add(id(mm.node))
                check.status = "shape-mismatch"
                self.findings.append(_shape_mismatch(step, label, mm, fname))
        # Outputs that diverge: where it starts, or where a pass changed the numbers again.
        if run.diverged and (
            before is None
            or not before.diverged
            or not _allclose(run.outputs, before.outputs, self.rtol, self.atol)
        ):
            self.findings.append(self._diverged(step, label, check, cmp))
        if step.kind == "pass" and before is not None:
            self._signature_change(step, before, run)
            bloat = _param_bloat(step, self.bloat_threshold, self.bloat_min)
            if bloat is not None:
                self.findings.append(bloat)
        return check

    def _signature_change(self, step: Step, before: _Run, run: _Run) -> None:
        if before.convention is None or run.convention is None:
            return
        if before.convention != run.convention:
            self.findings.append(
                Finding(
                    "signature-changed",
                    step,
                    [],
                    _signature_message(step, before.convention, run.convention),
                    {
                        "before": before.convention.describe(),
                        "after": run.convention.describe(),
                        "get_item_calls": run.get_calls,
                        "set_item_calls": run.set_calls,
                    },
                )
            )

    def _diverged(self, step: Step, label: str, check: StepCheck, cmp: _OutputsCompared):
        main = step.module["main"]
        errors = _node_errors(
            main, self.cache.values, self.fx_values, self.node_ref, self.rtol, self.atol
        )
        if cmp.note:
            text = cmp.note
        else:
            n = cmp.beyond
            text = (
                f"output {cmp.worst} differs from {self.reference_name} by "
                f"{num(check.max_abs)} (max abs, {num(check.max_rel)} max rel; "
                f"{n} element{'s' if n != 1 else ''} beyond tolerance)"
            )
        if errors:
            text = f"{errors[0]}; {text}"
        return Finding(
            "diverged",
            step,
            [errors[0].node] if errors else [],
            f"{label}, {text}",
            {
                "max_abs": check.max_abs,
                "max_rel": check.max_rel,
                "output": cmp.worst,
                "reference": self.reference,
                "node_errors": errors[:NODE_ERRORS_KEPT],
            },
        )

    # ----- memory and progress -----------------------------------------------------------------
    def _last_use(self, order: list[Step]) -> dict[int, int]:
        """For every node: the position in ``order`` of the last step whose module has it."""
        last: dict[int, int] = {}
        done: set[int] = set()
        for k, step in enumerate(order):
            m = step.module
            if m is None or step.failed or id(m) in done:
                continue
            done.add(id(m))
            for node in _module_nodes(m):
                last[id(node)] = k
        return last

    def _release(self, order: list[Step], k: int, last: dict[int, int]) -> None:
        values = self.cache.values
        m = order[k].module
        for node in _module_nodes(m):
            if last.get(id(node)) == k:
                values.pop(node, None)

    def _progress_fn(self, total: int) -> Progress | None:
        if callable(self.progress):
            return self.progress
        if self.progress is False or (self.progress is None and total <= PROGRESS_AFTER):
            return None
        width = [0]

        def show(index: int, total: int, name: str) -> None:
            text = f"checking step {index + 1}/{total} {name}"
            sys.stderr.write("\r" + text.ljust(width[0]))
            sys.stderr.flush()
            width[0] = max(width[0], len(text))

        return show


# ===== helpers ==================================================================================


def _run_order(steps: list[Step]) -> list[Step]:
    """Steps with every parent after its descendants (a nested pipeline's step shows what its
    last child made), otherwise in index order."""
    end: dict[int, int] = {}
    for s in reversed(steps):
        end[s.index] = max([s.index, *(end.get(c, c) for c in s.children)])
    return sorted(steps, key=lambda s: (end[s.index], -s.depth, s.index))


def _known(expr: Expr, values: dict, params: dict) -> Any:
    if isinstance(expr, Constant):
        return expr.data
    v = values.get(expr)
    return params.get(expr) if v is None else v


def _module_nodes(module: Module):
    for fn in module.functions.values():
        yield from fn.params
        yield from fn.iter_nodes()


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        t = x.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return np.asarray(x)


RANDOM_SYMBOL_VALUE = 2  # the size given to each symbolic dim of random inputs


def _random_arrays(params: Sequence, env: dict[str, int], rng) -> list[np.ndarray]:
    """Random values for parameters (standard normal floats, zeros otherwise), each symbolic
    dim set to 2 (``env`` learns the sizes chosen)."""
    out = []
    for p in params:
        ty = p.ty
        dims = ty.shape if isinstance(ty, TensorType) else None
        if dims is None or any(d is ANY for d in dims):
            raise CheckError(
                f"%{p.name}: {ty} has no known shape to make a random value: pass inputs to "
                "check() or example_inputs to explore()"
            )
        shape = []
        for d in dims:
            if isinstance(d, SymExpr):
                for name in d.free_symbols:
                    env.setdefault(name, RANDOM_SYMBOL_VALUE)
                d = d.evaluate(env)
            shape.append(int(d))
        dt = ty.dtype.numpy
        if np.issubdtype(dt, np.floating):
            out.append(rng.standard_normal(shape).astype(dt))
        else:
            out.append(np.zeros(shape, dt))
    return out


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(x is y or _same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.shape == b.shape
        and a.dtype == b.dtype
        and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    )


def _leaves(value: Any) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def _compare(a: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple[float, float, int]:
    """(max abs error, max rel error, elements beyond ``atol + rtol * |ref|``)."""
    a64 = np.asarray(a, dtype=np.float64)
    r64 = np.asarray(ref, dtype=np.float64)
    if a64.size == 0:
        return 0.0, 0.0, 0
    diff = np.abs(a64 - r64)
    same_nan = np.isnan(a64) & np.isnan(r64)
    diff = np.where(same_nan, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    beyond = int(np.count_nonzero(diff > atol + rtol * np.abs(np.nan_to_num(r64))))
    rel = diff / (np.abs(np.nan_to_num(r64)) + atol)
    return float(diff.max()), float(rel.max()), beyond


@dataclass
class _OutputsCompared:
    """Outputs against the reference: elements beyond tolerance, worst errors, the output
    with the largest error, and a note when shapes or counts differ."""

    beyond: int
    max_abs: float
    max_rel: float
    worst: int = 0
    note: str = ""


def _compare_outputs(got: tuple, want: tuple, rtol: float, atol: float) -> _OutputsCompared:
    got, want = _leaves(got), _leaves(want)
    inf = float("inf")
    if len(got) != len(want):
        note = f"the module returns {len(got)} output(s), the reference {len(want)}"
        return _OutputsCompared(1, inf, inf, 0, note)
    out = _OutputsCompared(0, 0.0, 0.0)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            note = f"output {i} has shape {list(g.shape)}, the reference {list(w.shape)}"
            return _OutputsCompared(1, inf, inf, i, note)
        a, r, n = _compare(g, w, rtol, atol)
        if a > out.max_abs:
            out.worst = i
        out.max_abs, out.max_rel, out.beyond = (
            max(out.max_abs, a),
            max(out.max_rel, r),
            out.beyond + n,
        )
    return out


def _allclose(a: tuple | None, b: tuple | None, rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return False
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if x is y:
            continue
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or _compare(x, y, rtol, atol)[2]:
            return False
    return True


# ----- per-node reference values ---------------------------------------------------------------


def _where(node: Expr) -> str:
    p = node.prov
    head = p.module_path or p.source_node or p.source_op or (f"%{node.name}" if node.name else "")
    extra = p.source_node if p.source_node and p.source_node != head else None
    if not head:
        head = f"a {getattr(node, 'op', type(node).__name__)} node"
    return f"{head} ({extra})" if extra else head


def _prov_key(node: Expr) -> tuple:
    p = node.prov
    return (p.framework, p.module_path, p.source_op, p.source_node, p.location, node.name)


def _roots(fn: Function, key: Callable[[Expr], Any]) -> list[Expr]:
    """Bound nodes that are the last of their provenance group (no reader of the node has the
    same key): the node standing for a source op's result, not an intermediate a frontend
    or a pass made for it (the matmul of a decomposed linear)."""
    read_by: dict[int, set] = {}
    nodes = [n for n in fn.iter_nodes()]
    for n in nodes:
        k = key(n)
        for c in children(n):
            read_by.setdefault(id(c), set()).add(k)
    return [n for n in nodes if key(n) is not None and key(n) not in read_by.get(id(n), ())]


def _node_reference(main: Function, values: dict) -> dict:
    """For an IR reference: the values of the imported main's group roots, by provenance."""
    ref: dict = {}
    for n in _roots(main, _prov_key):
        v = values.get(n)
        if isinstance(v, np.ndarray) and not n.prov.is_empty:
            ref.setdefault(_prov_key(n), []).append(v)
    return ref


def _node_errors(
    main: Function, values: dict, fx_values: dict, node_ref: dict, rtol: float, atol: float
) -> list[NodeError]:
    """Nodes of ``main`` (in binding order) whose value differs from the reference value they
    are matched with: the FX node named by their provenance, or the imported node with the
    same provenance."""
    if fx_values:
        key = lambda n: n.prov.source_node  # noqa: E731
    else:
        key = _prov_key
    errors = []
    for n in _roots(main, key):
        v = values.get(n)
        if not isinstance(v, np.ndarray):
            continue
        if fx_values:
            ref = fx_values.get(n.prov.source_node)
        elif n.prov.is_empty:
            continue
        else:
            same = [r for r in node_ref.get(_prov_key(n), ()) if r.shape == v.shape]
            ref = same[0] if len(same) == 1 else None
        if ref is None or ref is v or ref.shape != v.shape:
            continue
        a, r, beyond = _compare(v, ref, rtol, atol)
        if beyond:
            errors.append(NodeError(n, _where(n), a, r, tuple(v.shape)))
    return errors


# ----- findings ----------------------------------------------------------------------------------


def _pass_failed(step: Step) -> Finding:
    err = step.error
    what = f"{type(err).__name__}: {err}" if str(err) else f"{type(err).__name__} (no message)"
    line = step.failed_line
    line_text = step.text.splitlines()[line].strip() if line is not None else None
    where = ""
    if line_text:
        where = f" on `{line_text}`"
        if step.failed_function:
            where += f" in @{step.failed_function}"
    node = step.failed_node
    src = f" (from {_where(node)})" if node is not None and not node.prov.is_empty else ""
    return Finding(
        "pass-failed",
        step,
        [node] if node is not None else [],
        f"{step.name} failed{where}{src}: {what}",
        {
            "error": err,
            "traceback": step.traceback,
            "function": step.failed_function,
            "line": line,
            "line_text": line_text,
        },
    )


def _shape_mismatch(step: Step, label: str, mm: TypeMismatch, fname: str) -> Finding:
    node = mm.node
    name = f"%{node.name}" if node.name else f"a {getattr(node, 'op', type(node).__name__)} node"
    op = f" = {node.op}(...)" if isinstance(node, Call) else ""
    src = f" (from {_where(node)})" if not node.prov.is_empty else ""
    try:
        dtype = DType.of(mm.dtype).short
    except (KeyError, TypeError, ValueError):
        dtype = mm.dtype
    computed = f"{dtype}[{', '.join(map(str, mm.shape))}]"
    return Finding(
        "shape-mismatch",
        step,
        [node],
        f"{label}, {name}{op} in @{fname}{src} is annotated {mm.annotated} but computes {computed}",
        {"annotated": mm.annotated, "shape": mm.shape, "dtype": mm.dtype, "function": fname},
    )


def _param_bloat(step: Step, threshold: float, min_bytes: int) -> Finding | None:
    prev = step.previous
    if prev is None or step.module is None or step.module is prev.shown_module:
        return None
    before, after = prev.param_bytes, step.param_bytes
    delta = after - before
    if delta < min_bytes or after <= before * (1 + threshold):
        return None
    growth: list[tuple[str, int, int, str]] = []
    try:
        from explorer.diff import diff as step_diff

        for g in step_diff(prev, step).params.growth:
            growth.append((g.name, g.nbytes, g.delta, g.reason))
    except ImportError:  # no diff: name the parameters that are new, biggest first
        old = set(prev.graph.params)
        new = [p for k, p in step.graph.params.items() if k not in old]
        growth = [(p.name, p.nbytes, p.nbytes, "new") for p in sorted(new, key=lambda p: -p.nbytes)]
    params = step.graph.params
    nodes = [params[g[0]].obj for g in growth if g[0] in params and params[g[0]].obj is not None]
    reasons = [
        (r if r != "new" else f"`{name}` is new ({format_bytes(nb)})")
        for name, nb, _, r in growth[:3]
    ]
    if len(growth) > 3:
        reasons.append(f"and {len(growth) - 3} more")
    factor = f", {after / before:.1f}x" if before else ""
    text = (
        f"after {step.name}, parameter bytes grew {format_bytes(before)} -> "
        f"{format_bytes(after)} (+{format_bytes(delta)}{factor})"
    )
    if reasons:
        text += ": " + "; ".join(reasons)
    return Finding(
        "param-bloat",
        step,
        nodes,
        text,
        {"bytes_before": before, "bytes_after": after, "growth": growth, "previous": prev},
    )


# ----- framework references ----------------------------------------------------------------------


def _torch_reference(source: dict, inputs: list) -> tuple[tuple, dict, str]:
    """Torch eager outputs of the source model, every FX node's value (by node name) from
    running the exported graph with the same inputs, and how the model was run."""
    import torch
    from torch.utils._pytree import tree_leaves

    model, ep = source["model"], source.get("exported")
    tensors = [x if isinstance(x, torch.Tensor) else torch.from_numpy(np.array(x)) for x in inputs]
    exported = isinstance(model, torch.export.ExportedProgram)
    fn = model.module() if exported else model
    training = not exported and getattr(fn, "training", False)  # exported: mode is fixed
    try:
        if training:
            fn.eval()
        with torch.no_grad():
            out = fn(*tensors)
    finally:
        if training:
            fn.train(True)
    outputs = tuple(_to_numpy(t) for t in tree_leaves(out) if isinstance(t, torch.Tensor))
    fx_values: dict[str, np.ndarray] = {}
    if ep is None and isinstance(model, torch.export.ExportedProgram):
        ep = model
    if ep is not None:
        try:
            fx_values = _fx_values(ep, tensors)
        except Exception:  # per-node values are a bonus: outputs still compare
            fx_values = {}
    how = "ExportedProgram.module(), no_grad" if exported else "eval mode, no_grad"
    return outputs, fx_values, how


def _fx_values(ep, tensors: list) -> dict[str, np.ndarray]:
    import torch
    from torch.utils._pytree import tree_leaves

    state, constants = ep.state_dict, dict(getattr(ep, "constants", {}) or {})
    user = iter(tree_leaves(tensors))
    args = []
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            args.append(next(user))
        else:
            target = spec.target
            args.append(state[target] if target in state else constants[target])
    values: dict[str, np.ndarray] = {}

    class Capture(torch.fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if n.op == "call_function" and isinstance(out, torch.Tensor):
                values[n.name] = _to_numpy(out)
            return out

    with torch.no_grad():
        Capture(ep.graph_module).run(*args)
    return values


def _onnx_reference(source: dict, runtime: list) -> tuple:
    import onnxruntime as ort

    proto = source["model"]
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    if len(names) != len(runtime):
        raise CheckError(f"the ONNX model takes {len(names)} input(s), {len(runtime)} given")
    return tuple(np.asarray(o) for o in sess.run(None, dict(zip(names, runtime, strict=True))))


__all__ = ["check", "Report", "Finding", "NodeError", "StepCheck", "CheckError", "SEVERITY"]
