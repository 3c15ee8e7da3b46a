"""The adapter interface (explorer.adapters): a fourth compiler, defined here, plugs in through
it alone and the whole explorer works on its traces (summary, diff, check, report, save/load,
compare); the registry is lazy (explorer imports no optional compiler)."""

from __future__ import annotations

import subprocess
import sys
import time
import traceback

import numpy as np
import pytest

import explorer
from compiler.ir import Constant, Provenance
from explorer.adapters import (
    Adapter,
    adapter_names,
    get_adapter,
    register_adapter,
    unregister_adapter,
)
from explorer.check.facts import Run
from explorer.check.report import CheckError
from explorer.check.runner import Checker, StepRunner
from explorer.graph import GraphEdge, GraphModel, GraphNode, Param
from explorer.progress import Job
from explorer.trace import Step, Trace

NAME = "numpy-chain"

# ----- a tiny compiler: a chain of numpy ops over one vector, and passes that rewrite it -------

OPS = {
    "scale": lambda x, w: x * w,
    "add1": lambda x, w: x + 1.0,
    "sub1": lambda x, w: x - 1.0,
    "identity": lambda x, w: x,
    "relu": lambda x, w: np.maximum(x, 0.0),
}


class Node:
    """One op of the chain (immutable: a pass that keeps a node keeps the object, so the
    explorer matches it across steps)."""

    __slots__ = ("name", "op", "weight", "prov")

    def __init__(self, name: str, op: str, weight: Constant | None = None):
        self.name, self.op, self.weight = name, op, weight
        self.prov = Provenance(framework="numpy", module_path=f"model.{name}", source_op=op)


class ChainModule:
    """A step's module: the duck type the explorer reads (graph_model, text, texts,
    backend_stage, compiler, inner)."""

    compiler = NAME
    inner = False
    backend_stage = None

    def __init__(self, nodes):
        self.nodes = tuple(nodes)

    def graph_model(self) -> GraphModel:
        g = GraphModel()
        g.nodes["x"] = GraphNode("x", "input", "input", "x", "main", "Tensor[(4,), float32]", (4,))
        prev = "x"
        for n in self.nodes:
            g.nodes[n.name] = GraphNode(
                n.name,
                "op",
                n.op,
                n.op,
                "main",
                "Tensor[(4,), float32]",
                (4,),
                "float32",
                provenance={"module_path": n.prov.module_path},
                group=n.prov.module_path,
                obj=n,
            )
            g.by_object[id(n)] = n.name
            g.edges.append(GraphEdge(prev, n.name, 0, "Tensor[(4,), float32]"))
            if n.weight is not None:
                wid = f"{n.name}.w"
                data = n.weight.data
                g.nodes[wid] = GraphNode(
                    wid,
                    "weight",
                    "const",
                    wid,
                    "main",
                    "Tensor[(4,), float32]",
                    (4,),
                    "float32",
                    nbytes=data.nbytes,
                    obj=n.weight,
                )
                g.by_object[id(n.weight)] = wid
                g.edges.append(GraphEdge(wid, n.name, 1, "Tensor[(4,), float32]"))
                g.params[wid] = Param(wid, (4,), "float32", data.nbytes, wid, n.weight)
            prev = n.name
        g.nodes["out"] = GraphNode("out", "output", "output", "out", "main", "")
        g.edges.append(GraphEdge(prev, "out", 0, "Tensor[(4,), float32]"))
        return g

    def text(self) -> str:
        lines, prev = [], "%x"
        for n in self.nodes:
            w = ", w" if n.weight is not None else ""
            lines.append(f"%{n.name} = {n.op}({prev}{w})")
            prev = f"%{n.name}"
        return "\n".join([*lines, f"return {prev}"])

    def texts(self) -> dict:
        return {}

    def run(self, x: np.ndarray) -> tuple[np.ndarray, dict]:
        values = {}
        for n in self.nodes:
            x = OPS[n.op](x, None if n.weight is None else n.weight.data)
            values[n.name] = x
        return x, values


def drop_identity(m: ChainModule) -> ChainModule:
    return ChainModule(n for n in m.nodes if n.op != "identity")


def nothing(m: ChainModule) -> ChainModule:
    return m


def add_becomes_sub(m: ChainModule) -> ChainModule:  # the wrong pass
    return ChainModule(Node(n.name, "sub1") if n.op == "add1" else n for n in m.nodes)


