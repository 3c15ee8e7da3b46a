"""Recording overhead of ``explore(model, args, compiler="inductor")`` against torch.compile's
own compile time (Inductor, CPU) on a small transformers model: a 2-layer GPT-2 (random
weights, hidden 128, 4 heads, vocabulary 1000; input 1 x 32 tokens).

Both runs start from ``torch._dynamo.reset()`` with the same caches off (the FX graph cache and
AOTAutograd's cache: a hit would skip the passes) and the C++ kernel build cache on (a kernel
built once is reused by both: the first run of the process builds them and is not timed).
Runs alternate plain / recorded; median and minimum are printed. Goal (issue 32): recorded at
most 1.2x plain.

    .venv/bin/python bench/inductor_overhead.py [--reps N] [--layers N] [--model gpt2|llama]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_model(kind: str, layers: int):
    """A small transformers model with random weights and its input ids."""
    import torch
    import transformers

    torch.manual_seed(0)
    if kind == "gpt2":
        config = transformers.GPT2Config(
            n_layer=layers, n_embd=128, n_head=4, vocab_size=1000, n_positions=64
        )
        model = transformers.GPT2LMHeadModel(config)
    else:
        config = transformers.LlamaConfig(
            num_hidden_layers=layers,
            hidden_size=128,
            intermediate_size=256,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
            max_position_embeddings=64,
        )
        model = transformers.LlamaForCausalLM(config)
    model.eval()
    model.config.use_cache = False
    ids = torch.randint(0, 1000, (1, 32))
    return model, ids


class Logits(__import__("torch").nn.Module):
    """The model's logits as one tensor (no ModelOutput dataclass to compare)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits


def plain(model, ids) -> float:
    import torch
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    from explorer.inductor import _cache_config, _patch_config

    inductor_cfg, functorch_cfg = _cache_config()
    torch._dynamo.reset()
    start = time.perf_counter()
    with (
        _patch_config(inductor_config, inductor_cfg),
        _patch_config(functorch_config, functorch_cfg),
        torch.no_grad(),
    ):
        torch.compile(model)(ids)
    return time.perf_counter() - start


def recorded(model, ids):
    import explorer

    start = time.perf_counter()
    trace = explorer.explore(model, (ids,), compiler="inductor", progress=False)
    return time.perf_counter() - start, trace


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--model", choices=("gpt2", "llama"), default="gpt2")
    a = parser.parse_args()
    warnings.filterwarnings("ignore")
    model, ids = make_model(a.model, a.layers)
    model = Logits(model)
    plain(model, ids)  # builds the C++ kernels once, untimed
    plains, recs = [], []
    trace = None
    for _ in range(a.reps):
        plains.append(plain(model, ids))
        seconds, trace = recorded(model, ids)
        recs.append(seconds)
    steps = len(trace.steps)
    changed = sum(1 for s in trace.steps if s.kind == "pass" and s.changed and not s.children)
    graphs = len(trace.inductor.graphs)
    print(f"command: {shlex.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"model: {a.model}, {a.layers} layers, hidden 128, input 1x32 tokens")
    print(
        f"trace: {graphs} graph(s), {steps} steps, {changed} passes changed a graph, "
        f"{trace.inductor.copies} graph copies"
    )
    print(
        f"torch.compile       median {statistics.median(plains):7.2f} s  min {min(plains):7.2f} s"
    )
    print(f"explore (recorded)  median {statistics.median(recs):7.2f} s  min {min(recs):7.2f} s")
    print(
        f"ratio (median)      {statistics.median(recs) / statistics.median(plains):.2f}x  "
        f"(min {min(recs) / min(plains):.2f}x; goal <= 1.2x)"
    )
    start = time.perf_counter()
    report = trace.check((ids,))
    print(f"check: {report.headline()} in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
