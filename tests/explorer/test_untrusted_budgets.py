"""Untrusted inputs, round two (issue #31): budgets as well as caps. A small file or spec must
not cost gigabytes or minutes: each probe of the issue is built here small (the budgets are
lowered for the test) and must end in one clear LimitError naming what and how much, or in a
correct result."""

from __future__ import annotations

import io
import json
import tracemalloc
import zipfile

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.errors import LimitError
from explorer.store import fileformat, load, read_arrays, save, zipread
from tests.explorer.store.test_store import tiny_onnx


def _json(path, name):
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read(name))


@pytest.fixture
def small_file(tmp_path):
    trace = explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant")
    return save(trace, tmp_path / "small.passlens")


def _rewrite(path, members: dict[str, bytes]) -> None:
    """Replace or add ``members`` (zipped: zeros take almost no room)."""
    with zipfile.ZipFile(path) as zf:
        old = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in {**old, **members}.items():
            zf.writestr(k, v)


def _add_constants(path, specs: list[dict]) -> list[int]:
    """Append array entries ``specs`` to ir.json, each read by a new constant node."""
    ir = _json(path, "ir.json")
    first = len(ir["arrays"])
    ir["arrays"] += specs
    ir["nodes"] += [{"kind": "const", "array": first + k} for k in range(len(specs))]
    _rewrite(path, {"ir.json": json.dumps(ir).encode()})
    return list(range(first, first + len(specs)))


def _stored(path) -> dict:
    ir = _json(path, "ir.json")
    return next(s for s in ir["arrays"] if "member" in s)


# ----- load: one budget for everything it materialises -------------------------------------------


def test_entries_naming_one_member_read_it_once_and_share_it(small_file, monkeypatch):
    """Eight array entries naming one .npy member (the issue's 2.4 GB probe, small): the
    member is read once and the eight constants share it, within a budget one copy fits."""
    spec = _stored(small_file)
    nbytes = int(np.prod(spec["shape"])) * 4
    _add_constants(small_file, [dict(spec) for _ in range(8)])
    baseline = _json(small_file, "ir.json")["arrays"]
    total = sum(int(np.prod(s["shape"])) * 4 for s in baseline if "member" in s) - 8 * nbytes
    monkeypatch.setattr(read_arrays, "MAX_LOAD_BYTES", total + 2 * nbytes)  # not 8 more copies
    trace = load(small_file)
    assert trace is not None
    # the same entries with another shape for the member: refused, not re-read
    ir = _json(small_file, "ir.json")
    ir["arrays"][-1]["shape"] = [int(np.prod(spec["shape"]))]
    _rewrite(small_file, {"ir.json": json.dumps(ir).encode()})
    with pytest.raises(explorer.store.TraceFileError, match="holds float32"):
        load(small_file)


def test_distinct_arrays_past_the_budget_are_a_limit_error_naming_what_and_how_much(
    small_file, monkeypatch
):
    """Six distinct zero-filled members of 256 KiB (a few hundred bytes each, zipped): the
    budget refuses the first that does not fit, before reading it."""
    buf = io.BytesIO()
    np.save(buf, np.zeros((256, 256), np.float32))
    _rewrite(small_file, {f"arrays/big{k}.npy": buf.getvalue() for k in range(6)})
    specs = [
        {"dtype": "float32", "shape": [256, 256], "member": f"arrays/big{k}.npy"} for k in range(6)
    ]
    first = _add_constants(small_file, specs)[0]
    assert small_file.stat().st_size < 64 << 10
    monkeypatch.setattr(read_arrays, "MAX_LOAD_BYTES", 1 << 20)  # the small model and 3 of them fit
    with pytest.raises(LimitError) as info:
        load(small_file)
    message = str(info.value)
    assert f"array {first + 3} (arrays/big3.npy) (256.0 KiB) would bring" in message
    assert "over the 1.0 MiB budget for one trace; not read" in message


