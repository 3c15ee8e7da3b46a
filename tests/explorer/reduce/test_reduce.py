"""report.reduce: the module and the pipeline shrunk while the same finding holds, for each
replica of a real bug (SEEDS.md) on a whole model, and the generated pytest file failing with
the replica and passing with the correct pass."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import Call, Constant, Function, Module, Var, parse, tensor
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from explorer.reduce import NotReproducible, ReduceError, Reduction, reduce
from tests.compiler.passes.test_lazy_params import NESTED
from tests.test_seeds import pad_squeeze_onnx

ROOT = Path(__file__).resolve().parents[3]
CLEANUP = "infer-types,canonicalize-bindings"


def run_test_file(reduction: Reduction, where: Path, pipeline: str | None = None):
    """Save the reduction and run its pytest file in a fresh process (with ``pipeline`` in
    place of the reduced one, when given)."""
    out = reduction.save(where)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PASSLENS_PIPELINE", None)
    if pipeline is not None:
        env["PASSLENS_PIPELINE"] = pipeline
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_reduced.py"],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_fails_then_passes(reduction: Reduction, where: Path, replica: str, correct: str):
    """The test file fails as reduced and passes with the replica swapped for the correct pass."""
    assert replica in reduction.pipeline.split(",")
    failing = run_test_file(reduction, where)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "1 failed" in failing.stdout and reduction.finding.kind in failing.stdout
    fixed = reduction.pipeline.replace(replica, correct)
    passing = run_test_file(reduction, where, pipeline=fixed)
    assert passing.returncode == 0, passing.stdout + passing.stderr


# ----- the three replicas -----------------------------------------------------------------------


def test_linear_broadcast_on_convnext_reduces_to_one_linear_and_two_passes(tmp_path):
    model = models.convnext(dims=(16, 32), depths=(2, 2), image=64, num_classes=10)
    spec = f"{CLEANUP},dynamic-to-static,replica-linear-broadcast,fold-constant,dce,fuse-ops"
    report = explorer.explore(model, pipeline=spec).check()
    first = report.first_failure
    assert first.kind == "param-bloat" and first.step.name == "fold-constant"
    small = report.reduce(progress=False)
    assert small.pipeline == "replica-linear-broadcast,fold-constant"
    assert small.bindings == (50, 1)
    assert small.passes == (7, 2)
    (linear,) = small.trace.imported.module["main"].bindings
    assert linear.op == "linear" and linear.prov.module_path.startswith("features.1.")
    assert small.reproduced.kind == "param-bloat" and small.reproduced.step.name == "fold-constant"
    assert "copies of `features.1." in small.reproduced.message
    assert small.generated and not small.saved_weights  # any weight values show the bloat
    assert not small.cut_short and small.seconds < 20
    assert_fails_then_passes(
        small, tmp_path / "case", "replica-linear-broadcast", "decompose-ops{ops=[linear]}"
    )


def test_squeeze_replica_on_the_onnx_model_reduces_to_the_folded_if(tmp_path):
    pytest.importorskip("onnx")
    spec = f"{CLEANUP},replica-dynamic-to-static-squeeze,decompose-ops,fold-constant,dce"
    trace = explorer.explore(pad_squeeze_onnx()[0], pipeline=spec)
    report = trace.check()
    assert report.first_failure.kind == "shape-mismatch"
    small = report.reduce(progress=False)
    assert small.pipeline == "replica-dynamic-to-static-squeeze"
    assert small.bindings[1] <= 3 < small.bindings[0]
    main = small.trace.imported.module["main"]
    (the_if,) = main.bindings
    assert isinstance(the_if.cond, Constant)  # the condition the shapes gave, kept foldable
    assert str(main.params[0].ty) == "f32[13, 1, 1, 1, 1]"  # the padded value, a new input
    assert "13, 13, 1, 1" in small.reproduced.message
    assert_fails_then_passes(
        small, tmp_path / "case", "replica-dynamic-to-static-squeeze", "dynamic-to-static"
    )


def test_lazy_transform_params_replica_reduces_to_the_call_and_a_tuple(tmp_path):
    spec = f"{CLEANUP},fold-constant,replica-lazy-transform-params,dce"
    report = explorer.explore(NESTED, pipeline=spec).check()
    assert report.first_failure.kind == "pass-failed"
    small = report.reduce(progress=False)
    assert small.pipeline == "replica-lazy-transform-params"
    assert small.bindings == (5, 2)
    module = small.trace.imported.module
    assert list(module["main"].bindings) == []
    (call,) = module["main_transform_params"].bindings
    assert call.func == "transform"
    assert isinstance(small.reproduced.details["error"], AssertionError)
    assert_fails_then_passes(
        small, tmp_path / "case", "replica-lazy-transform-params", "lazy-transform-params"
    )


# ----- other findings ------------------------------------------------------------------------


@register_pass
@dataclass(frozen=True)
class _FlipAdd(Pass):
    """A deliberately wrong pass: every add becomes a subtract."""

    name: ClassVar[str] = "test-reduce-flip-add"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "add":
                return Call("subtract", node.args)
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


@register_pass
@dataclass(frozen=True)
class _DropZeroLedAdd(Pass):
    """A deliberately wrong pass: ``add(x, w)`` becomes ``x`` when the weight w starts with 0
    (as if it were all zeros): wrong only for the weight's own values."""

    name: ClassVar[str] = "test-reduce-drop-zero-led-add"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "add":
                w = node.args[1]
                if isinstance(w, Constant) and w.data.size and w.data.flat[0] == 0:
                    return node.args[0]
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


