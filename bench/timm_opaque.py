"""How many opaque ops passlens's torch import keeps for timm models (issue 41, item 7: the goal
is none), and whether each checks clean. Models are built in code with random weights
(``pretrained=False``, ``HF_HUB_OFFLINE=1``: no weight is downloaded), the smallest config of
each family, some made smaller still by keyword arguments, on small inputs.

The sample covers the ops item 7 names, as torch.export records them (the ``ops of note``
column counts them in the exported graph, with ``col2im`` and ``unfold``, which this sample
found opaque besides): ``aten.einsum`` (SAM and MViTv2 relative positions, MaxViT's TF
relative-position bias), ``aten.batch_norm`` in training form (weight standardisation:
ResNetV2-BiT's StdConv2d, the NF nets' ScaledStdConv2d, a ViT hybrid's stem),
``aten.addcmul`` (ResMLP's Affine, ConvNeXt-V2's GRN), ``aten.im2col`` (nn.Unfold: VOLO's
outlooker, TNT; VOLO folds back with ``aten.col2im``, HaloNet takes windows with
``Tensor.unfold``); no timm model here records ``aten.multiply``, and MobileNetV4-hybrid's
attention and MobileViT-v2 take their paths without einsum and nn.Unfold. Then common
families (ResNet, ConvNeXt, EfficientNet, MobileNetV3, RegNet, ViT, DeiT, Swin, LeViT, ...).

Each model is explored with passlens's default passes, then lowered and compiled
(``"default,legalize-ops,codegen"``), and ``trace.check()`` compares every step with torch.

timm needs torchvision, whose index wheels do not load beside the CPU torch 2.13.0 that
passlens pins, so this runs in a separate venv (never the project's):

    python3.11 -m venv /work/venv-timm
    /work/venv-timm/bin/pip install torch==2.14.1 torchvision==0.29.1
    /work/venv-timm/bin/pip install numpy scipy onnx onnxruntime onnxscript llvmlite \\
        ml_dtypes tqdm ipywidgets anywidget timm
    PYTHONPATH=$PWD /work/venv-timm/bin/python bench/timm_opaque.py [NAME ...]
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

import explorer  # noqa: E402

# The targets item 7 of issue 41 names, as torch.export records them, and the two this sample
# found opaque besides (VOLO's nn.Fold, HaloNet's Tensor.unfold).
ITEM7 = {
    "aten.einsum.default": "einsum",
    "aten.batch_norm.default": "batch_norm(training)",
    "aten.addcmul.default": "addcmul",
    "aten.im2col.default": "im2col",
    "aten.multiply.Tensor": "multiply",
    "aten.multiply.Scalar": "multiply",
    "aten.col2im.default": "col2im",
    "aten.unfold.default": "unfold",
}
# passlens's default passes, then lowering and compiled code: check compares every step
PIPELINE = "default,legalize-ops,codegen"

# name, timm model, keyword arguments (smaller than the named config where it is large), H=W.
VIT = dict(img_size=64)
MODELS = [
    # einsum
    ("samvit", "samvit_base_patch16",
     dict(img_size=64, depth=2, embed_dim=64, num_heads=2, global_attn_indexes=(1,),
          window_size=2, neck_chans=32), 64),
    ("mvitv2_tiny", "mvitv2_tiny", dict(img_size=64), 64),
    ("mobilenetv4_hybrid_medium", "mobilenetv4_hybrid_medium", {}, 64),
    ("maxvit_tiny_tf", "maxvit_tiny_tf_224", dict(img_size=64), 64),
    # batch norm in training form (weight standardisation)
    ("resnetv2_50x1_bit", "resnetv2_50x1_bit", {}, 64),
    ("nf_resnet26", "nf_resnet26", {}, 64),
    ("nf_regnet_b0", "nf_regnet_b0", {}, 64),
    ("eca_nfnet_l0", "eca_nfnet_l0", {}, 64),
    ("vit_small_r26_s32", "vit_small_r26_s32_224", dict(img_size=64, depth=2), 64),
    # addcmul
    ("resmlp_12", "resmlp_12_224", dict(img_size=64), 64),
    ("convnextv2_atto", "convnextv2_atto", {}, 64),
    # im2col (nn.Unfold)
    ("volo_d1", "volo_d1_224", dict(img_size=64), 64),
    ("tnt_s_patch16", "tnt_s_patch16_224", dict(img_size=64, depth=2), 64),
    ("mobilevitv2_050", "mobilevitv2_050", {}, 64),
    ("halonet26t", "halonet26t", {}, 256),
    # common families
    ("resnet18", "resnet18", {}, 64),
    ("convnext_atto", "convnext_atto", {}, 64),
    ("efficientnet_b0", "efficientnet_b0", {}, 64),
    ("mobilenetv3_small_050", "mobilenetv3_small_050", {}, 64),
    ("regnetx_002", "regnetx_002", {}, 64),
    ("vit_tiny_patch16", "vit_tiny_patch16_224", VIT, 64),
    ("deit_tiny_patch16", "deit_tiny_patch16_224", VIT, 64),
    ("swin_tiny_patch4_window7", "swin_tiny_patch4_window7_224",
     dict(img_size=64, window_size=4, depths=(1, 1, 1, 1)), 64),
    ("levit_128s", "levit_128s", dict(img_size=64), 64),
    ("beit_base_patch16", "beit_base_patch16_224",
     dict(img_size=64, depth=2, embed_dim=64, num_heads=2), 64),
    ("coat_lite_tiny", "coat_lite_tiny", dict(img_size=64), 64),
    ("mixer_s16", "mixer_s16_224", dict(img_size=64), 64),
    ("densenet121", "densenet121", {}, 64),
    ("ghostnet_050", "ghostnet_050", {}, 64),
]  # fmt: skip


def item7_ops(model, args) -> Counter:
    """The item-7 targets in the graph torch.export records for ``model``."""
    graph = torch.export.export(model, args).graph
    names = Counter()
    for node in graph.nodes:
        target = str(node.target)
        if target not in ITEM7:
            continue
        if target == "aten.batch_norm.default":
            training = node.args[5] if len(node.args) > 5 else node.kwargs.get("training")
            if not training:
                continue
        names[ITEM7[target]] += 1
    return names


def run(name: str, arch: str, kwargs: dict, size: int) -> tuple[str, bool]:
    """The model's table row, and whether it keeps no opaque op and checks clean."""
    import timm

    torch.manual_seed(0)
    model = timm.create_model(arch, pretrained=False, **kwargs).eval()
    params = sum(p.numel() for p in model.parameters()) / 1e6
    args = (torch.randn(1, 3, size, size),)
    ops = item7_ops(model, args)
    used = " ".join(f"{k}x{v}" for k, v in sorted(ops.items())) or "-"
    start = time.perf_counter()
    trace = explorer.explore(model, args, PIPELINE, progress=False)
    opaque = [(r["target"], r["count"]) for r in trace.opaque_ops()]
    if trace.failure is not None:
        verdict, clean = (
            f"pass failed: {trace.failure.name}: {str(trace.failure.error)[:100]}",
            False,
        )
    else:
        report = trace.check(progress=False)
        failures = [f for f in report.findings if f.is_failure]
        verdict = report.headline() + (f": {str(failures[0])[:120]}" if failures else "")
        clean = not failures and not opaque
    seconds = time.perf_counter() - start
    count = sum(c for _, c in opaque)
    listed = " " + ", ".join(f"{t} x{c}" for t, c in opaque) if opaque else ""
    cells = [name, f"{params:.1f}M", size, used, f"{count}{listed}", verdict, f"{seconds:.1f}"]
    row = "| " + " | ".join(map(str, cells)) + " |"
    return row, clean


def main() -> None:
    try:
        import timm
    except ImportError:
        sys.exit("timm is not installed (see this script's docstring)")
    wanted = set(sys.argv[1:])
    unknown = wanted - {m[0] for m in MODELS}
    if unknown:
        sys.exit(f"no such model in the sample: {', '.join(sorted(unknown))}")
    warnings.filterwarnings("ignore")
    print(f"timm {timm.__version__}, torch {torch.__version__}")
    print(f"pipeline {PIPELINE}")
    print("| model | params | H=W | ops of note (torch.export) | opaque ops kept | check | s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    clean = total = 0
    for name, arch, kwargs, size in MODELS:
        if wanted and name not in wanted:
            continue
        total += 1
        try:
            row, ok = run(name, arch, kwargs, size)
        except Exception as e:  # one line per model, the sample goes on
            row, ok = f"| {name} | | | | | error: {type(e).__name__}: {str(e)[:140]} | |", False
        clean += ok
        print(row, flush=True)
    print(f"no opaque op kept and check ok: {clean}/{total}")


if __name__ == "__main__":
    main()
