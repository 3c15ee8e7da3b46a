"""Small torch models for the ONNX Runtime benchmarks and screenshots, built in code with random
weights: a BERT-like encoder layer whose modules nest as a transformers BERT's do
(``encoder.layer.0.attention.self.query``), and a small CNN (Conv, BatchNorm, Relu: what ORT's
ConvActivationFusion and NchwcTransformer rewrite)."""

from __future__ import annotations

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        d = h // self.heads

        def split(y):
            return y.view(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        a = torch.softmax(q @ k.transpose(-1, -2) / d**0.5, dim=-1) @ v
        return a.transpose(1, 2).reshape(b, t, h)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.self = SelfAttention(hidden, heads)
        self.dense = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        return self.norm(x + self.dense(self.self(x)))


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.attention = Attention(hidden, heads)
        self.intermediate = nn.Linear(hidden, 4 * hidden)
        self.output = nn.Linear(4 * hidden, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        x = self.attention(x)
        return self.norm(x + self.output(nn.functional.gelu(self.intermediate(x))))


class Encoder(nn.Module):
    def __init__(self, hidden: int = 32, heads: int = 4, layers: int = 1):
        super().__init__()
        self.layer = nn.ModuleList([Layer(hidden, heads) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class BertLike(nn.Module):
    """``encoder.layer.N.attention.self.query``, ... as in transformers' BertModel."""

    def __init__(self, hidden: int = 32, heads: int = 4, layers: int = 1):
        super().__init__()
        self.encoder = Encoder(hidden, heads, layers)

    def forward(self, x):
        return self.encoder(x)


class SmallCNN(nn.Module):
    def __init__(self, channels: int = 16, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(x.mean((2, 3)))


def bert_like(seed: int = 0) -> tuple[nn.Module, tuple]:
    """A one-layer BERT-like encoder (hidden 32, 4 heads) and its input (2 x 8 x 32)."""
    torch.manual_seed(seed)
    return BertLike().eval(), (torch.randn(2, 8, 32),)


def small_cnn(seed: int = 0) -> tuple[nn.Module, tuple]:
    """The small CNN (16 channels) and its input (1 x 3 x 16 x 16)."""
    torch.manual_seed(seed)
    return SmallCNN().eval(), (torch.randn(1, 3, 16, 16),)


MODELS = {"bert": bert_like, "cnn": small_cnn}
# the step each model's screenshots show (what the reader looks for)
STEPS = {"bert": "SkipLayerNormFusion", "cnn": "NchwcTransformer"}
