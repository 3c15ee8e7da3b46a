"""Reducing a `diverged` finding of a TVM trace to a few Relax bindings and one pass.

The pass is the step's (a pass nested in a `Sequential` or another pass: the innermost
recorded one that changed the module and diverged), run again alone on the module it was
given, in the `PassContext` the pipeline ran in. It must be one that can be: the pass object
the pipeline held (a pipeline list's passes, a `Sequential`'s), or one TVM's API makes again
by its name (`tvm.relax.transform.FuseOps()`), and either must give the module the pass gave
in the pipeline; otherwise a `ReduceError` says why.

The reducer then cuts `main` (`explorer.tvm.cut`): for each depth (none, 1 to 4 levels of
producers, then all) and each binding of each block, the binding with its producers, the
values flowing in as inputs (their values from the trace's inputs: `main`'s parameters, the
earlier blocks' bindings read by one build of a probe), constants as weights. A cut the pass
leaves unchanged is passed over without a build; otherwise the cut and the pass's result are
built with `relax.build` and run in the VM, and the first whose outputs differ beyond the
check's tolerance is the reduction: a `explorer.tvm.repro.TVMReduction` (its TVMScript,
inputs, weights, the pass, `save` and `upstream_repro`).
"""

from __future__ import annotations

import contextlib
import importlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.reduce import NotReproducible, ReduceError
from explorer.reduce.repro import identifier

DEPTHS = (0, 1, 2, 3, 4, None)  # levels of producers kept above the binding (None: all)
KINDS = ("diverged",)  # the findings a pass's numbers make and a cut can show again
MAX_PROBE_BYTES = 1 << 30  # the binding values one probe build may return
# where TVM's API makes a pass of a recorded name: "tirx.X", "s_tir.X", or a plain name
API = {
    "tirx": ("tvm.tirx.transform",),
    "s_tir": ("tvm.s_tir.transform",),
    "": ("tvm.relax.transform", "tvm.ir.transform"),
}


@dataclass
class PassSpec:
    """The pass a reduction runs: `obj` (a `tvm.transform.Pass`), `api` (the dotted
    name that makes it again with no arguments, e.g. `tvm.relax.transform.FuseOps`, when
    TVM's API does), `python` (the object of a pass written in Python as a class, whose
    source a script can hold) and `why` (why a script can name it neither way)."""

    name: str
    obj: Any
    api: str | None = None
    python: Any = None
    why: str = ""


def reduce_tvm(report, finding=None, budget: float = 60.0, progress=None):
    """Reduce `finding` (the first failure by default, or its index) of a TVM trace's check
    `report` (see the module docstring)."""
    import tvm_ffi

    from explorer.tvm.cut import CutRefused, blocks, gv_name, make_cut, parse, producers
    from explorer.tvm.repro import TVMReduction
    from explorer.tvm.run import TVMRunner

    start = time.perf_counter()
    finding = _finding(report, finding)
    step = innermost(report, finding.step)
    before, after = step.before, step.module
    if getattr(before, "ir", None) is None or getattr(after, "ir", None) is None:
        raise ReduceError("a loaded TVM trace keeps no modules to run: explore it again")
    ir = before.ir
    if "main" not in [gv_name(gv) for gv in ir.get_global_vars()]:
        raise ReduceError(f"the module {step.name} was given has no @main to cut")
    context = dict(getattr(before.state, "context", None) or {})
    spec = runnable(step, before.state, context)
    runner = TVMRunner()
    main = ir["main"]
    values = _values(report, ir, main, runner)
    per_block = blocks(main)
    dataflow = [type(b).__name__ == "DataflowBlock" for b in main.body.blocks]
    values.update(_probe_values(ir, report, runner))
    total = sum(len(b) for b in per_block)
    seen: set = set()
    tried, refused = 0, ""
    for depth in DEPTHS:
        for bi, bindings in enumerate(per_block):
            for i in range(len(bindings)):
                if time.perf_counter() - start > budget:
                    raise NotReproducible(
                        f"no cut of the module {step.name} was given reproduced the finding "
                        f"within {budget:.0f} s ({tried} tried)"
                    )
                keep = producers(bindings, i, depth)
                if (bi, tuple(keep)) in seen:
                    continue
                seen.add((bi, tuple(keep)))
                try:
                    cut = make_cut(ir, bindings, keep, dataflow[bi], values)
                    cut.module = parse(cut)
                except CutRefused as e:
                    refused = str(e)
                    continue
                except Exception as e:  # noqa: BLE001 (TVM refusing a cut: the next one)
                    refused = f"{type(e).__name__}: {str(e).strip()[:200]}"
                    continue
                tried += 1
                moved = _moved(spec, cut, context, runner, report.rtol, report.atol, tvm_ffi)
                if moved is None:
                    continue
                return TVMReduction(
                    finding=finding,
                    step_name=step.name,
                    spec=spec,
                    script=cut.text,
                    inputs=cut.inputs,
                    weights=cut.weights,
                    bindings=(total, cut.bindings),
                    max_abs=moved,
                    tried=tried,
                    seconds=time.perf_counter() - start,
                    budget=budget,
                    rtol=report.rtol,
                    atol=report.atol,
                    context=context,
                )
    why = f" (the last cut refused: {refused})" if refused and not tried else ""
    raise NotReproducible(
        f"{step.name} run alone on cuts of the module it was given never changed the numbers "
        f"({tried} cut(s) built and run){why}: the finding needs more than the pass and its "
        "module"
    )


