"""A user's own pass, wrong then fixed, and a re-run of a trace with the fix: what the re-run
views are tested on (tests/widgets/test_rerun_view.py) and pictured with
(bench/screenshots.py ``--only rerun,compare``).

``FastGelu`` is the bug of issue 42's story (gelu made a relu: the check finds the step
diverged); ``FastGeluFixed`` writes gelu out exactly, ``x/2 (1 + erf(x/sqrt 2))``. Neither is
registered: an instance in a pipeline is the pass. :func:`rerun_with_fix` re-runs a trace
with the fix: ``Trace.rerun`` where the explorer has it, else the same thing by hand (the
pipeline explored again, ``rerun_of`` / ``rerun_from`` set as ``rerun`` sets them).
"""

from __future__ import annotations

import numpy as np

import explorer
from compiler.ir import Call, Constant
from compiler.passes import Rule, RulePass, op

MODEL = "models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10)"
# a notebook's first cell: the wrong pass's trace, checked (the browser test, the screenshot)
RERUN_SETUP = (
    "import explorer\nfrom compiler import models\n"
    "from tests.widgets.user_passes import MODEL, FastGelu, FastGeluFixed, rerun_with_fix\n"
    "pipeline = ['default', FastGelu()]\n"
    "trace = explorer.explore(eval(MODEL, {'models': models}), pipeline=pipeline)\n"
    "trace.check()\n"
)
RERUN_NODE = "fused_matmul_add_gelu/return"  # under the gelu the pass rewrites (in both runs)


class FastGelu(RulePass):
    """gelu(x) -> relu(x): fast, and wrong (the check's ``diverged``)."""

    name = "fast-gelu"
    rules = (
        Rule("gelu-to-relu", op("gelu"), lambda n, ctx: Call("relu", n.args), "gelu(x) -> relu(x)"),
    )


def _exact_gelu(n, ctx):
    x = n.args[0]
    half, one = Constant(np.array(0.5, np.float32)), Constant(np.array(1.0, np.float32))
    scale = Constant(np.array(1 / np.sqrt(2), np.float32))
    erf = Call("erf", (Call("multiply", (x, scale)),))
    return Call("multiply", (Call("multiply", (x, half)), Call("add", (one, erf))))


class FastGeluFixed(RulePass):
    """gelu(x) -> x/2 (1 + erf(x/sqrt 2)): the same values."""

    name = "fast-gelu"
    rules = (Rule("gelu-to-erf", op("gelu"), _exact_gelu, "gelu(x) -> x/2 (1 + erf(x/sqrt 2))"),)


def first_top_level_pass(trace, name: str) -> int:
    """The index of the top-level step of pass ``name`` (where a re-run starts recording)."""
    return next(s.index for s in trace.steps if s.depth == 0 and s.name == name)


def rerun_with_fix(old, pipeline, fixed, name: str = "fast-gelu"):
    """``old`` (explored through ``pipeline``, a list holding the pass ``name``) run again with
    ``fixed`` in that pass's place: ``old.rerun(replace=...)`` when traces have it, else
    ``pipeline`` explored again with the fix and ``rerun_of`` / ``rerun_from`` set by hand."""
    if hasattr(old, "rerun"):
        return old.rerun(replace={name: fixed})
    swapped = [fixed if getattr(p, "name", None) == name else p for p in pipeline]
    new = explorer.explore(old.source, old.example_inputs, pipeline=swapped)
    new.rerun_of = old
    new.rerun_from = first_top_level_pass(old, name)  # (the same place in both)
    return new
