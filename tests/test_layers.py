"""The layers hold (issue #15): compiler/ imports nothing of ours; explorer/ imports widgets/
only in its display hooks; explorer/ and widgets/ take from compiler/ only what a compiler
package exports, and nothing outside an adapter's folder (explorer/passlens/, tvm/, inductor/)
names a compiler's internals (issue 40: the rule in explorer/passlens/__init__.py, its
exceptions listed with their reasons); passlens/ (the command and serve) is on top, imported by
none of them; no
import cycles; no file in explorer/, widgets/ or passlens/ over about 600 lines, the
JavaScript of widgets/static/ included. Read from the source with ``ast`` (imports inside
functions count; those under ``if TYPE_CHECKING`` do not: tests/test_imports.py holds those
to no cycle). There are no exceptions: a new violation fails."""

from __future__ import annotations

import ast
import importlib

from tests.source_modules import MODULES, ROOT
from tests.source_modules import known as _known

MAX_LINES = 600

# the only places the explorer imports widgets (the CLI and serve are in passlens, above both)
DISPLAY_HOOKS = {
    ("explorer.step", "Step._repr_html_"),
    ("explorer.trace", "Trace.to_html"),
    ("explorer.trace", "Trace.stepper"),
    ("explorer.check.param_map", "ParamMap._repr_html_"),
    ("explorer.check.layers", "ErrorMap._repr_html_"),
    ("explorer.compare", "Comparison._repr_html_"),
}


def _imports():
    """(module, imported module, line, enclosing function or "") for every runtime import."""
    for mod, path in MODULES.items():
        tree = ast.parse(path.read_text())
        is_pkg = path.name == "__init__.py"

        def targets(node, mod=mod, is_pkg=is_pkg):
            if isinstance(node, ast.Import):
                return [a.name for a in node.names]
            base = (
                mod
                if not node.level
                else ".".join(
                    (mod.split(".") if is_pkg else mod.split(".")[:-1])[
                        : None if node.level == 1 else 1 - node.level
                    ]
                )
            )
            if node.level and node.module:
                base = f"{base}.{node.module}"
            elif not node.level:
                base = node.module
            return [f"{base}.{a.name}" for a in node.names] + [base]

        stack = [(tree, "", False)]
        while stack:
            node, func, typing_only = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner, guard = func, typing_only
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    inner = f"{func}.{child.name}" if func else child.name
                elif isinstance(child, ast.ClassDef):
                    inner = f"{func}.{child.name}" if func else child.name
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    guard = True
                if isinstance(child, (ast.Import, ast.ImportFrom)) and not guard:
                    seen = set()
                    for t in targets(child):
                        k = _known(t) if t else None
                        if k and k != mod and k not in seen:
                            seen.add(k)
                            yield mod, k, child.lineno, func
                stack.append((child, inner, guard))
        # a package that imports every module in its folder (``pkgutil.iter_modules``:
        # compiler.ops, the ONNX converters, the pass library) imports each of them
        if is_pkg and "iter_modules(__path__)" in path.read_text():
            for child in MODULES:
                if child.rpartition(".")[0] == mod:
                    yield mod, child, 0, ""


IMPORTS = list(_imports())


def test_the_compiler_imports_nothing_of_ours():
    bad = [
        f"{m}:{line} imports {t}"
        for m, t, line, _ in IMPORTS
        if m.startswith("compiler") and not t.startswith("compiler")
    ]
    assert bad == []


def test_the_explorer_imports_widgets_only_in_its_display_hooks():
    found = {
        (m, func)
        for m, t, _, func in IMPORTS
        if m.startswith("explorer") and t.startswith("widgets")
    }
    assert found - DISPLAY_HOOKS == set()


def test_nothing_below_passlens_imports_it():
    bad = [
        f"{m}:{line} imports {t}"
        for m, t, line, _ in IMPORTS
        if t.partition(".")[0] == "passlens" and m.partition(".")[0] != "passlens"
    ]
    assert bad == []


def _is_package(name: str) -> bool:
    return name in MODULES and MODULES[name].name == "__init__.py"