def test_derived_arrays_with_the_same_values_are_made_once_and_others_counted(
    small_file, monkeypatch
):
    """Arrays derived from one another amplify one stored member. A chain of 24 transposes
    holds only two distinct arrays (the member and its transpose): they are made once and
    shared. A chain of casts (float32 -> float64 -> float32 ...) makes a new array each
    time: each is counted when made, and the budget stops it."""
    buf = io.BytesIO()
    np.save(buf, np.zeros((256, 256), np.float32))  # 256 KiB, a few hundred bytes zipped
    _rewrite(small_file, {"arrays/big.npy": buf.getvalue()})
    root = len(_json(small_file, "ir.json")["arrays"])
    big = {"dtype": "float32", "shape": [256, 256], "member": "arrays/big.npy"}
    chain = [big] + [
        {"dtype": "float32", "shape": [256, 256], "derived": {"from": root + k, "axes": [1, 0]}}
        for k in range(24)
    ]
    _add_constants(small_file, chain)
    monkeypatch.setattr(read_arrays, "MAX_LOAD_BYTES", 1 << 20)  # the member and one transpose fit
    trace = load(small_file)
    assert trace is not None
    casts = tmp = small_file.with_name("casts.passlens")
    tmp.write_bytes(small_file.read_bytes())
    ir = _json(tmp, "ir.json")
    for k in range(24):
        rec = ir["arrays"][root + 1 + k]
        rec["dtype"] = "float64" if k % 2 == 0 else "float32"
        rec["derived"] = {"from": root + k, "cast": True}
    _rewrite(tmp, {"ir.json": json.dumps(ir).encode()})
    with pytest.raises(LimitError) as info:
        load(casts)
    assert "(derived from array" in str(info.value)
    assert "over the 1.0 MiB budget for one trace" in str(info.value)


def test_a_chain_of_5000_derived_arrays_loads_without_recursion(small_file):
    """Each array derived from the one before: the chain is made from its oldest link up in a
    loop (issue #39, item 4), not one Python frame per link."""
    buf = io.BytesIO()
    np.save(buf, np.arange(4, dtype=np.float32).reshape(2, 2))
    _rewrite(small_file, {"arrays/small.npy": buf.getvalue()})
    root = len(_json(small_file, "ir.json")["arrays"])
    base = {"dtype": "float32", "shape": [2, 2], "member": "arrays/small.npy"}
    ir = _json(small_file, "ir.json")
    ir["arrays"] += [base] + [
        {"dtype": "float32", "shape": [2, 2], "derived": {"from": root + k, "axes": [1, 0]}}
        for k in range(5000)
    ]
    ir["nodes"].append({"kind": "const", "array": root + 5000})  # only the last is named
    _rewrite(small_file, {"ir.json": json.dumps(ir).encode()})
    trace = load(small_file)
    assert trace is not None


@pytest.fixture
def onnx_file(tmp_path):
    pytest.importorskip("compiler.frontend.onnx_frontend")
    _, proto = tiny_onnx()
    return save(explorer.explore(proto), tmp_path / "onnx.passlens", include_source=True)


