"""What torch.compile says about itself, recorded with a trace (explorer.inductor.compile_log):
Dynamo's guards per frame, the recompile with the guard that failed, the restart of a graph
break, torch's compile-time counters, each kernel with its FX nodes and source lines; kept by
save / load (an older file without it still loads); checked and capped when read; the compile
tab in the report, every text from torch escaped."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch._inductor")

import explorer  # noqa: E402
from explorer.inductor.compile_log import MAX_TEXT, clean_info  # noqa: E402
from tests.explorer.inductor.models import Breaks  # noqa: E402
from widgets.compile_view import compile_html, kernel_code  # noqa: E402
from widgets.views import views_for  # noqa: E402


def compiled_trace():
    """The trace of `Breaks` (tests/explorer/inductor/models.py) on a batch of 2, then
    called on a batch of 3 (static shapes: a recompile of each frame)."""
    torch.manual_seed(0)
    return explorer.explore(
        Breaks(),
        (torch.randn(2, 4),),
        compiler="inductor",
        dynamic=False,
        calls=[(torch.randn(3, 4),)],
    )


@pytest.fixture(scope="module")
def trace():
    return compiled_trace()


def _frames(trace):
    return {f["id"]: f for f in trace.compile_info["frames"]}


def test_frames_guards_and_recompiles(trace):
    frames = _frames(trace)
    graphs = {g.compile_id: g for g in trace.inductor.graphs}
    # each frame that made a graph is joined with it and its steps
    assert set(graphs) <= set(frames)
    for cid, g in graphs.items():
        f = frames[cid]
        assert f["graph"] == g.index and f["import_step"] == g.step
        assert f["codegen_step"] == g.codegen_step
        assert trace[f["codegen_step"]].name == "inductor codegen"
    first, again = frames["0/0"], frames["0/1"]
    assert first["code"] == again["code"] == "forward"
    # Dynamo's guard tree: one guard a line, the input's shape among them
    for f in (first, again):
        assert f["guards"].startswith("TREE_GUARD_MANAGER")
        assert "TENSOR_MATCH" in f["guards"] and f["guard_count"] > 0
    assert "[2, 4]" in first["guards"] and "[3, 4]" in again["guards"]
    # the recompile names the guard of the earlier compile that failed
    assert first["recompile_reasons"] == []
    assert len(again["recompile_reasons"]) == 1
    assert re.search(
        r"0/0: tensor 'x' size mismatch at index 0\. expected 2, actual 3",
        again["recompile_reasons"][0],
    )
    resumed = [f for cid, f in frames.items() if cid.startswith("1/")]
    assert [len(f["recompile_reasons"]) for f in sorted(resumed, key=lambda f: f["id"])] == [0, 1]
    # the graph break: Dynamo restarted the frame, and says where it broke
    assert first["restart_reasons"] and "graph_break" in first["graph_break"]
    assert "models.py" in first["graph_break"]


def test_compile_times_from_torch(trace):
    for f in trace.compile_info["frames"]:
        if f["graph"] is None:
            continue
        times = dict(f["times"])
        total = times["entire frame (Dynamo + backend)"]
        assert 0 < times["Inductor"] <= times["backend (AOTAutograd + Inductor)"] <= total
        assert 0 < times["codegen"] <= times["Inductor"]
        recorded = dict(f["recorded"])
        assert {"pre-grad passes", "post-grad passes", "inductor codegen"} <= set(recorded)
        regions = dict(f["events"])
        assert regions["entire_frame_compile"] == pytest.approx(total, rel=0.05)


def test_kernels_name_their_fx_nodes_and_source_lines(trace):
    frames = _frames(trace)
    first = frames["0/0"]
    by_name = {k["name"]: k for k in first["kernels"]}
    assert "extern_kernels.addmm" in by_name  # the linear, an extern kernel
    addmm = by_name["extern_kernels.addmm"]
    assert addmm["nodes"] == ["addmm"] and addmm["pre"] == ["linear"]
    assert addmm["sources"] == ["models.py:18 in forward: y = torch.relu(self.fc(x))"]
    # every post-grad node a kernel names is a node of the codegen step's graph, every
    # Dynamo node one of the import step's; the line is the output code's call of it
    for f in trace.compile_info["frames"]:
        if f["graph"] is None:
            continue
        post = trace[f["codegen_step"]].graph.nodes
        pre = trace[f["import_step"]].graph.nodes
        code = trace[f["codegen_step"]].module.extra_texts["output code"].splitlines()
        assert f["kernels"]
        for k in f["kernels"]:
            assert k["nodes"] and all(n in post for n in k["nodes"])
            assert all(n in pre for n in k["pre"])
            assert k["name"] in code[k["line"] - 1]
    fused = [k for k in frames["1/0"]["kernels"] if k["name"].startswith("cpp_fused")]
    assert len(fused) == 1 and set(fused[0]["pre"]) == {"mul", "add", "sigmoid"}
    assert fused[0]["sources"][0].endswith("return torch.sigmoid(y * 2.0 + 1.0)")


def test_save_and_load_keep_it(trace, tmp_path):
    path = tmp_path / "t.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    assert loaded.compile_info == trace.compile_info
    assert "compile" in [v.title for v in views_for(loaded)]
    # a file without it (older, or another compiler's) loads with none, and no compile tab
    old = tmp_path / "old.passlens"
    _rewrite_manifest(path, old, lambda m: m.pop("compiler_record"))
    older = explorer.load(old)
    assert older.compile_info is None
    assert "compile" not in [v.title for v in views_for(older)]
    # a crafted record: junk is none; steps it does not have, negative times, huge texts are
    # dropped or cut, and the tab links no step that is not in the trace
    for record, check in (
        ("junk", lambda info: info is None),
        (
            {
                "frames": [
                    {
                        "id": "0/0",
                        "graph": 0,
                        "import_step": 10**6,
                        "codegen_step": 5000,
                        "guards": "x" * (MAX_TEXT + 10),
                        "times": [["Inductor", -1e300]],
                        "kernels": [{"name": "k", "nodes": ["addmm"]}],
                    }
                ]
            },
            lambda info: (
                len(info["frames"][0]["guards"]) <= MAX_TEXT and info["frames"][0]["times"] == []
            ),
        ),
    ):
        crafted = tmp_path / "crafted.passlens"
        _rewrite_manifest(path, crafted, lambda m, r=record: m.update(compiler_record=r))
        loaded = explorer.load(crafted)
        assert check(loaded.compile_info)
        if loaded.compile_info:
            page = compile_html(loaded)
            assert "data-step='" not in page, re.findall(r".{60}data-step='.{60}", page)
            assert "<code>addmm</code>" in page


def _rewrite_manifest(path, out, change):
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                change(manifest)
                data = json.dumps(manifest).encode()
            dst.writestr(item, data)


def test_what_a_file_gives_back_is_checked_and_capped():
    assert clean_info(None) is None and clean_info({"frames": "x"}) is None
    info = clean_info(
        {
            "frames": [
                {
                    "id": 7,
                    "guards": "g" * (MAX_TEXT * 2),
                    "guard_count": "many",
                    "times": [["Inductor", "fast"], ["codegen", 1.5], "bad"],
                    "import_step": -3,
                    "kernels": [{"name": ["x"], "nodes": "addmm", "line": 2**60}, 5],
                },
                "not a frame",
            ]
        }
    )
    (f,) = info["frames"]
    assert f["id"] == "7" and len(f["guards"]) <= MAX_TEXT
    assert f["guard_count"] is None and f["times"] == [["codegen", 1.5]]
    assert f["import_step"] is None and f["recompile_reasons"] == []
    assert f["kernels"] == [{"name": "['x']", "nodes": [], "pre": [], "sources": [], "line": None}]
    assert clean_info(info) == info  # cutting again changes nothing


def test_the_compile_tab_in_the_report_escapes_torch_text(trace, tmp_path):
    evil = "<script>alert(1)</script> \"q\" 'a' & b"
    info = json.loads(json.dumps(trace.compile_info))
    f = info["frames"][0]
    f["guards"] += "\n" + evil
    f["recompile_reasons"] = [evil]
    f["kernels"][0]["nodes"].append(evil)
    f["kernels"][0]["sources"].append(evil)
    saved, trace.compile_info = trace.compile_info, clean_info(info)
    try:
        page = compile_html(trace)
        assert "<script>alert" not in page
        # the guard, the reason twice (table, section), the source, the node x3 (id, title, text)
        assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 7
        # a kernel's node: a link to the codegen step with the node's id
        step = f["codegen_step"]
        assert f"data-step='{step}' data-node='addmm'" in page
        assert "data-node='&lt;script&gt;" in page
        # the tab is in the report, after the other tabs
        out = tmp_path / "r.html"
        trace.to_html(out)
        text = out.read_text()
        assert "data-tab='compile'" in text or 'data-tab="compile"' in text
        assert "<script>alert" not in text
        assert "extern_kernels.addmm" in text and "TREE_GUARD_MANAGER" in text
    finally:
        trace.compile_info = saved


def test_a_kernels_code_is_under_its_name(trace):
    f = _frames(trace)["1/0"]
    code = trace[f["codegen_step"]].texts["output code"].splitlines()
    (fused,) = [k for k in f["kernels"] if k["name"].startswith("cpp_fused")]
    text = kernel_code(code, fused["name"], fused["line"])
    lines = text.splitlines()
    assert lines[0].startswith(f"{fused['name']} = async_compile.cpp_pybinding(")
    assert 'extern "C"' in text and lines[-3] == "''')"
    assert lines[-1].startswith(f"{fused['name']}(")
    page = compile_html(trace)
    assert f"<summary><code>{fused['name']}</code></summary>" in page
    # an extern kernel has no definition: the line that calls it
    first = _frames(trace)["0/0"]
    (addmm,) = [k for k in first["kernels"] if k["name"] == "extern_kernels.addmm"]
    code = trace[first["codegen_step"]].texts["output code"].splitlines()
    lines = kernel_code(code, addmm["name"], addmm["line"]).splitlines()
    assert len(lines) == 2 and lines[1].startswith("extern_kernels.addmm(")
