"""Save / load of traces: structure, shared nodes and weights, failures, damaged files."""

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import explorer
from compiler import models
from compiler.ir import Call, Constant, Expr, FuncCall, If, assert_structural_equal, parse
from compiler.ir.nodes import Block, Tuple, TupleGetItem
from compiler.passes import Pass, PassError, register_pass
from explorer.store import FORMAT, VERSION, RecordedError, TraceFileError, load, save
from tests.compiler.ir.ir_strategies import modules
from tests.compiler.passes.test_lazy_params import NESTED
from tests.compiler.passes.test_lift_transform_params import SEEDS_BEFORE


@register_pass
@dataclass(frozen=True)
class _Refuse(Pass):
    """Fails with a PassError (not a builtin exception) naming the first add."""

    name: ClassVar[str] = "test-store-refuse"

    def transform(self, module, ctx):
        node = next(n for n in module.main.iter_nodes() if isinstance(n, Call) and n.op == "add")
        raise PassError("cannot handle this add", node)


@pytest.fixture(scope="module")
def mlp_trace():
    return explorer.explore(models.mlp((32, 64, 16), batch=4, seed=1, activation="gelu"))


@pytest.fixture(scope="module")
def convnext_trace():
    return explorer.explore(models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10))


def round_trip(trace, tmp_path, name="t.passlens", **kw):
    path = tmp_path / name
    save(trace, path, **kw)
    return load(path), path


def nodes_of(module) -> list[Expr]:
    """Every IR object reachable in a module (params, bindings, branches, outputs, operands)."""
    out, seen = [], set()
    stack = []
    for fn in module.functions.values():
        stack += [*fn.params, *fn.bindings, fn.output]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, If):
            stack += [obj.cond, *obj.then_branch.bindings, obj.then_branch.result]
            stack += [*obj.else_branch.bindings, obj.else_branch.result]
        elif isinstance(obj, (Call, FuncCall)):
            stack += obj.args
        elif isinstance(obj, Tuple):
            stack += obj.fields
        elif isinstance(obj, TupleGetItem):
            stack.append(obj.tuple_value)
    return out


def all_objects(trace) -> dict[int, Expr]:
    objs = {}
    for s in trace:
        for m in (s.module, s.before):
            if m is not None:
                objs.update((id(n), n) for n in nodes_of(m))
    return objs


def npy_members(path) -> list[zipfile.ZipInfo]:
    with zipfile.ZipFile(path) as zf:
        return [i for i in zf.infolist() if i.filename.endswith(".npy")]


# ----- round trips ------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["mlp_trace", "convnext_trace"])
def test_every_step_round_trips(which, request, tmp_path):
    trace = request.getfixturevalue(which)
    loaded, _ = round_trip(trace, tmp_path)
    assert len(loaded) == len(trace)
    assert (loaded.pipeline, loaded.frontend) == (trace.pipeline, trace.frontend)
    for a, b in zip(trace, loaded, strict=True):
        assert (a.index, a.kind, a.name, a.spec, a.depth, a.parent, a.children) == (
            b.index,
            b.kind,
            b.name,
            b.spec,
            b.depth,
            b.parent,
            b.children,
        )
        assert (a.status, a.seconds) == (b.status, b.seconds)
        for ma, mb in ((a.module, b.module), (a.before, b.before)):
            assert (ma is None) == (mb is None)
            if ma is not None:
                assert_structural_equal(mb, ma, provenance=True)
        assert b.text == a.text
    assert loaded.summary() == trace.summary()


@pytest.mark.parametrize("which", ["mlp_trace", "convnext_trace"])
def test_sharing_between_steps_survives(which, request, tmp_path):
    trace = request.getfixturevalue(which)
    loaded, _ = round_trip(trace, tmp_path)
    before, after = all_objects(trace), all_objects(loaded)
    assert len(after) == len(before)

    def constants(objs):
        return sum(isinstance(o, Constant) for o in objs.values())

    def kept(step):
        return len({id(n) for n in nodes_of(step.module)} & {id(n) for n in nodes_of(step.before)})

    assert constants(after) == constants(before) > 0
    for a, b in zip(trace, loaded, strict=True):
        # an unchanged pass hands back the very same module, a changed one shares the nodes
        # it kept: the same number of shared objects after loading
        assert (a.module is a.before) == (b.module is b.before)
        if a.module is not None and a.before is not None:
            assert kept(b) == kept(a)
    fold = loaded["fold-constant"]
    if fold.previous is not None:  # a diff by identity still finds the untouched nodes
        matches = fold.diff().matches
        assert any(how == "identity" for _, how in matches.values())


