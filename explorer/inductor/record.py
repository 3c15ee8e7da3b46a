"""Recording torch.compile: a Dynamo backend that runs Inductor with its pass boundaries
wrapped.

Inside `Recorder.patched` (a context manager that restores everything it replaced):

- the backend (`Recorder.backend`) sees every FX graph Dynamo makes: one per graph
  break, one per recompile, each named by its frame (`dynamo 0/1 forward (model.py:12)`:
  Dynamo's compile id `frame/recompile`, the code's name, its file and line);
- `torch._inductor.compile_fx`'s `_recursive_pre_grad_passes`,
  `_recursive_joint_graph_passes` and `_recursive_post_grad_passes` become the group
  steps `pre-grad passes`, `joint-graph passes` and `post-grad passes`;
  `compile_fx_forward` is where AOTAutograd hands its forward graph to Inductor (the
  `aot-autograd` step); `view_to_reshape`, which Inductor runs on that graph between
  the joint-graph and the post-grad passes, is a step of its own (`view_to_reshape`), and a
  change to a graph that no step made, or a group handed a graph no step shows, is an
  `outside Inductor's passes` step: every group and pass has a step to be compared with;
- `torch.fx`'s `GraphTransformObserver` (which every Inductor FX pass runs through) gives
  each pass application its step, named by the pass (a custom pass from
  `torch._inductor.config` by its class);
- the pattern matcher's entries (`ReplacementPatternEntry` / `GraphPatternEntry` /
  `LoweringPatternEntry`) give each replacement its step, named by its pattern, and a
  rewrite (`step.rewrites`: the pattern, the FX nodes it matched and those it added) on
  that step and on the pass that ran the pattern matcher;
- `torch._inductor.debug.log_ir_pre_fusion` / `log_ir_post_fusion` and
  `GraphLowering._compile_to_module` give the scheduler's IR before and after fusion and
  the output code (the `inductor codegen` step's texts).

A step's graph is copied only when the pass changed it (a fingerprint of names, ops, targets
and inputs before and after): an unchanged pass shares the module it was given.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from compiler.frontend import source_location
from compiler.passes import Snapshot
from explorer.inductor.fxgraph import (
    copy_graph,
    fingerprint,
    graph_signature,
    make_rewrite,
    pass_label,
    pattern_label,
    same,
)
from explorer.inductor.module import FXModule, FXState


@dataclass
class GraphRecord:
    """One FX graph Dynamo handed the backend, and what Inductor made of it."""

    index: int
    compile_id: str
    code: str
    location: str
    reason: str  # why the graph ends here (a graph break's reason) or why it was recompiled
    dynamo: FXModule | None = None
    signature: tuple = ()  # (op, name) of every node of Dynamo's graph: matches a replay's
    compiled: Any = None  # the callable Inductor returned (Dynamo's calling convention)
    texts: dict[str, str] = field(default_factory=dict)
    step: int = 0  # the index of its import step
    aot_step: int | None = None
    codegen_step: int | None = None

    @property
    def label(self) -> str:
        """`dynamo 0/0 forward (model.py:12)`."""
        return f"dynamo {self.compile_id} {self.code} ({self.location})"


@dataclass
class ImportItem:
    """A Dynamo graph as the first step of its pipeline (an `import` step of the trace)."""

    name: str
    module: FXModule
    seconds: float
    graph: GraphRecord


@dataclass
class _Open:
    index: int
    gm: Any
    start: float
    kind: str  # "group", "observer", "pattern", "stage"


class Recorder:
    """Records one `explore`: the steps of every FX graph Inductor compiles."""

    def __init__(self, state: FXState, job: Any = None, model: Any = None):
        self.state = state
        forward = getattr(type(model), "forward", model)
        self.root_code = getattr(forward, "__code__", None)  # the model's own frame
        self.job = job
        self.items: list[Snapshot | ImportItem] = []
        self.graphs: list[GraphRecord] = []
        self.stack: list[_Open] = []
        self.latest: dict[int, tuple[tuple, FXModule]] = {}  # id(live gm) -> its last copy
        self.alive: list[Any] = []  # the live GraphModules whose ids key ``latest``
        self.graph: GraphRecord | None = None  # the graph being compiled
        self.level = "dynamo"
        self.group_end = 0.0  # when the last group step closed (AOTAutograd's start)
        self.copies = 0
        self.recording = False  # inside ``patched``
        self.custom_passes: dict[int, Any] = {}  # step index -> the custom pass it ran

    # ----- modules --------------------------------------------------------------------------
    def wrap(self, gm: Any) -> FXModule:
        """The module showing `gm` as it is now: its last copy when unchanged since, else a
        new copy."""
        fp = fingerprint(gm.graph)
        found = self.latest.get(id(gm))
        if found is not None and same(found[0], fp):
            return found[1]
        graph, attrs = copy_graph(gm)
        self.copies += 1
        index = self.graph.index if self.graph is not None else 0
        module = FXModule(graph, attrs, self.state, level=self.level, graph_index=index)
        self.latest[id(gm)] = (fp, module)
        self.alive.append(gm)
        return module

    # ----- steps ------------------------------------------------------------------------------
    def open(self, name: str, spec: str, gm: Any, kind: str) -> int:
        parent = self.stack[-1].index if self.stack else None
        snap = Snapshot(
            index=len(self.items),
            pass_name=name,
            spec=spec,
            options={},
            depth=len(self.stack),
            parent=parent,
            before=self.wrap(gm),
        )
        if parent is not None:
            self.items[parent].children.append(snap.index)
        self.items.append(snap)
        if self.job is not None:
            self.job.advance(name)
        self.stack.append(_Open(snap.index, gm, time.perf_counter(), kind))
        return snap.index

    def close(self, gm: Any = None, error: BaseException | None = None) -> None:
        op = self.stack.pop()
        snap = self.items[op.index]
        snap.seconds = time.perf_counter() - op.start
        if error is not None:
            snap.error = error
            snap.traceback = "".join(traceback.format_exception(error))
            return
        snap.module = self.wrap(gm if gm is not None else op.gm)
        if op.kind == "pattern" and snap.module is snap.before and not snap.children:
            self._drop(snap)  # a pattern whose replacement changed nothing: no step
            return
        if op.kind == "group":
            self.group_end = time.perf_counter()

    def _drop(self, snap: Snapshot) -> None:
        """Forget the last step (nothing was recorded after it)."""
        assert self.items[-1] is snap
        self.items.pop()
        if snap.parent is not None:
            self.items[snap.parent].children.remove(snap.index)

    def fail_open(self, error: BaseException) -> None:
        """Every step still open failed with `error` (it left a pass)."""
        while self.stack:
            self.close(error=error)

    @contextlib.contextmanager
    def step(self, name: str, spec: str, gm: Any, kind: str):
        """Record what runs inside as one step (`result` set by the caller when the pass
        returns a new GraphModule)."""
        box: dict = {}
        self.open(name, spec, gm, kind)
        try:
            yield box
        except BaseException as e:
            self.close(error=e)
            raise
        self.close(box.get("result", gm))

    # ----- the backend ---------------------------------------------------------------------------
    def backend(self, gm: Any, example_inputs: list) -> Any:
        """The Dynamo backend: record Dynamo's graph, compile it with Inductor (recorded)."""
        from torch._inductor.compile_fx import compile_fx

        if not self.recording:  # the compiled model recompiling after explore: no steps
            return compile_fx(gm, example_inputs)
        record = self._begin_graph(gm, example_inputs)
        try:
            compiled = compile_fx(gm, example_inputs)
        except BaseException as e:
            self.fail_open(e)
            self.graph = None
            raise
        record.compiled = compiled
        self._codegen(record)
        self.graph = None
        return compiled

    def _begin_graph(self, gm: Any, example_inputs: list) -> GraphRecord:
        from torch._guards import CompileContext, TracingContext

        start = time.perf_counter()
        compile_id = str(CompileContext.current_compile_id() or len(self.graphs))
        code, location, reason = "<frame>", "?", ""
        tc = TracingContext.try_get()
        traced = list(getattr(tc, "traced_code", None) or [])
        if traced:
            c = traced[0]  # the frame Dynamo compiled; a wrapper of Dynamo's: the model's code
            if _is_dynamo(c):
                own = [t for t in traced if not _is_dynamo(t)]
                c = self.root_code if self.root_code in traced else (own or traced)[0]
            code = c.co_name
            at = source_location(c.co_filename, c.co_firstlineno)  # a cell's: In[5]:12
            location = f"{os.path.basename(c.co_filename)}:{c.co_firstlineno}" if "/" in at else at
            reason = _recompile_reason(c)
        why = getattr(gm, "compile_subgraph_reason", None)
        if why is not None and getattr(why, "graph_break", False):
            first = str(getattr(why, "reason", "")).strip().splitlines()
            brk = f"graph break: {first[0] if first else 'unknown reason'}"
            reason = f"{reason}; {brk}" if reason else brk
        record = GraphRecord(len(self.graphs), compile_id, code, location, reason)
        self.graphs.append(record)
        self.graph = record
        self.level = "dynamo"
        self._learn_weights(record, gm, example_inputs)
        module = self.wrap(gm)
        record.dynamo = module
        record.signature = graph_signature(gm.graph)
        record.step = len(self.items)
        self.items.append(ImportItem(record.label, module, time.perf_counter() - start, record))
        if self.job is not None:
            self.job.advance(record.label)
        self.group_end = time.perf_counter()
        return record

    def _learn_weights(self, record: GraphRecord, gm: Any, example_inputs: list) -> None:
        import torch

        tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        weights: list = []
        names: list[str] = []
        for n, x in zip(placeholders, example_inputs, strict=False):
            if not isinstance(x, torch.Tensor):
                continue
            names.append(str(n.target))
            source = str(getattr(n.meta.get("grapharg"), "source", ""))
            is_weight = isinstance(x, torch.nn.Parameter) or id(x) in self.state.param_names
            is_weight = is_weight or "_parameters" in source or "_buffers" in source
            weights.append(x if is_weight else None)
        if len(weights) == len(tensors):
            self.state.graph_weights[record.index] = weights
            self.state.graph_inputs[record.index] = names

    def _aot(self, gm: Any) -> None:
        """AOTAutograd's forward graph reaches Inductor: the `aot-autograd` step."""
        record = self.graph
        if record is None or record.aot_step is not None:
            return
        before = self.latest.get(id(self._dynamo_gm)) if self._dynamo_gm is not None else None
        before_module = before[1] if before is not None else record.dynamo
        self.level = "aten"
        snap = Snapshot(
            index=len(self.items),
            pass_name="aot-autograd",
            spec="aot-autograd",
            options={},
            depth=0,
            parent=None,
            before=before_module,
        )
        snap.module = self.wrap(gm)
        snap.seconds = time.perf_counter() - self.group_end
        self.items.append(snap)
        record.aot_step = snap.index
        if self.job is not None:
            self.job.advance("aot-autograd")

    def _codegen(self, record: GraphRecord) -> None:
        last = self._last_module(record)
        snap = Snapshot(
            index=len(self.items),
            pass_name="inductor codegen",
            spec="inductor codegen",
            options={},
            depth=0,
            parent=None,
            before=last,
        )
        texts = {k: record.texts[k] for k in _TEXTS if k in record.texts}
        snap.module = FXModule(
            last.graph,
            last.attrs,
            self.state,
            level=last.level,
            graph_index=record.index,
            extra_texts=texts or {"output code": "# Inductor wrote no output code\n"},
        )
        snap.seconds = time.perf_counter() - self.group_end
        self.items.append(snap)
        record.codegen_step = snap.index

    def _last_module(self, record: GraphRecord) -> FXModule:
        for item in reversed(self.items):
            if isinstance(item, ImportItem):
                return item.module
            if item.module is not None and item.depth == 0:
                return item.module
        return record.dynamo

    # ----- the patches ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def patched(self):
        """Wrap Inductor's pass boundaries (restored on exit, whatever happens)."""
        undo: list[tuple[Any, str, Any]] = []

        def patch(owner: Any, name: str, make) -> None:
            old = getattr(owner, name)
            undo.append((owner, name, old))
            setattr(owner, name, make(old))

        cfx = importlib.import_module("torch._inductor.compile_fx")
        debug = importlib.import_module("torch._inductor.debug")
        graph_mod = importlib.import_module("torch._inductor.graph")
        pm = importlib.import_module("torch._inductor.pattern_matcher")
        gto = importlib.import_module("torch.fx.passes.graph_transform_observer")
        self._dynamo_gm = None
        try:
            patch(cfx, "_recursive_pre_grad_passes", self._pre_grad)
            patch(cfx, "_recursive_joint_graph_passes", self._group("joint-graph passes"))
            patch(cfx, "_recursive_post_grad_passes", self._group("post-grad passes"))
            patch(cfx, "compile_fx_forward", self._forward)
            patch(cfx, "view_to_reshape", self._stage(VIEW_TO_RESHAPE))
            observer = gto.GraphTransformObserver
            patch(observer, "apply_graph_pass", self._observer_apply)
            patch(observer, "apply_gm_pass", self._observer_apply)
            patch(observer, "__enter__", self._observer_enter)
            patch(observer, "__exit__", self._observer_exit)
            for cls in (pm.ReplacementPatternEntry, pm.GraphPatternEntry, pm.LoweringPatternEntry):
                patch(cls, "apply", self._pattern)
            patch(debug, "log_ir_pre_fusion", self._text_hook("scheduler IR (before fusion)"))
            patch(debug, "log_ir_post_fusion", self._text_hook("scheduler IR (after fusion)"))
            patch(graph_mod.GraphLowering, "_compile_to_module", self._output_code)
            self.recording = True
            yield self
        finally:
            self.recording = False
            for owner, name, old in reversed(undo):
                setattr(owner, name, old)

    def _active(self) -> bool:
        return self.graph is not None

    def _pre_grad(self, old):
        def wrapper(gm, example_inputs, *args, **kwargs):
            if not self._active() or self.stack:
                return old(gm, example_inputs, *args, **kwargs)
            self._dynamo_gm = gm
            with self.step("pre-grad passes", "pre-grad passes", gm, "group") as box:
                box["result"] = result = old(gm, example_inputs, *args, **kwargs)
            self._dynamo_gm = result
            return result

        return wrapper

    def _group(self, name: str):
        def make(old):
            def wrapper(gm, *args, **kwargs):
                if not self._active() or any(o.kind == "group" for o in self.stack):
                    return old(gm, *args, **kwargs)
                self._aot(gm)  # the first ATen graph Inductor sees is AOTAutograd's
                self._catch_up(gm)
                with self.step(name, name, gm, "group") as box:
                    result = old(gm, *args, **kwargs)
                    if result is not None:
                        box["result"] = result
                return result

            return wrapper

        return make

    def _stage(self, name: str):
        """A function Inductor runs on a graph outside its passes (`view_to_reshape` before
        the post-grad passes): a step of its own."""

        def make(old):
            def wrapper(gm, *args, **kwargs):
                if not self._active():
                    return old(gm, *args, **kwargs)
                with self.step(name, name, gm, "stage"):
                    return old(gm, *args, **kwargs)

            return wrapper

        return make

    def _catch_up(self, gm: Any) -> None:
        """Before a stage's group step: when `gm` is not the graph the last stage showed
        (Inductor changed it outside any recorded step, or handed the group a graph no step
        showed), an `outside Inductor's passes` step from that stage's graph to `gm`, so
        the group and its first pass have a step to be compared with."""
        record = self.graph
        if record is None or self.stack:
            return
        last = self._last_module(record)
        module = self.wrap(gm)
        if module is last:
            return
        snap = Snapshot(
            index=len(self.items),
            pass_name=OUTSIDE,
            spec=OUTSIDE,
            options={},
            depth=0,
            parent=None,
            before=last,
        )
        snap.module = module
        snap.seconds = time.perf_counter() - self.group_end
        self.items.append(snap)
        if self.job is not None:
            self.job.advance(OUTSIDE)

    def _forward(self, old):
        def wrapper(gm, *args, **kwargs):
            if self._active():
                self._aot(gm)
            return old(gm, *args, **kwargs)

        return wrapper

    def _observer_apply(self, old):
        def wrapper(obs, pass_fn):
            obs._passlens_pass = pass_fn  # what __enter__ names the step after
            try:
                return old(obs, pass_fn)
            finally:
                obs._passlens_pass = None

        return wrapper

    def _observer_enter(self, old):
        def wrapper(obs):
            result = old(obs)
            obs._passlens_open = False
            top = self.stack[-1] if self.stack else None
            nested = top is not None and top.kind in ("observer", "pattern") and top.gm is obs.gm
            if self._active() and not nested:
                name = str(obs.passname)
                fn = getattr(obs, "_passlens_pass", None)
                custom = "custom" in name and fn is not None
                if custom:
                    name, spec = pass_label(fn), f"{obs.passname}={pass_label(fn)}"
                else:
                    spec = f"{obs.subsystem}/{name}" if obs.subsystem else name
                index = self.open(name, spec, obs.gm, "observer")
                if custom:  # a pass of the user's: it can be run again alone (reduce)
                    self.custom_passes[index] = fn
                obs._passlens_open = True
            return result

        return wrapper

    def _observer_exit(self, old):
        def wrapper(obs, exc_type, exc, tb):
            if getattr(obs, "_passlens_open", False):
                obs._passlens_open = False
                self.close(obs.gm, error=exc if exc is not None else None)
            return old(obs, exc_type, exc, tb)

        return wrapper

    def _pattern(self, old):
        def wrapper(entry, match, graph, node):
            gm = getattr(graph, "owning_module", None)
            if not self._active() or gm is None:
                return old(entry, match, graph, node)
            name = pattern_label(entry)
            index, before = len(self.items), set(graph.nodes)
            matched = [node.name] + [
                n.name for n in getattr(match, "nodes", ()) or () if n is not node
            ]
            with self.step(f"pattern {name}", f"pattern {name}", gm, "pattern"):
                result = old(entry, match, graph, node)
            if index < len(self.items):  # a step: the replacement changed the graph
                self._rewrite(index, make_rewrite(name, matched, graph, before))
            return result

        return wrapper

    def _rewrite(self, index: int, rewrite: Any) -> None:
        """Record a replacement on its own step and on the pass that ran the pattern matcher
        (the innermost open step that is not a replacement)."""
        owners = [self.items[index]]
        outer = next((o for o in reversed(self.stack) if o.kind != "pattern"), None)
        if outer is not None:
            owners.append(self.items[outer.index])
        for snap in owners:
            snap.rewrites = (*snap.rewrites, rewrite)

    def _text_hook(self, key: str):
        def make(old):
            def wrapper(nodes, *args, **kwargs):
                result = old(nodes, *args, **kwargs)
                if self._active():
                    from torch._inductor.debug import DebugFormatter

                    try:
                        self.graph.texts[key] = DebugFormatter._write_ir(nodes)
                    except Exception as e:  # a text Inductor cannot write is not a crash
                        self.graph.texts[key] = f"# not available: {type(e).__name__}: {e}\n"
                return result

            return wrapper

        return make

    def _output_code(self, old):
        def wrapper(lowering, *args, **kwargs):
            mod = old(lowering, *args, **kwargs)
            if self._active():
                try:
                    with open(mod.__file__, encoding="utf-8") as f:
                        self.graph.texts["output code"] = f.read()
                except (OSError, TypeError, AttributeError) as e:
                    self.graph.texts["output code"] = f"# not available: {e}\n"
            return mod

        return wrapper


#: the step of Inductor's view-to-reshape rewrite (run on the ATen graph before the post-grad
#: passes, outside them: the post-grad passes' first input)
VIEW_TO_RESHAPE = "view_to_reshape"
#: a step for a change no recorded step made (see ``Recorder._catch_up``)
OUTSIDE = "outside Inductor's passes"
_TEXTS = ("scheduler IR (before fusion)", "scheduler IR (after fusion)", "output code")


def _is_dynamo(code: Any) -> bool:
    """Whether `code` is one of Dynamo's own wrappers (`external_utils.inner`)."""
    return f"{os.sep}torch{os.sep}_dynamo{os.sep}" in code.co_filename


def _recompile_reason(code: Any) -> str:
    try:
        from torch._dynamo.utils import guard_failures

        failures = guard_failures.get(code) or []
    except Exception:  # an older Dynamo without guard_failures
        return ""
    return f"recompiled: {failures[-1]}" if failures else ""


__all__ = [
    "GraphRecord",
    "ImportItem",
    "Recorder",
    "copy_graph",
    "fingerprint",
    "graph_signature",
    "pass_label",
]
