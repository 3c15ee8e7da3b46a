"""FX graph helpers of the torch.compile recorder (explorer/inductor/record.py): a graph's
fingerprint (what a pass changes), its copy, its signature (what a replay matches), and the names
of passes, patterns and their rewrites."""

from __future__ import annotations

from typing import Any


def fingerprint(graph: Any) -> tuple:
    """What a pass changes when it changes a graph: every node (the object), its op, target,
    args, kwargs and name (the very tuples: a pass that changes a node's inputs gives it new ones).
    Compared with `same`; costs a reference per field, no copy."""
    return tuple((n, n.op, n.target, n.args, n.kwargs, n.name) for n in graph.nodes)


def same(a: tuple, b: tuple) -> bool:
    """Whether two fingerprints are equal (a comparison that fails, e.g. on a tensor in the
    arguments, counts as a change: the graph is copied, never missed)."""
    try:
        return len(a) == len(b) and all(
            x[0] is y[0] and x[2] is y[2] and x[3] == y[3] and x[4] == y[4] and x[5] == y[5]
            for x, y in zip(a, b, strict=True)
        )
    except Exception:
        return False


def copy_graph(gm: Any) -> tuple[Any, dict]:
    """A copy of `gm`'s graph (node metadata shared, not copied) and the tensors and
    submodules its `get_attr` / `call_module` nodes read."""
    import copy

    graph = copy.deepcopy(gm.graph)
    attrs: dict = {}
    for n in graph.nodes:
        if n.op in ("get_attr", "call_module"):
            obj: Any = gm
            try:
                for part in str(n.target).split("."):
                    obj = getattr(obj, part)
            except AttributeError:
                continue
            attrs[str(n.target)] = obj
    return graph, attrs


def pass_label(fn: Any) -> str:
    """The name of a pass function or object: a custom pass's class, a function's name."""
    inner = fn
    while hasattr(inner, "func") and type(inner).__name__ == "partial":
        inner = inner.func
    name = getattr(inner, "__name__", None)
    if name is None or name == "<lambda>":
        if not callable(inner) or type(inner).__name__ in (
            "function",
            "builtin_function_or_method",
        ):
            return name or "<lambda>"
        return type(inner).__name__
    return name


def pattern_label(entry: Any) -> str:
    """A pattern-matcher entry's name: its pattern's name, its handler, or its pattern's ops."""
    name = getattr(entry, "pattern_name", None)
    if name:
        return str(name)
    handler = getattr(entry, "handler", None)
    if handler is not None:
        return pass_label(handler)
    pattern = getattr(entry, "pattern", None)
    try:
        return pattern.fns_repr()
    except Exception:
        return type(pattern).__name__


def make_rewrite(pattern: str, matched: list[str], graph: Any, before: set) -> Any:
    """A pattern-matcher replacement as a rewrite (`explorer.rewrites.Rewrite`) named by its
    pattern: the FX nodes it matched (the node it fired on first) and the nodes it added to
    `graph` (not in `before`), the last of them (the replacement's output) first."""
    from explorer.rewrites import make

    added = [n.name for n in graph.nodes if n not in before]
    return make(pattern, matched, added[-1:] + added[:-1])


def graph_signature(graph: Any) -> tuple:
    """Every node's op and name but symbolic-size inputs: a replay of the same frame makes
    the same graph, static or dynamic."""
    out = []
    for n in graph.nodes:
        if n.op == "placeholder":
            val = n.meta.get("example_value", n.meta.get("val"))
            if not hasattr(val, "shape"):
                continue
        out.append((n.op, n.name))
    return tuple(out)


__all__ = [
    "copy_graph",
    "fingerprint",
    "graph_signature",
    "make_rewrite",
    "pass_label",
    "pattern_label",
    "same",
]
