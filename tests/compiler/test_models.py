"""compiler.models: the IR-built ConvNeXt and MLP compute what the same torch models compute."""

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from compiler import models
from compiler.interpret import run
from compiler.ir import verify

SMALL = {"dims": (8, 16, 32, 64), "depths": (1, 1, 2, 1), "image": 32}


# ----- a torch ConvNeXt with torchvision's module layout (so the state dict names match) ------


class LayerNorm2d(nn.LayerNorm):
    """Layer norm over the channels of an NCHW tensor (torchvision's LayerNorm2d)."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(*self.dims)


class CNBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1))
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim),
            Permute([0, 2, 3, 1]),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(dim, 4 * dim),
            nn.GELU(),
            nn.Linear(4 * dim, dim),
            Permute([0, 3, 1, 2]),
        )

    def forward(self, x):
        return self.layer_scale * self.block(x) + x


class ConvNeXt(nn.Module):
    def __init__(self, dims, depths, num_classes=1000):
        super().__init__()
        layers = [nn.Sequential(nn.Conv2d(3, dims[0], 4, stride=4), LayerNorm2d(dims[0], 1e-6))]
        for i, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
            layers.append(nn.Sequential(*[CNBlock(dim) for _ in range(depth)]))
            if i + 1 < len(dims):
                layers.append(
                    nn.Sequential(LayerNorm2d(dim, eps=1e-6), nn.Conv2d(dim, dims[i + 1], 2, 2))
                )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            LayerNorm2d(dims[-1], eps=1e-6), nn.Flatten(1), nn.Linear(dims[-1], num_classes)
        )

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)))


def _load(torch_model: nn.Module, module) -> nn.Module:
    weights = {name: torch.from_numpy(np.array(c.data)) for name, c in module.constants().items()}
    torch_model.load_state_dict(weights, strict=True)  # every name and shape must match
    return torch_model.eval()


def test_small_convnext_matches_torch_eager_with_the_same_weights():
    module = models.convnext(**SMALL, seed=3, batch=2)
    verify(module)
    reference = _load(ConvNeXt(SMALL["dims"], SMALL["depths"]), module)
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    (ours,) = run(module, x)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    assert ours.shape == (2, 1000)
    assert np.abs(expected).max() > 0.1  # the comparison is not between near-zeros
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)


def test_symbolic_batch_gives_a_symbolic_output_and_runs_on_any_batch():
    module = models.convnext(**SMALL, batch="n")
    assert str(module.main.ret_type) == "f32[n, 1000]"
    x = np.zeros((3, 3, 32, 32), np.float32)
    assert run(module, x)[0].shape == (3, 1000)


def test_same_seed_same_weights_other_seed_other_weights():
    a, b, c = (models.convnext(**SMALL, seed=s).constants() for s in (0, 0, 1))
    name = "features.3.0.block.3.weight"
    np.testing.assert_array_equal(a[name].data, b[name].data)
    assert not np.array_equal(a[name].data, c[name].data)


def test_convnext_base_has_88_6m_parameters_named_like_torchvision():
    shapes = models.convnext_param_shapes()  # the base config, without building any array
    assert sum(math.prod(s) for s in shapes.values()) == 88_591_464
    assert shapes["features.5.26.block.3.weight"] == (2048, 512)  # stage 3 has 27 blocks
    assert shapes["classifier.2.weight"] == (1000, 1024)
    small = models.convnext(**SMALL)
    assert {n: c.data.shape for n, c in small.constants().items()} == dict(
        models.convnext_param_shapes(SMALL["dims"], SMALL["depths"])
    )


def test_convnext_base_builds_with_those_parameters():
    module = models.convnext()
    assert sum(c.data.size for c in module.constants().values()) == 88_591_464
    assert str(module.main.ret_type) == "f32[1, 1000]"
    linears = [n for n in module.main.bindings if getattr(n, "op", None) == "linear"]
    assert len(linears) == 2 * 36 + 1
    stage1 = next(n for n in linears if n.prov.module_path == "features.1.0.block.3")
    assert str(stage1.args[0].ty) == "f32[1, 56, 56, 128]"


def test_mlp_matches_torch_linear_stack():
    module = models.mlp(sizes=(20, 16, 8, 4), batch=5, seed=1)
    reference = nn.Module()
    reference.layers = nn.Sequential(
        nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)
    )
    _load(reference, module)
    x = np.random.default_rng(2).standard_normal((5, 20)).astype(np.float32)
    with torch.no_grad():
        expected = reference.layers(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(run(module, x)[0], expected, rtol=1e-5, atol=1e-6)


def test_matmul_linear_form_computes_the_same():
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    as_linear = models.convnext(**SMALL, seed=5)
    as_matmul = models.convnext(**SMALL, seed=5, linear_form="matmul")
    assert "linear(" not in str(as_matmul) and "matmul(" in str(as_matmul)
    np.testing.assert_allclose(run(as_matmul, x)[0], run(as_linear, x)[0], rtol=1e-5, atol=1e-6)
