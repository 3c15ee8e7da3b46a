"""Crafted trace files (issue #14): a shared ``.passlens`` file is untrusted input. Each probe
ends in one clear passlens error (or a correct result), fast and within bounded memory; none
runs code or passes the file chose, and none makes a compiled kernel read outside its
buffers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.errors import LimitError, PasslensError
from explorer.store import TraceFileError, load, save, zipread
from tests.explorer.store.test_store import rewrite_member


@pytest.fixture
def small_file(tmp_path):
    trace = explorer.explore(models.mlp((4, 3), batch=2), pipeline="fold-constant")
    return save(trace, tmp_path / "small.passlens")


def _json(path, name):
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read(name))


def _fast_error(path, error=PasslensError, match=None, seconds=10.0):
    start = time.perf_counter()
    with pytest.raises(error, match=match) as info:
        load(path)
    assert time.perf_counter() - start < seconds
    return info.value


def test_a_manifest_that_inflates_to_more_than_its_limit_is_not_read(small_file, monkeypatch):
    manifest = _json(small_file, "manifest.json")
    manifest["padding"] = " " * (65 << 20)  # 65 MiB of spaces compress to ~65 kB
    data = json.dumps(manifest).encode()
    with zipfile.ZipFile(small_file) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    members["manifest.json"] = data
    with zipfile.ZipFile(small_file, "w", zipfile.ZIP_DEFLATED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    assert small_file.stat().st_size < 1 << 20
    # 1,000-fold: refused by its ratio before anything is read (explorer.store.zipread)
    err = _fast_error(small_file, LimitError, "manifest.json declares 65.0 MiB .* 100 times")
    assert isinstance(err, PasslensError)
    monkeypatch.setattr(zipread, "MAX_RATIO", 10_000)  # past the ratio: the member's own cap
    err = _fast_error(small_file, LimitError, "manifest.json is larger than 64 MiB")


def _npy(header_shape, dtype="<f4", body=b""):
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        f, {"descr": dtype, "fortran_order": False, "shape": header_shape}
    )
    return f.getvalue() + body


def _first_array(path):
    ir = _json(path, "ir.json")
    i, spec = next((i, s) for i, s in enumerate(ir["arrays"]) if "member" in s)
    return ir, i, spec


def test_an_npy_header_declaring_a_huge_array_is_refused_before_allocating(small_file):
    ir, i, spec = _first_array(small_file)
    rewrite_member(small_file, spec["member"], _npy((10**12,)))
    _fast_error(small_file, TraceFileError, r"holds float32\[1000000000000\]")
    ir["arrays"][i]["shape"] = [10**12]  # the declared shape agrees: the size limit refuses
    rewrite_member(small_file, "ir.json", json.dumps(ir).encode())
    _fast_error(small_file, LimitError, "over the 8 GiB limit for one array")


def test_an_npy_member_shorter_than_its_header_says_is_refused(small_file):
    _, _, spec = _first_array(small_file)
    rewrite_member(small_file, spec["member"], _npy(tuple(spec["shape"]), body=b"\0" * 4))
    _fast_error(small_file, TraceFileError, "bytes of data, its header says")


def test_an_npy_member_of_another_dtype_is_refused(small_file):
    _, _, spec = _first_array(small_file)
    n = int(np.prod(spec["shape"]))
    rewrite_member(small_file, spec["member"], _npy(tuple(spec["shape"]), "<f8", b"\0" * 8 * n))
    _fast_error(small_file, TraceFileError, "holds float64")


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("depth", 10**9, "has depth 1000000000"),
        ("parent", 7, "parent 7"),
        ("children", [0], "children that are not later steps"),
    ],
)
def test_step_structure_fields_are_checked(small_file, field, value, match):
    manifest = _json(small_file, "manifest.json")
    manifest["steps"][1][field] = value
    rewrite_member(small_file, "manifest.json", json.dumps(manifest).encode())
    _fast_error(small_file, TraceFileError, match)


def test_a_duplicate_manifest_is_refused(small_file):
    with zipfile.ZipFile(small_file, "a") as zf:
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("manifest.json", b"{}")
    _fast_error(small_file, TraceFileError, "a member appears twice")


def test_a_member_with_an_unknown_compression_method_is_a_trace_file_error(small_file):
    data = bytearray(small_file.read_bytes())
    # the central directory's compression method of every member: 99 (AES, unsupported)
    start = data.find(b"PK\x01\x02")
    while start != -1:
        data[start + 10 : start + 12] = (99).to_bytes(2, "little")
        start = data.find(b"PK\x01\x02", start + 4)
    small_file.write_bytes(bytes(data))
    _fast_error(small_file, TraceFileError)


def test_a_zip_needing_a_newer_zip_version_is_a_trace_file_error(small_file):
    data = bytearray(small_file.read_bytes())
    start = data.find(b"PK\x01\x02")  # the central directory's first "version needed"
    data[start + 6 : start + 8] = (245).to_bytes(2, "little")  # zip 24.5
    small_file.write_bytes(bytes(data))
    _fast_error(small_file, TraceFileError, "not a readable zip archive: zip file version 24.5")
    with pytest.raises(TraceFileError, match="zip file version 24.5"):
        explorer.store.read_manifest(small_file)


def _backend_trace(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 4)
    trace = explorer.explore(model, (x,), pipeline="fuse-ops,legalize-ops,codegen")
    return save(trace, tmp_path / "backend.passlens"), x


def test_loading_re_lowers_with_legalize_ops_only_whatever_spec_the_file_records(
    tmp_path, monkeypatch
):
    path, _ = _backend_trace(tmp_path)
    manifest = _json(path, "manifest.json")
    step = next(s for s in manifest["steps"] if s["name"] == "legalize-ops")
    step["spec"] = ",".join(["fold-constant"] * 3000 + ["legalize-ops"])
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    from compiler import passes

    ran = []
    real = passes.run

    def spy(module, spec, **kw):
        ran.append(spec)
        return real(module, spec, **kw)

    monkeypatch.setattr(passes, "run", spy)
    loaded = load(path)
    assert ran == ["legalize-ops"]
    assert loaded["legalize-ops"].spec.count("fold-constant") == 3000  # shown, not run


CRAFTED_KERNEL = """
import sys
import numpy as np
import explorer

