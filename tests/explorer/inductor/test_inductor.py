"""Recording torch.compile (explorer.inductor): Dynamo's graphs by frame (graph breaks,
recompiles), AOTAutograd's graph, Inductor's passes and pattern replacements as steps, the
graph model (ops, shapes, weights with bytes, provenance), texts, the check against eager (a
wrong custom post-grad pass found at its own step, on the node it broke), save / load, and
``passlens explore --compiler inductor``."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor")

from torch._inductor.custom_graph_pass import CustomGraphPass  # noqa: E402

import explorer  # noqa: E402
from explorer.inductor.run import line_up  # noqa: E402


class Broken(torch.nn.Module):
    """Two linears with a graph break between them: two FX graphs."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 8)
        self.head = torch.nn.Linear(8, 3)

    def forward(self, x):
        y = torch.relu(self.fc(x)) + 1.0
        torch._dynamo.graph_break()
        return self.head(y) * 2.0


class AddToSub(CustomGraphPass):
    """A wrong post-grad pass: every aten.add.Tensor becomes aten.sub.Tensor."""

    def __call__(self, graph):
        for node in graph.nodes:
            if node.target is torch.ops.aten.add.Tensor:
                node.target = torch.ops.aten.sub.Tensor

    def uuid(self):
        return "passlens-test-add-to-sub"


class Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) + x


@pytest.fixture(scope="module")
def broken():
    torch.manual_seed(0)
    model = Broken().eval()
    x = torch.randn(2, 4)
    trace = explorer.explore(
        model, (x,), compiler="inductor", progress=False, calls=[(torch.randn(5, 4),)]
    )
    return model, x, trace


@pytest.fixture(scope="module")
def wrong_pass():
    torch.manual_seed(0)
    model = Residual().eval()
    x = torch.randn(2, 8)
    trace = explorer.explore(
        model,
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": AddToSub()},
    )
    return trace, trace.check((x,))


def _graph_steps(trace, graph_index):
    return [s for s in trace.steps if getattr(s.shown_module, "graph_index", None) == graph_index]


# ----- recording ----------------------------------------------------------------------------------


def test_graph_breaks_and_recompiles_are_graphs_named_by_frame(broken):
    _, _, trace = broken
    imports = [s.name for s in trace.steps if s.kind == "import"]
    assert len(imports) == 4
    assert imports[0].startswith("dynamo 0/0 forward (test_inductor.py:")
    assert imports[1].startswith("dynamo 1/0 torch_dynamo_resume_in_forward")
    assert imports[2].startswith("dynamo 0/1 forward")  # the recompile for batch 5
    reasons = [g.reason for g in trace.inductor.graphs]
    assert reasons[0].startswith("graph break: ")
    assert "recompiled" in reasons[2] and "size mismatch" in reasons[2]
    assert trace.compiler == "inductor" and trace.imported is trace.steps[0]


def test_every_graph_goes_through_the_stages_in_order(broken):
    _, _, trace = broken
    for k in range(4):
        top = [s.name for s in _graph_steps(trace, k) if s.depth == 0]
        assert top[0].startswith("dynamo ")
        assert top[1:] == [
            "pre-grad passes",
            "aot-autograd",
            "joint-graph passes",
            "view_to_reshape",
            "post-grad passes",
            "inductor codegen",
        ]
    nested = [s for s in trace.steps if s.depth == 1]
    assert any(s.name == "remove_noop_ops" for s in nested)
    for s in nested:
        assert trace.steps[s.parent].name.endswith("passes")


def test_an_unchanged_pass_shares_its_module_and_a_changed_one_copies(broken):
    _, _, trace = broken
    pre = trace["pre-grad passes"]
    assert not pre.changed and pre.module is pre.before
    aot = trace["aot-autograd"]
    assert aot.changed and aot.module.level == "aten" and aot.before.level == "dynamo"


