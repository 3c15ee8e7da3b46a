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

# Every module of this package is an op family (tests/compiler/test_structure.py checks it):
# importing it registers its ops, so a new family only needs its own file. What is not a family
# lives elsewhere: the type-inference helpers in compiler/ir/shape_inference.py, the opaque
# op's machinery (its layout, running, sizing, the allowlist) in compiler/opaque/.
for _info in _pkgutil.iter_modules(__path__):
    _importlib.import_module(f"{__name__}.{_info.name}")

# the opaque op's machinery, exported here (docs/reference.md names compiler.ops.trusted_ops)
from compiler.opaque.layout import RUNNERS as OPAQUE_RUNNERS  # noqa: E402  (who runs one)
from compiler.opaque.layout import OpaqueOpError  # noqa: E402
from compiler.opaque.run import check_kernel_shapes  # noqa: E402
from compiler.opaque.sizes import BudgetError, memory_budget, run_onnx_model  # noqa: E402
from compiler.opaque.sizes import escape as escape_printed  # noqa: E402

# which opaque ops may run (compiler/opaque/allow.py), imported when first asked for
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
        import compiler.opaque.allow as allow

        return getattr(
            allow,
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
