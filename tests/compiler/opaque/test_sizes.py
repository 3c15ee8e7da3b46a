"""Every opaque op is sized before it runs (compiler/opaque/sizes.py): an op whose output
size depends on its input values is bounded from them (or runs under a memory budget), and what
it prints never reaches the terminal raw. Each attack is a crafted IR text: the op must be
refused before it runs, naming the op and the limit; small cases still give numpy's values."""

# ruff: noqa: E501  (IR snippets keep their long lines)

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from compiler.interpret import InterpretError, run  # noqa: E402
from compiler.ir import parse  # noqa: E402
from compiler.opaque import run as opaque_run  # noqa: E402
from compiler.opaque import sizes as opaque_sizes  # noqa: E402
from compiler.opaque.sizes import OpaqueOutputWarning, escape  # noqa: E402


@pytest.fixture
def never_run(monkeypatch):
    """Fail the test if an opaque op is run for real (the size check's fake run may)."""
    real = opaque_run.captured_output

    def guard(what):
        if "sized on fake tensors" not in what:
            raise AssertionError(f"{what} was run")
        return real(what)

    monkeypatch.setattr(opaque_run, "captured_output", guard)


def _one(op_text: str, result: str = "i64[1]"):
    return parse(f"def @main() -> {result} {{\n  %a: {result} = {op_text}\n  return %a\n}}")


def _torch(inputs: str, target: str, args: str, ty: str, kwargs: str = "[]"):
    return _one(
        f'opaque({inputs}, framework="torch", target="{target}", args={args}, kwargs={kwargs}, '
        f'pure=true, type="{ty}")',
        ty,
    )


def _onnx(inputs: str, target: str, args: str, ty: str, kwargs: str = "[]", opset: int = 17):
    return _one(
        f'opaque({inputs}, framework="onnx", target="{target}", args={args}, kwargs={kwargs}, '
        f'opset={opset}, pure=true, type="{ty}")',
        ty,
    )


# ----- torch: bounds from the values ----------------------------------------------------------


def test_repeat_interleave_of_huge_repeats_is_refused_before_it_runs(never_run):
    m = _torch("const(i64[1], [8589934592])", "aten.repeat_interleave.Tensor", '["%0"]', "i64[8]")
    with pytest.raises(
        InterpretError,
        match=r"aten\.repeat_interleave\.Tensor could make up to 68,719,476,736 bytes .* limit of 4 GiB .* not run",
    ):
        run(m)[0]


def test_repeat_interleave_of_a_tensor_is_bounded_by_its_repeats(never_run):
    m = _torch(
        "const(f32[2], [1.0, 2.0]), const(i64[2], [4294967296, 1])",
        "aten.repeat_interleave.self_Tensor",
        '["%0", "%1"]',
        "f32[8]",
    )
    with pytest.raises(InterpretError, match=r"self_Tensor could make up to .* not run"):
        run(m)[0]


def test_a_tensor_given_where_a_number_is_taken_is_sized_by_its_value(never_run):
    """``arange(end)`` with ``end`` a 0-d tensor: fake tensors alone could not size it."""
    m = _torch("const(i64[], 10000000000)", "aten.arange.default", '["%0"]', "i64[8]")
    with pytest.raises(InterpretError, match=r"would give 80,000,000,000 bytes .* not run"):
        run(m)[0]


def test_a_mask_index_is_bounded_by_its_true_count():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    mask = x > 4.5
    ir = _torch(
        f"const(f32[3, 4], {x.tolist()}), const(bool[3, 4], {mask.tolist()})".replace(
            "True", "true"
        ).replace("False", "false"),
        "aten.index.Tensor",
        '["%0", ["%1"]]',
        f"f32[{mask.sum()}]",
    )
    np.testing.assert_array_equal(run(ir)[0], x[mask])