@register_pass
@dataclass(frozen=True)
class _DropMinimum(Pass):
    """A deliberately wrong pass: ``minimum(x, c)`` becomes ``x`` (right while x <= c)."""

    name: ClassVar[str] = "test-reduce-drop-minimum"

    def transform(self, module, ctx):
        def rule(node):
            return node.args[0] if isinstance(node, Call) and node.op == "minimum" else None

        return rewrite_module(module, lambda name, fn: rule, self.name)


def test_a_divergence_reduces_to_the_node_that_differs_and_the_passes_it_needs(tmp_path):
    model = models.mlp((32, 64, 64, 16), batch=4, seed=2)
    spec = f"{CLEANUP},decompose-ops{{ops=[linear]}},test-reduce-flip-add,fold-constant,dce"
    report = explorer.explore(model, pipeline=spec).check()
    assert report.first_failure.kind == "diverged"
    small = report.reduce(progress=False)
    assert small.pipeline == "decompose-ops{ops=[linear]},test-reduce-flip-add"
    assert small.bindings[1] == 1 and small.reproduced.kind == "diverged"
    assert run_test_file(small, tmp_path / "case").returncode == 1


def test_outputs_are_dropped_and_moved_up_to_what_the_finding_needs():
    text = """
    def @main(%x: f32[n, 3], %z: f32[n, 3]) -> (f32[n, 3], f32[n, 3]) {
      %a: f32[n, 3] = add(%x, %z)
      %b: f32[n, 3] = exp(%a)
      %c: f32[n, 3] = relu(%z)
      %t: (f32[n, 3], f32[n, 3]) = (%c, %b)
      return %t
    }
    """
    report = explorer.explore(parse(text), pipeline="test-reduce-flip-add").check()
    small = report.reduce(progress=False)
    main = small.trace.imported.module["main"]
    (add,) = [b for b in main.bindings if isinstance(b, Call)]  # exp and relu are gone
    assert add.op == "add" and str(add.ty) == "f32[n, 3]"  # symbolic dims stay
    assert str(main.ret_type) == "(f32[n, 3],)"  # one output left, still a tuple


