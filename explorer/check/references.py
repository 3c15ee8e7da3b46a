"""The references a check compares with: torch eager (with per-node FX values), onnxruntime,
or the imported step itself, and the per-node errors against them."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from compiler import matmul_float64
from compiler.ir import Expr, Function, If, TupleGetItem, children
from explorer.check.numbers import compare, to_numpy
from explorer.check.report import CheckError, NodeError
from explorer.check.torch_program import graph_run, interpreter_base, program_budget, unfused_bias


def node_location(node: Expr) -> str:
    """Where `node` came from, for a message: its module path or source node or op (with
    the FX node when that differs), else its name, else its op."""
    p = node.prov
    head = p.module_path or p.source_node or p.source_op or (f"%{node.name}" if node.name else "")
    extra = p.source_node if p.source_node and p.source_node != head else None
    if not head:
        head = f"a {getattr(node, 'op', type(node).__name__)} node"
    return f"{head} ({extra})" if extra else head


def _prov_key(node: Expr) -> tuple:
    p = node.prov
    return (p.framework, p.module_path, p.source_op, p.source_node, p.location, node.name)


def group_roots(fn: Function, key: Callable[[Expr], Any]) -> list[Expr]:
    """Bound nodes that are the last of their provenance group (no reader of the node has the
    same key): the node standing for a source op's result, not an intermediate a frontend
    or a pass made for it (the matmul of a decomposed linear)."""
    nodes = list(fn.iter_nodes())
    keys = {n: key(n) for n in nodes}  # (nodes hash by identity)
    inner: set = set()  # bound nodes read by a node of their own key
    for n in nodes:
        k = keys[n]
        if k is not None:
            for c in children(n) if isinstance(n, If) else n.operands:
                if c in keys and keys[c] == k:
                    inner.add(c)
    return [n for n in nodes if keys[n] is not None and n not in inner]


def node_reference(main: Function, values: dict) -> dict:
    """For an IR reference: the values of the imported main's group roots, by provenance."""
    ref: dict = {}
    for n in group_roots(main, _prov_key):
        v = values.get(n)
        if isinstance(v, np.ndarray) and not n.prov.is_empty:
            ref.setdefault(_prov_key(n), []).append(v)
    return ref


def root_key(fx_values: dict) -> Callable[[Expr], Any]:
    """What groups nodes into one source op: the FX node (torch), else the provenance."""
    return (lambda n: n.prov.source_node) if fx_values else _prov_key


def matched_reference(
    node: Expr, value: np.ndarray, fx_values: dict, node_ref: dict
) -> np.ndarray | None:
    """The reference value `node` is matched with (of the same shape as `value`): the FX
    node named by its provenance, or the one imported node with the same provenance."""
    if fx_values:
        ref = fx_values.get(node.prov.source_node)
        if ref is None and isinstance(node, TupleGetItem):  # of a sort / topk / max.dim
            ref = fx_values.get(ORDER_FIELD.format(node.prov.source_node, node.index))
    elif node.prov.is_empty:
        return None
    else:
        same = [r for r in node_ref.get(_prov_key(node), ()) if r.shape == value.shape]
        ref = same[0] if len(same) == 1 else None
    return ref if ref is not None and ref.shape == value.shape else None


def input_reference(fx_values: dict, node_ref: dict):
    """`reference_of(expr, value, op)` for `ties.tied`: the reference value that `expr`,
    the input of `op`, is matched with, or None (no match, or `expr` is of `op`'s own
    source op)."""

    key = root_key(fx_values)

    def reference_of(expr: Expr, value: np.ndarray, op: Expr):
        if fx_values:  # the FX op's own input, recorded when the reference ran
            ops = [op, getattr(op, "tuple_value", op)]
            for name in dict.fromkeys(o.prov.source_node for o in ops):
                x = fx_values.get(ORDER_INPUT.format(name))
                if x is not None and x.shape == value.shape:
                    return x
        if key(expr) is None or key(expr) == key(op):
            return None  # an intermediate made for the op itself: its reference is the op's
        return matched_reference(expr, value, fx_values, node_ref)

    return reference_of


