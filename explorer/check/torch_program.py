"""How torch's reference runs a torch program op by op (explorer/check/references.py): under a
memory budget and with allocations zero-filled when the program was read from a file, and a
linear with a bias as its product, then the bias."""

from __future__ import annotations

from typing import Any

PROGRAM_BUDGET = 4 << 30
"""What the reference run of a torch program read from a file (a ``.pt2``) may allocate
beyond what the process holds, its weights and twice its inputs and weights: the run is made
under that address-space limit (``compiler.opaque.memory_budget``), so a program asking for a huge
value (``full([100000, 100000])``) fails with one error instead of taking the machine."""


def program_budget(ep, tensors: list, what: str):
    """The memory budget a program read from a file runs under (see PROGRAM_BUDGET)."""
    import torch

    from compiler.opaque import memory_budget

    storages = {}  # what the weights and inputs really hold: a stride-0 weight holds little
    for t in [*ep.state_dict.values(), *tensors]:
        if isinstance(t, torch.Tensor):
            s = t.untyped_storage()
            storages[s.data_ptr()] = s.nbytes()
    held = sum(storages.values())
    return memory_budget(what, PROGRAM_BUDGET + 2 * held)


def interpreter_base(untrusted: bool):
    """`torch.fx.Interpreter`, or for a program read from a file one that fills what an
    allocating op (`empty`, `empty_like`, ..., explorer.trust.PROGRAM_EMPTY) makes with
    zeros before anything reads it: uninitialised memory may hold what the process held
    before."""
    import torch

    if not untrusted:
        return torch.fx.Interpreter
    from compiler.opaque import check_kernel_shapes
    from explorer.trust import PROGRAM_EMPTY

    class Filled(torch.fx.Interpreter):
        def call_function(self, target, args, kwargs):
            name = getattr(target, "_overloadname", None)
            full = f"{target.namespace}.{target._opname}.{name}" if name is not None else ""
            if full:
                check_kernel_shapes(full, args)  # inputs a kernel would take on trust
            out = super().call_function(target, args, kwargs)
            if full in PROGRAM_EMPTY and isinstance(out, torch.Tensor):
                out.zero_()
            return out

    return Filled


GRAPH_RUN = "the exported graph run op by op, no_grad"


def graph_run(ep) -> str:
    """How torch's reference ran program `ep` (for the report's reference line)."""
    import torch

    for sub in ep.graph_module.modules():
        graph = getattr(sub, "graph", None)
        for n in graph.nodes if isinstance(graph, torch.fx.Graph) else ():
            if n.op == "call_function" and _bias_of(n.target, n.args, n.kwargs) is not None:
                return GRAPH_RUN + "; a linear's bias added after its product"
    return GRAPH_RUN


def unfused_bias(target: Any, args: tuple, kwargs: dict) -> tuple | None:
    """`(lhs, rhs, bias, bias_first)` of a call of torch's `linear` with a bias or of `addmm`
    (its `alpha` and `beta` 1), which torch's reference computes as the product `matmul(lhs,
    rhs)`, then the bias added (`add(bias, product)` when `bias_first`, as `addmm` is
    imported), or None. That is what the IR's `linear` means and what `at::linear` computes
    where it does not flatten its input; fused, the bias in the accumulator, the two round
    otherwise in the last bits once the product's sum is split in blocks (K above ~256): two
    float32 roundings of the same sum, neither nearer the exact one. With the same rounding the
    import's values are torch's own, so torch's reference takes the import's calls after every
    biased linear too (`explorer.passlens.shared`) instead of computing a second forward of
    other bits."""
    import torch

    parts = _bias_of(target, args, kwargs)
    if parts is None:
        return None
    lhs, rhs, bias, bias_first = parts
    if not all(isinstance(t, torch.Tensor) for t in (lhs, rhs, bias)):
        return None
    if len({lhs.dtype, rhs.dtype, bias.dtype}) != 1 or not lhs.dtype.is_floating_point:
        return None  # (the fused op errs on mixed dtypes: let it)
    if rhs.dim() != 2 or lhs.dim() < 1 or bias.dim() > 2 or (not bias_first and bias.dim() > 1):
        return None
    if bias_first:  # addmm's bias broadcasts to the product, never the product to it
        if lhs.dim() != 2:
            return None
        out = (lhs.shape[0], rhs.shape[1])
        try:
            if tuple(torch.broadcast_shapes(bias.shape, out)) != out:
                return None
        except RuntimeError:
            return None
    return lhs, (rhs if bias_first else torch.ops.aten.t.default(rhs)), bias, bias_first


_FUSED: list = []  # aten's linear.default and addmm.default, once torch is imported


def _bias_of(target: Any, args: tuple, kwargs: dict) -> tuple | None:
    """`(lhs, rhs, bias, bias_first)` as the call names them (`unfused_bias`: the linear's
    weight not yet transposed), or None."""
    if not _FUSED:
        import torch

        _FUSED.extend((torch.ops.aten.linear.default, torch.ops.aten.addmm.default))
    if target is not _FUSED[0] and target is not _FUSED[1]:
        return None
    kwargs = kwargs or {}
    if target is _FUSED[0]:
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        if bias is None or len(args) < 2 or set(kwargs) - {"bias"}:
            return None
        return args[0], args[1], bias, False
    # addmm(bias, lhs, rhs), its beta and alpha 1
    if len(args) != 3 or set(kwargs) - {"beta", "alpha"}:
        return None
    if any(type(v) not in (int, float) or v != 1 for v in kwargs.values()):
        return None
    return args[1], args[2], args[0], True
