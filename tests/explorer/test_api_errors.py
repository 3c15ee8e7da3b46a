"""The Python API's errors say what the CLI's say: one clear message, what to do next."""

import socket

import pytest
import torch

import explorer
import passlens
from compiler import PasslensError
from compiler.passes import PipelineError
from explorer.check import CheckError


@pytest.fixture(scope="module")
def trace():
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    return explorer.explore(model, (torch.randn(2, 8),), pipeline="fold-constant")


def _model():
    return torch.nn.Sequential(torch.nn.Linear(8, 4))


@pytest.mark.parametrize(
    ("spec", "suggestion"),
    [("defualt", "default"), ("fold-constnt", "fold-constant"), ("dec", "dce")],
)
def test_a_misspelt_pipeline_or_pass_gets_a_suggestion(spec, suggestion):
    with pytest.raises(PipelineError, match=f"did you mean [^?]*{suggestion}"):
        explorer.explore(_model(), (torch.randn(2, 8),), pipeline=spec)


def test_a_step_number_out_of_range_says_which_steps_there_are(trace):
    last = len(trace) - 1
    with pytest.raises(IndexError, match=f"^no step 99: the trace has steps 0 to {last}$"):
        trace[99]
    with pytest.raises(IndexError, match=f"no step -{last + 2}"):
        trace[-(last + 2)]
    assert trace[-1] is trace.steps[-1]
    with pytest.raises(KeyError, match=r"'fold-constant' ran 1 time \(use fold-constant#1"):
        trace["fold-constant#2"]
    with pytest.raises(KeyError, match="ran 1 time"):
        trace["fold-constant#x"]
    assert trace["fold-constant#1"] is trace["fold-constant"]


def test_checking_with_inputs_unlike_the_recorded_ones_says_so_before_running(trace):
    with pytest.raises(CheckError, match="do not match the ones the trace was recorded with") as e:
        trace.check((torch.randn(3, 5),))
    assert "expects f32[2, 8]" in str(e.value) and "(3, 5)" in str(e.value)
    with pytest.raises(CheckError, match="recorded with"):
        trace.check((torch.randn(2, 8).double(),))
    assert trace.check((torch.randn(2, 8),)).first_failure is None  # the recorded kind: fine


def test_serving_on_a_busy_port_is_one_error_saying_port_0(trace):
    pytest.importorskip("panel")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(PasslensError, match=f"port {port} is in use .*try port=0") as e:
            passlens.serve(trace, port=port, block=False)
    assert isinstance(e.value, OSError) and e.value.__cause__ is None
    for bad in (-1, 70000, "5006", True):
        with pytest.raises(PasslensError, match="bad port"):
            passlens.serve(trace, port=bad, block=False)


def test_an_onnx_model_given_to_inductor_says_inductor_needs_a_torch_model(tmp_path):
    from explorer.adapters import Unsupported, source_kind
    from tests.explorer.store.test_store import tiny_onnx

    _, proto = tiny_onnx()
    path = tmp_path / "m.onnx"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(Unsupported, match="compiles torch models, and .* is an ONNX model: ") as e:
        explorer.explore(str(path), compiler="inductor")
    assert str(e.value).startswith("compiler 'inductor' compiles torch models, and ")
    assert str(e.value).endswith(": explore it with compiler 'passlens', 'tvm' or 'onnxruntime'")
    with pytest.raises(Unsupported) as e:  # how the CLI names them: its flag
        explorer.get_adapter("inductor").refuse_source(str(path), "m.onnx", flag="--compiler")
    assert str(e.value) == (
        "--compiler inductor compiles torch models, and m.onnx is an ONNX model: explore it "
        "with --compiler passlens, tvm or onnxruntime"
    )
    assert source_kind(str(path)) == "onnx" and source_kind(_model()) == "torch"
    assert source_kind(path.read_bytes()) == "onnx" and source_kind(proto) == "onnx"
    assert source_kind("def @main(%x: f32[2]) -> f32[2] {\n  return %x\n}") == "ir"


def test_to_html_returns_its_path_as_save_and_export_do(trace, tmp_path):
    out = trace.to_html(tmp_path / "r.html")
    assert out == tmp_path / "r.html" and out.stat().st_size > 1000
    assert trace.save(tmp_path / "r.passlens") is not None


def test_the_maps_repr_is_one_line_not_a_dump_of_arrays(trace):
    text = repr(trace.param_map())
    assert text.startswith("<ParamMap: parameter map: ") and "\n" not in text
    assert ".nbytes" in text and "array(" not in text
    text = repr(trace.check().error_map())
    assert text.startswith("<ErrorMap: error map: ") and "\n" not in text and "array(" not in text


def test_saved_files_are_as_readable_as_other_outputs(trace, tmp_path):
    import os
    import stat

    saved = trace.save(tmp_path / "t.passlens")
    html_file = trace.to_html(tmp_path / "t.html")
    mode = stat.S_IMODE(os.stat(saved).st_mode)
    assert mode == stat.S_IMODE(os.stat(html_file).st_mode)
    assert mode & 0o044  # not mkstemp's 0600
