"""Running an `opaque` op (see compiler/ops/opaque.py) with its own framework.

- Only what is known to be a pure computation runs, or what the person running it trusts
  (compiler/opaque/allow.py): anything else is refused before its name is looked up.
- torch: the op is found by attribute lookup only, `torch.ops.<ns>.<name>.<overload>`, and
  must be an `OpOverload` (never a module imported, never a string evaluated). A custom op
  whose library this process has not imported is not there: the error says to import it.
  Inputs are copied into torch tensors (an in-place op may write into them).
- onnx: the op runs in onnxruntime as a one-node model built with onnx.helper; the session is
  cached per op, attributes and input dtypes.

torch and onnxruntime are imported when an opaque op runs, never before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from compiler.ir.types import DType, TensorType, TupleType, torch_dtypes
from compiler.opaque.layout import ONNX_DEFAULT_DOMAIN, OpaqueOpError, result_type, unescape
from compiler.opaque.sizes import (
    MAX_RANK,
    MAX_VALUE_INPUT,
    BudgetError,
    bind,
    captured_output,
    memory_budget,
    onnx_bound,
    torch_bound,
    value_input,
)

# the most one result of an opaque op may hold: the interpreter's limit for one value
# (compiler.interpret.MAX_VALUE_BYTES), stated here so that running an op needs no interpreter
MAX_RESULT_BYTES = 4 << 30

MAX_SESSIONS = 64
"""onnxruntime sessions kept for opaque ONNX ops (least recently used dropped first)."""


def run(values: list, attrs: Mapping[str, Any]) -> Any:
    """The value of an opaque op on `values` (numpy arrays); attrs with symbols resolved."""
    if attrs["framework"] == "torch":
        return run_torch(values, attrs)
    if attrs["framework"] == "onnx":
        return run_onnx(values, attrs)
    raise OpaqueOpError(f"opaque op {attrs['target']}: unknown framework {attrs['framework']!r}")


# ----- torch ------------------------------------------------------------------------------------


def resolve_torch_op(target: str):
    """The `torch._ops.OpOverload` named `ns.name.overload`, found by attribute lookup
    under `torch.ops`; OpaqueOpError when this process has no such operator."""
    try:
        import torch
        from torch._ops import OpOverload, OpOverloadPacket, _OpNamespace
    except ImportError:
        raise OpaqueOpError(
            f"opaque op {target} is run by torch, which is not installed here"
        ) from None
    ns, name, overload = target.split(".")
    namespace = getattr(torch.ops, ns, None)
    packet = None
    if isinstance(namespace, _OpNamespace):
        try:
            packet = getattr(namespace, name)
        except (AttributeError, RuntimeError):
            packet = None
    if not isinstance(packet, OpOverloadPacket):
        if ns == "aten":
            raise OpaqueOpError(f"torch {torch.__version__} has no operator aten.{name}")
        raise OpaqueOpError(
            f"torch has no operator {ns}.{name} in this process: it is a custom op; import the "
            f"Python library that registers the '{ns}' operators (with torch.library) before "
            "running or checking this model"
        )
    try:
        op = getattr(packet, overload)
    except (AttributeError, RuntimeError):
        op = None
    if not isinstance(op, OpOverload):
        have = ", ".join(getattr(packet, "overloads", lambda: [])()) or "none"
        raise OpaqueOpError(
            f"torch operator {ns}.{name} has no overload {overload!r} (it has: {have})"
        )
    return op


def _to_torch(value: Any):
    import torch

    arr = np.asarray(value)
    if arr.dtype == DType.bfloat16.numpy:
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    try:
        return torch.from_numpy(np.array(arr, copy=True))  # a copy: the op may write into it
    except TypeError as e:
        raise OpaqueOpError(f"torch cannot hold a {arr.dtype} array: {e}") from None


def _from_torch(value: Any, target: str) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach().cpu()
        if t.layout != torch.strided:
            raise OpaqueOpError(f"{target} gave a {t.layout} tensor, not a dense one")
        try:
            t = t.resolve_conj().resolve_neg()  # a view with its conjugate or negative bit set
            if t.dtype == torch.bfloat16:
                return t.view(torch.int16).numpy().view(DType.bfloat16.numpy).copy()
            return t.numpy().copy()
        except (TypeError, RuntimeError, NotImplementedError) as e:
            head = (str(e).strip().splitlines() or [type(e).__name__])[0]
            why = f"{target} gave a {t.dtype} tensor numpy cannot hold: {head}"
            raise OpaqueOpError(why) from None
    if isinstance(value, (tuple, list)):
        return tuple(_from_torch(v, target) for v in value)
    raise OpaqueOpError(f"{target} gave a {type(value).__name__}, not tensors")


def _torch_arg(value: Any, tensors: list, dtypes: dict) -> Any:
    if isinstance(value, str):
        got = unescape(value)
        return tensors[got] if isinstance(got, int) else got
    if isinstance(value, DType):
        if value not in dtypes:
            raise OpaqueOpError(f"torch has no dtype for {value.short}")
        return dtypes[value]
    if isinstance(value, tuple):
        return [_torch_arg(v, tensors, dtypes) for v in value]
    return value


_SIZED: OrderedDict = OrderedDict()  # calls found within the limit (they depend on shapes only)
MAX_SIZED = 4096


def _sized_before(key) -> bool:
    with _LOCK:
        if key in _SIZED:
            _SIZED.move_to_end(key)
            return True
    return False


def _remember_sized(key) -> None:
    with _LOCK:
        _SIZED[key] = True
        while len(_SIZED) > MAX_SIZED:
            _SIZED.popitem(last=False)


def _refuse_over_bound(what: str, bound: float) -> None:
    """OpaqueOpError when an op whose output size depends on its input values could make more
    than the interpreter's limit for one value from these (`bound` bytes)."""
    if bound > MAX_RESULT_BYTES:
        raise OpaqueOpError(
            f"{what} could make up to {bound:,.0f} bytes from these input values (its output "
            f"size depends on them), over the interpreter's limit of {MAX_RESULT_BYTES >> 30} "
            "GiB for one value (compiler.opaque.run.MAX_RESULT_BYTES); it was not run"
        ) from None