def test_graph_model_has_aten_ops_shapes_weights_and_provenance(broken):
    _, _, trace = broken
    g = trace["aot-autograd"].graph
    addmm = [n for n in g.nodes.values() if n.op == "aten.addmm.default"]
    assert len(addmm) == 1
    node = addmm[0]
    assert node.shape == (2, 8) and node.dtype == "f32" and node.type == "f32[2, 8]"
    assert node.group == "fc" and node.provenance["module"] == "fc"
    assert node.provenance["file"].endswith("test_inductor.py:" + _line_of("self.fc(x)"))
    assert set(g.params) == {"fc.weight", "fc.bias"}
    assert g.params["fc.weight"].nbytes == 8 * 4 * 4 and g.param_bytes == (32 + 8) * 4
    assert np.array_equal(g.params["fc.weight"].obj.data, broken[0].fc.weight.detach().numpy())
    # symbolic dims in the recompiled (dynamic) graph
    dyn = trace["aot-autograd#3"].graph
    shapes = [n.shape for n in dyn.nodes.values() if n.op == "aten.addmm.default"]
    assert shapes and isinstance(shapes[0][0], str) and shapes[0][1] == 8


def _line_of(code: str) -> str:
    import inspect

    lines, start = inspect.getsourcelines(Broken.forward)
    return str(start + next(i for i, line in enumerate(lines) if code in line))


def test_diff_and_texts(broken):
    _, _, trace = broken
    d = trace["aot-autograd"].diff()
    assert d.op_counts_after.get("aten.addmm.default") == 1
    assert d.op_counts_before.get("torch._C._nn.linear") == 1
    codegen = trace["inductor codegen"]
    texts = codegen.texts
    assert {
        "IR",
        "scheduler IR (before fusion)",
        "scheduler IR (after fusion)",
        "output code",
    } <= set(texts)
    assert "def call(" in texts["output code"] or "def call" in texts["output code"]
    assert "SchedulerNode" in texts["scheduler IR (before fusion)"]
    assert "def forward(" in trace["aot-autograd"].text
    assert "inductor codegen" in trace.summary_text()


def test_pattern_replacements_are_named_by_their_pattern():
    torch.manual_seed(0)

    def viewed(x):
        return (x.view(16).view(2, 8) + 1.0).sum(-1)  # a view pair that undoes itself

    trace = explorer.explore(viewed, (torch.randn(2, 8),), compiler="inductor", progress=False)
    patterns = [s for s in trace.steps if s.name.startswith("pattern ")]
    assert patterns, "a pointless view should be replaced by a pattern"
    assert all(s.changed for s in patterns)  # replacements that changed nothing are not steps
    assert [s.name for s in patterns] == ["pattern pointless_view_pair"]
    parent = trace.steps[patterns[0].parent]
    assert parent.name == "pattern_matcher" and trace.steps[parent.parent].name == (
        "joint-graph passes"
    )
    d = patterns[0].diff()
    assert sorted(n.op for n in d.removed) == ["aten.view.default", "aten.view.default"]


def test_every_step_has_a_previous_step_and_the_post_grad_passes_count_against_theirs():
    # Inductor turns every aten.view into aten.reshape between the joint-graph and the post-grad
    # passes, outside any pass: that is the view_to_reshape step, the post-grad passes' input
    torch.manual_seed(0)

    def viewed(x):
        return x.view(2, 4, 2).sum(-1) + 1.0

    trace = explorer.explore(
        viewed,
        (torch.randn(2, 8),),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": AddToSub()},
    )
    assert all(s.previous is not None for s in trace.steps[1:])
    v2r, post = trace["view_to_reshape"], trace["post-grad passes"]
    assert v2r.depth == 0 and v2r.changed and post.index == v2r.index + 1
    d = v2r.diff()
    assert d.op_count_changes == {"aten.reshape.default": 1, "aten.view.default": -1}
    assert post.previous is v2r and trace.steps[post.children[0]].previous is v2r
    row = next(r for r in trace.summary() if r["pass"] == "post-grad passes")
    assert row["ops"] == "+1 aten.sub.Tensor, -1 aten.add.Tensor"
    assert "+1 aten.sub.Tensor" in trace.summary_text()
    assert trace.check().first_failure.step is trace["AddToSub"]