trace = explorer.load(sys.argv[1])
report = trace.check((np.ones((2, 4), np.float32),), progress=False)
print("FINDINGS", sorted({f.kind for f in report.findings}))
"""


def test_a_kernel_annotated_larger_than_its_input_is_not_compiled_from_a_loaded_trace(tmp_path):
    """Every op of the trace claims to give f32[2, 100000] from f32[2, 4] inputs:
    re-lowering on load refuses it (a kernel made from it would read past the input), and
    the check of a fresh process reports findings instead of reading foreign memory."""
    path, _ = _backend_trace(tmp_path)
    ir = _json(path, "ir.json")
    manifest = _json(path, "manifest.json")
    ir["types"].append("f32[2, 100000]")
    for node in ir["nodes"]:
        if node["kind"] in ("call", "func_call") and node.get("op") != "call_lowered":
            node["type"] = len(ir["types"]) - 1
    rewrite_member(path, "ir.json", json.dumps(ir).encode())
    rewrite_member(path, "manifest.json", json.dumps(manifest).encode())
    loaded = load(path)  # re-lowering refused the kernels: nothing made from the lie
    from compiler import passes

    with pytest.raises(passes.PassFailed, match=r"annotated f32\[2, 100000\] but its inputs"):
        passes.run(loaded["legalize-ops"].before, "legalize-ops,codegen", record=False)
    script = tmp_path / "probe.py"
    script.write_text(CRAFTED_KERNEL)
    proc = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]  # never killed by a signal
    assert "FINDINGS ['run-failed', 'shape-mismatch']" in proc.stdout


# ----- the check report saved with a trace ------------------------------------------------------


@pytest.fixture
def checked_file(tmp_path):
    """A trace whose check found a divergence (per-node and per-layer errors), saved with its
    report and inputs."""
    from tests.explorer.check.test_check import _FlipAdd  # noqa: F401  (registers the wrong pass)

    trace = explorer.explore(
        models.mlp((4, 3), batch=2), pipeline="decompose-ops{ops=[linear]},test-check-flip-add"
    )
    report = trace.check((np.ones((2, 4), np.float32),), progress=False)
    assert report.of_kind("diverged") and report.steps[2].layers
    return save(trace, tmp_path / "checked.passlens", inputs=True)


def _damage_report(rec: dict, damage: str) -> None:
    diverged = next(f for f in rec["findings"] if f["kind"] == "diverged")
    details = dict(diverged["details"]["v"])
    layered = next(c for c in rec["steps"] if c["layers"])
    if damage == "steps not a list":
        rec["steps"] = {}
    elif damage == "negative rtol":
        rec["rtol"] = -1
    elif damage == "NaN atol":
        rec["atol"] = float("nan")
    elif damage == "a bool count":
        rec["computed"] = True
    elif damage == "notes not text":
        rec["notes"] = [{"x": 1}]
    elif damage == "finding at no step":
        diverged["step"] = 99
    elif damage == "finding at a bool step":
        diverged["step"] = True
    elif damage == "finding without a kind":
        diverged["kind"] = ""
    elif damage == "message not text":
        diverged["message"] = 5
    elif damage == "status not text":
        layered["status"] = ["diverged"]
    elif damage == "negative error":
        layered["max_abs"] = -1.0
    elif damage == "error as text":
        layered["max_rel"] = "large"
    elif damage == "same_as no step":
        layered["same_as"] = -1
    elif damage == "a step checked twice":
        rec["steps"].append(rec["steps"][0])
    elif damage == "layer node out of range":
        layered["layers"][0][3] = 10**6
    elif damage == "layer not a 4-list":
        layered["layers"][0] = layered["layers"][0][:3]
    elif damage == "unknown tag":
        details["output"] = {"$": "pickle", "v": "cos\nsystem\n"}
    elif damage == "node_errors not node errors":
        details["node_errors"] = [1, 2]
    elif damage == "node error shape":
        details["node_errors"][0]["shape"] = [{"$": "text", "v": "x"}]
    elif damage == "growth of the wrong shape":
        details["growth"] = [["w", 1]]
    elif damage == "nesting too deep":
        deep: list = []
        for _ in range(40):
            deep = [deep]
        details["output"] = deep
    elif damage == "details not a mapping":
        diverged["details"] = {"$": "tuple", "v": []}
    elif damage == "nodes not nodes":
        diverged["nodes"] = [{"$": "tuple", "v": []}]
    elif damage == "bad input reference":
        rec["inputs"] = [10**6]
    diverged["details"]["v"] = [[k, v] for k, v in details.items()]


@pytest.mark.parametrize(
    "damage, match",
    [
        ("steps not a list", "check report: steps is a dict"),
        ("negative rtol", "check report: rtol is -1.0, not a finite number"),
        ("NaN atol", "check report: atol is nan"),
        ("a bool count", "check report: computed is True"),
        ("notes not text", "check report: a note is not text"),
        ("finding at no step", "check report: finding 0 names step 99; the trace has 3"),
        ("finding at a bool step", "check report: finding 0 names step True"),
        ("finding without a kind", "check report: finding 0 has no kind"),
        ("message not text", "check report: finding 0's message is a int"),
        ("status not text", "check report: step check \\d's status is a list"),
        ("negative error", "check report: step check \\d's max_abs is -1.0, not an error"),
        ("error as text", "check report: step check \\d's max_rel is 'large', not an error"),
        ("same_as no step", "check report: step check \\d's same_as names step -1"),
        ("a step checked twice", "check report: a step is checked twice"),
        ("layer node out of range", "check report: step check \\d's layer .* names node 1000000"),
        ("layer not a 4-list", "check report: step check \\d has a layer that is not"),
        ("unknown tag", "check report: finding 0 holds a value tagged 'pickle'"),
        ("node_errors not node errors", "check report: finding 0's node_errors are not"),
        ("node error shape", "check report: finding 0 holds a node error whose shape"),
        ("growth of the wrong shape", "check report: finding 0's growth is not a list"),
        ("nesting too deep", "check report: finding 0 nests deeper than 32"),
        ("details not a mapping", "check report: finding 0's details are not a mapping"),
        ("nodes not nodes", "check report: finding 0 names something that is neither"),
        ("bad input reference", "bad array reference 1000000"),
    ],
)
def test_a_malformed_check_report_is_one_clear_error(checked_file, damage, match):
    assert load(checked_file).report is not None  # the undamaged file loads with its report
    rec = _json(checked_file, "report.json")
    _damage_report(rec, damage)
    rewrite_member(checked_file, "report.json", json.dumps(rec).encode())
    err = _fast_error(checked_file, TraceFileError, match)
    assert str(err).startswith(f"{checked_file}: damaged passlens trace file (")
    assert "\n" not in str(err)


def test_the_report_member_and_the_manifest_must_agree(checked_file):
    manifest = _json(checked_file, "manifest.json")
    assert manifest["report"] is True and manifest["version"] == 2
    rewrite_member(checked_file, "report.json", b"{not json")
    _fast_error(checked_file, TraceFileError, r"damaged passlens trace file \(report.json: ")
    rewrite_member(checked_file, "report.json", b"", drop=True)
    _fast_error(checked_file, TraceFileError, "says it holds a check report, and there is no")
    rewrite_member(
        checked_file, "manifest.json", json.dumps({**manifest, "report": "yes"}).encode()
    )
    _fast_error(checked_file, TraceFileError, "the manifest's report is 'yes', not true")
    manifest.pop("report")  # no report named: a report.json member is not read
    rewrite_member(checked_file, "manifest.json", json.dumps(manifest).encode())
    rewrite_member(checked_file, "report.json", b"{not json")
    assert load(checked_file).report is None


def test_report_sizes_are_capped(checked_file, monkeypatch):
    from explorer.store import checks, fileformat

    monkeypatch.setattr(checks, "MAX_REPORT_INPUT_BYTES", 16)  # the inputs are 32 bytes
    _fast_error(checked_file, LimitError, "inputs are over the 0 MiB limit for them; not read")
    monkeypatch.undo()
    monkeypatch.setitem(fileformat.MAX_JSON_BYTES, "report.json", 100)
    _fast_error(checked_file, LimitError, "report.json is larger than 0 MiB")
    monkeypatch.undo()
    monkeypatch.setattr(checks, "MAX_FINDINGS", 0)
    _fast_error(checked_file, LimitError, "the check report has 1 findings, over the limit of 0")


def test_odd_but_valid_report_values_load(checked_file):
    """An error may be infinite or NaN; an error of a type the file names is rebuilt as a
    recorded error of that name, running nothing."""
    rec = _json(checked_file, "report.json")
    layered = next(c for c in rec["steps"] if c["layers"])
    layered["max_abs"], layered["max_rel"] = "inf", "nan"
    layered["computed"] = -2  # the check's own bookkeeping can write this
    diverged = rec["findings"][0]
    diverged["details"]["v"].append(
        ["error", {"$": "error", "type": "os.system", "module": "os", "message": "rm -rf /"}]
    )
    rewrite_member(checked_file, "report.json", json.dumps(rec).encode())
    report = load(checked_file).report
    check = report.steps[layered["step"]]
    assert check.max_abs == float("inf") and check.max_rel != check.max_rel  # NaN
    assert check.computed == -2
    error = report.findings[0].details["error"]
    assert type(error).__name__ == "RecordedError" and str(error) == "rm -rf /"
    assert "inf" in str(report)


# ----- untrusted models and IR ----------------------------------------------------------------


@pytest.mark.parametrize("data", [b"\x08\x07garbage", bytes(range(256)) * 3, b""])
def test_explore_of_bytes_that_are_not_an_onnx_model_is_a_passlens_error(data, tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(data)
    for source in (data, path):
        with pytest.raises(PasslensError, match="ONNX model|empty"):
            explorer.explore(source)


@pytest.mark.parametrize(
    "shape, match",
    [
        ("10000000000", "over the interpreter's limit of 4 GiB for one value"),
        (", ".join(["1"] * 70), "zeros"),  # numpy takes 64 dims at most
    ],
)
def test_a_step_that_cannot_be_computed_is_a_run_failed_finding(shape, match):
    trace = explorer.explore(
        f"""
