"""An executable owns its kernels (issue 33): no table of kernels for the whole process. A
legalized module holds the kernels it calls; each executable loads their code into an engine
of its own, so two executables share no machine code, and freeing one (with its modules)
frees its kernels while the other still runs."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import compiler.backend as backend
from compiler import PasslensError, passes
from compiler.backend import KernelSet, build, kernel_calls, module_kernels
from compiler.interpret import InterpretError, run
from compiler.ir import parse

TANH = """
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = tanh(%x)
  %b: f32[4, 8] = add(%a, %x)
  return %b
}
"""

RELU = """
def @main(%x: f32[4, 8]) -> f32[4, 8] {
  %a: f32[4, 8] = relu(%x)
  %b: f32[4, 8] = multiply(%a, %x)
  return %b
}
"""

X = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)


def _lowered(exe):
    return next(s.module for s in exe.result.snapshots if s.pass_name == "legalize-ops")


def test_there_is_no_kernel_table_for_the_process():
    assert not hasattr(backend, "kernel_table")
    assert not hasattr(backend, "is_registered")


def test_a_legalized_module_holds_exactly_the_kernels_it_calls():
    lowered = passes.run(parse(TANH), "legalize-ops", raise_on_failure=True).module
    held = module_kernels(lowered)
    assert isinstance(held, KernelSet)
    assert list(held) == list(kernel_calls(lowered)) and len(held) == 2
    # the modules after it share the set (so its code is compiled once per run)
    compiled = passes.run(lowered, "codegen", raise_on_failure=True).module
    assert module_kernels(compiled) is held
    assert all(held.is_compiled(name) for name in held)
    # a module not lowered holds none
    assert len(module_kernels(parse(TANH))) == 0


def test_two_executables_share_no_kernels():
    a, b = build(parse(TANH)), build(parse(RELU))
    held_a, held_b = module_kernels(_lowered(a)), module_kernels(_lowered(b))
    assert set(held_a).isdisjoint(held_b)  # building b added nothing to a's module
    assert set(a.kernels) == set(held_a) and set(b.kernels) == set(held_b)
    assert a._jit is not b._jit
    assert all(k.owner is a._jit for k in a.kernels.values())
    # the same model built twice: equal kernels by name, each build with its own code
    again = build(parse(TANH))
    assert set(again.kernels) == set(a.kernels)
    assert again._jit is not a._jit
    assert all(again.kernels[n] is not a.kernels[n] for n in a.kernels)
    np.testing.assert_allclose(a(X)[0], np.tanh(X) + X, rtol=1e-6)
    np.testing.assert_allclose(b(X)[0], np.maximum(X, 0) * X, rtol=1e-6)


def test_freeing_an_executable_frees_its_kernels_and_leaves_the_others_running():
    keep = build(parse(TANH))
    gone = build(parse(TANH))
    code = weakref.ref(gone._jit)
    kernels = weakref.ref(module_kernels(_lowered(gone)))
    del gone
    gc.collect()
    assert code() is None, "the executable's machine code outlived it"
    assert kernels() is None, "the module's kernels outlived the executable that held them"
    np.testing.assert_allclose(keep(X)[0], np.tanh(X) + X, rtol=1e-6)


def test_the_interpreter_runs_a_kernel_call_with_its_modules_kernel():
    lowered = passes.run(parse(TANH), "legalize-ops", raise_on_failure=True).module
    np.testing.assert_allclose(run(lowered, X)[0], np.tanh(X) + X, rtol=1e-6)
    # the text names the kernels but cannot hold them: parsed back, the module has none
    with pytest.raises(InterpretError, match="run legalize-ops on the module again"):
        run(parse(str(lowered)), X)
    with pytest.raises(PasslensError, match="run legalize-ops on the module again"):
        build(parse(str(lowered)))


def test_a_build_uses_the_code_codegen_made_at_its_level():
    spec = "legalize-ops,codegen{opt_level=1}"
    compiled = passes.run(parse(TANH), spec, raise_on_failure=True).module
    held = module_kernels(compiled)
    exe = build(compiled)
    assert all(held.is_compiled(n, 1) and not held.is_compiled(n, 3) for n in held)
    np.testing.assert_allclose(exe(X)[0], np.tanh(X) + X, rtol=1e-6)