def test_a_change_outside_any_recorded_step_is_a_step_of_its_own():
    # what Inductor might do to a graph outside the functions the recorder wraps: a group
    # handed a graph that is not what the last stage showed gets a step from that graph
    from explorer.inductor.module import FXState
    from explorer.inductor.record import OUTSIDE, GraphRecord, Recorder

    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1.0)
    rec = Recorder(FXState())
    rec.graph = GraphRecord(0, "0/0", "f", "f.py:1", "")
    rec.items.append(explorer.inductor.record.ImportItem("dynamo", rec.wrap(gm), 0.0, rec.graph))
    rec._catch_up(gm)  # unchanged since the import showed it: no step
    assert len(rec.items) == 1
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    relu.target = torch.sigmoid
    rec._catch_up(gm)
    (snap,) = rec.items[1:]
    assert snap.pass_name == OUTSIDE and snap.depth == 0
    assert snap.before is rec.items[0].module and snap.module is not snap.before
    assert "sigmoid" in snap.module.text() and "sigmoid" not in snap.before.text()


# ----- the check ----------------------------------------------------------------------------------


def test_check_of_a_correct_compile_is_ok_on_every_graph(broken):
    _, x, trace = broken
    report = trace.check()
    assert report.ok, str(report)
    ran = [c for c in report.steps if c.status == "ok" and c.same_as is None]
    graphs = {c.step.shown_module.graph_index for c in ran}
    assert graphs == {0, 1, 2, 3}  # the recompiled graphs ran on the call that made them
    assert any("agree" in n for n in report.notes)


def test_wrong_custom_pass_is_found_at_its_own_step_on_its_node(wrong_pass):
    trace, report = wrong_pass
    first = report.first_failure
    assert first.kind == "diverged"
    assert first.step.name == "AddToSub"
    assert trace.steps[first.step.parent].name == "post-grad passes"
    assert first.step.spec == "post_grad_custom_post_pass=AddToSub"
    assert [n.name for n in first.nodes] == ["add"]
    assert first.details["node_errors"][0].where == "add"
    assert first.step.graph.node_of(first.nodes[0]).op == "aten.sub.Tensor"
    before = [c for c in report.steps if c.step.index < first.step.index and not c.step.children]
    assert all(c.status != "diverged" for c in before)
    assert len([f for f in report.failures if f.kind == "diverged"]) == 1  # codegen: same error
    codegen = next(c for c in report.steps if c.step.name == "inductor codegen")
    assert codegen.status == "diverged"
    assert any("differ" in n for n in report.notes)


def test_reduce_cuts_the_graph_to_the_node_the_pass_breaks(wrong_pass, tmp_path):
    trace, report = wrong_pass
    reduction = report.reduce(budget=30)
    assert reduction.pass_name == "AddToSub"
    assert reduction.nodes[1] == 1  # the add alone, its inputs as values
    assert "torch.ops.aten.add.Tensor" in reduction.code
    assert reduction.max_abs > 1.0
    out = reduction.save(tmp_path / "red")
    assert sorted(p.name for p in out.iterdir()) == ["inputs.npz", "test_reduced.py"]
    source = (out / "test_reduced.py").read_text()
    assert "from tests.explorer.inductor.test_inductor import AddToSub" in source
    namespace = {"__file__": str(out / "test_reduced.py"), "__name__": "reduced"}
    exec(compile(source, str(out / "test_reduced.py"), "exec"), namespace)
    with pytest.raises(AssertionError):  # fails while the pass is wrong
        namespace["test_reduced"]()


class Boom(CustomGraphPass):
    """A custom pass that raises."""

    def __call__(self, graph):
        raise RuntimeError("boom in a custom pass")

    def uuid(self):
        return "passlens-test-boom"


