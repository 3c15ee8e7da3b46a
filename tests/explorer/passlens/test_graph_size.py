"""A step's size without its graph model: ``explorer.passlens.convert.module_size`` (the node
count and weight bytes a timeline lists for every step) is what ``graph_of_module`` would give, on
random modules (weights, unnamed constants, helper functions, If branches, weights passed as
parameters), a loop, and every step of the default pipeline on two models; a step's graph
model is shared with the steps of its trace showing the same module."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

import explorer
from compiler import models
from compiler.ir import parse
from explorer.passlens.convert import graph_of_module, module_size
from tests.compiler.ir.ir_strategies import modules
from tests.compiler.ir.test_loop import TEXT as LOOP_TEXT

# an If, a call of a helper, a tuple, a weight and an unnamed constant, and names that could
# take a node id the walk makes itself (`const3`, `return`)
TEXT = """weights {
  $w: f32[1, 3] = [[1.0, 2.0, 3.0]]
}
def @main(%x: f32[n, 3], %c: bool[], %s: f32[2*n + 1]) -> (f32[n, 3], f32[2*n + 1]) {
  %const3: f32[n, 3] = add(%x, $w)
  %r: f32[n, 3] = if %c {
    %t: f32[n, 3] = clip(%const3, min=-1.0, max=1.0)
    yield %t
  } else {
    yield %x
  }
  %q: f32[2*n + 1] = call @h(%s)
  %return: (f32[n, 3], f32[2*n + 1]) = (%r, %q)
  return %return
}
def @h(%y: f32[m]) -> f32[m] attrs {private = true} {
  %seven: f32[] = cast(const(i32[], 7), dtype=f32)
  %z: f32[m] = add(%y, %seven)
  return %z
}
"""


def sizes(module) -> tuple[tuple[int, int], tuple[int, int]]:
    g = graph_of_module(module)
    return module_size(module), (len(g.nodes), g.param_bytes)


def test_the_size_of_modules_with_branches_calls_tuples_and_loops():
    for text in (TEXT, LOOP_TEXT):
        light, full = sizes(parse(text))
        assert light == full and full[0] > 5


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(modules())
def test_the_size_of_random_modules(gen):
    light, full = sizes(gen.module)
    assert light == full


def test_every_step_of_a_pipeline_and_the_steps_sharing_a_module():
    mlp = explorer.explore(models.mlp(), pipeline="default")  # lift-transform-params included
    small = models.convnext(dims=(8, 16), depths=(1, 1), image=16, num_classes=10)
    for trace in (mlp, explorer.explore(small, pipeline="default")):
        seen = 0
        for step in trace:
            if step.module is None:
                continue
            light, full = sizes(step.module)
            assert light == full, f"#{step.index} {step.name}"
            seen += 1
        assert seen == len(trace)
    # a step's size without a graph model made, then its graph model (shared with the steps
    # showing the same module), whose counts it was
    trace = explorer.explore(models.mlp(), pipeline="default")
    unchanged = next(s for s in trace if s.status == "unchanged")
    same = [s for s in trace if s.shown_module is unchanged.shown_module]
    assert len(same) >= 2
    size = unchanged.size
    assert all(s._graph is None for s in trace)
    g = same[0].graph
    assert all(s.graph is g for s in same) and size == (len(g.nodes), g.param_bytes)
    assert unchanged.node_count == len(g.nodes) and unchanged.param_bytes == g.param_bytes