def test_each_weight_is_stored_once(mlp_trace, tmp_path):
    _, path = round_trip(mlp_trace, tmp_path)
    weights = mlp_trace.imported.module.constants()
    members = npy_members(path)
    # fold-constant's transposed weights are stored as a recipe (a permutation of a weight)
    assert len(members) == len(weights)
    stored = sum(m.file_size for m in members)
    weight_bytes = sum(c.nbytes for c in weights.values())
    assert weight_bytes <= stored <= weight_bytes + 256 * len(members)  # + .npy headers
    loaded = load(path)
    for name, c in loaded.final.module.constants().items():
        want = mlp_trace.final.module.constants()[name].data
        assert c.data.dtype == want.dtype and np.array_equal(c.data, want)
        assert not c.data.flags.writeable


def test_equal_arrays_in_distinct_constants_are_stored_once(tmp_path):
    text = """
    weights {
      $a: f32[100]
      $b: f32[100]
      $c: f32[100]
    }
    def @main(%x: f32[100]) -> f32[100] {
      %y: f32[100] = add(%x, $a)
      %z: f32[100] = multiply(%y, $b)
      %w: f32[100] = subtract(%z, $c)
      return %w
    }
    """
    values = np.linspace(-1, 1, 100, dtype=np.float32)
    params = {"a": values.copy(), "b": values.copy(), "c": -values}
    trace = explorer.trace_from_module(parse(text, params=params), "")
    loaded, path = round_trip(trace, tmp_path)
    assert len(npy_members(path)) == 2
    consts = loaded.imported.module.constants()
    assert np.array_equal(consts["b"].data, values) and np.array_equal(consts["c"].data, -values)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cast_weights_round_trip(dtype, tmp_path):
    trace = explorer.explore(
        models.mlp((32, 64, 16), batch=2), pipeline=f"convert-dtype{{dtype={dtype}}}"
    )
    loaded, path = round_trip(trace, tmp_path)
    assert len(npy_members(path)) == len(trace.imported.module.constants())  # casts: recipes
    for name, c in trace.final.module.constants().items():
        got = loaded.final.module.constants()[name].data
        assert got.dtype == c.data.dtype and got.tobytes() == c.data.tobytes()
    assert_structural_equal(loaded.final.module, trace.final.module)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=modules())
def test_random_modules_round_trip(gen, tmp_path_factory):
    """If with branch blocks, tuples, private functions, symbolic dims, provenance."""
    trace = explorer.trace_from_module(gen.module, "")
    path = tmp_path_factory.mktemp("random") / "r.passlens"
    save(trace, path)
    loaded = load(path)
    assert_structural_equal(loaded.imported.module, gen.module, provenance=True)
    assert len(all_objects(loaded)) == len(all_objects(trace))


def test_if_branch_blocks_keep_their_identity(tmp_path):
    text = """
    def @main(%c: bool[], %x: f32[3]) -> f32[3] {
      %r: f32[3] = if %c {
        %a: f32[3] = exp(%x)
        yield %a
      } else {
        yield %x
      }
      return %r
    }
    """
    module = parse(text)
    loaded, _ = round_trip(explorer.trace_from_module(module, ""), tmp_path)
    node = loaded.imported.module.main.output
    assert isinstance(node, If) and isinstance(node.then_branch, Block)
    assert node.else_branch.result is loaded.imported.module.main.params[1]
    assert_structural_equal(loaded.imported.module, module)


# ----- failures ---------------------------------------------------------------------------


