"""The ONNX export keeps the module hierarchy (issue 35 part 4): node names carry the torch
module path the way torch.onnx.export writes them (``/stages.0/blocks.0/pwconv1/MatMul``),
unique and safe; ``from_onnx`` reads the path back; and Model Explorer's ONNX adapter groups
a ConvNeXt-like export into module namespaces, not one group per op."""

from __future__ import annotations

import onnx
import pytest

from compiler.export import to_onnx
from compiler.export.onnx import node_scope
from compiler.frontend import from_onnx, from_torch
from compiler.ir import parse
from tests.compiler.frontend.torch_zoo import convnext


@pytest.fixture(scope="module")
def convnext_onnx():
    model, args, _ = convnext()
    return to_onnx(from_torch(model, args))


@pytest.mark.parametrize(
    "path, scope",
    [
        ("stages.0.blocks.0.pwconv1", "/stages.0/blocks.0/pwconv1"),
        ("layers.0.0", "/layers.0.0"),
        ("0.conv", "/0/conv"),
        ("head", "/head"),
        (None, ""),
        ("", ""),
        # untrusted names: a slash or whitespace inside a name never opens a namespace
        ("enc/evil.blocks.0 x", "/enc_evil/blocks/0_x"),
        ("blocks.1\nrm", "/blocks/1_rm"),
        ("a..b", "/a/b"),
    ],
)
def test_a_module_path_becomes_torch_style_scopes(path, scope):
    assert node_scope(path) == scope


def test_convnext_nodes_are_named_by_module_path(convnext_onnx):
    names = [n.name for n in convnext_onnx.graph.node]
    assert len(names) == len(set(names))  # unique
    assert "/stages.0/blocks.0/pwconv1/MatMul" in names
    assert "/stages.2/blocks.1/pwconv2/MatMul" in names
    assert "/stem.0/Conv" in names
    # several ONNX nodes from one module: the repeats are numbered, the way torch does
    assert {"/stages.0/blocks.0/act/Mul", "/stages.0/blocks.0/act/Mul_1"} <= set(names)
    # every MatMul is under its own layer: none sits at the root or under an op-named group
    matmuls = [n.name for n in convnext_onnx.graph.node if n.op_type == "MatMul"]
    assert len(matmuls) == 10 and all(m.count("/") >= 3 for m in matmuls)
    onnx.checker.check_model(convnext_onnx)


def test_the_module_path_reads_back_through_from_onnx(convnext_onnx):
    back = from_onnx(convnext_onnx)
    paths = {n.prov.module_path for n in back["main"].iter_nodes()}
    assert {"stages.0.blocks.0.pwconv1", "stages.2.blocks.1.act", "stem.0"} <= paths


def test_a_node_without_a_module_path_sits_at_the_root():
    m = parse(
        """
        def @main(%x: f32[2, 3]) -> f32[2, 3] {
          %a: f32[2, 3] = relu(%x)
          %b: f32[2, 3] = relu(%a)
          return %b
        }
        """
    )
    names = [n.name for n in to_onnx(m).graph.node]
    assert names == ["/Relu", "/Relu_1"]


def test_model_explorer_groups_the_export_by_module(convnext_onnx, tmp_path):
    adapter = pytest.importorskip("model_explorer_onnx.main")
    path = tmp_path / "convnext.onnx"
    onnx.save(convnext_onnx, path)
    graphs = adapter.ONNXAdapter().convert(str(path), {})["graphs"]
    main = graphs[0]
    namespaces = {n.namespace for n in main.nodes}
    root = main.id
    assert f"{root}/stages.0/blocks.0/pwconv1" in namespaces
    assert f"{root}/stages.3/blocks.0/act" in namespaces
    by_label: dict[str, set[str]] = {}
    for n in main.nodes:
        by_label.setdefault(n.label, set()).add(n.namespace)
    # the ten MatMuls are in ten module groups, not one "matmul" group
    assert len(by_label["MatMul"]) == 10
    assert not any(ns.rsplit("/", 1)[-1].lower() == "matmul" for ns in namespaces)
    # a layer's weights sit with the layer that uses them
    weight = next(n for n in main.nodes if n.id.endswith(" stages.0.blocks.0.pwconv1.weight"))
    assert weight.namespace == f"{root}/stages.0/blocks.0/pwconv1"
