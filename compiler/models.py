"""Test models built directly in the IR (no torch needed), with random weights from a seed.

``convnext()`` is ConvNeXt (torchvision's layout and weight names, so a torch model with the
same state dict computes the same thing): its defaults give ConvNeXt-base, 88,591,464
parameters. ``convnext(dims=(8, 16, 32, 64), depths=(1, 1, 2, 1), image=32)`` is a small one
for fast tests. ``mlp()`` is a stack of linear layers. Every node carries the torch module
path it stands for (``features.1.0.block.3``) as provenance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from compiler.ir.nodes import Call, Constant, Expr, Function, Module, Var
from compiler.ir.provenance import Provenance
from compiler.ir.symbolic import Dim, sym
from compiler.ir.types import TensorType

CONVNEXT_BASE = {"dims": (128, 256, 512, 1024), "depths": (3, 3, 27, 3)}
LAYER_NORM_EPS = 1e-6


class _Builder:
    """Makes weights (named like torch's state dict) and calls (with provenance)."""

    def __init__(self, seed: int, dtype: str = "float32"):
        self.rng = np.random.default_rng(seed)
        self.dtype = np.dtype(dtype)

    def weight(self, name: str, shape: Sequence[int], kind: str) -> Constant:
        """A random weight: normal over sqrt(fan_in) (``fan_in``), near 1 (``scale``) or
        small (``shift``)."""
        if kind == "fan_in":
            fan_in = math.prod(shape[1:])
            data = self.rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(fan_in))
        elif kind == "scale":
            data = 1 + 0.1 * self.rng.standard_normal(shape, dtype=np.float32)
        else:
            data = 0.1 * self.rng.standard_normal(shape, dtype=np.float32)
        return Constant(data.astype(self.dtype, copy=False), name=name)

    @staticmethod
    def call(path: str, op: str, *args: Expr, **attrs) -> Call:
        return Call(op, args, attrs, prov=Provenance(module_path=path))


def _dim(value: int | str) -> Dim:
    return sym(value) if isinstance(value, str) else value


# ----- ConvNeXt ---------------------------------------------------------------------------


def convnext_param_shapes(
    dims: Sequence[int] = CONVNEXT_BASE["dims"],
    depths: Sequence[int] = CONVNEXT_BASE["depths"],
    num_classes: int = 1000,
    in_channels: int = 3,
) -> dict[str, tuple[int, ...]]:
    """Every weight of ``convnext(dims, depths, ...)`` by torch state-dict name, in order."""
    shapes: dict[str, tuple[int, ...]] = {
        "features.0.0.weight": (dims[0], in_channels, 4, 4),
        "features.0.0.bias": (dims[0],),
        "features.0.1.weight": (dims[0],),
        "features.0.1.bias": (dims[0],),
    }
    for stage, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
        for j in range(depth):
            p = f"features.{2 * stage + 1}.{j}"
            shapes |= {
                f"{p}.layer_scale": (dim, 1, 1),
                f"{p}.block.0.weight": (dim, 1, 7, 7),
                f"{p}.block.0.bias": (dim,),
                f"{p}.block.2.weight": (dim,),
                f"{p}.block.2.bias": (dim,),
                f"{p}.block.3.weight": (4 * dim, dim),
                f"{p}.block.3.bias": (4 * dim,),
                f"{p}.block.5.weight": (dim, 4 * dim),
                f"{p}.block.5.bias": (dim,),
            }
        if stage + 1 < len(dims):
            p = f"features.{2 * stage + 2}"
            shapes |= {
                f"{p}.0.weight": (dim,),
                f"{p}.0.bias": (dim,),
                f"{p}.1.weight": (dims[stage + 1], dim, 2, 2),
                f"{p}.1.bias": (dims[stage + 1],),
            }
    shapes |= {
        "classifier.0.weight": (dims[-1],),
        "classifier.0.bias": (dims[-1],),
        "classifier.2.weight": (num_classes, dims[-1]),
        "classifier.2.bias": (num_classes,),
    }
    return shapes


