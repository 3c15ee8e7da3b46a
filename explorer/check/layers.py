"""The error map: after a check, each source layer's error against the reference at every step.

A *layer* is where a node came from in the source model: its provenance `module_path`
(`features.0.conv`, the innermost torch module; ONNX models exported from torch carry the
same paths), or for an ONNX node with no module scope its node name (a hand-written ONNX
graph has no modules: each node is its own unit). Nodes with neither (an IR model without
provenance, ops torch ran outside any submodule) are in no layer. Layers are listed in model
order: where their output is made (their last node) in the imported step's `@main`, so that
a block's own output (its residual add) follows the layers inside it, and the first layer
beyond tolerance is the one the `diverged` finding names, not the block around it.

The check records, for every step it runs, each layer's output against the reference as a
`LayerError` (`StepCheck.layers`; see `layer_errors.py`): node values are released
during the check, so only these few floats are kept. `error_map` lays them out as a
matrix, `ErrorMap`, for `Report.error_map()` and the views."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from compiler.ir import Expr, Module
from explorer.fmt import num

if TYPE_CHECKING:
    from explorer.step import Step, TraceSteps


def layer_of(node: Expr) -> str | None:
    """The source layer `node` came from (see the module docstring), or None."""
    p = node.prov
    if p.module_path:
        return p.module_path
    if p.framework == "onnx" and p.source_node:
        return p.source_node
    return None


def layer_order(trace: TraceSteps, steps: list[Step] | None = None) -> list[str]:
    """Layers in model order: by where their output is made in the imported step's `@main`
    (the position of their last node: a block's own residual add comes after the layers
    inside it, as it runs), then those first seen in later steps (of `steps`: by default
    every step), in step order."""
    imported = trace.imported
    done: set[int] = set()
    order: list[str] = []
    for step in [imported, *(steps or trace.steps)]:
        module = step.module
        if module is None or id(module) in done:
            continue
        if isinstance(module, Module):
            if "main" not in module:
                continue
            names = (layer_of(node) for node in module["main"].iter_nodes())
        else:  # another compiler's module: the module paths of its step's graph, in order
            names = (n.group or None for n in step.graph.nodes.values() if n.kind == "op")
        done.add(id(module))
        last: dict[str, int] = {}
        for k, layer in enumerate(names):
            if layer is not None:
                last[layer] = k
        known = set(order)
        order += sorted((name for name in last if name not in known), key=last.__getitem__)
    return order


@dataclass(frozen=True)
class LayerError:
    """A layer's output at one step against the reference: the max relative error
    `|value - ref| / (|ref| + atol)`, the max share of the tolerance it uses,
    `|value - ref| / (atol + rtol * |ref|)` (above 1 some element is beyond tolerance, as
    for the check's `diverged`), and the node whose value stands for the layer's output
    (the last of the layer's nodes, in binding order, matched with a reference value)."""

    max_rel: float
    tolerance: float
    node: Expr
    # beyond the tolerance and judged against the float64 run (judge.py): the share of its
    # allowance used (above 1: further from float64 than the reference, over 3x); None when
    # within the tolerance or no float64 value judged it
    float64: float | None = None

    @property
    def rule(self) -> str:
        """What judged the cell: "float64" or "tolerance"."""
        return "float64" if self.float64 is not None else "tolerance"

    @property
    def beyond(self) -> bool:
        """Whether the layer is wrong: elements beyond tolerance, and (when the float64 run
        judged it) further from float64 than the reference is."""
        if self.float64 is not None:
            return self.tolerance > 1 and not self.float64 <= 1
        return self.tolerance > 1


class LayerGrid:
    """What the error map and the parameter map share: one row per step (`steps`, their
    indices), one column per source layer (`layers`, in model order)."""

    steps: list[int]
    layers: list[str]

    def row(self, step: int) -> int:
        """The row of step index `step`."""
        return self.steps.index(step)

    def column(self, layer: str) -> int:
        """The column of `layer`."""
        return self.layers.index(layer)

    #: the array attributes a REPL's repr names (what the map holds, without their values)
    _arrays: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """What `str` says and what the map holds: one line in a plain REPL, not the
        dataclass's dump of every array (Jupyter draws the heat map instead)."""
        held = ", ".join(f".{name}" for name in (*self._arrays, "first_step", "first_layer"))
        return f"<{type(self).__name__}: {self}; {held}>"


@dataclass(repr=False)
class ErrorMap(LayerGrid):
    """One row per step, one column per source layer (in model order): `errors[i, j]` is
    the max relative error of layer `layers[j]`'s output at step `steps[i]` against the
    reference, NaN where the step has no node of that layer matched with a reference value
    (or was not run). `tolerance` holds the max share of the tolerance each cell uses
    (`|x - ref| / (atol + rtol * |ref|)`: the relative error of a value near zero is large
    however small the difference). A cell beyond it is judged again against the float64 run
    where there is one (`explorer/check/judge.py`, the rule of the `diverged` verdict):
    `float64` holds the share of that rule's allowance (NaN where it did not judge) and
    `over` marks the cells that are wrong by the rule that judged them. `nodes[i][j]` is
    the graph node id of the node standing for the cell (`""` for a blank cell), the one a
    view selects when the cell is clicked.

    `first_step` is the first failing step (the step of the report's first `diverged`
    finding), `first_layer` the first layer, in model order, beyond tolerance there (None
    when nothing diverged, or no layer at that step is beyond tolerance)."""

    steps: list[int]
    step_names: list[str]
    layers: list[str]
    errors: np.ndarray
    tolerance: np.ndarray
    over: np.ndarray
    nodes: list[list[str]] = field(repr=False)
    first_step: int | None
    first_layer: str | None
    depths: list[int] = field(default_factory=list, repr=False)  # each row's nesting depth
    rtol: float = 1e-4
    atol: float = 1e-5
    float64: np.ndarray | None = field(default=None, repr=False)
    _arrays = ("errors", "tolerance", "over")

    def rule(self, i: int, j: int) -> str:
        """What judged cell `(i, j)`: "float64" or "tolerance"."""
        f = self.float64
        return "float64" if f is not None and not np.isnan(f[i, j]) else "tolerance"

    def __str__(self) -> str:
        head = f"error map: {len(self.steps)} steps x {len(self.layers)} layers"
        if self.first_step is None:
            return head + "; no step diverged"
        i = self.row(self.first_step)
        text = f"{head}; first failing step #{self.first_step} {self.step_names[i]}"
        if self.first_layer is not None:
            rel = self.errors[i, self.column(self.first_layer)]
            text += f", first layer beyond tolerance there: {self.first_layer} ({num(rel)} rel)"
        return text

    def _repr_html_(self) -> str:
        """The heat map, in Jupyter (the output of `report.error_map()` in a cell)."""
        from widgets.error_map import MAP_CSS, error_map_html

        return f"<style>{MAP_CSS}</style>{error_map_html(self)}"


class Checked(Protocol):
    """A check report as the error map reads it (a `report.Report` is one; the report module
    imports this one, so the annotation here names this protocol): its trace, the numbers of
    each step (`StepCheck`: step, same_as, layers) and its findings."""

    trace: TraceSteps
    steps: list
    findings: list


def error_map(report: Checked) -> ErrorMap:
    """The `ErrorMap` of a check `report` (every step but the source graph, which
    is the reference)."""
    checks = [c for c in report.steps if c.step.kind != "source"]
    by_index = {c.step.index: c for c in report.steps}
    layers = layer_order(report.trace, [c.step for c in checks])
    if not any(c.layers for c in checks) and not any(
        isinstance(c.step.module, Module) for c in checks
    ):
        layers = []  # a compiler whose check measures no layer: no map of blank columns
    col = {name: j for j, name in enumerate(layers)}
    errors = np.full((len(checks), len(layers)), np.nan)
    tolerance = np.full((len(checks), len(layers)), np.nan)
    float64 = np.full((len(checks), len(layers)), np.nan)
    over = np.zeros((len(checks), len(layers)), bool)
    nodes = [[""] * len(layers) for _ in checks]
    for i, c in enumerate(checks):
        source = by_index.get(c.same_as, c) if c.same_as is not None else c
        if not source.layers:
            continue
        graph = source.step.graph  # the same module as this step's: the same node ids
        for name, err in source.layers.items():
            j = col.get(name)
            if j is None:
                continue
            errors[i, j], tolerance[i, j] = err.max_rel, err.tolerance
            if err.float64 is not None:
                float64[i, j] = err.float64
            over[i, j] = err.beyond
            shown = graph.node_of(err.node)
            nodes[i][j] = shown.id if shown is not None else ""
    first = next((f for f in report.findings if f.kind == "diverged"), None)
    first_step = first_layer = None
    # (a report read from a file may put it at a step without a row: then none is marked)
    at = first.step.index if first is not None else None
    i = next((k for k, c in enumerate(checks) if c.step.index == at), None)
    if i is not None:
        first_step = first.step.index
        j = next((j for j in range(len(layers)) if over[i, j]), None)
        first_layer = layers[j] if j is not None else None
    return ErrorMap(
        [c.step.index for c in checks],
        [c.step.name for c in checks],
        layers,
        errors,
        tolerance,
        over,
        nodes,
        first_step,
        first_layer,
        [c.step.depth for c in checks],
        report.rtol,
        report.atol,
        float64,
    )


__all__ = ["ErrorMap", "LayerError", "error_map", "layer_of", "layer_order"]