def errors_by_node(
    main: Function,
    values: dict,
    fx_values: dict,
    node_ref: dict,
    rtol: float,
    atol: float,
    float64=None,
    ties: list | None = None,
) -> list[NodeError]:
    """Nodes of `main` (in binding order) whose value differs from the reference value they
    are matched with (the FX node named by their provenance, or the imported node with the
    same provenance) beyond the tolerance, and, where the float64 run `float64` (a
    `judge.Float64Reference`) has that FX node, further from float64 than the reference
    is (`judge.py`; the error then says so). An index of an order-selecting op that selects
    the same values as the reference's indices (tied values ordered otherwise, `ties.py`) is
    no error: it is appended to `ties` when given."""
    from explorer.check.judge import judge_float64
    from explorer.check.ties import tied

    key = root_key(fx_values)
    errors = []
    for n in group_roots(main, key):
        v = values.get(n)
        if not isinstance(v, np.ndarray):
            continue
        ref = matched_reference(n, v, fx_values, node_ref)
        if ref is None or ref is v:
            continue
        a, r, beyond = compare(v, ref, rtol, atol)
        if not beyond:
            continue
        if tied(n, v, ref, values, rtol, atol, input_reference(fx_values, node_ref)):
            if ties is not None:
                ties.append(n)
            continue
        judged = None
        if fx_values and float64 is not None and float64.made:
            name = n.prov.source_node
            judged = judge_float64(
                v, ref, float64.node(name), atol, float64.reference_error(name, ref)
            )
            if judged is not None and not judged.wrong:
                continue  # float32 rounding, as eager's own
        errors.append(NodeError(n, node_location(n), a, r, tuple(v.shape), judged))
    return errors


# ----- findings ----------------------------------------------------------------------------------


def torch_reference(source: dict, inputs: list, shared: Any = None) -> tuple[tuple, dict, str]:
    """Torch eager outputs of the source model, every FX node's value (by node name), and how
    the model was run. With an exported program, one run of its graph op by op gives both
    (the same ATen kernels eager runs: a second forward of the model doubled the cost of the
    reference on a 1B model); otherwise the model itself, without per-node values.

    `shared`: the import's calls the graph's run takes (the step runner's `reference_calls`:
    `call(name, target, args, kwargs)` is FX node `name`'s value, for a graph `takes` accepts)."""
    import torch
    from torch.utils._pytree import tree_leaves

    model, ep = source["model"], source.get("exported")
    tensors = _tensors(inputs)
    exported = isinstance(model, torch.export.ExportedProgram)
    if ep is None and exported:
        ep = model
    if source.get("untrusted_program"):  # a program read from a file (a .pt2): see below
        with program_budget(ep, tensors, "torch's reference run of the program"):
            outputs, fx_values = _fx_run(ep, tensors, untrusted=True)
        return outputs, fx_values, graph_run(ep)
    if ep is not None:
        try:
            outputs, fx_values = _fx_run(ep, tensors, shared=shared)
            return outputs, fx_values, graph_run(ep)
        except Exception:  # per-node values are a bonus: the model's own forward below
            pass
    fn = model.module() if exported else model
    training = not exported and getattr(fn, "training", False)  # exported: mode is fixed
    try:
        if training:
            fn.eval()
        with torch.no_grad():
            out = fn(*tensors)
    finally:
        if training:
            fn.train(True)
    outputs = tuple(to_numpy(t) for t in tree_leaves(out) if isinstance(t, torch.Tensor))
    how = "ExportedProgram.module(), no_grad" if exported else "eval mode, no_grad"
    return outputs, {}, how


def _tensors(inputs: list) -> list:
    import torch

    return [x if isinstance(x, torch.Tensor) else torch.from_numpy(np.array(x)) for x in inputs]


def _graph_args(ep, tensors: list, cast=None) -> list:
    """The exported graph's placeholder values: user inputs, then weights and constants."""
    from torch.utils._pytree import tree_leaves

    state, constants = ep.state_dict, dict(getattr(ep, "constants", {}) or {})
    user = iter(tree_leaves(tensors))
    args = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind.name == "USER_INPUT":
            x = next(user)
            args.append(cast(x) if cast is not None else x)
        else:
            target = spec.target
            args.append(state[target] if target in state else constants[target])
    return args


def _user_outputs(ep, out) -> tuple:
    """The user outputs among a graph run's outputs (mutated buffers dropped), as numpy."""
    import torch

    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    specs = list(ep.graph_signature.output_specs)
    if len(specs) == len(outs):
        outs = [o for o, s in zip(outs, specs, strict=True) if s.kind.name == "USER_OUTPUT"]
    return tuple(to_numpy(t) for t in outs if isinstance(t, torch.Tensor))


