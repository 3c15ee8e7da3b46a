"""A source MLIR module is pure computation or it is refused (explorer.iree.gate), before
iree-compile reads it: MLIR that would make iree-compile read a file of the machine into the
executable (`hal.executable.objects`, `#hal.executable.object<{path = ...}>`), machine code
(`llvm.inline_asm`), an external function the runtime would resolve, devices' and the VM's types,
a transform script, is one IREEError through the API and one line (exit 2) through the CLI.
Skipped when passlens[iree] is not installed."""

from __future__ import annotations

import pytest

pytest.importorskip("iree.compiler")

import explorer  # noqa: E402
from compiler import PasslensError  # noqa: E402
from explorer.iree.convert import IREEError, parse_module  # noqa: E402
from explorer.iree.gate import check_source  # noqa: E402
from tests.passlens.test_cli import assert_one_line_error, run  # noqa: E402

ID = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"

CRAFTED = {
    "a file linked into the executable": (
        'module attributes {hal.executable.objects = [#hal.executable.object<{path = "SECRET"}>]}'
        " { " + ID + " }",
        "hal.executable.objects",
    ),
    "an object attribute on a function": (
        ID.replace(
            "{ return",
            'attributes {x = #hal.executable.object<{path = "SECRET"}>} { return',
        ),
        "'hal' attribute",
    ),
    "machine code": (
        'func.func @f(%a: i32) -> i32 { %0 = llvm.inline_asm "nop", "=r,r" %a : (i32) -> i32\n'
        " return %0 : i32 }",
        "'llvm' dialect",
    ),
    "an external function": (
        "func.func private @system(i32) -> i32\n"
        "func.func @f(%a: i32) -> i32 { %0 = func.call @system(%a) : (i32) -> i32\n"
        " return %0 : i32 }",
        "without a body",
    ),
    "an external util function": ("util.func private @ext(%a: i32) -> i32", "without a body"),
    "a device type": (
        "func.func @f(%a: !hal.buffer_view) -> !hal.buffer_view { return %a : !hal.buffer_view }",
        "'hal' attribute",
    ),
    "memory of its own": (
        "func.func @f() { %0 = memref.alloc() : memref<4xf32>\n return }",
        "'memref' dialect",
    ),
    "a transform script": (
        "module attributes {transform.with_named_sequence} { transform.named_sequence "
        "@__transform_main(%arg0: !transform.any_op {transform.readonly}) { transform.yield } }",
        "transform.with_named_sequence",
    ),
    "a nested op of a denied dialect": (
        "func.func @f(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {\n"
        "  %0 = scf.if %c -> tensor<4xf32> {\n"
        '    %1 = llvm.inline_asm "nop", "=r" : () -> i32\n'
        "    scf.yield %a : tensor<4xf32>\n"
        "  } else { scf.yield %a : tensor<4xf32> }\n"
        "  return %0 : tensor<4xf32> }",
        "llvm.inline_asm",
    ),
}


@pytest.fixture
def no_compile(monkeypatch):
    import explorer.iree.record as record

    def refuse(*a, **k):  # the gate must refuse before iree-compile runs
        raise AssertionError("iree-compile ran on a refused source")

    monkeypatch.setattr(record, "run_compile", refuse)


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_a_source_that_is_not_pure_computation_is_refused_before_iree_compile(
    name, tmp_path, no_compile
):
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's secret")
    text, match = CRAFTED[name]
    text = text.replace("SECRET", str(secret))
    with pytest.raises(IREEError, match="the source MLIR is refused") as info:
        explorer.explore(text, compiler="iree", pipeline="input", progress=False)
    assert match in str(info.value) and isinstance(info.value, PasslensError)
    path = tmp_path / "crafted.mlir"  # a file too
    path.write_text(text)
    with pytest.raises(IREEError, match=match):
        explorer.explore(str(path), compiler="iree", pipeline="input", progress=False)


def test_the_cli_refuses_it_in_one_line(capsys, tmp_path, no_compile):
    path = tmp_path / "crafted.mlir"
    path.write_text(CRAFTED["a file linked into the executable"][0].replace("SECRET", "/etc/x"))
    code, out, err = run(capsys, "explore", path, "--compiler", "iree", "--pipeline", "input")
    assert code == 2
    assert_one_line_error(err, "the source MLIR is refused", "hal.executable.objects")


def test_computation_passes_the_gate():
    for text in (
        "func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = arith.addf %a, %b : tensor<4xf32>\n  %1 = math.exp %0 : tensor<4xf32>\n"
        "  return %1 : tensor<4xf32> }",
        "util.global private @w = dense<1.0> : tensor<4xf32>\n"
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %w = util.global.load @w : tensor<4xf32>\n"
        "  %0 = arith.mulf %a, %w : tensor<4xf32>\n  return %0 : tensor<4xf32> }",
    ):
        _, module = parse_module(text)
        check_source(module)  # no error
