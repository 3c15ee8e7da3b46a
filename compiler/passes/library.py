"""Imports every pass module (registering the passes) and defines the named pipelines."""

from compiler.passes import (  # noqa: F401
    canonicalize_bindings,
    dead_code_elimination,
    fold_constant,
    infer_types,
)
from compiler.passes.manager import _PASSES
from compiler.passes.pipeline import _ALIASES, register_pipeline

_ALIASES["normalize"] = "infer-types"

register_pipeline(
    "default",
    "infer-types,canonicalize-bindings,fold-constant,dead-code-elimination",
)

__all__ = ["_PASSES"]
