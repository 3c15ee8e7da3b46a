"""Recording Apache TVM Relax pipelines (explorer.tvm): steps, nesting, changed flags,
failures, graph models (ops, shapes, symbolic dims, weights with their bytes), save / load
without tvm, and the summary. Skipped when tvm is not installed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
torch = pytest.importorskip("torch")

from tvm import relax  # noqa: E402

import explorer  # noqa: E402
from explorer.store import read_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


class LinearReLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))


class SmallConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3)))


def _boom_pass(message: str = "boom: this pass cannot go on"):
    @tvm.transform.module_pass(opt_level=0, name="Boom")
    def boom(mod, ctx):
        raise ValueError(message)

    return boom


@pytest.fixture(scope="module")
def zero():
    torch.manual_seed(0)
    return explorer.explore(
        LinearReLU().eval(), (torch.randn(2, 4),), compiler="tvm", pipeline="zero"
    )


@pytest.fixture(scope="module")
def imported_module(zero):
    return zero.imported.module.ir


# ----- recording ---------------------------------------------------------------------------------


def test_zero_pipeline_records_every_pass_with_its_nesting(zero):
    assert zero.compiler == "tvm" and zero.frontend == "torch" and zero.pipeline == "zero"
    kinds = [s.kind for s in zero.steps[:2]]
    assert kinds == ["source", "import"] and zero.imported.name == "from_exported_program"
    top = zero[2]
    assert (top.name, top.depth, top.parent) == ("f_zero_pipeline", 0, None)
    legalize = zero["LegalizeOps"]
    assert legalize.depth == 2
    seq = zero[legalize.parent]
    assert seq.name == "sequential" and seq.parent == top.index
    assert [zero[c].name for c in seq.children] == [
        "LegalizeOps",
        "AnnotateTIROpPattern",
        "FoldConstant",
        "FuseOps",
        "FuseTIR",
    ]
    # FuseTIR's own passes are nested one level deeper, with their parent set
    fuse_tir = zero["FuseTIR"]
    inner = [zero[c].name for c in fuse_tir.children]
    assert "FuseTIRInner" in inner
    assert all(zero[c].depth == fuse_tir.depth + 1 for c in fuse_tir.children)
    assert all(s.seconds >= 0 for s in zero.steps) and top.seconds >= legalize.seconds
    assert zero.failure is None and zero.skipped == []


def test_changed_flags_follow_structural_equality(imported_module):
    # CanonicalizeBindings returns a new module object that is structurally equal: unchanged
    trace = explorer.explore(
        imported_module,
        compiler="tvm",
        pipeline=[relax.transform.CanonicalizeBindings(), relax.transform.LegalizeOps()],
    )
    top = [s.name for s in trace.steps if s.kind == "pass" and s.depth == 0]
    assert top == ["CanonicalizeBindings", "LegalizeOps"]
    canon, legalize = trace["CanonicalizeBindings"], trace["LegalizeOps"]
    assert [trace[c].name for c in canon.children] == [
        "CanonicalizeTIRVariables",
        "CanonicalizeRelaxBindings",
    ]
    assert canon.status == "unchanged" and canon.module is canon.before
    assert legalize.status == "changed" and legalize.module is not legalize.before
    assert legalize.previous.module is canon.module and canon.previous is trace.imported
    assert canon.diff().is_empty
    assert trace.pipeline == "CanonicalizeBindings,LegalizeOps"


def test_a_failing_pass_is_recorded_with_its_traceback_and_the_rest_skipped(imported_module):
    trace = explorer.explore(
        imported_module,
        compiler="tvm",
        pipeline=[relax.transform.LegalizeOps(), _boom_pass(), relax.transform.FuseOps()],
    )
    failure = trace.failure
    assert failure is not None and failure.name == "Boom" and failure.status == "failed"
    assert isinstance(failure.error, ValueError) and "cannot go on" in str(failure.error)
    assert "def boom" not in failure.traceback and "in boom" in failure.traceback
    assert failure.module is None and failure.before is trace["LegalizeOps"].module
    assert trace.final is trace["LegalizeOps"]
    assert [(k.pass_name, k.depth) for k in trace.skipped] == [("FuseOps", 0)]
    text = trace.summary_text()
    assert "failed" in text and "skipped: pass Boom failed" in text
    # the failed step shows the module it was given
    assert failure.graph.op_counts() == trace["LegalizeOps"].graph.op_counts()


def test_a_failure_inside_a_sequential_fails_it_too(imported_module):
    seq = tvm.transform.Sequential([relax.transform.LegalizeOps(), _boom_pass()], name="mine")
    trace = explorer.explore(imported_module, compiler="tvm", pipeline=seq)
    outer, inner = trace["mine"], trace["Boom"]
    assert inner.parent == outer.index and inner.depth == outer.depth + 1 == 1
    assert outer.failed and inner.failed and trace.failure is inner
    assert outer.error is inner.error
    assert trace.final is trace["LegalizeOps"]
    assert trace.skipped == []  # a Sequential's passes are TVM's to know


def test_kernel_builds_inside_a_pass_are_inner_steps(zero):
    fold = zero["FoldConstant"]
    built = [zero[c] for c in fold.children]
    assert built and built[0].name == "tirx.BindTarget"
    assert built[0].before.inner and built[0].previous is None
    assert all(s.module is None or s.module.inner for s in built)
    assert not zero.final.module.inner and zero.final.graph.signatures.keys() == {"main"}
    assert fold.module.inner is False and fold.previous is zero["AnnotateTIROpPattern"]


# ----- graph models ------------------------------------------------------------------------------


def test_imported_graph_ops_shapes_params_and_provenance(zero):
    g = zero.imported.graph
    ops = [n.op for n in g.nodes.values() if n.kind == "op"]
    assert ops == ["R.permute_dims", "R.matmul", "R.add", "R.nn.relu"]
    relu = next(n for n in g.nodes.values() if n.op == "R.nn.relu")
    assert (relu.shape, relu.dtype, relu.type) == ((2, 3), "f32", "f32[2, 3]")
    assert relu.provenance["node"] == "relu" and relu.provenance["framework"] == "torch"
    permute = next(n for n in g.nodes.values() if n.op == "R.permute_dims")
    assert permute.attrs["axes"] == "(1, 0)" and permute.group == "fc"
    assert {k: (p.shape, p.nbytes) for k, p in g.params.items()} == {
        "fc.weight": ((3, 4), 48),
        "fc.bias": ((3,), 12),
    }
    weight = g.params["fc.weight"]
    np.testing.assert_array_equal(weight.obj.data, zero.source["model"].fc.weight.detach().numpy())
    assert g.nodes["main/x"].kind == "input" and g.nodes["main/x"].nbytes == 32
    assert str(g.signatures["main"]) == "@main(%x: f32[2, 4]) -> (f32[2, 3],)"
    # the source step matches the import through the FX nodes named in provenance
    d = zero.imported.diff(zero[0])
    assert any(how == "source-node" for _, how in d.matches.values())


def test_a_call_of_a_fused_function_has_its_layer(zero):
    g = zero["FuseOps"].graph
    call = next(n for n in g.nodes.values() if n.op == "@fused_matmul_add_relu")
    # the fused function's last binding with a provenance is the Linear's add (its relu is a
    # binding FuseOps made): the call is in the fc layer
    assert call.function == "main" and call.provenance["node"] == "addmm" and call.group == "fc"
    inner = g.nodes["fused_matmul_add_relu/lv2"]
    assert inner.group == "fc" and inner.op == "R.call_tir(add)"


def test_the_app_steps_through_a_tvm_trace(zero):
    pytest.importorskip("panel")
    from widgets.app import PassApp

    app = PassApp(zero)
    for name in ("FoldConstant", "tirx.BindTarget", "FuseTIR"):
        app.index = zero[name].index
        for tab in ("graph", "IR", "IR diff", "params", "shapes"):
            app.tab = tab
    assert "FuseTIR" in app.header.object


def test_fold_constant_shows_the_weight_transposed(zero):
    d = zero["FoldConstant"].diff()
    assert d.op_count_changes == {"R.call_tir(transpose)": -1}
    messages = [p.message for p in d.params.permuted]
    assert len(messages) == 1 and "fc.weight" in messages[0]
    assert d.params.bytes_delta == 0


def test_final_step_calls_its_kernel_and_shows_the_tir(zero):
    final = zero.final
    calls = [n for n in final.graph.nodes.values() if n.op.startswith("R.call_tir(")]
    assert [n.op for n in calls] == ["R.call_tir(fused_matmul_add_relu)"]
    assert calls[0].attrs["kernel"] == "fused_matmul_add_relu"
    inputs = [e.src for e in final.graph.edges if e.dst == calls[0].id]
    assert inputs[0] == "main/x" and len(inputs) == 3
    assert final.backend_stage == "loops"
    assert "def fused_matmul_add_relu" in final.texts["loop IR"]
    assert "R.call_tir" in final.text and "T.prim_func" not in final.text
    assert final.param_bytes == 60


def test_conv_net_graph_and_weights():
    torch.manual_seed(0)
    model = SmallConvNet().eval()
    trace = explorer.explore(
        model,
        (torch.randn(1, 3, 8, 8),),
        compiler="tvm",
        pipeline=[relax.transform.LegalizeOps(), relax.transform.FoldConstant()],
    )
    g = trace.imported.graph
    conv = next(n for n in g.nodes.values() if n.op == "R.nn.conv2d")
    assert conv.shape == (1, 8, 8, 8) and conv.attrs["padding"].startswith("(1, 1")
    assert conv.provenance.get("module") == "conv"
    used = ["conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean"]
    used += ["bn.running_var", "fc.weight", "fc.bias"]
    # a fresh BatchNorm's weight and running_var are equal (ones), as are its bias and
    # running_mean (zeros): each constant still gets its own parameter's name
    assert set(used) <= set(g.params)
    expected = sum(model.state_dict()[k].numel() * 4 for k in used)
    assert sum(g.params[k].nbytes for k in used) == expected
    assert "R.nn.batch_norm" in g.op_counts()
    legal = trace["LegalizeOps"].graph
    assert "R.nn.conv2d" not in legal.op_counts()
    assert any(op.startswith("R.call_tir(conv2d") for op in legal.op_counts())


def test_symbolic_batch_dimension():
    batch = torch.export.Dim("batch", min=1, max=64)
    trace = explorer.explore(
        LinearReLU().eval(),
        (torch.randn(2, 4),),
        compiler="tvm",
        pipeline=[relax.transform.LegalizeOps()],
        dynamic_shapes={"x": {0: batch}},
    )
    g = trace.imported.graph
    x = g.nodes["main/x"]
    assert isinstance(x.shape[0], str) and x.shape[1] == 4
    assert x.type == f"f32[{x.shape[0]}, 4]" and x.nbytes == 0
    relu = next(n for n in g.nodes.values() if n.op == "R.nn.relu")
    assert relu.shape == (x.shape[0], 3)
    assert trace.imported.graph.signatures["main"].attrs["tir_var_upper_bound"]
    assert g.param_bytes == 60


def test_broadcast_weight_is_found_by_the_parameter_analysis():
    w = np.arange(12, dtype="float32").reshape(3, 4)

    def module_with(weight):
        bb = relax.BlockBuilder()
        x = relax.Var("x", relax.TensorType((3, 4), "float32"))
        with bb.function("main", [x]):
            with bb.dataflow():
                y = bb.emit(relax.op.add(x, relax.const(weight)))
                if weight.ndim == 3:
                    y = bb.emit(relax.op.mean(y, axis=[0]))
                out = bb.emit_output(y)
            bb.emit_func_output(out)
        return bb.get()

    @tvm.transform.module_pass(opt_level=0, name="Bloat")
    def bloat(mod, ctx):
        return module_with(np.broadcast_to(w, (8, 3, 4)).copy())

    trace = explorer.explore(
        module_with(w), compiler="tvm", pipeline=[relax.transform.CanonicalizeBindings(), bloat]
    )
    d = trace["Bloat"].diff()
    assert d.params.bytes_delta == 8 * 48 - 48
    assert [(c.name, c.source, c.copies) for c in d.params.broadcast] == [("const1", "const0", 8)]
    assert [(g.name, g.delta) for g in d.params.growth] == [("const1", 8 * 48 - 48)]


def test_onnx_source_names_its_initializers(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"], name="/fc/MatMul"),
            helper.make_node("Relu", ["h"], ["y"], name="/relu/Relu"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "W")],
    )
    path = tmp_path / "m.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    trace = explorer.explore(str(path), compiler="tvm", pipeline=[relax.transform.LegalizeOps()])
    assert trace.frontend == "onnx" and trace[0].kind == "source"
    g = trace.imported.graph
    assert g.params["W"].nbytes == 48 and g.nodes["$W"].kind == "weight"
    assert {"R.matmul", "R.nn.relu"} <= set(g.op_counts())


# ----- summary, save and load ---------------------------------------------------------------------


def test_summary_text(zero):
    text = zero.summary_text()
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["#", "pass", "status"]
    row = next(line for line in lines if "FuseOps" in line)
    assert "changed" in row and "+1 @fused_matmul_add_relu" in row
    row = next(line for line in lines if "FuseTIR " in line)
    assert "+1 R.call_tir(fused_matmul_add_relu)" in row and "-1 @fused_matmul_add_relu" in row
    assert any("LegalizeOps" in line and "+1 R.call_tir(matmul)" in line for line in lines)
    rows = zero.summary()
    assert rows[1]["param_bytes"] == 60 and rows[1]["nodes"] == len(zero.imported.graph.nodes)


def test_save_load_round_trip(zero, tmp_path):
    path = zero.save(tmp_path / "zero.passlens")
    manifest = read_manifest(path)
    assert (manifest["version"], manifest["compiler"]) == (3, "tvm")
    loaded = explorer.load(path)
    assert loaded.compiler == "tvm" and len(loaded) == len(zero)
    assert loaded.summary_text() == zero.summary_text()
    for a, b in zip(zero.steps, loaded.steps, strict=True):
        assert (a.name, a.depth, a.parent, a.status) == (b.name, b.depth, b.parent, b.status)
        ga, gb = a.graph, b.graph
        assert list(ga.nodes) == list(gb.nodes)
        assert [(n.op, n.type, n.provenance) for n in ga.nodes.values()] == [
            (n.op, n.type, n.provenance) for n in gb.nodes.values()
        ]
        assert {k: p.nbytes for k, p in ga.params.items()} == {
            k: p.nbytes for k, p in gb.params.items()
        }
        assert a.text == b.text and a.texts == b.texts
    # identity survives: the unchanged bindings still match as the same object
    assert str(loaded["FoldConstant"].diff()) == str(zero["FoldConstant"].diff())
    assert str(loaded["FuseOps"].diff()) == str(zero["FuseOps"].diff())
    assert loaded.final.index == zero.final.index


def test_a_saved_tvm_trace_loads_without_tvm(zero, tmp_path):
    path = zero.save(tmp_path / "zero.passlens")
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["tvm"] = None  # import tvm now fails
        import explorer
        trace = explorer.load({str(path)!r})
        print(next(t for t in trace.summary_text().splitlines() if "LegalizeOps" in t))
        print(trace["FoldConstant"].diff().params.permuted[0].message)
        print(trace.final.texts["loop IR"].count("def fused_matmul_add_relu"))
        assert sys.modules["tvm"] is None
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "+1 R.call_tir(matmul)" in lines[0] and "fc.weight" in lines[1] and lines[2] == "1"


def test_explorer_does_not_import_tvm():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, explorer, explorer.tvm; print('tvm' in sys.modules)"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_bad_pipelines_and_compilers_are_clear_errors(imported_module):
    with pytest.raises(ValueError, match="no Relax pipeline named 'nope'"):
        explorer.explore(imported_module, compiler="tvm", pipeline="nope")
    with pytest.raises(TypeError, match="tvm.transform.Pass"):
        explorer.explore(imported_module, compiler="tvm", pipeline=["LegalizeOps"])
    with pytest.raises(ValueError, match="'passlens' or 'tvm'"):
        explorer.explore(imported_module, compiler="xla")


# ----- comparison and views --------------------------------------------------------------------


def test_compare_puts_tvm_next_to_passlens(zero):
    ours = explorer.explore(zero.source["model"], zero.example_inputs)
    c = explorer.compare(zero, ours)
    text = str(c)
    assert "A: tvm zero" in text and "B: passlens default" in text
    assert "final ops: R.call_tir(fused_matmul_add_relu)" in text
    assert "tirx." not in text  # FoldConstant's kernel builds are not states of the model
    assert c.first_divergence is not None


def test_report_and_viewer_export_work_on_a_tvm_trace(zero, tmp_path):
    size = zero.to_html(tmp_path / "report.html").stat().st_size
    html = (tmp_path / "report.html").read_text()
    assert size > 0 and "FuseTIR" in html and "fused_matmul_add_relu" in html
    assert "fused_matmul_add_relu" in zero.final._repr_html_()
    paths = zero.export(zero.final, tmp_path / "final", format="model-explorer")
    assert all(p.exists() for p in paths)
    assert "fused_matmul_add_relu" in paths[0].read_text()
    from explorer.interop import ExportError

    with pytest.raises(ExportError, match="holds a tvm module"):
        zero.export(zero.final, tmp_path / "final.onnx", format="onnx")
    layers = zero.param_map()
    assert layers.layers == ["fc"] and layers.first_step is None


def test_a_tvmscript_module_has_its_spans_as_provenance():
    code = textwrap.dedent(
        """
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((2, 4), dtype="float32")) -> R.Tensor((2, 4), dtype="float32"):
                with R.dataflow():
                    y = R.nn.relu(x)
                    z = R.add(y, y)
                    R.output(z)
                return z
        """
    )
    trace = explorer.explore(tvm.script.from_source(code), compiler="tvm", pipeline=[])
    assert trace.frontend == "relax" and [s.kind for s in trace.steps] == ["import"]
    g = trace.imported.graph
    relu = g.nodes["main/y"]
    assert relu.provenance["file"].endswith(":7") and relu.op == "R.nn.relu"
    assert [e.src for e in g.edges if e.dst == "main/z"] == ["main/y", "main/y"]


def test_a_damaged_tvm_trace_file_is_a_clear_error(zero, tmp_path):
    import json
    import zipfile

    path = zero.save(tmp_path / "zero.passlens")
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    ir = json.loads(members["ir.json"])
    ir["foreign_modules"][0]["graph"]["nodes"][0]["ref"] = 10**6
    members["ir.json"] = json.dumps(ir).encode()
    bad = tmp_path / "bad.passlens"
    with zipfile.ZipFile(bad, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(explorer.TraceFileError, match="graph object reference"):
        explorer.load(bad)


def test_lift_transform_params_changes_mains_signature_and_keeps_the_weight_bytes():
    model = LinearReLU().eval()
    trace = explorer.explore(
        model,
        (torch.randn(2, 4),),
        compiler="tvm",
        keep_params_as_input=True,
        pipeline=[relax.transform.LiftTransformParams()],
    )
    imported, lifted = trace.imported, trace["LiftTransformParams"]
    params = imported.graph.params
    assert {k: p.nbytes for k, p in params.items()} == {
        "@main/p_fc_weight": 48,
        "@main/p_fc_bias": 12,
    }
    np.testing.assert_array_equal(params["@main/p_fc_weight"].obj.data, model.fc.weight.detach())
    # main's weights are now computed by main_transform_params: only its inputs are stored
    assert lifted.param_bytes == 60
    assert list(lifted.graph.params) == ["@main_transform_params/model_params"]
    d = lifted.diff()
    assert [c.name for c in d.signature_changes] == ["main"]
    assert [s.name for s in d.functions_added] == ["main_transform_params"]


def test_an_exported_program_with_a_progress_callback():
    model, x = LinearReLU().eval(), torch.randn(2, 4)
    ep = torch.export.export(model, (x,))
    calls = []
    trace = explorer.explore(
        ep,
        (x,),
        compiler="tvm",
        pipeline=[relax.transform.LegalizeOps(), relax.transform.FoldConstant()],
        progress=lambda done, total, name: calls.append((done, total, name)),
    )
    assert trace.source["exported"] is ep and trace.frontend == "torch"
    names = [s.name for s in trace.steps if s.kind == "pass"]
    assert [c[2] for c in calls] == names
    assert [c[0] for c in calls] == list(range(1, len(names) + 1))
    assert all(c[1] is None for c in calls)  # TVM's nested passes cannot be counted ahead


def test_strict_is_accepted_and_has_no_effect():
    """``strict`` refuses opaque ops at passlens's import; TVM's frontends handle operators
    themselves, so ``explore(..., compiler="tvm", strict=...)`` ignores it (issue 39: the
    adapter handed it to the frontend, a TypeError)."""
    x = torch.randn(2, 4)
    model = LinearReLU().eval()
    plain = explorer.explore(model, (x,), compiler="tvm", pipeline=[])
    for strict in (True, False):
        trace = explorer.explore(model, (x,), compiler="tvm", pipeline=[], strict=strict)
        assert [s.name for s in trace.steps] == [s.name for s in plain.steps]
        assert trace.imported.module.text() == plain.imported.module.text()


def test_every_explore_and_check_option_takes_effect(check_options_reach):
    """Every option ``explore(..., compiler="tvm")`` documents reaches TVM (the pipeline, the
    progress callback, the PassContext's ``opt_level`` and ``instruments``, a frontend keyword;
    ``strict`` is accepted and has no effect: test_strict_is_accepted_and_has_no_effect), and
    every check option reaches the check of its steps (issue 40: an adapter that drops one)."""
    seen = []

    @tvm.instrument.pass_instrument
    class Spy:
        def run_before_pass(self, mod, info):
            seen.append((info.name, tvm.transform.PassContext.current().opt_level))

    calls = []
    x = torch.randn(2, 4)
    trace = explorer.explore(
        LinearReLU().eval(),
        (x,),
        compiler="tvm",
        pipeline=[relax.transform.LiftTransformParams()],
        progress=lambda *a: calls.append(a),
        opt_level=2,
        instruments=[Spy()],
        keep_params_as_input=True,
        strict=True,
    )
    assert trace.steps[2].name == "LiftTransformParams"  # then the passes it runs
    assert [c[2] for c in calls] == [s.name for s in trace.steps[2:]]
    assert ("LiftTransformParams", 2) in seen
    assert len(trace.imported.module.ir["main"].params) == 3  # x, then the weights as inputs
    check_options_reach(trace, (torch.randn(2, 4).numpy(),))
