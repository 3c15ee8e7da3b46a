"""What a torch.compile step holds: `FXModule` (a copy of one FX graph as a pass left
it, or what a saved trace kept of it) and `FXState` (what the modules of one trace
share: the stand-ins that give FX nodes an identity across steps, the weights).

A recorded pass that changed its graph gets a copy of the graph (`torch.fx.Graph` copied
node by node, the node metadata shared): the live GraphModule keeps changing as Inductor's
passes run, the copy does not. The GraphModule to run a copy is made only when the check asks
(`graph_module()`), and the graph model and texts only when a view asks. Nothing here is
pickled: a saved trace keeps the graph model and the texts (see `explorer.store.graphs`).
"""

from __future__ import annotations

from typing import Any

from compiler.ir import Provenance
from explorer.graph import GraphModel

NO_PROVENANCE = Provenance()


class FXRef:
    """The stand-in of one FX node in graph models: a node with the same name, op, target and
    inputs in two steps has the same stand-in, so diffs match it by identity. `name` is the
    FX node's name, `prov` where it came from (the user's module, the op, file:line)."""

    __slots__ = ("name", "prov", "__weakref__")

    def __init__(self, name: str, prov: Provenance = NO_PROVENANCE):
        self.name = name
        self.prov = prov

    def __repr__(self) -> str:
        return f"<FXRef {self.name}>"


class FXModule:
    """One FX graph of a torch.compile trace, converted on demand.

    `graph` is a copy of the `torch.fx.Graph` (None in a loaded trace), `attrs` the
    tensors its `get_attr` nodes read, `level` which IR it is in (`"dynamo"`: Torch IR
    from Dynamo, before AOTAutograd; `"aten"`: the ATen IR after it), `graph_index` the
    Dynamo graph it belongs to. `extra_texts` holds the texts Inductor wrote for the graph
    (scheduler IR before / after fusion, output code): a module with them is the compiled
    step (`backend_stage` `"loops"`: kernels, as for TVM after legalization)."""

    compiler = "inductor"
    inner = False

    def __init__(
        self,
        graph: Any = None,
        attrs: dict | None = None,
        state: FXState | None = None,
        *,
        level: str = "dynamo",
        graph_index: int = 0,
        extra_texts: dict[str, str] | None = None,
        model: GraphModel | None = None,
        text: str | None = None,
        stage: str | None = None,
    ):
        self.graph = graph
        self.attrs = attrs or {}
        self.state = state
        self.level = level
        self.graph_index = graph_index
        self.extra_texts = extra_texts
        self._model = model
        self._text = text
        self._stage = stage if stage is not None else ("loops" if extra_texts else None)
        self._gm: Any = None
        if graph is None and (model is None or text is None):
            raise TypeError("an FXModule without an FX graph needs its graph model and text")

    # ----- views ----------------------------------------------------------------------------
    def graph_model(self) -> GraphModel:
        """The graph model of the FX graph (built on first use)."""
        if self._model is None:
            from explorer.inductor.convert import graph_of_fx

            self._model = graph_of_fx(self.graph, self.attrs, self.state or FXState(), self)
        return self._model

    def text(self) -> str:
        """The FX graph as readable Python (`GraphModule.print_readable`'s form)."""
        if self._text is None:
            from explorer.inductor.convert import text_of_fx

            self._text = text_of_fx(self.graph)
        return self._text

    @property
    def backend_stage(self) -> str | None:
        """`"loops"` for the step holding Inductor's kernels and code, else None."""
        return self._stage

    def texts(self) -> dict[str, str]:
        """Inductor's texts for this graph: scheduler IR before and after fusion, output code."""
        return dict(self.extra_texts or {})

    @property
    def functions(self) -> list[str]:
        """The graph's one function (`forward`)."""
        return ["forward"]

    # ----- running ----------------------------------------------------------------------------
    def graph_module(self) -> Any:
        """A `torch.fx.GraphModule` running this graph (made once; None for a loaded one)."""
        if self.graph is None:
            return None
        if self._gm is None:
            import torch

            self._gm = torch.fx.GraphModule(dict(self.attrs), self.graph)
        return self._gm

    def __repr__(self) -> str:
        where = "loaded" if self.graph is None else "live"
        return f"<FXModule {where} {self.level} graph {self.graph_index}>"


class FXState:
    """What the modules of one torch.compile trace share: one `FXRef` per node
    identity (name, op, target, inputs), one weight record per tensor (its name from the
    source model, its data as a read-only array, made once)."""

    def __init__(self) -> None:
        self.refs: dict[tuple, FXRef] = {}
        self.weights: dict[int, tuple[str, Any]] = {}  # id(tensor) -> (name, Constant)
        self.alive: list[Any] = []  # tensors whose ids key ``weights``
        self.param_names: dict[int, str] = {}  # id(tensor) -> name in the source model
        # per Dynamo graph: for each of its tensor placeholders in order, the weight tensor it
        # takes (a parameter or buffer of the model) or None for a runtime input
        self.graph_weights: dict[int, list] = {}
        # per Dynamo graph: its tensor placeholders' names, in order (the ATen graph's inputs
        # are shown under them, so a diff across AOTAutograd matches the inputs)
        self.graph_inputs: dict[int, list[str]] = {}

    def ref(self, key: tuple, prov: dict | None = None) -> FXRef:
        """The stand-in of the node with identity `key` (name first), with the provenance
        `prov` (text keys: `module`, `op`, `node`, `file`) when it is new."""
        found = self.refs.get(key)
        if found is None:
            p = Provenance.from_items(prov) if prov else NO_PROVENANCE
            found = self.refs[key] = FXRef(str(key[0]), p)
        return found

    def name_params(self, model: Any) -> None:
        """Learn the source model's parameter and buffer names (`fc.weight`)."""
        try:
            named = [*model.named_parameters(), *model.named_buffers()]
        except Exception:  # not an nn.Module: weights keep their graph names
            return
        for name, t in named:
            self.param_names.setdefault(id(t), name)

    def weight(self, tensor: Any, fallback: str) -> tuple[str, Any]:
        """`(name, compiler Constant)` of a weight tensor, made once per tensor; the Constant
        is None when numpy cannot hold its dtype."""
        found = self.weights.get(id(tensor))
        if found is None:
            from compiler.ir import Constant

            name = self.param_names.get(id(tensor), fallback)
            const = None
            try:
                arr = tensor.detach().cpu().numpy().view()
                arr.flags.writeable = False
                const = Constant(arr)
            except (TypeError, ValueError, RuntimeError):
                const = None
            found = self.weights[id(tensor)] = (name, const)
            self.alive.append(tensor)
        return found


__all__ = ["FXModule", "FXRef", "FXState"]
