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
_INFRASTRUCTURE = {"shape_inference", "opaque_allow", "opaque_allowlist"}  # not op families
for _info in _pkgutil.iter_modules(__path__):
    if _info.name not in _INFRASTRUCTURE:
        _importlib.import_module(f"{__name__}.{_info.name}")

from compiler.ops.opaque import RUNNERS as OPAQUE_RUNNERS  # noqa: E402  (who runs an opaque op)
from compiler.ops.opaque import OpaqueOpError  # noqa: E402
from compiler.ops.opaque_run import check_kernel_shapes  # noqa: E402
from compiler.ops.opaque_sizes import BudgetError, memory_budget, run_onnx_model  # noqa: E402
from compiler.ops.opaque_sizes import escape as escape_printed  # noqa: E402

# which opaque ops may run (compiler/ops/opaque_allow.py), imported when first asked for
_OPAQUE_TRUST = (
    "opaque_refusal",
    "refused_message",
    "refused_opaque_ops",
    "trust_names",
    "trusted_opaque_ops",
    "trusted_ops",
)


def __getattr__(name: str):
    if name in _OPAQUE_TRUST:
        from compiler.ops import opaque_allow

        return getattr(
            opaque_allow,
            {
                "opaque_refusal": "refusal",
                "refused_opaque_ops": "refused",
                "trusted_opaque_ops": "trusted",
            }.get(name, name),
        )
    raise AttributeError(f"module 'compiler.ops' has no attribute {name!r}")


__all__ = [
    "OPAQUE_RUNNERS",
    "BudgetError",
    "OpaqueOpError",
    "check_kernel_shapes",
    "escape_printed",
    "memory_budget",
    "run_onnx_model",
    *_OPAQUE_TRUST,
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
