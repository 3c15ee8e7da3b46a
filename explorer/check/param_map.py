"""The parameter map: weight bytes per source layer per step, and where they start to grow.

It needs no check (only the steps' graphs), so it is `Trace.param_map()`; it lives beside
the error map because it shares its layers (`layers.py`) and the check's bloat thresholds.
A weight's layer is its own provenance's, else the layer of the first node reading it (a
weight folded by a pass, or a hand-written model, often has no provenance of its own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from explorer.check.facts import BLOAT_MIN_BYTES, BLOAT_THRESHOLD
from explorer.check.layers import LayerGrid, layer_of, layer_order
from explorer.fmt import format_bytes

if TYPE_CHECKING:
    from explorer.graph import GraphModel
    from explorer.step import Step, TraceSteps


@dataclass(repr=False)
class ParamMap(LayerGrid):
    """One row per step, one column per source layer (in model order): `nbytes[i, j]` is
    the bytes of the weights of layer `layers[j]` at step `steps[i]` (0: none).
    `grew[i, j]` marks where a pass made a layer's weights grow over the step it was given
    (by more than `threshold` and at least `min_bytes`, as the check's `param-bloat`);
    `first_step` / `first_layer` is where that first happens (the first such step, and
    the first such layer there in model order): where bloat starts. `nodes[i][j]` is the
    graph node id of the layer's largest weight at that step (what a view selects)."""

    steps: list[int]
    step_names: list[str]
    layers: list[str]
    nbytes: np.ndarray
    grew: np.ndarray
    nodes: list[list[str]] = field(repr=False)
    first_step: int | None
    first_layer: str | None
    depths: list[int] = field(default_factory=list, repr=False)  # each row's nesting depth
    threshold: float = BLOAT_THRESHOLD
    min_bytes: int = BLOAT_MIN_BYTES
    _arrays = ("nbytes", "grew")

    def __str__(self) -> str:
        head = f"parameter map: {len(self.steps)} steps x {len(self.layers)} layers"
        if self.first_step is None:
            return head + "; no layer's weights grew"
        i, j = self.row(self.first_step), self.column(self.first_layer)
        return (
            f"{head}; weights first grew at #{self.first_step} {self.step_names[i]}, in "
            f"{self.first_layer} (to {format_bytes(int(self.nbytes[i, j]))})"
        )

    def _repr_html_(self) -> str:
        """The heat map, in Jupyter (the output of `trace.param_map()` in a cell)."""
        from widgets.error_map import MAP_CSS, param_map_html

        return f"<style>{MAP_CSS}</style>{param_map_html(self)}"


def _weights_by_layer(graph: GraphModel, known: set[str]) -> dict[str, list[tuple[int, str]]]:
    """Each layer's weights in a step's graph: (bytes, graph node id), largest first. A
    weight is in its own layer when nodes are too (`known`), else in its first reader's
    (an ONNX initializer's name may say `layers.0` where the nodes are `linear/Gemm`)."""
    readers: dict[str, str] = {}  # weight node id -> the layer of its first reader
    for e in graph.edges:
        if e.src not in readers:
            dst = graph.nodes.get(e.dst)
            layer = layer_of(dst.obj) if dst is not None and dst.obj is not None else None
            if layer is not None:
                readers[e.src] = layer
    out: dict[str, list[tuple[int, str]]] = {}
    for p in graph.params.values():
        own = layer_of(p.obj) if p.obj is not None else None
        layer = own if own in known else readers.get(p.node_id, own)
        if layer is not None:
            out.setdefault(layer, []).append((p.nbytes, p.node_id))
    for weights in out.values():
        weights.sort(key=lambda w: -w[0])
    return out


def param_map(
    trace: TraceSteps, threshold: float = BLOAT_THRESHOLD, min_bytes: int = BLOAT_MIN_BYTES
) -> ParamMap:
    """The `ParamMap` of `trace` (every step but a source graph)."""
    steps = [s for s in trace.steps if s.kind != "source"]
    layers = layer_order(trace, steps)
    known = set(layers)
    by_module: dict[int, dict[str, list[tuple[int, str]]]] = {}

    def weights(step: Step) -> dict[str, list[tuple[int, str]]]:
        """Once per module: steps showing the same module have the same graph node ids."""
        key = id(step.shown_module)
        if key not in by_module:
            by_module[key] = _weights_by_layer(step.graph, known)
        return by_module[key]

    for s in steps:  # layers that only weights name (no node of theirs is a binding)
        for layer in weights(s):
            if layer not in layers:
                layers.append(layer)
    col = {name: j for j, name in enumerate(layers)}
    nbytes = np.zeros((len(steps), len(layers)), np.int64)
    grew = np.zeros((len(steps), len(layers)), bool)
    nodes = [[""] * len(layers) for _ in steps]
    for i, s in enumerate(steps):
        now = weights(s)
        for layer, ws in now.items():
            nbytes[i, col[layer]] = sum(b for b, _ in ws)
            nodes[i][col[layer]] = ws[0][1]
        prev = s.previous
        if s.kind != "pass" or s.failed or s.children or prev is None or prev.kind == "source":
            continue  # growth is a leaf pass's: a nested pipeline's step repeats its children's
        before = weights(prev)
        for layer in now:
            old, new = sum(b for b, _ in before.get(layer, ())), nbytes[i, col[layer]]
            grew[i, col[layer]] = new - old >= min_bytes and new > old * (1 + threshold)
    rows = [i for i in range(len(steps)) if grew[i].any()]
    first_step = steps[rows[0]].index if rows else None
    first_layer = layers[int(np.argmax(grew[rows[0]]))] if rows else None
    return ParamMap(
        [s.index for s in steps],
        [s.name for s in steps],
        layers,
        nbytes,
        grew,
        nodes,
        first_step,
        first_layer,
        [s.depth for s in steps],
        threshold,
        min_bytes,
    )


__all__ = ["ParamMap", "param_map"]
