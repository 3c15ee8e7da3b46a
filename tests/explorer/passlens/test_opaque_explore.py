"""Exploring a model with an op passlens has no converter for: it is kept as an opaque op,
listed in the summary, marked in the graph, checked with values from its framework (torch,
onnxruntime), saved and loaded; loading never resolves or runs what the file names."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

import explorer
from compiler.frontend import UnsupportedOperatorError
from compiler.opaque import OpaqueOpError
from compiler.opaque import run as opaque_run
from explorer.store import TraceFileError, load
from passlens.cli import main
from tests.explorer.store.test_store import rewrite_member
from widgets.graph_data import graph_payload


class Scan(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        values, indices = torch.cummax(self.proj(x), dim=1)
        return self.head(values.relu()), indices


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scan = Scan()

    def forward(self, x):
        return self.scan(x)


@pytest.fixture(scope="module")
def example():
    torch.manual_seed(0)
    return Model().eval(), torch.randn(4, 8)


@pytest.fixture(scope="module")
def trace(example):
    model, x = example
    return explorer.explore(model, (x,))


@pytest.fixture(scope="module")
def saved(trace, example, tmp_path_factory):
    path = tmp_path_factory.mktemp("opaque") / "scan.passlens"
    trace.save(path)
    return path


def test_the_model_explores_and_checks_clean_against_eager(trace, example):
    report = trace.check((example[1],))
    assert report.ok, report
    assert "torch eager" in str(report)
    imported = next(s for s in trace.steps if s.kind == "import")
    assert 'opaque(%linear, framework="torch", target="aten.cummax.default"' in str(imported.module)


def test_the_summary_lists_the_opaque_op_with_its_count_and_module(trace):
    text = trace.summary_text()
    assert "1 opaque op(s): no converter" in text
    assert "aten.cummax.default x1 (run by torch)  at scan" in text
    html = trace._repr_html_()
    assert "<code>aten.cummax.default</code> &times;1 (run by torch) at scan" in html


def test_the_html_report_names_it_in_its_header(trace, tmp_path):
    path = tmp_path / "scan.html"
    trace.to_html(path)
    html = path.read_text()
    assert "1 opaque op(s): aten.cummax.default ×1 (torch)" in html


def test_the_graph_marks_it(trace):
    for step in (trace[1], trace[-1]):
        payload = graph_payload(step)
        marked = [n for n in payload["nodes"] if n.get("opq")]
        assert len(marked) == 1, step.name
        (node,) = marked
        assert node["opq"] == "torch" and node["t"] == "aten.cummax.default"
        assert node["s"] == ["opaque · torch"]
    ops = [(n, n["s"][0] if n.get("mod") else n["t"]) for n in graph_payload(trace[1])["nodes"]]
    unmarked = [n for n, op in ops if op == "linear"]  # (titled by its module when alone in it)
    assert unmarked and not any("opq" in n for n in unmarked)
    from widgets.snapshot import graph_page  # a picture with no kernel: the same payload

    page = graph_page(trace[1])
    assert page.count('"opq":"torch"') == 1 and "opaque · torch" in page


def test_the_trace_saves_and_loads_without_resolving_the_op(saved, example, monkeypatch):
    def refuse(target):
        raise AssertionError(f"loading resolved {target}")

    monkeypatch.setattr(opaque_run, "resolve_torch_op", refuse)
    loaded = load(saved)
    assert "aten.cummax.default x1 (run by torch)" in loaded.summary_text()
    monkeypatch.undo()
    report = loaded.check((example[1].numpy(),))
    assert report.ok, report


def test_strict_refuses_the_model(example):
    model, x = example
    with pytest.raises(UnsupportedOperatorError, match=r"aten\.cummax\.default\s+used at scan"):
        explorer.explore(model, (x,), strict=True)


def test_the_compiled_steps_call_it_on_the_host_and_check_clean(example):
    model, x = example
    trace = explorer.explore(model, (x,), pipeline="default,legalize-ops,codegen")
    assert trace.failure is None
    assert "opaque(" in str(trace[-1].module)  # left for the host between the kernels
    report = trace.check((x,))
    assert report.ok, report


def _hostile(saved, tmp_path, target: str):
    import zipfile

    path = tmp_path / "hostile.passlens"
    path.write_bytes(saved.read_bytes())
    with zipfile.ZipFile(path) as zf:
        ir = zf.read("ir.json")
    assert b"aten.cummax.default" in ir
    rewrite_member(path, "ir.json", ir.replace(b"aten.cummax.default", target.encode()))
    return path


def test_a_hostile_trace_naming_os_system_loads_and_its_check_fails_clearly(
    saved, example, tmp_path, monkeypatch
):
    import os

    ran = []
    monkeypatch.setattr(os, "system", lambda *a: ran.append(a) or 0)
    loaded = load(_hostile(saved, tmp_path, "os.system.default"))
    assert "os.system.default x1 (run by torch)" in loaded.summary_text()
    with pytest.raises(OpaqueOpError, match="refused to run opaque op os.system.default"):
        loaded.check((example[1].numpy(),))  # not on the allowlist: refused before running
    # trusted, it is still only looked up under torch.ops, where it is not
    report = loaded.check((example[1].numpy(),), trust_ops=["os.system"])
    assert not report.ok
    text = str(report)
    assert "no operator os.system" in text and "import the Python library" in text
    assert ran == []


def test_a_trace_naming_no_torch_operator_is_refused_when_loaded(saved, tmp_path):
    with pytest.raises(TraceFileError, match="is not a torch op name"):
        load(_hostile(saved, tmp_path, "os.system"))


# ----- ONNX --------------------------------------------------------------------------------------


def _roi_model():
    vi = helper.make_tensor_value_info
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("MaxRoiPool", ["r", "rois"], ["p"], name="roi/pool", pooled_shape=[2, 2]),
        helper.make_node("Sigmoid", ["p"], ["y"]),
    ]
    inputs = [vi("x", TensorProto.FLOAT, [1, 3, 8, 8]), vi("rois", TensorProto.FLOAT, [2, 5])]
    g = helper.make_graph(nodes, "g", inputs, [vi("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _roi_inputs():
    x = np.random.default_rng(3).random((1, 3, 8, 8)).astype(np.float32)
    return x, np.array([[0, 0, 0, 4, 4], [0, 2, 2, 7, 7]], np.float32)


def test_an_onnx_model_checks_clean_against_onnxruntime(tmp_path):
    trace = explorer.explore(_roi_model())
    assert "ai.onnx::MaxRoiPool x1 (run by onnxruntime)  at roi/pool" in trace.summary_text()
    report = trace.check(_roi_inputs())
    assert report.ok and "onnxruntime" in str(report)
    payload = graph_payload(trace[1])
    assert [n["t"] for n in payload["nodes"] if n.get("opq") == "onnxruntime"] == [
        "ai.onnx::MaxRoiPool"
    ]
    trace.save(tmp_path / "roi.passlens")
    assert load(tmp_path / "roi.passlens").check(_roi_inputs()).ok


def test_the_cli_explores_it_and_refuses_it_with_strict(capsys, tmp_path):
    path = tmp_path / "roi.onnx"
    path.write_bytes(_roi_model().SerializeToString())
    assert main(["explore", str(path)]) == 0
    out = capsys.readouterr().out
    assert "ai.onnx::MaxRoiPool x1 (run by onnxruntime)" in out
    code = main(["explore", str(path), "--strict"])
    captured = capsys.readouterr()
    assert code != 0
    assert "MaxRoiPool" in captured.err and "unsupported onnx operator" in captured.err


# ----- a real custom op: transformers' mixture-of-experts routing ---------------------------------


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    """A tiny Qwen3-MoE (random weights): its experts run transformers' own custom op
    ``transformers.grouped_mm_fallback``, which no converter can know."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.Qwen3MoeConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        moe_intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        num_experts=4,
        num_experts_per_tok=2,
        use_cache=False,
    )
    torch.manual_seed(0)
    model = transformers.Qwen3MoeForCausalLM(cfg).eval()
    ids = torch.randint(0, 128, (1, 6))
    trace = explorer.explore(model, (ids,), pipeline="default,legalize-ops,codegen")
    path = tmp_path_factory.mktemp("moe") / "moe.passlens"
    trace.save(path)
    return trace, ids, path


