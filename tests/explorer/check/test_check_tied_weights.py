"""Tied weights (issue 29, item 5): a decoder whose output layer is its embedding table.

The default pipeline reads the table as it is stored everywhere (the linear layer's matmul
with ``transpose_b``, and a ``x @ W.T`` written by hand too), so no step writes a transposed
copy beside it: no param-bloat, no new weight bytes, in the compiled build either. A pipeline
that does make a copy (the replica of TVM's linear-broadcast bug) is still flagged, naming the
table."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import explorer

VOCAB, DIM = 100, 32


class TiedLM(torch.nn.Module):
    """Embedding -> linear -> tanh -> output layer tied to the embedding (nn.Linear sharing
    the table, or ``h @ table.T`` written out)."""

    def __init__(self, written_out: bool = False):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.fc = torch.nn.Linear(DIM, DIM)
        self.lm_head = torch.nn.Linear(DIM, VOCAB, bias=False)
        self.lm_head.weight = self.embed.weight
        self.written_out = written_out

    def forward(self, ids):
        h = torch.tanh(self.fc(self.embed(ids)))
        return h @ self.embed.weight.t() if self.written_out else self.lm_head(h)


def _model(written_out: bool) -> TiedLM:
    torch.manual_seed(0)
    return TiedLM(written_out).eval()


IDS = torch.randint(0, VOCAB, (2, 8), generator=torch.Generator().manual_seed(1))
TABLE = VOCAB * DIM * 4  # bytes


@pytest.mark.parametrize("written_out", [False, True], ids=["linear", "matmul-of-t"])
def test_default_pipeline_keeps_one_table_and_the_build_adds_no_weight_bytes(written_out):
    model = _model(written_out)
    trace = explorer.explore(model, (IDS,), "default,legalize-ops,codegen")
    imported = trace.imported.param_bytes
    assert imported < 2 * TABLE  # the table counted once (fc's weights are 4.2 kB)
    assert all(s.param_bytes <= imported for s in trace.steps if s.module is not None)
    tables = [c for c in trace["default"].module.constants().values() if c.data.size == VOCAB * DIM]
    assert len(tables) == 1  # read by take and by the output layer's matmul, as stored
    report = trace.check((IDS,), progress=False)
    assert report.numbers_checked
    assert [f.kind for f in report.findings] == []
    executable = trace["codegen"].executable()
    assert executable.param_bytes <= imported
    (got,) = executable(IDS.numpy())
    with torch.no_grad():
        want = model(IDS).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_pipeline_that_copies_the_table_is_still_flagged():
    """The replica of the linear-broadcast bug writes the output layer's weight transposed
    (and broadcast) beside the table: param-bloat at fold-constant, naming the table."""
    trace = explorer.explore(_model(False), (IDS[:1],), "replica-linear-broadcast,fold-constant")
    report = trace.check((IDS[:1],), progress=False)
    bloat = [f for f in report.findings if f.kind == "param-bloat"]
    assert len(bloat) == 1 and bloat[0].step is trace["fold-constant"]
    assert "is `lm_head.weight` transposed" in bloat[0].message
    assert bloat[0].details["bytes_after"] - bloat[0].details["bytes_before"] >= TABLE
