"""Imports every pass module of this package and of ``replicas/`` (registering the passes)
and defines the named pipelines. A new pass only needs its own file."""

import importlib
import pkgutil
from pathlib import Path

from compiler.passes.pipeline import register_alias, register_pipeline

_INFRASTRUCTURE = {
    "manager",
    "pipeline",
    "rewrite",
    "library",
    "attribute_form",
    "runner",
    "calling",
}

for _info in pkgutil.iter_modules([str(Path(__file__).parent)]):
    if _info.name not in _INFRASTRUCTURE:
        importlib.import_module(f"compiler.passes.{_info.name}")

register_alias("normalize", "infer-types")

register_pipeline(
    "default",
    "infer-types,canonicalize-bindings,dynamic-to-static,decompose-ops{ops=[linear,batch_norm]},"
    "fold-constant,dead-code-elimination,fuse-ops",
)