def test_a_finding_that_needs_the_weights_values_keeps_them_beside_the_test(tmp_path):
    bias = np.arange(40, dtype=np.float32)  # starts with 0: the wrong pass drops the add
    x = Var("x", tensor([2, 40]))
    y = Call("add", [Call("relu", [x]), Constant(bias, name="b")])
    module = Module({"main": Function.from_output([x], Call("exp", [y]))})
    report = explorer.explore(module, pipeline=f"{CLEANUP},test-reduce-drop-zero-led-add").check()
    small = report.reduce(progress=False)
    assert list(small.saved_weights) == ["b"] and not small.generated
    assert "the finding needs them" in repr(small)
    assert "weights.npz" in small.files
    assert small.pipeline == "test-reduce-drop-zero-led-add"
    result = run_test_file(small, tmp_path / "case")
    assert result.returncode == 1, result.stdout + result.stderr
    assert (tmp_path / "case" / "weights.npz").exists()


def test_a_finding_that_needs_the_traces_own_inputs_is_not_reproducible():
    text = """
    def @main(%x: f32[2, 3]) -> f32[2, 3] {
      %m: f32[2, 3] = minimum(%x, const(f32[], 10.0))
      %y: f32[2, 3] = exp(%m)
      return %y
    }
    """
    big = np.full((2, 3), 20.0, np.float32)  # beyond the minimum: only these inputs show it
    trace = explorer.explore(parse(text), (big,), pipeline="test-reduce-drop-minimum")
    report = trace.check()
    assert report.first_failure.kind == "diverged"
    with pytest.raises(NotReproducible, match="needs the trace's own inputs"):
        report.reduce(progress=False)


def test_a_finding_of_the_import_is_not_a_pass_finding():
    x = Var("x", tensor([2, 3]))
    wrong = Call("relu", [x], ty=tensor([2, 4]))  # an annotation the values do not have
    trace = explorer.explore(Module({"main": Function.from_output([x], wrong)}), pipeline="dce")
    report = trace.check()
    assert report.first_failure.step.kind == "import"
    with pytest.raises(NotReproducible, match="not of a pass"):
        report.reduce(progress=False)


def test_which_finding_and_what_goes_wrong_are_clear_errors():
    ok = explorer.explore(models.mlp((8, 4)), pipeline="dce").check()
    with pytest.raises(ReduceError, match="nothing to reduce: check ok"):
        ok.reduce()
    failed = explorer.explore(NESTED, pipeline="replica-lazy-transform-params").check()
    with pytest.raises(ReduceError, match="no finding 5: the report has 1"):
        failed.reduce(5)
    with pytest.raises(ReduceError, match="budget"):
        failed.reduce(budget=0)
    small = reduce(failed, 0, progress=False)  # the module's entry point, a finding by index
    assert small.reproduced.kind == "pass-failed"


def test_progress_is_reported_and_the_budget_keeps_the_best_so_far(monkeypatch):
    """The budget ends the search and keeps what it found so far. The reduction's clock is a
    fake that moves only when the progress callback spends the budget, so the machine's load
    cannot decide the outcome."""
    import types

    from explorer.passlens.reduce import oracle, search

    report = explorer.explore(
        models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10),
        pipeline=f"{CLEANUP},dynamic-to-static,replica-linear-broadcast,fold-constant",
    ).check()
    seen: list[dict] = []
    budget = 3.0
    now = [0.0]
    clock = types.SimpleNamespace(perf_counter=lambda: now[0])
    monkeypatch.setattr(oracle, "time", clock)
    monkeypatch.setattr(search, "time", clock)

    def progress(status: dict) -> None:
        seen.append(status)
        if status["bindings"] is not None and now[0] <= budget:
            now[0] = budget + 1.0  # spend the budget at the first hold

    small = report.reduce(budget=budget, progress=progress)
    assert small.cut_short and "stopped by the time budget" in repr(small)
    assert {"phase", "tried", "bindings", "passes", "seconds"} <= set(seen[-1])
    assert small.reproduced.kind == "param-bloat"  # what it returns still shows the finding