def _fx_run(ep, tensors: list, untrusted: bool = False, shared: Any = None) -> tuple[tuple, dict]:
    """The exported graph run op by op: its user outputs and every call's value by name."""
    import torch

    values: dict[str, np.ndarray] = {}
    orders = order_nodes(ep.graph_module.graph)
    if untrusted or (shared is not None and not shared.takes(ep.graph_module)):
        shared = None

    class Capture(interpreter_base(untrusted)):
        name = ""  # the FX node being run

        def call_function(self, target, args, kwargs):
            parts = unfused_bias(target, args, kwargs)
            if parts is None:
                return self._call(target, args, kwargs, self.name)
            lhs, rhs, bias, bias_first = parts  # the product, then the bias (`unfused_bias`)
            aten = torch.ops.aten
            y = self._call(aten.matmul.default, (lhs, rhs), {}, None)
            return self._call(
                aten.add.Tensor, (bias, y) if bias_first else (y, bias), {}, self.name
            )

        def _call(self, target, args, kwargs, name):
            if shared is not None:
                return shared.call(name, target, args, kwargs)
            return super().call_function(target, args, kwargs)

        def run_node(self, n):
            self.name = n.name
            if untrusted:
                out = super().run_node(n)
            else:  # as torch's, without its per-node metadata context and log (~15% of a run)
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                out = getattr(self, n.op)(n.target, args, kwargs)
            if n.op != "call_function":
                return out
            if isinstance(out, torch.Tensor):
                values[n.name] = to_numpy(out)
            elif n in orders and isinstance(out, (tuple, list)):
                for k, t in enumerate(out):  # (values, indices): no FX getitem is matched
                    if isinstance(t, torch.Tensor):
                        values[ORDER_FIELD.format(n.name, k)] = to_numpy(t)
            if n in orders:
                # the input of an op whose indices may order ties otherwise (ties.py)
                first = n.args[0] if n.args else None
                for m in (n, *n.users):
                    x = self.env.get(first) if isinstance(first, torch.fx.Node) else None
                    if isinstance(x, torch.Tensor):
                        values[ORDER_INPUT.format(m.name)] = to_numpy(x)
            return out

    with torch.no_grad():
        out = Capture(ep.graph_module).run(*_graph_args(ep, tensors))
    return _user_outputs(ep, out), values


ORDER_FIELD = "{}<{}>"  # fx values: field k of an order-selecting FX node's tuple
ORDER_INPUT = "{}<input>"  # fx values: the input of an order-selecting FX node (and its getitems)
ORDER_TARGETS = ("sort", "argsort", "topk", "argmax", "argmin", "max.dim", "min.dim", "kthvalue")


def _orders(n) -> bool:
    """Whether FX node `n` selects by order (its indices may tie)."""
    name = str(getattr(n.target, "__name__", n.target))
    return any(name == t or name.startswith(t + ".") for t in ORDER_TARGETS)


_ORDER_NODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def order_nodes(graph) -> frozenset:
    """The call_function nodes of FX `graph` that select by order (`_orders`), found once
    per graph (a check runs the graph again at every check of its trace) instead of at every
    node of every run."""
    key = (len(graph.nodes), id(next(iter(graph.nodes), None)))
    seen = _ORDER_NODES.get(graph)
    if seen is not None and seen[0] == key:
        return seen[1]
    found = frozenset(n for n in graph.nodes if n.op == "call_function" and _orders(n))
    try:
        _ORDER_NODES[graph] = (key, found)
    except TypeError:  # a graph that cannot be referenced weakly: found each time
        pass
    return found


def _fx_values(ep, tensors: list) -> dict[str, np.ndarray]:
    return _fx_run(ep, tensors)[1]


def float64_reference(
    frontend: str, source: dict, inputs: list, runtime: list, *, optimize: bool = True
):
    """The float64 run a check judges with (a `judge.Float64Reference`, made on first use):
    torch's exported graph in float64, or onnxruntime on the model cast to float64 (with its
    graph optimizations off when not `optimize`: an ONNX Runtime trace's check, whose
    reference must not hold the optimizations it judges); None for other sources."""
    from explorer.check.judge import Float64Reference

    if frontend == "torch":
        import torch

        ep = source.get("exported")
        if ep is None and isinstance(source.get("model"), torch.export.ExportedProgram):
            ep = source["model"]
        if ep is None:
            return None
        if source.get("untrusted_program"):

            def run():
                with program_budget(ep, _tensors(inputs), "torch's float64 run of the program"):
                    return _torch_float64(ep, inputs, untrusted=True)

            return Float64Reference(run, "the exported graph run in float64 by torch")
        return Float64Reference(
            lambda: _torch_float64(ep, inputs), "the exported graph run in float64 by torch"
        )
    if frontend == "onnx":
        proto = source["model"]
        how = "onnxruntime on the model cast to float64"
        if not optimize:
            how += ", optimizations off"
        return Float64Reference(lambda: _onnx_float64(proto, runtime, optimize), how)
    return None