def test_failed_pass_keeps_error_traceback_and_failed_node(tmp_path):
    trace = explorer.explore(NESTED, pipeline="lift-transform-params,replica-lazy-transform-params")
    fail = trace.failure
    assert fail is not None and type(fail.error) is AssertionError
    loaded, _ = round_trip(trace, tmp_path)
    got = loaded.failure
    assert (got.index, got.name, got.status) == (fail.index, fail.name, "failed")
    assert type(got.error) is AssertionError and str(got.error) == str(fail.error)
    assert got.traceback == fail.traceback and "AssertionError" in got.traceback
    assert got.module is None and got.failed_function == "main_transform_params"
    assert isinstance(got.failed_node, FuncCall) and got.failed_node.func == "transform"
    # the failed node is the node of the module the pass was given, not a copy
    assert got.failed_node is got.before["main_transform_params"].output
    assert got.failed_line == fail.failed_line and got.failed_line is not None
    assert loaded.final.index == trace.final.index


def test_non_builtin_errors_keep_their_type_name_and_message(tmp_path):
    trace = explorer.explore(
        "def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = add(%x, %x)\n  return %y\n}\n",
        pipeline="test-store-refuse",
    )
    loaded, _ = round_trip(trace, tmp_path)
    err = loaded.failure.error
    assert isinstance(err, RecordedError) and type(err).__name__ == "PassError"
    assert err.type_module == "compiler.passes.infra.manager"
    assert str(err) == "cannot handle this add"
    assert loaded.failure.failed_node.op == "add"
    # saving a loaded trace again keeps the original type
    again, _ = round_trip(loaded, tmp_path, "again.passlens")
    assert type(again.failure.error).__name__ == "PassError"


# ----- other contents ---------------------------------------------------------------------


def test_example_inputs_and_ir_source_are_kept(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    text = "def @main(%x: f32[2, 3]) -> f32[2, 3] {\n  %y: f32[2, 3] = exp(%x)\n  return %y\n}\n"
    trace = explorer.explore(text, (x, 3, None))
    loaded, _ = round_trip(trace, tmp_path)
    got, n, none = loaded.example_inputs
    assert np.array_equal(got, x) and got.dtype == x.dtype and (n, none) == (3, None)
    assert loaded.source == text and loaded.frontend == "text"


def test_torch_example_inputs_come_back_as_tensors(tmp_path):
    torch = pytest.importorskip("torch")
    trace = explorer.trace_from_module(models.mlp((4, 3), batch=2), "")
    trace.example_inputs = (torch.arange(8, dtype=torch.float32).reshape(2, 4),)
    loaded, _ = round_trip(trace, tmp_path)
    (t,) = loaded.example_inputs
    assert isinstance(t, torch.Tensor) and torch.equal(t, trace.example_inputs[0])


def tiny_onnx():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), "W")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"),
            helper.make_node("Relu", ["y"], ["z"], name="relu"),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
        [w],
    )
    return onnx, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_source_step_graph_round_trips(tmp_path):
    pytest.importorskip("compiler.frontend.onnx_frontend")
    onnx, proto = tiny_onnx()
    trace = explorer.explore(proto)
    loaded, path = round_trip(trace, tmp_path)
    a, b = trace[0].source_graph, loaded[0].source_graph
    assert loaded[0].kind == "source" and b is not None
    assert [vars(n) for n in b.nodes.values()] == [vars(n) for n in a.nodes.values()]
    assert b.edges == a.edges and b.params == a.params
    assert loaded.source is None  # the ONNX model is not stored unless asked
    with_source, _ = round_trip(trace, tmp_path, "src.passlens", include_source=True)
    assert with_source.source["model"].SerializeToString() == proto.SerializeToString()


def test_trace_save_and_explorer_load(mlp_trace, tmp_path):
    path = tmp_path / "run.passlens"
    mlp_trace.save(path)
    loaded = explorer.load(path)
    assert len(loaded) == len(mlp_trace) and loaded["fold-constant"].status == "changed"


# ----- damaged and foreign files ----------------------------------------------------------


@pytest.fixture
def small_file(tmp_path):
    trace = explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant")
    return save(trace, tmp_path / "small.passlens")


def rewrite_member(path, name, data: bytes, drop: bool = False):
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    if drop:
        members.pop(name)
    else:
        members[name] = data
    with zipfile.ZipFile(path, "w") as zf:
        for k, v in members.items():
            zf.writestr(k, v)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such trace file"):
        load(tmp_path / "nope.passlens")