def test_the_test_file_holds_crafted_names_as_data():
    """Names from a model or a trace file reach the generated file only as string data: quotes,
    backslashes and newlines in them cannot end a literal and run as code."""
    import ast

    from explorer.passlens.reduce.testfile import make_test_source

    evil = "x'''\"\"\"\\n\nimport os; os.system('boom') # \\"
    ir = f'def @main(%a: f32[2]) -> f32[2] {{\n  %b: f32[2] = relu(%a)  loc(module="{evil}")\n}}'
    source = make_test_source(
        ir, "fold-constant", "diverged", 0, evil, evil, 1e-4, 1e-5, {evil: ("float32", (2,))}, []
    )
    tree = ast.parse(source)
    values = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in ("IR", "FINDING", "GENERATED")
    }
    assert values == {"IR": ir, "FINDING": evil, "GENERATED": {evil: ("float32", (2,))}}
    docstring = ast.get_docstring(tree)
    assert "import os" in docstring  # the pass name in the docstring stays inside it
    # the template's own `import os` is the only one: nothing from the names became code
    imports_os = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Import) and any(a.name == "os" for a in node.names)
    ]
    assert len(imports_os) == 1
    assert not any(isinstance(n, ast.Name) and n.id == "boom" for n in ast.walk(tree))


# ----- the oracle: the same finding, not one of the same kind -----------------------------------


@register_pass
@dataclass(frozen=True)
class _RaiseByOp(Pass):
    """A deliberately failing pass: AssertionError on a relu, TypeError on an exp."""

    name: ClassVar[str] = "test-reduce-raise-by-op"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "relu":
                raise AssertionError("relu")
            if isinstance(node, Call) and node.op == "exp":
                raise TypeError("exp")
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


@register_pass
@dataclass(frozen=True)
class _Misannotate(Pass):
    """A deliberately wrong pass: a relu or an exp annotated with one more column."""

    name: ClassVar[str] = "test-reduce-misannotate"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op in ("relu", "exp"):
                shape = (*node.ty.shape[:-1], node.ty.shape[-1] + 1)
                return Call(node.op, node.args, ty=tensor(list(shape)))
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


def _one_op(op: str) -> Module:
    x = Var("x", tensor([2, 3]))
    return Module({"main": Function.from_output([x], Call(op, [x]))})


@pytest.mark.parametrize(
    "spec,kind",
    [("test-reduce-raise-by-op", "pass-failed"), ("test-reduce-misannotate", "shape-mismatch")],
)
def test_the_oracle_wants_the_same_error_type_or_op_not_only_the_same_kind(spec, kind):
    """Behaviour protected: a candidate holds only when it shows the same finding: for a
    failed pass the same error type, for a shape mismatch the same op. A relu failing with an
    AssertionError (or misannotated) is not reproduced by an exp failing with a TypeError (or
    misannotated): accepting it would shrink to a different bug and call it reproduced."""
    from explorer.passlens.reduce.oracle import Target

    relu = explorer.explore(_one_op("relu"), pipeline=spec)
    relu_report = relu.check(progress=False)
    (finding,) = relu_report.of_kind(kind)
    target = Target.of(finding, 0, relu_report)
    assert target.found(relu, relu_report, 0) == [finding]
    exp = explorer.explore(_one_op("exp"), pipeline=spec)
    exp_report = exp.check(progress=False)
    assert [f.kind for f in exp_report.of_kind(kind)] == [kind]  # the same kind, at the same pass
    assert target.found(exp, exp_report, 0) == []


# ----- issue 31: reduce bounded, its files written safely ---------------------------------------


