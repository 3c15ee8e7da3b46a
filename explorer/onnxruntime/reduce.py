"""Reducing a `diverged` finding of an ONNX Runtime trace to the smallest ONNX model that
still shows it (the result and its upstream script: `explorer.onnxruntime.repro`).

The finding's step is run again alone on cuts of the model it was given
(`finding.step.before`):

* an onnxscript rule or pass, or a fusion of the transformers optimizer: the
  `explorer.onnxruntime.record.Replay` the recorder kept for the step
  (`trace.onnxruntime_replay`); the cut and the cut it rewrote both run in onnxruntime with
  its optimizations off;
* one of ORT's graph transformers (application `log_position` of the stage's log,
  `trace.onnxruntime`): sessions of the cut at the stage's level in one go, with every
  transformer first applied after that application disabled (as the step was rebuilt), and
  the same with that transformer disabled too, each against the cut with optimizations off.

A cut is the node making the value the finding names (its first per-node error whose value the
model before the step makes; else a graph output) with its producers up to a depth (0 to 4
levels, then all; a Constant node feeding a kept node is always kept). What flows in becomes a
graph input fed with the value the full model computes for it on the report's inputs (one run
in a child process with every value exposed, as the check runs a step), the named value is its
one output. The finding holds on a cut when the step moves the cut's output beyond the
report's tolerance and the cut itself agrees with the full model's value (so it is the same
bug); for an ORT transformer, also when the level in one go moves it and the step with its own
transformer disabled does not. The first depth that holds is then shrunk: a node is dropped
(its outputs become inputs, what fed only it goes too), nearest the output first, while the
finding holds; then an earlier value of the cut is tried as its output (the cone above it),
and the shrink runs again on the first that holds. When the budget is spent the smallest cut
so far is the result (`cut_short`).

Candidates run in this process (sessions of a few nodes take milliseconds; a child process
each would take a quarter of a second): a cut of the model computes a part of what the full
model computed in the check's child under its budget, on the same values.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any

import numpy as np

from explorer.check.numbers import compare
from explorer.reduce import NotReproducible, ReduceError
from explorer.reduce.errors import diverged_finding

DEPTHS = (0, 1, 2, 3, 4, None)  # levels of producers kept above the node (None: all)
TARGETS_TRIED = 8  # values the finding names, each tried at every depth
ERRORS_KEPT = 3  # why candidates could not run, the first few (for NotReproducible)


class _OutOfBudget(Exception):
    pass


# ===== the model as a graph of node indexes =====================================================


def node_reads(node: Any) -> list[str]:
    """The values a node reads: its inputs, and the values of the enclosing graph its
    subgraphs (If, Loop, Scan bodies) read."""
    names = [n for n in node.input if n]
    for attr in node.attribute:
        graphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
        for g in graphs:
            inner = {v.name for v in g.input} | {t.name for t in g.initializer}
            inner |= {o for n in g.node for o in n.output}
            names += [v for n in g.node for v in node_reads(n) if v not in inner]
    return names


class ModelGraph:
    """One ONNX model's nodes by index: what each reads, which node makes each value, the
    initializers and the graph inputs."""

    def __init__(self, model: Any):
        self.model = model
        self.nodes = list(model.graph.node)
        self.reads = [node_reads(n) for n in self.nodes]
        self.producer: dict[str, int] = {}
        for i, n in enumerate(self.nodes):
            for o in n.output:
                if o:
                    self.producer.setdefault(o, i)
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.inputs = [v.name for v in model.graph.input if v.name not in self.initializers]

    def is_constant(self, i: int) -> bool:
        """A node that reads nothing (Constant): kept with whatever reads it."""
        return not self.reads[i]

    def cone(self, target: int, depth: int | None, allowed: frozenset | None = None) -> frozenset:
        """`target` and its producers up to `depth` edges above it (None: all), within
        `allowed` when given, with the constants they read."""
        keep: set[int] = set()
        frontier = deque([(target, 0)])
        while frontier:
            i, d = frontier.popleft()
            if i in keep:
                continue
            keep.add(i)
            for v in self.reads[i]:
                p = self.producer.get(v)
                if p is None or p in keep or (allowed is not None and p not in allowed):
                    continue
                if self.is_constant(p):
                    keep.add(p)
                elif depth is None or d < depth:
                    frontier.append((p, d + 1))
        return frozenset(keep)


def build_cut(graph: ModelGraph, keep: frozenset, output: str, values: dict) -> Any:
    """`(ModelProto, input names)` of the nodes `keep` (in graph order) returning
    `output`: what they read from outside the cut becomes graph inputs typed as its value in
    `values` (initializers stay initializers); None when a value flowing in is not known."""
    import onnx
    from onnx import helper

    kept = sorted(keep)
    produced = {o for i in kept for o in graph.nodes[i].output if o}
    inputs: list[str] = []
    inits: list[str] = []
    seen: set[str] = set()
    for i in kept:
        for v in graph.reads[i]:
            if v in produced or v in seen:
                continue
            seen.add(v)
            if v in graph.initializers:
                inits.append(v)
            elif isinstance(values.get(v), np.ndarray):
                inputs.append(v)
            else:
                return None
    nodes = []
    for i in kept:
        node = onnx.NodeProto()
        node.CopyFrom(graph.nodes[i])
        node.ClearField("metadata_props")  # the exporter's stack traces: paths, not the bug
        node.ClearField("doc_string")
        nodes.append(node)
    want = values[output]
    inner = produced - {output}
    g = helper.make_graph(
        nodes,
        "reduced",
        [_value_info(v, values[v]) for v in inputs],
        [_value_info(output, want)],
        initializer=[graph.initializers[v] for v in inits],
        value_info=[vi for vi in graph.model.graph.value_info if vi.name in inner],
    )
    m = helper.make_model(
        g,
        opset_imports=list(graph.model.opset_import),
        ir_version=graph.model.ir_version,
        producer_name="passlens reduce",
    )
    ops = {(n.domain, n.op_type) for n in nodes}
    if any((f.domain, f.name) in ops for f in graph.model.functions):
        m.functions.extend(graph.model.functions)  # a function may call another: all of them
    return m, inputs


def _value_info(name: str, value: np.ndarray) -> Any:
    from onnx import TensorProto, helper

    dtype = TensorProto.STRING if value.dtype.kind in "OSU" else None
    if dtype is None:
        dtype = helper.np_dtype_to_tensor_dtype(value.dtype)
    return helper.make_tensor_value_info(name, dtype, list(value.shape))


# ===== running a cut =============================================================================


def run_session(model: bytes, feeds: dict, level: str = "off", disabled=()) -> np.ndarray:
    """The first output of `model` (serialized) in an onnxruntime session at `level` with
    `disabled` transformers off, in this process."""
    from explorer.onnxruntime.ort_steps import session

    sess = session(model, level, tuple(disabled))
    feed = {}
    for i in sess.get_inputs():
        if i.name not in feeds:
            raise ReduceError(f"the model asks for input {i.name[:80]!r}, which the cut lacks")
        feed[i.name] = feeds[i.name]
    return np.asarray(sess.run(None, feed)[0])


def differs(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> float | None:
    """The max abs difference when `got` differs from `want` beyond the tolerance (same
    shape), else None."""
    if got.shape != want.shape or got.dtype.kind in "OSU" or want.dtype.kind in "OSU":
        return None
    a, _, beyond = compare(got, want, rtol, atol)
    return a if beyond else None


def agrees(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether `got` has `want`'s shape and is within the tolerance of it."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if got.dtype.kind in "OSU":
        return bool(np.array_equal(got, want))
    return compare(got, want, rtol, atol)[2] == 0


class Transformation:
    """The finding's step as something to run on a cut: `moved(model, feeds, want)` is how
    far it moves the cut's output (max abs) when the finding holds on the cut, else None."""

    def __init__(self, kind: str, rtol: float, atol: float, replay=None, ort: dict | None = None):
        self.kind, self.rtol, self.atol = kind, rtol, atol
        self.replay = replay
        self.ort = ort or {}

    def moved(self, model: Any, feeds: dict, want: np.ndarray) -> float | None:
        data = model.SerializeToString()
        plain = run_session(data, feeds)
        if not agrees(plain, want, self.rtol, self.atol):
            return None  # the cut computes something else than the model: another bug
        if self.kind != "ort":
            after = self.replay(model).SerializeToString()
            return differs(run_session(after, feeds), plain, self.rtol, self.atol)
        level = self.ort["level"]
        if differs(run_session(data, feeds, level), plain, self.rtol, self.atol) is None:
            return None  # the level in one go gives the right numbers: nothing to report
        moved = differs(
            run_session(data, feeds, level, self.ort["disabled"]), plain, self.rtol, self.atol
        )
        if moved is None:
            return None
        without = run_session(data, feeds, level, self.ort["disabled_too"])
        return moved if agrees(without, plain, self.rtol, self.atol) else None