def _finding(report, finding):
    if isinstance(finding, int):
        finding = report.findings[finding]
    finding = finding if finding is not None else report.first_failure
    if finding is None:
        raise ReduceError("the check found nothing to reduce")
    if finding.kind not in KINDS:
        raise ReduceError(
            f"a TVM trace's {finding.kind} finding cannot be reduced: only a pass that changes "
            "the numbers (diverged) shows again on a cut"
        )
    if finding.step.kind != "pass":
        raise NotReproducible(f"the finding is at {finding.step.name}, not at a pass")
    return finding


def innermost(report, step):
    """The innermost pass under `step` that changed the module and diverged (`step`
    itself when no child of it did)."""
    status = {c.step.index: c.status for c in report.steps}
    steps = report.trace.steps
    while step.children:
        bad = [steps[i] for i in step.children if status.get(i) == "diverged" and steps[i].changed]
        if not bad:
            break
        step = bad[0]
    return step


def apply(p: Any, mod: Any, context: dict) -> Any:
    """`p` run on `mod` in a `PassContext` (and target) as the pipeline's."""
    import tvm

    args = {}
    if context.get("opt_level") is not None:
        args["opt_level"] = context["opt_level"]
    if context.get("config"):
        args["config"] = context["config"]
    with contextlib.ExitStack() as stack:
        if context.get("target") is not None:
            stack.enter_context(tvm.target.Target(context["target"]))
        stack.enter_context(tvm.transform.PassContext(**args))
        return p(mod)


def runnable(step, state, context: dict) -> PassSpec:
    """The pass of `step` as it can be run again alone, checked: run on the module it was
    given, it gives the module it gave in the pipeline. Tried in turn: TVM's API by the
    pass's name (a script names it), a pass class written in Python whose pass has that name
    (a script holds its source), the pipeline's own pass object (a script can hold neither).
    Raises `ReduceError` saying why when none gives that module."""
    import tvm_ffi

    name = str(step.name)
    before, after = step.before.ir, step.module.ir
    snapshot = getattr(step, "snapshot", None)
    recorded = (getattr(state, "passes", None) or {}).get(getattr(snapshot, "index", None))
    made = from_api(name)
    tries: list[tuple[str, Any]] = []
    if made is not None:
        tries.append((f"{made[0]}()", made[1]))
    tries += [(f"{c.__name__}() (a class written in Python)", c) for c in python_classes(name)]
    if recorded is not None:
        tries.append(("the pipeline's own pass object", recorded))
    reasons = []
    for what, p in tries:
        try:
            if isinstance(p, type):
                p = p()
            again = apply(p, before, context)
        except Exception as e:  # noqa: BLE001 (the pass failing alone: said below)
            reasons.append(f"{what} raised {type(e).__name__}: {str(e).strip()[:200]}")
            continue
        if not tvm_ffi.structural_equal(again, after):
            reasons.append(f"{what} run alone gives another module than it gave in the pipeline")
            continue
        if made is not None and p is made[1]:
            return PassSpec(name, p, api=made[0])
        inner = _python_object(p)
        why = (
            ""
            if inner is not None
            else f"{name!r} is not in TVM's public API under that name and was not written in "
            "Python as a class (a pass made from a function keeps no source a script can hold)"
        )
        return PassSpec(name, p, python=inner, why=why)
    if not tries:
        reasons.append(
            "another pass made and ran it (it is not a pass of the pipeline list or of a "
            "Sequential, whose objects the recording keeps), and neither TVM's API nor a pass "
            "class written in Python makes a pass of that name with no arguments"
        )
    raise ReduceError(f"{name} cannot be run again alone: " + "; ".join(reasons))