def test_the_onnx_source_member_is_capped_as_it_is_read(onnx_file, monkeypatch):
    """A zip-bombed source.onnx (64 MiB of zeros, 64 kB in the file) is refused before it is
    read (the size the zip declares is over the cap; a member is never read past that size,
    and is read in chunks up to the cap): the memory a load takes stays small."""
    assert load(onnx_file).source is not None
    _rewrite(onnx_file, {"source.onnx": b"\0" * (64 << 20)})
    assert onnx_file.stat().st_size < 1 << 20
    monkeypatch.setattr(zipread, "MAX_RATIO", 10_000)  # (the ratio refuses it first otherwise)
    monkeypatch.setattr(read_arrays, "MAX_SOURCE_BYTES", 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(LimitError, match="source model source.onnx is 64.0 MiB, over 1.0 MiB"):
            load(onnx_file)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak  # the chunks up to the cap, not 64 MiB
    monkeypatch.setattr(read_arrays, "MAX_SOURCE_BYTES", fileformat.MAX_SOURCE_BYTES)
    monkeypatch.setattr(read_arrays, "MAX_LOAD_BYTES", 4 << 20)  # the source counts in the budget
    with pytest.raises(LimitError, match="the ONNX source model source.onnx .* over the 4.0 MiB"):
        load(onnx_file)


# ----- check: random inputs, loops, scanned outputs within a budget -------------------------------


@pytest.mark.parametrize("side", [12000, 100000])
def test_random_inputs_are_made_only_up_to_a_stated_size(side):
    """A 105-byte IR text asking for a 12000 x 12000 input (a 200 s check) or a 100000 x
    100000 one (a raw MemoryError) is a clear error before anything is allocated: it names
    the input, its bytes and how to pass real inputs."""
    text = (
        f"def @main(%x: f32[{side}, {side}]) -> f32[{side}, {side}] {{\n"
        f"  %y: f32[{side}, {side}] = matmul(%x, %x)\n  return %y\n}}\n"
    )
    trace = explorer.explore(text, pipeline="fold-constant")
    tracemalloc.start()
    try:
        with pytest.raises(LimitError) as info:
            trace.check(progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert f"%x: f32[{side}, {side}] would need {side * side * 4:,} bytes" in message
    assert "only up to 256 MiB" in message and "pass real inputs: trace.check((x, ...))" in message
    assert peak < 64 << 20


def test_a_tiny_onnx_file_declaring_a_huge_input_is_a_limit_error():
    """A 73-byte ONNX file (one Identity, an input of 40000 x 41250 floats) would grow to
    6.6 GB of random input: a LimitError instead."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("compiler.frontend.onnx_frontend")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [40000, 41250])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [40000, 41250])],
    )
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = data.SerializeToString()
    assert len(data) < 100 and onnx is not None
    trace = explorer.explore(data)
    with pytest.raises(LimitError, match=r"%x: f32\[40000, 41250\] would need 6,600,000,000 bytes"):
        trace.check(progress=False)


def test_a_memory_error_in_a_check_is_a_limit_error(monkeypatch):
    """Whatever no limit foresaw: a MemoryError inside the check ends as one clear error."""
    from explorer.passlens import check as runner  # passlens's step runner makes them up

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 6.15 GiB")

    monkeypatch.setattr(runner, "_random_arrays", no_memory)
    trace = explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant")
    trace.example_inputs = None
    with pytest.raises(LimitError, match="the check ran out of memory .*6.15 GiB"):
        trace.check(progress=False)


NESTED_LOOPS = """
def @main(%x: f32[2], %n: i64[]) -> f32[2] {
  %r: (f32[2],) = loop @outer(%n, const(bool[], true), %x, %n, carried=1)
  %y: f32[2] = %r[0]
  return %y
}

def @outer(%i: i64[], %c: bool[], %acc: f32[2], %n: i64[])
    -> (bool[], f32[2]) attrs {private = true} {
  %r: (f32[2],) = loop @inner(%n, const(bool[], true), %acc, carried=1)
  %a: f32[2] = %r[0]
  %t: (bool[], f32[2]) = (%c, %a)
  return %t
}

def @inner(%i: i64[], %c: bool[], %acc: f32[2]) -> (bool[], f32[2]) attrs {private = true} {
  %a: f32[2] = add(%acc, const(f32[], 1.0))
  %t: (bool[], f32[2]) = (%c, %a)
  return %t
}
"""


def test_nested_loops_share_one_work_budget(monkeypatch):
    """Loops each under the iteration cap, nested, multiply: n = 1000 runs a million inner
    iterations. All the loops of one run share MAX_LOOP_WORK; within it, a correct result."""
    from compiler import interpret
    from compiler.interpret import InterpretError, run
    from compiler.ir import parse

    module = parse(NESTED_LOOPS)
    x = np.zeros(2, np.float32)
    (y,) = run(module, x, np.array(10, np.int64))  # 10 x 10 iterations: well within
    assert y.tolist() == [100.0, 100.0]
    monkeypatch.setattr(interpret, "MAX_LOOP_WORK", 5_000)
    with pytest.raises(InterpretError) as info:
        run(module, x, np.array(1000, np.int64))
    assert "over the interpreter's budget of 5,000 for all loops of one run" in str(info.value)
    assert "nested loops included (compiler.interpret.MAX_LOOP_WORK)" in str(info.value)
    assert interpret.MAX_LOOP_ITERATIONS > 1000  # each loop alone is under its own cap
    # a second run has a budget of its own
    (y,) = run(module, x, np.array(10, np.int64))
    assert y.tolist() == [100.0, 100.0]


SCAN = """
def @main(%x: f32[64], %trips: i64[]) -> (f32[64], f32[?, 64]) {
  %r: (f32[64], f32[?, 64]) = loop @body(%trips, const(bool[], true), %x, carried=1)
  return %r
}

def @body(%i: i64[], %c: bool[], %acc: f32[64]) -> (bool[], f32[64], f32[64])
    attrs {private = true} {
  %t: (bool[], f32[64], f32[64]) = (%c, %acc, %acc)
  return %t
}
"""


def test_a_scanned_output_is_sized_before_it_is_stacked(monkeypatch):
    """A loop's scanned output grows by one value per iteration: it is refused once it
    passes the limit for one value, before the stack is made."""
    from compiler import interpret
    from compiler.interpret import InterpretError, run
    from compiler.ir import parse

    module = parse(SCAN)
    x = np.ones(64, np.float32)  # 256 bytes an iteration
    _, scanned = run(module, x, np.array(3, np.int64))
    assert scanned.shape == (3, 64)
    monkeypatch.setattr(interpret, "MAX_VALUE_BYTES", 1000)
    # annotated with its number of iterations: refused before the first one
    static = parse(SCAN.replace("f32[?, 64]", "f32[100, 64]"))
    with pytest.raises(
        InterpretError, match=r"scanned output 0 is annotated f32\[100, 64\], 25,600"
    ):
        run(static, x, np.array(100, np.int64))
    with pytest.raises(
        InterpretError, match="scanned output 0 would hold more than 1,024 bytes after 4"
    ):
        run(module, x, np.array(100, np.int64))


# ----- TVM traces (format 3): every graph field's type checked at load --------------------------


@pytest.fixture(scope="module")
def tvm_file(tmp_path_factory):
    pytest.importorskip("tvm")
    torch = pytest.importorskip("torch")

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    trace = explorer.explore(model, (torch.randn(2, 4),), compiler="tvm", pipeline="zero")
    return save(trace, tmp_path_factory.mktemp("tvm") / "zero.passlens")


def _damage_graph(path, out, damage) -> None:
    ir = _json(path, "ir.json")
    graph = ir["foreign_modules"][0]["graph"]
    damage(graph)
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    members["ir.json"] = json.dumps(ir).encode()
    with zipfile.ZipFile(out, "w") as zf:
        for k, v in members.items():
            zf.writestr(k, v)


def _first_op(graph):
    return next(n for n in graph["nodes"] if n["kind"] in ("op", "call"))


@pytest.mark.parametrize(
    "damage, match",
    [
        (lambda g: g["nodes"][0].update(dtype={"a": 1}), "dtype must be text, not dict"),
        (
            lambda g: _first_op(g).update(attrs={"k": {"nested": {"x": 1}}}),
            "attribute 'k' must be text, a number or a list of them",
        ),
        (lambda g: g["nodes"][0].update(provenance=["a", "b"]), "provenance must be a mapping"),
        (
            lambda g: g["nodes"][0].update(provenance={"module_path": ["a"]}),
            "provenance 'module_path' must be text",
        ),
        (lambda g: g["nodes"][0].update(shape="2,3"), "a shape must be a list of integers"),
        (lambda g: g["nodes"][0].update(label=["x"]), "label must be text, not list"),
        (lambda g: g["nodes"][0].update(nbytes="9"), "nbytes must be an integer"),
        (lambda g: g["edges"][0].__setitem__(2, "0"), "edge's index must be an integer"),
        (lambda g: g["params"][0].update(shape=[[2]]), "a shape must be a list of integers"),
        (lambda g: g["signatures"][0].update(params=[["x"]]), "params must be .name, type. pairs"),
        # issue #39: a param's shape as a string, a mapping, nested, huge, negative, too long
        (lambda g: g["params"][0].update(shape="2,3"), "a shape must be a list of integers"),
        (lambda g: g["params"][0].update(shape={"0": 2}), "a shape must be a list of integers"),
        (lambda g: g["params"][0].update(shape=[[2, 3]]), "a shape must be a list of integers"),
        (lambda g: g["params"][0].update(shape=[10**30, 4]), "a dim must be between 0 and 2..62"),
        (
            lambda g: g["params"][0].update(shape=[-3, 4]),
            "a dim must be between 0 and 2..62, not -3",
        ),
        (lambda g: g["params"][0].update(shape=[1] * 100), "a shape of 100 dims, more than 64"),
        (lambda g: g["params"][0].update(shape=["n" * 300]), "a symbolic dim must be 1 to 256"),
        (lambda g: g["params"][0].update(nbytes=10**40), "nbytes is 1000.* over"),
        (lambda g: g["params"][0].update(dtype="f" * 300), "is not a dtype's name"),
        (lambda g: g["params"][0].update(dtype=7), "dtype must be text, not int"),
        (lambda g: g["params"][0].update(name="n" * 70_000), "name is 70,000 characters"),
        (lambda g: g["nodes"][0].update(shape=[-1]), "a dim must be between 0 and 2..62"),
        (lambda g: g["nodes"][0].update(nbytes=10**40), "nbytes is 1000.* over"),
        (lambda g: g["nodes"][0].update(id="i" * 70_000), "id is 70,000 characters"),
        (lambda g: g["edges"][0].__setitem__(2, -7), "edge's index must be between 0 and"),
        (lambda g: g["signatures"][0].update(num_input=-1), "num_input must be between 0 and"),
    ],
)
def test_a_tvm_graph_field_of_the_wrong_type_is_a_trace_file_error(
    tvm_file, tmp_path, damage, match
):
    """Each of these gave a raw TypeError in summary or to_html; now load refuses the file."""
    bad = tmp_path / "bad.passlens"
    _damage_graph(tvm_file, bad, damage)
    with pytest.raises(explorer.store.TraceFileError, match=match):
        load(bad)


def test_symbolic_param_dims_load_and_the_params_table_renders(tvm_file, tmp_path):
    """A TVM function parameter's shape may have symbolic dims (text): the params table
    sorts by the known dims instead of multiplying text (a raw TypeError before)."""
    from widgets.tables_html import param_table_html

    bad = tmp_path / "sym.passlens"
    _damage_graph(tvm_file, bad, lambda g: g["params"][0].update(shape=["n", "m"]))
    trace = load(bad)
    step = next(
        s for s in trace.steps if any(p.shape == ("n", "m") for p in s.graph.params.values())
    )
    html = param_table_html(step) + param_table_html(step, trace.steps[0])
    assert "[n, m]" in html
    trace.to_html(tmp_path / "sym.html", progress=False)


def test_an_undamaged_tvm_trace_loads_and_renders(tvm_file, tmp_path):
    trace = load(tvm_file)
    assert trace.compiler == "tvm" and "zero" in trace.pipeline
    trace.to_html(tmp_path / "t.html", progress=False)
    assert "LegalizeOps" in trace.summary_text()


# ----- long texts: cut in every view, with a note and a way to get all of it ----------------------


def _with_member(path, out, name, edit) -> None:
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    doc = json.loads(members[name])
    edit(doc)
    members[name] = json.dumps(doc).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)


def test_a_million_line_module_text_is_cut_in_every_view(tvm_file, tmp_path):
    """A TVM module text of 1,000,000 lines (a few kB zipped) made to_html take 31 s, 2.7 GB
    and write 491 MB. Every view now shows the first MAX_TEXT_CHARS characters with a note
    naming how to get the whole text; the report stays small."""
    from widgets.ir_text import MAX_TEXT_CHARS, ir_text_html, text_diff_html

    huge = "  %v = R.add(%x, %x)\n" * 1_000_000
    bad = tmp_path / "huge.passlens"

    last = _json(tvm_file, "manifest.json")["steps"][-1]["foreign_module"]

    def edit(ir):  # the final step's module
        ir["foreign_modules"][last]["text"] = huge + ir["foreign_modules"][last]["text"]

    _with_member(tvm_file, bad, "ir.json", edit)
    assert bad.stat().st_size < 1 << 20
    trace = load(bad)
    step = trace.final
    assert len(step.text) > 20_000_000  # the whole text stays available
    html = ir_text_html(step)
    assert len(html) < 2 * MAX_TEXT_CHARS
    assert f"of {len(step.text):,} characters" in html and "step.text" in html
    assert f"passlens show TRACE --step {step.index}" in html
    d = step.diff()
    assert "the IR diff covers the first 10,000 lines of each text" in text_diff_html(d)
    out = tmp_path / "huge.html"
    trace.to_html(out, progress=False)
    assert out.stat().st_size < 30 << 20


def test_a_huge_traceback_is_cut_in_the_report(tmp_path):
    import tests.compiler.passes.test_manager  # noqa: F401  (registers test-explode)

    text = "def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = add(%x, %x)\n  return %y\n}"
    trace = explorer.explore(text, pipeline="test-explode")
    path = save(trace, tmp_path / "t.passlens")
    bad = tmp_path / "tb.passlens"

    def edit(manifest):
        failed = next(s for s in manifest["steps"] if s.get("traceback"))
        failed["traceback"] = "  File 'x.py', line 1\n" * 500_000 + "AssertionError: boom\n"

    _with_member(path, bad, "manifest.json", edit)
    loaded = load(bad)
    assert len(loaded.failure.traceback) > 10_000_000
    out = tmp_path / "tb.html"
    loaded.to_html(out, progress=False)
    html = out.read_text()
    assert len(html) < 5 << 20
    assert "characters of the traceback; all of it: trace[" in html
    assert "AssertionError: boom" in html  # the innermost frames are kept
