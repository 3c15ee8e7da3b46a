"""What `explore` accepts for passlens's own compiler, imported with its frontends.

A torch model is exported once with torch.export; the ExportedProgram is both the source
step's graph (FX nodes as the framework sees them, `explorer.sources.fx_graph_model`)
and what the frontend imports, so the source step and the IR share FX node names through
provenance. An ONNX model's source step shows its graph nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.ir import Module
from explorer.graph import GraphModel
from explorer.sources import fx_graph_model, is_onnx, is_torch, onnx_graph_model


@dataclass
class Imported:
    """An imported source: the IR module, the source graph as the framework shows it (or
    None) and the framework's name for it, the import step's name, the source object kept for
    reference runs, the frontend's name."""

    module: Module
    source_graph: GraphModel | None
    source_label: str
    name: str
    source: Any
    frontend: str


def import_source(source: Any, example_inputs: Any = None, **options) -> Imported:
    """Import any supported source into an IR module (see `explorer.explore`)."""
    if isinstance(source, Module):
        return Imported(source, None, "", "module", source, "ir")
    if isinstance(source, str) and ("def @" in source or source.lstrip().startswith("#")):
        from compiler.ir import parse

        module = parse(source, params=options.get("params"))
        return Imported(module, None, "", "parse", source, "text")
    if is_torch(source):
        return _import_torch(source, example_inputs, **options)
    if is_onnx(source):
        return _import_onnx(source, **options)
    raise TypeError(
        "explore() takes a torch.nn.Module, an ExportedProgram, an ONNX path / bytes / "
        f"ModelProto, an IR Module or IR text; got {type(source).__name__}"
    )


def _import_torch(model, example_inputs, dynamic_shapes=None, **options) -> Imported:
    from compiler.frontend import export_torch, from_torch

    args = example_inputs
    if args is not None and not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    # an ExportedProgram too: one that writes into views is functionalised, and the graph
    # shown and the per-node reference come from the program imported
    ep = export_torch(model, args, dynamic_shapes)
    module = from_torch(ep, args, dynamic_shapes=dynamic_shapes, **options)
    graph = fx_graph_model(ep)
    return Imported(
        module, graph, "torch.export", "from_torch", {"model": model, "exported": ep}, "torch"
    )


def _import_onnx(source, **options) -> Imported:
    from compiler.frontend import from_onnx, load_onnx

    proto = load_onnx(source)  # read once, checked: a clear error for a damaged file
    module = from_onnx(proto, **options)
    return Imported(module, onnx_graph_model(proto), "onnx", "from_onnx", {"model": proto}, "onnx")