@pytest.fixture(scope="module")
def keyword_named_weights():
    """A reduction whose saved weights are named like np.savez's own keywords."""
    rng = np.random.default_rng(0)
    x = Var("x", tensor([2, 40]))
    y = Call("relu", [x])
    for name in ("file", "allow_pickle"):
        w = np.concatenate([[0.0], rng.standard_normal(39)]).astype(np.float32)  # a leading 0
        y = Call("add", [y, Constant(w, name=name)])
    module = Module({"main": Function.from_output([x], Call("exp", [y]))})
    report = explorer.explore(module, pipeline=f"{CLEANUP},test-reduce-drop-zero-led-add").check()
    return report.reduce(progress=False)


def test_any_weight_name_round_trips_through_the_weights_file(keyword_named_weights, tmp_path):
    """Weights named ``file`` or ``allow_pickle`` (keywords of np.savez) are saved and read
    back by the test file under their own names."""
    small = keyword_named_weights
    assert set(small.saved_weights) <= {"file", "allow_pickle"} and small.saved_weights
    result = run_test_file(small, tmp_path / "case")
    assert result.returncode == 1, result.stdout + result.stderr  # the bug shows, as reduced
    import runpy

    namespace = runpy.run_path(str(tmp_path / "case" / "test_reduced.py"), run_name="x")
    values = namespace["weights"]()
    for name, value in small.saved_weights.items():
        assert np.array_equal(values[name], value)


def test_save_replaces_symlinks_and_never_writes_through_them(keyword_named_weights, tmp_path):
    """A folder holding symlinks named like the reduction's files (someone else's shared
    folder): save replaces the links with its own regular files; their targets are untouched."""
    out = tmp_path / "out"
    out.mkdir()
    victims = {}
    for name in keyword_named_weights.files:
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious")
        (out / name).symlink_to(victim)
        victims[name] = victim
    keyword_named_weights.save(out)
    for name, victim in victims.items():
        assert victim.read_text() == "precious", name
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    assert (out / "reduced.ir").read_text() == keyword_named_weights.ir
    assert sorted(p.name for p in out.iterdir()) == sorted(keyword_named_weights.files)
    keyword_named_weights.save(out)  # a second save replaces its own files
    assert (out / "pipeline.txt").read_text() == keyword_named_weights.pipeline + "\n"


class _FakeStep:
    def __init__(self, index, spec, children, parent):
        self.index, self.spec, self.children, self.parent = index, spec, children, parent
        self.kind, self.depth, self.trace = "pass", 0 if parent is None else 1, None
        self.pass_object = self.saved_pass = None  # a loaded step's: found again by its spec


def test_the_step_tree_is_walked_once_per_step(monkeypatch):
    """Steps whose children lists overlap (each lists every later step) made the walk
    exponential; a chain 3,000 deep made it a RecursionError. Each step is now visited once."""
    from types import SimpleNamespace

    from explorer.passlens.reduce import pipeline

    calls = []
    real = pipeline._is_list_of_passes
    monkeypatch.setattr(pipeline, "_is_list_of_passes", lambda s: calls.append(s) or real(s))
    n = 20  # the old recursive walk made 2**19 calls here
    steps = [
        _FakeStep(i, "dce,dce" if i < n - 1 else "dce", list(range(i + 1, n)), i - 1 or None)
        for i in range(n)
    ]
    steps[0].parent = None
    trace = SimpleNamespace(steps=steps)
    units = pipeline.units_of(trace)
    assert [u.step.index for u in units] == [n - 1] and len(calls) <= n
    assert pipeline.subtree(trace, steps[0]) == set(range(n))
    deep = 3000
    chain = [_FakeStep(i, "dce,dce", [i + 1], i - 1 if i else None) for i in range(deep)]
    chain.append(_FakeStep(deep, "dce", [], deep - 1))
    trace = SimpleNamespace(steps=chain)
    for s in chain:
        s.trace = trace
    units = pipeline.units_of(trace)
    assert [u.step.index for u in units] == [deep]
    assert pipeline.unit_index(units, chain[deep]) == 0