def broken(m: ChainModule) -> ChainModule:
    raise RuntimeError("broken pass")


class ChainRunner(StepRunner):
    """Each step run whole by numpy (outputs only; the reference is the imported step): the
    two methods every step runner writes, no hook."""

    own_source = "the source is a numpy chain"

    def prepare(self, inputs):
        inputs = self.check.trace.example_inputs if inputs is None else inputs
        if inputs is None:
            self.check.notes.append("numbers not checked: no inputs")
            return None, None
        return [np.asarray(inputs[0], dtype=np.float32)], []

    def run(self, module) -> Run:
        run = Run()
        try:
            out, values = module.run(self.check.runtime[0])
            run.outputs, run.computed = (out,), len(values)
        except Exception as e:
            run.error = CheckError(str(e))
        return run


class ChainAdapter(Adapter):
    name = NAME
    default_pipeline = "all"
    capabilities = frozenset()  # outputs only, no reducer, nothing to run once loaded
    PIPELINES = {
        "all": [drop_identity, nothing, add_becomes_sub],
        "good": [drop_identity, nothing],
        "broken": [drop_identity, broken, nothing],
    }

    def record(self, source, example_inputs, pipeline, progress, **options):
        passes = self.PIPELINES[pipeline]
        steps = [Step(0, "import", "numpy chain", module=ChainModule(source))]
        job = Job(progress, "exploring", len(passes), unit="pass", callback=progress)
        module, skipped = steps[0].module, []
        try:
            for k, fn in enumerate(passes):
                job.advance(fn.__name__)
                start = time.perf_counter()
                try:
                    after = fn(module)
                except Exception as e:
                    steps.append(
                        Step(
                            len(steps),
                            "pass",
                            fn.__name__,
                            before=module,
                            error=e,
                            traceback=traceback.format_exc(),
                        )
                    )
                    skipped = [p.__name__ for p in passes[k + 1 :]]
                    break
                steps.append(
                    Step(
                        len(steps),
                        "pass",
                        fn.__name__,
                        module=after,
                        before=module,
                        seconds=time.perf_counter() - start,
                    )
                )
                module = after
        finally:
            job.close()
        return Trace(
            steps,
            source=None,
            example_inputs=example_inputs,
            pipeline=pipeline,
            frontend="numpy",
            skipped=skipped,
            compiler=NAME,
        )

    def check(self, trace, inputs, options):
        return Checker(trace, inputs, options, ChainRunner()).run()

    def reuse_text(self, report):
        return f"{report.computed} numpy values computed"

    def load_module(self, rec, graph, text, texts, stage):
        return LoadedChain(graph, text)


class LoadedChain(ChainModule):
    """A saved step's module: what it showed, nothing to run."""

    def __init__(self, graph, text):
        super().__init__(())
        self._graph, self._text = graph, text

    def graph_model(self):
        return self._graph

    def text(self):
        return self._text

    def run(self, x):
        raise CheckError("a loaded numpy chain keeps no ops")


def chain():
    w = Constant(
        np.array([1.0, -2.0, 3.0, -4.0], dtype=np.float32),
        None,
        Provenance(framework="numpy", module_path="model.scale"),
    )
    return [
        Node("scale", "scale", w),
        Node("ident", "identity"),
        Node("add", "add1"),
        Node("relu", "relu"),
    ]


X = (np.array([1.0, 2.0, -3.0, 0.5], dtype=np.float32),)


@pytest.fixture(scope="module")
def adapter():
    a = register_adapter(ChainAdapter())
    yield a
    unregister_adapter(NAME)


@pytest.fixture(scope="module")
def trace(adapter):
    return explorer.explore(chain(), X, compiler=NAME)


def test_registry_lists_every_compiler_and_refuses_unknown_ones(adapter):
    names = adapter_names()
    assert names[:3] == ("passlens", "tvm", "inductor")
    assert NAME in names
    assert get_adapter(NAME) is adapter
    with pytest.raises(ValueError, match="not 'xla'"):
        get_adapter("xla")
    with pytest.raises(TypeError, match="must be an explorer.adapters.Adapter"):
        register_adapter(object())


