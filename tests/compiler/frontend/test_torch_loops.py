"""torch's ``while_loop`` (torch._higher_order_ops) through torch.export: one IR Loop whose
body reads the module's weights and the loop's extra inputs as captured values; it matches
eager, compiles, and checks clean step by step."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch._higher_order_ops.while_loop import while_loop  # noqa: E402

from compiler.backend import build  # noqa: E402
from compiler.frontend import from_torch  # noqa: E402
from compiler.interpret import run  # noqa: E402
from compiler.ir import Loop, verify  # noqa: E402


class Refine(torch.nn.Module):
    """Applies a layer until the values grow past a bound or 20 steps: the count of steps
    depends on the data."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        def cond_fn(i, acc):
            return (acc.abs().sum() < 50) & (i < 20)

        def body_fn(i, acc):
            return i + 1, torch.tanh(self.lin(acc)) * 2 + x

        return while_loop(cond_fn, body_fn, (torch.tensor(0), x.clone()))


@pytest.fixture(scope="module")
def exported():
    torch.manual_seed(0)
    model = Refine().eval()
    x = torch.randn(2, 3)
    return model, torch.export.export(model, (x,)), x


def test_while_loop_becomes_one_loop_that_matches_eager(exported):
    model, ep, _ = exported
    module = from_torch(ep)
    verify(module)
    loops = [n for n in module.main.iter_nodes() if isinstance(n, Loop)]
    assert len(loops) == 1 and loops[0].num_carried == 2 and loops[0].num_scan == 0
    body = module[loops[0].func]
    assert body.is_private and "linear(" in str(module)
    exe = build(module)
    for scale in (0.1, 1.0, 5.0):  # different data, different numbers of steps
        x = torch.randn(2, 3) * scale
        steps, out = (t.detach().numpy() for t in model(x))
        for got in (run(module, x.numpy()), exe(x.numpy())):
            assert int(got[0]) == int(steps)
            np.testing.assert_allclose(got[1], out, rtol=1e-5, atol=1e-5)


def test_a_traced_while_loop_checks_clean(exported):
    import explorer

    model, ep, x = exported
    trace = explorer.explore(ep, (x,), pipeline="default,legalize-ops,codegen")
    assert trace.failure is None
    report = trace.check((x,), progress=False)
    assert report.numbers_checked
    assert [str(f) for f in report.findings if f.is_failure] == []