def convnext(
    dims: Sequence[int] = CONVNEXT_BASE["dims"],
    depths: Sequence[int] = CONVNEXT_BASE["depths"],
    image: int = 224,
    batch: int | str = 1,
    seed: int = 0,
    num_classes: int = 1000,
    in_channels: int = 3,
    linear_form: str = "linear",
) -> Module:
    """ConvNeXt (torchvision layout) with random weights; the defaults give ConvNeXt-base.

    Stem conv 4x4/4 + layer norm; per stage, blocks of depthwise 7x7 conv, channels-last
    layer norm, linear 4x, gelu, linear, layer scale and residual; a layer norm + conv 2x2/2
    between stages; global average pool, layer norm, linear head. ``batch`` may be a symbol.
    ``linear_form="matmul"`` writes each linear layer as ``matmul(x, permute_dims(W)) + b``, as
    TVM Relax's torch frontend does (fold-constant then transposes the weights).
    """
    if linear_form not in ("linear", "matmul"):
        raise ValueError(f"linear_form must be 'linear' or 'matmul', got {linear_form!r}")
    if len(dims) != len(depths):
        raise ValueError(f"dims {list(dims)} and depths {list(depths)} differ in length")
    shapes = convnext_param_shapes(dims, depths, num_classes, in_channels)
    b = _Builder(seed)

    def w(name: str) -> Constant:
        if name.endswith("layer_scale") or name.endswith(".bias"):
            return b.weight(name, shapes[name], "shift")
        return b.weight(name, shapes[name], "fan_in" if len(shapes[name]) > 1 else "scale")

    def layer_norm(x: Expr, path: str) -> Expr:
        """Layer norm over the last (channel) axis of a channels-last tensor."""
        weight, bias = w(f"{path}.weight"), w(f"{path}.bias")
        return b.call(path, "layer_norm", x, weight, bias, axes=[-1], epsilon=LAYER_NORM_EPS)

    def layer_norm_2d(x: Expr, path: str) -> Expr:
        """torchvision's LayerNorm2d: layer norm over the channels of an NCHW tensor."""
        y = b.call(path, "permute_dims", x, axes=[0, 2, 3, 1])
        y = layer_norm(y, path)
        return b.call(path, "permute_dims", y, axes=[0, 3, 1, 2])

    def conv(x: Expr, path: str, **attrs) -> Expr:
        return b.call(path, "conv2d", x, w(f"{path}.weight"), w(f"{path}.bias"), **attrs)

    def linear(x: Expr, path: str) -> Expr:
        weight, bias = w(f"{path}.weight"), w(f"{path}.bias")
        if linear_form == "linear":
            return b.call(path, "linear", x, weight, bias)
        wt = b.call(path, "permute_dims", weight, axes=[1, 0])
        return b.call(path, "add", b.call(path, "matmul", x, wt), bias)

    def block(x: Expr, path: str, dim: int) -> Expr:
        y = conv(x, f"{path}.block.0", strides=[1, 1], padding=[3, 3, 3, 3], groups=dim)
        y = b.call(f"{path}.block.1", "permute_dims", y, axes=[0, 2, 3, 1])
        y = layer_norm(y, f"{path}.block.2")
        y = linear(y, f"{path}.block.3")
        y = b.call(f"{path}.block.4", "gelu", y)
        y = linear(y, f"{path}.block.5")
        y = b.call(f"{path}.block.6", "permute_dims", y, axes=[0, 3, 1, 2])
        y = b.call(path, "multiply", w(f"{path}.layer_scale"), y)
        return b.call(path, "add", y, x)

    x = Var("x", TensorType((_dim(batch), in_channels, image, image), "float32"))
    h = conv(x, "features.0.0", strides=[4, 4], padding=[0, 0, 0, 0])
    h = layer_norm_2d(h, "features.0.1")
    for stage, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
        for j in range(depth):
            h = block(h, f"features.{2 * stage + 1}.{j}", dim)
        if stage + 1 < len(dims):
            p = f"features.{2 * stage + 2}"
            h = layer_norm_2d(h, f"{p}.0")
            h = conv(h, f"{p}.1", strides=[2, 2], padding=[0, 0, 0, 0])
    h = b.call("avgpool", "adaptive_avg_pool2d", h, output_size=[1, 1])
    h = layer_norm_2d(h, "classifier.0")
    h = b.call("classifier.1", "flatten", h, start_dim=1)
    h = linear(h, "classifier.2")
    return Module({"main": Function.from_output([x], h, {"num_input": 1})})


# ----- MLP --------------------------------------------------------------------------------


def mlp(
    sizes: Sequence[int] = (784, 256, 128, 10),
    batch: int | str = 1,
    seed: int = 0,
    activation: str = "relu",
) -> Module:
    """Linear layers ``sizes[0] -> sizes[1] -> ...`` with ``activation`` between them; weights
    named like a torch module whose ``layers`` is an ``nn.Sequential`` of Linear and activation
    modules (``layers.0.weight``)."""
    b = _Builder(seed)
    x = Var("x", TensorType((_dim(batch), sizes[0]), "float32"))
    h: Expr = x
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        path = f"layers.{2 * i}"
        weight = b.weight(f"{path}.weight", (n_out, n_in), "fan_in")
        bias = b.weight(f"{path}.bias", (n_out,), "shift")
        h = b.call(path, "linear", h, weight, bias)
        if i + 2 < len(sizes):
            h = b.call(f"layers.{2 * i + 1}", activation, h)
    return Module({"main": Function.from_output([x], h, {"num_input": 1})})


__all__ = ["CONVNEXT_BASE", "convnext", "convnext_param_shapes", "mlp"]