# ===== the search ================================================================================


class Search:
    """Cuts of one model tried against one transformation, within a time budget."""

    def __init__(self, graph, values, transformation, budget, start, progress):
        from explorer.progress import Job

        self.graph, self.values, self.transformation = graph, values, transformation
        self.start, self.budget = start, budget
        self.deadline = start + budget
        self.tried = 0
        self.errors: list[str] = []
        self.memo: dict[tuple, float | None] = {}
        self.phase, self.nodes = "cuts", None
        self.best: tuple[str, frozenset, float] | None = None  # the smallest that held
        self.callback = progress if callable(progress) else None
        total = round(budget) if math.isfinite(budget) else None
        self.job = Job(False if self.callback else progress, "reducing", total, unit="s")
        self.job.line = self.line

    def holds(self, keep: frozenset, output: str) -> float | None:
        key = (keep, output)
        if key not in self.memo:
            if time.perf_counter() > self.deadline:
                raise _OutOfBudget
            self.memo[key] = self._try(keep, output)
            self.tried += 1
            self.show()
        return self.memo[key]

    def _try(self, keep: frozenset, output: str) -> float | None:
        try:
            built = build_cut(self.graph, keep, output, self.values)
            if built is None:
                return None
            model, inputs = built
            feeds = {v: self.values[v] for v in inputs}
            return self.transformation.moved(model, feeds, self.values[output])
        except KeyboardInterrupt:
            raise
        except Exception as e:  # a cut the step or onnxruntime cannot take does not show it
            if len(self.errors) < ERRORS_KEPT:
                self.errors.append(f"{type(e).__name__}: {str(e)[:200]}")
            return None

    def first_cut(self, targets: list[str]) -> tuple[str, frozenset, float] | None:
        """The first (target, cut, moved) that holds: each target through every depth."""
        for output in targets:
            if output not in self.values:
                continue  # onnxruntime did not give it (the model ran with its outputs only)
            node = self.graph.producer[output]
            previous = None
            for depth in DEPTHS:
                keep = self.graph.cone(node, depth)
                if keep == previous:
                    break  # no producers left above: deeper cuts are the same
                previous = keep
                moved = self.holds(keep, output)
                if moved is not None:
                    self.best, self.nodes = (output, keep, moved), len(keep)
                    return self.best
        return None

    def shrink(self) -> None:
        """Drop nodes of the best cut while the finding holds (see the module docstring);
        `best` is the smallest so far whenever the budget stops it."""
        self.phase = "shrink"
        output, keep, _ = self.best
        target = self.graph.producer[output]
        changed = True
        while changed:
            changed = False
            for i in sorted(keep, reverse=True):
                if i == target or i not in keep or self.graph.is_constant(i):
                    continue
                trial = self.graph.cone(target, None, keep - {i})
                found = self.holds(trial, output)
                if found is not None:
                    keep, changed = trial, True
                    self.best, self.nodes = (output, keep, found), len(keep)

    def retarget(self) -> bool:
        """Try each earlier value of the best cut as its output, in graph order (the cone above
        it, within the cut): the first that holds becomes the best. Whether one did."""
        self.phase = "output"
        output, keep, _ = self.best
        target = self.graph.producer[output]
        for i in sorted(keep):
            if i == target or self.graph.is_constant(i):
                continue
            trial = self.graph.cone(i, None, keep)
            for o in self.graph.nodes[i].output:
                if o and self.graph.producer.get(o) == i and o in self.values:
                    found = self.holds(trial, o)
                    if found is not None:
                        self.best, self.nodes = (o, trial, found), len(trial)
                        return True
        return False

    # ----- progress ------------------------------------------------------------------------
    def status(self) -> dict:
        seconds = time.perf_counter() - self.start
        return {"phase": self.phase, "tried": self.tried, "nodes": self.nodes, "seconds": seconds}

    def show(self) -> None:
        status = self.status()
        if self.callback is not None:
            self.callback(status)
        else:
            self.job.note = self.text(status)
            self.job.show(min(int(status["seconds"]), self.job.total or 0), status["phase"])

    @staticmethod
    def text(status: dict) -> str:
        left = f", {status['nodes']} nodes left" if status["nodes"] is not None else ""
        return f"({status['phase']}) {status['tried']} cuts tried{left}"

    def line(self) -> str:
        return f"reducing {self.text(self.status())}, {self.status()['seconds']:.1f} s"


