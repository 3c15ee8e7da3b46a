"""compiler.backend.build: models end to end against the interpreter, every stage recorded,
symbolic batch, export size (docs/bugs.md bug 1), export and load, clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import models, passes
from compiler.backend import BuildError, build, kernel_calls, load, lowered_text
from compiler.interpret import run
from compiler.ir import Call, Function, Module, TensorType, Var, parse, verify
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import ANY
from compiler.passes import PassFailed

SMALL = {"dims": (8, 16, 32, 64), "depths": (1, 1, 2, 1), "image": 32}


def _input(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(scope="module")
def small_convnext():
    module = models.convnext(**SMALL, seed=1)
    return module, build(module)


def test_mlp_matches_the_interpreter():
    module = models.mlp(batch=4)
    x = _input(4, 784)
    exe = build(module)
    (want,) = run(module, x)
    (got,) = exe(x)
    assert np.abs(want).max() > 0.1
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_small_convnext_matches_the_interpreter(small_convnext):
    module, exe = small_convnext
    x = _input(1, 3, 32, 32)
    (want,) = run(module, x)
    (got,) = exe(x)
    assert got.shape == (1, 1000)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_every_stage_is_a_recorded_pass_and_the_lowered_module_still_runs(small_convnext):
    module, exe = small_convnext
    names = [s.pass_name for s in exe.result.snapshots if s.depth == 0]
    assert names == ["default", "legalize-ops", "codegen"]
    legalized = exe.result.snapshots[-2].module
    verify(legalized)
    ops = {b.op for b in legalized.main.iter_nodes() if isinstance(b, Call)}
    assert ops <= {"call_lowered", "flatten", "reshape"}, ops
    assert not any(fn.attrs.get("primitive") for fn in legalized.functions.values())
    x = _input(1, 3, 32, 32, seed=2)
    # the interpreter runs the legalized module (call_lowered runs the JIT-compiled kernel)
    np.testing.assert_allclose(run(legalized, x)[0], run(module, x)[0], rtol=1e-4, atol=1e-5)


def test_kernels_are_shared_by_call_sites_of_the_same_shapes(small_convnext):
    module, exe = small_convnext
    calls = [b for b in exe.module.main.bindings if isinstance(b, Call) and b.op == "call_lowered"]
    assert len(kernel_calls(exe.module)) < len(calls)  # stage 3's two blocks share kernels
    text = lowered_text(exe.module)
    assert "called 2x" in text and "features.5.0" in text and "features.5.1" in text


def test_a_fused_epilogue_runs_in_place_after_the_library_matmul(small_convnext):
    module, exe = small_convnext
    text = lowered_text(exe.module)
    kernel = next(k for k in text.split("\n\n") if "lowered from fused matmul, add, gelu" in k)
    assert "call numpy.matmul" in kernel and "library call, not generated code" in kernel
    assert "workspace" not in kernel  # bias + gelu read and write the output buffer
    assert "erf(" in kernel


def test_symbolic_batch_runs_at_any_batch():
    module = models.convnext(**SMALL, batch="n")
    exe = build(module)
    for n in (1, 3):
        x = _input(n, 3, 32, 32, seed=n)
        np.testing.assert_allclose(exe(x)[0], run(module, x)[0], rtol=1e-4, atol=1e-5)
    assert "dims n" in lowered_text(exe.module)


@pytest.mark.parametrize(
    "dim, size",
    [("2*n + 1", 7), ("n // 2 + 1", 3)],
)
def test_a_dim_that_is_an_expression_of_an_unbound_symbol_runs(dim, size):
    """The symbol appears only inside an expression: the kernel finds a value of it that gives
    its buffers their sizes (the interpreter and the executable alike)."""
    module = parse(f"""
