"""Compilers plug into the explorer through one interface: an `Adapter`, registered by
name.

    from explorer.adapters import adapter_names, get_adapter
    adapter_names()                       # ('passlens', 'tvm', 'inductor', ...)
    trace = get_adapter("tvm").record(model, (x,), "zero", None)

An adapter says how a source is recorded through a pipeline into a `Trace` of steps
(`Adapter.record`), how a step's module shows (its graph model and texts, through the
module's own `graph_model()` / `text` / `texts`: the duck type every module shares), how
the check runs its steps (`Adapter.check`, with one `explorer.check.Options` and a
`explorer.check.runner.StepRunner`), how a saved module of it is rebuilt
(`Adapter.load_module`, `Adapter.after_load`; a user's own passes in a file:
`Adapter.pass_record`, `Adapter.supply_passes`), how a finding is reduced
(`Adapter.reduce`), how a trace is run again with a changed pipeline
(`Adapter.rerun`), what its rules do (`Adapter.rule_doc`), how a step's module is
written as ONNX (`Adapter.to_onnx`) and what it can do (`Adapter.capabilities`). A
capability an adapter lacks raises `Unsupported`, naming the compiler and what it
cannot do.

Every adapter lives in a folder of its own (passlens's in `explorer.passlens.adapter`, TVM's in
`explorer.tvm.adapter`, Inductor's in `explorer.inductor.adapter`; nothing outside an adapter's
folder names a compiler's internals: see `explorer.passlens`) and is registered lazily:
`explorer` imports none of them (nor tvm, nor torch's Inductor) until a trace of theirs is
recorded, checked or loaded; this module imports nothing of the explorer. To add a compiler, write
an `Adapter` subclass in its package, call `register_adapter` at the end of that module, and
list the module in `_LAZY` (or call `register_adapter` from user code)."""

from __future__ import annotations

import importlib
from typing import Any

from compiler import PasslensError

# capability names
NODE_ERRORS = "node_errors"  # the check compares values node by node
REDUCE = "reduce"  # a finding can be reduced (the adapter's ``reduce``)
RECHECK_AFTER_LOAD = "recheck_after_load"  # a loaded trace can be checked again
ONNX_EXPORT = "onnx_export"  # a step's module can be written as ONNX (the adapter's ``to_onnx``)
RERUN = "rerun"  # a trace can be re-run with a changed pipeline (the adapter's ``rerun``)


_KIND_TEXT = {
    "torch": "a torch model",
    "onnx": "an ONNX model",
    "ir": "passlens IR",
    "other": "not a model passlens knows",
}


def source_kind(source: Any) -> str:
    """What kind of model `source` is: `"onnx"` (a path or bytes of an .onnx file, a
    ModelProto), `"ir"` (an IR Module, its text or a .ir file), `"torch"` (an
    nn.Module, an ExportedProgram, a function) or `"other"`. Nothing is read or imported."""
    import os

    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        suffix = os.path.splitext(text)[1].lower() if "\n" not in text else ""
        if suffix == ".onnx":
            return "onnx"
        if suffix in (".ir", ".txt") or "def @" in text:
            return "ir"
        return "other"
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "onnx"
    kind = type(source)
    names = {f"{c.__module__}.{c.__qualname__}" for c in kind.__mro__}
    if "onnx.onnx_ml_pb2.ModelProto" in names or kind.__name__ == "ModelProto":
        return "onnx"
    if any(n.startswith("compiler.ir.") for n in names):
        return "ir"
    if any(n.startswith("torch.") for n in names) or callable(source):
        return "torch"
    return "other"


def _source_label(source: Any) -> str:
    import os

    if isinstance(source, (str, os.PathLike)) and "\n" not in os.fspath(source):
        return repr(os.fspath(source)[:200])
    return f"this {type(source).__name__}"


