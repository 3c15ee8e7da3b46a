"""Converters from ATen operators (as `torch.export` emits them) to IR ops.

Each converter is registered with `converts` for one or more targets and called as
`fn(ctx, node, args, kwargs)` with the FX node's arguments already converted: tensors are IR
expressions, symbolic sizes are dims (`int` or `SymExpr`), lists stay lists. It
returns an expression, a Python value (a dim, a list of expressions for `split`) or a tuple.
`ctx.arg(args, kwargs)` binds the arguments to the operator's schema by name, with defaults.

Types follow torch: every converter gives its result the dtype torch.export recorded for the
node (`ctx.out_dtype`), so `int_tensor * 2` stays an integer tensor and `int / int` is a
float division; Python scalars become 0-d constants of the dtype they combine with. Shapes that
torch already computed (reshape targets, factory sizes) are read from the node's recorded shape
rather than recomputed, so `-1` and symbolic sizes are resolved the way torch resolved them.

A converter may also register a *check* (`converts(..., check=fn)`): `fn(node)` returns why
an otherwise supported operator cannot be converted with these arguments (a transposed
convolution, batch norm in training mode), so the up-front check lists it with the others.

In-place variants (`relu_`, `add_`) use the converter of the functional op; the frontend
rebinds the mutated value. View/copy distinctions disappear: the IR has values, not storage.

One module per op family, named as compiler/ops/ names them (`elementwise`, `shape`,
`reduce`, `nn`, `index`) and `control` for torch's higher-order control flow (If and
Loop are IR nodes, not ops; frontend/onnx_ops/control.py has the same name). `common` holds
what the families share. Importing this package registers every converter: each module other
than the shared ones is a family, so a new family only needs its own file.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from compiler.frontend.torch_ops.common import as_tensor, cast, common_dtype, dim_tensor

SHARED = ("common",)  # the modules that are not an op family: what the families share

for _info in _pkgutil.iter_modules(__path__):
    if _info.name not in SHARED:
        _importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["cast", "as_tensor", "dim_tensor", "common_dtype"]