# ===== the reducer ===============================================================================


def pick_finding(report, finding) -> Any:
    """The finding to reduce: the first failure by default, or one by index."""
    return diverged_finding(
        report,
        finding,
        "an ONNX Runtime trace's",
        "a diverged step (a rewrite or transformer that changed the numbers)",
    )


def transformation_of(trace, step, rtol: float, atol: float) -> Transformation:
    """What the step did, as something to run again on a cut (a ReduceError when it cannot)."""
    from explorer.onnxruntime.ort_steps import disabled_after

    replay = (getattr(trace, "onnxruntime_replay", None) or {}).get(step.index)
    if replay is not None:
        return Transformation(replay.kind, rtol, atol, replay=replay)
    snapshot = step.snapshot
    options = snapshot.options if snapshot is not None else {}
    run = getattr(trace, "onnxruntime", None)
    if "log_position" in options and run is not None:
        position = int(options["log_position"])
        if not 0 <= position < len(run.applied):
            raise ReduceError(f"{step.name[:80]} names no application of ORT's log")
        name = run.applied[position][0]
        disabled = disabled_after(run.applied, position)
        ort = {
            "level": run.level,
            "name": name,
            "disabled": disabled,
            "disabled_too": sorted({*disabled, name}),
        }
        return Transformation("ort", rtol, atol, ort=ort)
    if step.kind != "pass" or snapshot is None or step.depth == 0:
        raise ReduceError(
            f"#{step.index} {step.name[:80]} is not one pass, rule, fusion or transformer "
            "application: reduce the finding of one of its steps"
        )
    raise ReduceError(
        f"#{step.index} {step.name[:80]} cannot be run again alone (a loaded trace keeps no "
        "rules, passes or ORT log: explore the model again)"
    )


