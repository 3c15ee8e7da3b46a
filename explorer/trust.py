"""Which opaque ops a trace may run: what passlens knows to be pure computations, what the trace
trusts of its own, and what the person running it trusts.

An opaque op names an op of torch or onnxruntime, and a trace, IR text or ONNX file is
untrusted: an op that is not a known pure computation (`compiler.opaque.allow`) runs
only when trusted. A trace trusts of its own (`trace.trusted_ops`) the torch ops of a model
explored live from the user's own code (its export made them: the user's code, run already);
that trust is never saved, so the same trace loaded from a file refuses them until trusted
again: `explorer.load(path, trust_ops=[...])`, `trace.check(..., trust_ops=[...])`,
`report.reduce(..., trust_ops=[...])`, the CLI's `--trust-op`.

`trusting` is entered by every entry point that runs a trace's modules (check, reduce):
it adds the trust and refuses, before anything runs, a trace holding an op still untrusted,
with one error naming each such op and how to trust it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from compiler.ir import Module
from compiler.opaque import (
    OpaqueOpError,
    refused_message,
    trust_names,
    trusted_ops,
)
from compiler.opaque import refused as refused_opaque_ops
from compiler.opaque import trusted as trusted_opaque_ops


def live_trust(module: Any) -> frozenset[str]:
    """The torch targets of `module`'s opaque ops: what a model explored live from the user's
    own code may run (its export made them)."""
    if not isinstance(module, Module):
        return frozenset()
    out = set()
    for fn in module.functions.values():
        for node in fn.iter_nodes():
            if getattr(node, "op", None) == "opaque" and node.attrs["framework"] == "torch":
                out.add(node.attrs["target"])
    return frozenset(out)


def trace_modules(trace: Any) -> Iterator[Module]:
    """Every module a check or a reduction of `trace` may run: each step's module and the
    module a failed pass was given."""
    for step in getattr(trace, "steps", ()):
        for m in (getattr(step, "module", None), getattr(step, "before", None)):
            if isinstance(m, Module):
                yield m


# higher-order ops of torch.export that only call their subgraphs (each subgraph's ops are
# judged as ops of their own); anything else higher-order (auto_functionalized, with_effects,
# triton kernels, delegates) is refused untrusted
PROGRAM_HOPS = frozenset(
    {
        "cond",
        "while_loop",
        "map_impl",
        "scan",
        "associative_scan",
        "invoke_subgraph",
        "wrap_with_set_grad_enabled",
        "wrap_with_autocast",
    }
)
# calls a program's graph makes that are not values but checks and size queries, or the
# dunder names of bitwise ops (``aten.__and__`` is ``bitwise_and``): they may run in a program
PROGRAM_CALLS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_scalar.default",
        "aten._assert_async.default",
        "aten._assert_async.msg",
        "aten.sym_constrain_range.default",
        "aten.sym_constrain_range_for_size.default",
        "aten._functional_sym_constrain_range.default",
        "aten._functional_sym_constrain_range_for_size.default",
        "aten.sym_size.int",
        "aten.sym_stride.int",
        "aten.sym_numel.default",
        "aten.sym_storage_offset.default",
        "aten._local_scalar_dense.default",
        "aten.item.default",
        *(
            f"aten.__{op}__.{o}"
            for op in ("and", "or", "xor", "lshift", "rshift")
            for o in ("Tensor", "Scalar")
        ),
    }
)
# random ops that are not random with these arguments: (index, name, what makes it a no-op)
PROGRAM_CONDITIONAL = {
    "aten.dropout.default": (2, "train", False),
    "aten.feature_dropout.default": (2, "train", False),
    "aten.alpha_dropout.default": (2, "train", False),
    "aten.feature_alpha_dropout.default": (2, "train", False),
    "aten.native_dropout.default": (2, "train", False),
    "aten.scaled_dot_product_attention.default": (4, "dropout_p", 0.0),
    "aten._scaled_dot_product_flash_attention_for_cpu.default": (3, "dropout_p", 0.0),
    "aten.to.device": (1, "device", "cpu"),
}
# ops that allocate without filling: a program's reference run (explorer.check.references)
# fills what they make with zeros before anything reads it, so no memory the process held
# before shows through; in the program's top graph only (subgraphs run as torch runs them)
PROGRAM_EMPTY = frozenset(
    {
        "aten.empty.memory_format",
        "aten.empty_like.default",
        "aten.empty_permuted.default",
        "aten.empty_strided.default",
        "aten.new_empty.default",
        "aten.new_empty_strided.default",
    }
)
# plain Python calls a program's graph makes on sizes and tuples
_PROGRAM_MODULES = frozenset({"_operator", "operator", "math"})
_PROGRAM_SYM = frozenset(
    {"sym_float", "sym_int", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sqrt", "sym_sum"}
)
MAX_PROGRAM_MODULES = 100_000


def program_refusals(
    program: Any, names: frozenset[str] | None = None, allow_empty: bool = True
) -> dict[str, str]:
    """The calls of a torch program (`ExportedProgram` or `fx.GraphModule`, with every
    subgraph) that may not run in this context (default: with what it trusts), each with why,
    in the order met: a torch op not known to be a pure computation (`compiler.opaque`'
    allowlist) and not trusted, a higher-order op other than control flow
    (`PROGRAM_HOPS`), any other Python callable but `operator` / `math` functions and
    torch's `sym_*`. For a program read from a file (a `.pt2`): running it for a check's
    reference would run every call it names. Walks the subgraphs with a stack, not recursion.
    `allow_empty=False` refuses `PROGRAM_EMPTY` too: for a compiler that runs the
    program itself, where passlens cannot fill what they allocate."""
    from compiler.opaque import refusal as opaque_refusal

    names = trusted_opaque_ops() if names is None else names
    root = getattr(program, "graph_module", program)
    out: dict[str, str] = {}
    stack, seen = [root], set()
    while stack:
        gm = stack.pop()
        if id(gm) in seen:
            continue
        seen.add(id(gm))
        if len(seen) > MAX_PROGRAM_MODULES:
            out["(the program)"] = f"more than {MAX_PROGRAM_MODULES:,} subgraphs"
            break
        stack.extend(getattr(gm, "_modules", {}).values())
        graph = getattr(gm, "graph", None)
        for node in getattr(graph, "nodes", ()):
            if node.op != "call_function":
                if node.op in ("call_method", "call_module"):
                    what = f"{node.op} {str(node.target)[:80]}"
                    out.setdefault(what, "a program from a file calls only functions")
                continue
            why, what = _call_refusal(node.target, names, opaque_refusal)
            if why is not None and what in PROGRAM_CALLS:
                why = None
            elif why is not None and what in PROGRAM_EMPTY and gm is root and allow_empty:
                why = None
            elif why is not None and what in PROGRAM_CONDITIONAL:
                why = _conditional(node, what, why)
            if why is not None:
                out.setdefault(what, why)
    return out


def _conditional(node, what: str, why: str) -> str | None:
    """None when the call `node` of `what` (in `PROGRAM_CONDITIONAL`) has the
    argument that makes it deterministic (dropout with `train=False`, attention with
    `dropout_p=0`, `to` the CPU), else `why` with what it would need."""
    index, name, want = PROGRAM_CONDITIONAL[what]
    value = node.kwargs.get(name, node.args[index] if len(node.args) > index else None)
    if name == "device":
        ok = value is not None and str(value) == "cpu"
    elif name == "dropout_p":
        ok = value is None or (isinstance(value, (int, float)) and float(value) == 0.0)
    else:
        ok = value is want or value == want
    return None if ok else f"{why} (runs only with {name}={want!r})"


def _call_refusal(target: Any, names, opaque_refusal) -> tuple[str | None, str]:
    from torch._ops import HigherOrderOperator, OpOverload, OpOverloadPacket

    if isinstance(target, OpOverload):
        what = f"{target.namespace}.{target._opname}.{target._overloadname}"
        return opaque_refusal("torch", what, names), what
    if isinstance(target, OpOverloadPacket):
        what = f"{target._qualified_op_name.replace('::', '.')}"
        return "an op without its overload", what
    if isinstance(target, HigherOrderOperator):
        what = f"higher_order.{target.name()}"
        if target.name() in PROGRAM_HOPS:
            return None, what
        return "a higher-order op that is not control flow", what
    name = getattr(target, "__name__", type(target).__name__)
    module = getattr(target, "__module__", None) or ""
    what = f"{module}.{name}"[:120]
    if module in _PROGRAM_MODULES or (module.startswith("torch") and name in _PROGRAM_SYM):
        return None, what
    return "a Python function, not a torch op", what


def refuse_untrusted_program(
    program: Any, where: str = "the program", allow_empty: bool = True
) -> None:
    """Raise OpaqueOpError (one, naming each call) when running `program` (a torch program
    read from a file) would call something that may not run in this context."""
    refused = program_refusals(program, allow_empty=allow_empty)
    if refused:
        raise OpaqueOpError(f"{where}: " + refused_message(list(refused), refused))


MAX_ONNX_GRAPHS = 100_000


def onnx_refusals(model: Any, names: frozenset[str] | None = None) -> dict[str, str]:
    """The ONNX ops of `model` (an `onnx.ModelProto`: every node of its graph, of the
    subgraphs its nodes hold and of its local functions) that may not run in this context,
    each with why. A check's reference run gives the whole source model to onnxruntime,
    which runs nodes the import dropped as dead too: each is judged here, before it runs. A
    call of one of the model's own functions is judged by the function's nodes."""
    from compiler.opaque import refusal as opaque_refusal

    names = trusted_opaque_ops() if names is None else names
    functions = list(getattr(model, "functions", ()))
    local = {(f.domain, f.name) for f in functions}
    out: dict[str, str] = {}
    for seen, g in enumerate(onnx_graphs([model.graph, *functions]), start=1):
        if seen > MAX_ONNX_GRAPHS:
            out["(the model)"] = f"more than {MAX_ONNX_GRAPHS:,} graphs"
            break
        for node in g.node:
            domain = node.domain if node.domain not in ("", "ai.onnx") else "ai.onnx"
            if (node.domain, node.op_type) not in local:
                target = f"{domain}::{node.op_type}"
                why = opaque_refusal("onnx", target, names)
                if why is not None:
                    out.setdefault(target[:200], why)
    return out


def onnx_graphs(roots) -> Iterator[Any]:
    """Every graph of `roots` (ONNX GraphProtos or FunctionProtos) and of the subgraphs their
    nodes hold (If branches, Loop and Scan bodies), nested however deep: a stack, no
    recursion."""
    stack = list(roots)
    while stack:
        g = stack.pop()
        yield g
        for node in g.node:
            for a in node.attribute:
                if a.HasField("g"):
                    stack.append(a.g)
                stack.extend(a.graphs)


def source_program(trace: Any) -> Any:
    """The torch program a check of `trace` would run as its reference, if any."""
    source = getattr(trace, "source", None)
    if not isinstance(source, dict):
        return None
    for key in ("exported", "model"):
        program = source.get(key)
        if program is not None and hasattr(program, "graph_module"):
            return program
    return None


def refuse_untrusted(trace: Any) -> None:
    """Raise OpaqueOpError (one, naming each op) when `trace` holds an opaque op that may
    not run in this context, or when its source is a torch program read from a file
    (`trace.source_trusted` false: a `.pt2`) whose reference run would call one."""
    refused = refused_opaque_ops(trace_modules(trace))
    source = getattr(trace, "source", None)
    model = source.get("model") if isinstance(source, dict) else None
    if getattr(trace, "frontend", "") == "onnx" and hasattr(model, "graph"):
        for what, why in onnx_refusals(model).items():
            refused.setdefault(what, f"{why}, in the source model onnxruntime would run")
    if not getattr(trace, "source_trusted", True):
        program = source_program(trace)
        if program is not None:
            for what, why in program_refusals(program).items():
                refused.setdefault(what, f"{why}, in the source program")
    if refused:
        raise OpaqueOpError(refused_message(list(refused), refused))


@contextlib.contextmanager
def trusting(trace: Any, trust_ops: Iterable[str] | str | None = None):
    """Run the block with `trace`'s own trust and `trust_ops` added to this context's, after
    refusing a trace that holds an op still untrusted (OpaqueOpError, before anything runs)."""
    names = trust_names(trust_ops) | frozenset(getattr(trace, "trusted_ops", ()) or ())
    with trusted_ops(names):
        refuse_untrusted(trace)
        yield


class TrustingExecutable:
    """A compiled step's executable that runs with its trace's own trust (a live torch model's
    custom ops, called on the host between the kernels); everything else is the executable's."""

    def __init__(self, executable: Any, trust: frozenset[str]):
        self._executable = executable
        self._trust = trust

    def __call__(self, *inputs: Any, **options: Any):
        with trusted_ops(self._trust):
            return self._executable(*inputs, **options)

    def run(self, *inputs: Any, **options: Any):
        with trusted_ops(self._trust):
            return self._executable.run(*inputs, **options)

    def __getattr__(self, name: str):
        return getattr(self._executable, name)

    def __repr__(self) -> str:
        return repr(self._executable)


def with_trace_trust(executable: Any, trace: Any) -> Any:
    """`executable` running with `trace`'s own trust, if it has any."""
    trust = frozenset(getattr(trace, "trusted_ops", ()) or ())
    return TrustingExecutable(executable, trust) if trust else executable


def needed_trust(module: Any) -> frozenset[str]:
    """The opaque targets of `module` that run only when trusted (not known to be pure
    computations), whatever is trusted now."""
    return frozenset(refused_opaque_ops(module, frozenset()))


def current_trust() -> frozenset[str]:
    """The op names trusted in this context."""
    return trusted_opaque_ops()


__all__ = [
    "PROGRAM_CALLS",
    "PROGRAM_CONDITIONAL",
    "PROGRAM_EMPTY",
    "PROGRAM_HOPS",
    "current_trust",
    "onnx_graphs",
    "onnx_refusals",
    "program_refusals",
    "refuse_untrusted_program",
    "source_program",
    "live_trust",
    "needed_trust",
    "refuse_untrusted",
    "trace_modules",
    "trusting",
    "with_trace_trust",
]
