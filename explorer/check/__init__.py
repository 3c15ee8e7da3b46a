"""Check every step of a trace: numerics against the reference, shapes, parameters, failures.

`check(trace, inputs)` runs the reference (torch eager, onnxruntime, or for an IR source the
imported step itself) and every step's module on the same inputs, and returns a
`Report` of `Finding` s:

- `diverged`: a step's outputs differ from the reference beyond `atol + rtol * |ref|`
  and, where a float64 run of the source exists (torch's exported graph, onnxruntime on the
  model cast to float64), are further from it than the reference is, by over 3x (float32
  rounding on a wide model is not a bug; see `judge.py`: every verdict names its rule),
  reported where the divergence starts (the first such step, or a step that changed the
  numbers again), naming the earliest IR node that differs from the reference node it came
  from: the FX node named by its provenance (torch), or the imported step's node with the same
  provenance (other sources);
- `shape-mismatch`: a node whose computed value disagrees with its annotated type, at the
  step that made the node;
- `param-bloat`: parameter bytes grew by more than `bloat_threshold` over the previous
  step, naming the parameters responsible (with `explorer.diff`: "N copies of `W`");
- `signature-changed` (info, never a failure): the way `@main` is called changed (after
  lift-transform-params the check runs `@main_transform_params` on the weights, then
  `@main`; after the lazy passes it serves `get_item` / collects `set_item`);
- `pass-failed`: a pass raised, with the binding it failed on;
- `run-failed`: a step's module could not be run by the interpreter.

Steps are run children before their parent (a nested pipeline's step shows its last child's
module) and a module already run is not run again. Values are reused two ways: one
`interpret.ValueCache` serves the whole trace, so a node several snapshots share is computed
once; and a node a pass rebuilt around the very same values (a matmul whose weight is now a
folded constant viewing the same memory, a body outlined by fuse-ops) takes the value
computed before (see `explorer.passlens.memo.Memo`). Cached values of calls whose callee
changed, and of all that depends on them, are dropped before a run; a value is dropped after
the last step using it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler import LimitError
from explorer.adapters import get_adapter, is_adapter_name
from explorer.check.detectors import KINDS
from explorer.check.facts import BLOAT_MIN_BYTES, BLOAT_THRESHOLD, Options
from explorer.check.layers import ErrorMap, LayerError
from explorer.check.param_map import ParamMap
from explorer.check.registry import Kind
from explorer.check.report import (
    NODE_ERRORS_KEPT,
    CheckError,
    Finding,
    NodeError,
    Progress,
    Report,
    StepCheck,
)
from explorer.trust import trusting

SEVERITY = {kind.name: kind.severity for kind in KINDS}  # the severity of each built-in kind

if TYPE_CHECKING:  # a Step / Trace is given; the trace module imports this one
    from explorer.step import TraceSteps


def check(
    trace: TraceSteps,
    inputs: Any = None,
    reference: str = "source",
    rtol: float = 1e-4,
    atol: float = 1e-5,
    progress: Progress | bool | None = None,
    bloat_threshold: float = BLOAT_THRESHOLD,
    bloat_min_bytes: int = BLOAT_MIN_BYTES,
    trust_ops=None,
) -> Report:
    """Run the reference and every step of `trace` on `inputs` (default: the trace's
    example inputs; numpy arrays or torch tensors) and report what went wrong where.

    `reference`: `"source"` (torch eager / onnxruntime; the imported step for IR
    sources) or `"import"` (the imported step's results). `progress`: a callback
    `(step_index, total, name)`, or what `explorer.progress` shows (None: a bar in a
    terminal or in Jupyter when the check takes a while, a line in CI logs for a long one;
    True: at once; False: nothing).

    An opaque op not known to be a pure computation runs only when trusted: by `trust_ops`
    (`["mylib.scale"]`, `["com.example::Op"]`), by the trace itself (a live torch model's
    own ops) or by the context (`compiler.opaque.trusted_ops`); a trace holding any other is
    refused before anything runs (OpaqueOpError, naming each op; see explorer.trust).
    """
    options = Options(
        rtol, atol, bloat_threshold, bloat_min_bytes, reference, progress, trust_ops
    )  # one object from here to the adapter, its step runner and the detectors
    compiler = getattr(trace, "compiler", "passlens")
    if not is_adapter_name(compiler):
        raise NotImplementedError(f"trace.check cannot run the steps of a {compiler} trace")
    try:  # how the steps run: the compiler's adapter (explorer.adapters)
        with trusting(trace, options.trust_ops):
            return get_adapter(compiler).check(trace, inputs, options)
    except MemoryError as e:  # what no size limit foresaw: one clear error, not a raw one
        raise LimitError(
            f"the check ran out of memory ({type(e).__name__}: {str(e)[:200] or 'no details'}); "
            "check smaller inputs, or fewer steps (a shorter pipeline)"
        ) from None


__all__ = [
    "BLOAT_MIN_BYTES",
    "BLOAT_THRESHOLD",
    "NODE_ERRORS_KEPT",
    "SEVERITY",
    "KINDS",
    "CheckError",
    "ErrorMap",
    "Finding",
    "Kind",
    "LayerError",
    "NodeError",
    "Options",
    "ParamMap",
    "Report",
    "StepCheck",
    "check",
]
