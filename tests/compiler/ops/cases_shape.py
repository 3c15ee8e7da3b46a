"""OpCases for the shape and layout ops, each checked against torch (see opcase.py)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

import compiler.ops.shape  # noqa: F401  (registers the shape ops)
from tests.compiler.ops.opcase import OpCase

_rng = np.random.default_rng(0)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def _f32(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


def _i64(*shape: int) -> np.ndarray:
    return _rng.integers(-50, 50, shape).astype(np.int64)


# The input of docs/bugs.md bug 3: ReflectionPad3d((0, 0, -43, 0, 0, -46)) on (13, 1, 47, 44, 1).
SEED3_INPUT = _f32(13, 1, 47, 44, 1)
# The same pads in ONNX order (all begins for N, C, D, H, W, then all ends).
SEED3_PADS = [0, 0, 0, -43, 0, 0, 0, -46, 0, 0]


def _seed3_pad(x, *rest, **attrs):
    return torch.nn.ReflectionPad3d((0, 0, -43, 0, 0, -46))(x)


CASES: list[OpCase] = [
    # reshape: torch semantics (-1 inferred); allowzero=false is ONNX's 0-copies-the-dim.
    OpCase("match_shape", [_f32(2, 3)], {"shape": [2, 3]}, lambda x, shape: x),
    OpCase("reshape", [_f32(2, 3, 4)], {"shape": [2, -1]}, lambda x, shape: x.reshape(2, -1)),
    OpCase("reshape", [_f32(3, 4)], {"shape": [-1]}, lambda x, shape: x.reshape(-1)),
    OpCase(
        "reshape",
        [_f32(2, 3, 4)],
        {"shape": [0, -1, 2], "allowzero": False},
        lambda x, **a: x.reshape(2, 6, 2),
        id="reshape-onnx-zero-copies",
    ),
    OpCase(
        "reshape",
        [_f32(0, 3)],
        {"shape": [3, 0]},
        lambda x, shape: x.reshape(3, 0),
        id="reshape-zero-size",
    ),
    OpCase("reshape", [_i64(6)], {"shape": [1, 2, 3]}, lambda x, shape: x.reshape(1, 2, 3)),
    OpCase(
        "reshape",
        [_f32(2, 3), np.array([-1], dtype=np.int64)],
        reference=lambda x, s: x.reshape(-1),
        const_inputs=(1,),
        id="reshape-shape-input-1d",
    ),
    # permute_dims
    OpCase("permute_dims", [_f32(2, 3, 4)], {"axes": [0, 2, 1]}, lambda x, axes: x.permute(axes)),
    OpCase("permute_dims", [_f32(2, 3, 4)], {}, lambda x: x.permute(2, 1, 0), id="permute-rev"),
    OpCase(
        "permute_dims", [_f32(2, 3, 4)], {"axes": [-1, 0, 1]}, lambda x, axes: x.permute(2, 0, 1)
    ),
    # squeeze / unsqueeze
    OpCase("squeeze", [_f32(2, 1, 3)], {"axes": [1]}, lambda x, axes: x.squeeze(1)),
    OpCase("squeeze", [_f32(1, 2, 1, 3, 1)], {}, lambda x: x.squeeze(), id="squeeze-all"),
    OpCase("squeeze", [_f32(2, 3, 1)], {"axes": [-1]}, lambda x, axes: x.squeeze(-1)),
    OpCase(
        "squeeze",
        [_f32(13, 1, 1, 1, 1)],
        {"axes": [1]},
        lambda x, axes: x.squeeze(1),
        id="squeeze-seed3",
    ),
    OpCase("unsqueeze", [_f32(2, 3)], {"axes": [0]}, lambda x, axes: x.unsqueeze(0)),
    OpCase("unsqueeze", [_f32(2, 3)], {"axes": [-1]}, lambda x, axes: x.unsqueeze(-1)),
    OpCase(
        "unsqueeze",
        [_f32(2, 3)],
        {"axes": [1, 3]},
        lambda x, axes: x.unsqueeze(1).unsqueeze(3),
        id="unsqueeze-two",
    ),
    # flatten
    OpCase("flatten", [_f32(2, 3, 4)], {}, lambda x: torch.flatten(x), id="flatten-all"),
    OpCase("flatten", [_f32(2, 3, 4)], {"start_dim": 1}, lambda x, start_dim: x.flatten(1)),
    OpCase(
        "flatten",
        [_f32(2, 3, 4, 5)],
        {"start_dim": 1, "end_dim": 2},
        lambda x, **a: x.flatten(1, 2),
    ),
    OpCase("flatten", [np.float32(3.0)], {}, lambda x: torch.flatten(x), id="flatten-0d"),
    # broadcast_to / expand (materialised copies)
    OpCase(
        "broadcast_to", [_f32(3, 1)], {"shape": [2, 3, 4]}, lambda x, shape: x.broadcast_to(shape)
    ),
    OpCase("broadcast_to", [_i64(4)], {"shape": [3, 4]}, lambda x, shape: x.broadcast_to(shape)),
    OpCase("expand", [_f32(3, 1)], {"shape": [2, -1, 4]}, lambda x, shape: x.expand(2, -1, 4)),
    OpCase("expand", [_f32(1, 4)], {"shape": [-1, 4]}, lambda x, shape: x.expand(-1, 4)),
    # concat
    OpCase(
        "concat",
        [_f32(2, 3), _f32(2, 1), _f32(2, 4)],
        {"axis": 1},
        lambda *xs, axis: torch.cat(xs, 1),
    ),
    OpCase("concat", [_i64(2, 3), _i64(1, 3)], {}, lambda *xs: torch.cat(xs, 0)),
    OpCase(
        "concat", [_f32(2, 3, 1), _f32(2, 3, 2)], {"axis": -1}, lambda *xs, axis: torch.cat(xs, -1)
    ),
    # split: sections (equal parts) or indices (numpy / torch.tensor_split)
    OpCase(
        "split",
        [_f32(6, 2)],
        {"indices_or_sections": 3},
        lambda x, **a: torch.tensor_split(x, 3, 0),
        id="split-sections",
    ),
    OpCase(
        "split",
        [_f32(2, 7)],
        {"indices_or_sections": [1, 4], "axis": 1},
        lambda x, **a: torch.tensor_split(x, [1, 4], 1),
        id="split-indices",
    ),
    OpCase(
        "split",
        [_f32(5, 2)],
        {"indices_or_sections": [-2]},
        lambda x, **a: torch.tensor_split(x, [3], 0),
        id="split-negative-index",
    ),
    OpCase(
        "split",
        [_f32(6)],
        {"indices_or_sections": [2, 10]},
        lambda x, **a: torch.tensor_split(x, [2, 10]),
        id="split-index-past-end",
    ),
    # strided_slice: Python slicing, clamped; negative steps checked against torch.flip
    OpCase(
        "strided_slice",
        [_f32(6, 5)],
        {"begin": [1], "end": [4]},
        lambda x, **a: x[1:4],
        id="slice-basic",
    ),
    OpCase(
        "strided_slice",
        [_f32(4, 7)],
        {"begin": [5], "end": [1], "strides": [-2], "axes": [1]},
        lambda x, **a: x.flip(1)[:, 1:5:2],
        id="slice-negative-step",
    ),
    OpCase(
        "strided_slice",
        [_f32(3, 4)],
        {"begin": [-1], "end": [INT64_MIN], "strides": [-1], "axes": [1]},
        lambda x, **a: x.flip(1),
        id="slice-reverse",
    ),
    OpCase(
        "strided_slice",
        [_f32(3, 4)],
        {"begin": [100], "end": [-100], "strides": [-1]},
        lambda x, **a: x.flip(0),
        id="slice-reverse-clamped",
    ),
    OpCase(
        "strided_slice",
        [_f32(5, 3, 8)],
        {"begin": [2, -3], "end": [INT64_MAX, 5], "axes": [2, 0], "strides": [3, 1]},
        lambda x, **a: x[-3:5, :, 2::3],
        id="slice-two-axes",
    ),
    OpCase(
        "strided_slice",
        [_f32(4, 3)],
        {"begin": [3], "end": [1]},
        lambda x, **a: x[3:1],
        id="slice-empty",
    ),
    # pad: ONNX order; negative pads crop; reflect/edge about the original edges (torch, ORT)
    OpCase(
        "pad",
        [SEED3_INPUT],
        {"pads": SEED3_PADS, "mode": "reflect"},
        _seed3_pad,
        id="pad-seed3-reflectionpad3d-negative",
    ),
    OpCase(
        "pad",
        [_f32(1, 2, 6)],
        {"pads": [0, 0, -1, 0, 0, 2], "mode": "reflect"},
        lambda x, **a: F.pad(x, (-1, 2), mode="reflect"),
        id="pad-reflect-mixed-signs",
    ),
    OpCase(
        "pad",
        [_f32(1, 2, 6)],
        {"pads": [0, 0, -4, 0, 0, 3], "mode": "reflect"},
        lambda x, **a: F.pad(x, (-4, 3), mode="reflect"),
        id="pad-reflect-crop-past-reflection",
    ),
    OpCase(
        "pad",
        [_f32(1, 2, 5, 4)],
        {"pads": [0, 0, 2, -1, 0, 0, -3, 2], "mode": "edge"},
        lambda x, **a: F.pad(x, (-1, 2, 2, -3), mode="replicate"),
        id="pad-edge-mixed",
    ),
    OpCase(
        "pad",
        [_f32(3, 4)],
        {"pads": [1, -1, 2, 3], "value": 1.5},
        lambda x, **a: F.pad(x, (-1, 3, 1, 2), value=1.5),
        id="pad-constant",
    ),
    OpCase(
        "pad",
        [_i64(2, 3)],
        {"pads": [0, 1, 0, 1], "value": 7.0},
        lambda x, **a: F.pad(x, (1, 1), value=7),
        id="pad-constant-int",
    ),
    # shape_of
    OpCase("shape_of", [_f32(2, 3, 4)], reference=lambda x: torch.tensor(x.shape)),
    OpCase(
        "shape_of",
        [np.float32(1.0)],
        reference=lambda x: torch.tensor(x.shape, dtype=torch.int64),
        id="shape_of-0d",
    ),
    # factories
    OpCase("full", [], {"shape": [2, 3], "value": 1.5}, lambda **a: torch.full((2, 3), 1.5)),
    OpCase(
        "full",
        [],
        {"shape": [4], "value": -7.0, "dtype": "int64"},
        lambda **a: torch.full((4,), -7, dtype=torch.int64),
        id="full-int",
    ),
    OpCase("zeros", [], {"shape": [2, 0, 3]}, lambda **a: torch.zeros(2, 0, 3)),
    OpCase(
        "ones",
        [],
        {"shape": [3], "dtype": "bool"},
        lambda **a: torch.ones(3, dtype=torch.bool),
    ),
    OpCase("full_like", [_f32(2, 3)], {"value": 2.5}, lambda x, **a: torch.full_like(x, 2.5)),
    OpCase(
        "full_like",
        [_f32(2, 3)],
        {"value": 3.0, "dtype": "int32"},
        lambda x, **a: torch.full_like(x, 3, dtype=torch.int32),
        id="full_like-dtype",
    ),
    OpCase("zeros_like", [_i64(4, 2)], {}, lambda x: torch.zeros_like(x)),
    OpCase("ones_like", [_f32(3)], {"dtype": "float16"}, lambda x, **a: torch.ones_like(x).half()),
    OpCase("arange", [], {"stop": 5}, lambda **a: torch.arange(5)),
    OpCase(
        "arange",
        [],
        {"start": 1, "stop": 10, "step": 3},
        lambda **a: torch.arange(1, 10, 3),
        id="arange-step",
    ),
    OpCase(
        "arange",
        [],
        {"start": 5, "stop": -3, "step": -2},
        lambda **a: torch.arange(5, -3, -2),
        id="arange-negative-step",
    ),
    OpCase(
        "arange",
        [],
        {"start": 0.0, "stop": 1.0, "step": 0.1},
        lambda **a: torch.arange(0.0, 1.0, 0.1),
        id="arange-float",
    ),
    OpCase(
        "arange",
        [],
        {"stop": 6, "dtype": "float32"},
        lambda **a: torch.arange(6, dtype=torch.float32),
        id="arange-f32",
    ),
    # tile (torch.Tensor.tile / repeat) and repeat (torch.repeat_interleave)
    OpCase("tile", [_f32(2, 3)], {"repeats": [2, 1, 3]}, lambda x, repeats: x.tile(repeats)),
    OpCase("tile", [_f32(2, 3)], {"repeats": [2]}, lambda x, repeats: x.tile(repeats)),
    OpCase(
        "repeat",
        [_f32(2, 3)],
        {"repeats": 2, "axis": 1},
        lambda x, **a: torch.repeat_interleave(x, 2, dim=1),
    ),
    OpCase(
        "repeat",
        [_i64(2, 3)],
        {"repeats": 3},
        lambda x, **a: torch.repeat_interleave(x, 3),
        id="repeat-flat",
    ),
]

# Second-input forms whose inferred dims are '?' (type inference sees the shape/pads tensor's
# type, not its values). opcase.check_case wants exact shapes, so test_shape.py runs these
# with a check that lets '?' match any size.
ANY_DIM_CASES: list[OpCase] = [
    OpCase(
        "reshape",
        [_f32(2, 3, 4), np.array([4, -1], dtype=np.int64)],
        reference=lambda x, s: x.reshape(4, -1),
        const_inputs=(1,),
        id="reshape-shape-input",
    ),
    OpCase(
        "reshape",
        [_f32(2, 3, 4), np.array([0, -1], dtype=np.int64)],
        {"allowzero": False},
        reference=lambda x, s, **a: x.reshape(2, 12),
        const_inputs=(1,),
        id="reshape-shape-input-onnx-zero",
    ),
    OpCase(
        "pad",
        [SEED3_INPUT, np.array(SEED3_PADS, dtype=np.int64)],
        {"mode": "reflect"},
        _seed3_pad,
        const_inputs=(1,),
        id="pad-seed3-pads-input",
    ),
    OpCase(
        "pad",
        [_f32(3, 4), np.array([1, 0, -1, 2], dtype=np.int64)],
        {"value": -2.0},
        lambda x, p, **a: F.pad(x, (0, 2, 1, -1), value=-2.0),
        const_inputs=(1,),
        id="pad-constant-pads-input",
    ),
]