_NOT = object()  # an argument the fake run takes as it is


def _concrete(real: Any, schema_arg) -> Any:
    """For the fake run: a tensor passed where the schema takes a number or a list of numbers
    (`arange("%0")`, a Scalar from a 0-d tensor) as its actual value, so the fake run sizes
    what the real one (which reads the same value) makes; _NOT for other arguments."""
    import torch

    if not isinstance(real, torch.Tensor) or schema_arg is None:
        return _NOT
    kind = str(schema_arg.type)
    if "Tensor" in kind or real.numel() > MAX_SIZE_INPUT:
        return _NOT
    try:
        return real.tolist() if "[]" in kind else real.item()
    except Exception:  # not one number (the op refuses it, on fake tensors too)
        return _NOT


def _check_sizes_first(op, target: str, tensors: list, args: list, kwargs: dict, attrs, dtypes):
    """Run the op on fake tensors (shapes and dtypes only, nothing allocated) and refuse it
    when its results would be over the interpreter's limit for one value: the arguments come
    from a model or a trace file, untrusted (`aten.full` of [100000, 100000]). An op whose
    result size depends on the data (`nonzero`, `repeat_interleave.Tensor`) is bounded
    from the actual inputs instead (`sizes.TORCH_BOUNDS`); one with neither a size
    nor a bound (a custom op without a fake kernel) runs under a memory budget: this returns
    that budget (a context manager) for the call, else None. A call sized before (same op,
    arguments and input shapes; never one sized from the values) is not sized again."""
    key = (
        "torch",
        target,
        attrs["args"],
        attrs["kwargs"],
        tuple((tuple(t.shape), t.dtype) for t in tensors),
    )
    if _sized_before(key):
        return None
    import torch
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        FakeTensorMode,
        UnsupportedOperatorException,
    )

    pairs = bind(op, target, args, kwargs.items())  # positional first, then the keywords
    valued = any(isinstance(a, torch.Tensor) and "Tensor" not in str(p.type) for p, a in pairs)
    concrete = [_concrete(r, p) for p, r in pairs[: len(args)]]
    concrete_kw = {p.name: _concrete(r, p) for p, r in pairs[len(args) :]}
    mode = FakeTensorMode()
    try:
        with mode, captured_output(f"torch {target} (sized on fake tensors)"):
            fakes = [mode.from_tensor(t) for t in tensors]
            fargs = [_torch_arg(a, fakes, dtypes) for a in attrs["args"]]
            fkwargs = {k: _torch_arg(v, fakes, dtypes) for k, v in attrs["kwargs"]}
            fargs = [f if c is _NOT else c for f, c in zip(fargs, concrete, strict=True)]
            fkwargs = {
                k: f if concrete_kw[k] is _NOT else concrete_kw[k] for k, f in fkwargs.items()
            }
            out = op(*fargs, **fkwargs)
    except (DynamicOutputShapeException, DataDependentOutputException):
        bound = torch_bound(target, op, args, kwargs)  # a size only the values give
        if bound is None:
            return memory_budget(f"torch {target}", MAX_RESULT_BYTES)
        _refuse_over_bound(f"torch {target}", bound)
        return None
    except UnsupportedOperatorException:  # a custom op without a fake kernel: unsized
        return memory_budget(f"torch {target}", MAX_RESULT_BYTES)
    except Exception as e:  # the op refuses these arguments: its own message, named
        head = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OpaqueOpError(f"torch {target} failed: {type(e).__name__}: {head}") from e
    results = out if isinstance(out, (tuple, list)) else [out]
    tensors_out = [t for t in results if isinstance(t, torch.Tensor)]
    if any(t.dim() > MAX_RANK for t in tensors_out):
        raise OpaqueOpError(
            f"torch {target} would give a result of more than {MAX_RANK} dims for these "
            "arguments (compiler.opaque.sizes.MAX_RANK); it was not run"
        )
    nbytes = sum(t.numel() * t.element_size() for t in tensors_out)
    if nbytes > MAX_RESULT_BYTES:
        raise OpaqueOpError(
            f"torch {target} would give {nbytes:,} bytes for these arguments, over the "
            f"interpreter's limit of {MAX_RESULT_BYTES >> 30} GiB for one value "
            "(compiler.opaque.run.MAX_RESULT_BYTES); it was not run"
        )
    if not valued:
        _remember_sized(key)
    return None


