"""Traces: every step of a conversion, from the source model to the last pass.

``explore(source, example_inputs, pipeline)`` imports the source, runs the pipeline with the
recorder and returns a :class:`Trace`. Its steps are: the source graph as the framework sees
it (when the source is a framework model), the imported module, then every pass application
(nested ones included, each with its depth; a failed one marked as failed). A step is a light
descriptor: its graph model, text and diff are computed when first asked for, then cached.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from compiler import passes
from compiler.ir import Module, Printer
from compiler.passes import SkippedPass, Snapshot
from explorer.graph import GraphModel, graph_of_module, module_param_bytes
from explorer.summary import trace_html, trace_text


class _Recorded:
    """A field of what a pass did, read from the step's :class:`Snapshot`.

    A step without a snapshot (the source and import steps: no pass ran) reads ``default``,
    or, for the fields such a step has too (``own``: its name, module and time), its own
    value. Setting the field on a step with a snapshot gives the step an edited copy of it:
    the snapshot is the compiler's record, which a copy of the step may share.
    """

    def __init__(self, field: str, default: Any = None, own: bool = False):
        self.field, self.default, self.own = field, default, own

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.private = f"_{name}"

    def __get__(self, step: Step | None, owner: type | None = None) -> Any:
        if step is None:
            return self
        if step.snapshot is not None:
            return getattr(step.snapshot, self.field)
        return getattr(step, self.private) if self.own else self.default

    def __set__(self, step: Step, value: Any) -> None:
        if step.snapshot is not None:
            step.snapshot = dataclasses.replace(step.snapshot, **{self.field: value})
        elif self.own:
            setattr(step, self.private, value)
        else:
            raise AttributeError(f"a {step.kind} step ran no pass: it has no {self.name}")


# what only a pass application records, with the value a step that ran no pass reads
_PASS_ONLY = {
    "spec": "",
    "depth": 0,
    "before": None,
    "error": None,
    "traceback": "",
    "failed_node": None,
    "failed_function": None,
}


def _is_default(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


class Step:
    """One step of a trace: the source graph, the imported module, or a pass application.

    A pass step holds the compiler's record of the pass, its :class:`Snapshot`, and reads
    ``name``, ``spec``, ``depth``, ``module``, ``before``, ``seconds``, ``error``,
    ``traceback`` and ``failed_*`` from it; ``index``, ``parent`` and ``children`` number the
    steps of the trace (a snapshot numbers the pass applications of its run). Built by
    keyword instead (a step read from a file, or made by hand), a pass step gets a snapshot
    made of those keywords (without the pass's options: nothing keeps them). The source and
    import steps ran no pass: no snapshot, their own ``name``, ``module`` and ``seconds``.
    """

    name = _Recorded("pass_name", "", own=True)
    spec = _Recorded("spec", "")
    depth = _Recorded("depth", 0)
    module = _Recorded("module", own=True)
    before = _Recorded("before")
    seconds = _Recorded("seconds", 0.0, own=True)
    error = _Recorded("error")
    traceback = _Recorded("traceback", "")
    failed_node = _Recorded("failed_node")
    failed_function = _Recorded("failed_function")

    def __init__(
        self,
        index: int,
        kind: str,
        name: str = "",
        *,
        snapshot: Snapshot | None = None,
        parent: int | None = None,
        children: Sequence[int] = (),
        module: Module | None = None,
        seconds: float = 0.0,
        source_graph: GraphModel | None = None,
        **recorded: Any,
    ):
        unknown = sorted(set(recorded) - set(_PASS_ONLY))
        if unknown:
            raise TypeError(f"Step() got unexpected keyword arguments {unknown}")
        if snapshot is not None and (name or module is not None or seconds or recorded):
            raise TypeError("a step with a snapshot reads its name and what the pass did from it")
        self.index = index
        self.kind = kind  # "source", "import" or "pass"
        self.parent = parent
        self.children = list(children)
        self.source_graph = source_graph
        self.trace: Trace | None = None
        # a step that records something only a pass has (a file may say so) gets a snapshot too
        if snapshot is None and (
            kind == "pass" or any(not _is_default(v, _PASS_ONLY[k]) for k, v in recorded.items())
        ):
            snapshot = Snapshot(
                index=index,
                pass_name=name,
                options={},
                parent=parent,
                children=list(children),
                module=module,
                seconds=seconds,
                **(_PASS_ONLY | recorded),
            )
        self.snapshot = snapshot
        if snapshot is None:
            self._name, self._module, self._seconds = name, module, seconds
        self._graph: GraphModel | None = None
        self._text: str | None = None
        self._lines: dict | None = None
        self._texts: dict | None = None  # the backend's text views
        self._artifact_bytes: int | None = None
        self._executable: Any = None

    @property
    def failed(self) -> bool:
        """Whether this pass raised."""
        return self.error is not None

    @property
    def changed(self) -> bool:
        """Whether the pass returned a different module (identity); imports always change."""
        if self.kind != "pass":
            return True
        return self.module is not None and self.module is not self.before

    @property
    def status(self) -> str:
        """``failed``, ``changed`` or ``unchanged``."""
        return "failed" if self.failed else ("changed" if self.changed else "unchanged")

    @property
    def shown_module(self) -> Module | None:
        """The module this step shows: its result, or for a failed pass the module it was given."""
        return self.module if self.module is not None else self.before

    @property
    def graph(self) -> GraphModel:
        """The neutral graph model of this step (built on first use)."""
        if self._graph is None:
            if self.source_graph is not None:
                self._graph = self.source_graph
            elif isinstance(self.shown_module, Module):
                self._graph = graph_of_module(self.shown_module)
            elif self.shown_module is not None:  # another compiler's module (explorer.adapters)
                self._graph = self.shown_module.graph_model()
            else:
                self._graph = GraphModel()
        return self._graph

    @property
    def text(self) -> str:
        """The IR text of this step (for a source step, a listing of its graph)."""
        if self._text is None:
            if self.shown_module is None:
                self._text = _graph_listing(self.graph)
            elif not isinstance(self.shown_module, Module):
                self._text = self.shown_module.text()
            else:
                p = Printer(show_provenance=False, max_inline=8)
                p.module(self.shown_module)
                self._text = p.text()
                self._lines = p.node_lines
        return self._text

    @property
    def backend_stage(self) -> str | None:
        """``"loops"`` after legalize-ops, ``"compiled"`` after codegen, else None."""
        m = self.shown_module
        if m is not None and not isinstance(m, Module):
            return m.backend_stage
        backend = "" if m is None else str(m.attrs.get("backend", "") or "")
        if backend.startswith("llvm"):
            return "compiled"
        return "loops" if backend == "loops" else None

    @property
    def texts(self) -> dict[str, str]:
        """Every text view of this step, by name: ``"IR"`` always; after legalize-ops also
        ``"loop IR"`` (each kernel headed by the graph nodes it was lowered from); after
        codegen also ``"LLVM IR"`` (optimised) and ``"assembly"`` for the host."""
        views = {"IR": self.text}
        if self.backend_stage is None:
            return views
        if self._texts is None:
            m = self.shown_module
            own = m is None or isinstance(m, Module)  # else another compiler's (explorer.adapters)
            self._texts = _backend_texts(m, self.backend_stage) if own else m.texts()
        views.update(self._texts)
        return views

    def executable(self):
        """The compiled model of a step after codegen (``compiler.backend.Executable``: call it
        on numpy arrays, ``export(path)`` it), built once."""
        if self.backend_stage != "compiled":
            raise ValueError(
                f"step {self.index} ({self.name}) is not compiled; run the pipeline through "
                "legalize-ops,codegen and take that step"
            )
        if self._executable is None:
            from compiler.backend import KernelNotFound, build

            try:
                self._executable = build(self.shown_module, pipeline="", record=False)
            except KernelNotFound as e:
                raise ValueError(
                    f"step {self.index} ({self.name}) cannot be rebuilt: {e}"
                ) from None
        return self._executable

    @property
    def artifact_bytes(self) -> int | None:
        """For a compiled step: the size in bytes of its exported artifact (object code, plan and
        weights, as ``Executable.export`` writes it), computed once; None for other steps."""
        if self._artifact_bytes is None and self.backend_stage == "compiled":
            import tempfile
            from pathlib import Path

            try:
                exe = self.executable()
            except ValueError:
                return None  # a loaded trace whose kernels are not in this process
            with tempfile.TemporaryDirectory(prefix="passlens-artifact-") as tmp:
                self._artifact_bytes = exe.export(Path(tmp) / "model.plz")
        return self._artifact_bytes

    @artifact_bytes.setter
    def artifact_bytes(self, size: int | None) -> None:
        """Record the size of an artifact built elsewhere for this step."""
        self._artifact_bytes = None if size is None else int(size)

    @property
    def failed_line(self) -> int | None:
        """For a failed pass: the 0-based line of ``text`` showing the binding it failed on."""
        if self.failed_node is None or self.shown_module is None:
            return None
        self.text  # noqa: B018  (fills _lines)
        return (self._lines or {}).get(id(self.failed_node))

    @property
    def param_bytes(self) -> int:
        """Bytes of every weight of this step (from the module when no graph was built)."""
        if (
            self._graph is None
            and self.source_graph is None
            and isinstance(self.shown_module, Module)
        ):
            return module_param_bytes(self.shown_module)
        return self.graph.param_bytes

    @property
    def previous(self) -> Step | None:
        """The step this one is compared with by default: for a pass, the step whose module it
        was given; otherwise the step before it."""
        if self.trace is None or self.index == 0:
            return None
        if self.kind == "pass" and self.before is not None:
            for s in reversed(self.trace.steps[: self.index]):
                if s.module is self.before:
                    return s
            if not isinstance(self.before, Module):
                return None  # another compiler's pass on a module a pass built for itself
        return self.trace.steps[self.index - 1]

    def diff(self, other: Step | None = None):
        """What changed from ``other`` (default: the previous step) to this step."""
        from explorer.diff import diff

        base = other if other is not None else self.previous
        if base is None:
            raise ValueError(f"step {self.index} ({self.name}) has no previous step to diff with")
        return diff(base, self)

    def __repr__(self) -> str:
        indent = "  " * self.depth
        return f"<Step #{self.index} {indent}{self.name} [{self.kind}] {self.status}>"

    def _repr_html_(self) -> str:
        """In Jupyter a step shows its graph (the graph component), coloured against the
        previous step."""
        from widgets.report import step_html

        return step_html(self, baseline=self.previous)


def _backend_texts(module: Module, stage: str) -> dict[str, str]:
    from compiler import backend
    from compiler.backend import KernelNotFound

    out: dict[str, str] = {}
    try:
        out["loop IR"] = backend.lowered_text(module)
        if stage == "compiled":
            out["LLVM IR"] = backend.llvm_text(module)
            out["assembly"] = backend.assembly_text(module)
    except KernelNotFound as e:
        out.setdefault("loop IR", f"; not available: {e}\n")
    return out


def _graph_listing(g: GraphModel) -> str:
    lines = []
    for n in g.nodes.values():
        ins = [e.src for e in g.edges if e.dst == n.id]
        lines.append(f"{n.id}: {n.type} = {n.op}({', '.join(ins)})")
    return "\n".join(lines) + "\n"


class Trace:
    """The recorded steps of one conversion, indexable by number or pass name."""

    def __init__(
        self,
        steps: Sequence[Step],
        source: Any = None,
        example_inputs: tuple | None = None,
        pipeline: str = "",
        frontend: str = "",
        skipped: Sequence[SkippedPass] = (),
        interrupted: bool = False,
        compiler: str = "passlens",
    ):
        self.steps = list(steps)
        for s in self.steps:
            s.trace = self
        self.source = source
        self.example_inputs = example_inputs
        self.pipeline = pipeline
        self.frontend = frontend
        # the passes of the pipeline a failure (or an interrupt) left unrun, in order
        self.skipped = list(skipped)
        self.interrupted = interrupted  # the run was stopped (Ctrl-C) in trace.failure
        self.compiler = compiler  # whose passes: an adapter name (explorer.adapters)
        # the last check's Report (trace.check, or read from a file by load); the views and
        # save use it unless given another
        self.report: Any = None

    # ----- access -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, key) -> Step:
        if isinstance(key, int):
            return self.steps[key]
        if isinstance(key, str):
            name, _, nth = key.partition("#")
            matches = [s for s in self.steps if s.name == name or s.spec == name]
            if not matches:
                names = sorted({s.name for s in self.steps})
                raise KeyError(f"no step named {key!r}; steps: {', '.join(names)}")
            return matches[int(nth) - 1 if nth else 0]
        raise TypeError(f"index a trace with an int or a pass name, not {type(key).__name__}")

    @property
    def imported(self) -> Step:
        """The step holding the imported module."""
        return next(s for s in self.steps if s.kind == "import")

    @property
    def final(self) -> Step:
        """The last step with a module (the last good one if a pass failed); not one a pass
        built for itself (TVM's FoldConstant compiling its kernels) unless all are."""
        with_module = [s for s in reversed(self.steps) if s.module is not None]
        own = [s for s in with_module if not getattr(s.module, "inner", False)]
        return (own or with_module)[0]

    @property
    def failure(self) -> Step | None:
        """The innermost failed pass, if one failed."""
        failed = [s for s in self.steps if s.failed]
        return failed[-1] if failed else None

    # ----- summary ------------------------------------------------------------------------
    def summary(self) -> list[dict]:
        """One row per step: index, pass, status, node delta, op-count changes, param bytes and
        delta, changed shapes, time (see ``explorer.summary.summary_rows``)."""
        from explorer.summary import summary_rows

        return summary_rows(self)

    def __repr__(self) -> str:
        return self.summary_text()

    def opaque_ops(self) -> list[dict]:
        """The ops without a converter the import kept as opaque ops (run by torch or
        onnxruntime), one row per op: target, runner, count, places (see
        ``explorer.summary.opaque_ops``)."""
        from explorer.summary import opaque_ops

        return opaque_ops(self)

    def summary_text(self) -> str:
        """The summary as a plain-text table (with the passes skipped, if any)."""
        return trace_text(self)

    def _repr_html_(self) -> str:
        return trace_html(self)

    # ----- analysis and export (implemented in their own modules) ----------------------------
    def check(
        self,
        inputs=None,
        reference: str = "source",
        rtol: float = 1e-4,
        atol: float = 1e-5,
        progress=None,
    ):
        """Run the reference and every step on the same inputs; returns a Report, which is
        also kept as ``trace.report`` (saved with the trace, shown by its views)."""
        from explorer.check import check

        report = check(self, inputs, reference=reference, rtol=rtol, atol=atol, progress=progress)
        self.report = report
        return report

    def _report(self, report):
        """The report a view shows: ``report``, the trace's own when None, none when False."""
        if report is False:
            return None
        return self.report if report is None else report

    def param_map(self, **thresholds: float):
        """Weight bytes per source layer per step, and where a pass first made a layer's
        weights grow (``threshold`` / ``min_bytes``: the check's param-bloat thresholds by
        default): an ``explorer.check.ParamMap``. A method of the trace, not of a check's
        report: it needs only the steps' graphs, no inputs and no reference."""
        from explorer.check.param_map import param_map

        return param_map(self, **thresholds)

    def save(self, path, inputs: bool = False):
        """Save to a ``.passlens`` file (JSON + raw arrays, no pickle), with the last check
        report (``trace.report``) and, with ``inputs``, the values it ran on; returns the
        path. See ``explorer.store.save``."""
        from explorer.store.write import save

        return save(self, path, inputs=inputs)

    def to_html(self, path, report=None, max_boxes: int = 300, progress=None) -> int:
        """Write one self-contained HTML report (with the findings of a check ``report``
        drawn on the graphs: by default the trace's last one, ``trace.report``; False for
        none); each step's graph opens with at most ``max_boxes`` boxes (module groups
        collapsed, finest first, until it fits); ``progress`` per step, as for
        :func:`explore`. Returns the file's size."""
        from widgets.report import write_html

        return write_html(
            self, path, report=self._report(report), max_boxes=max_boxes, progress=progress
        )

    def export(self, step, path, format: str = "model-explorer", report=None) -> list:
        """Write one step for another viewer: ``model-explorer`` (Google's Model Explorer
        graph JSON, plus node data files; with a check ``report``, each node's max error) or
        ``onnx`` (for Netron). Returns the paths written. See ``explorer.interop``."""
        from explorer.interop import export

        return export(self, step, path, format=format, report=report)

    def show(self, step=None):
        """Display a step's graph in Jupyter (the final step by default)."""
        from IPython.display import display

        display(self.final if step is None else self[step])

    def stepper(self, report=None):
        """The Jupyter widget to step through the passes (with a check ``report``, by default
        ``trace.report``, False for none: its findings on the graphs and in the timeline,
        and the numerics tab)."""
        from widgets.stepper import PassStepper

        return PassStepper(self, report=self._report(report))


def pass_steps(snapshots: Sequence[Any], offset: int) -> list[Step]:
    """The pass steps of a run's snapshots (each a ``compiler.passes.Snapshot`` or one with
    its fields), numbered after the ``offset`` steps before them (source, import): what every
    adapter's recorder builds its trace from."""
    return [
        Step(
            offset + snap.index,
            "pass",
            snapshot=snap,
            parent=None if snap.parent is None else offset + snap.parent,
            children=[offset + c for c in snap.children],
        )
        for snap in snapshots
    ]


def input_tuple(example_inputs: Any) -> tuple | None:
    """Example inputs as a trace keeps them: a tuple (one value becomes a 1-tuple), or None."""
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    if example_inputs is not None and not isinstance(example_inputs, tuple):
        return (example_inputs,)
    return example_inputs


def trace_from_module(
    module: Module,
    pipeline: Any = "default",
    source_step: Step | None = None,
    import_seconds: float = 0.0,
    import_name: str = "import",
    progress: Any = None,
    **meta: Any,
) -> Trace:
    """Run ``pipeline`` on an already imported module and build the trace (``progress``: as
    for :func:`explore`)."""
    from explorer.progress import passes_job

    steps: list[Step] = []
    if source_step is not None:
        source_step.index = 0
        steps.append(source_step)
    steps.append(Step(len(steps), "import", import_name, module=module, seconds=import_seconds))
    job, instruments = passes_job(progress, pipeline)
    try:
        result = passes.run(module, pipeline, record=True, instruments=instruments)
    except passes.PassesInterrupted as e:  # Ctrl-C: the trace of what ran, the rest skipped
        result = e.result
    finally:
        job.close()
    steps += pass_steps(result.snapshots, len(steps))
    return Trace(
        steps,
        pipeline=result.pipeline.spec(),
        skipped=result.skipped,
        interrupted=result.interrupted,
        **meta,
    )


def explore(
    source: Any,
    example_inputs: Any = None,
    pipeline: Any = "default",
    progress: Any = None,
    strict: bool = False,
    **frontend_options,
) -> Trace:
    """Import ``source`` (torch.nn.Module, ExportedProgram, ONNX path/bytes/ModelProto, IR
    Module or IR text), run ``pipeline`` with recording, and return the Trace.

    An operator passlens has no converter for becomes an opaque op, run by torch or
    onnxruntime wherever a value is needed (the trace's summary lists them); ``strict=True``
    refuses such a model at import instead (UnsupportedOperatorError).

    ``progress``: a callback ``(done, total, pass name)`` before each pass, or what
    :mod:`explorer.progress` shows (None: a bar in a terminal or in Jupyter once the passes
    take a while, a line in CI logs for a long run; True: at once; False: nothing)."""
    from explorer.sources import import_source

    start = time.perf_counter()
    if strict:
        frontend_options["strict"] = True
    imported = import_source(source, example_inputs, **frontend_options)
    seconds = time.perf_counter() - start
    example_inputs = input_tuple(example_inputs)
    return trace_from_module(
        imported.module,
        pipeline,
        source_step=None
        if imported.source_graph is None
        else Step(0, "source", imported.source_label, source_graph=imported.source_graph),
        import_seconds=seconds,
        import_name=imported.name,
        progress=progress,
        source=imported.source,
        example_inputs=example_inputs,
        frontend=imported.frontend,
    )
