"""What `explore(..., compiler="tvm")` accepts, imported with TVM's own frontends.

A torch `nn.Module` is exported once with torch.export (passlens's `export_torch`), then
decomposed as TVM's `from_exported_program` does by default; the decomposed program is
both the source step's graph and what TVM's ExportedProgram importer reads, so each imported
binding can name the FX node it came from (its provenance). An ONNX path, bytes or ModelProto
goes through `tvm.relax.frontend.onnx.from_onnx`; a `tvm.IRModule` is taken as it is.
Weights keep the names the source model gives them (a TVM constant holding a parameter's
content is shown as that parameter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.ir import Provenance
from explorer.graph import GraphModel
from explorer.tvm.module import TVMState


@dataclass
class TVMImported:
    """An imported source: the TVM IRModule, the source graph (or None) and its label, the
    import step's name, the source kept for reference runs, the frontend's name."""

    module: Any
    source_graph: GraphModel | None
    source_label: str
    name: str
    source: Any
    frontend: str


def import_tvm_source(source: Any, example_inputs: Any, state: TVMState, **options) -> TVMImported:
    """Import `source` with TVM (see the module docstring)."""
    import tvm

    from explorer.sources import is_onnx, is_torch

    if isinstance(source, tvm.IRModule):
        if options:
            raise TypeError(f"options {sorted(options)} apply to a torch or ONNX source")
        return TVMImported(source, None, "", "module", source, "relax")
    if is_torch(source):
        return _import_torch(source, example_inputs, state, **options)
    if is_onnx(source):
        return _import_onnx(source, state, **options)
    raise TypeError(
        "explore(compiler='tvm') takes a torch.nn.Module, an ExportedProgram, an ONNX path / "
        f"bytes / ModelProto or a tvm.IRModule; got {type(source).__name__}"
    )


def _import_torch(
    model: Any,
    example_inputs: Any,
    state: TVMState,
    dynamic_shapes: Any = None,
    keep_params_as_input: bool = False,
    unwrap_unit_return_tuple: bool = False,
    no_bind_return_tuple: bool = False,
    custom_convert_map: Any = None,
    run_ep_decomposition: bool = True,
) -> TVMImported:
    from compiler.frontend import export_torch
    from explorer.sources import fx_graph_model

    args = example_inputs
    if args is not None and not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    ep = export_torch(model, args, dynamic_shapes)
    program = ep.run_decompositions() if run_ep_decomposition else ep
    module, env = _from_exported_program(
        program,
        keep_params_as_input=keep_params_as_input,
        unwrap_unit_return_tuple=unwrap_unit_return_tuple,
        no_bind_return_tuple=no_bind_return_tuple,
        custom_convert_map=custom_convert_map,
    )
    state.name_weights(_torch_weights(program), "torch")
    for node, value in (env or {}).items():
        _learn_provenance(state, node, value)
    _spread_provenance(state, module)
    return TVMImported(
        module,
        fx_graph_model(program),
        "torch.export",
        "from_exported_program",
        {"model": model, "exported": ep},
        "torch",
    )


def _from_exported_program(program: Any, **kw: Any) -> tuple[Any, dict | None]:
    """TVM's importer, keeping its map from FX nodes to Relax values (for provenance); the
    public function when the importer class is not where this TVM keeps it."""
    try:
        from tvm.relax.frontend.torch.exported_program_translator import (
            ExportedProgramImporter,
        )
    except ImportError:
        ExportedProgramImporter = None
    if ExportedProgramImporter is not None:
        importer = ExportedProgramImporter()
        try:
            module = importer.from_exported_program(
                program,
                kw["keep_params_as_input"],
                kw["unwrap_unit_return_tuple"],
                kw["no_bind_return_tuple"],
                kw["custom_convert_map"],
            )
        except TypeError:  # another signature: the public function below
            pass
        else:
            return module, dict(getattr(importer, "env", {}) or {})
    from tvm.relax.frontend.torch import from_exported_program

    return from_exported_program(program, run_ep_decomposition=False, **kw), None


def _torch_weights(program: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tables = [program.state_dict, getattr(program, "constants", {}) or {}]
    for table in tables:
        for name, t in table.items():
            try:
                out.setdefault(name, t.detach().cpu().contiguous().numpy())
            except (TypeError, RuntimeError, AttributeError):  # not a numpy dtype: unnamed
                continue
    return out


def _learn_provenance(state: TVMState, node: Any, value: Any) -> None:
    if not hasattr(value, "id_") or type(value).__name__ not in ("Var", "DataflowVar"):
        return
    stack = node.meta.get("nn_module_stack") or {}
    path = list(stack.values())[-1][0] if stack else None
    state.var_prov.setdefault(
        value.id_,
        Provenance(
            framework="torch",
            module_path=path or None,
            source_op=str(node.target),
            source_node=str(node.name),
        ),
    )
    state.alive.append(value)


def _spread_provenance(state: TVMState, module: Any) -> None:
    """Bindings the importer emitted on its way to an FX node's value (a conv's conv2d before
    its bias add) get that node's provenance: the next binding in order that has one."""
    from tvm import relax

    for _, fn in module.functions_items():
        if not isinstance(fn, relax.Function) or not isinstance(fn.body, relax.SeqExpr):
            continue
        pending = []
        for block in fn.body.blocks:
            for binding in block.bindings:
                prov = state.var_prov.get(binding.var.id_)
                if prov is None:
                    pending.append(binding.var)
                    continue
                for var in pending:
                    state.var_prov[var.id_] = prov
                    state.alive.append(var)
                pending = []


def _import_onnx(source: Any, state: TVMState, **options: Any) -> TVMImported:
    from onnx import numpy_helper
    from tvm.relax.frontend.onnx import from_onnx

    from compiler.frontend import load_onnx
    from explorer.sources import onnx_graph_model

    proto = load_onnx(source)
    module = from_onnx(proto, **options)
    named = {}
    for init in proto.graph.initializer:
        try:
            named[init.name] = numpy_helper.to_array(init)
        except Exception:  # a tensor numpy cannot hold: it keeps a const<k> name
            continue
    state.name_weights(named, "onnx")
    return TVMImported(
        module, onnx_graph_model(proto), "onnx", "from_onnx", {"model": proto}, "onnx"
    )


__all__ = ["TVMImported", "import_tvm_source"]
