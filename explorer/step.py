"""A step of a trace: the source graph, the imported module, or one pass application.

A step is a light descriptor (tinygrad VIZ's step): a pass step holds the compiler's record
of the pass (its `Snapshot`); its graph model and text are computed when first asked for,
then cached. What a compiled step adds (its loop IR, LLVM IR and assembly, its executable
and artifact size) comes from `explorer.passlens.backend` for a module of passlens's IR
(its graph model from `explorer.passlens.convert`); another compiler's module answers for
itself (see `explorer.adapters`).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import Any, Protocol

from compiler.ir import Module, Printer
from compiler.passes import Snapshot
from explorer import rewrites
from explorer.diff import diff as diff_steps
from explorer.graph import GraphModel, place_added
from explorer.passlens import backend as step_backend
from explorer.passlens.convert import graph_of_module, module_objects, module_size
from explorer.trust import with_trace_trust


class _Recorded:
    """A field of what a pass did, read from the step's `Snapshot`.

    A step without a snapshot (the source and import steps: no pass ran) reads `default`,
    or, for the fields such a step has too (`own`: its name, module and time), its own
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
    "pass_object": None,
}


def _is_default(value: Any, default: Any) -> bool:
    return value is default or (type(value) is type(default) and value == default)


class Step:
    """One step of a trace: the source graph, the imported module, or a pass application.

    A pass step holds the compiler's record of the pass, its `Snapshot`, and reads
    `name`, `spec`, `depth`, `module`, `before`, `seconds`, `error`,
    `traceback`, `failed_*` and `pass_object` (the Pass that ran, which runs it again:
    a pass nobody registered has no spec that finds it; None for a step read from a file
    until `explorer.load(path, passes=[...])` supplies it) from it; `index`, `parent`
    and `children` number the steps of the trace (a snapshot numbers the pass applications
    of its run). Built by keyword instead (a step read from a file, or made by hand), a pass
    step gets a snapshot made of those keywords (without the pass's options: nothing keeps
    them). The source and import steps ran no pass: no snapshot, their own `name`,
    `module` and `seconds`.
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
    pass_object = _Recorded("pass_object")  # the Pass object that ran (in memory only)

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
        self.trace: TraceSteps | None = None  # set by the first Trace that holds it
        # what a trace file said of this step's pass when passlens may not find it by name (a
        # user's pass): its name, spec, class, module, whether it was registered; else None
        self.saved_pass: dict | None = None
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
        self._size: tuple[int, int] | None = None  # (nodes, parameter bytes)
        self._objects: dict[int, str] | None = None  # id(IR object) -> node id (light walk)
        self._text: str | None = None
        self._lines: dict | None = None
        self._texts: dict | None = None  # the backend's text views
        self._artifact_bytes: int | None = None
        self._executable: Any = None
        # the rule applications of this pass (explorer.rewrites): from its snapshot, or a file
        self.rewrites = rewrites.step_rewrites(getattr(snapshot, "rewrites", ()))

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
        """`failed`, `changed` or `unchanged`."""
        return "failed" if self.failed else ("changed" if self.changed else "unchanged")

    @property
    def shown_module(self) -> Module | None:
        """The module this step shows: its result, or for a failed pass the module it was given."""
        return self.module if self.module is not None else self.before

    @property
    def graph(self) -> GraphModel:
        """The neutral graph model of this step (built on first use; shared with the steps of
        its trace that show the same module, such as a pass that changed nothing)."""
        if self._graph is None:
            if self.source_graph is not None:
                self._graph = self.source_graph
            elif isinstance(self.shown_module, Module):
                shared = self._sibling_graph()
                self._graph = shared if shared is not None else graph_of_module(self.shown_module)
            elif self.shown_module is not None:  # another compiler's module (explorer.adapters)
                self._graph = self.shown_module.graph_model()
            else:
                self._graph = GraphModel()
            # ops a pass made without provenance (a user's pass, in any compiler) take the
            # place of what they replace in the step this one was given (an import's or a
            # source graph's nodes are the frontend's own: a node there without a module is at
            # the top level, not in the module of a neighbour)
            if self.kind == "pass":
                prev = self.previous
                place_added(self._graph, (lambda: prev.graph) if prev is not None else None)
        return self._graph

    @property
    def text(self) -> str:
        """The IR text of this step (for a source step, a listing of its graph)."""
        if self._text is None:
            if self.shown_module is None:
                self._text = _graph_listing(self.graph)
            elif not isinstance(self.shown_module, Module):
                self._text = self.shown_module.text()
            elif (shared := self._from_sibling("_text")) is not None:
                # a step of the same trace showing the same module printed it already (a pass
                # that changed nothing): its text and lines are this step's
                self._text = shared
                self._lines = self._from_sibling("_lines")
            else:
                p = Printer(show_provenance=False, max_inline=8)
                p.module(self.shown_module)
                self._text = p.text()
                self._lines = p.node_lines
        return self._text

    @property
    def backend_stage(self) -> str | None:
        """`"loops"` after legalize-ops, `"compiled"` after codegen, else None."""
        return step_backend.backend_stage(self.shown_module)

    @property
    def texts(self) -> dict[str, str]:
        """Every text view of this step, by name: `"IR"` always; after legalize-ops also
        `"loop IR"` (each kernel headed by the graph nodes it was lowered from); after
        codegen also `"LLVM IR"` (optimised) and `"assembly"` for the host."""
        views = {"IR": self.text}
        if self.backend_stage is None:
            return views
        if self._texts is None:
            self._texts = step_backend.backend_texts(self.shown_module, self.backend_stage)
        views.update(self._texts)
        return views

    def executable(self):
        """The compiled model of a step after codegen (`compiler.backend.Executable`: call it
        on numpy arrays, `export(path)` it), built once."""
        if self._executable is None:
            self._executable = with_trace_trust(step_backend.executable(self), self.trace)
        return self._executable

    @property
    def artifact_bytes(self) -> int | None:
        """For a compiled step: the size in bytes of its exported artifact (object code, plan and
        weights, as `Executable.export` writes it), computed once; None for other steps."""
        if self._artifact_bytes is None and self.backend_stage == "compiled":
            self._artifact_bytes = step_backend.artifact_bytes(self)
        return self._artifact_bytes

    @artifact_bytes.setter
    def artifact_bytes(self, size: int | None) -> None:
        """Record the size of an artifact built elsewhere for this step."""
        self._artifact_bytes = None if size is None else int(size)

    @property
    def failed_line(self) -> int | None:
        """For a failed pass: the 0-based line of `text` showing the binding it failed on."""
        if self.failed_node is None or self.shown_module is None:
            return None
        self.text  # noqa: B018  (fills _lines)
        return (self._lines or {}).get(id(self.failed_node))

    def _sibling_graph(self) -> GraphModel | None:
        """The graph model a step of the same trace already made of this step's module."""
        return self._from_sibling("_graph")

    def _from_sibling(self, attr: str) -> Any:
        """`attr` (`_graph`, `_size`) of a step of the same trace showing the same
        module, where one has it made (else None)."""
        module = self.shown_module
        for s in _steps_showing(self.trace, module):
            if s is not self and getattr(s, attr) is not None and s.shown_module is module:
                return getattr(s, attr)
        return None

    @property
    def size(self) -> tuple[int, int]:
        """`(nodes, parameter bytes)` of this step's graph model (`len(graph.nodes)`,
        `graph.param_bytes`), without making the model when it is not made yet (what the
        timeline of a front end lists for every step: see
        `explorer.passlens.convert.module_size`)."""
        if self._size is None:
            graph = self._graph
            own = self.source_graph is None and isinstance(self.shown_module, Module)
            if graph is None and own:
                graph = self._sibling_graph()
                if graph is None:
                    self._size = self._from_sibling("_size") or module_size(self.shown_module)
                    return self._size
            graph = graph if graph is not None else self.graph
            self._size = (len(graph.nodes), graph.param_bytes)
        return self._size

    @property
    def object_ids(self) -> dict[int, str]:
        """id(IR object) -> node id of this step's graph model (`graph.by_object`), from a
        light walk when the model is not made (what the rewrites' "why" reads of every step
        with rewrites, not only the one shown)."""
        graph = self._graph if self._graph is not None else self._sibling_graph()
        if graph is not None:
            return graph.by_object
        if self._objects is None:
            if self.source_graph is not None or not isinstance(self.shown_module, Module):
                return self.graph.by_object
            self._objects = self._from_sibling("_objects") or module_objects(self.shown_module)
        return self._objects

    @property
    def node_count(self) -> int:
        """Nodes of this step's graph model (see `size`)."""
        return self.size[0]

    @property
    def param_bytes(self) -> int:
        """Bytes of every weight of this step (see `size`)."""
        return self.size[1]

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

    rewrites_of = rewrites.rewrites_of  # (node) -> this pass's rewrites that matched / made it
    why = rewrites.why  # (node) -> the rule and the step that made it, or None

    def diff(self, other: Step | None = None):
        """What changed from `other` (default: the previous step) to this step."""
        base = other if other is not None else self.previous
        if base is None:
            raise ValueError(f"step {self.index} ({self.name}) has no previous step to diff with")
        return diff_steps(base, self)

    def __repr__(self) -> str:
        indent = "  " * self.depth
        return f"<Step #{self.index} {indent}{self.name} [{self.kind}] {self.status}>"

    def _repr_html_(self) -> str:
        """In Jupyter a step shows its graph (the graph component), coloured against the
        previous step."""
        from widgets.report import step_html

        return step_html(self, baseline=self.previous)


