"""The op registry and the op families. Importing this package registers every op."""

from compiler.ops import elementwise, index, reduce, shape  # noqa: F401  (registers ops)
from compiler.ops.registry import (
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
