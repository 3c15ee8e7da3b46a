"""torch's reference computes a linear with a bias (and `addmm`) as its product, then the bias
added (explorer/check/torch_program.py `unfused_bias`): what the IR's `linear` means, so the
import's values are torch's own after every biased linear and the reference takes its calls."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import explorer  # noqa: E402
import explorer.check.runner as runner_mod  # noqa: E402
from explorer.check.references import _fx_run  # noqa: E402
from explorer.check.torch_program import graph_run, unfused_bias  # noqa: E402
from explorer.passlens.check import Interpreter  # noqa: E402

aten = torch.ops.aten


class _Linear(torch.nn.Module):
    def __init__(self, k: int, n: int, bias: bool = True):
        super().__init__()
        self.fc = torch.nn.Linear(k, n, bias=bias)

    def forward(self, x):
        return self.fc(x)


class _Addmm(torch.nn.Module):
    def __init__(self, k: int, n: int, alpha: float = 1.0):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(k, n))
        self.b = torch.nn.Parameter(torch.randn(n))
        self.alpha = alpha

    def forward(self, x):
        return torch.addmm(self.b, x, self.w, alpha=self.alpha)


def _bits(t) -> bytes:
    return np.ascontiguousarray(np.asarray(t)).tobytes()


@pytest.mark.parametrize("untrusted", [False, True])
@pytest.mark.parametrize("shape", [(8, 64), (1, 16, 2048), (1, 7, 7, 512)])
def test_a_biased_linear_is_the_product_then_the_bias(shape, untrusted):
    torch.manual_seed(0)
    model = _Linear(shape[-1], 96).eval()
    x = torch.randn(*shape)
    ep = torch.export.export(model, (x,))
    (out,), values = _fx_run(ep, [x], untrusted=untrusted)
    w, b = model.fc.weight.detach(), model.fc.bias.detach()
    expected = torch.add(torch.matmul(x, w.t()), b)
    assert _bits(out) == _bits(expected.numpy())
    assert _bits(values["linear"]) == _bits(expected.numpy())


def test_addmm_is_the_product_then_the_bias_unless_scaled():
    torch.manual_seed(0)
    x = torch.randn(16, 1024)
    plain = _Addmm(1024, 64).eval()
    (out,), _ = _fx_run(torch.export.export(plain, (x,)), [x])
    expected = torch.add(plain.b.detach(), torch.matmul(x, plain.w.detach()))
    assert _bits(out) == _bits(expected.numpy())
    scaled = _Addmm(1024, 64, alpha=0.5).eval()
    (out,), _ = _fx_run(torch.export.export(scaled, (x,)), [x])
    with torch.no_grad():
        fused = torch.addmm(scaled.b, x, scaled.w, alpha=0.5)
    assert _bits(out) == _bits(fused.numpy())  # (alpha is not 1: torch's own call)


def test_only_a_float_linear_or_addmm_with_a_bias_is_unfused():
    x, w, b = torch.randn(4, 8), torch.randn(3, 8), torch.randn(3)
    lhs, rhs, bias, first = unfused_bias(aten.linear.default, (x, w, b), {})
    assert lhs is x and bias is b and not first and rhs.data_ptr() == w.data_ptr()
    assert rhs.shape == (8, 3) and rhs.stride() == (1, 8)  # w.t(): a view, as the IR reads it
    assert unfused_bias(aten.linear.default, (x, w), {"bias": b})[2] is b
    assert unfused_bias(aten.linear.default, (x, w), {}) is None
    assert unfused_bias(aten.linear.default, (x, w, None), {}) is None
    assert unfused_bias(aten.linear.default, (x, w.double(), b), {}) is None  # mixed dtypes
    assert unfused_bias(aten.linear.default, (x, w, b.reshape(1, 3)), {}) is None
    ints = (x.int(), w.int(), b.int())
    assert unfused_bias(aten.linear.default, ints, {}) is None
    m = torch.randn(8, 3)
    assert unfused_bias(aten.addmm.default, (b, x, m), {})[3] is True
    assert unfused_bias(aten.addmm.default, (b, x, m), {"beta": 1, "alpha": 1.0}) is not None
    assert unfused_bias(aten.addmm.default, (b, x, m), {"beta": 0.5}) is None
    assert unfused_bias(aten.addmm.default, (b, x, m), {"alpha": 2}) is None
    assert unfused_bias(aten.mm.default, (x, m), {}) is None
    # addmm's bias broadcasts to the product: a bias the product would broadcast to is
    # addmm's own error, not an add's larger result
    one = torch.randn(1, 8)
    assert unfused_bias(aten.addmm.default, (torch.randn(5, 3), one, m), {}) is None
    assert unfused_bias(aten.addmm.default, (torch.randn(4, 3), x, m), {}) is not None
    assert unfused_bias(aten.addmm.default, (torch.randn(4, 1), x, m), {}) is not None


def test_the_reference_line_says_so_where_a_graph_has_a_biased_linear():
    x = torch.randn(2, 8)
    biased = torch.export.export(_Linear(8, 4).eval(), (x,))
    plain = torch.export.export(_Linear(8, 4, bias=False).eval(), (x,))
    assert graph_run(biased).endswith("; a linear's bias added after its product")
    assert graph_run(plain) == "the exported graph run op by op, no_grad"


def _shared_calls(trace, inputs, monkeypatch):
    seen = {}
    real = Interpreter.reference_calls

    def calls(self):
        seen["calls"] = real(self)
        return seen["calls"]

    monkeypatch.setattr(Interpreter, "reference_calls", calls)
    report = trace.check(inputs, progress=False)
    return report, seen["calls"]


def test_a_convnext_reference_takes_the_calls_after_its_biased_linears(monkeypatch):
    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(16, 32, 64, 300), depths=(1, 1, 1, 1), num_classes=10).eval()
    x = torch.randn(1, 3, 64, 64)
    trace = explorer.explore(model, (x,))
    report, calls = _shared_calls(trace, (x,), monkeypatch)
    assert report.ok
    ep = trace.source["exported"]
    linears = sum(1 for n in ep.graph.nodes if n.target is aten.linear.default)
    assert linears >= 9
    # every linear's product and bias, and what follows them, are found again, not computed
    assert calls.calls.hits >= 2 * linears
    assert calls.calls.hits >= calls.calls.misses  # (the misses: the import's own calls)


def test_a_wrong_bias_is_still_found(monkeypatch):
    """An import that drops a linear's bias makes no add: the reference computes its own and
    the check finds the difference."""
    import compiler.frontend.torch_convert as convert

    real = convert.find_converter

    def dropped(target):
        conv = real(target)
        if target is not aten.linear.default:
            return conv
        return lambda ctx, node, args, kwargs: conv(ctx, node, tuple(args[:2]), {})

    torch.manual_seed(0)
    model = _Linear(512, 32).eval()
    x = torch.randn(4, 512)
    monkeypatch.setattr(convert, "find_converter", dropped)
    trace = explorer.explore(model, (x,))
    report, calls = _shared_calls(trace, (x,), monkeypatch)
    assert calls is not None and calls.calls.hits >= 1  # the product was found
    assert report.steps[1].status == "diverged"


def test_the_import_of_a_biased_linear_has_the_references_bits(monkeypatch):
    """With the same rounding, the import's output is the reference's bit for bit (K = 2048,
    where the fused addmm rounds otherwise)."""
    seen = {}
    real = runner_mod.torch_reference

    def reference(source, inputs, shared=None):
        seen["ref"] = real(source, inputs, shared)
        return seen["ref"]

    torch.manual_seed(0)
    model = _Linear(2048, 64).eval()
    x = torch.randn(1, 16, 2048)
    trace = explorer.explore(model, (x,))
    monkeypatch.setattr(runner_mod, "torch_reference", reference)
    report = trace.check((x,), progress=False)
    assert report.ok
    from compiler import evaluate

    module = trace.imported.module
    stored = {c.name: c.data for c in module.attrs.get("param_values", ())}
    from compiler.passes import weight_params

    weights = [stored[p.name] for p in weight_params(module)]
    (ours,) = evaluate(module, [x.numpy(), *weights]).outputs
    assert _bits(ours) == _bits(seen["ref"][0][0])