class TraceSteps(Protocol):
    """A trace as the modules below `explorer.trace` read it (a
    `explorer.trace.Trace` is one): its steps in order, a step by number or pass name,
    the imported and the final step, the passes a failure left unrun and the summary rows. The
    trace module imports those modules, so their annotations name this protocol, not the Trace:
    no import points up, not even one for annotations only (tests/test_imports.py)."""

    steps: list[Step]
    skipped: list

    def __len__(self) -> int: ...

    def __getitem__(self, key: int | str) -> Step: ...

    @property
    def imported(self) -> Step: ...

    @property
    def final(self) -> Step: ...

    def summary(self) -> list[dict]: ...


_BY_MODULE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _steps_showing(trace: TraceSteps | None, module: Any) -> list[Step]:
    """The steps of `trace` showing `module` (an index by module, made again when the
    trace has more steps; a trace of thousands of steps is not scanned once per step)."""
    if trace is None:
        return []
    index = _BY_MODULE.get(trace)
    if index is None or index[0] != len(trace.steps):
        by: dict[int, list[Step]] = {}
        for s in trace.steps:
            by.setdefault(id(s.shown_module), []).append(s)
        index = _BY_MODULE[trace] = (len(trace.steps), by)
    return index[1].get(id(module), [])


def _graph_listing(g: GraphModel) -> str:
    """One line per node of a source graph, `id: type = op(inputs)`, the inputs in edge
    order (the edges are read once: a 10,000-node graph is not scanned once per node)."""
    ins: dict[str, list[str]] = {}
    for e in g.edges:
        ins.setdefault(e.dst, []).append(e.src)
    lines = [f"{n.id}: {n.type} = {n.op}({', '.join(ins.get(n.id, ()))})" for n in g.nodes.values()]
    return "\n".join(lines) + "\n"