def _either(names: list[str], quote: bool = True) -> str:
    quoted = [repr(n) if quote else n for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _kinds_of(name: str) -> tuple[str, ...]:
    kinds = get_adapter(name).source_kinds
    return tuple(_KIND_TEXT) if kinds is None else kinds


class Unsupported(PasslensError, ValueError):
    """An adapter was asked for what its compiler cannot do (a capability it lacks): the
    message names the compiler and the capability."""


class Adapter:
    """One compiler as the explorer sees it. Subclasses set `name` and implement
    `record` and `check`; the rest has defaults."""

    name: str = ""
    #: the pipeline used when none is given (None: the compiler takes no pipeline)
    default_pipeline: Any = None
    #: whether a pipeline may be given at all
    takes_pipeline: bool = True
    #: whether recording needs example inputs (the CLI asks for them up front)
    needs_inputs: bool = False
    #: keyword options of ``explore`` this compiler ignores (accepted for every compiler)
    ignored_options: tuple[str, ...] = ()
    #: what it can do: a subset of NODE_ERRORS, REDUCE, RECHECK_AFTER_LOAD, ONNX_EXPORT, RERUN
    capabilities: frozenset[str] = frozenset()
    #: the kinds of model it takes (:func:`source_kind`), None: every kind
    source_kinds: tuple[str, ...] | None = None
    #: what it does with a model, for an error naming a kind it does not take
    takes_text: str = ""

    def refuse_source(self, source: Any, label: str | None = None, flag: str | None = None) -> None:
        """An `Unsupported` error when `source` is a kind of model this compiler does
        not take (an ONNX file given to torch.compile), naming the compilers that do.

        `label`: how to name the model (default: from `source`); `flag`: how to name the
        compilers, None as the Python API's argument (`compiler 'inductor'`), else as that
        command-line flag (`--compiler inductor`, `--compiler passlens, tvm or onnxruntime`)."""
        kind = source_kind(source)
        if self.source_kinds is None or kind in self.source_kinds:
            return
        takers = [n for n in adapter_names() if n != self.name and kind in _kinds_of(n)]
        what = label if label is not None else _source_label(source)
        word = f"{flag} " if flag else "compiler "
        this = f"{word}{self.name}" if flag else f"{word}{self.name!r}"
        raise Unsupported(
            f"{this} {self.takes_text or 'takes ' + ', '.join(self.source_kinds)}"
            f" models, and {what} is {_KIND_TEXT.get(kind, 'another kind of model')}"
            + (f": explore it with {word}{_either(takers, quote=not flag)}" if takers else "")
        )

    # ----- recording ----------------------------------------------------------------------
    def record(
        self, source: Any, example_inputs: Any, pipeline: Any, progress: Any, **options: Any
    ) -> Any:
        """Import `source`, run `pipeline` with recording (`progress` as for
        `explorer.explore`) and return the `Trace` of every step."""
        raise NotImplementedError(f"the {self.name} adapter cannot record")

    def explore(self, source, example_inputs, pipeline, progress, **options):
        """`record` with the defaults applied (what `explorer.explore` calls)."""
        self.refuse_source(source)
        for key in self.ignored_options:
            options.pop(key, None)
        if pipeline is None:
            pipeline = self.default_pipeline
        return self.record(source, example_inputs, pipeline, progress, **options)

    def rerun(self, trace, pipeline=None, from_step=None, replace=None, progress=None) -> Any:
        """A new trace: `trace` run again with a changed pipeline (what `Trace.rerun`
        calls; see there), for an adapter with the RERUN capability; `Unsupported`
        without it."""
        raise Unsupported(
            f"the {self.name} adapter cannot re-run a trace (it has no {RERUN!r} capability): "
            "explore the model again with the changed pipeline"
        )

    # ----- a snapshot ---------------------------------------------------------------------
    def graph_model(self, module: Any) -> Any:
        """The graph model of one step's module (nodes, edges, shapes, weights, provenance)."""
        return module.graph_model()

    def texts(self, module: Any) -> dict[str, str]:
        """A step's module's texts: its IR text, then any backend texts by title."""
        return {"ir": module.text(), **module.texts()}

    # ----- the check ----------------------------------------------------------------------
    def check(self, trace: Any, inputs: Any, options: Any) -> Any:
        """Run every step of `trace` on `inputs` (as `explorer.check.check`, whose
        arguments `options`, an `explorer.check.Options`, carries: reference, tolerances,
        progress, thresholds, trusted ops) and return the Report: usually
        `Checker(trace, inputs, options, MyRunner()).run()` with the compiler's
        `explorer.check.runner.StepRunner`."""
        raise NotImplementedError(f"trace.check cannot run the steps of a {self.name} trace")

    def reuse_text(self, report: Any) -> str | None:
        """How the check shared its work, in words (None: the default, value-cache counts)."""
        return None

    #: ``reduce(report, finding, budget, progress)``: the compiler's reducer, for an adapter
    #: with the REDUCE capability (``explorer.reduce.reduce`` runs it; None: a ReduceError)
    reduce: Any = None

    # ----- passlens-only capabilities (a default that says so) ----------------------------
    def rule_doc(self, rule: str) -> str:
        """What a rule of a step's rewrites does, in one line (`pass/rule` or a pattern's
        name); "" for a rule it has no words for (the default: every rule)."""
        return ""

    def to_onnx(self, module: Any) -> Any:
        """A step's module as an `onnx.ModelProto`, for an adapter with the ONNX_EXPORT
        capability; raises `explorer.interop.ExportError` for a module it cannot write (the
        message names the node and op), `Unsupported` without the capability."""
        raise Unsupported(
            f"the {self.name} adapter cannot write a module as ONNX (it has no "
            f"{ONNX_EXPORT!r} capability)"
        )

    # ----- the store ----------------------------------------------------------------------
    #: ``save_module(module, writer) -> dict``: how a step's module is stored; None: as what it
    #: showed, graph model and texts (``explorer.store.graphs.encode_foreign``)
    save_module: Any = None

    def load_module(
        self, rec: dict, graph: Any, text: str, texts: dict[str, str], stage: str | None
    ) -> Any:
        """A stored module rebuilt from what it showed (`graph` its decoded graph model;
        `rec` the checked record). Only compilers whose modules are stored so need it."""
        raise ValueError(f"a {self.name} trace stores no foreign modules")

    def pass_record(self, step: Any) -> dict | None:
        """What a trace file keeps of a pass step's pass besides its spec, for a pass that
        may not be found by name where the file is loaded (a user's own: its class, module,
        whether it was registered); None (the default): nothing, the spec says it all."""
        return None

    def supply_passes(self, trace: Any, passes: Any) -> None:
        """Give a loaded trace the pass objects its file could only name (`explorer.load(path,
        passes=[...])`: classes or instances); `Unsupported` (the default) for a
        compiler whose traces keep none."""
        raise Unsupported(f"a {self.name} trace takes no passes= when loaded")

    def trace_record(self, trace: Any) -> dict | None:
        """What a trace file keeps of the trace beyond its steps (JSON; the manifest's
        `compiler_record`); None (the default): nothing."""
        return None

    def load_trace_record(self, trace: Any, record: Any) -> None:
        """Give a loaded trace back what `trace_record` kept (`record` is untrusted:
        None from an older file). The default does nothing."""

    def after_load(self, trace: Any) -> None:
        """Called on a trace of this compiler read from a file, before `load` returns it:
        what the file does not keep, made again (passlens: its modules' kernels). Runs none of
        the trace's ops. The default does nothing."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


_ADAPTERS: dict[str, Adapter] = {}
# name -> the module that registers it when imported (imported on first use only)
_LAZY: dict[str, str] = {
    "passlens": "explorer.passlens.adapter",
    "tvm": "explorer.tvm.adapter",
    "inductor": "explorer.inductor.adapter",
    "onnxruntime": "explorer.onnxruntime.adapter",
    "iree": "explorer.iree.adapter",
}


def register_adapter(adapter: Adapter) -> Adapter:
    """Make `adapter` available by its name (replacing one of the same name)."""
    if not isinstance(adapter, Adapter):
        raise TypeError(f"an adapter must be an explorer.adapters.Adapter, not {adapter!r}")
    if not isinstance(adapter.name, str) or not adapter.name:
        raise ValueError("an adapter needs a name")
    _ADAPTERS[adapter.name] = adapter
    return adapter


def unregister_adapter(name: str) -> None:
    """Forget a registered adapter (tests); a lazily registered one comes back on next use."""
    _ADAPTERS.pop(name, None)


def adapter_names() -> tuple[str, ...]:
    """Every compiler's name, registered or registered on first use (nothing imported)."""
    return tuple(dict.fromkeys([*_LAZY, *_ADAPTERS]))


def is_adapter_name(name: Any) -> bool:
    """Whether `name` (any value: it may come from a file) names a compiler."""
    return isinstance(name, str) and name in adapter_names()


def get_adapter(name: Any) -> Adapter:
    """The adapter called `name`, importing its module on first use."""
    if not is_adapter_name(name):
        names = " or ".join(repr(n) for n in adapter_names())
        raise ValueError(f"compiler is {names}, not {str(name)[:60]!r}")
    if name not in _ADAPTERS:
        importlib.import_module(_LAZY[name])
        if name not in _ADAPTERS:
            raise RuntimeError(f"{_LAZY[name]} did not register the {name!r} adapter")
    return _ADAPTERS[name]


__all__ = [
    "NODE_ERRORS",
    "ONNX_EXPORT",
    "RECHECK_AFTER_LOAD",
    "REDUCE",
    "RERUN",
    "Adapter",
    "Unsupported",
    "adapter_names",
    "get_adapter",
    "is_adapter_name",
    "register_adapter",
    "unregister_adapter",
]
