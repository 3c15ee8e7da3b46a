"""A run of an ONNX model split between onnxruntime and onnx's reference evaluator:
onnxruntime runs every node it has a kernel for in the model's types, onnx.reference (numpy)
the others.

The check's float64 run (explorer/check/references.py) casts the source model to float64, and
onnxruntime has no float64 kernel for Conv, ConvTranspose, Erf, AveragePool,
InstanceNormalization and a few more, so a CNN's or a BERT's cast model makes no session.
Then :func:`run_mixed` classifies the model's top-level nodes (one probe session per op and
input types: onnxruntime's own answer, no list kept here), cuts them into runs of consecutive
nodes of one kind, and runs each run as a model of its own with its runner, in order, values
passed from one to the next by name and dropped after their last reader. A node holding a
subgraph (If, Loop, Scan) is probed with the values its body reads from outside.

This module is the first part of the program of compiler.opaque.sizes.run_onnx_model's child
process (its source is read and prepended): it imports only numpy, onnx and onnxruntime, each
inside the functions, and nothing of passlens."""

from __future__ import annotations


def graph_free_names(graph) -> list[str]:
    """Names a subgraph reads that it does not define (the outer values its nodes use)."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    defined |= {t.values.name for t in graph.sparse_initializer}
    defined |= {o for n in graph.node for o in n.output}
    out = []
    for n in graph.node:
        out += [r for r in node_reads(n) if r not in defined]
    return list(dict.fromkeys(out))


def node_reads(node) -> list[str]:
    """The values a node reads: its inputs, then what its subgraphs read from outside."""
    import onnx

    names = [n for n in node.input if n]
    for a in node.attribute:
        graphs = [a.g] if a.type == onnx.AttributeProto.GRAPH else []
        for g in [*graphs, *a.graphs]:
            names += graph_free_names(g)
    return list(dict.fromkeys(names))


def _elem_types(model) -> dict[str, int]:
    """Each value's element type, from onnx's shape inference (strict off)."""
    from onnx import shape_inference

    try:
        graph = shape_inference.infer_shapes(model).graph
    except Exception:  # a model shape inference fails on: only what the file declares
        graph = model.graph
    types = {t.name: t.data_type for t in graph.initializer}
    for v in [*graph.input, *graph.value_info, *graph.output]:
        if v.type.WhichOneof("value") == "tensor_type" and v.type.tensor_type.elem_type:
            types[v.name] = v.type.tensor_type.elem_type
    return types


def _submodel(model, nodes, inputs, outputs, typed, initializers):
    """A model of ``nodes`` reading ``inputs`` (each a graph input of the element type
    ``typed`` gives, or an initializer) and giving ``outputs`` (untyped)."""
    import onnx
    from onnx import helper

    graph_inputs, inits = [], []
    for name in inputs:
        if name in initializers:
            inits.append(initializers[name])
        else:
            graph_inputs.append(helper.make_tensor_value_info(name, typed(name), None))
    outs = []
    for name in outputs:
        v = onnx.ValueInfoProto()
        v.name = name
        outs.append(v)
    graph = helper.make_graph(list(nodes), "part", graph_inputs, outs, initializer=inits)
    sub = helper.make_model(graph, opset_imports=list(model.opset_import))
    sub.ir_version = model.ir_version
    sub.functions.extend(model.functions)
    return sub


def run_mixed(model, feeds: dict, options=None) -> tuple[list, list[str]]:
    """The outputs of the ONNX ``model`` on ``feeds`` (graph input name -> array), each node
    run by onnxruntime where it makes a session of it, else by onnx.reference; and the op
    types onnx.reference ran (sorted, one each). Raises what a runner raises (a value
    that is not a tensor between runs too)."""
    import numpy as np
    import onnxruntime as ort
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    types = _elem_types(model)
    probed: dict[tuple, bool] = {}

    def by_onnxruntime(node) -> bool:
        reads = node_reads(node)
        if any(types.get(r) is None for r in reads):
            return False  # an input of unknown type: onnx.reference takes it
        has_graph = any(a.graphs or a.HasField("g") for a in node.attribute)
        key = (node.domain, node.op_type, tuple(types[r] for r in reads))
        if not has_graph and key in probed:
            return probed[key]
        probe = _submodel(model, [node], reads, [o for o in node.output if o], types.get, {})
        try:
            ort.InferenceSession(
                probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
            ok = True
        except Exception as e:
            if isinstance(e, MemoryError):
                raise
            ok = False
        if not has_graph:
            probed[key] = ok
        return ok

    nodes = list(graph.node)
    kinds = [by_onnxruntime(n) for n in nodes]
    runs: list[tuple[bool, list]] = []
    for node, kind in zip(nodes, kinds, strict=True):
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(node)
        else:
            runs.append((kind, [node]))
    wanted = [o.name for o in graph.output]
    last_read: dict[str, int] = {name: len(runs) for name in wanted}
    for k, (_, part) in enumerate(runs):
        for n in part:
            for r in node_reads(n):
                last_read[r] = max(last_read.get(r, -1), k)
    values = dict(feeds)

    def typed(name: str) -> int:
        v = values[name]
        if not isinstance(v, np.ndarray):
            raise TypeError(f"{name} is not a tensor between the parts of the run")
        return helper.np_dtype_to_tensor_dtype(v.dtype)

    for k, (kind, part) in enumerate(runs):
        made = {o for n in part for o in n.output if o}
        reads = [r for n in part for r in node_reads(n) if r not in made]
        inputs = list(dict.fromkeys(reads))
        outputs = [o for n in part for o in n.output if o and last_read.get(o, -1) > k]
        outputs = list(dict.fromkeys(outputs))
        sub = _submodel(model, part, inputs, outputs, typed, initializers)
        feed = {name: values[name] for name in inputs if name not in initializers}
        if kind:
            sess = ort.InferenceSession(
                sub.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
            outs = sess.run(outputs, feed)
        else:
            outs = ReferenceEvaluator(sub).run(outputs, feed)
        values.update(zip(outputs, outs, strict=True))
        for name in [n for n in values if last_read.get(n, -1) == k]:
            del values[name]  # read for the last time by this part
    result = []
    for name in wanted:
        if name in values:
            result.append(values[name])
        else:  # an output that is an initializer itself
            result.append(numpy_helper.to_array(initializers[name]))
    by_reference = sorted({n.op_type for n, kind in zip(nodes, kinds, strict=True) if not kind})
    return result, by_reference
