"""torch's reference takes the import's torch calls (explorer/passlens/shared.py): every value
it holds has the bits torch's own op-by-op run gives, so the check's findings, verdicts and
error map are the same as without sharing; only the time differs."""

from __future__ import annotations

import operator

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import explorer  # noqa: E402
import explorer.check.runner as runner_mod  # noqa: E402
from explorer.check.numbers import compare, same_memory  # noqa: E402
from explorer.passlens.check import Interpreter  # noqa: E402
from explorer.passlens.shared import ImportCalls, writes_inputs  # noqa: E402


def _checked(trace, inputs, share: bool, monkeypatch):
    """The check's report, torch's reference (outputs, FX values) and the shared calls used."""
    seen: dict = {}
    real_reference, real_calls = runner_mod.torch_reference, Interpreter.reference_calls

    def reference(source, all_inputs, shared=None):
        seen["shared"] = shared
        seen["ref"] = real_reference(source, all_inputs, shared)
        return seen["ref"]

    def calls(self):
        return real_calls(self) if share else None

    with monkeypatch.context() as m:
        m.setattr(runner_mod, "torch_reference", reference)
        m.setattr(Interpreter, "reference_calls", calls)
        report = trace.check(inputs, progress=False)
    return report, seen["ref"], seen["shared"]


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _same_checks(trace, inputs, monkeypatch) -> ImportCalls | None:
    shared_report, (outs, fx, _), calls = _checked(trace, inputs, True, monkeypatch)
    plain_report, (outs0, fx0, _), _ = _checked(trace, inputs, False, monkeypatch)
    assert [_bits(o) for o in outs] == [_bits(o) for o in outs0]
    assert fx.keys() == fx0.keys()
    differ = [k for k in fx if fx[k].shape != fx0[k].shape or _bits(fx[k]) != _bits(fx0[k])]
    assert differ == []
    strides = [k for k in fx if fx[k].strides != fx0[k].strides]
    assert strides == []  # the same layouts too: the calls after them compute alike
    rows = lambda r: [(c.step.name, c.status, c.max_abs, c.max_rel, c.rule) for c in r.steps]  # noqa: E731
    assert rows(shared_report) == rows(plain_report)
    assert shared_report.headline() == plain_report.headline()
    m, m0 = shared_report.error_map(), plain_report.error_map()
    assert m.layers == m0.layers and m.steps == m0.steps
    assert np.array_equal(m.errors, m0.errors, equal_nan=True)
    assert np.array_equal(m.tolerance, m0.tolerance, equal_nan=True)
    return calls


def test_a_decoder_takes_most_of_its_calls_from_the_import(monkeypatch):
    from bench.real_size import build_model

    torch.manual_seed(0)
    model, x, _, _ = build_model(2, 500, hidden=64)
    trace = explorer.explore(model, (x,))
    calls = _same_checks(trace, (x,), monkeypatch)
    assert calls is not None
    # every linear (no bias: a matmul) and the attention are found again, not computed
    assert calls.calls.hits >= 2 * 7 + 1 + 2
    assert calls.taken > 0  # (pow(x, 2), imported as x * x, and the like: the same bits)


@pytest.mark.parametrize("name", ["gpt2", "bert", "llama", "convnext", "vit"])
def test_transformers_models_check_alike_with_and_without_sharing(name, monkeypatch):
    pytest.importorskip("transformers")
    from tests.compiler.frontend import hf_zoo

    model, inputs = hf_zoo.model(name), hf_zoo.inputs(name)
    trace = explorer.explore(model, inputs)
    _same_checks(trace, inputs, monkeypatch)


def test_a_convnext_with_biased_linears_checks_alike(monkeypatch):
    # a linear with a bias is its product, then the bias, in the reference too (unfused_bias)
    from tests.compiler.frontend.torch_zoo import ConvNeXt

    torch.manual_seed(0)
    model = ConvNeXt(dims=(16, 32, 64, 300), depths=(1, 1, 1, 1), num_classes=10).eval()
    x = torch.randn(1, 3, 64, 64)
    _same_checks(explorer.explore(model, (x,)), (x,), monkeypatch)


def test_a_wrong_import_is_still_found(monkeypatch):
    """A frontend that writes another op makes another call: it is computed, and the check
    finds what it computes."""
    import compiler.frontend.torch_convert as convert
    from bench.real_size import build_model

    real = convert.find_converter

    def wrong(target):  # every rsqrt imported as sqrt, as a broken converter would
        if target is torch.ops.aten.rsqrt.default:
            return real(torch.ops.aten.sqrt.default)
        return real(target)

    torch.manual_seed(0)
    model, x, _, _ = build_model(1, 200, hidden=64)
    monkeypatch.setattr(convert, "find_converter", wrong)
    trace = explorer.explore(model, (x,))
    report, _, calls = _checked(trace, (x,), True, monkeypatch)
    assert calls is not None and calls.calls.hits > 0
    assert report.steps[1].status == "diverged"


def _graph(fn, *args):
    return torch.export.export(fn, args).graph_module


class _Adds(torch.nn.Module):
    def forward(self, x):
        return x + 1


def test_a_program_writing_a_value_takes_nothing():
    x = torch.ones(3)
    gm = _graph(_Adds(), x)
    assert not writes_inputs(gm)
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    node.target = torch.ops.aten.add_.Tensor  # an op writing its input
    assert writes_inputs(gm)
    node.target = torch.ops.higher_order.auto_functionalized  # a higher-order op: unknown
    assert writes_inputs(gm)
    node.target = operator.getitem
    assert not writes_inputs(gm)


def test_a_program_read_from_a_file_takes_nothing(monkeypatch):
    from bench.real_size import build_model

    torch.manual_seed(0)
    model, x, _, _ = build_model(1, 100, hidden=64)
    trace = explorer.explore(model, (x,))
    trace.source["untrusted_program"] = True
    _, _, calls = _checked(trace, (x,), True, monkeypatch)
    assert calls is None


def test_a_value_compared_with_its_own_memory_is_what_the_long_way_gives():
    """The check compares a value torch's reference took from the import with the import's
    own without reading it (explorer.check.numbers.compare, the layer errors): the long way
    gives the same for every value against itself, NaN and infinities included."""
    a = np.array([1.0, -0.0, np.nan, np.inf, -np.inf, 3e38, 1e-45], np.float32)
    view = a.view()
    assert same_memory(a, view) and not same_memory(a, a.copy())
    assert not same_memory(a, a[::-1]) and not same_memory(a, a.view(np.int32))
    assert compare(a, view, 1e-4, 1e-5) == compare(a, a.copy(), 1e-4, 1e-5) == (0.0, 0.0, 0)
    b = a.copy()
    b[0] = 2.0  # other memory: compared
    assert compare(a, b, 1e-4, 1e-5)[2] == 1


class _Odd(torch.nn.Module):
    """Several outputs, NaN (the log of a negative) and infinities (a division by zero)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8, bias=False)

    def forward(self, x):
        y = self.lin(x)
        return torch.log(y), y / (y - y), torch.softmax(y * 1e30, -1), y.sum(-1)


def test_nan_infinities_and_several_outputs_check_alike(monkeypatch):
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    trace = explorer.explore(_Odd().eval(), (x,))
    calls = _same_checks(trace, (x,), monkeypatch)
    assert calls is not None and calls.calls.hits > 0
