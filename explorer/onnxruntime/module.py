"""What an ONNX Runtime step holds: `ONNXModule` (one ONNX model as a stage left it, its
weights kept once for the whole trace) and `ONNXState` (what the modules of one trace
share: the weights by content, the stand-ins that give nodes an identity across steps).

A model is kept as its *skeleton* (the serialized `ModelProto` whose initializers hold no
data) and the content keys of its initializers: twenty steps of a BERT keep its weights once,
and a weight a fusion rewrote (ORT's MatMulScaleFusion scales one) is kept beside the original.
`model()` makes the full `onnx.ModelProto` when the check or an export asks; the graph
model and the text are made when a view asks. Nothing here imports onnxruntime.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from compiler.ir import Constant, Provenance
from explorer.graph import GraphModel

NO_PROVENANCE = Provenance()
_LOCATION = "passlens-weight"  # the external-data key naming a weight's content in a skeleton


class ONNXRef:
    """The stand-in of one ONNX node or value in graph models: a node with the same name, op,
    inputs, outputs and attributes in two steps has the same stand-in, so diffs match it by
    identity. `prov` is where it came from (the torch module, file:line, the FX node)."""

    __slots__ = ("name", "prov", "__weakref__")

    def __init__(self, name: str, prov: Provenance = NO_PROVENANCE):
        self.name = name
        self.prov = prov

    def __repr__(self) -> str:
        return f"<ONNXRef {self.name[:60]}>"


def content_key(arr: np.ndarray) -> str:
    """A weight's content as a key: dtype, shape and a digest of its bytes."""
    data = np.ascontiguousarray(arr)
    digest = hashlib.blake2b(data.view(np.uint8).reshape(-1), digest_size=16).hexdigest()
    return f"{data.dtype.str}|{'x'.join(str(d) for d in data.shape)}|{digest}"


class ONNXState:
    """What the modules of one ONNX Runtime trace share: the weights by content key (each kept
    once, read-only), one `ONNXRef` per node key and per weight, and the skeletons seen
    (a stage that left the model as it was shares the module before it)."""

    def __init__(self) -> None:
        self.weights: dict[str, np.ndarray] = {}
        self.constants: dict[str, Constant] = {}
        self.refs: dict[tuple, ONNXRef] = {}
        self.modules: dict[bytes, ONNXModule] = {}

    def weight(self, arr: np.ndarray) -> str:
        """Keep `arr` (once per content) and return its key."""
        key = content_key(arr)
        if key not in self.weights:
            kept = np.array(arr, copy=True)
            kept.flags.writeable = False
            self.weights[key] = kept
        return key

    def constant(self, key: str, prov: Provenance = NO_PROVENANCE) -> Constant:
        """The passlens Constant of a weight (one per content, so an untouched weight is the
        same object in every step)."""
        found = self.constants.get(key)
        if found is None:
            found = self.constants[key] = Constant(self.weights[key], prov=prov)
        return found

    def ref(self, key: tuple, name: str, prov: Provenance = NO_PROVENANCE) -> ONNXRef:
        found = self.refs.get(key)
        if found is None:
            found = self.refs[key] = ONNXRef(name, prov)
        return found

    def wrap(self, model: Any, before: ONNXModule | None = None) -> ONNXModule:
        """The module of `model` (an `onnx.ModelProto`): `before` itself, or the module
        of an equal model seen earlier, when `model` is that model again."""
        skeleton, weights = split_weights(model, self, before)
        return self.module_of(skeleton, weights, before)

    def module_of(
        self,
        skeleton: bytes,
        weights: dict[str, str],
        before: ONNXModule | None = None,
        entries: list | None = None,
    ) -> ONNXModule:
        """The module of a skeleton and its weights' keys (as `wrap`); `entries`: its
        nodes, when the caller has read them already."""
        if before is not None and before.skeleton == skeleton and before.weight_keys == weights:
            return before
        key = skeleton + b"\0" + "\0".join(f"{k}={v}" for k, v in weights.items()).encode()
        found = self.modules.get(key)
        if found is None:
            found = self.modules[key] = ONNXModule(skeleton, weights, self)
            found._entries = entries
        return found


def skeleton_of(
    model: Any,
    state: ONNXState,
    before: ONNXModule | None = None,
    copy: bool = True,
    known: dict[str, str] | None = None,
) -> tuple[Any, dict[str, str]]:
    """`(skeleton ModelProto, {initializer name: content key})` of an `onnx.ModelProto`:
    the model (a copy; itself with `copy=False`) with every initializer's data replaced by
    its content key (the data kept in `state`). An initializer whose bytes are those of the
    weight of its name in `before` takes that weight's key without being read again (a
    step keeps most of the weights of the step before it); one `known` names (a content
    key in `state`, by initializer name: a weight ORT wrote as a reference to one it was
    given) is not read at all, its dims and dtype checked against the key's."""
    import onnx
    from onnx import numpy_helper

    if copy:
        skeleton = onnx.ModelProto()
        skeleton.CopyFrom(model)
    else:
        skeleton = model
    earlier = before.weight_keys if before is not None and before.live else {}
    keys: dict[str, str] = {}
    known = known or {}
    for t in skeleton.graph.initializer:
        key = known.get(t.name)
        if key is not None:
            kept = state.weights[key]
            if tuple(int(d) for d in t.dims) != kept.shape or _np_dtype(t) != kept.dtype:
                raise ValueError(
                    f"weight {t.name[:80]!r} is {list(t.dims)} of ONNX type {t.data_type}, "
                    f"not the {kept.dtype}{list(kept.shape)} it refers to"
                )
        else:
            key = _same_weight(t, earlier.get(t.name), state)
        if key is None:
            key = state.weight(numpy_helper.to_array(t))
        keys[t.name] = key
        stub = onnx.TensorProto(name=t.name, data_type=t.data_type, dims=list(t.dims))
        stub.data_location = onnx.TensorProto.EXTERNAL
        stub.external_data.add(key=_LOCATION, value=key)
        t.CopyFrom(stub)
    return skeleton, keys


