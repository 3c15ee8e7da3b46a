"""The check's verdict judged the way float32 rounds (explorer/check/judge.py): values beyond the
tolerance are judged against a float64 run of the source, so float32 summation order on a
real-width model is not a divergence, while a pass that changes one layer by 1e-3 is."""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

import explorer
from compiler import models
from compiler.ir import Call, Constant
from compiler.passes import Pass, register_pass
from compiler.passes.infra.rewrite import rewrite_module
from explorer.check.judge import FLOAT64_MULTIPLIER, judge_float64
from tests.explorer.check.test_check import kinds

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

LAYER = "model.layers.0.mlp.down_proj"


@register_pass
@dataclass(frozen=True)
class _ScaleLayer(Pass):
    """A wrong pass: the output of the linear of source layer ``layer`` times ``scale``."""

    name: ClassVar[str] = "test-check-scale-layer"
    layer: str = LAYER
    scale: float = 1.001

    def transform(self, module, ctx):
        done = []

        def rule(node):
            if (
                not done
                and isinstance(node, Call)
                and node.op in ("linear", "matmul")
                and node.prov.module_path == self.layer
            ):
                done.append(node)
                return Call("multiply", [node, Constant(np.float32(self.scale))])
            return None

        return rewrite_module(module, lambda name, fn: rule)


