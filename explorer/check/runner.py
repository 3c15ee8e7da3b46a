"""Running the check: the reference, every step on the same inputs, the findings."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler import InterpretError, ValueCache, evaluate
from compiler.ir import (
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    Loop,
    Module,
    Tuple,
    TupleGetItem,
    TupleType,
    children,
)
from compiler.passes import (
    SIDE_EFFECT_OPS,
    calling_convention,
    lazy_callbacks,
    lazy_ops,
    weight_params,
)
from explorer.check import detectors  # noqa: F401 (registers the built-in kinds of finding)
from explorer.check.facts import Options, Reference, Run, StepFacts
from explorer.check.judge import failure_note, used_note
from explorer.check.layer_errors import LayerErrors
from explorer.check.memo import _Memo, _memo_operands, _MemoHooks
from explorer.check.numbers import (
    _judge_outputs,
    _OutputsCompared,
    _same_value,
    _to_numpy,
)
from explorer.check.random_inputs import (  # noqa: F401 (the limits, where they were)
    MAX_RANDOM_INPUT_BYTES,
    RANDOM_SYMBOL_VALUE,
)
from explorer.check.random_inputs import random_arrays as _random_arrays
from explorer.check.references import (
    _node_reference,
    _onnx_reference,
    _torch_reference,
    float64_reference,
)
from explorer.check.registry import kinds
from explorer.check.report import CheckError, Finding, Report, StepCheck
from explorer.check.tie_judging import TieJudging
from explorer.progress import Job

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.step import Step

# ===== the check ================================================================================


# an adapter's checker subclasses it: run_module, _split_inputs, the hooks
class Checker(TieJudging):
    def __init__(self, trace, inputs, reference, rtol, atol, progress, bloat_threshold, bloat_min):
        self.trace = trace
        self.rtol, self.atol = rtol, atol
        self.options = Options(rtol, atol, bloat_threshold, bloat_min)
        self.reference_kind = reference
        self.progress = progress
        self.notes: list[str] = []
        self.tie_notes: set[str] = set()  # the notes on tied indices already made
        self.cache = ValueCache()
        self.memo = _Memo()
        self.seeded = 0  # values put in the cache before a run (from the memo)
        self.callees: dict[Expr, tuple] = {}  # call node -> the callee functions its value used
        self.closures: dict[int, dict[str, tuple]] = {}
        self.set_items: dict[int, bool] = {}  # id(function) -> whether it calls set_item
        self.findings: list[Finding] = []
        self.state: dict = {}  # the detectors' check-wide state, by kind
        self.results: dict[int, Run] = {}  # id(module) -> its run
        self.ref_outputs: tuple | None = None
        self.reference = Reference()
        self.layer_errors = LayerErrors(rtol, atol)
        self.imported = trace.imported
        self.raw_inputs = inputs
        self.weights_stored = False  # whether the weights are the module's own (param_values)
        self.runtime, self.weights = self._split_inputs(inputs)

    # ----- inputs ----------------------------------------------------------------------------
    def _split_inputs(self, inputs) -> tuple[list | None, list | None]:
        """The runtime inputs and the weights @main's parameters take (None, None when no
        inputs were given and none can be made up: the numbers are then not checked)."""
        module = self.imported.module
        main = module["main"]
        k = main.num_input
        weight_vars = weight_params(module)
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
                    self.weights_stored = True
                else:
                    made = sum(a.nbytes for a in runtime)
                    weights = _random_arrays(weight_vars, env, rng, made)
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
            self.weights_stored = True
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
                self.set_items[id(fn)] = lazy_ops(fn)[1]
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

    def _seed(self, run: Run, module: Module, fname: str, values: dict, params: dict) -> None:
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
            elif isinstance(node, FuncCall) and not isinstance(node, Loop) and node.func in module:
                args = [_known(a, values, params) for a in node.args]
                if all(a is not None for a in args):
                    v = self._call(run, module, node, args)
            if v is not None:
                values[node] = v
                self.seeded += 1

    def _call(self, run: Run, module: Module, node: FuncCall, args: list) -> Any:
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

    def _evaluate(self, run: Run, module: Module, fname: str, args: Sequence, fetch: Sequence):
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

    def run_module(self, module: Module) -> Run:
        run = Run()
        start = time.perf_counter()
        try:
            conv = run.convention = calling_convention(module)
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
            n = conv.entry_weights
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
    own_source = "the source is IR"  # why the imported step is the reference

    def _node_values(self) -> dict:
        """The imported step's node values, by provenance (the per-node reference)."""
        return _node_reference(self.imported.module["main"], self.cache.values)

    def _set_reference(self, import_run: Run) -> None:
        """Reference outputs, per-node reference values (FX node values by name for torch,
        else the imported step's values by provenance) and their description."""
        frontend = self.trace.frontend
        label = f"the imported step (#{self.imported.index} {self.imported.name})"
        ref = self.reference
        self.ref_outputs, ref.name = import_run.outputs, "the imported step"
        if import_run.outputs is not None:
            ref.node_values = self._node_values()
        if self.reference_kind == "import" or frontend not in ("torch", "onnx"):
            why = "as asked" if self.reference_kind == "import" else self.own_source
            ref.description = f"{label}, {why}"
            return
        if self.trace.source is None:  # a loaded trace: its file keeps no model to run
            self.notes.append(
                f"this trace was loaded from a file, which keeps no {frontend} model to run: "
                "the imported step is the reference (explore the model again to check against "
                f"{frontend})"
            )
            ref.description = f"{label}, as the trace keeps no {frontend} model"
            return
        try:
            if frontend == "torch":
                outputs, fx, how = _torch_reference(self.trace.source, self._all_inputs())
                self.ref_outputs, ref.fx_values = outputs, fx
                ref.name = "torch eager"
                ref.description = f"torch eager ({how})"
            else:
                self.ref_outputs = _onnx_reference(self.trace.source, self.runtime)
                ref.name = "onnxruntime"
                ref.description = "onnxruntime (CPUExecutionProvider)"
            ref.float64 = float64_reference(
                frontend, self.trace.source, self._all_inputs(), self.runtime
            )
            return
        except ImportError as e:
            reason = f"{e.name or e} is not installed"
        except Exception as e:  # the framework could not run the model: say so, go on
            reason = f"{type(e).__name__}: {e}"
        self.notes.append(f"the {frontend} reference could not run ({reason})")
        ref.description = f"{label}, as the {frontend} reference failed"

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
        job = Job(
            self.progress,
            "checking",
            len(steps),
            callback=lambda done, total, name: self.progress(order[done - 1].index, total, name),
        )
        try:
            for k, step in enumerate(order):
                job.advance(step.name)
                module = step.module
                if step.kind == "source":
                    checks[step.index] = StepCheck(step, "reference")
                elif step.failed:
                    checks[step.index] = self._detect(StepCheck(step, "failed"))
                elif module is None:
                    checks[step.index] = StepCheck(step, "not run")
                elif id(module) in self.results:  # shown by a step already run: reuse its results
                    status, max_abs, max_rel = self._numbers(self.results[id(module)])
                    first = first_step[id(module)]
                    checks[step.index] = StepCheck(
                        step,
                        status,
                        max_abs,
                        max_rel,
                        same_as=first.index,
                        rule=checks[first.index].rule,
                    )
                elif self.runtime is None:  # no inputs: only what needs no numbers
                    checks[step.index] = self._detect(StepCheck(step, "not run"))
                else:
                    first_step[id(module)] = step
                    checks[step.index] = self._check_step(step)
                    self._release(order, k, last_use)
        finally:
            job.close()
        used_note(self.reference, self.notes)
        return Report(
            self.trace,
            self.findings,
            [checks[s.index] for s in steps],
            self.reference.description,
            self.rtol,
            self.atol,
            sum(r.computed for r in self.results.values()),
            self.cache.hits - self.seeded,
            self.memo.hits,
            time.perf_counter() - start,
            self.notes,
            inputs=self._inputs_used(),
        )

    def _inputs_used(self) -> tuple | None:
        """The values the steps ran on, as ``check`` takes them: the runtime inputs, then the
        weights unless they are the module's own (None when the numbers were not checked)."""
        if self.runtime is None:
            return None
        weights = () if self.weights_stored else tuple(self.weights or ())
        return (*self.runtime, *weights)

    def _numbers(self, run: Run) -> tuple[str, float | None, float | None]:
        """Status, max abs and max rel error of a run against the reference outputs."""
        if run.error is not None:
            return "run-failed", None, None
        if self.ref_outputs is None or run.outputs is None:
            return "ok", None, None
        cmp = self._judge(run.judged if run.judged is not None else run.outputs)
        return ("diverged" if cmp.diverged else "ok"), cmp.max_abs, cmp.max_rel

    def _judge(self, outputs: tuple) -> _OutputsCompared:
        """Outputs against the reference: the tolerance, then the float64 rule (judge.py)."""
        f64 = self.reference.float64
        cmp = _judge_outputs(outputs, self.ref_outputs, f64, self.rtol, self.atol)
        failure_note(f64, self.notes)
        return cmp

    def _check_step(self, step: Step) -> StepCheck:
        """Run a step's module (new to this check) and record what it shows."""
        module = step.module
        before_mod = step.before if step.kind == "pass" else None
        before = self.results.get(id(before_mod)) if before_mod is not None else None
        generation = self._generation(before)
        run = self.run_module(module)
        run.generation = generation
        self.results[id(module)] = run
        if step is self.imported:
            self._set_reference(run)
        if run.error is None and self.ref_outputs is not None and isinstance(module, Module):
            run = self._retie(module, run)
            self.results[id(module)] = run
        cmp = None
        if run.error is None and self.ref_outputs is not None and run.outputs is not None:
            run.judged = self._untie(step, run.outputs)
            cmp = self._judge(run.judged)
        run.diverged = cmp is not None and cmp.diverged
        check = StepCheck(
            step,
            "run-failed" if run.error is not None else ("diverged" if run.diverged else "ok"),
            cmp.max_abs if cmp else None,
            cmp.max_rel if cmp else None,
            computed=run.computed,
            reused=run.reused,
            seconds=run.seconds,
            rule=cmp.rule if cmp is not None else "tolerance",
        )
        if run.error is None:
            check.layers = self._layers(module)
            failure_note(self.reference.float64, self.notes)
        return self._detect(check, run, before, cmp)

    def _generation(self, before: Run | None) -> int:
        """The memo generation of a step's run (values a pass rebuilt on the same inputs)."""
        return self.memo.start(before.generation if before is not None else None)

    def _layers(self, module: Module):
        """Per-layer errors for the error map (node values are released after this step)."""
        return self.layer_errors.of_step(module["main"], self.cache.values, self.reference)

    def _detect(
        self,
        check: StepCheck,
        run: Run | None = None,
        before: Run | None = None,
        compared: _OutputsCompared | None = None,
    ) -> StepCheck:
        """Hand what is known of a step to every registered detector; keep their findings."""
        step = check.step
        label = f"after {step.name}" if step.kind == "pass" else f"the import ({step.name})"
        facts = StepFacts(
            step,
            label,
            check,
            self.options,
            self.reference,
            run,
            before,
            compared,
            self.cache.values,
            self.state,
        )
        for kind in kinds():
            self.findings.extend(kind.detect(facts))
        return check

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


# ===== helpers ==================================================================================


def _run_order(steps: list[Step]) -> list[Step]:
    """Steps with every parent after its descendants (a nested pipeline's step shows what its
    last child made), otherwise in index order."""
    end: dict[int, int] = {}
    for s in reversed(steps):
        end[s.index] = max([s.index, *(end.get(c, c) for c in s.children)])
    return sorted(steps, key=lambda s: (end[s.index], -s.depth, s.index))


def _function_of(module: Module, node: Expr, default: str) -> str:
    """The name of the function of ``module`` that binds ``node``."""
    for name, fn in module.functions.items():
        if any(n is node for n in fn.iter_nodes()):
            return name
    return default


def _known(expr: Expr, values: dict, params: dict) -> Any:
    if isinstance(expr, Constant):
        return expr.data
    v = values.get(expr)
    return params.get(expr) if v is None else v


def _module_nodes(module: Module):
    for fn in module.functions.values():
        yield from fn.params
        yield from fn.iter_nodes()


_Checker = Checker  # the former name (branches that subclass it)