LINEAR_BLOCK_BYTES = 1 << 20  # a bigger linear weight is cast a block at a time (_torch_float64)


def _torch_float64(
    ep, inputs: list, untrusted: bool = False
) -> tuple[tuple, dict[str, np.ndarray]]:
    """The exported graph run in float64: user inputs cast, each weight cast where it is used
    (never the whole model at once: the cast is freed after its op; a linear's weight a block
    of rows at a time, an embedding's rows gathered before the cast), every floating dtype an
    op names (`.to(float32)`, `arange(dtype=float32)`) taken as float64. Its user outputs
    and every call's value by FX node name. This is torch's run of the source graph, apart
    from the import being judged."""
    import torch

    f64 = torch.float64

    def up(x):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != f64:
            return x.to(f64)
        if isinstance(x, torch.dtype) and x.is_floating_point:
            return f64
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        return x

    aten = torch.ops.aten
    views = {
        aten.t.default,
        aten.transpose.int,
        aten.permute.default,
        aten.view.default,
        aten.reshape.default,
        aten.expand.default,
        aten.unsqueeze.default,
        aten.slice.Tensor,
        aten.select.int,
        aten.detach.default,
        aten.alias.default,
    }
    values: dict[str, np.ndarray] = {}

    def linear(x, w, b=None):
        """F.linear in float64 by the interpreter's blocked float64 matmul (the weight upcast
        a block at a time into one buffer; torch's float64 GEMM on fresh per-block casts took
        65 s for a 1B model's linears, this takes a float32 forward's time)."""
        x = up(x).contiguous()
        out = torch.from_numpy(matmul_float64(x.numpy(), w.detach().numpy().T))
        return out if b is None else out + up(b)

    def sub(gm):
        """A graph a higher-order op runs (under set_grad_enabled, autocast), run in float64."""
        return lambda *a: Float64(gm).run(*a)

    hop_graphs = {"wrap_with_set_grad_enabled": 1, "wrap_with_autocast": 4}
    asserts = {getattr(aten, "_assert_tensor_metadata", None)}

    class Float64(interpreter_base(untrusted)):
        def call_function(self, target, args, kwargs):
            if any(target is getattr(a, "default", None) for a in asserts if a is not None):
                return None  # export's dtype assertions name float32
            k = hop_graphs.get(getattr(target, "__name__", None))
            if k is not None and isinstance(args[k], torch.fx.GraphModule):
                if target.__name__ == "wrap_with_set_grad_enabled":
                    with torch.set_grad_enabled(bool(args[0])):
                        return sub(args[k])(*up(args[k + 1 :]))
                return sub(args[k])(*up(args[k + 1 :]))  # no autocast on float64
            if target in views:  # a view of a weight stays float32 until an op reads it
                args = tuple(a if isinstance(a, torch.Tensor) else up(a) for a in args)
                return super().call_function(target, args, kwargs)
            if target is aten.embedding.default and isinstance(args[0], torch.Tensor):
                return up(super().call_function(target, args, kwargs))  # gather, then cast
            if (
                target is aten.linear.default
                and isinstance(args[1], torch.Tensor)
                and args[1].dim() == 2
                and args[1].device.type == "cpu"
                and args[1].numel() * 8 > LINEAR_BLOCK_BYTES
                and not kwargs
            ):
                return linear(*args)
            return super().call_function(target, up(args), up(kwargs))

        def run_node(self, n):
            out = super().run_node(n)
            if n.op == "call_function" and isinstance(out, torch.Tensor):
                values[n.name] = to_numpy(out)
            return out

    with torch.no_grad():
        out = Float64(ep.graph_module).run(*_graph_args(ep, _tensors(inputs), cast=up))
    return _user_outputs(ep, out), values


REFERENCE_BUDGET = 4 << 30
"""The memory an ONNX reference run (onnxruntime on the whole source model, or its float64
variant) may use beyond the model and its inputs: it runs in a child process with that
address-space limit (``compiler.opaque.run_onnx_model``), so a model that makes a huge value from
its data (a 253-byte ``com.microsoft::Range(0, 1e10, 1)``) fails there, not here."""


def _model_name(proto) -> str:
    from compiler.opaque import escape as escape_printed

    name = proto.graph.name
    return f"the ONNX model '{escape_printed(name, 80)}'" if name else "the ONNX model"


