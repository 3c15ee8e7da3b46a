"""Imports every pass module of this package and of ``replicas/`` (registering the passes)
and defines the named pipelines. A new pass only needs its own file."""

import importlib
import pkgutil

import compiler.passes as _pkg
from compiler.passes.pipeline import _ALIASES, register_pipeline

_INFRASTRUCTURE = {"manager", "pipeline", "rewrite", "library", "attribute_form", "runner"}

for _info in pkgutil.iter_modules(_pkg.__path__):
    if _info.name not in _INFRASTRUCTURE:
        importlib.import_module(f"compiler.passes.{_info.name}")

_ALIASES["normalize"] = "infer-types"

register_pipeline(
    "default",
    "infer-types,canonicalize-bindings,dynamic-to-static,decompose-ops{ops=[linear,batch_norm]},"
    "fold-constant,dead-code-elimination,fuse-ops",
)
