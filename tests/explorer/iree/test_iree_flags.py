"""The iree-compile flags a recording takes (``explore(..., compiler="iree", flags=[...])``),
checked in one place for the API and the command (explorer.iree.flags): ``--name[=value]``
texts of ``--iree-...`` options, refused with one IREEError when they would write or read a
file, load a library, run a program or undo what the recording sets; every option of the
installed iree-compile whose help says it takes a path, a file or a command is refused."""

from __future__ import annotations

import re
import subprocess

import pytest

import explorer
from compiler import PasslensError
from explorer.iree.convert import IREEError
from explorer.iree.flags import MAX_FLAG_CHARS, MAX_FLAGS, check_flags

ACCEPTED = [
    "--iree-opt-const-eval=false",
    "--iree-llvmcpu-target-cpu=host",
    "--iree-global-opt-demote-contraction-inputs-type=bf16",
    "--iree-opt-level=O2",
    "--iree-dispatch-creation-enable-aggressive-fusion",
    "--iree-input-type=torch",
    "--iree-llvmcpu-link-ukernel-bitcode=false",  # the ukernels shipped with IREE
    "--iree-preprocessing-pass-pipeline=builtin.module(util.func("
    "iree-preprocessing-convert-conv2d-to-img2col))",  # 'to' inside a pass name
    "--mlir-elide-elementsattrs-if-larger=16",
]


def test_ordinary_flags_pass_as_given():
    assert check_flags(ACCEPTED) == ACCEPTED
    assert check_flags("--iree-opt-const-eval=false") == ["--iree-opt-const-eval=false"]
    assert check_flags(None) == [] and check_flags(()) == []


@pytest.mark.parametrize(
    "flag, why",
    [
        ("-o /etc/passwd", "'--name' or '--name=value'"),
        ("-o", "'--name' or '--name=value'"),
        ("@/etc/flags.rsp", "'--name' or '--name=value'"),  # an LLVM response file
        ("--IREE-OPT-CONST-EVAL", "lower-case name"),
        ("--o=/tmp/x", "only --iree-... options"),
        ("--output-format=vm-c", "only --iree-... options"),
        ("--pass-remarks-output=/tmp/x", "only --iree-... options"),
        ("--load-pass-plugin=x.so", "only --iree-... options"),
        ("--mlir-print-ir-tree-dir=/tmp/x", "the recording sets it"),
        ("--mlir-print-ir-after-all=false", "the recording sets it"),
        ("--compile-to=vm", "the recording sets it"),
        ("--compile-from=flow", "the recording sets it"),
        ("--iree-hal-target-device=vulkan", "the recording sets it"),
        ("--iree-hal-local-target-device-backends=vmvx", "the recording sets it"),
        ("--iree-llvmcpu-target-triple=wasm32-unknown-unknown", "the recording sets it"),
        ("--iree-hal-dump-executable-files-to=/tmp/x", "its name has 'dump'"),
        ("--iree-llvmcpu-system-linker-path=/bin/sh", "its name has 'linker'"),
        ("--iree-llvmcpu-link-embedded=false", "its name has 'link-embedded'"),  # system ld
        ("--iree-hal-preprocess-executables-with=sh -c id", "preprocess-executables"),
        ("--iree-load-plugin=/tmp/x.so", "its name has 'plugin'"),
        ("--iree-parameter-import=/etc/x.irpa", "parameter-import"),
        ("--iree-opt-splat-parameters=/tmp/x.irpa", "splat-parameters"),
        ("--iree-hal-substitute-executable-object=e=/tmp/x.o", "substitute"),
        ("--iree-codegen-transform-dialect-library=/tmp/x.mlir", "library"),
        ("--iree-vm-bytecode-source-listing=/tmp/x.mlir", "listing"),
        ("--iree-util-hoist-into-globals-print-constexpr-dotgraph-to=/tmp/x", "has 'to'"),
        (
            "--iree-preprocessing-pass-pipeline=builtin.module(iree-util-dump-module{path=/x})",
            "its value names 'dump'",
        ),
        ("--iree-preprocessing-pass-pipeline=builtin.module(view-op-graph)", "names 'view'"),
        ("--iree-opt-const-eval=false\n--o=/tmp/x", "control character"),
        ("--iree-opt-const-eval=\x00", "control character"),
        ("--iree-x=" + "a" * MAX_FLAG_CHARS, "characters, over"),
        (3, "'--name' or '--name=value' text"),
    ],
)
def test_a_flag_is_refused_with_one_passlens_error_saying_why(flag, why):
    with pytest.raises(IREEError) as info:
        check_flags(["--iree-opt-const-eval=false", flag])
    assert isinstance(info.value, PasslensError) and isinstance(info.value, ValueError)
    assert "refused" in str(info.value) and why in str(info.value)


def test_too_many_flags_are_refused():
    with pytest.raises(IREEError, match=f"more than {MAX_FLAGS}"):
        check_flags(["--iree-opt-const-eval=false"] * (MAX_FLAGS + 1))


def test_explore_refuses_a_flag_before_anything_is_imported_or_compiled(monkeypatch, tmp_path):
    pytest.importorskip("iree.compiler")
    import explorer.iree.record as record

    def never(*a, **k):
        raise AssertionError("ran")

    monkeypatch.setattr(record, "run_compile", never)
    monkeypatch.setattr(record, "import_source", never)
    flag = f"--iree-hal-dump-executable-sources-to={tmp_path / 'dumps'}"
    with pytest.raises(IREEError, match="refused: its name has 'dump'"):
        explorer.explore("func.func @f() { return }", compiler="iree", flags=[flag])
    assert not (tmp_path / "dumps").exists()


def test_every_option_of_iree_compile_taking_a_path_file_or_command_is_refused():
    """Read from the installed iree-compile's own help: an option whose value is a string or
    a path and whose help names a file, path, directory, command or tool."""
    pytest.importorskip("iree.compiler")
    from explorer.iree.record import iree_compile_path

    help_text = subprocess.run(
        [iree_compile_path(), "--help-list-hidden"], capture_output=True, text=True, timeout=120
    ).stdout
    options = re.findall(r"^\s+--(iree-[a-z0-9._-]+)=<(?:string|path)>\s+- (.*)$", help_text, re.M)
    assert len(options) > 50  # the help was read
    risky = [
        name
        for name, text in options
        if re.search(r"file|path|director|command|tool|write", text, re.I)
    ]
    assert len(risky) > 20
    passed = []
    for name in risky:
        try:
            check_flags([f"--{name}=x"])
            passed.append(name)
        except IREEError:
            pass
    assert passed == []