def test_small_data_dependent_ops_still_give_numpys_values():
    m = _torch("const(i64[3], [1, 2, 3])", "aten.repeat_interleave.Tensor", '["%0"]', "i64[6]")
    np.testing.assert_array_equal(run(m)[0], np.repeat(np.arange(3), [1, 2, 3]))

    m = _torch(
        "const(f32[2, 2], [[1.0, 2.0], [3.0, 4.0]]), const(i64[2], [2, 1])",
        "aten.repeat_interleave.self_Tensor",
        '["%0", "%1", 0]',
        "f32[3, 2]",
    )
    np.testing.assert_array_equal(run(m)[0], np.repeat([[1.0, 2.0], [3.0, 4.0]], [2, 1], axis=0))

    x = [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]
    m = _torch(f"const(f32[2, 3], {x})", "aten.nonzero.default", '["%0"]', "i64[3, 2]")
    np.testing.assert_array_equal(run(m)[0], np.argwhere(np.array(x)))

    v = [3, 1, 3, 2, 1, 3]
    m = _torch(
        f"const(i64[6], {v})",
        "aten._unique2.default",
        '["%0", true, true, true]',
        "(i64[3], i64[6], i64[3])",
    )
    values, inverse, counts = run(m)
    want = np.unique(np.array(v), return_inverse=True, return_counts=True)
    for got, exp in zip((values, inverse, counts), want, strict=True):
        np.testing.assert_array_equal(got, exp)

    m = _torch(
        "const(f32[4], [1.0, 2.0, 3.0, 4.0]), const(bool[4], [true, false, true, false])",
        "aten.masked_select.default",
        '["%0", "%1"]',
        "f32[2]",
    )
    np.testing.assert_array_equal(run(m)[0], [1.0, 3.0])

    m = _torch("const(i64[4], [0, 2, 2, 5])", "aten.bincount.default", '["%0"]', "i64[6]")
    np.testing.assert_array_equal(run(m)[0], np.bincount([0, 2, 2, 5]))


def test_a_value_sized_call_is_sized_again_for_other_values(never_run):
    """The sizing cache holds calls sized by their shapes only, never one sized by values."""
    small = _torch("const(i64[1], [3])", "aten.repeat_interleave.Tensor", '["%0"]', "i64[3]")
    with pytest.raises(InterpretError, match="was run"):  # sized fine, then (guarded) run
        run(small)
    huge = _torch(
        "const(i64[1], [8589934592])", "aten.repeat_interleave.Tensor", '["%0"]', "i64[3]"
    )
    with pytest.raises(InterpretError, match="could make up to"):
        run(huge)


def test_every_listed_op_torch_tags_data_dependent_has_a_bound():
    """Every op on the allowlist (what may run untrusted) whose output size torch says depends
    on the data has a bound; an unlisted one runs only when trusted, under the budget. The
    committed list, not ``dir(torch.ops.aten)``, which holds only the packets this process
    has looked up so far."""
    from compiler.opaque import allow as opaque_allow

    tags = (torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output)
    missing = []
    for target in sorted(opaque_allow.torch_allowed()):
        ns, name, overload = target.split(".")
        op = getattr(getattr(getattr(torch.ops, ns), name), overload)
        if any(t in op.tags for t in tags) and str(op) not in opaque_sizes.TORCH_BOUNDS:
            missing.append(str(op))
    assert missing == []


def test_an_unsized_op_without_a_bound_runs_under_the_budget(monkeypatch):
    """The bound taken away: the op runs under an address-space limit and fails cleanly."""
    monkeypatch.delitem(opaque_sizes.TORCH_BOUNDS, "aten.repeat_interleave.Tensor")
    monkeypatch.setattr(opaque_run, "MAX_RESULT_BYTES", 64 << 20)
    monkeypatch.setattr(opaque_sizes, "BUDGET_HEADROOM", 128 << 20)
    m = _torch("const(i64[1], [134217728])", "aten.repeat_interleave.Tensor", '["%0"]', "i64[8]")
    with pytest.raises(
        InterpretError, match=r"torch aten\.repeat_interleave\.Tensor needed more than 0\.0625 GiB"
    ):
        run(m)[0]
    # the limit is restored: the same process allocates as before
    assert torch.ones(1 << 26, dtype=torch.int64).sum() == 1 << 26