def test_a_failing_custom_pass_is_a_failed_step_and_the_trace_is_kept():
    x = torch.randn(2, 4)
    trace = explorer.explore(
        torch.nn.Linear(4, 4),
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_pre_pass": Boom()},
    )
    failure = trace.failure
    assert failure.name == "Boom" and "boom in a custom pass" in str(failure.error)
    assert trace.steps[failure.parent].name == "post-grad passes"
    assert trace.steps[failure.parent].failed
    assert "inductor codegen" not in [s.name for s in trace.steps]
    report = trace.check((x,))
    assert [f.kind for f in report.failures] == ["pass-failed"]
    assert report.first_failure.step is failure


def test_a_random_graph_is_not_judged():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).train()
    x = torch.randn(4, 8)
    trace = explorer.explore(model, (x,), compiler="inductor", progress=False)
    report = trace.check((x,))
    assert report.failures == []  # dropout's masks differ run to run: no false divergence
    assert all(c.status == "not run" for c in report.steps if c.step.kind == "pass")
    assert any("random ops" in n for n in report.notes)


def test_line_up_refuses_values_that_do_not_fit(broken):
    _, _, trace = broken
    graph = trace.steps[0].module.graph
    values = [
        torch.zeros(n.meta["example_value"].shape) for n in graph.nodes if n.op == "placeholder"
    ]
    assert [tuple(v.shape) for v in line_up(graph, values)] == [tuple(v.shape) for v in values]
    with pytest.raises(explorer.PasslensError, match="cannot line up"):
        line_up(graph, values[:1])
    values[-1] = torch.zeros(3, 5)
    with pytest.raises(explorer.PasslensError, match=r"has shape \[2, 4\], the value \[3, 5\]"):
        line_up(graph, values)


# ----- save / load, errors, the CLI ---------------------------------------------------------------


def test_save_and_load_keep_graphs_texts_and_findings(wrong_pass, tmp_path):
    trace, report = wrong_pass
    path = tmp_path / "inductor.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    assert loaded.compiler == "inductor"
    assert [s.name for s in loaded.steps] == [s.name for s in trace.steps]
    step = loaded["AddToSub"]
    d = step.diff()
    assert step.changed and [n.op for n in d.added] == ["aten.sub.Tensor"]
    assert [n.op for n in d.removed] == ["aten.add.Tensor"]
    assert (
        loaded["inductor codegen"].texts["output code"]
        == trace["inductor codegen"].texts["output code"]
    )
    first = loaded.report.first_failure
    assert first.step.name == "AddToSub" and step.graph.node_of(first.nodes[0]).id == "add"
    with pytest.raises(explorer.PasslensError, match="loaded from a file"):
        loaded.check()
    with pytest.raises(explorer.PasslensError, match="explore it again"):
        loaded.report.reduce()


def test_bad_arguments_say_what_is_wrong():
    model = Residual()
    x = torch.randn(2, 8)
    with pytest.raises(ValueError, match="no pipeline"):
        explorer.explore(model, (x,), "default", compiler="inductor")
    with pytest.raises(ValueError, match="no option"):
        explorer.explore(model, (x,), compiler="inductor", options={"no_such_option": 1})
    with pytest.raises(ValueError, match="example inputs"):
        explorer.explore(model, compiler="inductor")
    with pytest.raises(ValueError, match="'inductor'"):
        explorer.explore(model, (x,), compiler="nvcc")


def test_patches_are_restored_after_explore(broken):
    from torch._inductor import compile_fx
    from torch.fx.passes.graph_transform_observer import GraphTransformObserver

    assert compile_fx._recursive_post_grad_passes.__module__ == "torch._inductor.compile_fx"
    assert compile_fx.view_to_reshape.__module__ == "torch._inductor.fx_passes.post_grad"
    assert GraphTransformObserver.__enter__.__module__.startswith("torch.fx")


