"""The MLP the IREE tests record, once per session (recording it takes seconds): shared by
test_iree.py (its steps and graphs) and test_iree_check.py (its check)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def mlp():
    """The tests' MLP (seed 0) recorded by iree-compile through every phase ("end")."""
    pytest.importorskip("iree.compiler")
    pytest.importorskip("iree.turbine")
    torch = pytest.importorskip("torch")
    import explorer
    from tests.explorer.iree.test_iree import MLP

    torch.manual_seed(0)
    model = MLP().eval()
    return explorer.explore(model, (torch.randn(2, 8),), compiler="iree", progress=False)
