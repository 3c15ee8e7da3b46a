"""Recording IREE's iree-compile (explorer.iree): a torch MLP exported with iree-turbine, its
weights in a parameter file, compiled pass by pass; steps nested under IREE's phases in order,
the const-eval JIT's dumps dropped, graphs parsed with iree.compiler.ir; untrusted MLIR refused
with one passlens error; save and load. Skipped when passlens[iree] is not installed."""

from __future__ import annotations

import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.turbine")
torch = pytest.importorskip("torch")

import explorer  # noqa: E402
from compiler import LimitError, PasslensError  # noqa: E402
from explorer.iree.convert import MAX_NESTING, IREEError, graph_of_mlir  # noqa: E402
from explorer.iree.record import PHASES, Dump, read_stream, split_phases  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


SMALL = """
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  %1 = arith.mulf %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""


def test_mlp_steps_are_the_import_then_every_phase_in_order_with_its_passes(mlp):
    steps = mlp.steps
    assert mlp.compiler == "iree"
    assert steps[0].kind == "import" and steps[0].name == "iree-turbine: MLP"
    phases = [s for s in steps if s.kind == "pass" and s.depth == 0]
    assert [s.name for s in phases] == list(PHASES)
    nxt = 1
    for ph in phases:  # each phase, then its passes, in the order they ran
        assert ph.index == nxt and ph.parent is None and ph.children
        assert ph.children == list(range(ph.index + 1, ph.index + 1 + len(ph.children)))
        for c in ph.children:
            assert steps[c].parent == ph.index and steps[c].depth == 1
        nxt = ph.children[-1] + 1
        assert ph.module is steps[ph.children[-1]].module  # a phase shows where it ended
    assert nxt == len(steps)
    assert "iree-util-dump-module" not in {s.name for s in steps}  # the phase markers
    first = steps[phases[0].children[0]]
    assert first.name == "torch-iree-bind-symbolic-shapes"
    assert first.status == "unchanged"  # the import as iree-compile prints it
    statuses = {s.status for s in steps[1:]}
    assert statuses == {"changed", "unchanged"}
    assert mlp.iree.returncode == 0 and mlp.iree.output[:4] != b""  # a .vmfb
    assert mlp.iree.irpa is not None and set(mlp.iree.params) >= {"fc1.weight", "fc2.bias"}


def test_weights_stay_out_of_the_dumps(mlp):
    text = mlp.steps[0].module.text()
    assert '#flow.parameter.named<"model"::"fc1.weight">' in text
    assert "dense_resource" not in text and "dense<" not in text.split("func.func")[0]
    biggest = max(len(s.module.text()) for s in mlp.steps if s.module is not None)
    assert biggest < 200_000


def test_import_graph_has_torch_ops_ssa_edges_with_types_and_provenance(mlp):
    g = mlp.steps[0].graph
    ops = [n for n in g.nodes.values() if n.kind == "op"]
    assert sum(n.op == "torch.aten.linear" for n in ops) == 2
    assert "main" in g.signatures
    relu = next(n for n in ops if n.op == "torch.aten.relu")
    linears = {n.id for n in ops if n.op == "torch.aten.linear"}
    into_relu = [e for e in g.edges if e.dst == relu.id]
    assert [e.src in linears for e in into_relu] == [True]
    assert into_relu[0].type == "!torch.vtensor<[2,16],f32>"
    assert relu.shape == (2, 16) and relu.dtype == "f32"
    assert relu.provenance.get("file", "").startswith("test_iree.py:")
    # the torch layer of each op (torch.export's nn_module_stack, in a named location)
    assert sorted(n.group for n in ops if n.op == "torch.aten.linear") == ["fc1", "fc2"]
    assert {n.provenance.get("module") for n in ops if n.op == "torch.aten.linear"} == {
        "fc1",
        "fc2",
    }
    inputs = [n for n in g.nodes.values() if n.kind == "input"]
    assert [n.type for n in inputs] == ["!torch.vtensor<[2,8],f32>"]
    # the weights: util.globals the parameter file holds, read by util.global.load
    assert sorted(g.params) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    w = g.params["fc1.weight"]
    assert (w.shape, w.dtype, w.nbytes) == ((16, 8), "f32", 16 * 8 * 4)
    assert g.param_bytes == (16 * 8 + 16 + 4 * 16 + 4) * 4
    loads = [e.dst for e in g.edges if e.src == w.node_id]
    assert [g.nodes[d].op for d in loads] == ["util.global.load"]


def test_each_weights_load_is_in_the_layer_that_owns_the_weight(mlp):
    # iree's importer places the parameters' loads at the function's location, its first
    # node's (fc1's): fc2's loads and their conversions belong to fc2 all the same
    g = mlp.steps[0].graph
    for key, param in g.params.items():
        layer = key.rsplit(".", 1)[0]
        (load,) = [g.nodes[e.dst] for e in g.edges if e.src == param.node_id]
        (convert,) = [g.nodes[e.dst] for e in g.edges if e.src == load.id]
        assert convert.op == "torch_c.from_builtin_tensor"
        for n in (load, convert):
            assert (n.group, n.provenance.get("module")) == (layer, layer), (key, n.op)
    relu = next(n for n in g.nodes.values() if n.op == "torch.aten.relu")
    assert relu.group == "main"  # an op of no layer stays out of them


def test_the_layers_are_carried_into_the_dispatches(mlp):
    step = next(s for s in mlp.steps if s.name == "flow" and s.kind == "pass")
    layers = {n.provenance.get("module") for n in step.graph.nodes.values()}
    assert {"fc1", "fc2"} <= layers


def test_dispatch_regions_group_their_ops(mlp):
    step = next(s for s in mlp.steps if s.name == "dispatch-creation" and s.kind == "pass")
    g = step.graph
    regions = [n for n in g.nodes.values() if n.op.startswith("flow.dispatch")]
    assert regions
    inner = [n for n in g.nodes.values() if n.group.startswith("main") and "." in n.group]
    assert inner and all(n.function for n in inner)
    assert any(n.op.startswith("linalg.") for n in inner)


def test_a_pass_that_changed_the_module_diffs_against_the_one_before(mlp):
    step = next(s for s in mlp.steps if s.name == "torch-decompose-complex-ops")
    assert step.status == "changed"
    d = step.diff()
    assert d.added or d.removed
    assert step.before is mlp.steps[step.index - 1].module


class ConstEval(torch.nn.Module):
    """A weight computed from a constant buffer: IREE's const-eval JIT compiles it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.register_buffer("k", torch.randn(16, 16), persistent=False)

    def forward(self, x):
        return torch.relu(self.fc(x)) @ torch.tanh(self.k.t() + 1.0)


