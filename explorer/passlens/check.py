"""passlens's interpreter as the check's step runner (`explorer.check.runner.StepRunner`):
every step's module run by `compiler.evaluate` with one value cache for the whole trace (a
node several snapshots share is computed once), a memo for nodes a pass rebuilt around the very
same values (`memo.py`), per-node values kept for the per-node reference, the error map and
the judging of tied indices (`tie_judging.py`); values are dropped after the last step that
uses them. `PasslensAdapter.check` runs `Checker(trace, inputs, options, Interpreter())`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from compiler import (
    InterpretError,
    SharedCalls,
    ValueCache,
    bind_inputs,
    default_kernels,
    evaluate,
    sharing_calls,
    warm_up_kernels,
)
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
from explorer.check.facts import Run
from explorer.check.layer_errors import LayerErrors
from explorer.check.numbers import same_value, to_numpy
from explorer.check.random_inputs import random_arrays as _random_arrays
from explorer.check.references import node_reference
from explorer.check.report import CheckError
from explorer.check.runner import StepRunner
from explorer.passlens.memo import Memo, MemoHooks, call_arrays
from explorer.passlens.shared import ImportCalls
from explorer.passlens.tie_judging import TieJudging

if TYPE_CHECKING:
    from explorer.trace import Step


class Interpreter(TieJudging, StepRunner):
    """passlens's interpreter as a step runner (see the module docstring)."""

    own_source = "the source is IR"
    # a later step needs only the Run of the module its pass was given (values are computed
    # again from the inputs when the cache has dropped them)
    reuses_earlier_checks = True

    def __init__(self) -> None:
        self.tie_notes: set[str] = set()  # the notes on tied indices already made
        self.cache = ValueCache()
        self.memo = Memo()
        self.seeded = 0  # values put in the cache before a run (from the memo)
        self.callees: dict[Expr, tuple] = {}  # call node -> the callee functions its value used
        self.closures: dict[int, dict[str, tuple]] = {}
        self.set_items: dict[int, bool] = {}  # id(function) -> whether it calls set_item
        self.last_use: dict[int, list] = {}  # position -> the nodes last used there
        self.layer_errors: LayerErrors | None = None
        # the torch calls of the import's run, until torch's reference has taken what it can
        self.shared: SharedCalls | None = None

    # what the tie judging reads of the check
    @property
    def rtol(self) -> float:
        return self.check.rtol

    @property
    def atol(self) -> float:
        return self.check.atol

    @property
    def notes(self) -> list[str]:
        return self.check.notes

    @property
    def reference(self):
        return self.check.reference

    @property
    def ref_outputs(self) -> tuple | None:
        return self.check.ref_outputs

    def run_module(self, module: Module) -> Run:
        return self.run(module)

    # ----- inputs ----------------------------------------------------------------------------
    def prepare(self, inputs) -> tuple[list | None, list | None]:
        """The runtime inputs and the weights @main's parameters take (None, None when no
        inputs were given and none can be made up: the numbers are then not checked)."""
        module = self.check.imported.module
        main = module["main"]
        k = main.num_input
        weight_vars = weight_params(module)
        stored = {c.name: c.data for c in module.attrs.get("param_values", ())}
        if inputs is None:
            inputs = self.check.trace.example_inputs
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
                self.check.notes.append(f"numbers not checked: {e}")
                return None, None
            sizes = ", ".join(f"{name} = {n}" for name, n in sorted(env.items()))
            what = "inputs" if len(weights) == 0 or stored else "inputs and weights"
            self.check.notes.append(
                f"{what}: random (seed 0) from the signature"
                + (f" with {sizes}" if sizes else "")
                + "; none were given"
            )
            return runtime, weights
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        arrays = [to_numpy(x) for x in inputs]
        runtime, weights = arrays[:k], arrays[k:]
        if len(runtime) < k:
            raise CheckError(f"@main takes {k} runtime input(s), {len(arrays)} given")
        try:  # before anything runs: otherwise every step reads "run-failed", like a bad import
            bind_inputs(main.params[:k], runtime)
        except InterpretError as e:
            raise CheckError(
                f"these inputs do not match the ones the trace was recorded with: {e}; check "
                "with inputs of the recorded shapes and dtypes, or explore the model again "
                "with these"
            ) from None
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
        """Whether a function of `closure` calls set_item (whose callback must see every
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
            if old is not None and old is not a and not same_value(old, a):
                stale.add(id(p))
                del values[p]

        def visit(bindings) -> None:
            for node in bindings:
                if isinstance(node, If):
                    visit(node.then_branch.bindings)
                    visit(node.else_branch.bindings)
                bad = bool(stale) and any(id(c) in stale for c in children(node))
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

    def _seed(
        self, run: Run, module: Module, fname: str, values: dict, params: dict, seeded: set
    ) -> None:
        """Put in `values` what the memo already knows for the bindings of `fname`, in
        order (a call of another function is run here, through the memo, when its arguments
        are known); the ids of the nodes seeded go to `seeded`."""
        memo = self.memo
        empty = not memo.entries  # (the import's run: no op call can be found)
        for node in module[fname].bindings:
            if node in values:
                continue
            v = None
            if isinstance(node, Call):
                if empty or node.op in SIDE_EFFECT_OPS:
                    continue
                arrays = call_arrays(node, values, params)
                v = memo.find(node, arrays) if arrays is not None else None
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
                seeded.add(id(node))
                self.seeded += 1

    def _call(self, run: Run, module: Module, node: FuncCall, args: list) -> Any:
        """The value of a call of another function, its body run through the memo."""
        callee = module[node.func]
        sub = ValueCache()
        params = dict(zip(callee.params, args, strict=False))
        seeded, found = self.seeded, set()
        self._seed(run, module, node.func, sub.values, params, found)
        if len(found) == len(callee.bindings) and len(args) == len(callee.params):
            # every binding found: nothing to run but the inputs' check evaluate makes
            arrays, _ = bind_inputs(callee.params, args, node.func)
            self.seeded = seeded
            for p, a in zip(callee.params, arrays, strict=True):
                sub.bind(p, a)
            out = callee.output
            v = out.data if isinstance(out, Constant) else sub.values.get(out)
            if v is not None:
                return tuple(v) if isinstance(out.ty, TupleType) else v
        ev = evaluate(module, args, function=node.func, cache=sub, check_types=True)
        run.computed += sub.misses
        self.seeded = seeded  # hits inside the callee are not hits of the shared cache
        run.mismatches.extend((m, node.func) for m in ev.mismatches)
        self._remember(module, node.func, sub.values, params, found)
        return ev.outputs if isinstance(callee.output.ty, TupleType) else ev.outputs[0]

    def _remember(self, module: Module, fname: str, values: dict, params: dict, known: set) -> None:
        """Put the op call values of `fname` in the memo (kept for the next step), but for
        the nodes in `known` (ids), whose entries this run already made or used."""
        for node in module[fname].bindings:
            if id(node) in known:
                continue
            if isinstance(node, Call) and node.op not in SIDE_EFFECT_OPS:
                v = values.get(node)
                if isinstance(v, np.ndarray):
                    arrays = call_arrays(node, values, params)
                    made = self.memo.key_of(node, arrays) if arrays is not None else None
                    if made is not None:
                        self.memo.put(node, made[1], v, (), made[0])

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
        hooks = MemoHooks(self.memo)
        found: set[int] = set()
        with lazy_callbacks(get_item=get_item, set_item=set_item):
            seeded = self.seeded
            self._seed(run, module, fname, self.cache.values, params, found)
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
        self._remember(module, fname, self.cache.values, params, found | hooks.handled)
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

    def warm_up(self) -> None:
        """torch's kernels loaded before the first step runs (a phase of the check's progress:
        importing torch takes 1-2 s when the source was no torch model)."""
        if default_kernels() == "torch":
            self.check.phase("warming up torch's kernels")
            warm_up_kernels()

    def run(self, module: Module) -> Run:
        shared = None
        if module is self.check.imported.module and self._shares_calls():
            shared = self.shared = SharedCalls()
        with sharing_calls(shared):
            return self._module_run(module)

    def _shares_calls(self) -> bool:
        """Whether the import's torch calls are kept for torch's reference to take: a torch
        model's trace (not a program read from a file) checked with torch's kernels."""
        source = self.check.trace.source
        return (
            self.check.trace.frontend == "torch"
            and isinstance(source, dict)
            and source.get("exported") is not None
            and not source.get("untrusted_program")
            and default_kernels() == "torch"
        )

    def reference_calls(self) -> ImportCalls | None:
        shared, self.shared = self.shared, None
        if shared is None or not len(shared):
            return None
        return ImportCalls(shared, self.check.imported.module["main"], self.cache.values)

    def after_step(self, step: Step, run: Run | None) -> None:
        self.shared = None  # (taken by the reference, or none was made)

    def _module_run(self, module: Module) -> Run:
        run = Run()
        start = time.perf_counter()
        try:
            conv = run.convention = calling_convention(module)
            weights = self.check.weights
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
            args = [*self.check.runtime, *(weights if n else ())]
            run.outputs = tuple(self._evaluate(run, module, "main", args, weights))
        except (InterpretError, CheckError) as e:
            run.error = e
            run.error_node = getattr(e, "node", None)
        except Exception as e:  # a step that cannot be computed is a finding, never a crash
            run.error = InterpretError(f"{type(e).__name__}: {str(e)[:500]}")
            run.error_node = None
        run.seconds = time.perf_counter() - start
        return run

    # ----- the hooks --------------------------------------------------------------------------
    def node_values(self) -> dict:
        """The imported step's node values, by provenance (the per-node reference)."""
        return node_reference(self.check.imported.module["main"], self.cache.values)

    def generation(self, before: Run | None) -> int:
        """The memo generation of a step's run (values a pass rebuilt on the same inputs)."""
        return self.memo.start(before.generation if before is not None else None)

    def retie(self, step: Step, run: Run) -> Run:
        if not isinstance(step.module, Module):
            return run
        return self._retie(step.module, run)

    def judged(self, step: Step, outputs: tuple) -> tuple:
        return self._untie(step, outputs)

    def values(self) -> dict:
        return self.cache.values

    def layers(self, module: Module):
        """Per-layer errors for the error map (node values are released after this step)."""
        if self.layer_errors is None:
            self.layer_errors = LayerErrors(self.rtol, self.atol)
        return self.layer_errors.of_step(module["main"], self.cache.values, self.reference)

    def reuse(self) -> tuple[int, int]:
        return self.cache.hits - self.seeded, self.memo.hits

    # ----- memory -------------------------------------------------------------------------------
    def plan(self, order: list[Step]) -> None:
        """For every position in `order`: the nodes no later step's module has (`release`
        drops their values after it)."""
        first: dict[int, int] = {}  # id(module) -> the first position running it
        for k, step in enumerate(order):
            m = step.module
            if m is not None and not step.failed and id(m) not in first:
                first[id(m)] = k
        self.last_use = {}
        seen: set[int] = set()  # ids of the nodes of the modules after (walked last first)
        for k in reversed(first.values()):
            last = [n for n in _module_nodes(order[k].module) if id(n) not in seen]
            seen.update(map(id, last))
            self.last_use[k] = last

    def release(self, order: list[Step], k: int) -> None:
        values = self.cache.values
        for node in self.last_use.pop(k, ()):
            values.pop(node, None)


def check_passlens(trace: Any, inputs: Any, options: Any) -> Any:
    """`explorer.check.check` for a trace of passlens's own compiler."""
    from explorer.check.runner import Checker

    return Checker(trace, inputs, options, Interpreter()).run()


# ===== helpers ==================================================================================


def _function_of(module: Module, node: Expr, default: str) -> str:
    """The name of the function of `module` that binds `node`."""
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


__all__ = ["Interpreter", "check_passlens"]
