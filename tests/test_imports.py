"""No import circle closes, not even through ``if TYPE_CHECKING:`` (issue #40): the modules of
compiler/, explorer/, widgets/ and passlens/ form a layered graph, so an annotation points down
(a module below the trace names ``explorer.step.Step``, or a small Protocol of its own, never
``explorer.trace.Trace``).

What counts as an edge, read from the source with ``ast``:

- an import at module level (class bodies and ``try`` / ``if`` blocks included): it runs when the
  module is imported, so a circle of these is a circle at run time;
- an import under ``if TYPE_CHECKING:``: it never runs, but it says which module a module's
  annotations depend on, and a circle of these is a circle in the design (the annotations of a
  lower module naming a higher one), which a type checker also has to untangle;
- a package that imports every module of its folder with ``pkgutil.iter_modules(__path__)``.

Imports inside a function do not count: they run when the function is called, after every
module is loaded, and that is how a layer reaches up on purpose at run time (the display hooks
``Trace.stepper()`` and ``Step._repr_html_`` import widgets/; ``Trace.save`` imports
explorer.store). tests/test_layers.py holds those to their own rules. An import of a module's own
package (``explorer.check.report`` importing ``explorer.check``) is no edge: Python runs the
package first anyway."""

from __future__ import annotations

import ast
import graphlib

from tests.source_modules import MODULES, ROOT
from tests.source_modules import known as _known


def _targets(node: ast.Import | ast.ImportFrom, mod: str, is_pkg: bool) -> list[str]:
    """The dotted names an import statement of module ``mod`` may load."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = ".".join(parts[: len(parts) - (node.level - 1)])
        if node.module:
            base = f"{base}.{node.module}"
    else:
        base = node.module or ""
    return [f"{base}.{a.name}" for a in node.names] + [base]


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def edges() -> list[tuple[str, str, str]]:
    """(module, imported module, "file:line") for every import that counts (see above)."""
    out = []
    for mod, path in MODULES.items():
        text = path.read_text()
        is_pkg = path.name == "__init__.py"
        stack: list[ast.AST] = [ast.parse(text)]
        while stack:
            node = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue  # run when called: not an edge
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    seen = set()
                    for target in _targets(child, mod, is_pkg):
                        k = _known(target)
                        if k and k != mod and not mod.startswith(k + ".") and k not in seen:
                            seen.add(k)
                            out.append((mod, k, f"{path.relative_to(ROOT)}:{child.lineno}"))
                stack.append(child)
        if is_pkg and "iter_modules(__path__)" in text:
            for child in MODULES:
                if child.rpartition(".")[0] == mod:
                    out.append((mod, child, f"{path.relative_to(ROOT)} (iter_modules)"))
    return out


def cycle(found: list[tuple[str, str, str]]) -> list[str]:
    """One circle of ``found`` as the import lines that close it ([] when there is none)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, t, _ in found:
        graph[m].add(t)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        ring = e.args[1]  # [a, b, ..., a]: each imported by the one after it
        where = {(m, t): at for m, t, at in found}
        return [
            f"{ring[i + 1]} imports {ring[i]} ({where[ring[i + 1], ring[i]]})"
            for i in range(len(ring) - 1)
        ]
    return []


def test_the_graph_sees_type_checking_imports_and_skips_function_level_ones():
    found = {(m, t) for m, t, _ in edges()}
    assert ("explorer.trace", "explorer.step") in found  # at module level
    assert ("widgets.findings", "explorer.diff") in found  # under TYPE_CHECKING only
    assert ("explorer.trace", "widgets.stepper") not in found  # in Trace.stepper()
    assert ("compiler.ops", "compiler.ops.nn") in found  # iter_modules(__path__)


def test_a_circle_is_found_and_named_by_its_import_lines():
    made_up = [
        ("explorer.step", "explorer.diff", "explorer/step.py:1"),
        ("explorer.diff", "explorer.step", "explorer/diff.py:2"),
    ]
    ring = cycle(made_up)
    assert sorted(ring) == [
        "explorer.diff imports explorer.step (explorer/diff.py:2)",
        "explorer.step imports explorer.diff (explorer/step.py:1)",
    ]


def test_no_import_circle_even_through_type_checking():
    assert cycle(edges()) == []
