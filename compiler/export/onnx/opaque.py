"""The ONNX form of an ``opaque`` op: an opaque ONNX op goes out as the node it came from."""

from __future__ import annotations

from compiler.export.onnx.registry import ExportError, exporter
from compiler.ir.types import TupleType


@exporter("opaque")
def _opaque(e, n, a):
    """An opaque ONNX op goes out as the node it came from (same op version); an opaque torch
    op has no ONNX form."""
    import onnx

    from compiler.opaque.layout import ONNX_DEFAULT_DOMAIN, describe, result_type, unescape
    from compiler.opaque.run import onnx_attribute

    attrs = n.attrs
    if attrs["framework"] != "onnx":
        raise ExportError(
            f"opaque op {describe(attrs)} cannot be exported to ONNX: passlens has no "
            "converter for it, so no ONNX form"
        )
    domain, op_type = attrs["target"].split("::")
    recorded = attrs["opset"]
    if domain == ONNX_DEFAULT_DOMAIN:
        domain = ""
        try:
            same = (
                onnx.defs.get_schema(op_type, recorded, "").since_version
                == onnx.defs.get_schema(op_type, e.opset, "").since_version
            )
        except onnx.defs.SchemaError:
            same = False
        if not same:
            raise ExportError(
                f"opaque op {attrs['target']} was recorded at opset {recorded}, and opset "
                f"{e.opset} has another version of it: it is exported only at an opset with "
                "the same version"
            )
    elif e.domains.setdefault(domain, recorded) != recorded:
        raise ExportError(
            f"ops of domain {domain} recorded at opsets {e.domains[domain]} and {recorded}"
        )
    inputs = ["" if x is None else a[unescape(x)] for x in attrs["args"]]
    ty = result_type(attrs["type"])
    fields = len(ty.fields) if isinstance(ty, TupleType) else 1
    positions = list(attrs["outputs"]) if attrs["outputs"] else list(range(fields))
    outs = e.node(op_type, inputs, outputs=max(positions) + 1, domain=domain)
    outs = outs if isinstance(outs, list) else [outs]
    node = e.graphs[-1][-1]
    for k in range(len(outs)):
        if k not in positions:
            node.output[k] = ""  # an optional output the model did not ask for
    for name, value in attrs["kwargs"]:
        node.attribute.append(onnx_attribute(name, value, op_type, domain, recorded))
    kept = [outs[p] for p in positions]
    return kept if isinstance(ty, TupleType) else kept[0]
