"""Weights imported from torch are read-only views of the model's own memory, not copies (a
1B-parameter model's 5 GB were doubled by the import)."""

import numpy as np
import pytest

from compiler.frontend import from_torch
from compiler.ir.nodes import function_constants

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_imported_weights_view_the_models_memory(dtype):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    model = model.to(dtype).eval()
    module = from_torch(model, (torch.randn(2, 8, dtype=dtype),))
    consts = {c.name: c.data for c in function_constants(module["main"])}
    w, param = consts["0.weight"], model[0].weight.detach()
    assert not w.flags.writeable
    if dtype == torch.bfloat16:
        param = param.view(torch.int16)
        w = w.view(np.int16)
    assert np.shares_memory(w, param.numpy())
    assert np.array_equal(w, param.numpy())
