"""Converters from ONNX operators to IR ops, one function per ONNX op or family, in one module
per op family. Importing this package registers every converter: each module other than the
registry is a family, so a new family only needs its own file (see `registry` for how a
converter is declared)."""

import importlib as _importlib
import pkgutil as _pkgutil

from compiler.frontend.onnx_ops.registry import (
    CONVERTERS,
    NOT_CONVERTED,
    OLDER_CONVERTERS,
    OnnxConverter,
    converter,
    converter_for,
    oldest_version,
    supported_ops,
)

for _info in _pkgutil.iter_modules(__path__):
    if _info.name != "registry":
        _importlib.import_module(f"{__name__}.{_info.name}")

__all__ = [
    "CONVERTERS",
    "NOT_CONVERTED",
    "OLDER_CONVERTERS",
    "OnnxConverter",
    "converter",
    "converter_for",
    "oldest_version",
    "supported_ops",
]
