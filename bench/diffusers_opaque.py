"""How many opaque ops passlens's torch import keeps for diffusers models (issue 41, item 7: the
goal is none), and whether each checks clean: small configs built in code with random weights
(UNet2DModel with attention blocks, AutoencoderKL, UNet2DConditionModel with cross-attention).

diffusers is not a dependency of passlens: install it beside the venv first, e.g.
``pip install --no-deps --target /tmp/dfs diffusers`` then
``PYTHONPATH=/tmp/dfs .venv/bin/python bench/diffusers_opaque.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import explorer  # noqa: E402
from explorer.summary import opaque_ops  # noqa: E402


class Sample(torch.nn.Module):
    """A diffusers model's ``.sample`` as a plain tensor output."""

    def __init__(self, model, **kwargs):
        super().__init__()
        self.m, self.kwargs = model, kwargs

    def forward(self, *args):
        names = list(self.kwargs)
        extra = dict(zip(names, args[len(args) - len(names) :], strict=True))
        return self.m(*args[: len(args) - len(names)], **extra).sample


def models():
    from diffusers import AutoencoderKL, UNet2DConditionModel, UNet2DModel

    torch.manual_seed(0)
    unet = UNet2DModel(
        sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8,
    )  # fmt: skip
    yield "UNet2DModel", Sample(unet), (torch.randn(1, 3, 16, 16), torch.tensor([10]))
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=8, sample_size=16,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(32, 64),
    )  # fmt: skip
    yield "AutoencoderKL", Sample(vae), (torch.randn(1, 3, 16, 16),)
    cond = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=8,
    )  # fmt: skip
    args = (torch.randn(1, 4, 8, 8), torch.tensor([10]), torch.randn(1, 5, 32))
    yield "UNet2DConditionModel", Sample(cond, encoder_hidden_states=None), args


def main() -> None:
    try:
        import diffusers
    except ImportError:
        sys.exit("diffusers is not installed (see this script's docstring)")
    print(f"diffusers {diffusers.__version__}, torch {torch.__version__}")
    for name, model, args in models():
        start = time.perf_counter()
        trace = explorer.explore(model.eval(), args, progress=False)
        report = trace.check(progress=False)
        opaque = [(r["target"], r["count"]) for r in opaque_ops(trace)]
        print(
            f"{name:22s} opaque ops: {len(opaque)} {opaque or ''}  {report.headline()}  "
            f"({time.perf_counter() - start:.1f} s)"
        )


if __name__ == "__main__":
    main()
