"""compiler/frontend/torch_ops/ is split by op family: every module is named after a family
of compiler/ops/ (or ``control``, as frontend/onnx_ops/ names it) or is a declared shared
module, each family module holds converters and a shared one none, no file grows past the
limit, and what other modules import from the package is public."""

from __future__ import annotations

import pkgutil
from pathlib import Path

from compiler.frontend import onnx_ops, torch_ops
from compiler.frontend.torch_convert import ATEN_CHECKS, ATEN_CONVERTERS
from compiler.ops import all_ops, get_op
from tests.compiler.export.test_onnx_families import private_imports_from

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "compiler" / "frontend" / "torch_ops"
MAX_LINES = 800
# If and Loop are IR nodes, not registered ops, so no module of compiler/ops/ is named after
# them; the ONNX frontend's converters of If / Loop / Scan are in onnx_ops/control.py
NODE_FAMILIES = {"control"}


def modules(package) -> list[str]:
    return [info.name for info in pkgutil.iter_modules(package.__path__)]


def op_families() -> set[str]:
    """The modules of compiler/ops/ that define ops."""
    return {get_op(op).infer.__module__.removeprefix("compiler.ops.") for op in all_ops()}


def holding(registry: dict) -> set[str]:
    """The modules of torch_ops/ whose functions are in a registry."""
    return {
        fn.__module__.rsplit(".", 1)[1]
        for fn in registry.values()
        if fn.__module__.startswith("compiler.frontend.torch_ops.")
    }


def test_the_families_named_without_an_op_are_families_of_the_onnx_frontend_too():
    assert NODE_FAMILIES <= set(modules(onnx_ops))
    assert NODE_FAMILIES.isdisjoint(op_families())


def test_every_module_is_a_family_or_a_declared_shared_one():
    allowed = op_families() | NODE_FAMILIES | set(torch_ops.SHARED)
    assert {m for m in modules(torch_ops) if m not in allowed} == set()
    assert set(torch_ops.SHARED) <= set(modules(torch_ops))
    assert {"elementwise", "shape", "reduce", "nn", "index"} <= set(modules(torch_ops))


def test_each_family_module_holds_converters_and_a_shared_one_none():
    families = {m for m in modules(torch_ops) if m not in torch_ops.SHARED}
    assert families - holding(ATEN_CONVERTERS) == set()
    assert set(torch_ops.SHARED) & (holding(ATEN_CONVERTERS) | holding(ATEN_CHECKS)) == set()


def test_converters_sit_with_the_family_of_the_ops_they_make():
    # spot checks of the ones moved out of the section they sat in (torch_ops.py, before #40)
    where = {t: ATEN_CONVERTERS[t].__module__.rsplit(".", 1)[1] for t in ATEN_CONVERTERS}
    assert where["aten.tril.default"] == where["aten.one_hot.default"] == "index"
    assert where["aten.softmax.int"] == where["aten.linear.default"] == "nn"
    assert where["aten.sum.dim_IntList"] == "reduce"
    assert where["aten.view.default"] == where["aten.arange.default"] == "shape"
    assert where["aten.add.Tensor"] == "elementwise"
    assert where["higher_order.cond"] == "control"


def test_no_file_of_the_package_grows_past_the_limit():
    lines = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert len(lines) > 5
    assert {f: n for f, n in lines.items() if n > MAX_LINES} == {}


def test_what_other_modules_import_from_the_package_is_public():
    assert private_imports_from("compiler.frontend.torch_ops") == []