def test_importing_explorer_imports_no_optional_compiler():
    code = (
        "import sys, explorer; from explorer.adapters import get_adapter; "
        "get_adapter('tvm'); "
        "print(sorted(m for m in sys.modules if m == 'tvm' or m.startswith(('tvm.', "
        "'torch._inductor', 'explorer.inductor'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_record_summary_and_diff(trace):
    assert [s.name for s in trace.steps] == [
        "numpy chain",
        "drop_identity",
        "nothing",
        "add_becomes_sub",
    ]
    assert trace.compiler == NAME
    text = trace.summary_text()
    assert "drop_identity" in text
    assert "add_becomes_sub" in text
    d = trace["drop_identity"].diff()
    assert [n.id for n in d.removed] == ["ident"]
    assert not d.added
    assert trace["nothing"].diff().is_empty
    sub = trace["add_becomes_sub"].diff()
    assert sub.op_counts_before.get("add1") == 1
    assert sub.op_counts_after.get("sub1") == 1
    assert "sub1" not in sub.op_counts_before
    assert trace["numpy chain"].graph.param_bytes == 16
    assert "%add = sub1(%scale)" in trace["add_becomes_sub"].text


def test_progress_is_reported_per_pass(adapter):
    calls = []
    explorer.explore(chain(), X, compiler=NAME, progress=lambda *a: calls.append(a))
    assert [c[-1] for c in calls][-3:] == ["drop_identity", "nothing", "add_becomes_sub"]


def test_check_finds_the_wrong_pass_and_reports_it(trace):
    report = trace.check()
    assert [f.step.name for f in report.failures] == ["add_becomes_sub"]
    assert report.failures[0].kind == "diverged"
    statuses = {c.step.name: c.status for c in report.steps}
    assert statuses["drop_identity"] == "ok"
    assert statuses["add_becomes_sub"] == "diverged"
    assert report.reuse_text == f"{report.computed} numpy values computed"
    with pytest.raises(explorer.ReduceError, match=f"cannot shrink a {NAME} trace"):
        report.reduce()


def test_a_failing_pass_is_a_failed_step(adapter):
    t = explorer.explore(chain(), X, compiler=NAME, pipeline="broken")
    assert t["broken"].failed
    assert t.skipped == ["nothing"]
    report = t.check()
    assert [(f.step.name, f.kind) for f in report.failures] == [("broken", "pass-failed")]


def test_save_load_and_compare(trace, tmp_path):
    report = trace.check()
    path = trace.save(tmp_path / "chain.passlens")
    loaded = explorer.load(path)
    assert loaded.compiler == NAME
    assert loaded.report.headline() == report.headline()
    assert [c.status for c in loaded.report.steps] == [c.status for c in report.steps]
    rechecked = loaded.check()  # nothing to run: every step says so, none is judged ok
    assert {c.status for c in rechecked.steps} == {"run-failed"}
    assert [s.name for s in loaded.steps] == [s.name for s in trace.steps]
    assert loaded["add_becomes_sub"].text == trace["add_becomes_sub"].text
    assert set(loaded["drop_identity"].graph.nodes) == set(trace["drop_identity"].graph.nodes)
    assert loaded["numpy chain"].graph.param_bytes == 16
    assert [n.id for n in loaded["drop_identity"].diff().removed] == ["ident"]
    good = explorer.explore(chain(), X, compiler=NAME, pipeline="good")
    assert explorer.compare(good, good).same
    cmp = explorer.compare(good, loaded)
    assert cmp.first_divergence is not None
    assert "add_becomes_sub" in str(cmp)


def test_the_cli_offers_every_registered_compiler(adapter):
    from passlens.cli import _parser

    args = _parser().parse_args(["explore", "model.py", "--compiler", NAME])
    assert args.compiler == NAME


def test_options_an_adapter_ignores_never_reach_its_record():
    """``ignored_options`` are accepted by ``explore`` and dropped before ``record``, which
    gets every other option and the default pipeline (issue 39: strict for TVM, Inductor)."""
    seen = []

    class Strict(ChainAdapter):
        name = "numpy-chain-strict"
        ignored_options = ("strict",)

        def record(self, source, example_inputs, pipeline, progress, *, seed=0):
            seen.append((pipeline, seed))
            return super().record(source, example_inputs, pipeline, progress)

    register_adapter(Strict())
    try:
        trace = explorer.explore(chain(), X, compiler=Strict.name, strict=True, seed=3)
        assert seen == [("all", 3)] and trace.steps[-1].name == "add_becomes_sub"
        with pytest.raises(TypeError):  # an option that is not ignored still goes through
            explorer.explore(chain(), X, compiler=Strict.name, unknown=1)
    finally:
        unregister_adapter(Strict.name)


# ----- the check runner is public: options and step runners (issue 40) -------------------------


def test_every_check_option_reaches_a_step_runner_that_writes_two_methods(
    adapter, trace, check_options_reach
):
    """The test compiler's runner writes ``prepare`` and ``run`` only; the check's options
    reach its detectors through ``Adapter.check(trace, inputs, options)`` all the same."""
    x = (np.array([2.0, -1.0, 0.5, 4.0], dtype=np.float32),)
    for report in check_options_reach(trace, x):
        assert report.inputs[0].tolist() == x[0].tolist()


def test_passlens_takes_every_explore_and_check_option(check_options_reach):
    """Every option ``explorer.explore`` documents for passlens's own compiler takes effect
    (pipeline, progress, strict, trust_source), and so does every check option."""
    torch = pytest.importorskip("torch")

    class Scan(torch.nn.Module):
        def forward(self, x):
            return torch.cummax(x, dim=1)[0]

    x = torch.randn(2, 4)
    from compiler.frontend import UnsupportedOperatorError

    explorer.explore(Scan(), (x,), pipeline="dce", progress=False)  # not strict: opaque
    with pytest.raises(UnsupportedOperatorError, match="cummax"):
        explorer.explore(Scan(), (x,), pipeline="dce", progress=False, strict=True)
    calls = []
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()).eval()
    trace = explorer.explore(
        model, (x,), "fold-constant,dce", lambda *a: calls.append(a), trust_source=False
    )
    assert trace.pipeline == "fold-constant,dead-code-elimination"
    assert [s.name for s in trace.steps[2:]] == ["fold-constant", "dead-code-elimination"]
    assert [c[2] for c in calls] == ["fold-constant", "dead-code-elimination"]
    assert trace.source_trusted is False and explorer.explore(model, (x,)).source_trusted
    check_options_reach(trace, (torch.randn(2, 4).numpy(),))