# batch norms (inference): input, then weight, bias, running mean and variance, each of C
# elements; their kernels read C values of each without checking (short ones: heap values)
_PER_CHANNEL = {
    "aten.native_batch_norm.default": 4,
    "aten._native_batch_norm_legit_no_training.default": 4,
    "aten._native_batch_norm_legit.default": 4,
    "aten._native_batch_norm_legit.no_stats": 2,
    "aten._batch_norm_no_update.default": 4,
    "aten.batch_norm.default": 4,
    "aten.instance_norm.default": 4,
}


def check_kernel_shapes(target: str, args: Sequence[Any]) -> None:
    """Refuse (OpaqueOpError) a call of a kernel that takes a second input's size on trust,
    when its inputs disagree: a batch norm's weight, bias and running statistics must each
    hold one value a channel of its input. Called with the call's real arguments, before it
    runs (an opaque op, a program's reference run: `explorer.check.references`)."""
    count = _PER_CHANNEL.get(target)
    if count is None:
        return
    import torch

    x = args[0] if args else None
    if not isinstance(x, torch.Tensor):
        return
    channels = x.shape[1] if x.dim() > 1 else 1
    for k, t in enumerate(args[1 : 1 + count], start=1):
        if isinstance(t, torch.Tensor) and t.numel() != channels:
            raise OpaqueOpError(
                f"torch {target}: argument {k} holds {t.numel():,} values for an input of "
                f"{channels:,} channels (one a channel expected); it was not run"
            )