def @main(%x: f32[2]) -> f32[{shape}] {{
  %z: f32[{shape}] = zeros(shape=[{shape}], dtype=f32)
  return %z
}}""",
        pipeline="",
    )
    report = trace.check((np.ones(2, np.float32),), progress=False)
    (finding,) = report.findings
    assert finding.kind == "run-failed"
    assert match in str(finding)


def test_text_that_is_not_valid_unicode_is_refused(small_file):
    """JSON can spell a lone surrogate; no report could be written with it (found by
    bench/fuzz_untrusted.py: to_html raised UnicodeEncodeError)."""
    manifest = _json(small_file, "manifest.json")
    manifest["steps"][1]["name"] = "fold\ud800"
    rewrite_member(small_file, "manifest.json", json.dumps(manifest).encode())
    _fast_error(small_file, TraceFileError, "not valid Unicode")


# ----- failures and interrupts keep the trace ----------------------------------------------------


def test_the_passes_a_failure_leaves_unrun_are_listed_and_saved(tmp_path):
    import tests.compiler.passes.test_manager  # noqa: F401  (registers test-explode)

    text = "def @main(%x: f32[2]) -> f32[2] {\n  %y: f32[2] = add(%x, %x)\n  return %y\n}"
    trace = explorer.explore(text, pipeline="fold-constant,test-explode,dead-code-elimination")
    assert trace.failure.name == "test-explode"
    assert [(k.spec, k.reason) for k in trace.skipped] == [
        ("dead-code-elimination", "skipped: pass test-explode failed")
    ]
    assert "dead-code-elimination" in trace.summary_text().splitlines()[-1]
    assert "skipped" in trace.summary_text().splitlines()[-1]
    loaded = load(trace.save(tmp_path / "t.passlens"))
    assert loaded.skipped == trace.skipped and not loaded.interrupted


def test_ctrl_c_in_a_pass_keeps_the_trace_of_what_ran(tmp_path):
    import tests.compiler.passes.test_manager  # noqa: F401  (registers test-interrupt)

    trace = explorer.explore(
        models.mlp((4, 3), batch=2), pipeline="fold-constant,test-interrupt,infer-types"
    )
    assert trace.interrupted
    assert [s.name for s in trace][-2:] == ["fold-constant", "test-interrupt"]
    assert isinstance(trace.failure.error, KeyboardInterrupt)
    assert [k.reason for k in trace.skipped] == ["skipped: interrupted in pass test-interrupt"]
    assert load(trace.save(tmp_path / "t.passlens")).interrupted


# ----- nesting and long texts (issue #39: bounded rendering) --------------------------------


def _nest_tuples(path, depth: int) -> None:
    """The file's @main returns its value wrapped in ``depth`` tuples, one in another."""
    ir = _json(path, "ir.json")
    nodes, fn = ir["nodes"], ir["functions"][0]
    prev, binds = fn["output"], list(fn["bindings"])
    for i in range(depth):
        nodes.append({"kind": "tuple", "args": [prev], "name": f"t{i}"})
        prev = len(nodes) - 1
        binds.append(prev)
    fn["bindings"], fn["output"] = binds, prev
    rewrite_member(path, "ir.json", json.dumps(ir).encode())