def _compiler_imports():
    """(file, line, module, name) for every import from compiler/ in explorer/ and widgets/
    (``import compiler.x`` gives name "")."""
    for mod, path in MODULES.items():
        if not mod.startswith(("explorer", "widgets")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "compiler":
                        yield str(path.relative_to(ROOT)), node.lineno, alias.name, ""
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                if node.module.split(".")[0] == "compiler":
                    for alias in node.names:
                        yield str(path.relative_to(ROOT)), node.lineno, node.module, alias.name


def test_explorer_and_widgets_take_from_the_compiler_only_what_its_packages_export():
    """A name comes from a compiler package (``compiler`` or ``compiler/x/__init__.py``) that
    lists it in ``__all__``, or is a subpackage: the modules inside a package are its own."""
    bad = []
    for file, line, module, name in _compiler_imports():
        if not name:
            ok = _is_package(module)
        else:
            ok = _is_package(module) and (
                _is_package(f"{module}.{name}")
                or name in getattr(importlib.import_module(module), "__all__", ())
            )
        if not ok:
            bad.append(f"{file}:{line} from {module} import {name or '*'}")
    assert bad == []


def _cycles() -> list[set[str]]:
    """Strongly connected sets of modules (Tarjan's algorithm, iterative); an import of one's
    own package ``__init__`` from inside it is not a cycle edge (Python runs it first)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, t, _, _ in IMPORTS:
        if not m.startswith(t + "."):
            graph[m].add(t)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on, stack, out = set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_no_import_cycles():
    assert [sorted(c) for c in _cycles()] == []


def test_no_file_in_explorer_widgets_or_passlens_grows_past_its_limit():
    lines = {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines())
        for m, p in MODULES.items()
        if m.startswith(("explorer", "widgets", "passlens"))
    }
    assert {f: n for f, n in lines.items() if n > MAX_LINES} == {}


def test_no_script_of_the_widgets_grows_past_the_limit():
    """The views' JavaScript (widgets/static/*.js) is held to the same limit as the Python."""
    scripts = sorted((ROOT / "widgets" / "static").glob("*.js"))
    assert len(scripts) >= 10  # the graph component's modules, the report's, the maps'...
    lines = {p.name: len(p.read_text().splitlines()) for p in scripts}
    assert {f: n for f, n in lines.items() if n > MAX_LINES} == {}


# ----- nothing outside an adapter's folder names a compiler's internals (issue 40) -------------
# The rule is written down in explorer/passlens/__init__.py: passlens's IR is the explorer's
# neutral IR, so a neutral explorer module may import compiler.ir, the error classes of
# compiler, the pass manager's records, the opaque-op sandbox every compiler's reference run
# goes through and the float64 reference's matmul; every other compiler/ name is passlens's
# internals, named only in explorer/passlens/ (a passlens-only capability is an Adapter method).
ADAPTER_FOLDERS = ("explorer.passlens", "explorer.tvm", "explorer.inductor")
NEUTRAL_FROM_COMPILER = {
    "compiler": {
        "PasslensError",
        "LimitError",
        "TypeMismatch",
        "InterpretError",
        "matmul_float64",
    },
    "compiler.passes": {"Snapshot", "SkippedPass", "CallingConvention"},
    # the opaque-op sandbox: which ops may run (trust), sizing and the memory budget, the
    # onnxruntime child-process runner, what an op printed (compiler/opaque/)
    "compiler.opaque": {
        "RUNNERS",
        "BudgetError",
        "ModelRefusedError",
        "OpaqueOpError",
        "check_kernel_shapes",
        "escape",
        "memory_budget",
        "run_onnx_model",
        "refusal",
        "refused",
        "refused_message",
        "trust_names",
        "trusted",
        "trusted_ops",
    },
}
# neutral modules that still use passlens's compiler as a tool, each with why; a module that
# no longer needs its line fails the test as a new one does (the list stays true). None left:
# passlens's reducer, ONNX export, rule docs and kernels of a loaded trace are the passlens
# adapter's (explorer/passlens/: reduce/, adapter.py's to_onnx, rule_doc, after_load).
PASSLENS_TOOLS: dict[str, set[str]] = {}


def _neutral_compiler_imports():
    """(module, compiler module, name) for every import from compiler/ in a neutral explorer
    module (outside the adapters' folders), compiler.ir's left out."""
    for path, _line, module, name in _compiler_imports():
        mod = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        if not mod.startswith("explorer") or mod.startswith(ADAPTER_FOLDERS):
            continue
        if module == "compiler.ir" or module.startswith("compiler.ir."):
            continue
        yield mod, module, name


def test_nothing_outside_an_adapters_folder_names_a_compilers_internals():
    found: dict[str, set[str]] = {}
    for mod, module, name in _neutral_compiler_imports():
        if name in NEUTRAL_FROM_COMPILER.get(module, ()):
            continue
        found.setdefault(mod, set()).add(module)
    assert found == PASSLENS_TOOLS


def test_the_neutral_compiler_names_are_exported_used_and_written_down():
    """Each name the rule lets a neutral module take is in its package's ``__all__``, is shared:
    taken by a module of explorer/ or widgets/ outside passlens's folder (a neutral module, TVM's
    or Inductor's; a name only passlens's adapter needs leaves the list), and is named in the
    rule written in explorer/passlens/__init__.py."""
    import explorer.passlens

    used = {
        (module, name)
        for path, _line, module, name in _compiler_imports()
        if not path.startswith("explorer/passlens/")
    }
    rule = " ".join(explorer.passlens.__doc__.split())
    for module, names in NEUTRAL_FROM_COMPILER.items():
        exported = set(importlib.import_module(module).__all__)
        assert names <= exported, (module, names - exported)
        assert {n for n in names if (module, n) not in used} == set(), module
        assert [n for n in names if f"`{n}`" not in rule] == [], module


def test_widgets_name_no_compiler_internals():
    """The views read the neutral graph model and the explorer, never compiler/ beyond the IR
    and the error classes."""
    bad = [
        f"{path}:{line} imports {module}:{name}"
        for path, line, module, name in _compiler_imports()
        if path.startswith("widgets")
        and not (module == "compiler.ir" or module.startswith("compiler.ir."))
        and name not in NEUTRAL_FROM_COMPILER.get(module, ())
    ]
    assert bad == []