def test_cli_explores_with_inductor(tmp_path, capsys):
    from passlens.cli import main

    src = tmp_path / "model.py"
    src.write_text(
        textwrap.dedent(
            """
            import torch

            def model():
                torch.manual_seed(0)
                net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
                return net.eval(), (torch.randn(2, 4),)
            """
        )
    )
    assert main(["explore", str(src), "--compiler", "inductor", "--check"]) == 0
    out = capsys.readouterr().out
    assert "dynamo 0/0 forward" in out and "inductor codegen" in out and "check ok" in out
    assert "post-grad passes" in out
    assert main(["explore", str(src), "--compiler", "inductor", "--pipeline", "x"]) != 0


class SplitVarMeanForgetsCorrection(CustomGraphPass):
    """A wrong post-grad pass: var_mean becomes var + mean, and var loses ``correction=0``
    (LayerNorm's biased variance becomes the unbiased one)."""

    def __call__(self, graph):
        aten = torch.ops.aten
        for node in list(graph.nodes):
            if node.target is not aten.var_mean.correction:
                continue
            x, dims = node.args[0], node.args[1]
            keepdim = node.kwargs.get("keepdim", False)
            with graph.inserting_before(node):
                var = graph.call_function(aten.var.correction, (x, dims), {"keepdim": keepdim})
                mean = graph.call_function(aten.mean.dim, (x, dims, keepdim))
            for user in list(node.users):
                user.replace_all_uses_with(var if user.args[1] == 0 else mean)
                graph.erase_node(user)
            graph.erase_node(node)

    def uuid(self):
        return "passlens-test-split-var-mean"


class NormedAndMasked(torch.nn.Module):
    """A LayerNorm (var_mean, a tuple), a split (a tuple) and a -inf mask (equal infinities)."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        a, b = self.norm(x).split(4, dim=-1)
        mask = torch.where(a > 0, 0.0, float("-inf"))
        return torch.softmax(b + mask, dim=-1)


def test_reduce_takes_a_tuple_producer_in_and_no_equal_infinities_for_a_change():
    torch.manual_seed(0)
    x = torch.randn(3, 8)
    x[:, :4] = x[:, :4].abs() + 0.1  # every row keeps an unmasked column
    trace = explorer.explore(
        NormedAndMasked().eval(),
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": SplitVarMeanForgetsCorrection()},
    )
    report = trace.check((x,))
    assert report.first_failure.step.name == "SplitVarMeanForgetsCorrection"
    reduction = report.reduce(budget=30)
    # not the split or the mask (whose -inf stay -inf): the var_mean the pass rewrites, with
    # the value the finding names
    assert "aten.var_mean.correction" in reduction.code and "correction = 0" in reduction.code
    assert "split" not in reduction.code and "where" not in reduction.code
    assert 0 < reduction.max_abs < 1.0


def test_equal_infinities_do_not_differ():
    from explorer.check.numbers import compare

    inf = np.inf
    assert compare(np.array([-inf, inf, 1.0]), np.array([-inf, inf, 1.0]), 1e-4, 1e-5) == (
        0.0,
        0.0,
        0,
    )
    assert compare(np.array([inf]), np.array([-inf]), 1e-4, 1e-5)[2] == 1
    assert compare(np.array([inf]), np.array([1.0]), 1e-4, 1e-5)[2] == 1


class ResidualTail(torch.nn.Module):
    """A residual add and two ops after it: AddToSub makes the add and all after it differ."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh((torch.relu(self.fc(x)) + x) * 3.0)


def test_a_finding_marks_the_first_node_that_differs_not_the_last():
    """issue 39: the wrong add, not the tanh that reads its error."""
    torch.manual_seed(0)
    model = ResidualTail().eval()
    x = torch.randn(2, 8)
    trace = explorer.explore(
        model,
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": AddToSub()},
    )
    first = trace.check((x,)).first_failure
    assert first.kind == "diverged" and first.step.name == "AddToSub"
    errors = first.details["node_errors"]
    assert [e.where for e in errors] == ["add", "mul", "tanh"]  # in graph order
    assert [n.name for n in first.nodes] == ["add"]
    assert first.step.graph.node_of(first.nodes[0]).op == "aten.sub.Tensor"
    assert first.message.startswith("after AddToSub, add ")