# ----- onnx: sized by shape inference with the values, or bounded -----------------------------


def test_a_float_range_is_sized_by_shape_inference(never_run):
    m = _onnx(
        "const(f32[], 0.0), const(f32[], 10000000000.0), const(f32[], 1.0)",
        "ai.onnx::Range",
        '["%0", "%1", "%2"]',
        "f32[8]",
    )
    with pytest.raises(
        InterpretError, match=r"ai\.onnx::Range would give 40,000,000,000 bytes .* not run"
    ):
        run(m)[0]


def test_constant_of_shape_of_65_dims_is_refused(never_run):
    shape = [1] * 65
    m = _onnx(f"const(i64[65], {shape})", "ai.onnx::ConstantOfShape", '["%0"]', "f32[1]")
    with pytest.raises(
        InterpretError, match=r"ConstantOfShape would give a result of 65 dims, more than 64"
    ):
        run(m)[0]


def test_a_contrib_range_is_bounded_by_its_inputs(never_run):
    m = _onnx(
        "const(f32[], 0.0), const(f32[], 10000000000.0), const(f32[], 1.0)",
        "com.microsoft::Range",
        '["%0", "%1", "%2"]',
        "f32[8]",
        opset=1,
    )
    with pytest.raises(
        InterpretError,
        match=r"com\.microsoft::Range could make up to 40,000,000,000 bytes .* not run",
    ):
        run(m)[0]


def test_a_tile_of_huge_repeats_is_refused(never_run):
    m = _onnx(
        "const(f32[2], [1.0, 2.0]), const(i64[1], [10000000000])",
        "ai.onnx::Tile",
        '["%0", "%1"]',
        "f32[8]",
    )
    with pytest.raises(InterpretError, match=r"Tile would give 80,000,000,000 bytes"):
        run(m)[0]


def test_an_unsized_onnx_op_without_a_bound_runs_under_the_budget(monkeypatch):
    monkeypatch.delitem(opaque_sizes.ONNX_BOUNDS, "com.microsoft::Range")
    monkeypatch.setattr(opaque_run, "MAX_RESULT_BYTES", 64 << 20)
    monkeypatch.setattr(opaque_sizes, "BUDGET_HEADROOM", 128 << 20)
    m = _onnx(
        "const(f32[], 0.0), const(f32[], 268435456.0), const(f32[], 1.0)",
        "com.microsoft::Range",
        '["%0", "%1", "%2"]',
        "f32[8]",
        opset=1,
    )
    with pytest.raises(InterpretError, match=r"com\.microsoft::Range needed more than 0\.0625 GiB"):
        run(m)[0]


def test_small_onnx_ops_still_give_numpys_values():
    m = _onnx(
        "const(f32[], 0.5), const(f32[], 3.0), const(f32[], 0.75)",
        "ai.onnx::Range",
        '["%0", "%1", "%2"]',
        "f32[4]",
    )
    np.testing.assert_allclose(run(m)[0], np.arange(0.5, 3.0, 0.75, dtype=np.float32))
    m = _onnx(
        "const(f32[], 0.0), const(f32[], 5.0), const(f32[], 2.0)",
        "com.microsoft::Range",
        '["%0", "%1", "%2"]',
        "f32[3]",
        opset=1,
    )
    np.testing.assert_allclose(run(m)[0], np.arange(0.0, 5.0, 2.0, dtype=np.float32))
    m = _onnx("const(i64[3], [2, 1, 3])", "ai.onnx::ConstantOfShape", '["%0"]', "f32[2, 1, 3]")
    np.testing.assert_array_equal(run(m)[0], np.zeros((2, 1, 3), np.float32))
    x = [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]
    m = _onnx(f"const(f32[2, 3], {x})", "ai.onnx::NonZero", '["%0"]', "i64[2, 3]")
    np.testing.assert_array_equal(run(m)[0], np.array(np.nonzero(np.array(x))))
    m = _onnx(
        "const(f32[5], [3.0, 1.0, 3.0, 2.0, 1.0])",
        "ai.onnx::Unique",
        '["%0"]',
        "f32[3]",
        kwargs='[["sorted", 1]]',
        opset=11,
    )
    m = parse(str(m).replace("opset=11", "opset=11, outputs=[0]"))
    np.testing.assert_array_equal(run(m)[0], [1.0, 2.0, 3.0])