def test_not_a_zip_file(tmp_path):
    path = tmp_path / "junk.passlens"
    path.write_bytes(b"this is not a trace")
    with pytest.raises(TraceFileError, match="not a passlens trace file"):
        load(path)


def test_truncated_file(small_file):
    data = small_file.read_bytes()
    small_file.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFileError, match="small.passlens"):
        load(small_file)


def test_a_zip_without_a_manifest(tmp_path):
    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("hello.txt", "hi")
    with pytest.raises(TraceFileError, match="no manifest.json"):
        load(path)


def test_newer_and_unknown_versions(small_file):
    with zipfile.ZipFile(small_file) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert (manifest["format"], manifest["version"]) == (FORMAT, VERSION)
    rewrite_member(small_file, "manifest.json", json.dumps({**manifest, "version": 99}).encode())
    with pytest.raises(TraceFileError, match="newer passlens .*version 99"):
        load(small_file)
    rewrite_member(small_file, "manifest.json", json.dumps({**manifest, "version": "x"}).encode())
    with pytest.raises(TraceFileError, match="unknown passlens trace format version 'x'"):
        load(small_file)
    rewrite_member(small_file, "manifest.json", json.dumps({**manifest, "format": "zz"}).encode())
    with pytest.raises(TraceFileError, match="not a passlens trace file"):
        load(small_file)


@pytest.mark.parametrize(
    "damage",
    [
        "drop ir",
        "ir not json",
        "forward reference",
        "negative reference",
        "unknown op",
        "bad type text",
        "bad array shape",
        "steps missing",
    ],
)
def test_damaged_contents_give_a_clear_error(small_file, damage):
    with zipfile.ZipFile(small_file) as zf:
        ir = json.loads(zf.read("ir.json"))
        manifest = json.loads(zf.read("manifest.json"))
    call = next(n for n in ir["nodes"] if n["kind"] == "call")
    if damage == "drop ir":
        rewrite_member(small_file, "ir.json", b"", drop=True)
    elif damage == "ir not json":
        rewrite_member(small_file, "ir.json", b"{not json")
    else:
        if damage == "forward reference":
            call["args"][0] = len(ir["nodes"]) + 5
        elif damage == "negative reference":
            call["args"][0] = -1
        elif damage == "unknown op":
            call["op"] = "no_such_op"
        elif damage == "bad type text":
            ir["types"][0] = "f32[[["
        elif damage == "bad array shape":
            ir["arrays"][0]["shape"] = [999]
        elif damage == "steps missing":
            del manifest["steps"]
            rewrite_member(small_file, "manifest.json", json.dumps(manifest).encode())
        rewrite_member(small_file, "ir.json", json.dumps(ir).encode())
    with pytest.raises(TraceFileError, match="small.passlens: damaged passlens trace file"):
        load(small_file)


def test_a_pickled_array_is_refused_not_run(small_file):
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with zipfile.ZipFile(small_file) as zf:
        first = next(i.filename for i in zf.infolist() if i.filename.endswith(".npy"))
    rewrite_member(small_file, first, buf.getvalue())
    with pytest.raises(TraceFileError, match="damaged"):
        load(small_file)


def test_save_replaces_atomically_and_leaves_no_temp_files(mlp_trace, tmp_path):
    path = tmp_path / "x.passlens"
    path.write_text("old")
    save(mlp_trace, path)
    assert load(path) is not None
    assert [p.name for p in tmp_path.iterdir()] == ["x.passlens"]


