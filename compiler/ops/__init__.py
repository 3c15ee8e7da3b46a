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

__all__ = [
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