def check_torch_args(op, target: str, attrs: Mapping[str, Any]) -> None:
    """The stored arguments checked against `op`'s schema before anything runs: a file may
    give any value, and torch takes a dtype, a layout or a memory format as a plain int (an
    enum value out of range crashes the process: `range(..., dtype=-2**40)` dies of SIGFPE).
    A dtype must be a dtype (`f32`) or none; a layout or memory format none (torch's
    default: passlens never records one); a device none or `"cpu"`; no more positional
    arguments than the schema has, no keyword it does not name."""
    for param, value in bind(op, target, attrs["args"], attrs["kwargs"]):
        kind = str(param.real_type).removeprefix("Optional[").removesuffix("]")
        bad = None
        if kind == "ScalarType" and not (value is None or isinstance(value, DType)):
            bad = "a dtype (f32, i64, ...) or none"
        elif kind in ("Layout", "MemoryFormat") and value is not None:
            bad = "none (passlens keeps torch's default)"
        elif kind == "Device" and not (value is None or value == "cpu"):
            bad = 'none or "cpu"'
        if bad is not None:
            raise OpaqueOpError(
                f"torch {target}: argument {param.name} ({param.real_type}) must be {bad}, "
                f"got {str(value)[:40]!r}; it was not run"
            )


def run_torch(values: list, attrs: Mapping[str, Any]) -> Any:
    """Call the torch op on `values` with the stored arguments; numpy in and out."""
    from compiler.opaque.allow import check_allowed

    target = attrs["target"]
    check_allowed("torch", target)  # before anything of it is looked up
    op = resolve_torch_op(target)
    check_torch_args(op, target, attrs)
    dtypes = torch_dtypes()
    tensors = [_to_torch(v) for v in values]
    args = [_torch_arg(a, tensors, dtypes) for a in attrs["args"]]
    kwargs = {k: _torch_arg(v, tensors, dtypes) for k, v in attrs["kwargs"]}
    budget = _check_sizes_first(op, target, tensors, args, kwargs, attrs, dtypes)
    check_kernel_shapes(target, args)
    import torch

    try:
        with captured_output(f"torch {target}"), budget or nullcontext(), torch.no_grad():
            out = op(*args, **kwargs)
    except BudgetError:
        raise
    except Exception as e:  # the op's own error, with the op named
        head = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OpaqueOpError(f"torch {target} failed: {type(e).__name__}: {head}") from e
    return _from_torch(out, target)


# ----- onnxruntime ------------------------------------------------------------------------------

_SESSIONS: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def _onnx_model(attrs: Mapping[str, Any], in_dtypes: tuple):
    import onnx
    from onnx import helper

    domain, op_type = attrs["target"].split("::")
    node_domain = "" if domain == ONNX_DEFAULT_DOMAIN else domain
    inputs = []
    for a in attrs["args"]:
        inputs.append("" if a is None else f"in{unescape(a)}")
    ty = result_type(attrs["type"])
    fields = list(ty.fields) if isinstance(ty, TupleType) else [ty]
    positions = list(attrs["outputs"]) if attrs.get("outputs") else list(range(len(fields)))
    if len(positions) != len(fields) or len(set(positions)) != len(positions):
        raise OpaqueOpError(f"outputs={positions} does not match the type {ty}")
    outputs = [""] * (max(positions) + 1)
    for k, p in enumerate(positions):
        outputs[p] = f"out{k}"
    node = helper.make_node(op_type, inputs, outputs, domain=node_domain)
    for name, value in attrs["kwargs"]:
        node.attribute.append(onnx_attribute(name, value, op_type, node_domain, attrs["opset"]))
    graph_inputs = [
        helper.make_tensor_value_info(f"in{i}", helper.np_dtype_to_tensor_dtype(dt), None)
        for i, dt in enumerate(in_dtypes)
    ]
    graph_outputs = []
    for k, f in enumerate(fields):
        assert isinstance(f, TensorType)
        elem = helper.np_dtype_to_tensor_dtype(np.dtype(f.dtype.numpy))
        graph_outputs.append(helper.make_tensor_value_info(f"out{k}", elem, None))
    graph = helper.make_graph([node], "opaque", graph_inputs, graph_outputs)
    opsets = [helper.make_opsetid(node_domain, attrs["opset"])]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="passlens")
    model.ir_version = min(onnx.IR_VERSION, 10)
    return model


