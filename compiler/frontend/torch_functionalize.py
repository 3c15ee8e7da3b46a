"""Functionalisation of in-place writes into views, before conversion.

torch.export keeps in-place operators. A write into a fresh value (``(x * 2).add_(1)``) is
converted by rebinding the value, but a write into a *view* (``t[:, :, 0] += a``,
``t[1:].copy_(s)``, ``v = t.view(-1); v.mul_(2)``) also changes the tensor the view aliases,
and every other view of it: the IR has values, not storage. torch's own functionalisation
(``ExportedProgram.run_decompositions`` with an empty table: no op is decomposed) rewrites
those writes into ``select_scatter`` / ``slice_scatter`` / ``copy`` / ``index_put`` of the
base, exactly, so the program is left to torch to get right. It runs only when a program
writes into a view: node names change on the way, and the explorer shows, and checks
against, the program that was imported (``export_torch`` returns the functionalised one).
"""

from __future__ import annotations

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_convert import is_view, mutated_input


def writes_into_views(ep) -> bool:
    """Whether any graph of ``ep`` (subgraphs included) writes in place into a view."""
    graphs = [m.graph for m in ep.graph_module.modules() if hasattr(m, "graph")]
    for node in (n for g in graphs for n in g.nodes):
        if node.op != "call_function":
            continue
        target = mutated_input(node)
        if target is not None and is_view(target):
            return True
    return False


def functionalized(ep):
    """``ep`` with its in-place writes into views made functional (``ep`` itself when it
    has none)."""
    if not writes_into_views(ep):
        return ep
    try:
        return ep.run_decompositions({})
    except Exception as e:  # torch's errors are long: keep the head
        head = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FrontendError(
            f"torch could not make the in-place writes into views functional: "
            f"{type(e).__name__}: {head}"
        ) from e
