"""What the check knows of one step when its detectors look at it: the run of its module, the
run of the module before it, the outputs compared with the reference, and the check's options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# the param-bloat defaults (what ``check`` takes when none are given)
BLOAT_THRESHOLD = 0.10  # relative growth of parameter bytes over the previous step
BLOAT_MIN_BYTES = 1024  # ... and at least this many bytes (folding a few literals is not bloat)

if TYPE_CHECKING:
    import numpy as np

    from compiler.ir import Expr
    from compiler.passes import CallingConvention
    from explorer.check.judge import Float64Reference
    from explorer.check.numbers import OutputsCompared
    from explorer.check.report import StepCheck
    from explorer.step import Step


@dataclass
class Run:
    """The results of running one module."""

    outputs: tuple | None = None
    # the outputs as judged: tied indices taken as the reference's (ties.py); None: ``outputs``
    judged: tuple | None = None
    error: BaseException | None = None
    error_node: Expr | None = None
    mismatches: list = field(default_factory=list)  # (TypeMismatch, function name)
    convention: CallingConvention | None = None
    get_calls: int = 0
    set_calls: int = 0
    generation: int = 0
    diverged: bool = False
    computed: int = 0
    reused: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class Options:
    """Every option of one check, as `explorer.check.check` / `Trace.check` take them: one
    object carries them from there to the adapter (`Adapter.check(trace, inputs, options)`),
    the `explorer.check.runner.Checker`, its step runner and the detectors
    (`facts.options`).

    `reference`: `"source"` or `"import"`; `rtol` / `atol`: the tolerance;
    `progress`: as for `check`; `bloat_threshold` / `bloat_min_bytes`: the param-bloat
    thresholds (relative growth of parameter bytes over the previous step, and at least this
    many bytes); `trust_ops`: opaque ops trusted for this check (`explorer.trust`)."""

    rtol: float = 1e-4
    atol: float = 1e-5
    bloat_threshold: float = BLOAT_THRESHOLD
    bloat_min_bytes: int = BLOAT_MIN_BYTES
    reference: str = "source"
    progress: Any = None
    trust_ops: Any = None

    def __post_init__(self) -> None:
        if self.reference not in ("source", "import"):
            raise ValueError(f"reference must be 'source' or 'import', got {self.reference!r}")


@dataclass
class Reference:
    """What the steps are compared with: its description (`torch eager (...)`), its short
    name for messages, and the per-node reference values: FX node values by name (torch) or
    the imported step's values by provenance key (other sources)."""

    description: str = ""
    name: str = ""
    fx_values: dict[str, np.ndarray] = field(default_factory=dict)
    node_values: dict = field(default_factory=dict)
    # the reference run in float64, made on first use (see judge.py); None: no such run
    float64: Float64Reference | None = None


@dataclass
class StepFacts:
    """One step as its detectors see it.

    `run` is None when the step's module was not run: the pass failed (`step.failed`), or
    the check has no inputs (then only detectors that need no numbers can report).
    `before` is the run of the module the pass started from (None for the import, or when
    that module was not run); `compared` the step's outputs against the reference (None when
    either is missing). `values` holds the node values of this run (per-node errors are read
    from them); `state` is the check-wide scratch space of the detectors, by kind name."""

    step: Step
    label: str  # "after <pass>" or "the import (<name>)": how messages name the step
    check: StepCheck
    options: Options
    reference: Reference
    run: Run | None = None
    before: Run | None = None
    compared: OutputsCompared | None = None
    values: dict = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
