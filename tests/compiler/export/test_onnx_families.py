"""compiler/export/onnx/ is split by op family: each op's exporter is in the module named after
the module of compiler/ops/ that defines the op, every other module is a declared shared one,
no file grows past the limit, and what other modules import from the package is public."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

from compiler.export import onnx as onnx_export
from compiler.export.onnx import EXPORTERS
from compiler.ops import all_ops, get_op

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "compiler" / "export" / "onnx"
MAX_LINES = 800


def op_family(op: str) -> str:
    """The module of compiler/ops/ that defines ``op`` (its type inference lives there)."""
    module = get_op(op).infer.__module__
    assert module.startswith("compiler.ops."), f"{op} is defined in {module}, not compiler/ops/"
    family = module.removeprefix("compiler.ops.")
    return family


def modules() -> list[str]:
    return [info.name for info in pkgutil.iter_modules(onnx_export.__path__)]


def misplaced(exporters: dict) -> dict[str, str]:
    """The ops whose exporter is not in export/onnx/<the op's family>.py, with where it is."""
    return {
        op: f"{fn.__module__} (family {op_family(op)})"
        for op, fn in exporters.items()
        if fn.__module__ != f"compiler.export.onnx.{op_family(op)}"
    }


def test_each_exporter_is_in_the_module_of_its_ops_family():
    assert len(EXPORTERS) > 100
    assert misplaced(EXPORTERS) == {}


def test_the_family_check_finds_a_misplaced_exporter():
    wrong = {"matmul": EXPORTERS["reshape"], "reshape": EXPORTERS["reshape"]}
    assert misplaced(wrong) == {"matmul": "compiler.export.onnx.shape (family nn)"}


def test_every_module_is_a_family_with_exporters_or_a_declared_shared_one():
    families = {op_family(op) for op in all_ops()}
    holding = {fn.__module__.rsplit(".", 1)[1] for fn in EXPORTERS.values()}
    assert {m for m in modules() if m not in families and m not in onnx_export.SHARED} == set()
    assert {m for m in modules() if m not in onnx_export.SHARED and m not in holding} == set()
    assert set(onnx_export.SHARED) & holding == set()  # a shared module holds no exporter
    assert set(onnx_export.SHARED) <= set(modules())


def test_no_file_of_the_package_grows_past_the_limit():
    lines = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert len(lines) > 5
    assert {f: n for f, n in lines.items() if n > MAX_LINES} == {}


def private_imports_from(prefix: str) -> list[str]:
    """Every ``from <prefix>... import _name`` in the project's code and tests."""
    found = []
    for top in ("compiler", "explorer", "widgets", "passlens", "tests", "bench"):
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom) or not node.module:
                    continue
                if node.module == prefix or node.module.startswith(prefix + "."):
                    found += [
                        f"{path.relative_to(ROOT)}: {node.module}:{a.name}"
                        for a in node.names
                        if a.name.startswith("_")
                    ]
    return found


def test_what_other_modules_import_from_the_package_is_public():
    assert private_imports_from("compiler.export.onnx") == []