def named_values(finding, after: Any, graph: ModelGraph) -> list[str]:
    """The values the finding's per-node errors name (in order) that the model before the
    step makes, then its graph outputs."""
    names: list[str] = []
    by_node: dict[str, list[str]] = {}
    values = set()
    for n in after.graph.node:
        outs = [o for o in n.output if o]
        values.update(outs)
        by_node.setdefault(n.name or (outs[0] if outs else n.op_type), outs)
    for e in (finding.details or {}).get("node_errors") or []:
        where = str(getattr(e, "where", ""))
        fits = [v for v in values if where == v or where.endswith(f" ({v})")]
        ref = getattr(getattr(e, "node", None), "name", None)
        own = [v for v in fits if v in by_node.get(ref, ())]
        for v in own or sorted(fits):
            if v in graph.producer and v not in names:
                names.append(v)
    names = names[:TARGETS_TRIED]
    for o in graph.model.graph.output:
        if o.name in graph.producer and o.name not in names:
            names.append(o.name)
    return names


def full_values(model: Any, inputs: list, graph: ModelGraph) -> dict[str, np.ndarray]:
    """Every value of `model` on `inputs`: its graph inputs, and each node's value from
    one run in a child process (outputs only when onnxruntime refuses them all exposed)."""
    from explorer.onnxruntime.check import run_model

    if len(inputs) != len(graph.inputs):
        raise ReduceError(
            f"the model before the step takes {len(graph.inputs)} input(s), the report ran "
            f"{len(inputs)}"
        )
    try:
        outputs, values = run_model(model, inputs, "the reducer's run of the model")
    except Exception as e:
        raise ReduceError(f"the model before the step cannot be run: {str(e)[:400]}") from None
    values = dict(values)
    for o, v in zip(model.graph.output, outputs, strict=False):
        values.setdefault(o.name, v)
    values.update({name: np.asarray(x) for name, x in zip(graph.inputs, inputs, strict=True)})
    return {k: v for k, v in values.items() if isinstance(v, np.ndarray)}