def onnx_attribute(name: str, value: Any, op_type: str, domain: str, opset: int):
    """The ONNX AttributeProto of an opaque op's attribute `name` (an empty list typed from
    the op's schema); OpaqueOpError when the value cannot be one."""
    from onnx import AttributeProto, helper

    if isinstance(value, tuple) and not value:  # an empty list: its type from the schema
        kind = AttributeProto.INTS
        try:
            import onnx

            schema = onnx.defs.get_schema(op_type, opset, domain)
            kind = schema.attributes[name].type
        except Exception:  # unknown schema or attribute: ints, the usual empty list
            pass
        return helper.make_attribute(name, [], attr_type=kind)
    if isinstance(value, str):
        value = unescape(value)
        if isinstance(value, int):
            raise OpaqueOpError(f"attribute {name} of {op_type} refers to an input")
    try:
        return helper.make_attribute(name, list(value) if isinstance(value, tuple) else value)
    except Exception as e:
        raise OpaqueOpError(f"attribute {name}={value!r} of {op_type}: {e}") from None


def _session(attrs: Mapping[str, Any], in_dtypes: tuple):
    key = (
        attrs["target"],
        attrs["opset"],
        attrs["args"],
        attrs["kwargs"],
        attrs.get("outputs"),
        attrs["type"],
        in_dtypes,
    )
    with _LOCK:
        sess = _SESSIONS.get(key)
        if sess is not None:
            _SESSIONS.move_to_end(key)
            return sess
    try:
        import onnxruntime as ort
    except ImportError:
        raise OpaqueOpError(
            f"opaque op {attrs['target']} is run by onnxruntime, which is not installed here"
        ) from None
    model = _onnx_model(attrs, in_dtypes)
    options = ort.SessionOptions()
    options.log_severity_level = 4  # its errors come back as exceptions; nothing printed
    try:
        sess = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as e:
        head = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OpaqueOpError(
            f"onnxruntime cannot run {attrs['target']} (opset {attrs['opset']}): {head}"
        ) from None
    with _LOCK:
        _SESSIONS[key] = sess
        while len(_SESSIONS) > MAX_SESSIONS:
            _SESSIONS.popitem(last=False)
    return sess


MAX_SIZE_INPUT = MAX_VALUE_INPUT
"""An input of at most this many numeric elements is given to ONNX shape inference as a value
(a shape, repeats, pads, Range's bounds, Resize's scales), and a tensor passed to a torch op
where it takes numbers is given to its fake run as those numbers, so the size of what the op
makes from it is known before it runs."""


