"""Vision ops (issue #17): Resize's forms beyond the ``resize`` IR op (cubic, antialias,
tf_crop_and_resize, scales / sizes computed at run time), Upsample, GridSample, AffineGrid.

- the ONNX backend node tests of these ops pass through the coverage harness;
- models built here agree with onnxruntime, with a symbolic batch where it makes sense;
- compiled with ``compiler.backend.build`` they agree with the interpreter;
- unsupported or malformed forms fail with a clear error."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend import UnsupportedOperatorError, from_onnx
from compiler.frontend.onnx_frontend import OnnxImportError
from compiler.interpret import run
from tests.compiler.frontend.onnx_helpers import load_harness as _harness
from tests.compiler.frontend.onnx_helpers import ort_run as _ort

ort = pytest.importorskip("onnxruntime")

F = TensorProto.FLOAT
rng = np.random.default_rng(17)


NODE_TESTS = (
    "test_resize_",
    "test_upsample_",
    "test_gridsample",
    "test_affine_grid_",
    "test_roialign",
    "test_nonmaxsuppression",
    "test_basic_deform_conv",
    "test_deform_conv",
)
EXPECTED_UNSUPPORTED = {  # If branches that use ops of another family
    "test_affine_grid_2d_expanded",
    "test_affine_grid_2d_align_corners_expanded",
}


def test_the_node_tests_of_the_vision_ops_pass():
    harness = _harness()
    dirs = [d for d in sorted(harness.node_test_dir().iterdir()) if d.name.startswith(NODE_TESTS)]
    assert len(dirs) >= 39 + 1 + 18 + 8 + 3 + 10 + 4
    bad = []
    for d in dirs:
        if d.name in EXPECTED_UNSUPPORTED:
            continue
        r = harness.run_case(d)
        if r.status != "passed":
            bad.append(f"{d.name}: {r.status} {r.message}")
    assert bad == []


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _model(nodes, inputs, inits=(), opset=20):
    graph = helper.make_graph(nodes, "g", inputs, [_vi("y", F, None)], list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _reference(model, *args):
    from onnx.reference import ReferenceEvaluator

    names = [i.name for i in model.graph.input]
    return ReferenceEvaluator(model).run(None, dict(zip(names, args, strict=True)))


def _check(model, *args, atol=1e-5, compile_too=False, against=_ort):
    module = from_onnx(model.SerializeToString())
    (got,) = run(module, *args)
    (want,) = against(model, *args)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)
    if compile_too:
        from compiler.backend import build

        (compiled,) = build(module)(*args)
        assert compiled.shape == got.shape
        np.testing.assert_allclose(compiled, got, rtol=1e-5, atol=1e-5)
    return module


def _resize(attrs, x_shape, scales=None, sizes=None, roi=None, runtime=False, opset=19):
    names = ["x", "", "", ""]
    inputs, inits, args = [_vi("x", F, x_shape)], [], []
    for slot, name, value, dtype in (
        (1, "roi", roi, np.float32),
        (2, "scales", scales, np.float32),
        (3, "sizes", sizes, np.int64),
    ):
        if value is None:
            continue
        names[slot] = name
        value = np.array(value, dtype)
        if runtime and slot != 1:
            code = TensorProto.FLOAT if dtype is np.float32 else TensorProto.INT64
            inputs.append(_vi(name, code, [len(value)]))
            args.append(value)
        else:
            inits.append(numpy_helper.from_array(value, name))
    node = helper.make_node("Resize", names, ["y"], **attrs)
    return _model([node], inputs, inits, opset=opset), args


@pytest.mark.parametrize(
    "attrs, scales, sizes",
    [
        ({"mode": "cubic"}, [1, 1, 1.7, 0.6], None),
        ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, None, [2, 3, 7, 4]),
        ({"mode": "cubic", "coordinate_transformation_mode": "align_corners"}, [1, 1, 2, 2], None),
        ({"mode": "linear", "antialias": 1}, [1, 1, 0.5, 0.7], None),
        ({"mode": "cubic", "antialias": 1}, None, [2, 3, 3, 2]),
        (
            {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"},
            [1, 1, 2.3, 1.5],
            None,
        ),
    ],
)
@pytest.mark.parametrize("runtime", [False, True])
def test_resize_modes_match_onnxruntime(attrs, scales, sizes, runtime):
    model, extra = _resize(attrs, [2, 3, 5, 6], scales, sizes, runtime=runtime)
    module = _check(model, rng.standard_normal((2, 3, 5, 6)).astype(np.float32), *extra)
    dims = module.main.ret_type.shape
    assert all(isinstance(d, int) for d in dims) != runtime  # runtime sizes: unknown dims


def test_resize_tf_crop_and_resize_with_extrapolation():
    model, _ = _resize(
        {
            "mode": "linear",
            "coordinate_transformation_mode": "tf_crop_and_resize",
            "extrapolation_value": 7.0,
            "axes": [3, 2],
        },
        [1, 2, 5, 6],
        sizes=[4, 3],
        roi=[0.1, -0.2, 1.3, 0.9],
    )
    _check(model, rng.standard_normal((1, 2, 5, 6)).astype(np.float32))


def test_resize_cubic_compiles_and_keeps_a_symbolic_batch():
    model, _ = _resize({"mode": "cubic"}, ["n", 2, 4, 5], scales=[1, 1, 2, 1.5])
    module = from_onnx(model.SerializeToString())
    assert [str(d) for d in module.main.ret_type.shape] == ["n", "2", "8", "7"]
    from compiler.backend import build

    exe = build(module)
    for n in (1, 3):
        x = rng.standard_normal((n, 2, 4, 5)).astype(np.float32)
        (want,) = _ort(model, x)
        for (got,) in (run(module, x), exe(x)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_resize_runtime_sizes_nearest_interprets():
    model, extra = _resize({"mode": "nearest"}, [1, 2, 3, 4], sizes=[1, 2, 7, 2], runtime=True)
    _check(model, rng.standard_normal((1, 2, 3, 4)).astype(np.float32), *extra)


def test_resize_bad_forms_fail_clearly():
    cubic = {"mode": "cubic"}
    with pytest.raises(OnnxImportError, match="sizes must give one size per axis"):
        from_onnx(_resize(cubic, [1, 1, 4, 4], sizes=[1, 1, 4])[0], strict=True)
    with pytest.raises(OnnxImportError, match="must be positive"):
        from_onnx(_resize(cubic, [1, 1, 4, 4], scales=[1, 1, -2, 1])[0], strict=True)
    with pytest.raises(OnnxImportError, match="sizes .* must be 0 to"):
        from_onnx(_resize(cubic, [1, 1, 4, 4], sizes=[1, 1, 4, 1 << 40])[0], strict=True)
    crop = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}
    with pytest.raises(OnnxImportError, match="needs roi"):
        from_onnx(_resize(crop, [1, 1, 4, 4], sizes=[1, 1, 2, 2])[0], strict=True)
    with pytest.raises(UnsupportedOperatorError, match="cubic Resize of i32 data"):
        model, _ = _resize(cubic, [1, 1, 4, 4], scales=[1, 1, 2, 2])
        model.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
        from_onnx(model, strict=True)


# ----- Upsample --------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [7, 9])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_matches_onnxruntime_and_compiles(opset, mode):
    scales = [1.0, 1.0, 2.5, 1.5]
    if opset == 7:
        node = helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=scales)
        inits = []
    else:
        node = helper.make_node("Upsample", ["x", "s"], ["y"], mode=mode)
        inits = [numpy_helper.from_array(np.array(scales, np.float32), "s")]
    model = _model([node], [_vi("x", F, [2, 3, 3, 4])], inits, opset=opset)
    _check(model, rng.standard_normal((2, 3, 3, 4)).astype(np.float32), compile_too=True)


def test_upsample_with_computed_scales_and_bad_scales():
    node = helper.make_node("Upsample", ["x", "s"], ["y"], mode="nearest")
    model = _model([node], [_vi("x", F, [1, 2, 3, 4]), _vi("s", F, [4])], opset=9)
    _check(
        model,
        rng.standard_normal((1, 2, 3, 4)).astype(np.float32),
        np.array([1, 1, 2, 3], np.float32),
    )
    bad = _model(
        [helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 0.5, 2.0])],
        [_vi("x", F, [1, 2, 3, 4])],
        opset=7,
    )
    with pytest.raises(OnnxImportError, match="scales"):
        from_onnx(bad)


# ----- GridSample, AffineGrid -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample_matches_onnxruntime(mode, padding, align):
    node = helper.make_node(
        "GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align
    )
    model = _model([node], [_vi("x", F, ["n", 2, 4, 5]), _vi("g", F, ["n", 3, 6, 2])])
    for n in (1, 2):
        x = rng.standard_normal((n, 2, 4, 5)).astype(np.float32)
        g = rng.uniform(-1.4, 1.4, (n, 3, 6, 2)).astype(np.float32)
        # onnxruntime's cubic border clamps differently from ONNX's reference (and node tests)
        against = _reference if (mode, padding) == ("cubic", "border") else _ort
        _check(model, x, g, atol=1e-4, against=against)


def test_grid_sample_compiles():
    node = helper.make_node("GridSample", ["x", "g"], ["y"], mode="linear", padding_mode="border")
    model = _model([node], [_vi("x", F, [2, 3, 4, 5]), _vi("g", F, [2, 3, 6, 2])])
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g = rng.uniform(-1.2, 1.2, (2, 3, 6, 2)).astype(np.float32)
    _check(model, x, g, compile_too=True)


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_then_grid_sample_matches_onnxruntime_and_compiles(align):
    size = numpy_helper.from_array(np.array([2, 3, 5, 4], np.int64), "size")
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["g"], align_corners=align),
        helper.make_node("GridSample", ["x", "g"], ["y"], align_corners=align),
    ]
    model = _model(nodes, [_vi("theta", F, [2, 2, 3]), _vi("x", F, [2, 3, 6, 7])], [size])
    theta = rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    _check(model, theta, rng.standard_normal((2, 3, 6, 7)).astype(np.float32), compile_too=True)


def test_affine_grid_bad_theta_fails_clearly():
    size = numpy_helper.from_array(np.array([2, 3, 5, 4], np.int64), "size")
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"])
    model = _model([node], [_vi("theta", F, [2, 4, 3])], [size])
    with pytest.raises(OnnxImportError, match="theta"):
        from_onnx(model)


# ----- a small FPN-style detector head from torch.onnx.export -----------------------------


def _tiny_fpn():
    import torch
    import torch.nn.functional as tf
    from torch import nn

    class TinyFPN(nn.Module):
        """Conv backbone at 3 scales, a top-down path upsampled by nearest (x2), bilinear (to
        the lateral's size) and bicubic (x2), a 1x1-conv head."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU())
            self.c2 = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())
            self.c3 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
            self.l1, self.l2 = nn.Conv2d(8, 12, 1), nn.Conv2d(16, 12, 1)
            self.l3 = nn.Conv2d(32, 12, 1)
            self.head = nn.Conv2d(12, 5, 1)

        def forward(self, x):
            f1 = self.c1(x)
            f2 = self.c2(f1)
            f3 = self.c3(f2)
            p2 = self.l2(f2) + tf.interpolate(self.l3(f3), scale_factor=2.0, mode="nearest")
            up = tf.interpolate(p2, size=f1.shape[-2:], mode="bilinear", align_corners=False)
            cubic = tf.interpolate(p2, scale_factor=2.0, mode="bicubic", align_corners=False)
            return self.head(self.l1(f1) + up + 0.5 * cubic)

    torch.manual_seed(0)
    return TinyFPN().eval()


@pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
def test_tiny_fpn_from_torch_onnx_export_checks_clean_and_compiles(exporter, tmp_path):
    torch = pytest.importorskip("torch")
    import onnx

    import explorer

    model = _tiny_fpn()
    x, other = torch.randn(2, 3, 32, 32), torch.randn(3, 3, 32, 32)
    path = str(tmp_path / "fpn.onnx")
    if exporter == "dynamo":
        batch = {"x": {0: torch.export.Dim("batch")}}
        torch.onnx.export(model, (x,), path, dynamo=True, dynamic_shapes=batch, verbose=False)
    else:
        axes = {"x": {0: "batch"}, "out": {0: "batch"}}
        torch.onnx.export(
            model,
            (x,),
            path,
            dynamo=False,
            input_names=["x"],
            output_names=["out"],
            dynamic_axes=axes,
        )
    proto = onnx.load(path)
    modes = sorted(
        onnx.helper.get_attribute_value(a).decode()
        for n in proto.graph.node
        if n.op_type == "Resize"
        for a in n.attribute
        if a.name == "mode"
    )
    assert modes == ["cubic", "linear", "nearest"]
    trace = explorer.explore(path, (x,), "default,legalize-ops,codegen")
    assert trace.failure is None
    main = trace.imported.module["main"]
    assert str(main.ret_type) == "f32[batch, 5, 16, 16]"
    for size in (x, other):
        report = trace.check((size,), progress=False)
        assert report.numbers_checked
        assert [str(f) for f in report.findings if f.is_failure] == []
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {proto.graph.input[0].name: other.numpy()})
    (got,) = trace["codegen"].executable()(other.numpy())
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ----- RoiAlign ----------------------------------------------------------------------------