def @main(%x: f32[{dim}]) -> f32[{dim}] {{
  %e: f32[{dim}] = exp(%x)
  %y: f32[{dim}] = multiply(%e, %x)
  return %y
}}
""")
    x = _input(size)
    lowered = passes.run(module, "legalize-ops", raise_on_failure=True).module
    np.testing.assert_allclose(run(lowered, x)[0], run(module, x)[0], rtol=1e-6)
    np.testing.assert_allclose(build(module)(x)[0], run(module, x)[0], rtol=1e-6)


def test_dims_the_buffers_do_not_determine_are_passed_by_the_caller():
    """(batch*seq, 4): batch and seq are passed to the kernel from the caller's bindings."""
    module = parse("""
def @main(%x: f32[batch, seq, 4]) -> f32[batch * seq, 4] {
  %r: f32[batch * seq, 4] = reshape(%x, shape=[batch * seq, 4])
  %y: f32[batch * seq, 4] = exp(%r)
  return %y
}
""")
    lowered = passes.run(module, "legalize-ops", raise_on_failure=True).module
    call = next(b for b in lowered.main.bindings if getattr(b, "op", "") == "call_lowered")
    exe = build(module)
    for shape in ((2, 3, 4), (5, 1, 4)):
        x = _input(*shape)
        np.testing.assert_allclose(exe(x)[0], np.exp(x.reshape(-1, 4)), rtol=1e-6)
        np.testing.assert_allclose(run(lowered, x)[0], np.exp(x.reshape(-1, 4)), rtol=1e-6)
    # one kernel for the symbolic shape, given batch and seq by the caller
    assert str(call.ty) == "f32[batch*seq, 4]" and call.attrs["dim_names"] == "batch, seq"
    assert [str(d) for d in call.attrs["dims"]] == ["batch", "seq"]
    assert sum(getattr(b, "op", "") == "call_lowered" for b in lowered.main.bindings) == 1


def _linear_model() -> Module:
    """Linear(128, 512) on a channels-last (1, 56, 56, 128) input, as in a ConvNeXt block."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((512, 128)).astype(np.float32)
    b = rng.standard_normal(512).astype(np.float32)
    text = """
weights {
  $fc.weight: f32[512, 128]
  $fc.bias: f32[512]
}

def @main(%x: f32[1, 56, 56, 128]) -> f32[1, 56, 56, 512] {
  %y: f32[1, 56, 56, 512] = linear(%x, $fc.weight, $fc.bias)
  return %y
}
"""
    return parse(text, params={"fc.weight": w, "fc.bias": b})


def test_export_size_grows_with_a_weight_duplicated_by_the_broadcast_replica(tmp_path):
    """docs/bugs.md bug 1: the faulty frontend's broadcast, folded, makes the weight 56 copies."""
    module = _linear_model()
    good = build(module)
    bloated = build(passes.run(module, "replica-linear-broadcast", raise_on_failure=True).module)
    x = _input(1, 56, 56, 128)
    np.testing.assert_allclose(bloated(x)[0], good(x)[0], rtol=1e-4, atol=1e-4)
    assert good.param_bytes == (512 * 128 + 512) * 4
    assert bloated.param_bytes == (56 * 512 * 128 + 512) * 4
    size_good = good.export(tmp_path / "good.plz")
    size_bloated = bloated.export(tmp_path / "bloated.plz")
    assert size_good > good.param_bytes  # weights plus code
    assert size_bloated - size_good > 0.9 * (bloated.param_bytes - good.param_bytes)
    assert size_bloated > 40 * size_good


def test_export_then_load_runs_the_same(tmp_path, small_convnext):
    module, exe = small_convnext
    path = tmp_path / "convnext.plz"
    size = exe.export(path)
    assert size == path.stat().st_size
    loaded = load(path)
    x = _input(1, 3, 32, 32, seed=4)
    np.testing.assert_array_equal(loaded(x)[0], exe(x)[0])
    assert loaded.param_bytes == exe.param_bytes


def test_load_rejects_other_files(tmp_path):
    import zipfile

    path = tmp_path / "other.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("plan.json", '{"format": "something else"}')
    with pytest.raises(BuildError, match="not a passlens executable"):
        load(path)


def test_an_unsupported_op_is_a_clear_error_naming_it(monkeypatch):
    from compiler.backend.lowering import LOWERINGS
    from compiler.passes.legalize_ops import EXPANSIONS

    # every op with inputs lowers now: take topk's lowering away for this test
    monkeypatch.delitem(LOWERINGS, "topk")
    monkeypatch.delitem(EXPANSIONS, "topk")
    x = Var("x", TensorType((4, 10), "float32"))
    values = Call("topk", [x], {"k": 3}, prov=Provenance(module_path="head.topk"))
    module = Module({"main": Function.from_output([x], values)})
    # legalize-ops leaves it in the graph; codegen fails on it, naming the op and the reason
    result = passes.run(module, "legalize-ops,codegen")
    assert not result.snapshots[0].failed
    failure = result.failure
    assert failure is not None and failure.pass_name == "codegen"
    message = str(failure.error)
    assert "topk was not lowered by legalize-ops" in message
    assert "cannot lower op 'topk'" in message and "head.topk" in message
    assert failure.failed_node is not None and failure.failed_node.op == "topk"
    # strict, legalize-ops fails there itself
    strict = passes.run(module, "legalize-ops{strict=true}")
    assert strict.failure.pass_name == "legalize-ops"
    assert "cannot lower op 'topk'" in str(strict.failure.error)
    with pytest.raises(PassFailed, match="cannot lower op 'topk'"):
        build(module)


