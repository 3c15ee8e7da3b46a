"""report.reduce() on an ONNX Runtime trace: a wrong user rule on a BERT-like layer reduced to
the node it broke, an ORT transformer's step reduced through its own sessions, the upstream
script run alone in a subprocess, crafted names kept out of the script's code, and a correct
step refused as not reproducible."""

from __future__ import annotations

import ast
import copy
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pattern = pytest.importorskip("onnxscript.rewriter.pattern")

import explorer  # noqa: E402
from explorer.check.report import Finding  # noqa: E402
from explorer.onnxruntime.reduce import ModelGraph, build_cut, reduce_onnxruntime  # noqa: E402
from explorer.onnxruntime.repro import ORTReduction  # noqa: E402
from explorer.reduce import NotReproducible, ReduceError  # noqa: E402

SCRIPT_IMPORTS = {"base64", "io", "platform", "sys", "numpy", "onnx", "onnxruntime"}
PAYLOAD = '"""; import os; os.system("touch pwned")#'
VALUE = PAYLOAD + "\x1b[2Jv"  # a value name with a terminal control sequence


class Layer(torch.nn.Module):
    """A BERT-like encoder layer (d=32)."""

    def __init__(self, d: int = 32):
        super().__init__()
        self.att = torch.nn.MultiheadAttention(d, 4, batch_first=True)
        self.ln1 = torch.nn.LayerNorm(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 2 * d)
        self.fc2 = torch.nn.Linear(2 * d, d)

    def forward(self, x):
        h = self.ln1(x + self.att(x, x, x, need_weights=False)[0])
        return self.ln2(h + self.fc2(torch.nn.functional.gelu(self.fc1(h))))


def add_to_sub(name: str = "AddToSub"):
    return pattern.RewriteRule(
        lambda op, a, b: op.Add(a, b), lambda op, a, b: op.Sub(a, b), name=name
    )


@pytest.fixture(scope="module")
def layer_report():
    torch.manual_seed(0)
    model, x = Layer().eval(), torch.randn(2, 5, 32)
    trace = explorer.explore(
        model, (x,), compiler="onnxruntime", rewrite_rules=[add_to_sub()], progress=False
    )
    return trace.check(progress=False)


@pytest.fixture(scope="module")
def rule_reduction(layer_report):
    return layer_report.reduce(progress=False)


def _step(trace, name):
    return next(s for s in trace.steps if s.name == name)