def _classes(root):
    """(file, class name, base names, names it defines) of every class under ``root``."""
    import ast
    from pathlib import Path

    for path in sorted(Path(root).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rpartition(".")[2] for b in node.bases}
                names = {
                    n.name
                    for n in node.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                } | {
                    t.id
                    for n in node.body
                    if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Name)
                }
                yield path, node.name, bases, names


def test_no_step_runner_overrides_a_private_method_of_the_runner():
    """An adapter's check is a ``StepRunner`` (public methods and hooks); the ``Checker`` is
    not subclassed, and no class outside explorer/check defines an underscore name the runner
    module's classes have (the issue-40 state: three checkers overrode the same 7 private
    methods). Read from the source, so a subclass of a subclass counts too."""
    from pathlib import Path

    from explorer.check import runner

    root = Path(__file__).resolve().parents[2]
    private = {
        name
        for cls in (runner.Checker, runner.StepRunner)
        for name in dir(cls)
        if name.startswith("_") and not name.startswith("__")
    }
    assert "_check_step" in private and "_set_reference" in private
    # and the private methods the checkers overrode before the runner was public: defined
    # again, one would be dead code that looks like a hook
    private |= {"_split_inputs", "_node_values", "_generation", "_layers", "_last_use", "_release"}
    classes = [
        c
        for top in ("explorer", "tests", "widgets", "passlens", "bench")
        for c in _classes(root / top)
    ]
    family = {"Checker", "StepRunner"}
    while True:  # every class that derives from them, by name
        more = {name for _, name, bases, _ in classes if bases & family} - family
        if not more:
            break
        family |= more
    check_dir = root / "explorer" / "check"
    bad, subclassed = [], []
    for path, name, bases, names in classes:
        if not (bases & family) or check_dir in path.parents:
            continue
        if "Checker" in bases:
            subclassed.append(f"{path.relative_to(root)}:{name}")
        bad += [f"{path.relative_to(root)}:{name}.{n}" for n in sorted(names & private)]
    assert subclassed == []
    assert bad == []
    runners = {name for _, name, bases, _ in classes if bases & family}
    assert {"Interpreter", "TVMStepRunner", "InductorStepRunner", "ChainRunner"} <= runners


# ----- passlens-only capabilities are adapter methods (issue 40) -------------------------------