def test_an_unknown_dim_is_a_clear_error_before_codegen():
    x = Var("x", TensorType((ANY, 4), "float32"))
    module = Module({"main": Function.from_output([x], Call("exp", [x]))})
    with pytest.raises(PassFailed, match=r"'\?' dim has no size"):
        build(module)


def test_inputs_are_checked():
    exe = build(models.mlp(batch=2))
    with pytest.raises(TypeError, match="expects f32"):
        exe(np.zeros((3, 784), np.float32))
    with pytest.raises(TypeError, match="takes 1 input"):
        exe()


def test_an_op_the_host_computes_takes_its_symbolic_shape_from_the_inputs():
    """``zeros(shape=[1, n, m])`` reads no buffer, so the executable computes it on the host
    with the dims its inputs bound (T5's position bias with dynamic lengths)."""
    module = parse(
        """
def @main(%x: f32[n], %y: f32[m]) -> f32[1, n, m] {
  %z: f32[1, n, m] = zeros(shape=[1, n, m], dtype=f32)
  %a: f32[n, 1] = unsqueeze(%x, axes=[1])
  %b: f32[1, n, m] = add(%z, %a)
  %c: f32[1, n, m] = add(%b, %y)
  return %c
}
"""
    )
    exe = build(module, pipeline="legalize-ops,codegen")  # as is: nothing simplifies the zeros
    x, y = np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32)
    np.testing.assert_array_equal(exe(x, y)[0], (x[:, None] + y)[None])
    np.testing.assert_array_equal(exe(x[:2], y)[0], (x[:2, None] + y)[None])


@pytest.mark.parametrize(
    "body",
    [
        # the annotation claims more elements than the input has: a kernel made from it
        # would read past the input buffer
        "%y: f32[100000] = exp(%x)\n  return %y",
        # the same inside a fused function
        "%y: f32[100000] = call @f(%x)\n  return %y",
    ],
)
def test_a_call_whose_annotation_its_inputs_do_not_give_is_never_compiled(body):
    text = f"""
def @main(%x: f32[4]) -> f32[100000] {{
  {body}
}}
def @f(%p: f32[4]) -> f32[100000] attrs {{primitive = true, private = true}} {{
  %e: f32[100000] = exp(%p)
  return %e
}}
"""
    module = parse(text, verify=False)
    with pytest.raises(PassFailed, match=r"annotated f32\[100000\] but its inputs give f32\[4\]"):
        build(module, pipeline="legalize-ops,codegen")


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("rows", [1, 16, 200])
def test_matmul_reading_a_tied_table_transposed_matches_numpy(rows, threads, monkeypatch):
    """``matmul(h, table, transpose_b=true)`` (a tied output layer): the library call reads
    the (vocab, dim) table as stored; with few rows it runs as ``(table @ h.T).T``."""
    from compiler.backend import runtime

    monkeypatch.setenv("PASSLENS_THREADS", threads)
    swapped = []
    product = runtime._transposed_product
    monkeypatch.setattr(runtime, "_transposed_product", lambda *a: swapped.append(1) or product(*a))
    rng = np.random.default_rng(0)
    table = rng.standard_normal((3000, 96)).astype(np.float32)
    text = f"""
def @main(%h: f32[{rows}, 96], %t: f32[3000, 96]) -> f32[{rows}, 3000] {{
  %y: f32[{rows}, 3000] = matmul(%h, %t, transpose_b=true)
  return %y
}}"""
    module = parse(text)
    h = rng.standard_normal((rows, 96)).astype(np.float32)
    (got,) = build(module, pipeline="legalize-ops,codegen")(h, table)
    np.testing.assert_allclose(
        got, h.astype(np.float64) @ table.T.astype(np.float64), rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(run(module, h, table)[0], got, rtol=1e-5, atol=1e-5)
    assert bool(swapped) == (rows <= 64)
