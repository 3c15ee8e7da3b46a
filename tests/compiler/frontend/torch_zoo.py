"""A zoo of small torch models for the frontends, with random weights from a fixed seed.

Each entry of :data:`ZOO` is a function returning ``(model, example_args, dynamic_shapes)``
(``dynamic_shapes`` is None for static models), so both the torch.export frontend and the
ONNX frontend (through ``torch.onnx.export``) can import the same models. Sizes are small so
the numpy interpreter runs each in well under a second; the structure follows the real models
(ConvNeXt-base: depthwise 7x7, channels-last LayerNorm and Linear layers on 4-D inputs, layer
scale; ResNet-18; MobileNetV2; a transformer encoder layer; a GPT-style decoder).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

SEED = 0

ZooEntry = tuple[nn.Module, tuple, object]


def _seeded(build: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(SEED)
    model = build()
    _randomise_norm_stats(model)
    return model.eval()


def _randomise_norm_stats(model: nn.Module) -> None:
    """Give batch norms non-trivial running statistics and affine parameters (a freshly built
    model has mean 0, var 1, weight 1, bias 0, which would hide a wrong conversion)."""
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(c, generator=g))
                m.running_var.copy_(0.5 + torch.rand(c, generator=g))
                m.weight.copy_(1 + 0.1 * torch.randn(c, generator=g))
                m.bias.copy_(0.1 * torch.randn(c, generator=g))
            elif isinstance(m, (nn.LayerNorm, nn.GroupNorm)) and m.weight is not None:
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))


def _input(*shape: int, seed: int = SEED) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed + 100))


# ----- MLP --------------------------------------------------------------------------------


class MLP(nn.Module):
    """Linear layers with ReLU, GELU and dropout between them."""

    def __init__(self, sizes=(32, 64, 48, 10)):
        super().__init__()
        self.fc1 = nn.Linear(sizes[0], sizes[1])
        self.fc2 = nn.Linear(sizes[1], sizes[2])
        self.drop = nn.Dropout(0.1)
        self.fc3 = nn.Linear(sizes[2], sizes[3])

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = self.drop(F.gelu(self.fc2(x)))
        return self.fc3(x)


def mlp() -> ZooEntry:
    """A three-layer perceptron on a batch of 4 vectors."""
    return _seeded(MLP), (_input(4, 32),), None


# ----- ResNet-18 --------------------------------------------------------------------------


class BasicBlock(nn.Module):
    """ResNet's basic block: two 3x3 convs with batch norm, a residual add, a 1x1 downsample."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """ResNet-18's layout (torchvision names: conv1, bn1, layer1.0.conv1, ..., fc)."""

    def __init__(self, widths=(8, 16, 16, 16), blocks=(2, 2, 2, 2), num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks, strict=True)):
            layers = []
            for j in range(n):
                layers.append(BasicBlock(cin, w, 2 if (j == 0 and i > 0) else 1))
                cin = w
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18() -> ZooEntry:
    """ResNet-18 (2 basic blocks per stage) with 8-16 channels on a 32x32 image."""
    return _seeded(ResNet), (_input(1, 3, 32, 32),), None


# ----- ConvNeXt ---------------------------------------------------------------------------


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor (permute, normalise, permute back)."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7 conv, channels-last LayerNorm and Linear 4x MLP with GELU, layer scale,
    residual (the original ConvNeXt's names: dwconv, norm, pwconv1, act, pwconv2, gamma)."""

    def __init__(self, dim: int, layer_scale: float = 1e-1):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale * torch.ones(dim) + 0.01 * torch.randn(dim))

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)  # NCHW -> NHWC: the Linear layers see 4-D inputs
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return shortcut + x


class ConvNeXtStage(nn.Module):
    """An optional downsample (LayerNorm2d + 2x2/2 conv) then blocks."""

    def __init__(self, cin: int, dim: int, depth: int):
        super().__init__()
        self.downsample = (
            nn.Sequential(LayerNorm2d(cin, eps=1e-6), nn.Conv2d(cin, dim, 2, stride=2))
            if cin != dim
            else nn.Identity()
        )
        self.blocks = nn.Sequential(*[ConvNeXtBlock(dim) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(self.downsample(x))


class ConvNeXt(nn.Module):
    """ConvNeXt: 4x4/4 stem conv + LayerNorm2d, four stages, pooled LayerNorm + Linear head.
    Weight names look like ``stages.1.blocks.0.pwconv1.weight``."""

    def __init__(self, dims=(16, 32, 64, 128), depths=(1, 1, 2, 1), num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0], eps=1e-6)
        )
        cins = (dims[0],) + tuple(dims[:-1])
        self.stages = nn.Sequential(
            *[ConvNeXtStage(c, d, n) for c, d, n in zip(cins, dims, depths, strict=True)]
        )
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)

    def forward(self, x):
        x = self.stages(self.stem(x))
        x = x.mean([-2, -1])  # global average pooling
        return self.head(self.norm(x))


def convnext() -> ZooEntry:
    """ConvNeXt with dims (16, 32, 64, 128), depths (1, 1, 2, 1) on a 32x32 image."""
    return _seeded(ConvNeXt), (_input(1, 3, 32, 32),), None


# ----- MobileNetV2 ------------------------------------------------------------------------


