"""Values whose size only the data gives (``nonzero``, and NonZero, Compress, Unique and
NonMaxSuppression, which the ONNX frontend builds on it) compile: the host runs ``nonzero``
(a runtime builtin, like a fill), legalize-ops names its '?' dim with ``match_shape`` and
a fresh symbol, and the kernels after it take their sizes from that symbol."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from compiler import passes
from compiler.backend import build
from compiler.frontend import from_onnx
from compiler.interpret import InterpretError, run
from compiler.ir import parse, verify
from compiler.ir.verify import VerifyError
from tests.compiler.frontend.onnx_helpers import load_harness

TEXT = """
def @main(%x: f32[n, 4]) -> f32[?] {
  %nz: i64[2, ?] = nonzero(%x)
  %rows: i64[?] = take(%nz, const(i64[], 0), axis=0)
  %cols: i64[?] = take(%nz, const(i64[], 1), axis=0)
  %m: i64[?] = multiply(%rows, const(i64[], 4))
  %flat: i64[?] = add(%m, %cols)
  %xs: f32[4 * n] = reshape(%x, shape=[-1])
  %picked: f32[?] = take(%xs, %flat, axis=0)
  %out: f32[?] = multiply(%picked, const(f32[], 2))
  return %out
}
"""


def _module():
    return parse(TEXT)


@pytest.mark.parametrize("spec", ["legalize-ops,codegen", "default,legalize-ops,codegen"])
def test_a_value_selected_by_nonzero_compiles_and_matches_the_interpreter(spec):
    module = _module()
    exe = build(module, spec)
    legalized = passes.run(module, spec.replace(",codegen", "")).module
    text = str(legalized)
    assert "match_shape(" in text and "nonzero_n" in text  # the '?' named once
    assert "f32[nonzero_n]" in text  # what follows has a symbolic type
    rng = np.random.default_rng(0)
    for n in (1, 3, 5):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        x[x < 0.3] = 0  # some zeros, a different count each time
        (expected,) = run(module, x)
        (got,) = exe(x)
        assert got.shape == expected.shape == (np.count_nonzero(x),)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    (got,) = exe(np.zeros((2, 4), np.float32))  # nothing selected: an empty result
    assert got.shape == (0,)


def test_match_shape_binds_its_symbol_and_the_verifier_knows_it():
    text = """
def @main(%x: f32[3]) -> f32[k] {
  %nz: i64[1, ?] = nonzero(%x)
  %named: i64[1, k] = match_shape(%nz, shape=[1, k])
  %cols: i64[k] = take(%named, const(i64[], 0), axis=0)
  %out: f32[k] = take(%x, %cols, axis=0)
  return %out
}
"""
    m = parse(text)
    verify(m)
    (got,) = run(m, np.array([0, 5, 6], np.float32))
    np.testing.assert_array_equal(got, [5, 6])
    with pytest.raises(VerifyError, match="which no parameter's type binds"):
        parse(text.replace("match_shape(%nz, shape=[1, k])", "match_shape(%nz, shape=[1, j])"))


def test_a_value_that_does_not_fit_match_shape_is_a_clear_error():
    m = parse(
        """
def @main(%x: f32[n]) -> f32[n] {
  %y: f32[n] = match_shape(%x, shape=[n])
  return %y
}
"""
    )
    np.testing.assert_array_equal(run(m, np.ones(3, np.float32))[0], np.ones(3))
    bad = parse(
        """
def @main(%x: f32[n], %z: f32[m]) -> f32[n] {
  %y: f32[m] = match_shape(%x, shape=[m])
  return %x
}
"""
    )
    with pytest.raises(InterpretError, match="does not fit"):
        run(bad, np.ones(3, np.float32), np.ones(2, np.float32))


@pytest.fixture(scope="module")
def harness():
    return load_harness()


def test_the_node_tests_of_ops_built_on_nonzero_compile(harness):
    """NonZero, Compress, Unique and NonMaxSuppression: every node test of the four passes
    through the LLVM backend and matches its expected outputs."""
    root = harness.node_test_dir()
    prefixes = ("test_nonzero", "test_compress", "test_unique", "test_nonmaxsuppression")
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith(prefixes))
    assert len(dirs) >= 20
    problems = []
    for d in dirs:
        case = harness.load_case(d)
        module = from_onnx(onnx.load_from_string(case.model))
        inputs = [numpy_helper.to_array(t) for t in case.inputs]
        try:
            got = build(module)(*inputs)
        except Exception as e:  # noqa: BLE001 - collected, the assert names each
            problems.append(f"{d.name}: {type(e).__name__}: {e}")
            continue
        for g, t in zip(got, case.outputs, strict=True):
            e = numpy_helper.to_array(t)
            if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=1e-5):
                problems.append(f"{d.name}: {g.shape} vs {e.shape}")
    assert not problems, problems
