"""The pass manager: recording (nested passes, failures, timing), instruments, pipeline specs."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import run
from compiler.ir import Call, Module, parse
from compiler.passes import (
    Instrument,
    Pass,
    PassContext,
    PassError,
    PassFailed,
    PipelineError,
    Sequential,
    build_pipeline,
    register_pass,
)
from compiler.passes.dead_code_elimination import DeadCodeElimination as DCE
from compiler.passes.infra.manager import PassesInterrupted
from compiler.passes.infra.rewrite import rewrite_module

TEXT = """
weights {
  $a: f32[3] = [1.0, 2.0, 3.0]
}
def @main(%x: f32[n, 3]) -> f32[n, 3] {
  %e: f32[3] = exp($a)
  %dead: f32[n, 3] = relu(%x)
  %y: f32[n, 3] = add(%x, %e)
  %z: f32[n, 3] = identity(%y)
  return %z
}
"""


@register_pass
@dataclass(frozen=True)
class _Explode(Pass):
    """Fails on the first relu it meets."""

    name: ClassVar[str] = "test-explode"
    message: str = "boom"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "add":
                raise AssertionError(self.message)
            return None

        return rewrite_module(module, lambda n, f: rule, self.name)


@register_pass
@dataclass(frozen=True)
class _Nested(Pass):
    """Runs two passes inside itself."""

    name: ClassVar[str] = "test-nested"

    def transform(self, module, ctx):
        module = ctx.apply(passes.parse_pass("canonicalize-bindings"), module)
        return ctx.apply(passes.parse_pass("dead-code-elimination"), module)


@register_pass
@dataclass(frozen=True)
class _Break(Pass):
    """Annotates every add with a wrong type (breaks the verifier's invariants)."""

    name: ClassVar[str] = "test-break"

    def transform(self, module, ctx):
        from compiler.ir import TensorType

        def rule(node):
            if isinstance(node, Call) and node.op == "add":
                return node.replace(ty=TensorType((7,), "float32"))
            return None

        return rewrite_module(module, lambda n, f: rule, self.name)


@pytest.fixture
def module() -> Module:
    return parse(TEXT)


def test_records_every_pass_with_changed_flag_and_time(module):
    result = passes.run(module, "canonicalize-bindings,fold-constant,canonicalize-bindings")
    assert [s.pass_name for s in result.snapshots] == [
        "canonicalize-bindings",
        "fold-constant",
        "canonicalize-bindings",
    ]
    assert [s.changed for s in result.snapshots] == [True, True, False]
    assert result.snapshots[2].module is result.snapshots[1].module
    assert all(s.seconds >= 0 for s in result.snapshots)
    assert result.snapshots[0].before is module
    assert result.module is result.snapshots[-1].module
    assert result.ok


def test_unchanged_nodes_are_shared_between_snapshots(module):
    result = passes.run(module, "fold-constant")
    before, after = module.main, result.module.main
    dead_before = next(b for b in before.bindings if b.name == "dead")
    assert any(b is dead_before for b in after.bindings)  # fold-constant kept it as is


def test_nested_passes_are_recorded_with_depth_and_parent(module):
    result = passes.run(module, "test-nested,fold-constant")
    names = [(s.pass_name, s.depth, s.parent) for s in result.snapshots]
    assert names == [
        ("test-nested", 0, None),
        ("canonicalize-bindings", 1, 0),
        ("dead-code-elimination", 1, 0),
        ("fold-constant", 0, None),
    ]
    assert result.snapshots[0].children == [1, 2]
    assert result.snapshots[0].module is result.snapshots[2].module


def test_named_pipeline_is_one_step_with_nested_children(module):
    result = passes.run(module, "default")
    top = result.snapshots[0]
    assert top.pass_name == "default" and top.depth == 0
    expected = [p.name for p in build_pipeline(passes.named_pipelines()["default"]).passes]
    assert [result.snapshots[i].pass_name for i in top.children] == expected
    assert {"fold-constant", "dead-code-elimination"} <= set(expected)
    assert "relu" not in str(result.module)  # dead code went away
    x = np.ones((2, 3), np.float32)

    np.testing.assert_allclose(run(result.module, x)[0], run(module, x)[0], rtol=1e-6)


def test_failure_is_recorded_not_lost(module):
    result = passes.run(module, "fold-constant,test-explode,dead-code-elimination")
    assert not result.ok
    fail = result.failure
    assert fail.pass_name == "test-explode" and fail.failed and fail.status == "failed"
    assert isinstance(fail.error, AssertionError) and "boom" in fail.traceback
    assert fail.before is result.snapshots[0].module  # the module the pass was given
    assert fail.failed_node is not None and fail.failed_node.op == "add"
    assert fail.failed_function == "main"
    assert [s.pass_name for s in result.snapshots] == ["fold-constant", "test-explode"]
    assert result.module is result.snapshots[0].module  # last good module


def test_failure_inside_nested_pass_marks_inner_and_outer(module):
    result = passes.run(module, ["fold-constant", Sequential((_Explode(),), label="group")])
    failed = [s for s in result.snapshots if s.failed]
    assert [s.pass_name for s in failed] == ["group", "test-explode"]
    assert result.failure.pass_name == "test-explode"


def test_passes_after_a_failure_are_listed_as_skipped(module):
    result = passes.run(module, "fold-constant,test-explode,dead-code-elimination,infer-types")
    assert [(s.pass_name, s.spec, s.depth, s.reason) for s in result.skipped] == [
        ("dead-code-elimination", "dead-code-elimination", 0, "skipped: pass test-explode failed"),
        ("infer-types", "infer-types", 0, "skipped: pass test-explode failed"),
    ]
    assert not result.interrupted and "2 skipped" in repr(result)
    assert passes.run(module, "fold-constant,dead-code-elimination").skipped == []


def test_skipped_passes_of_a_named_pipeline_come_first_at_their_depth(module):
    inner = Sequential(
        (passes.parse_pass("canonicalize-bindings"), _Explode(message="inner"), DCE()),
        label="group",
    )
    result = passes.run(module, [inner, "infer-types", "test-nested"])
    assert [(s.pass_name, s.depth) for s in result.skipped] == [
        ("dead-code-elimination", 1),
        ("infer-types", 0),
        ("test-nested", 0),
    ]
    assert {s.reason for s in result.skipped} == {
        "skipped: pass test-explode{message=inner} failed"
    }


@register_pass
@dataclass(frozen=True)
class _Interrupt(Pass):
    """Stands for a pass the user stops (Ctrl-C, a notebook's stop button)."""

    name: ClassVar[str] = "test-interrupt"

    def transform(self, module, ctx):
        raise KeyboardInterrupt


def test_an_interrupted_run_stops_but_keeps_what_ran(module):
    with pytest.raises(KeyboardInterrupt) as e:  # the run stops, as the user asked
        passes.run(module, "fold-constant,test-nested,test-interrupt,dead-code-elimination")
    assert isinstance(e.value, PassesInterrupted)
    result = e.value.result  # the trace of what ran is not lost
    assert result.interrupted and not result.ok
    assert [s.pass_name for s in result.snapshots] == [
        "fold-constant",
        "test-nested",
        "canonicalize-bindings",
        "dead-code-elimination",
        "test-interrupt",
    ]
    assert result.failure.pass_name == "test-interrupt"
    assert isinstance(result.failure.error, KeyboardInterrupt)
    assert result.module is result.snapshots[1].module  # the last good module
    assert [(s.pass_name, s.reason) for s in result.skipped] == [
        ("dead-code-elimination", "skipped: interrupted in pass test-interrupt")
    ]
    assert "interrupted at test-interrupt" in repr(result)
    assert PassContext._stack == []  # nothing left behind for the next run
    # without recording there is nothing to keep: the KeyboardInterrupt itself
    with pytest.raises(KeyboardInterrupt) as e:
        passes.run(module, "test-interrupt", record=False)
    assert type(e.value) is KeyboardInterrupt


def test_raise_on_failure_names_the_pass_and_the_passes_before(module):
    with pytest.raises(
        PassFailed, match="'test-explode' pass after the following passes: fold-constant"
    ):
        passes.run(module, "fold-constant,test-explode", raise_on_failure=True)


def test_verify_after_each_names_the_pass_that_broke_invariants(module):
    result = passes.run(module, "fold-constant,test-break", verify_each=True)
    assert result.failure.pass_name == "test-break"
    assert isinstance(result.failure.error, PassError)
    assert "test-break broke the IR's invariants" in str(result.failure.error)
    assert "annotated f32[7]" in str(result.failure.error)


def test_instruments_see_before_and_after_of_every_application(module):
    events = []

    class Log(Instrument):
        def before(self, p, mod, depth):
            events.append(("before", p.name, depth))

        def after(self, p, before, after, seconds, depth):
            events.append(("after", p.name, depth))

    passes.run(module, "test-nested", instruments=[Log()], record=False)
    assert events == [
        ("before", "test-nested", 0),
        ("before", "canonicalize-bindings", 1),
        ("after", "canonicalize-bindings", 1),
        ("before", "dead-code-elimination", 1),
        ("after", "dead-code-elimination", 1),
        ("after", "test-nested", 0),
    ]


def test_no_recording_gives_no_snapshots(module):
    result = passes.run(module, "default", record=False)
    assert result.snapshots == [] and "relu" not in str(result.module)


@pytest.mark.parametrize(
    "spec",
    [
        "fold-constant,dead-code-elimination",
        "test-explode{message=kaboom}",
        "default",
        "default,fold-constant",
        "",
    ],
)
def test_pipeline_specs_round_trip(spec):
    pipeline = build_pipeline(spec)
    assert pipeline.spec() == spec
    assert build_pipeline(pipeline.spec()) == pipeline


def test_dce_alias_and_options():
    assert build_pipeline("dce").spec() == "dead-code-elimination"
    assert build_pipeline("test-explode{message=x}").passes[0].message == "x"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("fold-constnt", "did you mean fold-constant"),
        ("test-explode{colour=red}", "has no option 'colour'"),
        ("test-explode{message}", "needs the form name=value"),
        ("fold-constant{", "unbalanced"),
        ("default{x=1}", "takes no options"),
    ],
)
def test_bad_pipeline_specs_say_what_is_wrong(spec, message):
    with pytest.raises(PipelineError, match=message):
        build_pipeline(spec)


def test_pass_called_directly_runs_it(module):
    out = passes.parse_pass("fold-constant")(module)
    assert "exp(" not in str(out) and "$a.exp" in str(out)

@pytest.mark.parametrize(
    "alias, name", [("dce", "dead-code-elimination"), ("normalize", "infer-types")]
)
def test_aliases(alias, name):
    assert passes.build_pipeline(alias).passes[0].name == name