def python_classes(name: str) -> list[type]:
    """The pass classes written in Python (`@tvm.transform.module_pass` and its kin on a
    class: TVM wraps the class in a `Pass` subclass) whose pass is named `name`."""
    import tvm

    found, seen = [], set()
    todo = list(tvm.transform.Pass.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        todo.extend(cls.__subclasses__())
        if "_wrap_class" not in cls.__qualname__:
            continue
        for cell in getattr(cls.__init__, "__closure__", None) or ():
            try:
                info = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(info, tvm.transform.PassInfo) and str(info.name) == name:
                found.append(cls)
    return found


def from_api(name: str) -> tuple[str, Any] | None:
    """`(dotted name, pass)` when TVM's API makes a pass named `name` with no arguments
    (`"FuseOps"`: `tvm.relax.transform.FuseOps`; `"tirx.X"`: `tvm.tirx.transform.X`)."""
    import tvm

    ns, _, attr = name.rpartition(".")
    if not identifier(attr) or ns not in API:
        return None
    for module in API[ns]:
        try:
            make = getattr(importlib.import_module(module), attr, None)
            p = make() if callable(make) else None
        except Exception:  # noqa: BLE001 (no such pass, or one that needs arguments)
            continue
        if isinstance(p, tvm.transform.Pass) and str(p.info.name) == name:
            return f"{module}.{attr}", p
    return None


def _python_object(p: Any) -> Any:
    """The user's object behind a pass written in Python as a class (`@module_pass` on a
    class keeps it as `_inst`), or None."""
    try:
        inner = object.__getattribute__(p, "_inst")
    except AttributeError:
        return None
    return inner


def _inputs(report) -> tuple[list, list]:
    """The runtime inputs and the weights the check ran on (numpy)."""
    from explorer.check.numbers import to_numpy
    from explorer.tvm.check import imported_weights

    trace = report.trace
    weights = imported_weights(trace.imported.module)
    given = report.inputs if report.inputs is not None else trace.example_inputs
    if given is None:
        raise ReduceError("the check ran on no inputs: check the trace with its inputs first")
    given = list(given) if isinstance(given, (tuple, list)) else [given]
    if report.inputs is not None and weights and len(given) >= len(weights):
        given = given[: len(given) - len(weights)]  # the report's inputs end with the weights
    return [to_numpy(x) for x in given], weights


def _values(report, ir, main, runner) -> dict:
    """`main`'s parameters' values (tensors only) by variable id."""
    from explorer.tvm.cut import is_tensor
    from explorer.tvm.run import TVMRunError, to_numpy

    runtime, weights = _inputs(report)
    try:
        args = runner.arguments(ir, runtime, weights)
    except TVMRunError as e:
        raise ReduceError(
            f"@main of the module cannot be called with the trace's inputs: {e}"
        ) from None
    return {
        p.id_: np.asarray(to_numpy(a))
        for p, a in zip(main.params, args, strict=True)
        if is_tensor(p)
    }


def _probe_values(ir, report, runner) -> dict:
    """Every tensor binding's value of `main` on the trace's inputs, by variable id (one
    build of a probe module); none when the probe cannot be built or run (the cuts needing
    them are then passed over)."""
    from explorer.tvm.cut import probe

    runtime, weights = _inputs(report)
    try:
        mod, read = probe(ir)
        out = runner.run(mod, runtime, weights)
    except Exception:  # noqa: BLE001 (a module TVM cannot build so: cuts of block 0 remain)
        return {}
    values = out[0] if len(out) == 1 and isinstance(out[0], tuple) else out
    if sum(int(np.asarray(v).nbytes) for v in values) > MAX_PROBE_BYTES:
        return {}
    return {v.id_: np.asarray(a) for v, a in zip(read, values, strict=False)}


def _moved(spec, cut, context, runner, rtol, atol, tvm_ffi) -> float | None:
    """How far the pass moves the cut's outputs (max abs), or None when it leaves the cut
    unchanged, stays within tolerance, or the pass or a build fails (not this finding)."""
    from explorer.check.numbers import compare, leaves

    try:
        passed = apply(spec.obj, cut.module, context)
    except Exception:  # noqa: BLE001 (a cut the pass cannot take is not a reproduction)
        return None
    if tvm_ffi.structural_equal(passed, cut.module):
        return None
    inputs = [a for _, a in cut.inputs]
    try:
        want = leaves(runner.run(cut.module, inputs))
        got = leaves(runner.run(passed, inputs))
    except Exception:  # noqa: BLE001 (a module the VM cannot build or run)
        return None
    if len(got) != len(want) or any(
        np.shape(g) != np.shape(w) for g, w in zip(got, want, strict=False)
    ):
        return float("inf")
    worst, beyond = 0.0, 0
    for g, w in zip(got, want, strict=True):
        a, _, n = compare(np.asarray(g), np.asarray(w), rtol, atol)
        worst, beyond = max(worst, a), beyond + n
    return worst if beyond else None


__all__ = ["PassSpec", "apply", "from_api", "innermost", "reduce_tvm", "runnable"]