def test_a_mixture_of_experts_model_compiles_and_checks_clean(moe):
    trace, ids, _ = moe
    assert trace.failure is None  # its opaque ops run on the host between the kernels
    rows = {r["target"]: r for r in trace.opaque_ops()}
    grouped = rows["transformers.grouped_mm_fallback.default"]
    assert grouped["count"] == 4 and grouped["runner"] == "torch"
    assert grouped["places"] == ["model.layers.0.mlp.experts", "model.layers.1.mlp.experts"]
    report = trace.check((ids,))
    assert report.ok, report


def test_checking_it_where_transformers_is_not_imported_says_to_import_it(moe):
    """A fresh process that loads the trace has no transformers ops registered."""
    import os
    import pathlib
    import subprocess
    import sys

    _, ids, path = moe
    root = pathlib.Path(__file__).resolve().parents[3]
    code = (
        "import sys, numpy as np, explorer\n"
        f"trace = explorer.load({str(path)!r}, trust_ops=['transformers.grouped_mm_fallback'])\n"
        f"report = trace.check((np.array({ids.tolist()}),))\n"
        "assert 'transformers' not in sys.modules\n"
        "print(report)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "no operator transformers.grouped_mm_fallback in this process" in out.stdout
    assert "import the Python library that registers the 'transformers' operators" in out.stdout
