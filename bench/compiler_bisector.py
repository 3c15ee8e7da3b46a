"""torch's own answer to "which part of torch.compile broke my model": the compiler bisector
(``torch._inductor.compiler_bisector.CompilerBisector``) on notebook 08's model and pass, beside
passlens's answer from one recorded compile.

The model: notebook 08's GPT-2 (``transformers``, 1 layer, hidden 64, 4 heads, vocabulary 100,
random weights from seed 0, input 1 x 16 tokens, logits out), compiled with Inductor on the CPU
with notebook 08's wrong custom post-grad pass installed (``SplitVarMean``: every
``aten.var_mean`` split into ``var`` + ``mean``, ``correction=0`` dropped).

The bisector compiles the model again and again, first with whole backends (eager, aot_eager,
inductor), then with Inductor's subsystems and their applications switched off by halves,
until it finds the first application whose removal makes the compiled model agree with eager.
Printed: its answer (``BisectionResult``), how many compiles it ran, the seconds and the peak
resident memory of this process; then passlens's answer (``explore`` + ``check``): the step, the
node and its layer, from one compile.

    .venv/bin/python bench/compiler_bisector.py
"""

from __future__ import annotations

import resource
import sys
import time
import warnings
from pathlib import Path


def main() -> None:
    import torch
    import transformers
    from torch._inductor.compiler_bisector import CompilerBisector

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()

    class GPT2Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            config = transformers.GPT2Config(
                n_layer=1, n_embd=64, n_head=4, vocab_size=100, n_positions=32,
                bos_token_id=0, eos_token_id=0,
            )  # fmt: skip
            self.gpt2 = transformers.GPT2LMHeadModel(config)

        def forward(self, ids):
            return self.gpt2(input_ids=ids, use_cache=False).logits

    # notebook 08's pass, with its mistake (correction=0 dropped): the one the tests use
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.explorer.inductor.test_inductor import (
        SplitVarMeanForgetsCorrection as SplitVarMean,
    )

    model = GPT2Logits().eval()
    ids = torch.randint(0, 100, (1, 16))
    with torch.no_grad():
        expected = model(ids)
    compiles = 0

    def agrees() -> bool:  # True while the compiled model agrees with eager
        nonlocal compiles
        compiles += 1
        torch._dynamo.reset()
        options = {"post_grad_custom_post_pass": SplitVarMean(), "force_disable_caches": True}
        with torch._inductor.config.patch(options), torch.no_grad():
            got = torch.compile(model)(ids)
        return torch.allclose(got, expected, rtol=1e-4, atol=1e-5)

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    start = time.perf_counter()
    result = CompilerBisector.do_bisect(agrees)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    answer = None
    if result is not None:
        answer = (result.backend, result.subsystem, result.bisect_number, result.debug_info)
    print(f"compiler bisector: {answer}")
    print(f"  {compiles} compiles, {seconds:.0f} s, peak resident memory {peak:.0f} MB")

    import explorer

    torch._dynamo.reset()
    start = time.perf_counter()
    trace = explorer.explore(
        model, (ids,), compiler="inductor", progress=False,
        options={"post_grad_custom_post_pass": SplitVarMean()},
    )  # fmt: skip
    first = trace.check((ids,), progress=False).first_failure
    seconds = time.perf_counter() - start
    node = first.nodes[0] if first and first.nodes else None
    group = first.step.graph.node_of(node).group if node is not None else None
    where = f"{node.name} of {group}" if node is not None else "?"
    print(f"passlens: {first.kind} at step #{first.step.index} {first.step.name}, on {where}")
    print(f"  1 compile (recorded) + the check, {seconds:.0f} s")


if __name__ == "__main__":
    main()
