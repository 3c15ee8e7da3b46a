"""What a TVM step holds, without TVM: `TVMModule` (a reference to one immutable TVM
`IRModule`, or what a saved trace kept of it) and `TVMState` (what the modules of one
trace share: the stand-ins that give TVM objects an identity across steps, the names of the
weights). Nothing here imports tvm: a loaded TVM trace needs none of it.

A step of a TVM trace keeps its module as a `TVMModule` and converts it only when a view
asks (`graph_model()`, `text()`, `texts()`); recording is a reference per pass. Modules
that are structurally equal share one wrapper (a pass that returned an equal copy did not
change the module: `step.changed` is False), so identity means what it means for passlens's
own modules.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from compiler.ir import Constant, Provenance
from explorer.graph import GraphModel

NO_PROVENANCE = Provenance()


class TVMRef:
    """The stand-in of one TVM binding (its variable and value) in graph models: the same
    binding in two steps has the same stand-in, so diffs match it by identity. `prov` is
    where it came from (the FX node of the torch model), `tvm` the TVM value (None in a
    loaded trace)."""

    __slots__ = ("prov", "tvm", "__weakref__")

    def __init__(self, prov: Provenance = NO_PROVENANCE, tvm: Any = None):
        self.prov = prov
        self.tvm = tvm

    def __repr__(self) -> str:
        return f"<TVMRef {self.prov.source_node or ''}>"


class TVMModule:
    """One TVM `IRModule` of a trace (`ir`), converted on demand.

    `graph_model()` is passlens's neutral graph of its Relax functions, `text()` their
    TVMScript, `texts()` the `"loop IR"` view (its TIR PrimFuncs) once it has kernels.
    `inner` marks a module a pass built for itself (the kernels FoldConstant compiles: TIR
    only, where the program has Relax functions): its passes are recorded, but it is not the
    program the pipeline transforms. A module read from
    a file has `ir` None and the graph and texts it was saved with.
    """

    compiler = "tvm"

    def __init__(
        self,
        ir: Any = None,
        state: TVMState | None = None,
        inner: bool | None = None,
        *,
        graph: GraphModel | None = None,
        text: str | None = None,
        texts: dict[str, str] | None = None,
        stage: str | None = None,
    ):
        self.ir = ir
        self.state = state
        self._inner = inner
        self._graph = graph
        self._text = text
        self._texts = texts
        self._stage = stage
        if ir is None and (graph is None or text is None):
            raise TypeError("a TVMModule without an IRModule needs its graph and text")

    @property
    def inner(self) -> bool:
        """Whether a pass built this module for itself (see the class docstring)."""
        if self._inner is None:
            root = self.state.root if self.state is not None else None
            self._inner = (
                root is not None
                and root is not self
                and _has_relax(root.ir)
                and not _has_relax(self.ir)
            )
        return self._inner

    # ----- views ----------------------------------------------------------------------------
    def graph_model(self) -> GraphModel:
        """The graph model of the Relax functions (built on first use)."""
        if self._graph is None:
            from explorer.tvm.convert import graph_of_tvm

            self._graph = graph_of_tvm(self.ir, self.state or TVMState())
        return self._graph

    def _views(self) -> None:
        from explorer.tvm.convert import texts_of_tvm

        self._text, self._texts, self._stage = texts_of_tvm(self.ir)

    def text(self) -> str:
        """The TVMScript of the Relax functions (of the whole module when it has none)."""
        if self._text is None:
            self._views()
        return self._text

    @property
    def backend_stage(self) -> str | None:
        """`"loops"` when the module holds TIR kernels next to Relax functions, else None."""
        if self._text is None and self.ir is not None:
            self._views()
        return self._stage

    def texts(self) -> dict[str, str]:
        """The backend views: `{"loop IR": the TIR PrimFuncs}` after legalization."""
        if self._texts is None:
            if self.ir is None:
                return {}
            self._views()
        return dict(self._texts or {})

    @property
    def functions(self) -> list[str]:
        """The names of the Relax functions."""
        return list(self.graph_model().signatures)

    def __repr__(self) -> str:
        where = "loaded" if self.ir is None else "live"
        return f"<TVMModule {where}{' inner' if self.inner else ''} {self.functions}>"


def _has_relax(ir: Any) -> bool:
    from tvm import relax

    return any(isinstance(f, relax.Function) for _, f in ir.functions_items())


def _span_provenance(*exprs: Any) -> Provenance:
    """`file:line` from the first TVM span of `exprs` (a module parsed from TVMScript
    has them; the torch frontend sets none)."""
    for e in exprs:
        span = getattr(e, "span", None)
        if span is None:
            continue
        source = getattr(span.source_name, "name", None) or "<source>"
        return Provenance(framework="tvm", location=f"{source}:{span.line}")
    return NO_PROVENANCE


def _content_key(arr: np.ndarray) -> tuple:
    data = np.ascontiguousarray(arr)
    digest = hashlib.blake2b(data.view(np.uint8).reshape(-1), digest_size=16).digest()
    return (str(arr.dtype), tuple(arr.shape), digest)


class TVMState:
    """What the modules of one TVM trace share.

    * module wrappers by the TVM object's id (`wrap`), and the TVM objects kept alive, so an
      id is never reused by another object while the trace lives;
    * one `TVMRef` per binding and one `compiler.ir.Constant` per TVM constant (its
      data read once), so an untouched binding or weight is the same object in every step;
    * the names of weights: the source model's parameter whose content a constant holds
      (`fc.weight`), else `const<k>` in order of first sight;
    * the provenance of the imported bindings (the FX node each came from);
    * the pass objects the pipeline ran, by snapshot index (`passes`: the pipeline's own and
      a `Sequential`'s, matched by name; not those a pass made and ran itself), and the
      `PassContext` settings they ran in (`context`), so a pass can be run again alone.
    """

    def __init__(self) -> None:
        self.modules: dict[int, TVMModule] = {}
        self.root: TVMModule | None = None  # the imported program
        self.alive: list[Any] = []
        self.refs: dict[tuple, TVMRef] = {}
        self.constants: dict[int, tuple[Constant, str]] = {}
        self.var_prov: dict[int, Provenance] = {}
        self.weight_names: dict[tuple, list[tuple[str, Provenance]]] = {}
        self._named: dict[tuple, int] = {}  # content -> how many constants took its names
        self._unnamed = 0
        self.passes: dict[int, Any] = {}
        self.context: dict[str, Any] = {}

    # ----- modules ---------------------------------------------------------------------------
    def wrap(self, ir: Any) -> TVMModule:
        """The wrapper of `ir` (one per TVM module object); the first is the program's."""
        key = ir.id_
        found = self.modules.get(key)
        if found is None:
            found = self.modules[key] = TVMModule(ir, self)
            self.alive.append(ir)
            if self.root is None:
                self.root = found
        return found

    def result(self, before: TVMModule, ir: Any, equal) -> TVMModule:
        """The wrapper of what a pass returned: `before` itself when the pass returned the
        same module or a structurally equal one (`equal(a, b)`), else a new wrapper."""
        key = ir.id_
        found = self.modules.get(key)
        if found is not None:
            return found
        if before.ir is not None and equal(before.ir, ir):
            self.modules[key] = before
            self.alive.append(ir)
            return before
        return self.wrap(ir)

    # ----- identities ------------------------------------------------------------------------
    def ref(self, var: Any, value: Any, prov: Provenance | None = None) -> TVMRef:
        """The stand-in of the binding `var = value`."""
        key = (var.id_, None if value is None else value.id_)
        found = self.refs.get(key)
        if found is None:
            if prov is None:
                prov = self.var_prov.get(var.id_) or _span_provenance(value, var)
            found = self.refs[key] = TVMRef(prov, value if value is not None else var)
            self.alive.append((var, value))
        return found

    def constant(self, const: Any, data: Any = None) -> tuple[Constant | TVMRef, str]:
        """The passlens Constant standing for a TVM constant (its data copied once) and its
        weight name; a stand-in without data when numpy cannot hold its dtype."""
        key = const.id_
        found = self.constants.get(key)
        if found is None:
            try:
                arr = np.asarray(const.value.numpy() if data is None else data)
                if arr.flags.writeable:
                    arr.flags.writeable = False
                obj: Constant | TVMRef = Constant(arr)
            except (TypeError, ValueError, AttributeError, RuntimeError):
                arr, obj = None, TVMRef(NO_PROVENANCE, const)
            name, prov = None, NO_PROVENANCE
            if arr is not None:
                key_ = _content_key(arr)
                names = self.weight_names.get(key_)
                if names:  # weights with equal content (a fresh BatchNorm's ones): in order
                    taken = self._named.get(key_, 0)
                    name, prov = names[taken] if taken < len(names) else names[0]
                    self._named[key_] = taken + 1
                obj = Constant(arr, prov=prov)
            if name is None:
                name = f"const{self._unnamed}"
                self._unnamed += 1
            found = self.constants[key] = (obj, name)
            self.alive.append(const)
        return found

    def name_weights(self, named: dict[str, Any], framework: str) -> None:
        """Learn the source model's weights (`{name: array}`): a TVM constant with the same
        content is shown under that name, with that layer as its provenance."""
        for name, arr in named.items():
            try:
                data = np.asarray(arr)
            except Exception:  # a tensor numpy cannot hold: it keeps a const<k> name
                continue
            if data.dtype == object:
                continue
            layer = name.rpartition(".")[0] or None
            prov = Provenance(framework=framework, module_path=layer, source_node=name)
            self.weight_names.setdefault(_content_key(data), []).append((name, prov))


__all__ = ["TVMModule", "TVMRef", "TVMState"]