def reduce_onnxruntime(report, finding=None, budget: float = 60.0, progress=None):
    """Reduce `finding` (the first failure by default, or its index) of an ONNX Runtime
    trace's check `report` to the smallest ONNX model that still shows it (see the module
    docstring); an `explorer.onnxruntime.repro.ORTReduction`. Raises ReduceError for a
    finding of another kind or a step that cannot run again, NotReproducible when no cut
    shows it."""
    from explorer.check.numbers import to_numpy
    from explorer.onnxruntime.repro import ORTReduction, reduced_applications

    start = time.perf_counter()
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget >= 0:
        raise ReduceError(f"budget is a number of seconds (0 or more), not {budget!r:.40}")
    finding = pick_finding(report, finding)
    trace, step = report.trace, finding.step
    before, after = step.before, step.module
    if not getattr(before, "live", False) or not getattr(after, "live", False):
        raise ReduceError("a loaded ONNX Runtime trace keeps no models: explore the model again")
    if report.inputs is None:
        raise ReduceError("the report checked no numbers: check with inputs, then reduce")
    transformation = transformation_of(trace, step, float(report.rtol), float(report.atol))
    model = before.proto()
    graph = ModelGraph(model)
    inputs = [to_numpy(x) for x in report.inputs][: len(graph.inputs)]
    values = full_values(model, inputs, graph)
    targets = named_values(finding, after.proto(with_weights=False), graph)
    search = Search(graph, values, transformation, budget, start, progress)
    cut_short = False
    try:
        try:
            found = search.first_cut(targets)
        except _OutOfBudget:
            raise ReduceError(
                f"the budget of {budget:g} s was spent before a cut showed the finding "
                f"({search.tried} cut(s) tried): give more"
            ) from None
        if found is None:
            why = f"; errors: {'; '.join(search.errors)}" if search.errors else ""
            raise NotReproducible(
                f"{step.name[:80]} run alone on cuts of the model it was given never changed the "
                f"numbers ({search.tried} cut(s) tried){why}"
            )
        try:
            search.shrink()
            while search.retarget():
                search.shrink()
        except _OutOfBudget:
            cut_short = True
    finally:
        search.job.close()
    output, keep, moved = search.best
    reduced, names = build_cut(graph, keep, output, values)
    ort = transformation.ort
    return ORTReduction(
        finding=finding,
        step=step.name,
        kind=transformation.kind,
        model=reduced,
        inputs=[values[v] for v in names],
        output=output,
        nodes=(len(graph.nodes), len(reduced.graph.node)),
        max_abs=float(moved),
        rtol=float(report.rtol),
        atol=float(report.atol),
        tried=search.tried,
        seconds=time.perf_counter() - start,
        budget=budget,
        cut_short=cut_short,
        transformed=transformation.replay(reduced) if transformation.replay else None,
        level=ort.get("level", ""),
        transformer=ort.get("name", ""),
        applied=reduced_applications(reduced, ort.get("level")) if ort else [],
    )


__all__ = [
    "DEPTHS",
    "ModelGraph",
    "Search",
    "Transformation",
    "build_cut",
    "named_values",
    "node_reads",
    "pick_finding",
    "reduce_onnxruntime",
]