# ----- what an op prints ----------------------------------------------------------------------

_LIB = None


def _printing_op():
    """A custom op that writes escape sequences to fd 1, fd 2 and sys.stdout."""
    global _LIB
    if _LIB is None:
        _LIB = torch.library.Library("passlens_sizes_test", "DEF")
        _LIB.define("noisy(Tensor x) -> Tensor")

        def noisy(x):
            os.write(1, b"\x1b]0;owned\x07fd1 \x1b[2J\n")
            os.write(2, b"\x1b[31mfd2\x1b[0m\n")
            print("\x1b[1mpython\x1b[0m")
            sys.stderr.write("\x1b[5mstderr\n")
            return x + 1

        _LIB.impl("noisy", noisy, "CPU")
        _LIB.impl("noisy", lambda x: torch.empty_like(x), "Meta")


def test_what_an_op_prints_never_reaches_the_terminal_raw(capfd):
    _printing_op()
    m = _torch("const(f32[2], [1.0, 2.0])", "passlens_sizes_test.noisy.default", '["%0"]', "f32[2]")
    from compiler.opaque import trusted_ops

    with trusted_ops(["passlens_sizes_test.noisy"]), pytest.warns(OpaqueOutputWarning) as record:
        np.testing.assert_array_equal(run(m)[0], [2.0, 3.0])  # a custom op: trusted to run
    out, err = capfd.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err
    text = " ".join(str(w.message) for w in record)
    assert "passlens_sizes_test.noisy.default printed" in text
    for part in ("fd1", "fd2", "python", "stderr", "\\x1b]0;owned\\x07"):
        assert part in text
    assert "\x1b" not in text


def test_the_escaped_text_is_cut():
    s = escape("\x1b" * 10_000, cap=100)
    assert len(s) < 200 and "\x1b" not in s and "10,000 characters" in s


def test_a_tensor_of_several_numbers_where_one_is_taken_is_the_ops_own_error(never_run):
    m = _torch("const(i64[2], [3, 4])", "aten.arange.default", '["%0"]', "i64[3]")
    with pytest.raises(InterpretError, match=r"torch aten\.arange\.default failed"):
        run(m)


def test_a_one_hot_of_a_float_depth_and_a_resize_of_float_scales_are_sized(never_run):
    m = _onnx(
        "const(i64[3], [0, 1, 2]), const(f32[], 1000000000.0), const(f32[2], [0.0, 1.0])",
        "ai.onnx::OneHot",
        '["%0", "%1", "%2"]',
        "f32[3, 8]",
    )
    with pytest.raises(InterpretError, match=r"OneHot would give 12,000,000,000 bytes .* not run"):
        run(m)
    m = _onnx(
        "const(f32[1, 1, 2, 2], [[[[1.0, 2.0], [3.0, 4.0]]]]), const(f32[0], []), "
        "const(f32[4], [1.0, 1.0, 100000.0, 100000.0])",
        "ai.onnx::Resize",
        '["%0", "%1", "%2"]',
        "f32[1, 1, 8, 8]",
    )
    with pytest.raises(InterpretError, match=r"Resize would give 160,000,000,000 bytes .* not run"):
        run(m)