def _run(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _feeds(r: ORTReduction) -> dict:
    return {i.name: a for i, a in zip(r.model.graph.input, r.inputs, strict=True)}


def _script_imports(text: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    return names


def _run_script(path, cwd):
    return subprocess.run(
        [sys.executable, "-I", str(path)], cwd=cwd, capture_output=True, text=True, timeout=120
    )


# ===== a wrong user rule =========================================================================


def test_the_wrong_rule_is_reduced_to_the_add_it_broke(layer_report, rule_reduction):
    r = rule_reduction
    finding = layer_report.first_failure
    assert finding.step.name == "AddToSub" and r.finding is finding
    assert (r.step, r.kind) == ("AddToSub", "rule")
    assert r.nodes[0] == len(finding.step.before.proto().graph.node) > 30
    assert [n.op_type for n in r.model.graph.node] == ["Add"]
    assert [n.op_type for n in r.transformed.graph.node] == ["Sub"]
    assert [o.name for o in r.model.graph.output] == [r.output]
    # the cut's inputs are the values the full model computes there: the cut gives the full
    # model's value of the named node, the rewritten cut does not
    feeds = _feeds(r)
    want = _run(r.model, feeds)
    got = _run(r.transformed, feeds)
    assert np.abs(got - want).max() == pytest.approx(r.max_abs)
    assert r.max_abs > layer_report.atol + layer_report.rtol * np.abs(want).max()
    assert r.tried >= 1 and not r.cut_short
    assert "39 -> 1 ONNX node(s)" in str(r) and "Add(" in repr(r)


def test_reduce_takes_the_finding_or_its_index(layer_report, rule_reduction):
    index = layer_report.findings.index(layer_report.first_failure)
    again = reduce_onnxruntime(layer_report, index, progress=False)
    assert again.model.SerializeToString() == rule_reduction.model.SerializeToString()


def test_progress_is_given_to_a_callback(layer_report):
    seen = []
    layer_report.reduce(progress=seen.append)
    assert seen and {"phase", "tried", "nodes", "seconds"} <= set(seen[-1])
    assert [s["tried"] for s in seen] == sorted(s["tried"] for s in seen)


def test_save_writes_new_files_over_the_names(rule_reduction, tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me")
    out = tmp_path / "reduced"
    out.mkdir()
    (out / "repro.py").symlink_to(elsewhere)
    rule_reduction.save(out)
    assert elsewhere.read_text() == "keep me"  # the link was replaced, never written through
    assert not (out / "repro.py").is_symlink()
    assert sorted(p.name for p in out.iterdir()) == sorted(rule_reduction.files)
    assert set(rule_reduction.files) == {"reduced.onnx", "inputs.npz", "rewritten.onnx", "repro.py"}
    loaded = onnx.load(str(out / "reduced.onnx"))
    assert loaded.SerializeToString() == rule_reduction.model.SerializeToString()
    with np.load(out / "inputs.npz") as z:
        for k, a in enumerate(rule_reduction.inputs):
            np.testing.assert_array_equal(z[f"arr_{k}"], a)


def test_the_upstream_script_runs_alone_and_fails_while_the_rule_is_wrong(rule_reduction, tmp_path):
    path = rule_reduction.upstream_repro(tmp_path)
    assert path == tmp_path / "repro.py"
    text = path.read_text()
    assert _script_imports(text) == SCRIPT_IMPORTS  # onnx, onnxruntime, numpy: no passlens
    assert "is not ONNX Runtime's" in text  # a rewrite's script says what it runs
    done = _run_script(path, tmp_path)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}" in out
    assert "the rewrite: onnxscript rewrite rule AddToSub" in out
    assert "before the rewrite (optimizations off): shape [2, 5, 32] float32" in out
    assert f"the outputs differ: max abs difference {rule_reduction.max_abs:.3g}" in out
    assert "= Add (" in out and "= Sub (" in out  # both models printed


# ===== an ORT transformer =======================================================================


def test_an_ort_transformer_step_is_reduced_through_its_own_sessions(layer_report, tmp_path):
    """ORT's transformers are right at any tolerance the check uses: the ORT path is run on a
    finding made by hand at MatMulScaleFusion with the tolerance at 0, where folding the scale
    into the MatMul changes the last bits (a real, if harmless, change of the numbers)."""
    exact = copy.copy(layer_report)
    exact.rtol = exact.atol = 0.0
    step = _step(layer_report.trace, "MatMulScaleFusion")
    r = exact.reduce(Finding("diverged", step), progress=False)
    assert (r.kind, r.transformer, r.level) == ("ort", "MatMulScaleFusion", "all")
    assert sorted(n.op_type for n in r.model.graph.node) == ["MatMul", "Mul"]
    assert r.transformed is None and ("MatMulScaleFusion", True) in r.applied
    assert 0 < r.max_abs < 1e-5
    path = r.upstream_repro(tmp_path / "ort_repro.py")
    assert _script_imports(path.read_text()) == SCRIPT_IMPORTS
    done = _run_script(path, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "optimizations on (all):" in done.stdout and "optimizations off:" in done.stdout
    assert "first differing transformer: MatMulScaleFusion (application" in done.stdout
    assert f"onnxruntime {ort.__version__}" in done.stdout


def test_a_budget_spent_while_shrinking_gives_the_smallest_cut_so_far(layer_report, monkeypatch):
    """The budget runs out as the shrink starts (its deadline moved to the past): the first
    cut that held is the result, marked cut short."""
    from explorer.onnxruntime import reduce as ort_reduce

    shrink = ort_reduce.Search.shrink

    def spent(self):
        self.deadline = 0.0
        return shrink(self)

    monkeypatch.setattr(ort_reduce.Search, "shrink", spent)
    exact = copy.copy(layer_report)
    exact.rtol = exact.atol = 0.0
    r = exact.reduce(Finding("diverged", _step(layer_report.trace, "MatMulScaleFusion")))
    assert r.cut_short and r.nodes[1] > 2
    assert "stopped by the time budget" in str(r)
    assert "MatMul" in {n.op_type for n in r.model.graph.node}  # it still holds the fusion's


def test_a_correct_step_is_not_reproducible(layer_report):
    trace = layer_report.trace
    for name in ("FoldConstantsPass", "MatMulScaleFusion"):  # an onnxscript pass, ORT's
        with pytest.raises(NotReproducible, match="never changed the numbers"):
            layer_report.reduce(Finding("diverged", _step(trace, name)), progress=False)


def test_what_cannot_be_reduced_is_one_clear_error(layer_report):
    trace = layer_report.trace
    step = _step(trace, "AddToSub")
    with pytest.raises(ReduceError, match="shape-mismatch finding cannot be reduced"):
        layer_report.reduce(Finding("shape-mismatch", step), progress=False)
    with pytest.raises(ReduceError, match="no finding 99"):
        layer_report.reduce(99, progress=False)
    with pytest.raises(ReduceError, match="reduce the finding of one of its steps"):
        layer_report.reduce(Finding("diverged", _step(trace, "ort:all")), progress=False)
    with pytest.raises(ReduceError, match="budget of 0 s was spent"):
        layer_report.reduce(budget=0, progress=False)
    loaded = copy.copy(layer_report)
    loaded.trace = copy.copy(trace)
    loaded.trace.onnxruntime_replay = {}
    with pytest.raises(ReduceError, match="cannot be run again alone"):
        loaded.reduce(Finding("diverged", step), progress=False)


def test_a_script_past_the_size_cap_is_refused_and_save_says_so(rule_reduction, tmp_path):
    import dataclasses

    from explorer.onnxruntime.repro import MAX_EMBEDDED_BYTES

    big = dataclasses.replace(
        rule_reduction, inputs=[np.zeros(MAX_EMBEDDED_BYTES // 4 + 1, np.float32)] * 2
    )
    with pytest.raises(ReduceError, match="more than the .* a script embeds"):
        big.upstream_repro(tmp_path)
    assert "repro.py" not in big.files and any("no repro.py" in line for line in big.lines())
    big.save(tmp_path / "big")
    assert sorted(p.name for p in (tmp_path / "big").iterdir()) == sorted(big.files)


# ===== what the recorder keeps for the reducer ==================================================


@pytest.fixture(scope="module")
def fusion_trace():
    torch.manual_seed(1)
    return explorer.explore(
        Layer().eval(),
        (torch.randn(2, 5, 32),),
        compiler="onnxruntime",
        pipeline="onnxscript,transformers:bert",
        progress=False,
    )


def test_every_rewrite_step_keeps_a_replay_that_makes_it_again(fusion_trace):
    """An onnxscript pass or rule and a transformers-optimizer fusion, run again on the model
    their step was given, make the step's model again (node for node; fresh node names may
    take other counters)."""
    trace = fusion_trace
    replays = trace.onnxruntime_replay
    kinds = {r.kind for r in replays.values()}
    assert kinds == {"pass", "rule", "fusion"}
    for index, replay in replays.items():
        step = trace.steps[index]
        made = replay(step.before.proto())
        ops = [(n.domain, n.op_type) for n in made.graph.node]
        assert ops == [(n.domain, n.op_type) for n in step.module.proto().graph.node], step.name
    stages = [s.index for s in trace.steps if s.depth == 0]
    assert not set(stages) & set(replays)  # the stages themselves are not one rewrite


def test_a_fusion_step_is_reduced_through_its_replay(fusion_trace, tmp_path):
    """As for ORT's transformers (above): the fusions are right, so the path is run on a
    finding made by hand with the tolerance at 0, where SkipLayerNormalization's kernel rounds
    otherwise than Add then LayerNormalization."""
    report = fusion_trace.check(progress=False)
    assert report.ok
    exact = copy.copy(report)
    exact.rtol = exact.atol = 0.0
    r = exact.reduce(Finding("diverged", _step(fusion_trace, "fuse_skip_layer_norm")))
    assert r.kind == "fusion" and r.nodes[1] <= 3
    assert "LayerNormalization" in {n.op_type for n in r.model.graph.node}
    assert "SkipLayerNormalization" in {n.op_type for n in r.transformed.graph.node}
    done = _run_script(r.upstream_repro(tmp_path), tmp_path)
    assert done.returncode == 1, done.stderr
    assert "the rewrite: onnxruntime transformers-optimizer fusion fuse_skip_layer_norm" in (
        done.stdout
    )


# ===== what a cut is ============================================================================


def test_a_cut_keeps_its_weights_and_turns_what_flows_in_into_inputs():
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.full((3,), 2.0, np.float32), "w")
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.float32(3))),
        helper.make_node("Mul", ["a", "w"], ["b"], name="mul"),
        helper.make_node("Add", ["b", "c"], ["y"], name="add"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [w],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    graph = ModelGraph(model)
    values = {"x": np.ones(3, np.float32), "a": np.ones(3, np.float32)}
    values |= {"b": np.full(3, 2.0, np.float32), "y": np.full(3, 5.0, np.float32)}
    keep = graph.cone(3, 0)  # the Add, and the Constant it reads
    assert keep == {1, 3}
    cut, inputs = build_cut(graph, keep, "y", values)
    assert inputs == ["b"] and [n.op_type for n in cut.graph.node] == ["Constant", "Add"]
    cut, inputs = build_cut(graph, graph.cone(3, 1), "y", values)
    assert inputs == ["a"] and [t.name for t in cut.graph.initializer] == ["w"]
    assert graph.cone(3, None) == {0, 1, 2, 3}
    assert _run(cut, {"a": values["a"]}).tolist() == [5.0, 5.0, 5.0]
    assert build_cut(graph, keep, "y", {"y": values["y"]}) is None  # b's value is not known


# ===== untrusted names ==========================================================================


def _crafted_model():
    """x + w, then Relu, with a node, a value and the rule named to break out of a string."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), "w")
    nodes = [
        helper.make_node("Add", ["x", "w"], [VALUE], name=PAYLOAD),
        helper.make_node("Relu", [VALUE], ["y"], name="relu"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_crafted_names_stay_data_in_the_script(tmp_path):
    x = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    trace = explorer.explore(
        _crafted_model(),
        (x,),
        compiler="onnxruntime",
        pipeline=[],
        rewrite_rules=[add_to_sub(PAYLOAD)],
        progress=False,
    )
    report = trace.check(progress=False)
    r = report.reduce(progress=False)
    assert r.step == PAYLOAD and r.output == VALUE
    text = r.upstream_repro(tmp_path).read_text()
    assert _script_imports(text) == SCRIPT_IMPORTS  # the payload's import is not code
    assert "os.system" not in text.split("STEP = ")[0]  # the docstring and helpers hold none
    assert f"STEP = {PAYLOAD!r}" in text
    tree = ast.parse(text)
    calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert not any(isinstance(f, ast.Attribute) and f.attr == "system" for f in calls)
    done = _run_script(tmp_path / "repro.py", tmp_path)
    assert done.returncode == 1, done.stderr
    assert not (tmp_path / "pwned").exists()
    assert PAYLOAD in done.stdout  # printed as text
    assert "\x1b" not in done.stdout and "\\x1b[2Jv" in done.stdout  # escaped when printed
    assert "the outputs differ" in done.stdout