def test_tuples_nested_5000_deep_are_a_limit_error_at_load(small_file):
    """Every walk of a module (a type's text, the printer, the graph) recurses over that
    nesting: a RecursionError in every view before."""
    _nest_tuples(small_file, 5000)
    err = _fast_error(small_file, LimitError, "nests tuples or If branches 65 levels deep")
    assert "over the limit of 64" in str(err)


def test_tuples_nested_within_the_limit_load_and_render(small_file, tmp_path):
    _nest_tuples(small_file, 60)
    trace = load(small_file)
    assert trace.to_html(tmp_path / "nested.html").stat().st_size > 0


def test_why_lines_of_long_matched_names_are_cut(small_file):
    """A rewrite of 64 matched names of 4,090 characters by a 4,000-character rule: a why
    line names 8 of them and is cut at MAX_WHY_CHARS with a note (before: 262 KB a node)."""
    from explorer.rewrites import MAX_WHY_CHARS, whys

    trace = load(small_file)
    manifest = _json(small_file, "manifest.json")
    names = [f"m{i:02d}" + "x" * 4090 for i in range(64)]
    for s, rec in zip(trace.steps, manifest["steps"], strict=True):
        rec["rewrites"] = [["r/" + "R" * 4000, names, list(s.graph.nodes), 0]]
    rewrite_member(small_file, "manifest.json", json.dumps(manifest).encode())
    loaded = load(small_file)
    lines = [line for s in loaded.steps for w in whys(s).values() for line in w.split("\n")]
    assert lines and all(len(line) <= MAX_WHY_CHARS + 40 for line in lines)
    assert all(line.endswith("more characters)") for line in lines)