@pytest.mark.parametrize("name", ["tvm", "inductor", NAME])
def test_a_passlens_only_capability_asked_of_another_compiler_says_so(adapter, name):
    """ONNX export, a rule's doc and reduction are the passlens adapter's: another compiler's
    adapter (TVM's and Inductor's are asked without importing tvm or running torch.compile)
    answers ``to_onnx`` with one clear passlens error naming it, and has no rule docs."""
    from compiler import PasslensError
    from explorer.adapters import ONNX_EXPORT, Unsupported

    other = get_adapter(name)
    assert ONNX_EXPORT not in other.capabilities
    with pytest.raises(Unsupported, match=f"the {name} adapter cannot write a module as ONNX"):
        other.to_onnx(object())
    assert issubclass(Unsupported, PasslensError)
    assert other.rule_doc("fold-constant/fold-call") == ""
    assert other.after_load(None) is None  # nothing a file leaves out to make again
    passlens = get_adapter("passlens")
    assert ONNX_EXPORT in passlens.capabilities
    assert passlens.rule_doc("fold-constant/fold-call").startswith("op(constants...)")
    assert explorer.rewrites.rule_doc("fold-constant/fold-call", name) == ""
    assert explorer.rewrites.rule_doc("fold-constant/fold-call", "no-such-compiler") == ""


def test_onnx_export_rule_docs_and_reduce_go_through_the_traces_adapter(adapter, trace, tmp_path):
    """``export(format="onnx")``, ``rule_doc`` and ``reduce`` ask the step's compiler's adapter:
    without the capability a clear error, with it the adapter's own answer."""
    from explorer.adapters import ONNX_EXPORT, REDUCE
    from explorer.interop import ExportError, export
    from explorer.reduce import ReduceError, reduce

    with pytest.raises(ExportError, match=f"holds a {NAME} module, which its adapter cannot"):
        export(trace, "drop_identity", tmp_path / "x.onnx", format="onnx")
    report = trace.check()
    calls = []

    class Model:
        def SerializeToString(self):
            return b"onnx bytes"

    class Capable(ChainAdapter):
        capabilities = frozenset({ONNX_EXPORT, REDUCE})

        def to_onnx(self, module):
            if module.nodes and module.nodes[0].op == "boom":
                raise ExportError("node boom: op boom has no ONNX lowering")
            calls.append(("to_onnx", module))
            return Model()

        def rule_doc(self, rule):
            return f"what {rule} does"

        def reduce(self, report, finding, budget, progress):
            calls.append(("reduce", finding, budget, progress))
            return "reduced"

    register_adapter(Capable())
    try:
        (path,) = export(trace, "drop_identity", tmp_path / "x.onnx", format="onnx")
        assert path.read_bytes() == b"onnx bytes"
        assert calls.pop() == ("to_onnx", trace["drop_identity"].shown_module)
        boom = explorer.explore([Node("b", "boom")], X, compiler=NAME, pipeline="good")
        with pytest.raises(
            ExportError,
            match=r"cannot write step 0 \(numpy chain\) as ONNX: "
            "node boom: op boom has no ONNX lowering",
        ):
            export(boom, 0, tmp_path / "y.onnx", format="onnx")
        assert explorer.rewrites.rule_doc("r1", NAME) == "what r1 does"
        assert report.reduce(2, budget=5) == "reduced"
        assert reduce(report, budget=7, progress=False) == "reduced"
        assert calls == [("reduce", 2, 5, None), ("reduce", None, 7, False)]
    finally:
        register_adapter(ChainAdapter())
    with pytest.raises(ReduceError, match=f"cannot shrink a {NAME} trace"):
        reduce(report)


def test_loading_a_trace_calls_its_adapters_after_load(adapter, trace, tmp_path):
    """What a file leaves out is made again by the trace's adapter (passlens: its kernels),
    once, before ``load`` returns; another compiler's adapter sees only its own traces."""
    seen = []

    class Hooked(ChainAdapter):
        def after_load(self, loaded):
            seen.append((loaded.compiler, [s.name for s in loaded.steps]))

    path = trace.save(tmp_path / "chain.passlens")
    register_adapter(Hooked())
    try:
        loaded = explorer.load(path)
    finally:
        register_adapter(ChainAdapter())
    assert seen == [(NAME, [s.name for s in loaded.steps])]
