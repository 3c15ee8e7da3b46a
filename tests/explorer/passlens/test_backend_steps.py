"""The backend's stages in the explorer: loop IR, LLVM IR and assembly as a step's texts, the
compiled model runnable from its step, the artifact size in the summary, in saved traces and
in compare."""

import numpy as np
import pytest
import torch

import compiler
import explorer

PIPELINE = "default,legalize-ops,codegen"


@pytest.fixture(scope="module")
def mlp_trace():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)
    ).eval()
    x = torch.randn(4, 16)
    return model, x, explorer.explore(model, (x,), pipeline=PIPELINE)


def test_legalize_ops_step_shows_the_loop_ir_of_each_kernel_with_its_graph_origin(mlp_trace):
    _, _, trace = mlp_trace
    step = trace["legalize-ops"]
    assert step.backend_stage == "loops"
    assert list(step.texts) == ["IR", "loop IR"]
    loops = step.texts["loop IR"]
    assert loops.count("kernel @") == 2
    assert "# lowered from fused matmul, add, gelu" in loops
    assert "for i0 in 0..4" in loops
    assert "erf(" in loops  # the fused gelu is generated code
    assert "call_lowered(" in step.text  # the graph calls the kernels
    # earlier steps have only the IR
    assert list(trace["fuse-ops"].texts) == ["IR"]
    assert trace["fuse-ops"].backend_stage is None


def test_codegen_step_shows_llvm_ir_and_assembly(mlp_trace):
    _, _, trace = mlp_trace
    step = trace["codegen"]
    assert step.backend_stage == "compiled"
    assert list(step.texts) == ["IR", "loop IR", "LLVM IR", "assembly"]
    assert "define " in step.texts["LLVM IR"]
    assert "fused_matmul_add_gelu" in step.texts["assembly"]


def test_the_compiled_step_runs_like_torch_and_reports_its_artifact(mlp_trace):
    model, x, trace = mlp_trace
    step = trace["codegen"]
    exe = step.executable()
    assert exe is step.executable()  # built once
    (y,) = exe(x.numpy())
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
    art = step.artifact_bytes
    assert art is not None and art > step.param_bytes
    row = trace.summary()[-1]
    assert row["artifact_bytes"] == art
    # the codegen row (a slow first import adds a note under the table)
    (line,) = [ln for ln in trace.summary_text().splitlines() if " codegen " in ln]
    assert "x the weights" in line


def test_a_step_that_is_not_compiled_has_no_executable(mlp_trace):
    _, _, trace = mlp_trace
    with pytest.raises(ValueError, match="not compiled.*legalize-ops,codegen"):
        trace["fold-constant"].executable()
    assert trace["fold-constant"].artifact_bytes is None


def test_backend_texts_and_artifact_size_survive_save_and_load(mlp_trace, tmp_path):
    _, _, trace = mlp_trace
    path = tmp_path / "t.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    step = loaded["codegen"]
    assert step.texts == trace["codegen"].texts
    assert step.artifact_bytes == trace["codegen"].artifact_bytes


def test_compare_shows_the_artifact_sizes(mlp_trace):
    model, x, trace = mlp_trace
    graph_only = explorer.explore(model, (x,))
    cmp = explorer.compare(trace, graph_only)
    assert cmp.a.artifact_bytes == trace["codegen"].artifact_bytes
    assert cmp.b.artifact_bytes is None


def test_compiler_build_is_the_backend_build():
    from compiler.backend import build

    assert compiler.build is build
    with pytest.raises(AttributeError):
        compiler.no_such_thing  # noqa: B018


def test_a_trace_loaded_in_another_process_runs_its_kernels_again(mlp_trace, tmp_path):
    """Kernels live in the process that lowered them: loading re-lowers them (same names), so
    a fresh process can check the backend steps and run the compiled model."""
    import subprocess
    import sys
    import textwrap

    model, x, trace = mlp_trace
    path = tmp_path / "t.passlens"
    trace.save(path)
    np.save(tmp_path / "x.npy", x.numpy())
    with torch.no_grad():
        np.save(tmp_path / "want.npy", model(x).numpy())
    code = textwrap.dedent(
        f"""
        import numpy as np
        import explorer
        trace = explorer.load({str(path)!r})
        x = np.load({str(tmp_path / "x.npy")!r})
        report = trace.check((x,), reference="import")
        assert report.ok, report
        (y,) = trace["codegen"].executable()(x)
        np.testing.assert_allclose(y, np.load({str(tmp_path / "want.npy")!r}), rtol=1e-4, atol=1e-5)
        print("ok", trace["codegen"].artifact_bytes)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["ok", str(trace["codegen"].artifact_bytes)]
