"""Recording the stages of an ONNX Runtime pipeline (explorer/onnxruntime/pipeline.py) as
snapshots of `explorer.onnxruntime.module.ONNXModule` s.

* **onnxscript**: `onnxscript.optimizer.optimize_ir` runs with `onnx_ir.passes.PassBase`'s
  `__call__` wrapped, so every pass application is seen with its result; a `RewritePass` of
  several rules applies them one at a time (each a step named after its rule). Only
  applications that changed the model become steps. Because rules one at a time may act in
  another order than the rule set does, the stage's end is compared with `optimize_ir` run
  in one go on a copy: the trace says when they differ.
* **transformers:<type>**: onnxruntime's transformers optimizer (`optimize_model` with ORT
  off) with every `fuse_*` method of the model type's class wrapped: a step per fusion
  that changed the model.
* **ort:<level>**: ONNX Runtime's transformers rebuilt one application at a time
  (explorer/onnxruntime/ort_steps.py).
* **user rules** (`rewrite_rules=[...]`): each onnxscript `RewriteRule` applied as its own
  step after the optimizer, named after `rule.name`.

Each stage is one outer snapshot (depth 0) with its steps inside it (depth 1). An onnxscript
pass or rule step and a fusion step also keep a `Replay`: what made the step, callable
on another model (the reducer runs it on cuts of the model the step was given).
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compiler import PasslensError
from compiler.passes import Snapshot
from explorer.onnxruntime.module import ONNXModule, ONNXState
from explorer.onnxruntime.pipeline import Stage


@dataclass(frozen=True)
class Replay:
    """What made one step, runnable again alone: `kind` is `rule` (an onnxscript rewrite
    rule), `pass` (an onnxscript pass) or `fusion` (a transformers-optimizer fusion);
    `run(model)` applies it to an `onnx.ModelProto` (left as it is) and returns the result."""

    kind: str
    run: Callable[[Any], Any]

    def __call__(self, model: Any) -> Any:
        return self.run(model)


class Recorder:
    """The snapshots of one run, stage by stage; `replays` by snapshot index."""

    def __init__(self, state: ONNXState, job: Any = None):
        self.state = state
        self.job = job
        self.snapshots: list[Snapshot] = []
        self.replays: dict[int, Replay] = {}
        self.rules: dict[int, Any] = {}  # snapshot index -> the user's rule that made it
        self.notes: list[str] = []
        self.stage: int | None = None
        self.current: ONNXModule | None = None

    # ----- stages and steps -----------------------------------------------------------------
    def open_stage(self, name: str, before: ONNXModule) -> None:
        snap = Snapshot(len(self.snapshots), name, name, {}, 0, None, before)
        self.snapshots.append(snap)
        self.stage = snap.index
        self.current = before
        self._start = time.perf_counter()

    def close_stage(self, error: BaseException | None = None) -> ONNXModule:
        snap = self.snapshots[self.stage]
        snap.seconds = time.perf_counter() - self._start
        if error is not None:
            snap.error = error
            snap.traceback = "".join(traceback.format_exception(error))
        else:
            snap.module = self.current
        self.stage = None
        return self.current

    def step(
        self,
        name: str,
        model: Any,
        seconds: float = 0.0,
        options: dict | None = None,
        replay: Replay | None = None,
        owned: bool = False,
        known: dict[str, str] | None = None,
    ):
        """A step of the open stage from `model` (a ModelProto; `owned`: the recorder's to
        change, nobody else holds it): recorded only when it differs from the model before
        it, with its rewrites (what it removed and added, grouped:
        `explorer.onnxruntime.rewrites`) and the exporter's metadata given back to the
        nodes that lost it; `replay`: what made it. `known`: the content keys of
        initializers the caller knows (by name; their data is not read). Returns whether it
        was recorded."""
        from explorer.onnxruntime.convert import entries
        from explorer.onnxruntime.module import skeleton_of
        from explorer.onnxruntime.rewrites import changes, inherit_provenance, step_rewrites

        before = self.current
        proto, keys = skeleton_of(model, self.state, before, copy=not owned, known=known)
        after = entries(proto, keys)
        groups: list = []
        if before is not None and before.live:
            groups = changes(before.entries(), after)
            inherit_provenance(before.entries(), after, groups)
        skeleton = proto.SerializeToString(deterministic=True)
        module = self.state.module_of(skeleton, keys, before, after)
        if self.job is not None:
            self.job.advance(name)
        if module is before:
            return False
        parent = self.snapshots[self.stage]
        snap = Snapshot(
            len(self.snapshots),
            name,
            name,
            dict(options or {}),
            1,
            parent.index,
            before,
            module,
            seconds,
            rewrites=step_rewrites(name, groups),
        )
        parent.children.append(snap.index)
        self.snapshots.append(snap)
        if replay is not None:
            self.replays[snap.index] = replay
        self.current = module
        return True


def rule_replay(rule: Any) -> Replay:
    """One onnxscript rewrite rule applied to a model, as the recorder applies it."""

    def run(proto: Any) -> Any:
        import onnx_ir as ir
        from onnxscript.rewriter import pattern

        model = ir.serde.deserialize_model(_copy(proto))
        pattern.RewriteRuleSet([rule]).apply_to_model(model)
        return ir.serde.serialize_model(model)

    return Replay("rule", run)


def pass_replay(instance: Any, call: Callable) -> Replay:
    """One onnxscript pass (the instance that ran) applied to a model; `call` is
    `PassBase.__call__` itself (never the recorder's wrapper)."""

    def run(proto: Any) -> Any:
        import onnx_ir as ir

        model = ir.serde.deserialize_model(_copy(proto))
        return ir.serde.serialize_model(call(instance, model).model)

    return Replay("pass", run)


def fusion_replay(cls: type, method: Callable, args: tuple, kwargs: dict, options: dict) -> Replay:
    """One fusion of the transformers optimizer applied to a model: a new optimizer object of
    the model type's class on it, the fusion method called with the arguments it had."""

    def run(proto: Any) -> Any:
        heads, hidden = int(options.get("num_heads", 0)), int(options.get("hidden_size", 0))
        optimizer = cls(_copy(proto), heads, hidden)
        method(optimizer, *args, **kwargs)
        return optimizer.model

    return Replay("fusion", run)


def _copy(proto: Any) -> Any:
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(proto)
    return m


# ===== onnxscript ===============================================================================

_COMPOSITE = ("PassManager", "Sequential")


@contextlib.contextmanager
def _recording_passes(rec: Recorder):
    """`onnx_ir.passes.PassBase.__call__` wrapped for the block (restored after)."""
    import onnx_ir as ir
    import onnx_ir.passes as passes
    from onnxscript import rewriter
    from onnxscript.rewriter import pattern

    original = passes.PassBase.__call__
    depth = [0]

    def call(self, model):
        kind = type(self).__name__
        if kind in _COMPOSITE or depth[0]:
            depth[0] += kind not in _COMPOSITE
            try:
                return original(self, model)
            finally:
                depth[0] -= kind not in _COMPOSITE
        if isinstance(self, rewriter.RewritePass) and len(self.rules.rules) > 1:
            modified = False
            for rule in self.rules.rules:
                start = time.perf_counter()
                count = pattern.RewriteRuleSet([rule]).apply_to_model(model)
                if count:
                    modified = True
                    name = rule_name(rule)
                    rec.step(
                        name,
                        ir.serde.serialize_model(model),
                        time.perf_counter() - start,
                        {"matches": int(count)},
                        rule_replay(rule),
                        owned=True,
                    )
            return passes.PassResult(model, modified)
        start = time.perf_counter()
        depth[0] += 1
        try:
            result = original(self, model)
        finally:
            depth[0] -= 1
        if result.modified:
            rec.step(
                kind,
                ir.serde.serialize_model(result.model),
                time.perf_counter() - start,
                replay=pass_replay(self, original),
                owned=True,
            )
        return result

    passes.PassBase.__call__ = call
    try:
        yield
    finally:
        passes.PassBase.__call__ = original


def rule_name(rule: Any, default: str = "") -> str:
    """A rewrite rule's name: its `name`, else the name its module (or the namespace its
    functions were defined in: a notebook's, an `exec`'s) binds it to (onnxscript's own
    rules have none: `mul_by_1_rule`); with a `default` (a user's rule), else its
    replacement function's name (`gelu_to_relu`); else `default` or its type's."""
    import sys

    name = getattr(rule, "name", None)
    if name:
        return str(name)[:200]
    replacement = getattr(getattr(rule, "_replacement_pattern", None), "_function", None)
    for fn in (replacement, getattr(rule, "_condition_function", None)):
        module = sys.modules.get(getattr(fn, "__module__", "") or "")
        spaces = [vars(module) if module is not None else {}]
        spaces.append(getattr(getattr(fn, "__func__", fn), "__globals__", None) or {})
        for space in spaces:
            for key, value in list(space.items()):
                if value is rule and not key.startswith("_"):
                    return key[:200]
    own = getattr(replacement, "__name__", "")
    if default and own and own not in ("<lambda>", "rewrite"):
        return own[:200]
    return default or type(rule).__name__


def rule_class(rule: Any) -> type | None:
    """The `RewriteRuleClassBase` subclass a rule was made from (`MyRule.rule()`), or
    None."""
    replacement = getattr(getattr(rule, "_replacement_pattern", None), "_function", None)
    owner = getattr(replacement, "__self__", None)
    return type(owner) if owner is not None else None


def run_onnxscript(rec: Recorder, proto: Any) -> Any:
    """The onnxscript optimizer's passes and rules on `proto`; the ModelProto at the end."""
    import onnx_ir as ir
    from onnxscript.optimizer import optimize_ir

    model = ir.serde.deserialize_model(proto)
    with _recording_passes(rec):
        optimize_ir(model)
    result = ir.serde.serialize_model(model)
    # the same optimizer in one go, on a copy: are rules one at a time what it does?
    again = ir.serde.deserialize_model(proto)
    optimize_ir(again)
    from explorer.onnxruntime.module import split_weights

    near = rec.current  # most weights are its own: not read again
    if split_weights(ir.serde.serialize_model(again), rec.state, near) != split_weights(
        result, rec.state, near
    ):
        rec.notes.append(
            "WARNING: onnxscript's optimizer in one go gives another model than its passes "
            "and rules recorded one at a time (the rules acted in another order); the steps "
            "show the rules one at a time"
        )
    return result


def run_rules(rec: Recorder, proto: Any, rules: list) -> Any:
    """Each user rule applied as its own step (named after `rule.name`)."""
    import onnx_ir as ir
    from onnxscript.rewriter import pattern

    model = ir.serde.deserialize_model(proto)
    for k, rule in enumerate(rules):
        name = rule_name(rule, f"rule{k}")
        start = time.perf_counter()
        limit = RULE_APPLICATIONS_PER_NODE * _node_count(proto) + 100
        count = pattern.RewriteRuleSet([capped(rule, name, limit)]).apply_to_model(model)
        if not count:
            rec.notes.append(f"rewrite rule {name[:80]!r} matched nothing")
            if rec.job is not None:
                rec.job.advance(name)
            continue
        if rec.step(
            name,
            ir.serde.serialize_model(model),
            time.perf_counter() - start,
            {"matches": int(count), "user_rule": True},
            rule_replay(rule),
            owned=True,
        ):
            rec.rules[rec.snapshots[-1].index] = rule
    return ir.serde.serialize_model(model)


#: how many times one user rule may apply per node of the model it is given: onnxscript visits
#: the nodes a rewrite inserts, so a rule that matches what it produces (Add(a, b) -> Add(b, a))
#: would rewrite forever
RULE_APPLICATIONS_PER_NODE = 10


class RuleLoopError(PasslensError, RuntimeError):
    """A user's rewrite rule kept matching what it produced (onnxscript would never stop)."""


def capped(rule: Any, name: str, limit: int) -> Any:
    """A copy of `rule` that raises `RuleLoopError` past `limit` rewrites (the
    user's rule object is not changed)."""
    import copy

    original = rule.try_rewrite
    done = [0]

    def try_rewrite(*args: Any, **kwargs: Any) -> Any:
        delta = original(*args, **kwargs)
        if delta is not None:
            done[0] += 1
            if done[0] > limit:
                raise RuleLoopError(
                    f"rewrite rule {name[:80]!r} applied {limit} times and still matches: it "
                    "matches what it produces (onnxscript visits the nodes a rewrite adds, so "
                    "it would never stop); make its replacement something its pattern does not "
                    "match"
                )
        return delta

    out = copy.copy(rule)
    out.try_rewrite = try_rewrite
    return out


def _node_count(proto: Any) -> int:
    graphs, n = [proto.graph], 0
    while graphs:
        g = graphs.pop()
        n += len(g.node)
        graphs.extend(a.g for node in g.node for a in node.attribute if a.HasField("g"))
    return n + sum(len(f.node) for f in proto.functions)


def check_rules(rules: Any) -> list:
    """The user's rules as a list of onnxscript `RewriteRule` s (a clear error otherwise)."""
    if rules is None:
        return []
    from onnxscript.rewriter import pattern

    if isinstance(rules, pattern.RewriteRuleSet):
        rules = list(rules.rules)
    if isinstance(rules, pattern.RewriteRule):
        rules = [rules]
    rules = list(rules)
    bad = [type(r).__name__ for r in rules if not isinstance(r, pattern.RewriteRule)]
    if bad:
        raise TypeError(
            "rewrite_rules holds onnxscript RewriteRule objects "
            f"(onnxscript.rewriter.pattern.RewriteRule), not {', '.join(bad)}"
        )
    return rules


# ===== the transformers optimizer ===============================================================


def run_transformers(rec: Recorder, proto: Any, model_type: str, **options: Any) -> Any:
    """onnxruntime's transformers optimizer (ORT off) with every `fuse_*` method of the
    model type's class wrapped: a step per fusion that changed the model."""
    from onnxruntime.transformers import optimizer

    cls = optimizer.MODEL_TYPES[model_type][0]
    names = sorted({n for k in cls.__mro__ for n in vars(k) if n.startswith("fuse_")})
    saved = {n: cls.__dict__.get(n) for n in names}
    depth = [0]

    def wrap(name, fn):
        def fuse(self, *args, **kwargs):
            depth[0] += 1
            start = time.perf_counter()
            try:
                return fn(self, *args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    replay = fusion_replay(type(self), fn, args, kwargs, options)
                    rec.step(name, self.model, time.perf_counter() - start, replay=replay)

        fuse.__name__ = name
        return fuse

    for n in names:
        setattr(cls, n, wrap(n, getattr(cls, n)))
    try:
        result = optimizer.optimize_model(
            proto,
            model_type,
            num_heads=int(options.get("num_heads", 0)),
            hidden_size=int(options.get("hidden_size", 0)),
            opt_level=0,
            use_gpu=False,
        )
    finally:
        for n, fn in saved.items():
            if fn is None:
                delattr(cls, n)
            else:
                setattr(cls, n, fn)
    return result.model


# ===== ORT ======================================================================================


def run_ort(
    rec: Recorder, proto: Any, level: str, isolated: bool = False, from_bytes: bool = False
) -> tuple[Any, Any]:
    """ONNX Runtime's transformers at `level`: the steps; `(None, ORTRun)` (ORT is the
    last stage: no stage reads the model after it; the last step's module holds it). A
    weight a step or the one-go model kept from the stage's input takes that weight's key
    (never read again); the one-go model is compared with the last step, weights by content.
    `isolated`: rebuilt in a child process under a memory limit (a model from a file);
    `from_bytes`: the one-go session from the model's bytes as a user's session
    (`explorer.onnxruntime.ort_steps.run_ort_stage`)."""
    import onnx

    from explorer.onnxruntime.module import skeleton_of
    from explorer.onnxruntime.ort_steps import run_ort_stage

    start = rec.current
    if start is None or not start.live:
        start = rec.state.wrap(proto)

    def record(run: Any, s: Any) -> None:  # while ORT makes the sessions of later steps
        m = onnx.ModelProto()
        m.ParseFromString(s.model)
        known = _kept_weights(run, m, start)
        options = {"log_position": s.position}
        rec.step(s.name, m, s.seconds, options, owned=True, known=known)

    run = run_ort_stage(proto, level, None, isolated, from_bytes, on_step=record)
    end = run.steps[-1].model if run.steps else run.base
    if end == run.one_go:  # what ORT wrote, byte for byte (kept weights: the same references)
        run.equal = True
    else:  # by content: the skeletons without node metadata, the weights by key
        one_go = onnx.ModelProto()
        one_go.ParseFromString(run.one_go)
        last = rec.current
        known = _kept_weights(run, one_go, start)
        skeleton, keys = skeleton_of(one_go, rec.state, last, copy=False, known=known)
        if run.steps:
            last_skeleton, last_keys = last.proto(False), last.weight_keys
        else:  # no transformer changed the model: ORT's own save of it with every one off
            base = onnx.ModelProto()
            base.ParseFromString(run.base)
            known = _kept_weights(run, base, start)
            last_skeleton, last_keys = skeleton_of(base, rec.state, last, copy=False, known=known)
        run.equal = _canonical(skeleton, keys) == _canonical(last_skeleton, last_keys)
    if run.equal:
        rec.notes.append(
            f"the last ORT step equals the model ORT makes at level {level!r} in one go"
        )
    else:
        rec.notes.append(
            f"WARNING: the last rebuilt ORT step differs from the model ORT makes at level "
            f"{level!r} in one go (a transformer acted differently once later ones were off): "
            "the steps are rebuilt, the one-go model is what ORT runs"
        )
    return None, run


def _kept_weights(run: Any, model: Any, start: ONNXModule) -> dict[str, str]:
    """The content keys of the initializers of a model ORT wrote that refer to a weight of the
    stage's input (`start`), by initializer name."""
    from explorer.onnxruntime.ort_steps import source_weight

    known = {}
    for t in model.graph.initializer:
        name = source_weight(run, t)
        if name is not None:
            known[t.name] = start.weight_keys[name]
    return known


def _canonical(skeleton: Any, keys: dict[str, str]) -> bytes:
    """A skeleton as two equal models give it: node metadata (which the recorder gives back to
    ORT's nodes) left out, initializers in name order, with their content keys."""
    import onnx

    m = onnx.ModelProto()
    m.CopyFrom(skeleton)
    for node in m.graph.node:
        del node.metadata_props[:]
    inits = sorted(m.graph.initializer, key=lambda t: t.name)
    kept = [onnx.TensorProto() for _ in inits]
    for k, t in zip(kept, inits, strict=True):
        k.CopyFrom(t)
    del m.graph.initializer[:]
    m.graph.initializer.extend(kept)
    order = "\0".join(f"{n}={keys.get(n)}" for n in sorted(keys))
    return m.SerializeToString(deterministic=True) + b"\0" + order.encode()


def run_stage(rec: Recorder, stage: Stage, proto: Any, rules: list, options: dict):
    """Run one stage on `proto`; returns `(the ModelProto at its end, the ORTRun or None)`."""
    if stage.kind == "onnxscript":
        return run_onnxscript(rec, proto), None
    if stage.kind == "transformers":
        return run_transformers(rec, proto, stage.arg, **options), None
    if stage.kind == "rules":
        return run_rules(rec, proto, rules), None
    return run_ort(
        rec, proto, stage.arg, bool(options.get("isolated")), bool(options.get("from_bytes"))
    )


__all__ = [
    "Recorder",
    "Replay",
    "RuleLoopError",
    "capped",
    "check_rules",
    "fusion_replay",
    "pass_replay",
    "rule_class",
    "rule_name",
    "rule_replay",
    "run_onnxscript",
    "run_rules",
    "run_stage",
]
