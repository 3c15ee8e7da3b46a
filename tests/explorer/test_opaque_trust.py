"""A checked trace runs nothing it names but pure computations (issue 39): an opaque op that is
not on passlens's allowlist is refused, before anything runs, at trace.check, report.reduce,
``passlens explore x.ir --check``, ``passlens reduce`` and ``passlens export --check``, with
one error naming the op and how to trust it; opening and viewing such a file still works. A
model explored live from one's own torch code runs its own custom ops; saved and loaded, they
are refused until trusted again."""

# ruff: noqa: E501  (IR snippets keep their long lines)

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
import torch

import explorer
from compiler.ir import Call
from compiler.opaque import OpaqueOpError
from compiler.opaque import run as opaque_run
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from explorer.store import load
from passlens.cli import EXIT_ERROR, main
from tests.explorer.store.test_store import rewrite_member


@torch.library.custom_op("passlens_trust_test::shift", mutates_args=())
def shift(x: torch.Tensor, k: float) -> torch.Tensor:
    return x + k


@shift.register_fake
def _(x, k):
    return torch.empty_like(x)


class UsesShift(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.ops.passlens_trust_test.shift(self.lin(x), 0.5).relu()


SHIFT = "passlens_trust_test.shift.default"


def _no_lookup(monkeypatch):
    def refuse(target):
        raise AssertionError(f"{target} was looked up")

    monkeypatch.setattr(opaque_run, "resolve_torch_op", refuse)


# ----- crafted files ---------------------------------------------------------------------------


def _from_file(notes) -> str:
    return f"""
def @main(%x: u8[64]) -> u8[64] {{
  %a: u8[64] = opaque(%x, framework="torch", target="aten.from_file.out", args=["{notes}", true, 64], kwargs=[["out", "%0"]], pure=true, type="u8[64]")
  %b: u8[64] = bitwise_not(%a)
  return %b
}}"""


@pytest.fixture
def notes(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"private notes")
    return path


def test_check_refuses_from_file_once_and_the_file_is_untouched(notes, monkeypatch):
    trace = explorer.explore(_from_file(notes))  # opening it runs nothing
    assert "aten.from_file.out x1 (run by torch)" in trace.summary_text()
    _no_lookup(monkeypatch)
    with pytest.raises(OpaqueOpError) as e:
        trace.check((np.zeros(64, np.uint8),))
    message = str(e.value)
    assert message.count("aten.from_file.out") >= 2  # named, and in the way to trust it
    assert "trust_ops=['aten.from_file.out']" in message
    assert "--trust-op aten.from_file.out" in message
    assert "\n" not in message  # one line
    assert notes.read_bytes() == b"private notes"


def test_a_trace_file_holding_it_opens_and_views_but_its_check_and_reduce_refuse(
    notes, tmp_path, monkeypatch
):
    path = tmp_path / "attack.passlens"
    explorer.explore(_from_file(notes)).save(path)
    _no_lookup(monkeypatch)
    trace = load(path)
    assert "aten.from_file.out" in trace.summary_text()
    trace.to_html(tmp_path / "attack.html")  # viewing runs nothing
    with pytest.raises(OpaqueOpError, match="refused to run opaque op aten.from_file.out"):
        trace.check()
    assert notes.read_bytes() == b"private notes"


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """A harmless checked trace with its report and inputs, whose opaque op a test rewrites."""
    text = """
def @main(%x: f32[2, 3]) -> f32[2, 3] {
  %c: f32[2, 3] = opaque(%x, framework="torch", target="aten.cumsum.default", args=["%0", 1], pure=true, type="f32[2, 3]")
  %d: f32[2, 3] = exp(%c)
  return %d
}"""
    trace = explorer.explore(text, pipeline="default")
    trace.check((np.ones((2, 3), np.float32),))
    path = tmp_path_factory.mktemp("trust") / "checked.passlens"
    trace.save(path, inputs=True)
    return path


def _hostile(checked, tmp_path, target: str):
    import zipfile

    path = tmp_path / "hostile.passlens"
    path.write_bytes(checked.read_bytes())
    with zipfile.ZipFile(path) as zf:
        ir = zf.read("ir.json")
    assert b"aten.cumsum.default" in ir
    rewrite_member(path, "ir.json", ir.replace(b"aten.cumsum.default", target.encode()))
    return path


ATTACKS = [
    "aten.from_file.out",
    "inductor._alloc_from_pool.default",
    "inductor._reinterpret_tensor.default",
    "aten._print.default",
    "aten.set_.source_Storage",
]


@pytest.mark.parametrize("target", ATTACKS)
def test_a_loaded_reports_reduce_refuses_before_anything_runs(
    target, checked, tmp_path, monkeypatch
):
    trace = load(_hostile(checked, tmp_path, target))
    assert trace.report is not None  # the saved report: reduce could start from it
    _no_lookup(monkeypatch)
    with pytest.raises(OpaqueOpError, match=f"refused to run opaque op {target}"):
        trace.report.reduce(progress=False)
    with pytest.raises(OpaqueOpError, match=f"refused to run opaque op {target}"):
        trace.check(trace.report.inputs)


@pytest.mark.parametrize("target", ATTACKS)
def test_the_cli_refuses_it_at_reduce_and_export_check_naming_the_op(
    target, checked, tmp_path, monkeypatch, capsys
):
    path = _hostile(checked, tmp_path, target)
    _no_lookup(monkeypatch)
    for argv in (
        ["reduce", str(path), "--out", str(tmp_path / "small"), "--budget", "5"],
        ["export", str(path), "--check", "--out", str(tmp_path / "graph.json")],
    ):
        assert main(argv) == EXIT_ERROR, argv
        err = capsys.readouterr().err
        assert f"passlens: error: refused to run opaque op {target}" in err, argv
        assert f"--trust-op {target}" in err and "Error:" not in err
    assert not (tmp_path / "small").exists() and not (tmp_path / "graph.json").exists()
    assert main(["show", str(path)]) == 0  # showing it still works
    assert target in capsys.readouterr().out


def test_explore_check_of_an_ir_file_refuses_it_and_trust_op_allows_it(
    notes, tmp_path, monkeypatch, capsys
):
    ir = tmp_path / "attack.ir"
    ir.write_text(_from_file(notes))
    with monkeypatch.context() as m:
        _no_lookup(m)
        assert (
            main(["explore", str(ir), "--check", "--save", str(tmp_path / "t.passlens")])
            == EXIT_ERROR
        )
        err = capsys.readouterr().err
        assert "passlens: error: refused to run opaque op aten.from_file.out" in err
        assert notes.read_bytes() == b"private notes"
    assert (tmp_path / "t.passlens").exists()  # the trace is kept when its check cannot run
    # a person who trusts a file names each op it may run (here a harmless custom op)
    shifted = tmp_path / "shift.ir"
    shifted.write_text(SHIFT_IR)
    assert main(["explore", str(shifted), "--check"]) == EXIT_ERROR
    assert f"refused to run opaque op {SHIFT}" in capsys.readouterr().err
    assert (
        main(["explore", str(shifted), "--check", "--trust-op", "passlens_trust_test.shift"]) == 0
    )
    assert "check ok" in capsys.readouterr().out


SHIFT_IR = """
def @main(%x: f32[2, 4]) -> f32[2, 4] {
  %s: f32[2, 4] = opaque(%x, framework="torch", target="passlens_trust_test.shift.default", args=["%0", 0.5], pure=true, type="f32[2, 4]")
  %r: f32[2, 4] = relu(%s)
  return %r
}"""


def test_a_bad_trust_op_name_is_a_usage_error(tmp_path, capsys):
    ir = tmp_path / "shift.ir"
    ir.write_text(SHIFT_IR)
    assert main(["explore", str(ir), "--check", "--trust-op", "os.system; rm"]) == EXIT_ERROR
    assert "is not an op name" in capsys.readouterr().err


# ----- live models -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def live():
    torch.manual_seed(0)
    model, x = UsesShift().eval(), torch.randn(2, 4)
    return explorer.explore(model, (x,), pipeline="default,legalize-ops,codegen"), x


def test_a_live_models_own_custom_op_runs(live):
    trace, x = live
    assert trace.trusted_ops == {SHIFT}
    report = trace.check((x,))
    assert report.ok, report
    (got,) = trace["codegen"].executable()(x.numpy())  # the compiled code calls it too
    with torch.no_grad():
        np.testing.assert_allclose(got, trace.source["model"](x).numpy(), rtol=1e-5, atol=1e-6)


def test_saved_and_loaded_it_is_refused_until_trusted(live, tmp_path):
    trace, x = live
    path = tmp_path / "live.passlens"
    trace.save(path)
    loaded = load(path)
    assert loaded.trusted_ops == frozenset()  # the trust is never in the file
    with pytest.raises(OpaqueOpError) as e:
        loaded.check((x.numpy(),))
    assert f"refused to run opaque op {SHIFT}" in str(e.value)
    assert f"trust_ops=['{SHIFT}']" in str(e.value)
    assert loaded.check((x.numpy(),), trust_ops=["passlens_trust_test.shift"]).ok
    again = load(path, trust_ops=[SHIFT])
    assert again.check((x.numpy(),)).ok
    with pytest.raises(ValueError, match="not an op name"):
        load(path, trust_ops=["no such op"])


def test_an_ir_text_or_onnx_source_trusts_nothing_of_its_own():
    assert explorer.explore(SHIFT_IR).trusted_ops == frozenset()


def test_reduce_runs_a_trusted_op_and_the_reduction_keeps_trusting_it(tmp_path):
    text = """
def @main(%x: f32[2, 4], %z: f32[2, 4]) -> f32[2, 4] {
  %s: f32[2, 4] = opaque(%x, framework="torch", target="passlens_trust_test.shift.default", args=["%0", 0.5], pure=true, type="f32[2, 4]")
  %a: f32[2, 4] = add(%s, %z)
  return %a
}"""
    trace = explorer.explore(text, pipeline="test-trust-flip-add-of-opaque")
    with pytest.raises(OpaqueOpError, match="refused"):
        trace.check()
    report = trace.check(trust_ops=["passlens_trust_test.shift"])
    assert report.first_failure.kind == "diverged"
    with pytest.raises(OpaqueOpError, match="refused"):
        report.reduce(progress=False)  # the check's trust is not the reduction's
    small = report.reduce(progress=False, trust_ops=["passlens_trust_test.shift"])
    assert small.reproduced.kind == "diverged"
    assert "opaque(" in small.ir  # the finding needs the op: the reduction keeps trusting it
    assert small.trace.trusted_ops >= {SHIFT}
    assert f"TRUST_OPS = {[SHIFT]!r}" in small.test_source
    assert small.trace.check().first_failure.kind == "diverged"


@register_pass
@dataclass(frozen=True)
class _FlipAddOfOpaque(Pass):
    """A deliberately wrong pass: an add of an opaque op's value becomes a subtract (so a
    reduction must keep the opaque op)."""

    name: ClassVar[str] = "test-trust-flip-add-of-opaque"

    def transform(self, module, ctx):
        def rule(node):
            if isinstance(node, Call) and node.op == "add":
                if any(getattr(a, "op", None) == "opaque" for a in node.args):
                    return Call("subtract", node.args)
            return None

        return rewrite_module(module, lambda name, fn: rule, self.name)


def test_the_summary_says_which_ops_a_check_runs_only_when_trusted(live):
    text = explorer.explore(SHIFT_IR).summary_text()
    assert f"run only when trusted: {SHIFT}" in text
    assert "run only when trusted" not in live[0].summary_text()  # its own op: trusted
    cumsum = SHIFT_IR.replace(SHIFT, "aten.cumsum.default").replace('"%0", 0.5', '"%0", 1')
    assert "run only when trusted" not in explorer.explore(cumsum).summary_text()