def _check_onnx_sizes(attrs: Mapping[str, Any], arrays: list):
    """ONNX shape inference on the one-node model with the actual input shapes (and small
    numeric inputs as values): refuse the op when its results would be over the interpreter's
    limit for one value (`ConstantOfShape` of a huge shape from an untrusted file) or of
    more than MAX_RANK dims. Results shape inference cannot size are bounded from the inputs
    (`sizes.ONNX_BOUNDS`: NonZero, Unique, Compress, com.microsoft::Range); what has
    no bound either runs under a memory budget: this returns that budget (a context manager)
    for the call, else None."""
    target = attrs["target"]
    small = [value_input(a) for a in arrays]
    key = (
        "onnx",
        target,
        attrs["opset"],
        attrs["args"],
        attrs["kwargs"],
        attrs.get("outputs"),
        tuple(
            (a.shape, a.dtype, a.tobytes() if k else b"")
            for a, k in zip(arrays, small, strict=True)
        ),
    )
    if _sized_before(key):
        return None
    if target.endswith("::ConstantOfShape") and arrays and arrays[0].size > MAX_RANK:
        raise OpaqueOpError(
            f"onnxruntime {target} would give a result of {arrays[0].size:,} dims, more than "
            f"{MAX_RANK} (compiler.opaque.sizes.MAX_RANK); it was not run"
        )
    import onnx
    from onnx import helper, numpy_helper

    def unsized():
        bound = onnx_bound(target, arrays, attrs)
        if bound is None:
            return memory_budget(f"onnxruntime {target}", MAX_RESULT_BYTES)
        _refuse_over_bound(f"onnxruntime {target}", bound)
        return None

    model = _onnx_model(attrs, tuple(a.dtype for a in arrays))
    graph = model.graph
    inputs = []
    for i, (a, k) in enumerate(zip(arrays, small, strict=True)):
        name = f"in{i}"
        if k:
            graph.initializer.append(numpy_helper.from_array(a, name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(a.dtype)
            inputs.append(helper.make_tensor_value_info(name, elem, list(a.shape)))
    del graph.input[:]
    graph.input.extend(inputs)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    except Exception:  # shape inference cannot read it: a bound, else the budget
        return unsized()
    total = 0
    for out in inferred.graph.output:
        t = out.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if not t.HasField("shape") or any(d is None for d in dims):
            return unsized()  # a size only the values give
        if len(dims) > MAX_RANK:
            raise OpaqueOpError(
                f"onnxruntime {target} would give a result of {len(dims):,} dims for these "
                f"inputs, more than {MAX_RANK} (compiler.opaque.sizes.MAX_RANK); "
                "it was not run"
            )
        n = int(np.prod(dims, dtype=object)) if dims else 1
        total += n * helper.tensor_dtype_to_np_dtype(t.elem_type).itemsize
    if total > MAX_RESULT_BYTES:
        raise OpaqueOpError(
            f"onnxruntime {target} would give {total:,} bytes for these inputs, over "
            f"the interpreter's limit of {MAX_RESULT_BYTES >> 30} GiB for one value "
            "(compiler.opaque.run.MAX_RESULT_BYTES); it was not run"
        )
    _remember_sized(key)
    return None


def run_onnx(values: list, attrs: Mapping[str, Any]) -> Any:
    """Run the ONNX op in onnxruntime (a cached one-node model) on `values`."""
    from compiler.opaque.allow import check_allowed

    check_allowed("onnx", attrs["target"])
    arrays = [np.ascontiguousarray(v).reshape(np.shape(v)) for v in values]  # 0-d stays 0-d
    budget = _check_onnx_sizes(attrs, arrays)
    with captured_output(f"onnxruntime {attrs['target']}"):
        sess = _session(attrs, tuple(a.dtype for a in arrays))
        feed = {f"in{i}": a for i, a in enumerate(arrays)}
        try:
            with budget or nullcontext():
                outs = sess.run(None, feed)
        except BudgetError:
            raise
        except Exception as e:
            head = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise OpaqueOpError(f"onnxruntime {attrs['target']} failed: {head}") from None
    ty = result_type(attrs["type"])
    outs = [np.asarray(o) for o in outs]
    return tuple(outs) if isinstance(ty, TupleType) else outs[0]


__all__ = [
    "MAX_SESSIONS",
    "onnx_attribute",
    "resolve_torch_op",
    "run",
    "run_onnx",
    "run_torch",
]