@pytest.fixture(scope="module")
def wide():
    """A decoder of Llama-3.2-1B's width (hidden 2048, 32 heads, 8 kv heads) with one layer,
    a small vocabulary and random weights, explored through the default pipeline."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        hidden_size=2048,
        num_hidden_layers=1,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=4096,
        vocab_size=256,
        max_position_embeddings=64,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(cfg).eval()
    model.config.use_cache = False
    ids = torch.randint(0, 256, (1, 16))
    spec = f"test-check-scale-layer{{layer={LAYER}}},default"
    return explorer.explore(model, (ids,)), explorer.explore(model, (ids,), pipeline=spec)


@pytest.fixture(scope="module")
def scaled_report(wide):
    return wide[1].check(progress=False)


def test_float32_rounding_on_a_real_width_decoder_is_not_a_divergence(wide, monkeypatch):
    trace, _ = wide
    report = trace.check(progress=False)
    assert "diverged" not in kinds(report)
    # torch's fused attention gives the import eager's very bits: nothing beyond any tolerance
    assert all(c.max_abs == 0.0 for c in report.steps if c.max_abs is not None)
    # attention op by op (as numpy's kernels, or decompose-ops, compute it) rounds otherwise:
    # at a tolerance that float32 summation order exceeds, the float64 run judges: no bug
    from compiler import torch_kernels

    monkeypatch.setattr(torch_kernels, "_fused_attention", lambda *a: None)
    report = trace.check(rtol=1e-7, atol=1e-9, progress=False)
    assert "diverged" not in kinds(report)
    judged = [c for c in report.steps if c.rule == "float64"]
    assert judged and all(c.status == "ok" for c in judged)
    assert "float64" in {r["rule"] for r in report.rows()}
    m = report.error_map()
    assert (m.tolerance > 1).any() and not m.over.any()  # beyond the tolerance, not wrong
    assert m.rule(*np.argwhere(m.tolerance > 1)[0]) == "float64"


def test_a_pass_changing_one_layer_by_1e_3_is_caught_at_its_step(scaled_report):
    report = scaled_report
    assert kinds(report) == ["diverged"]
    finding = report.first_failure
    assert finding.step.name == "test-check-scale-layer"
    assert finding.details["rule"] == "float64"
    share = finding.details["float64"]["share"]
    assert share > 10  # far beyond float32 rounding
    assert "judged against float64" in finding.message and LAYER in finding.message
    m = report.error_map()
    assert m.first_layer == LAYER and m.rule(m.row(m.first_step), m.column(LAYER)) == "float64"
    row = {r["step"]: r for r in report.rows()}[finding.step.index]
    assert row["status"] == "diverged" and row["rule"] == "float64"


def test_a_report_keeps_its_rules_through_save_and_load(wide, scaled_report, tmp_path):
    trace, report = wide[1], scaled_report
    trace.save(tmp_path / "t.passlens")  # with its last report
    loaded = explorer.load(tmp_path / "t.passlens").report
    assert [r["rule"] for r in loaded.rows()] == [r["rule"] for r in report.rows()]
    assert loaded.first_failure.details["rule"] == "float64"
    assert loaded.error_map().first_layer == LAYER


def test_a_float16_step_is_judged_by_the_tolerance():
    """float32's rounding says nothing of float16's: the float64 rule does not excuse it."""
    trace = explorer.explore(
        models.mlp((32, 64, 16), batch=4, seed=2), pipeline="convert-dtype{dtype=float16}"
    )
    report = trace.check(progress=False)
    assert kinds(report) == ["diverged"] and report.first_failure.details["rule"] == "tolerance"
    assert "judged by the tolerance" in report.first_failure.message
    x = np.ones(8, np.float32)
    assert judge_float64(x.astype(np.float16), x, x.astype(np.float64), 1e-5) is None


def test_the_float64_rule_and_its_allowance():
    ref64 = np.linspace(-1, 1, 101)
    ref32 = (ref64 + 1e-7).astype(np.float32)  # eager: 1e-7 from float64
    close = (ref64 + 2e-7).astype(np.float32)
    far = (ref64 * 1.001).astype(np.float32)
    ok = judge_float64(close, ref32, ref64, atol=0.0)
    assert ok is not None and not ok.wrong and ok.share <= 1
    bad = judge_float64(far, ref32, ref64, atol=0.0)
    assert bad.wrong and bad.error > FLOAT64_MULTIPLIER * bad.reference_error
    nan = far.copy()
    nan[3] = np.nan
    assert judge_float64(nan, ref32, ref64, atol=0.0).wrong


def test_an_onnx_source_is_judged_against_onnxruntime_in_float64():
    pytest.importorskip("onnxruntime")
    from compiler.frontend import to_onnx

    proto = to_onnx(models.mlp((256, 512, 16), batch=4, seed=2, activation="relu"))
    trace = explorer.explore(proto)
    report = trace.check(rtol=1e-9, atol=1e-12, progress=False)  # rounding exceeds this
    assert "diverged" not in kinds(report)
    assert any(c.rule == "float64" for c in report.steps)
    # onnxruntime has no float64 Erf: onnx's numpy reference evaluator runs the cast model
    proto = to_onnx(models.mlp((256, 512, 16), batch=4, seed=2, activation="gelu"))
    report = explorer.explore(proto).check(rtol=1e-9, atol=1e-12, progress=False)
    assert "diverged" not in kinds(report)
    assert any(c.rule == "float64" for c in report.steps)
    assert any("onnx.reference" in n for n in report.notes)


def test_a_float64_run_that_fails_leaves_the_tolerance_to_judge_and_says_why():
    from explorer.check.judge import Float64Reference, failure_note

    def broken():
        raise RuntimeError("no float64 kernel for Foo")

    ref = Float64Reference(broken, "a run")
    assert not ref.available and ref.output(0) is None and "Foo" in ref.failure
    notes: list[str] = []
    failure_note(ref, notes)
    failure_note(ref, notes)  # said once
    assert len(notes) == 1 and "the tolerance alone judged" in notes[0]
    x = np.ones((4, 4), np.float32)
    from explorer.check.numbers import judge_outputs

    cmp = judge_outputs((x * 1.5,), (x,), ref, 1e-4, 1e-5)
    assert cmp.diverged and cmp.rule == "tolerance"


# ----- issue 39: the rule on NaN, infinities and several outputs; the message; the linear -------
REF64 = np.linspace(-1, 1, 101)
REF32 = (REF64 + 1e-7).astype(np.float32)  # eager: 1e-7 from float64
CLOSE = (REF64 + 2e-7).astype(np.float32)  # as near float64 as eager: agrees
FAR = (REF64 * 1.001).astype(np.float32)  # 1e-3 off: wrong


def _at3(a, value):
    a = np.array(a, copy=True)
    a[3] = value
    return a


NAN, INF = float("nan"), float("inf")
# (value, float32 reference, float64 run) -> "wrong", "agrees", or None: the rule does not
# apply (the reference or the float64 run not finite where the other is: no bound), and the
# tolerance judges
FLOAT64_CASES = {
    "a NaN where float64 has a number": (_at3(CLOSE, NAN), REF32, REF64, "wrong"),
    "NaN where the reference and float64 are NaN": (
        _at3(CLOSE, NAN),
        _at3(REF32, NAN),
        _at3(REF64, NAN),
        "agrees",
    ),
    "a NaN reference where float64 has a number": (CLOSE, _at3(REF32, NAN), REF64, None),
    "+inf where float64 has a number": (_at3(CLOSE, INF), REF32, REF64, "wrong"),
    "-inf where float64 has a number": (_at3(CLOSE, -INF), REF32, REF64, "wrong"),
    "+inf where float64 has -inf": (
        _at3(CLOSE, INF),
        _at3(REF32, -INF),
        _at3(REF64, -INF),
        "wrong",
    ),
    "-inf everywhere alike (a mask)": (
        _at3(CLOSE, -INF),
        _at3(REF32, -INF),
        _at3(REF64, -INF),
        "agrees",
    ),
    # an overflowed float32 reference: its distance from float64 is infinite, and an
    # infinite allowance would pass every value, a 1e-3 error included
    "a far value beside a +inf reference": (FAR, _at3(REF32, INF), REF64, None),
    "a far value beside a -inf reference": (FAR, _at3(REF32, -INF), REF64, None),
    "a far value where float64 overflowed": (FAR, REF32, _at3(REF64, INF), None),
    "a far value where float64 is -inf": (FAR, REF32, _at3(REF64, -INF), None),
}


@pytest.mark.parametrize("case", list(FLOAT64_CASES))
def test_the_float64_rule_on_nan_and_infinities(case):
    value, reference, f64, expected = FLOAT64_CASES[case]
    j = judge_float64(value, reference, f64, atol=0.0)
    if expected is None:
        assert j is None  # no bound: not judged by the rule
    else:
        assert j is not None and j.wrong == (expected == "wrong"), j
        if expected == "wrong":
            assert j.error == INF and j.share == INF


@pytest.mark.parametrize("sign", [1, -1])
def test_an_infinite_reference_leaves_a_wrong_value_to_the_tolerance(sign):
    """The check's verdict: a far value beside an overflowed reference is diverged, by the
    tolerance (the float64 rule has no bound there)."""
    from explorer.check.judge import Float64Reference
    from explorer.check.numbers import judge_outputs

    ref = _at3(REF32, sign * INF)
    f64 = Float64Reference(lambda: ((REF64,), {}), "a run")
    cmp = judge_outputs((_at3(FAR, sign * INF),), (ref,), f64, 1e-4, 1e-5)
    assert cmp.diverged and cmp.rule == "tolerance"


@pytest.mark.parametrize(
    ("outputs", "diverged"),
    [
        ((FAR, CLOSE), True),  # the wrong output first, an agreeing one last
        ((CLOSE, FAR), True),
        ((FAR, CLOSE, CLOSE), True),
        ((CLOSE, CLOSE), False),
    ],
)
def test_every_output_beyond_the_tolerance_is_judged_by_float64(outputs, diverged):
    """With several outputs beyond the tolerance the step is wrong when any one is, and the
    judgement kept is the one furthest over its allowance."""
    from explorer.check.judge import Float64Reference
    from explorer.check.numbers import judge_outputs

    n = len(outputs)
    f64 = Float64Reference(lambda: ((REF64,) * n, {}), "a run")
    cmp = judge_outputs(outputs, (REF32,) * n, f64, 1e-9, 1e-12)  # all beyond the tolerance
    assert cmp.beyond > 0 and cmp.rule == "float64"
    assert cmp.diverged is diverged
    assert cmp.float64.wrong is diverged
    if diverged:
        assert cmp.float64.error == pytest.approx(float(np.abs(FAR - REF64).max()))


def test_the_diverged_message_gives_the_steps_and_the_references_distances_from_float64():
    """After a pass scales a linear by 1.001, under a tolerance float32 rounding exceeds: the
    finding says how far the step is from float64 and how far the reference is, each its own."""
    from explorer.fmt import num

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)
    ).eval()
    x = torch.randn(4, 16)
    trace = explorer.explore(model, (x,), pipeline=[_ScaleLayer(layer="2", scale=1.001)])
    report = trace.check(rtol=1e-9, atol=1e-12, progress=False)
    assert kinds(report) == ["diverged"]
    f = report.first_failure
    assert f.step.name == "test-check-scale-layer" and f.details["rule"] == "float64"
    d = f.details["float64"]
    assert d["error"] > 100 * d["reference_error"] > 0
    assert num(d["error"]) != num(d["reference_error"])
    said = f"{num(d['error'])} from it where torch eager is {num(d['reference_error'])}, over"
    assert said in f.message, f.message


@pytest.mark.parametrize("sizes", [(6, 6, 6), (6, 5, 3)])
def test_the_float64_run_multiplies_by_the_weight_transposed(monkeypatch, sizes):
    """The float64 run's linear (F.linear by the interpreter's blocked float64 matmul, for a
    weight over LINEAR_BLOCK_BYTES: a 2048-wide decoder's) is x @ W.T, as torch's in float64,
    for a square weight too."""
    from explorer.check import references

    calls = []

    def spy(a, b):
        calls.append(b.shape)
        return references.matmul_float64.__wrapped__(a, b)

    spy.__wrapped__ = references.matmul_float64
    monkeypatch.setattr(references, "LINEAR_BLOCK_BYTES", 0)  # every linear by the blocked path
    monkeypatch.setattr(references, "matmul_float64", spy)
    torch.manual_seed(0)
    a, b, c = sizes
    model = torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.Tanh(), torch.nn.Linear(b, c))
    x = torch.randn(4, a)
    ep = torch.export.export(model.eval(), (x,))
    (out,), _ = references._torch_float64(ep, [x])
    with torch.no_grad():
        want = model.double()(x.double()).numpy()
    assert calls == [(a, b), (b, c)]  # both linears by the blocked float64 matmul
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
