"""The ``opaque`` op's machinery (the op itself is declared with the other op families, in
compiler/ops/opaque.py): an op of the source model that passlens has no converter for, run
by its own framework. None of it is an op family, so it is not in compiler/ops/:

- ``layout``: its attributes' layout (input references, literals, targets, the result type)
  and ``OpaqueOpError``; imports nothing that runs an op;
- ``run``: running it with torch or onnxruntime, after the checks;
- ``sizes``: sizing it before it runs (bounds, a memory budget, a child process for a whole
  ONNX model) and capturing what it prints;
- ``allow``: which ops may run (the allowlist's rules, ``trusted_ops``), and ``allowlist``: the
  generated list of torch ops known to be pure (``python -m compiler.opaque.allow --regen``).

``compiler.ops`` exports the names the rest of passlens uses (``trusted_ops``,
``OpaqueOpError``, ``check_kernel_shapes``, ...)."""

# The IR first: importing it registers every op, compiler/ops/opaque.py among them, which
# imports this package's modules (entered here first, ``layout`` would be half-initialised).
import compiler.ir  # noqa: F401, E402