def test_strict_is_accepted_and_has_no_effect(broken):
    """torch.compile handles operators itself: ``strict`` is ignored, not handed on (issue
    39: a TypeError)."""
    model, x, trace = broken
    strict = explorer.explore(
        model, (x,), compiler="inductor", progress=False, calls=[(torch.randn(5, 4),)], strict=True
    )
    assert [s.name for s in strict.steps] == [s.name for s in trace.steps]


def test_every_explore_and_check_option_takes_effect(check_options_reach):
    """Every option ``explore(..., compiler="inductor")`` documents takes effect (``calls``
    recompiles, ``options`` sets Inductor's config, ``dynamic``, the progress callback;
    ``pipeline`` is refused and ``strict`` has no effect, as documented) and every check option
    reaches the check (issue 40); ``reference`` has no effect here, as the check says: each
    graph's reference is its Dynamo graph, the imported step."""
    torch.manual_seed(0)
    model, x = Residual().eval(), torch.randn(2, 8)
    calls = []
    trace = explorer.explore(
        model,
        (x,),
        compiler="inductor",
        progress=lambda *a: calls.append(a),
        options={"post_grad_custom_post_pass": AddToSub()},
        calls=[(torch.randn(3, 8),)],
        dynamic=False,
        strict=True,
    )
    names = [s.name for s in trace.steps]
    assert "AddToSub" in names and calls
    assert any("dynamo 0/1" in n for n in names)  # the second call's shapes recompiled
    with pytest.raises(ValueError, match="give no pipeline"):
        explorer.explore(model, (x,), "default", compiler="inductor", progress=False)
    source, imported = check_options_reach(trace, (x,), import_reference=False)
    assert source.reference == imported.reference == trace.check((x,)).reference
    assert not imported.ok  # AddToSub diverges at rtol 0.25 too


# ----- the upstream repro (explorer/inductor/repro.py) ----------------------------------------

CRAFTED = 'x"); open("PWNED", "w")  #\nopen("PWNED", "w")\n\'\'\'"""'


def _run_alone(script, cwd):
    """The script run by the venv's python, isolated (-I), with no passlens on its path."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        [sys.executable, "-I", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_upstream_repro_runs_with_torch_alone_and_reproduces(wrong_pass, tmp_path):
    trace, report = wrong_pass
    reduction = report.reduce(budget=30)
    script = reduction.upstream_repro(tmp_path)
    assert script == tmp_path / "repro.py"
    source = script.read_text()
    # torch's minifier's shape: the class, its forward, load_args, a run at the bottom
    assert "class Repro(torch.nn.Module):" in source and "def forward(self, " in source
    assert "def load_args():" in source and 'if __name__ == "__main__":' in source
    assert "class AddToSub(CustomGraphPass):" in source  # the pass's own source
    assert "tests.explorer" not in source and "import explorer" not in source
    done = _run_alone(script, tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    out = done.stdout
    assert f"torch {torch.__version__}" in out and "pass: AddToSub" in out
    assert "BUG REPRODUCED" in out
    printed = float(out.split("max abs difference: ")[1].split(",")[0])
    np.testing.assert_allclose(printed, reduction.max_abs, rtol=1e-4)


def test_crafted_pass_names_stay_data_in_the_script_and_the_test(wrong_pass, tmp_path):
    """A pass name made to break out of a string is a literal in both files: parsed, the only
    strings holding it are the PASS_NAME constants, and nothing calls open."""
    import ast
    import dataclasses

    from explorer.inductor.reduce import test_source

    trace, report = wrong_pass
    reduction = dataclasses.replace(report.reduce(budget=30), pass_name=CRAFTED)
    script = reduction.upstream_repro(tmp_path / "repro.py").read_text()
    test = test_source(CRAFTED, AddToSub(), reduction.code, 2, 1e-4, 1e-5)
    for source in (script, test):
        tree = ast.parse(source)
        (named,) = [
            n
            for n in tree.body
            if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "PASS_NAME"
        ]
        assert named.value.value == CRAFTED
        holding = [
            n for n in ast.walk(tree) if isinstance(n, ast.Constant) and "PWNED" in str(n.value)
        ]
        assert holding == [named.value]
        calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "open" not in calls


class SwapAddArgs(CustomGraphPass):
    """A correct post-grad pass that changes the graph: add's operands swapped."""

    def __call__(self, graph):
        for node in graph.nodes:
            if node.target is torch.ops.aten.add.Tensor and len(node.args) == 2:
                node.args = (node.args[1], node.args[0])

    def uuid(self):
        return "passlens-test-swap-add-args"


