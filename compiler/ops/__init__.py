"""The op families and the names of the op registry (compiler/ir/op_registry.py). Importing
this package registers every op; compiler.ir imports it, so any use of the IR has them all."""

import importlib as _importlib
import pkgutil as _pkgutil

from compiler.ir.op_registry import (
    ANCHOR,
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    REDUCE,
    Attrs,
    AttrSpec,
    OpDef,
    TypeInferenceError,
    all_ops,
    define_op,
    get_op,
)

# Every module of this package other than the infrastructure is an op family: importing it
# registers its ops, so a new family only needs its own file.
_INFRASTRUCTURE = {"shape_inference"}
for _info in _pkgutil.iter_modules(__path__):
    if _info.name not in _INFRASTRUCTURE:
        _importlib.import_module(f"{__name__}.{_info.name}")

from compiler.ops.opaque import RUNNERS as OPAQUE_RUNNERS  # noqa: E402  (who runs an opaque op)
from compiler.ops.opaque_sizes import BudgetError, run_onnx_model  # noqa: E402
from compiler.ops.opaque_sizes import escape as escape_printed  # noqa: E402

__all__ = [
    "OPAQUE_RUNNERS",
    "BudgetError",
    "escape_printed",
    "run_onnx_model",
    "ANCHOR",
    "BROADCAST",
    "ELEMWISE",
    "INJECTIVE",
    "OPAQUE",
    "REDUCE",
    "Attrs",
    "AttrSpec",
    "OpDef",
    "TypeInferenceError",
    "all_ops",
    "define_op",
    "get_op",
]