def _roi_align_model(opset=16, **attrs):
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    inputs = [
        _vi("x", F, [2, 3, 8, 9]),
        _vi("rois", F, ["r", 4]),
        _vi("idx", TensorProto.INT64, ["r"]),
    ]
    return _model([node], inputs, opset=opset)


def _rois(count):
    corner = rng.uniform(-1, 6, (count, 2))
    extent = rng.uniform(0.5, 5, (count, 2))
    rois = np.concatenate([corner, corner + extent], axis=1).astype(np.float32)
    return rois, rng.integers(0, 2, count).astype(np.int64)


@pytest.mark.parametrize("how", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_matches_onnxruntime_and_compiles(how, mode):
    model = _roi_align_model(
        coordinate_transformation_mode=how,
        mode=mode,
        output_height=3,
        output_width=4,
        sampling_ratio=2,
        spatial_scale=0.8,
    )
    x = rng.standard_normal((2, 3, 8, 9)).astype(np.float32)
    for count in (1, 5):
        _check(model, x, *_rois(count), atol=1e-5)
    from compiler.backend import build

    module = from_onnx(model)
    exe = build(module)
    args = (x, *_rois(4))
    np.testing.assert_allclose(exe(*args)[0], run(module, *args)[0], rtol=1e-5, atol=1e-5)


def test_roi_align_adaptive_sampling_is_unsupported():
    with pytest.raises(UnsupportedOperatorError, match="sampling_ratio 0"):
        from_onnx(_roi_align_model(output_height=2, output_width=2), strict=True)
    with pytest.raises(OnnxImportError, match="sampling_ratio"):
        from_onnx(_roi_align_model(output_height=1 << 20, sampling_ratio=2), strict=True)


# ----- NonMaxSuppression -------------------------------------------------------------------


def _nms_model(center=0, count=12):
    node = helper.make_node(
        "NonMaxSuppression", ["b", "s", "k", "iou", "least"], ["y"], center_point_box=center
    )
    inputs = [
        _vi("b", F, ["n", count, 4]),
        _vi("s", F, ["n", 3, count]),
        _vi("k", TensorProto.INT64, [1]),
        _vi("iou", F, [1]),
        _vi("least", F, [1]),
    ]
    graph = helper.make_graph([node], "g", inputs, [_vi("y", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("center", [0, 1])
def test_non_max_suppression_matches_onnxruntime(center):
    model = _nms_model(center)
    module = from_onnx(model)
    for n, k in ((1, 3), (2, 10)):
        xy = rng.uniform(0, 4, (n, 12, 2))
        wh = rng.uniform(0.5, 3, (n, 12, 2))
        boxes = np.concatenate([xy, wh] if center else [xy, xy + wh], axis=2).astype(np.float32)
        scores = rng.uniform(0, 1, (n, 3, 12)).astype(np.float32)
        args = (
            boxes,
            scores,
            np.array([k], np.int64),
            np.array([0.3], np.float32),
            np.array([0.2], np.float32),
        )
        (want,) = _ort(model, *args)
        (got,) = run(module, *args)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def test_non_max_suppression_of_too_many_boxes_is_unsupported():
    with pytest.raises(UnsupportedOperatorError, match="more than 512 boxes"):
        from_onnx(_nms_model(count=600), strict=True)


# ----- DeformConv --------------------------------------------------------------------------


def _deform_model(group=1, offset_group=1, with_mask=True):
    names = ["x", "w", "off", "bias", "mask"] if with_mask else ["x", "w", "off"]
    node = helper.make_node(
        "DeformConv",
        names,
        ["y"],
        kernel_shape=[3, 2],
        pads=[1, 0, 1, 1],
        strides=[2, 1],
        dilations=[1, 2],
        group=group,
        offset_group=offset_group,
    )
    # x [n, 4, 7, 6] -> out [n, 6, 4, 5]
    inputs = [
        _vi("x", F, ["n", 4, 7, 6]),
        _vi("w", F, [6, 4 // group, 3, 2]),
        _vi("off", F, ["n", offset_group * 12, 4, 5]),
    ]
    if with_mask:
        inputs += [_vi("bias", F, [6]), _vi("mask", F, ["n", offset_group * 6, 4, 5])]
    return _model([node], inputs, opset=19)


def _deform_args(n, group=1, offset_group=1, with_mask=True):
    args = [
        rng.standard_normal((n, 4, 7, 6)).astype(np.float32),
        rng.standard_normal((6, 4 // group, 3, 2)).astype(np.float32),
        rng.uniform(-2, 2, (n, offset_group * 12, 4, 5)).astype(np.float32),
    ]
    if with_mask:
        args.append(rng.standard_normal(6).astype(np.float32))
        args.append(rng.uniform(0, 1, (n, offset_group * 6, 4, 5)).astype(np.float32))
    return args


@pytest.mark.parametrize("group, offset_group, with_mask", [(1, 1, False), (2, 2, True)])
def test_deform_conv_matches_onnxruntime_and_the_reference_and_compiles(
    group, offset_group, with_mask
):
    model = _deform_model(group, offset_group, with_mask)
    module = from_onnx(model)
    assert [str(d) for d in module.main.ret_type.shape] == ["n", "6", "4", "5"]
    from compiler.backend import build

    exe = build(module)
    for n in (1, 2):
        args = _deform_args(n, group, offset_group, with_mask)
        (got,) = run(module, *args)
        for against in (_ort, _reference):
            (want,) = against(model, *args)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(exe(*args)[0], got, rtol=1e-5, atol=1e-5)


def test_deform_conv_bad_offset_fails_clearly():
    model = _deform_model()
    model.graph.input[2].type.tensor_type.shape.dim[1].dim_value = 5
    with pytest.raises(OnnxImportError, match="offset"):
        from_onnx(model)