def test_a_correct_custom_pass_is_not_reproducible_and_a_pass_without_source_is_refused(
    wrong_pass,
):
    from explorer.check.report import Finding
    from explorer.reduce import NotReproducible, ReduceError

    torch.manual_seed(0)
    x = torch.randn(2, 8)
    trace = explorer.explore(
        Residual().eval(),
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": SwapAddArgs()},
    )
    report = trace.check((x,))
    assert report.ok
    (step,) = [s for s in trace.steps if s.name == "SwapAddArgs"]
    assert step.changed
    with pytest.raises(NotReproducible, match="never changed the numbers"):
        report.reduce(Finding("diverged", step, message="planted"), budget=30)

    import dataclasses

    space: dict = {"CustomGraphPass": CustomGraphPass, "torch": torch}
    exec(  # a class with no file: inspect.getsource cannot read it
        "class NoSource(CustomGraphPass):\n"
        "    def __call__(self, graph):\n        pass\n"
        "    def uuid(self):\n        return 'x'\n",
        space,
    )
    reduction = dataclasses.replace(wrong_pass[1].reduce(budget=30), fn=space["NoSource"]())
    with pytest.raises(ReduceError, match="the source of 'NoSource' cannot be read"):
        reduction.upstream_repro("unused.py")


def test_nodes_a_custom_pass_adds_take_the_type_and_layer_of_what_they_read():
    """Issue 43 item 4: the var and mean SplitVarMeanForgetsCorrection adds carry neither
    ``meta["val"]`` nor ``nn_module_stack``; their types come from their inputs' fake values
    (not "?") and their layer from the node they read, so they are drawn in ``norm``."""
    x = torch.randn(3, 8)
    trace = explorer.explore(
        NormedAndMasked().eval(),
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": SplitVarMeanForgetsCorrection()},
    )
    step = trace["SplitVarMeanForgetsCorrection"]
    added = {n.op: n for n in step.diff().added if n.kind == "op"}
    var, mean = added["aten.var.correction"], added["aten.mean.dim"]
    assert var.type == mean.type == "f32[3, 1]"
    assert var.group == mean.group == "norm"
    assert var.provenance["module"] == "norm" and var.provenance["from"]
    # a node the model made at its top level keeps no module (its source line says where)
    top = [n for n in step.graph.nodes.values() if n.op == "aten.where.self"]
    assert top and all(n.group == "" for n in top)


def test_the_error_map_has_the_layers_of_the_graph_and_the_first_is_where_the_pass_broke():
    """Issue 43 item 4: the error map of a torch.compile trace names its layers (the module
    paths of the FX graphs, added nodes placed), and its first layer at the custom pass's step
    is ``norm``, where the var it adds drops ``correction=0`` (it used to say that no node
    names a source layer)."""
    torch.manual_seed(0)
    x = torch.randn(3, 8)
    trace = explorer.explore(
        NormedAndMasked().eval(),
        (x,),
        compiler="inductor",
        progress=False,
        options={"post_grad_custom_post_pass": SplitVarMeanForgetsCorrection()},
    )
    m = trace.check((x,)).error_map()
    assert m.layers == ["norm"]
    step = trace["SplitVarMeanForgetsCorrection"]
    assert (m.first_step, m.first_layer) == (step.index, "norm")
    i = m.row(step.index)
    assert m.over[i, 0] and m.nodes[i][0] in step.graph.nodes
    before = m.row(step.previous.index)
    assert not m.over[before, 0]