# ----- the check report -------------------------------------------------------------------

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def checked():
    """A wrong pass (every add made a subtract) and the check report naming it: a divergence
    with per-node errors, layer errors for the error map, results reused between steps."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    spec = "decompose-ops{ops=[linear]},test-check-flip-add,fold-constant,dead-code-elimination"
    trace = explorer.explore(models.mlp((32, 64, 16), batch=4, seed=2), pipeline=spec)
    x = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)
    report = trace.check((x,), progress=False)
    assert trace.report is report and not report.ok
    return trace, report


def test_check_keeps_its_report_on_the_trace(checked):
    trace, report = checked
    assert trace.report is report
    assert trace._report(None) is report and trace._report(False) is None
    assert report.inputs is not None and len(report.inputs) == 1  # the weights are its own


def test_a_check_report_round_trips(checked, tmp_path):
    from widgets.report import report_html
    from widgets.tables_html import numerics_table_html

    trace, report = checked
    loaded, _ = round_trip(trace, tmp_path)
    got = loaded.report
    assert got is not None and got.trace is loaded and got is not report
    assert str(got) == str(report) and got._repr_html_() == report._repr_html_()
    assert got.rows() == report.rows() and got.headline() == report.headline()
    assert (got.reference, got.rtol, got.atol, got.seconds) == (
        report.reference,
        report.rtol,
        report.atol,
        report.seconds,
    )
    assert (got.computed, got.cache_hits, got.memo_hits, got.notes) == (
        report.computed,
        report.cache_hits,
        report.memo_hits,
        report.notes,
    )
    assert got.inputs is None  # the inputs only when asked for
    for a, b in zip(report.findings, got.findings, strict=True):
        assert (a.kind, a.step.index, a.message) == (b.kind, b.step.index, b.message)
        assert b.step is loaded[a.step.index]
        assert [loaded[b.step.index].graph.node_of(n).id for n in b.nodes] == [
            a.step.graph.node_of(n).id for n in a.nodes
        ]
        assert set(a.details) == set(b.details)
        for k, v in a.details.items():
            if k == "node_errors":
                assert [(e.where, e.max_abs, e.max_rel, e.shape) for e in b.details[k]] == [
                    (e.where, e.max_abs, e.max_rel, e.shape) for e in v
                ]
                # the per-node errors name the very nodes of the loaded steps
                assert all(loaded[b.step.index].graph.node_of(e.node) for e in b.details[k])
            else:
                assert b.details[k] == v
    for a, b in zip(report.steps, got.steps, strict=True):
        assert b.step is loaded[a.step.index]
        assert (a.status, a.max_abs, a.max_rel, a.same_as, a.computed, a.reused, a.seconds) == (
            b.status,
            b.max_abs,
            b.max_rel,
            b.same_as,
            b.computed,
            b.reused,
            b.seconds,
        )
        assert {k: (e.max_rel, e.tolerance) for k, e in a.layers.items()} == {
            k: (e.max_rel, e.tolerance) for k, e in b.layers.items()
        }
    ma, mb = report.error_map(), got.error_map()
    assert np.array_equal(ma.errors, mb.errors, equal_nan=True) and ma.nodes == mb.nodes
    assert (ma.first_step, ma.first_layer) == (mb.first_step, mb.first_layer) != (None, None)
    # rendered the same: the HTML report, each step's numerics
    assert report_html(loaded, got) == report_html(trace, report)
    for a, b in zip(trace, loaded, strict=True):
        assert numerics_table_html(b, got) == numerics_table_html(a, report)


def test_a_loaded_report_is_what_the_views_show_by_default(checked, tmp_path):
    from widgets.report import report_html

    trace, report = checked
    loaded, _ = round_trip(trace, tmp_path)
    loaded.to_html(tmp_path / "default.html")
    loaded.to_html(tmp_path / "none.html", report=False)
    assert (tmp_path / "default.html").read_text() == report_html(loaded, loaded.report)
    assert (tmp_path / "none.html").read_text() == report_html(loaded)
    assert loaded.stepper().report is loaded.report


def test_the_inputs_of_the_check_are_kept_when_asked(checked, tmp_path):
    trace, report = checked
    loaded, path = round_trip(trace, tmp_path, inputs=True)
    (x,) = loaded.report.inputs
    assert np.array_equal(x, report.inputs[0]) and x.dtype == np.float32
    again = loaded.check(loaded.report.inputs, progress=False)
    # the same verdicts and errors, up to float32's rounding: the interpreter's float32 matmul
    # accumulates as BLAS does, in an order that depends on the weight's layout, and the store
    # writes a weight fold-constant left as a transposed view in row-major order
    assert [r["status"] for r in again.rows()] == [r["status"] for r in report.rows()]
    for a, b in zip(again.rows(), report.rows(), strict=True):
        for key in ("max_abs", "max_rel"):
            assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), (a["step"], key)
    assert loaded.report is again  # the new check is the trace's report now
    # an input equal to one already stored (an example input, a weight) is stored once
    trace2 = explorer.explore(models.mlp((4, 3), batch=2), (np.ones((2, 4), np.float32),))
    trace2.check(trace2.example_inputs, progress=False)
    _, p1 = round_trip(trace2, tmp_path, "a.passlens")
    _, p2 = round_trip(trace2, tmp_path, "b.passlens", inputs=True)
    assert len(npy_members(p1)) == len(npy_members(p2))


def test_inputs_over_the_limit_are_left_out_with_a_warning(checked, tmp_path, monkeypatch):
    from explorer.store import checks

    trace, _ = checked
    monkeypatch.setattr(checks, "MAX_REPORT_INPUT_BYTES", 100)
    with pytest.warns(UserWarning, match="inputs are not saved with its report: .* over the"):
        loaded, _ = round_trip(trace, tmp_path, inputs=True)
    assert loaded.report is not None and loaded.report.inputs is None


def test_findings_of_every_built_in_kind_round_trip(tmp_path):
    """pass-failed (an error of a non-builtin type), param-bloat (growth tuples, the step
    before), signature-changed, shape-mismatch (an annotated type), diverged and run-failed:
    every detail comes back equal."""
    from tests.explorer.check.test_check_thresholds import CALLS_F, RUN_FAILS
    from tests.explorer.test_diff import LINEAR_4D, linear_module

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    cases = [
        (explorer.explore(NESTED, pipeline="fold-constant,replica-lazy-transform-params"), None),
        (
            explorer.explore(
                linear_module(LINEAR_4D), pipeline="replica-linear-broadcast,fold-constant"
            ),
            None,
        ),
        (explorer.explore(SEEDS_BEFORE, (a, b), pipeline="lift-transform-params"), None),
        (explorer.explore(CALLS_F, pipeline="test-check-mislabel,test-check-flip-add"), None),
        (explorer.explore(RUN_FAILS, pipeline="test-check-flip-add"), (np.ones(2, np.float32),)),
    ]
    kinds = set()
    for k, (trace, inputs) in enumerate(cases):
        report = trace.check(inputs, progress=False)
        loaded, _ = round_trip(trace, tmp_path, f"{k}.passlens")
        got = loaded.report
        assert str(got) == str(report)
        for f, g in zip(report.findings, got.findings, strict=True):
            kinds.add(f.kind)
            assert set(g.details) == set(f.details)
            for key, v in f.details.items():
                w = g.details[key]
                if isinstance(v, BaseException):
                    assert (type(w).__name__, str(w)) == (type(v).__name__, str(v))
                elif key == "previous":
                    assert w is loaded[v.index]
                elif key == "node_errors":
                    assert [(e.where, e.max_abs, e.shape) for e in w] == [
                        (e.where, e.max_abs, e.shape) for e in v
                    ]
                else:
                    assert w == v and type(w) is type(v), key
    assert kinds == {
        "pass-failed",
        "param-bloat",
        "signature-changed",
        "shape-mismatch",
        "diverged",
        "run-failed",
    }


def test_a_version_1_file_loads_without_a_report():
    """A file written by passlens before the report was kept (format version 1)."""
    path = DATA / "version1.passlens"
    with zipfile.ZipFile(path) as z:
        assert json.loads(z.read("manifest.json"))["version"] == 1
        assert "report.json" not in z.namelist()
    trace = load(path)
    assert trace.report is None and [s.name for s in trace] == ["module", "fold-constant"]
    assert trace.example_inputs[0].shape == (2, 4)
    report = trace.check(trace.example_inputs, progress=False)
    assert report.ok and trace.report is report


def test_the_cap_on_saved_check_inputs_is_on_their_total(tmp_path, monkeypatch):
    """Behaviour protected: the limit on a check's saved inputs holds for all of them together,
    on writing and on reading. Two inputs each under the cap but over it together are left
    out when saving (with a warning) and refused when loading; a per-input cap would let a
    file bring any number of inputs just under it."""
    from compiler.errors import LimitError
    from explorer.store import checks

    text = (
        "def @main(%x: f32[2, 4], %y: f32[2, 4]) -> f32[2, 4] {\n"
        "  %z: f32[2, 4] = add(%x, %y)\n  return %z\n}\n"
    )
    trace = explorer.explore(text, pipeline="fold-constant")
    x, y = (np.full((2, 4), v, np.float32) for v in (1.0, 2.0))  # 32 bytes each, 64 together
    trace.check((x, y), progress=False)
    monkeypatch.setattr(checks, "MAX_REPORT_INPUT_BYTES", 48)  # each under it, not the total
    with pytest.warns(UserWarning, match="inputs are not saved with its report: 0 MiB, over"):
        loaded, _ = round_trip(trace, tmp_path, "capped.passlens", inputs=True)
    assert loaded.report is not None and loaded.report.inputs is None
    monkeypatch.setattr(checks, "MAX_REPORT_INPUT_BYTES", 64)  # both fit: saved and read
    loaded, path = round_trip(trace, tmp_path, "kept.passlens", inputs=True)
    assert [a.tolist() for a in loaded.report.inputs] == [x.tolist(), y.tolist()]
    monkeypatch.setattr(checks, "MAX_REPORT_INPUT_BYTES", 48)  # a reader with a lower cap
    with pytest.raises(LimitError, match="the check report's inputs are over the 0 MiB limit"):
        load(path)


def test_a_loaded_torch_trace_is_checked_against_its_import_and_says_why(tmp_path):
    """A trace file keeps no torch model: checking a loaded trace uses the imported step as the
    reference and says so in plain words (it said "TypeError: 'NoneType' object is not
    subscriptable")."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
    x = torch.randn(2, 4)
    explorer.explore(model, (x,)).save(tmp_path / "run.passlens")
    report = explorer.load(tmp_path / "run.passlens").check((x,), progress=False)
    assert not report.findings
    assert "keeps no torch model" in report.reference
    (note,) = [n for n in report.notes if "keeps no torch model" in n]
    assert "Error" not in note and "explore the model again" in note


def test_arrays_are_written_as_numpy_writes_them(monkeypatch):
    # write_npy writes an array laid out whole from its memory, a slice at a time: the bytes
    # of np.lib.format.write_array, for every layout and dtype (others go through numpy)
    import io

    from explorer.store import write

    monkeypatch.setattr(write, "_NPY_CHUNK", 1000)  # several slices per array
    rng = np.random.default_rng(0)
    x = rng.standard_normal((37, 29)).astype(np.float32)
    cases = [
        x,
        np.asfortranarray(x),
        x.T,  # Fortran order
        x[:, ::2],  # not whole: numpy's own path
        x.astype(">f4"),  # not native
        rng.integers(-5, 5, (3, 4, 5)).astype(np.int8),
        np.arange(7, dtype=np.int64),
        np.array(True),
        np.float16(1.5) * np.ones((4, 3), np.float16),
        np.zeros((0, 3), np.float32),
        np.array(["a", "bc"]),
        (np.arange(6) + 1j).astype(np.complex64),
        np.array([1, 2], "datetime64[s]"),
    ]
    for arr in cases:
        want, got = io.BytesIO(), io.BytesIO()
        np.lib.format.write_array(want, arr, allow_pickle=False)
        write.write_npy(got, arr)
        assert got.getvalue() == want.getvalue(), (arr.dtype, arr.shape, arr.strides)
        back = np.lib.format.read_array(io.BytesIO(got.getvalue()))
        assert back.dtype == arr.dtype and np.array_equal(back, arr)
    # a whole array is handed over from its memory: no copy of it is made
    sent: list = []

    class Sink(io.BytesIO):
        def write(self, b):
            sent.append(b)
            return super().write(b)

    big = rng.standard_normal(3000).astype(np.float32)
    write.write_npy(Sink(), big)
    slices = [b for b in sent if isinstance(b, memoryview)]
    assert sum(len(b) for b in slices) == big.nbytes and len(slices) == 12
    assert all(np.shares_memory(np.frombuffer(b, np.uint8), big) for b in slices)
