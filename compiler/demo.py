"""``make demo``: what the compiler core can do today, on a small bundled model.

Parses a hand-written two-layer MLP in the text format, verifies it, prints it back, runs it
in the numpy interpreter (checked against numpy written out by hand), then runs the default
pass pipeline and prints one line per recorded pass application.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from compiler import passes
from compiler.interpret import run
from compiler.ir import parse, print_module, verify

MLP = """\
# passlens IR
weights {
  $fc1.weight: f32[64, 32]
  $fc1.bias: f32[64]
  $fc2.weight: f32[10, 64]
  $fc2.bias: f32[10]
  $scale: f32[] = 0.5
}

def @main(%x: f32[batch, 32]) -> f32[batch, 10] attrs {num_input = 1} {
  %h: f32[batch, 64] = linear(%x, $fc1.weight, $fc1.bias)
  %a: f32[batch, 64] = gelu(%h, approximate="none")
  %s: f32[] = multiply($scale, const(f32[], 2.0))
  %b: f32[batch, 64] = multiply(%a, %s)
  %dead: f32[batch, 64] = exp(%a)
  %y: f32[batch, 10] = linear(%b, $fc2.weight, $fc2.bias)
  %p: f32[batch, 10] = softmax(%y, axis=-1)
  return %p
}
"""


def main() -> int:
    """Run the demo; returns a process exit code."""
    rng = np.random.default_rng(0)
    weights = {
        "fc1.weight": rng.standard_normal((64, 32)).astype(np.float32) * 0.2,
        "fc1.bias": rng.standard_normal(64).astype(np.float32),
        "fc2.weight": rng.standard_normal((10, 64)).astype(np.float32) * 0.2,
        "fc2.bias": rng.standard_normal(10).astype(np.float32),
    }
    module = parse(MLP, params=weights)
    verify(module)
    text = print_module(module, max_inline=1)
    assert parse(text, params=weights) is not None
    print("== the module, parsed, verified and printed back ==")
    print(text)

    x = rng.standard_normal((4, 32)).astype(np.float32)
    (probs,) = run(module, x)
    from scipy.special import erf

    h = x @ weights["fc1.weight"].T + weights["fc1.bias"]
    a = 0.5 * h * (1 + erf(h / np.sqrt(2)))
    y = a @ weights["fc2.weight"].T + weights["fc2.bias"]
    e = np.exp(y - y.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    err = float(np.abs(probs - want).max())
    print(f"== interpreter on a (4, 32) input: output {probs.shape}, max |error| vs numpy {err:.2e}")

    start = time.perf_counter()
    result = passes.run(module, "default")
    print(f"== default pipeline ({(time.perf_counter() - start) * 1000:.1f} ms) ==")
    for s in result.snapshots:
        print(f"  #{s.index:<2} {'  ' * s.depth}{s.pass_name:<24} {s.status:<9} "
              f"{s.seconds * 1000:6.2f} ms")
    print(print_module(result.module, max_inline=1))
    (after,) = run(result.module, x)
    err2 = float(np.abs(after - probs).max())
    print(f"== after the pipeline: max |difference| {err2:.2e}")
    return 0 if err < 1e-5 and err2 < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
