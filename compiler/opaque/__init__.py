"""The `opaque` op's machinery (the op itself is declared with the other op families, in
compiler/ops/opaque.py): an op of the source model that passlens has no converter for, run
by its own framework. None of it is an op family, so it is not in compiler/ops/:

- `layout`: its attributes' layout (input references, literals, targets, the result type)
  and `OpaqueOpError`; imports nothing that runs an op;
- `run`: running it with torch or onnxruntime, after the checks;
- `sizes`: sizing it before it runs (bounds, a memory budget, a child process for a whole
  ONNX model) and capturing what it prints;
- `allow`: which ops may run (the allowlist's rules, `trusted_ops`), and `allowlist`: the
  generated list of torch ops known to be pure (`python -m compiler.opaque.allow --regen`).

This package exports the names the rest of passlens uses: the sandbox every adapter's reference
run goes through (explorer/passlens/__init__.py's rule) and the CLI's `--trust-op`. Each keeps
the name it has in its module (`compiler.opaque.trusted_ops` is
`compiler.opaque.allow.trusted_ops`)."""

# The IR first: importing it registers every op, compiler/ops/opaque.py among them, which
# imports this package's modules (entered here first, ``layout`` would be half-initialised).
import compiler.ir  # noqa: F401, I001

# then what the rest of passlens uses, each under the name it has in its module
from compiler.opaque.allow import (  # which ops may run
    refusal,
    refused,
    refused_message,
    trust_names,
    trusted,
    trusted_ops,
)
from compiler.opaque.layout import RUNNERS, OpaqueOpError  # who runs one
from compiler.opaque.run import check_kernel_shapes
from compiler.opaque.sizes import (  # budget, child process, printed text
    BudgetError,
    ModelRefusedError,
    escape,
    memory_budget,
    run_onnx_model,
)

__all__ = [
    "RUNNERS",
    "BudgetError",
    "ModelRefusedError",
    "OpaqueOpError",
    "check_kernel_shapes",
    "escape",
    "memory_budget",
    "refusal",
    "refused",
    "refused_message",
    "run_onnx_model",
    "trust_names",
    "trusted",
    "trusted_ops",
]
