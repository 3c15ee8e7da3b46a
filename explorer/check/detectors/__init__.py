"""The detectors of the check, one module per kind of finding, and their registry.

A new kind of finding is a new module here (a `detect(facts) -> list[Finding]` function and
its `KIND`) plus one line in `KINDS`. The order of `KINDS` is the order findings of one
step are listed in."""

from __future__ import annotations

from explorer.check.detectors import (
    diverged,
    param_bloat,
    pass_failed,
    run_failed,
    shape_mismatch,
    signature_changed,
)
from explorer.check.registry import register

KINDS = register(
    pass_failed.KIND,
    run_failed.KIND,
    shape_mismatch.KIND,
    diverged.KIND,
    param_bloat.KIND,
    signature_changed.KIND,
)

__all__ = ["KINDS"]