def test_the_const_eval_jits_modules_are_dropped_and_progress_is_reported():
    torch.manual_seed(0)
    calls = []
    trace = explorer.explore(
        ConstEval().eval(),
        (torch.randn(2, 8),),
        compiler="iree",
        pipeline="global-optimization",
        progress=lambda *a: calls.append(a),
    )
    phases = [s for s in trace.steps if s.kind == "pass" and s.depth == 0]
    assert [s.name for s in phases] == list(PHASES[:4])
    assert trace.iree.dropped > 100  # the JIT compiles its module through to vm
    names = [s.name for s in trace.steps]
    assert "iree-consteval-jit-globals" in names
    assert "iree-vm-conversion" not in names  # the JIT's, not the program's
    assert not any("jit_eval" in s.module.text() for s in trace.steps if s.module is not None)
    # one progress call per dump the stream printed, the JIT's included, naming the pass
    assert len(calls) == len(trace.steps) - 1 - len(phases) + trace.iree.dropped + len(phases)
    assert calls[0] == (1, None, "torch-iree-bind-symbolic-shapes")


def test_const_eval_jit_dumps_are_dropped():
    def dump(name, scope="builtin.module @module"):
        return Dump(name, name, scope, [f"module {{ // {name}\n", "}\n"])

    stream = [
        dump("iree-util-hoist-into-globals"),
        dump("iree-auto-input-conversion", "builtin.module"),  # the JIT's own module ...
        dump("cse", "util.func @jit_eval"),
        dump("iree-vm-conversion", "builtin.module"),
        dump("iree-consteval-jit-globals"),  # ... then the JIT pass itself
        dump("iree-util-dump-module{path=p/module.4.global-optimization.mlir}"),
        dump("canonicalize"),
    ]
    phases, dropped = split_phases(stream)
    assert dropped == 3
    assert [(p, [d.name for d in ds]) for p, ds in phases] == [
        ("global-optimization", ["iree-util-hoist-into-globals", "iree-consteval-jit-globals"]),
        ("dispatch-creation", ["canonicalize"]),  # the phase after the last marker's
    ]


def test_the_stream_is_split_into_dumps_and_diagnostics():
    lines = [
        "x.mlir:1:1: warning: while creating CPU target\n",
        "// -----// IR Dump After CSEPass: cse ('util.func' operation: @main) //----- //\n",
        "#loc = loc(unknown)\n",
        "module {\n",
        "} loc(#loc)\n",
        '#loc1 = loc("a.py":3:0)\n',
        "\n",
        "x.mlir:2:2: error: something broke\n",
        "// -----// IR Dump After Boom Failed: boom ('builtin.module' operation: @m) //----- //\n",
        "module {\n",
        "}\n",
    ]
    dumps, other, total = read_stream(lines, None)
    assert [(d.name, d.scope, d.failed) for d in dumps] == [
        ("cse", "util.func @main", False),
        ("boom", "builtin.module @m", True),
    ]
    assert dumps[0].text == "".join(lines[2:7])
    assert other == [lines[0], lines[7]]
    assert total == sum(map(len, lines))


