"""Frontends: `from_torch` (torch.export, also alone as `export_torch`) and `from_onnx`
(and `load_onnx`). `to_onnx` lives in `compiler.export`; the name stays here too, as it
always has (DESIGN.md lists it)."""

from compiler.frontend.errors import FrontendError, UnsupportedOperatorError
from compiler.frontend.locations import source_location


def from_torch(model, example_args=None, dynamic_shapes=None, keep_params_as_input=False, **kw):
    """Import a torch.nn.Module or ExportedProgram through torch.export (see torch_frontend)."""
    from compiler.frontend.torch_frontend import from_torch as _from_torch

    return _from_torch(model, example_args, dynamic_shapes, keep_params_as_input, **kw)


def export_torch(model, example_args=None, dynamic_shapes=None, example_kwargs=None):
    """torch.export a model as `from_torch` does: eval mode, errors as FrontendError; an
    ExportedProgram is returned as it is (see torch_frontend)."""
    from compiler.frontend.torch_frontend import export_torch as _export_torch

    return _export_torch(model, example_args, dynamic_shapes, example_kwargs)


def from_onnx(model, **kw):
    """Import an ONNX model from a path, bytes or ModelProto (see onnx_frontend)."""
    from compiler.frontend.onnx_frontend import from_onnx as _from_onnx

    return _from_onnx(model, **kw)


def load_onnx(model):
    """An ONNX model (path, bytes or ModelProto) as a ModelProto, read once and checked, so a
    damaged file gets a clear error (see onnx_frontend.load_model)."""
    from compiler.frontend.onnx_frontend import load_model

    return load_model(model)


def to_onnx(module, **kw):
    """Export a module as an onnx.ModelProto (`compiler.export.to_onnx`)."""
    from compiler.export import to_onnx as _to_onnx

    return _to_onnx(module, **kw)


__all__ = [
    "from_torch",
    "export_torch",
    "from_onnx",
    "load_onnx",
    "to_onnx",
    "FrontendError",
    "UnsupportedOperatorError",
    "source_location",
]
