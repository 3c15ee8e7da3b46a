"""Tied embeddings through the default pipeline (issue 29, item 5): parameter bytes at every
step, the compiled build's weight bytes, and the time of one forward compiled and interpreted.

    .venv/bin/python bench/tied_weights.py [VOCAB DIM]

The model: an embedding table (VOCAB x DIM) read by ``take``, a DIM x DIM linear layer with
tanh, and an output layer tied to the table (``nn.Linear`` sharing its weight), at batch 1,
sequence 16. Before issue 29 fold-constant wrote the output layer's weight transposed beside
the table (a second copy); now the matmul reads the table with ``transpose_b``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(vocab: int = 16000, dim: int = 512) -> None:
    import numpy as np
    import torch

    import explorer
    from compiler.interpret import run

    class TiedLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, dim)
            self.fc = torch.nn.Linear(dim, dim)
            self.lm_head = torch.nn.Linear(dim, vocab, bias=False)
            self.lm_head.weight = self.embed.weight

        def forward(self, ids):
            return self.lm_head(torch.tanh(self.fc(self.embed(ids))))

    torch.manual_seed(0)
    model = TiedLM().eval()
    ids = torch.randint(0, vocab, (1, 16))
    trace = explorer.explore(model, (ids,), "default,legalize-ops,codegen", progress=False)
    table = vocab * dim * 4
    print(f"== tied LM, vocab {vocab}, dim {dim}: table {table / 1e6:.1f} MB")
    for step in trace.steps:
        if step.module is not None and step.kind != "source":
            print(f"  #{step.index} {step.name}: params {step.param_bytes / 1e6:.1f} MB")
    exe = trace["codegen"].executable()
    x = ids.numpy()
    compiled = _best(lambda: exe(x))
    default = trace["default"].module
    interpreted = _best(lambda: run(default, x), repeat=3)
    with torch.no_grad():
        eager = _best(lambda: model(ids))
    (got,) = exe(x)
    err = float(np.abs(got - model(ids).detach().numpy()).max())
    print(f"  compiled build weights: {exe.param_bytes / 1e6:.1f} MB")
    ms = f"compiled {compiled * 1e3:.2f} ms, interpreter {interpreted * 1e3:.1f} ms"
    print(f"  one forward: {ms}")
    print(f"  (torch eager {eager * 1e3:.2f} ms); compiled vs eager max abs diff {err:.1e}")


if __name__ == "__main__":
    main(*[int(a) for a in sys.argv[1:3]])