def test_mlir_text_records_and_a_saved_trace_loads(tmp_path):
    trace = explorer.explore(SMALL, compiler="iree", pipeline="input", progress=False)
    assert trace.steps[0].name == "mlir text: MLIR text"
    assert [s.name for s in trace.steps if s.depth == 0 and s.kind == "pass"] == ["input"]
    g = trace.steps[0].graph
    assert sorted(n.op for n in g.nodes.values() if n.kind == "op") == ["arith.addf", "arith.mulf"]
    assert len(g.edges) == 5  # a, b -> add; add, add -> mul; mul -> return
    path = tmp_path / "small.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    assert loaded.compiler == "iree"
    assert [(s.name, s.status, s.parent) for s in loaded.steps] == [
        (s.name, s.status, s.parent) for s in trace.steps
    ]
    for a, b in zip(trace.steps, loaded.steps, strict=True):
        if a.module is None:
            continue
        assert b.module.text() == a.module.text()
        assert sorted(b.graph.nodes) == sorted(a.graph.nodes)
        assert len(b.graph.edges) == len(a.graph.edges)
    import subprocess
    import sys

    code = (  # without iree: a saved trace keeps what its steps showed
        "import sys; sys.modules['iree'] = None; import explorer; "
        f"t = explorer.load({str(path)!r}); "
        "print(t.compiler, len(t.steps), sorted(n.op for n in t.steps[0].graph.nodes.values()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    ops = sorted(n.op for n in trace.steps[0].graph.nodes.values())
    assert out.stdout.strip() == f"iree {len(trace.steps)} {ops}"


@pytest.mark.parametrize(
    "text, error, match",
    [
        ("func.func @f( {", IREEError, "is not valid MLIR"),
        ("module { " + "(" * (MAX_NESTING + 5), LimitError, "nests brackets"),
        (b"module {\xff}", IREEError, "not UTF-8"),
        ("module {\x00}", IREEError, "NUL"),
        ('module { "x.y"() : () -> () }', IREEError, "is not valid MLIR"),
    ],
)
def test_crafted_mlir_is_refused_with_one_passlens_error(text, error, match, tmp_path):
    if isinstance(text, bytes):  # bytes in a file (bytes themselves are an ONNX model)
        (tmp_path / "crafted.mlir").write_bytes(text)
        text = str(tmp_path / "crafted.mlir")
    with pytest.raises(error, match=match) as info:
        explorer.explore(text, compiler="iree", pipeline="input", progress=False)
    assert isinstance(info.value, PasslensError)


def test_an_oversized_mlir_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import explorer.iree.convert as convert

    monkeypatch.setattr(convert, "MAX_TEXT_BYTES", 100)
    path = tmp_path / "big.mlir"
    path.write_text(SMALL * 3)
    with pytest.raises(LimitError, match="over the limit of 100"):
        explorer.explore(str(path), compiler="iree", progress=False)
    with pytest.raises(LimitError, match="more than"):
        monkeypatch.setattr(convert, "MAX_TEXT_BYTES", 10_000)
        monkeypatch.setattr(convert, "MAX_OPS", 2)
        graph_of_mlir(SMALL)


def test_bad_options_fail_before_anything_runs():
    with pytest.raises(ValueError, match="phase to compile to"):
        explorer.explore(SMALL, compiler="iree", pipeline="nope", progress=False)
    with pytest.raises(ValueError, match="--name=value"):
        explorer.explore(SMALL, compiler="iree", flags=["-o /etc/x"], progress=False)
    with pytest.raises(ValueError, match="llvm-cpu"):
        explorer.explore(SMALL, compiler="iree", target="cuda", progress=False)


FAILS = """
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = math.erf %a : tensor<4xf32>
  %1 = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf64>
  %2 = "tensor.bitcast"(%1) : (tensor<4xf64>) -> tensor<4xi64>
  return %0 : tensor<4xf32>
}
"""


def test_a_failing_pass_is_a_failed_step_in_its_phase_with_iree_compiles_error():
    trace = explorer.explore(FAILS, compiler="iree", progress=False)
    failed = [s for s in trace.steps if s.status == "failed"]
    assert [(s.name, s.depth) for s in failed] == [
        ("input", 0),
        ("iree-input-conversion-demote-f64-to-f32", 1),
    ]
    step = failed[1]
    assert isinstance(step.error, IREEError)
    assert "error" in step.traceback  # iree-compile's diagnostics
    assert step.module is None and step.before is trace.steps[step.index - 1].module
    assert trace.iree.returncode != 0 and trace.iree.output is None


def test_the_adapter_imports_no_iree():
    import subprocess
    import sys

    code = (
        "import sys, explorer; from explorer.adapters import get_adapter; get_adapter('iree'); "
        "print(sorted(m for m in sys.modules if m == 'iree' or m.startswith('iree.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