def test_a_trace_file_whose_steps_list_overlapping_children_is_refused(tmp_path):
    import json
    import zipfile

    from explorer.store import TraceFileError, load
    from tests.explorer.store.test_store import rewrite_member

    trace = explorer.explore(NESTED, pipeline="default")
    path = trace.save(tmp_path / "t.passlens")
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    nested = [s for s in manifest["steps"] if s.get("children")]
    assert nested
    outer = nested[0]
    other = manifest["steps"][outer["index"] - 1]  # an earlier step
    other["children"] = list(outer["children"])  # the same children under two steps
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    with pytest.raises(TraceFileError, match=r"lists step \d+ as a child, whose parent is"):
        load(path)


def test_a_files_spec_cannot_lift_a_safety_limit(tmp_path):
    """A trace file's step spec chooses passes, not limits: fold-constant{max_bytes=...}
    above its default is refused (a spec may lower it); code may raise it."""
    from compiler.passes import PipelineError, build_pipeline
    from compiler.passes.fold_constant import DEFAULT_MAX_BYTES, FoldConstant

    assert build_pipeline("fold-constant{max_bytes=16}").passes[0].max_bytes == 16
    with pytest.raises(PipelineError, match="max_bytes is a safety limit .* not raise it"):
        build_pipeline(f"fold-constant{{max_bytes={DEFAULT_MAX_BYTES + 1}}}")
    assert FoldConstant(max_bytes=DEFAULT_MAX_BYTES * 4).max_bytes == DEFAULT_MAX_BYTES * 4
    # through a reduction of a trace whose recorded spec lifts it: a clear error
    import json
    import zipfile

    from explorer.store import load
    from tests.explorer.store.test_store import rewrite_member

    report = explorer.explore(NESTED, pipeline="fold-constant,replica-lazy-transform-params")
    path = report.save(tmp_path / "t.passlens")
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    step = next(s for s in manifest["steps"] if s["name"] == "fold-constant")
    step["spec"] = "fold-constant{max_bytes=1000000000000}"
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    loaded = load(path)
    with pytest.raises(ReduceError, match="cannot run here: .*max_bytes is a safety limit"):
        loaded.check(progress=False).reduce(progress=False)


def test_a_deep_spec_is_a_clear_error():
    from compiler.passes import PipelineError, build_pipeline

    for spec in ("decompose-ops{ops=" + "[" * 3000 + "]" * 3000 + "}", "x" + "{" * 3000):
        with pytest.raises(PipelineError, match="deeper than 32"):
            build_pipeline(spec)


def test_the_oracle_refuses_a_candidate_where_another_failure_comes_first():
    """Behaviour protected (issue 39): a finding that was the trace's first failure is held only
    by a candidate with no failure before it. An exp whose pass fails with a TypeError, first:
    a candidate where a pass before misannotates the exp (a shape mismatch) shows the same
    failed pass, but after another failure, so reducing to it would report a different first
    bug; the trace where the earlier pass is correct still holds."""
    from explorer.passlens.reduce.oracle import Target

    exp = _one_op("exp")
    clean = explorer.explore(exp, pipeline="dead-code-elimination,test-reduce-raise-by-op")
    clean_report = clean.check(progress=False)
    finding = clean_report.first_failure
    assert finding.kind == "pass-failed" and finding.step.name == "test-reduce-raise-by-op"
    target = Target.of(finding, 1, clean_report)
    assert target.first and target.found(clean, clean_report, 1) == [finding]
    earlier = explorer.explore(exp, pipeline="test-reduce-misannotate,test-reduce-raise-by-op")
    report = earlier.check(progress=False)
    assert [f.kind for f in report.failures][:1] == ["shape-mismatch"]
    (again,) = report.of_kind("pass-failed")  # the same failed pass, after another failure
    assert again.step.name == "test-reduce-raise-by-op"
    assert target.found(earlier, report, 1) == []
    # a finding that was not the first failure may come after another one
    later = Target.of(again, 1, report)
    assert not later.first and later.found(earlier, report, 1) == [again]
