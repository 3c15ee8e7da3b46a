"""Reducing a `diverged` finding of a torch.compile trace to a few FX nodes and a test.

A custom pass (one set in `torch._inductor.config`) can be run again alone: the reducer
takes the graph the pass was given, and for each node (the nodes the finding names first,
each through every depth) cuts out the node with its producers up to a depth (none, 1 to 4
levels, then all), the values flowing in becoming inputs (a tuple never: a deeper cut takes
its producer in), runs the pass on the cut and compares the cut's result with and without
the pass. The first cut where the pass changes the numbers is the reduction: its Python code,
its inputs, and a pytest file that builds it with `torch.fx.symbolic_trace`, runs the pass
and fails while the pass is wrong, and `upstream_repro(path)`: a standalone script with
torch only, in the shape of torch's minifier's repro.py (`explorer.inductor.repro`).
Inductor's own passes cannot be replayed one by one (they run inside `compile_fx`): their
findings are refused with a clear error.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.check.numbers import compare, to_numpy
from explorer.reduce import NotReproducible, ReduceError

INPUTS_FILE = "inputs.npz"
REPRO_FILE = "repro.py"
TEST_FILE = "test_reduced.py"
DEPTHS = (0, 1, 2, 3, 4, None)  # levels of producers kept above the node (None: all)


@dataclass
class InductorReduction:
    """A torch.compile finding reduced: the pass, the cut graph's code and inputs, how far
    its result moves under the pass, and the test (`save` writes it with the inputs).
    `fn` is the pass object and `graph` the cut (an FX graph), which
    `upstream_repro` writes out; `input_types` says what each input is (a torch
    dtype's name, or int / float / bool); `rtol` / `atol` the check's tolerance."""

    finding: Any
    pass_name: str
    code: str
    inputs: list[np.ndarray]
    nodes: tuple[int, int]  # ops of the graph the pass was given, ops of the cut
    max_abs: float
    test_source: str
    tried: int
    seconds: float
    budget: float
    cut_short: bool = False
    files: list[str] = field(default_factory=lambda: [TEST_FILE, INPUTS_FILE])
    fn: Any = field(default=None, repr=False)
    graph: Any = field(default=None, repr=False)
    input_types: list[str] = field(default_factory=list)
    rtol: float = 1e-4
    atol: float = 1e-5

    def save(self, directory: str | Path) -> Path:
        """Write `test_reduced.py` and `inputs.npz` into `directory`; returns its path."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / TEST_FILE).write_text(self.test_source, encoding="utf-8")
        np.savez(out / INPUTS_FILE, **{f"arg{i}": a for i, a in enumerate(self.inputs)})
        return out

    def upstream_repro(self, path: str | Path) -> Path:
        """Write the standalone script (torch and numpy only; `repro.py` inside `path`
        when it is a folder) that reproduces the finding as a bug report: the pass's source,
        the cut graph as `Repro(torch.nn.Module)`, its inputs embedded; it prints both
        outputs' difference and torch's version and exits 1 while they differ. Before it is
        written, the graph is rebuilt as the script rebuilds it and the pass run on it here:
        a script that would not show the bug is an error, not a file. Raises
        `ReduceError` when the pass's source cannot be had (see
        `explorer.reduce.repro.pass_definition`)."""
        from explorer.inductor.repro import repro_source, verify
        from explorer.reduce.repro import write_script

        source = repro_source(self)
        verify(self)
        return write_script(path, source, REPRO_FILE)

    def __str__(self) -> str:
        return (
            f"reduced {self.finding.kind} at {self.pass_name}: {self.nodes[0]} -> "
            f"{self.nodes[1]} op node(s); the pass moves the result by {self.max_abs:.3g} "
            f"(max abs); {self.tried} cut(s) tried in {self.seconds:.1f} s"
        )

    def __repr__(self) -> str:
        return f"<InductorReduction {self.pass_name} {self.nodes[0]}->{self.nodes[1]} ops>"


def reduce_inductor(report, finding=None, budget: float = 60.0, progress=None):
    """Reduce `finding` (the first failure by default, or its index) of a torch.compile
    trace's check `report` (see the module docstring)."""
    from explorer.inductor.run import capture, graph_inputs, line_up

    start = time.perf_counter()
    trace = report.trace
    if isinstance(finding, int):
        finding = report.findings[finding]
    finding = finding if finding is not None else report.first_failure
    if finding is None:
        raise ReduceError("the check found nothing to reduce")
    if finding.kind != "diverged":
        raise ReduceError(f"a torch.compile trace's {finding.kind} finding cannot be reduced")
    run = getattr(trace, "inductor", None)
    if run is None:
        raise ReduceError("a loaded torch.compile trace has no graphs to run: explore it again")
    step = finding.step
    fn = run.custom_passes.get(step.index)
    if fn is None:
        raise ReduceError(
            f"{step.name} is Inductor's own pass, run inside compile_fx: only a custom pass "
            "set in torch._inductor.config can be run again alone"
        )
    before = step.before
    record = run.graphs[before.graph_index]
    args = tuple(_tensor(x) for x in (report.inputs or trace.example_inputs))
    model = trace.source["model"]
    captured = capture(model, args, run.dynamic, list(run.calls))
    inputs = graph_inputs(record.dynamo.graph, captured)
    if before.level == "aten":
        inputs = line_up(before.graph, inputs)
    values = _values(before, inputs)
    named = [e.node.name for e in finding.details.get("node_errors", []) if e.node is not None]
    calls = [n for n in before.graph.nodes if n.op == "call_function"]
    first = [n for name in named for n in calls if n.name == name]
    # the nodes the finding names, each with more and more of its producers; then the others,
    # the smallest cuts first
    cuts = [(n, d) for n in first for d in DEPTHS]
    cuts += [(n, d) for d in DEPTHS for n in calls if n not in first]
    tried = 0
    for node, depth in cuts:
        if time.perf_counter() - start > budget:
            raise NotReproducible(
                f"no cut of {step.before.graph_index}'s graph reproduced the finding "
                f"within {budget:.0f} s ({tried} tried)"
            )
        tried += 1
        cut, names = cut_graph(before.graph, node, depth)
        if any(name not in values for name in names):
            continue  # a tuple flows in (split, var_mean): a deeper cut takes its producer
        cut_inputs = [values[name] for name in names]
        moved = _moved(fn, cut, cut_inputs, report.rtol, report.atol)
        if moved is None:
            continue
        from explorer.inductor.repro import forward_source, input_types

        ops = sum(1 for n in cut.nodes if n.op == "call_function")
        code = forward_source(cut, namespaces=None)  # the test runs where the model's ops are
        return InductorReduction(
            finding,
            step.name,
            code,
            [to_numpy(x) for x in cut_inputs],
            (len(calls), ops),
            moved,
            test_source(step.name, fn, code, len(cut_inputs), report.rtol, report.atol),
            tried,
            time.perf_counter() - start,
            budget,
            fn=fn,
            graph=cut,
            input_types=input_types(cut_inputs),
            rtol=report.rtol,
            atol=report.atol,
        )
    raise NotReproducible(
        f"{step.name} run alone on cuts of its graph never changed the numbers ({tried} tried): "
        "the finding needs more than the pass and its graph"
    )


def _tensor(x: Any) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x


def _values(module, inputs: list) -> dict:
    """Every node's value of `module`'s graph on `inputs`, placeholders included."""
    from explorer.inductor.run import run_graph

    _, values = run_graph(module.graph_module(), inputs)
    for n, x in zip([n for n in module.graph.nodes if n.op == "placeholder"], inputs, strict=False):
        values[n.name] = x
    return values


def cut_graph(graph: Any, target: Any, depth: int | None) -> tuple[Any, list[str]]:
    """`target` and its call producers up to `depth` edges above it, as a graph of its
    own returning `target`; what flows in from outside the cut becomes its inputs (named
    as the nodes they were). Returns the graph and its inputs' node names."""
    import torch

    keep: set = set()
    frontier = [(target, 0)]
    while frontier:
        node, d = frontier.pop()
        if node in keep or node.op != "call_function":
            continue
        keep.add(node)
        if depth is None or d < depth:
            frontier.extend((a, d + 1) for a in node.all_input_nodes)
    cut = torch.fx.Graph()
    env: dict = {}
    names: list[str] = []
    for node in graph.nodes:
        if node not in keep:
            continue
        for a in node.all_input_nodes:
            if a not in keep and a not in env:
                env[a] = cut.placeholder(a.name)
                env[a].meta = copy.copy(a.meta)
                names.append(a.name)
        env[node] = cut.node_copy(node, lambda a: env[a])
    cut.output((env[target],))
    return cut, names


def _moved(fn: Any, cut: Any, inputs: list, rtol: float, atol: float) -> float | None:
    """How far `fn` moves the cut's result (max abs), or None when it stays in tolerance
    (or the pass or the cut fails: not this finding)."""
    import torch

    from explorer.inductor.run import flat_outputs

    try:
        with torch.no_grad():
            plain = torch.fx.GraphModule({}, copy.deepcopy(cut))
            want = plain(*inputs)[0]
            passed = torch.fx.GraphModule({}, copy.deepcopy(cut))
            fn(passed.graph)
            passed.recompile()
            got = passed(*inputs)[0]
    except Exception:  # a cut the pass or torch cannot take is not a reproduction
        return None
    got, want = flat_outputs(got), flat_outputs(want)  # split and var_mean give tuples
    if not all(isinstance(w, torch.Tensor) for w in want):
        return None  # not numbers the finding is about
    if len(got) != len(want):
        return float("inf")
    pairs = list(zip(got, want, strict=True))
    if any(not isinstance(g, torch.Tensor) or g.shape != w.shape for g, w in pairs):
        return float("inf")
    worst = None
    for g, w in pairs:
        a, _, beyond = compare(to_numpy(g), to_numpy(w), rtol, atol)
        if beyond:
            worst = a if worst is None else max(worst, a)
    return worst


def _pass_import(fn: Any) -> tuple[str, str]:
    """`(import line, call)` of the pass in the test. The names are the pass's own
    (untrusted): one that is not a plain name is never written as code."""
    from explorer.reduce.repro import dotted, identifier, literal

    inner = fn
    while type(inner).__name__ == "partial":
        inner = inner.func
    is_function = type(inner).__name__ == "function"
    target = inner if is_function else type(inner)
    module, name = str(target.__module__), str(target.__qualname__)
    top = name.split(".")[0]
    if not identifier(top):
        top = "reduced_pass"
    call = f"{top}(gm.graph)" if is_function else f"{top}()(gm.graph)"
    if (
        module == "__main__"
        or "<locals>" in name
        or not dotted(module)
        or top != name.split(".")[0]
    ):
        where = literal(f"{name} (in {module})")
        return f"# define or import the pass here as {top}: {where}\n", call
    return f"from {module} import {top}\n", call


def test_source(pass_name: str, fn: Any, code: str, n_inputs: int, rtol: float, atol: float):
    """The pytest file: the cut as a module, traced to FX, the pass run on its graph, the
    result compared with the graph's before the pass."""
    from explorer.reduce.repro import literal

    imports, call = _pass_import(fn)
    body = "\n".join(
        "    " + line if line.strip() else "" for line in code.strip("\n").splitlines()
    )
    return f'''"""Reduced by passlens: a custom pass (PASS_NAME) changes the numbers of this
graph (a cut of the ATen graph Inductor gave it). Fails while the pass is wrong."""

from pathlib import Path

import numpy as np
import torch

{imports}
PASS_NAME = {literal(pass_name)}


class Reduced(torch.nn.Module):
{body}


def test_reduced():
    data = np.load(Path(__file__).with_name("{INPUTS_FILE}"))
    inputs = [torch.from_numpy(data[f"arg{{i}}"]) for i in range({n_inputs})]
    gm = torch.fx.symbolic_trace(Reduced())
    want = gm(*inputs)
    {call}  # as Inductor runs it on the graph
    gm.recompile()
    got = gm(*inputs)
    torch.testing.assert_close(got, want, rtol={rtol!r}, atol={atol!r})
'''


__all__ = ["InductorReduction", "cut_graph", "reduce_inductor", "test_source"]