def _run_budgeted(proto, runtime: list, what: str, fallback: bool = False, optimize: bool = True):
    """`compiler.opaque.run_onnx_model` on `proto`: its outputs and how they were made."""
    from compiler.opaque import run_onnx_model

    try:
        return run_onnx_model(
            proto.SerializeToString(),
            list(runtime),
            what=f"{what} of {_model_name(proto)}",
            budget=REFERENCE_BUDGET,
            fallback=fallback,
            budget_name="explorer.check.references.REFERENCE_BUDGET",
            optimize=optimize,
        )
    except ValueError as e:
        if e.args and e.args[0] == "inputs":
            raise CheckError(
                f"the ONNX model takes {e.args[1]} input(s), {len(runtime)} given"
            ) from None
        raise


MAX_LOOP_WORK = 250_000
"""The most iterations a Loop of an ONNX source may declare for onnxruntime's reference run:
passlens's own interpreter's work budget for all loops of a run (compiler/interpret.py)."""


def _loop_problem(proto) -> str | None:
    """Why onnxruntime should not run `proto` at all, or None: a `Loop` whose trip count
    is a constant past what passlens's own interpreter runs (`compiler.interpret.
    MAX_LOOP_WORK`): it would spin without allocating, which no memory budget stops. Walks
    the subgraphs with a stack."""
    from onnx import numpy_helper

    from compiler.opaque import escape as escape_printed
    from explorer.trust import onnx_graphs

    for g in onnx_graphs([proto.graph]):
        consts = {t.name: t for t in g.initializer}
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                for a in node.attribute:
                    if a.name == "value" and a.HasField("t") and node.output:
                        consts[node.output[0]] = a.t
        for node in g.node:
            if node.op_type != "Loop" or node.domain not in ("", "ai.onnx") or not node.input:
                continue
            t = consts.get(node.input[0])
            if t is None:
                continue
            try:
                trips = int(numpy_helper.to_array(t).reshape(-1)[0])
            except Exception:  # not a number: onnxruntime refuses it itself
                continue
            if trips > MAX_LOOP_WORK:
                return (
                    f"its Loop {escape_printed(node.name or node.output[0], 60)!r} runs "
                    f"{trips:,} iterations, over the {MAX_LOOP_WORK:,} passlens's interpreter "
                    "runs (explorer.check.references.MAX_LOOP_WORK); it was not run"
                )
    return None


def onnx_reference(source: dict, runtime: list) -> tuple:
    """onnxruntime's run of the whole source model (CPUExecutionProvider), in a child process
    under `REFERENCE_BUDGET` (a model from a file may make a value of any size)."""
    problem = _loop_problem(source["model"])
    if problem is not None:
        from compiler.opaque import BudgetError

        what = f"onnxruntime's reference run of {_model_name(source['model'])}"
        raise BudgetError(f"{what}: {problem}")
    outs, _ = _run_budgeted(source["model"], runtime, "onnxruntime's reference run")
    return tuple(np.asarray(o) for o in outs)


def _onnx_float64(proto, runtime: list, optimize: bool = True) -> tuple[tuple, dict, str]:
    """onnxruntime on the ONNX model cast to float64 (initializers, inputs, outputs, value
    types, Cast targets and constant attributes; float inputs cast): the source graph run by
    its own framework in float64, apart from the import being judged (`optimize=False`:
    with onnxruntime's graph optimizations off). onnxruntime lacks
    float64 kernels for some ops (Conv, Erf): then it runs the nodes it has kernels for and
    onnx's reference evaluator (numpy) the others (compiler/opaque/onnx_mixed.py); when that
    fails, the reference evaluator runs the whole cast model; when it fails too, the error
    says why and the tolerance judges. The outputs, no per-node values, and how the run was
    made (the report's notes say it). It runs in a child process under `REFERENCE_BUDGET`,
    as the float32 reference does."""
    from explorer.check.onnx_float64 import cast_to_float64, run_description

    model = cast_to_float64(proto)
    names = [
        i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}
    ]
    feeds = {}
    for name, x in zip(names, runtime, strict=True):
        x = np.asarray(x)
        feeds[name] = x.astype(np.float64) if x.dtype.kind == "f" else x
    outs, how = _run_budgeted(
        model,
        [feeds[n] for n in names],
        "onnxruntime's float64 reference run",
        fallback=True,
        optimize=optimize,
    )
    described = run_description(how) + ("" if optimize else ", optimizations off")
    return tuple(np.asarray(o) for o in outs), {}, described
