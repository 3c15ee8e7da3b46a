"""Models of the torch.compile tests that a benchmark or a child process uses too (torch only,
no pytest: `bench/compile_tab.py` imports them in a child process and a JupyterLab kernel)."""

from __future__ import annotations

import torch


class Breaks(torch.nn.Module):
    """A linear, a graph break, then elementwise ops: two frames (the second Dynamo's resume
    function), each compiled again when the batch size changes."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 8)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        torch._dynamo.graph_break()
        return torch.sigmoid(y * 2.0 + 1.0)