def _np_dtype(t: Any) -> np.dtype | None:
    """The numpy dtype of a TensorProto's ONNX type (None for one numpy has no name for)."""
    import onnx

    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type))
    except Exception:  # an ONNX type numpy cannot hold
        return None


def _same_weight(t: Any, key: str | None, state: ONNXState) -> str | None:
    """`key` when the TensorProto `t` holds exactly the bytes of that kept weight (its
    raw data, dtype and dims), else None."""
    if key is None or not t.HasField("raw_data") or t.data_location == 1:
        return None
    kept = state.weights.get(key)
    if kept is None or tuple(int(d) for d in t.dims) != kept.shape:
        return None
    if _np_dtype(t) != kept.dtype:
        return None
    raw = t.raw_data
    if len(raw) != kept.nbytes:
        return None
    # bit for bit (0.0 and -0.0 differ), in words of the element's size (faster than bytes)
    word = {8: np.uint64, 4: np.uint32, 2: np.uint16}.get(kept.itemsize, np.uint8)
    flat = np.ascontiguousarray(kept).reshape(-1).view(np.uint8).view(word)
    same = np.array_equal(np.frombuffer(raw, dtype=word), flat)
    return key if same else None


def split_weights(
    model: Any, state: ONNXState, before: ONNXModule | None = None
) -> tuple[bytes, dict[str, str]]:
    """`(skeleton, {initializer name: content key})` of an `onnx.ModelProto`: the model
    serialized with every initializer's data replaced by its content key (kept in `state`)."""
    skeleton, keys = skeleton_of(model, state, before)
    return skeleton.SerializeToString(deterministic=True), keys


class ONNXModule:
    """One ONNX model of an ONNX Runtime trace (see the module docstring).

    `skeleton` is the serialized model without weight data, `weight_keys` its
    initializers' content keys in `state`. A module read from a file has neither: it keeps
    the graph model and the text it was saved with (`graph`, `text`)."""

    compiler = "onnxruntime"
    inner = False
    backend_stage = None

    def __init__(
        self,
        skeleton: bytes | None = None,
        weight_keys: dict[str, str] | None = None,
        state: ONNXState | None = None,
        *,
        graph: GraphModel | None = None,
        text: str | None = None,
        texts: dict[str, str] | None = None,
    ):
        self.skeleton = skeleton
        self.weight_keys = dict(weight_keys or {})
        self.state = state
        self._graph = graph
        self._text = text
        self._texts = texts
        self._entries: list | None = None
        self.value_types: dict | None = None  # every value's type, once the graph is made
        if skeleton is None and (graph is None or text is None):
            raise TypeError("an ONNXModule without a model needs its graph and text")

    @property
    def live(self) -> bool:
        """Whether the model itself is kept (False in a loaded trace: graph and text only)."""
        return self.skeleton is not None and self.state is not None

    def proto(self, with_weights: bool = True) -> Any:
        """The `onnx.ModelProto` (a new object each call); without weights: the skeleton."""
        import onnx
        from onnx import numpy_helper

        if not self.live:
            raise ValueError("this ONNX step was loaded from a file: it keeps no model")
        model = onnx.ModelProto()
        model.ParseFromString(self.skeleton)
        if with_weights:
            for t in model.graph.initializer:
                key = self.weight_keys.get(t.name)
                if key is not None:
                    t.CopyFrom(numpy_helper.from_array(self.state.weights[key], t.name))
        return model

    def weights(self) -> dict[str, np.ndarray]:
        """The initializers by name (the trace's shared, read-only arrays)."""
        if not self.live:
            return {}
        return {n: self.state.weights[k] for n, k in self.weight_keys.items()}

    @property
    def node_count(self) -> int:
        """The model's op nodes (read from the model: no types inferred)."""
        if not self.live:
            return sum(1 for n in self.graph_model().nodes.values() if n.kind == "op")
        return sum(1 for e in self.entries() if e.kind == "op")

    def entries(self) -> list:
        """The nodes of the model with their graph-model ids
        (`explorer.onnxruntime.convert.entries`), made once."""
        if self._entries is None:
            from explorer.onnxruntime.convert import entries

            self._entries = entries(self.proto(with_weights=False), self.weight_keys)
        return self._entries

    # ----- views ----------------------------------------------------------------------------
    def graph_model(self) -> GraphModel:
        if self._graph is None:
            from explorer.onnxruntime.convert import graph_of_onnx

            self._graph = graph_of_onnx(self.proto(with_weights=False), self)
        return self._graph

    def text(self) -> str:
        if self._text is None:
            from explorer.onnxruntime.convert import text_of_onnx

            self.graph_model()  # the values' types, which the text gives each node
            self._text = text_of_onnx(self.proto(with_weights=False), self)
        return self._text

    def texts(self) -> dict[str, str]:
        return dict(self._texts or {})

    def __repr__(self) -> str:
        where = "live" if self.live else "loaded"
        return f"<ONNXModule {where} {self.node_count} nodes>"


__all__ = [
    "ONNXModule",
    "ONNXRef",
    "ONNXState",
    "content_key",
    "skeleton_of",
    "split_weights",
]