class ConvBNReLU6(nn.Sequential):
    """Conv, batch norm, ReLU6 (torchvision's Conv2dNormActivation)."""

    def __init__(self, cin: int, cout: int, kernel: int = 3, stride: int = 1, groups: int = 1):
        super().__init__(
            nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    """1x1 expand, 3x3 depthwise, 1x1 linear projection; residual when shapes allow."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_res_connect = stride == 1 and cin == cout
        layers = [] if expand == 1 else [ConvBNReLU6(cin, hidden, 1)]
        layers += [
            ConvBNReLU6(hidden, hidden, 3, stride, groups=hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2's layout (features.*, classifier) with few, narrow blocks."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        # (expansion, channels, repeats, stride) as in torchvision, shortened
        setting = [(1, 8, 1, 1), (6, 12, 2, 2), (6, 16, 2, 2)]
        layers: list[nn.Module] = [ConvBNReLU6(3, 8, stride=2)]
        cin = 8
        for t, c, n, s in setting:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(ConvBNReLU6(cin, 32, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


def mobilenet_v2() -> ZooEntry:
    """MobileNetV2 with inverted residuals (ReLU6, depthwise 3x3) on a 32x32 image."""
    return _seeded(MobileNetV2), (_input(1, 3, 32, 32),), None


# ----- transformer encoder layer -----------------------------------------------------------


def transformer_encoder() -> ZooEntry:
    """torch.nn.TransformerEncoderLayer (batch_first, eval) on (2, 6, 32)."""

    def build():
        return nn.TransformerEncoderLayer(
            d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True
        )

    return _seeded(build), (_input(2, 6, 32),), None


class CausalEncoder(nn.Module):
    """A pre-norm GELU TransformerEncoderLayer under a causal float mask (is_causal)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model=32,
            nhead=4,
            dim_feedforward=64,
            dropout=0.1,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.layer(x, src_mask=mask, is_causal=True)


def transformer_encoder_causal() -> ZooEntry:
    """A pre-norm, GELU transformer encoder layer with a causal mask on (2, 6, 32)."""
    return _seeded(CausalEncoder), (_input(2, 6, 32),), None


# ----- GPT --------------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, through scaled_dot_product_attention(is_causal=True)
    or through an explicit lower-triangular mask, masked_fill and softmax."""

    def __init__(self, dim: int, heads: int, block_size: int, use_sdpa: bool):
        super().__init__()
        self.heads = heads
        self.use_sdpa = use_sdpa
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        if not use_sdpa:
            mask = torch.tril(torch.ones(block_size, block_size))
            self.register_buffer("bias", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        if self.use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class GPTBlock(nn.Module):
    """Pre-norm transformer block: ln_1, attention, ln_2, GELU MLP, two residuals."""

    def __init__(self, dim: int, heads: int, block_size: int, use_sdpa: bool):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, block_size, use_sdpa)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim)
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A nanoGPT-style decoder: token and positional embeddings (arange), blocks, ln_f and an
    lm head tied to the token embedding (or untied)."""

    def __init__(
        self,
        vocab: int = 50,
        block_size: int = 16,
        dim: int = 32,
        heads: int = 4,
        layers: int = 2,
        use_sdpa: bool = True,
        tied: bool = True,
    ):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block_size, dim)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList(GPTBlock(dim, heads, block_size, use_sdpa) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def _tokens(batch: int, seq: int, vocab: int = 50) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(SEED))


def gpt() -> ZooEntry:
    """GPT with scaled_dot_product_attention(is_causal=True) and a tied lm head."""
    return _seeded(lambda: GPT(use_sdpa=True, tied=True)), (_tokens(2, 8),), None


def gpt_masked() -> ZooEntry:
    """GPT with an explicit tril mask, masked_fill and softmax, and an untied lm head."""
    return _seeded(lambda: GPT(use_sdpa=False, tied=False)), (_tokens(2, 8),), None


def gpt_dynamic() -> ZooEntry:
    """The masked GPT exported with dynamic batch and sequence dims (Dim batch, Dim seq)."""
    model = _seeded(lambda: GPT(use_sdpa=False, tied=True))
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("seq", min=1, max=15)
    return model, (_tokens(2, 8),), ({0: batch, 1: seq},)


# ----- dynamic batch and sequence ---------------------------------------------------------


class SequencePooler(nn.Module):
    """Features over (batch, seq, 16): a Linear, a LayerNorm, arithmetic on the sizes
    themselves, pooling over seq, and a reshape that folds batch and seq together."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 24)
        self.norm = nn.LayerNorm(24)
        self.out = nn.Linear(24, 8)

    def forward(self, x):
        b, s, _ = x.shape
        h = self.norm(F.silu(self.proj(x)))
        weights = torch.softmax(h.sum(-1, keepdim=True) / s, dim=1)
        pooled = (h * weights).sum(1) + h.mean(1)
        tokens = self.out(h.reshape(b * s, -1))  # (batch*seq, 8)
        return self.out(pooled), tokens, h[:, -1]


def dynamic_seq() -> ZooEntry:
    """SequencePooler with dynamic batch and seq dims."""
    batch = torch.export.Dim("batch", min=1, max=64)
    seq = torch.export.Dim("seq", min=1, max=128)
    return _seeded(SequencePooler), (_input(3, 5, 16),), ({0: batch, 1: seq},)


ZOO: dict[str, Callable[[], ZooEntry]] = {
    "mlp": mlp,
    "resnet18": resnet18,
    "convnext": convnext,
    "mobilenet_v2": mobilenet_v2,
    "transformer_encoder": transformer_encoder,
    "transformer_encoder_causal": transformer_encoder_causal,
    "gpt": gpt,
    "gpt_masked": gpt_masked,
    "gpt_dynamic": gpt_dynamic,
    "dynamic_seq": dynamic_seq,
}
"""Every zoo model by name: ``model, example_args, dynamic_shapes = ZOO[name]()``."""
