"""Models at scale for the graph-view benchmarks and tests: traces of 5,000 to 10,000 nodes,
built in the IR directly (random weights, no downloads, no torch.export).

    .venv/bin/python bench/scale_models.py [--quick] [--torch] [--diff]

Three traces, each ``explorer.explore(module, pipeline=PIPELINE)``: steps ``#0 module``
(the import), ``#1 infer-types`` (unchanged) and ``#2 fold-constant``, which folds one
constant subexpression deep inside the graph. **View step 2** (``trace["fold-constant"]``,
also ``trace.final``) against step 1: a handful of nodes change, all in one module (the
diff's changes are in ``trace.scale_focus.group``), so a view must open centred deep inside
the graph, not at its start.

- ``many_ops(n=5000)``: a deep residual MLP of tiny layers, about ``n`` op nodes (5 per
  block: ``stages.S.blocks.J.norm``, ``.mlp.fc1``, ``.mlp.act``, ``.mlp.fc2``, and the
  residual add in ``stages.S.blocks.J``), four stages with a ``downsample`` linear between
  them. The middle block scales its output by ``log_gamma.exp()``; fold-constant folds the
  ``exp`` of that weight (group ``stages.1.blocks.249``, block 499 of 998, at ``n=5000``).
- ``decoder(layers=32)``: a Qwen2-MoE-style decoder with hidden size 64: embedding; per layer
  RMS norms, q/k/v/o projections, rotary embedding, attention (matmul, scale, causal mask,
  softmax, matmul, transpose, reshape), residual adds, and a mixture-of-experts MLP (a router
  ``mlp.gate``, ``experts`` experts each with ``gate_proj``/``up_proj``/``down_proj``/
  ``act_fn`` weighted densely by the router, and a gated ``shared_expert``); final norm and
  ``lm_head``. ``experts=22`` is what brings 32 layers to about 10,000 nodes (the attention
  and norms are ~70 nodes a layer, each expert 11); ``experts=0`` gives a plain gate/up/down
  MLP (~64 nodes a layer). Layer ``fold_layer`` (default 17, or ``layers // 2`` when there are
  fewer than 18 layers) computes its attention scale as ``rsqrt`` of a buffer holding the
  head size; fold-constant folds it (group ``model.layers.17.self_attn``).
- ``flat_chain(n=10000)``: ``n`` elementwise ops in one chain at the top level of the model,
  so no node has a module path (every group is ""). At ``n // 2`` the chain adds
  ``sqrt(offset)`` of a top-level buffer; fold-constant folds the ``sqrt``.

Every node carries the provenance ``compiler.frontend.from_torch`` gives the same model
written in torch (framework, module path, ATen op, FX node name, ``file:line``), and node names
are the FX names (``linear_3``, ``pow_1``): ``torch_twin(kind, **args)`` returns that torch
model, and ``tests/widgets/test_scale_models.py`` checks that importing it gives a
structurally equal module, provenance included. Small arguments build in milliseconds
(``decoder(layers=2)``, ``many_ops(300)``, ``flat_chain(300)``); ``*_module(...)`` return the
IR module alone.

Measured on 2026-11-23 (2 CPUs, load average 1.1), ``.venv/bin/python bench/scale_models.py``:

    model                nodes at steps 0/1/2  ops    build IR  explore  graph models  diff
    many_ops(n=5000)     11001/11001/11000     4998   0.74 s    0.44 s   1.27 s        0.50 s
    decoder(layers=32)   10002/10002/10001     7433   0.78 s    0.56 s   1.01 s        0.32 s
    flat_chain(n=10000)  10003/10003/10002     10000  0.45 s    0.24 s   0.55 s        0.31 s

The torch route (``--torch``: ``torch.export`` of the twin, then ``explore``) takes 26-30 s /
41-59 s / 21-22 s to export and 2-3 s / 7 s / 3-6 s to import (two runs each), and imports
modules structurally equal, provenance included, to the ones built here.
"""

from __future__ import annotations

import argparse
import builtins
import inspect
import keyword
import os
import platform
import re
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler.ir.nodes import Call, Constant, Expr, Function, Module, Var  # noqa: E402
from compiler.ir.provenance import Provenance  # noqa: E402
from compiler.ir.types import TensorType  # noqa: E402

PIPELINE = "infer-types,fold-constant"
"""The pipeline of every trace: step 1 changes nothing, step 2 (the last) folds one constant
subexpression, so the last step has a small diff against the one before."""

VIEW_STEP = "fold-constant"
"""The step to view (``trace[VIEW_STEP]``, index 2): its diff against step 1 is small."""

DECODER_EXPERTS = 22  # 32 layers -> about 10,000 nodes
FOLD_LAYER = 17


@dataclass
class Focus:
    """Where a trace's interesting change is: the step to view (index and pass name), the
    module path (``group``) of the nodes it changes, and a short description."""

    step: int
    pass_name: str
    group: str
    what: str


# ----- building IR the way the torch frontend imports a model ------------------------------

_FILE = os.path.abspath(__file__)
_FX_RESERVED = set(dir(builtins)) | set(keyword.kwlist)
_LINES: dict[str, int] = {}


def _line_of(tag: str) -> int:
    """The line of this file marked ``# L:tag`` (in the torch twins below), so an op built
    here has the ``file:line`` the torch frontend gives the same op of the twin."""
    if not _LINES:
        with open(_FILE, encoding="utf-8") as f:
            for i, text in enumerate(f, 1):
                m = re.search(r"# L:([\w.]+)\s*$", text)
                if m:
                    _LINES[m.group(1)] = i
    return _LINES[tag]


class _S:
    """A Python scalar operand: the frontend makes it an unnamed 0-d constant of the op's
    dtype carrying the op's provenance."""

    __slots__ = ("value",)

    def __init__(self, value: float):
        self.value = value


class _Builder:
    """Makes weights named like torch's state dict and calls carrying torch provenance, bound
    in creation order (the FX graph's order)."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.counts: dict[str, int] = {}
        self.bindings: list[Expr] = []
        self.locations: dict[str, str] = {}

    def fx_name(self, base: str) -> str:
        """The name FX gives the next node of ``base`` (``mul``, ``mul_1``; ``pow_1``, ``pow_2``
        for Python builtins)."""
        n = self.counts.get(base, 0)
        self.counts[base] = n + 1
        if base in _FX_RESERVED:
            return f"{base}_{n + 1}"
        return base if n == 0 else f"{base}_{n}"

    def tensor(self, name: str, data: np.ndarray, prefix: str = "p") -> Constant:
        """A parameter (``prefix="p"``) or buffer (``"b"``) of the model."""
        path = name.rsplit(".", 1)[0] if "." in name else None
        prov = Provenance(
            framework="torch",
            module_path=path,
            source_op="placeholder",
            source_node=f"{prefix}_{name.replace('.', '_')}",
        )
        return Constant(data, name=name, prov=prov)

    def param(self, name: str, shape: Sequence[int], kind: str = "fan_in") -> Constant:
        """A random float32 weight: normal over sqrt(fan_in), near 1 (``scale``) or small."""
        if kind == "fan_in":
            data = self.rng.standard_normal(shape, dtype=np.float32)
            data /= np.float32(np.sqrt(shape[-1]))
        elif kind == "scale":
            data = 1 + 0.1 * self.rng.standard_normal(shape, dtype=np.float32)
        else:
            data = 0.1 * self.rng.standard_normal(shape, dtype=np.float32)
        return self.tensor(name, data)

    def op(self, at: str, path: str | None, aten: str, op: str, *args: Any, **attrs: Any) -> Call:
        """The IR call for ATen op ``aten`` in module ``path``, written at line ``# L:at``."""
        loc = self.locations.get(at)
        if loc is None:
            loc = self.locations[at] = f"{_FILE}:{_line_of(at)}"
        base = aten.split(".")[1]
        name = self.fx_name(base)
        prov = Provenance(
            framework="torch", module_path=path, source_op=aten, source_node=name, location=loc
        )
        operands = [
            Constant(np.asarray(a.value, np.float32), prov=prov) if isinstance(a, _S) else a
            for a in args
        ]
        node = Call(op, operands, attrs, prov=prov, name=name)
        self.bindings.append(node)
        return node

    def function(self, inputs: Sequence[Var], output: Expr) -> Module:
        fn = Function(list(inputs), self.bindings, output, {"num_input": len(inputs)})
        return Module({"main": fn})


def _input(name: str, shape: Sequence[int], dtype: str = "float32") -> Var:
    return Var(
        name, TensorType(tuple(shape), dtype), prov=Provenance(framework="torch", source_node=name)
    )


# ----- many_ops: a deep residual MLP of tiny layers ----------------------------------------

MANY_OPS_WIDTHS = (8, 16, 24, 32)


def _many_ops_plan(n: int, stages: int) -> tuple[list[int], int]:
    """Blocks per stage and the index of the folding block, for about ``n`` ops."""
    overhead = 1 + (stages - 1) + 2 + 2  # stem, downsamples, norm + head, exp + multiply
    blocks = max(stages, round((n - overhead) / 5))
    depths = [blocks // stages + (1 if s < blocks % stages else 0) for s in range(stages)]
    return depths, blocks // 2


def many_ops_module(
    n: int = 5000,
    widths: Sequence[int] = MANY_OPS_WIDTHS,
    in_features: int = 16,
    num_classes: int = 10,
    batch: int = 1,
    seed: int = 0,
) -> Module:
    """The IR of ``many_ops`` (see the module docstring)."""
    depths, fold_block = _many_ops_plan(n, len(widths))
    b = _Builder(seed)

    def linear(x: Expr, path: str, n_in: int, n_out: int, at: str) -> Call:
        w = b.param(f"{path}.weight", (n_out, n_in))
        bias = b.param(f"{path}.bias", (n_out,), "shift")
        return b.op(at, path, "aten.linear.default", "linear", x, w, bias)

    def layer_norm(x: Expr, path: str, width: int, at: str) -> Call:
        w = b.param(f"{path}.weight", (width,), "scale")
        bias = b.param(f"{path}.bias", (width,), "shift")
        return b.op(
            at, path, "aten.layer_norm.default", "layer_norm", x, w, bias, axes=[1], epsilon=1e-5
        )

    x = _input("x", (batch, in_features))
    h = linear(x, "stem", in_features, widths[0], "net.stem")
    k = 0
    for s, (width, depth) in enumerate(zip(widths, depths, strict=True)):
        if s > 0:
            h = linear(h, f"stages.{s}.downsample", widths[s - 1], width, "stage.down")
        for j in range(depth):
            p = f"stages.{s}.blocks.{j}"
            y = layer_norm(h, f"{p}.norm", width, "block.mlp")
            y = linear(y, f"{p}.mlp.fc1", width, 2 * width, "tiny.mlp")
            y = b.op("tiny.mlp", f"{p}.mlp.act", "aten.gelu.default", "gelu", y)
            y = linear(y, f"{p}.mlp.fc2", 2 * width, width, "tiny.mlp")
            if k == fold_block:
                log_gamma = b.param(f"{p}.log_gamma", (width,), "shift")
                g = b.op("block.scale", p, "aten.exp.default", "exp", log_gamma)
                y = b.op("block.scale", p, "aten.mul.Tensor", "multiply", g, y)
            h = b.op("block.add", p, "aten.add.Tensor", "add", h, y)
            k += 1
    h = layer_norm(h, "norm", widths[-1], "net.head")
    h = linear(h, "head", widths[-1], num_classes, "net.head")
    return b.function([x], h)


def _many_ops_group(n: int, stages: int) -> str:
    depths, fold_block = _many_ops_plan(n, stages)
    for s, depth in enumerate(depths):
        if fold_block < depth:
            return f"stages.{s}.blocks.{fold_block}"
        fold_block -= depth
    raise AssertionError("unreachable")


# ----- decoder: a Qwen2-MoE-style transformer decoder ---------------------------------------


def decoder_module(
    layers: int = 32,
    hidden: int = 64,
    heads: int = 4,
    experts: int = DECODER_EXPERTS,
    intermediate: int = 64,
    expert_intermediate: int = 32,
    vocab: int = 128,
    seq: int = 8,
    fold_layer: int | None = None,
    seed: int = 0,
) -> Module:
    """The IR of ``decoder`` (see the module docstring); ``experts=0`` for a plain MLP."""
    fold_layer = _fold_layer(layers, fold_layer)
    hd = hidden // heads
    if hd * heads != hidden or hd % 2:
        raise ValueError(f"hidden {hidden} must split into {heads} heads of an even size")
    b = _Builder(seed)
    eps = 1e-6

    def rms_norm(x: Expr, path: str) -> Call:
        w = b.param(f"{path}.weight", (hidden,), "scale")
        v = b.op("rms.var", path, "aten.pow.Tensor_Scalar", "multiply", x, x)
        v = b.op("rms.var", path, "aten.mean.dim", "mean", v, axes=[2], keepdims=True)
        v = b.op("rms.norm", path, "aten.add.Tensor", "add", v, _S(eps))
        r = b.op("rms.norm", path, "aten.rsqrt.default", "rsqrt", v)
        y = b.op("rms.norm", path, "aten.mul.Tensor", "multiply", x, r)
        return b.op("rms.scale", path, "aten.mul.Tensor", "multiply", w, y)

    def proj(x: Expr, path: str, n_in: int, n_out: int, at: str) -> Call:
        w = b.param(f"{path}.weight", (n_out, n_in))
        return b.op(at, path, "aten.linear.default", "linear", x, w)

    def heads_of(x: Expr, path: str, which: str) -> Call:
        at = f"attn.{which}"
        y = proj(x, f"{path}.{which}_proj", hidden, hidden, at)
        y = b.op(at, path, "aten.view.default", "reshape", y, shape=[1, seq, heads, hd])
        return b.op(at, path, "aten.transpose.int", "permute_dims", y, axes=[0, 2, 1, 3])

    def rope(x: Expr, path: str, at: str, cos: Constant, sin: Constant) -> Call:
        a = b.op(at, path, "aten.mul.Tensor", "multiply", x, cos)
        half = hd // 2
        x1 = b.op(
            at, path, "aten.slice.Tensor", "strided_slice", x, begin=[0], end=[half], axes=[3]
        )
        x2 = b.op(
            at, path, "aten.slice.Tensor", "strided_slice", x, begin=[half], end=[hd], axes=[3]
        )
        n2 = b.op(at, path, "aten.neg.default", "neg", x2)
        rot = b.op(at, path, "aten.cat.default", "concat", n2, x1, axis=-1)
        c = b.op(at, path, "aten.mul.Tensor", "multiply", rot, sin)
        return b.op(at, path, "aten.add.Tensor", "add", a, c)

    def mlp(x: Expr, path: str, width: int) -> Call:
        g = proj(x, f"{path}.gate_proj", hidden, width, "mlp")
        g = b.op("mlp", f"{path}.act_fn", "aten.silu.default", "silu", g)
        u = proj(x, f"{path}.up_proj", hidden, width, "mlp")
        y = b.op("mlp", path, "aten.mul.Tensor", "multiply", g, u)
        return proj(y, f"{path}.down_proj", width, hidden, "mlp")

    def moe(x: Expr, path: str) -> Call:
        route = proj(x, f"{path}.gate", hidden, experts, "moe.route")
        route = b.op("moe.route", path, "aten.softmax.int", "softmax", route, axis=-1)
        out = None
        for e in range(experts):
            y = mlp(x, f"{path}.experts.{e}", expert_intermediate)
            if experts > 1:
                r = b.op(
                    "moe.expert",
                    path,
                    "aten.slice.Tensor",
                    "strided_slice",
                    route,
                    begin=[e],
                    end=[e + 1],
                    axes=[2],
                )
            else:
                r = route  # the slice of the only expert is the whole tensor: no op
            y = b.op("moe.expert", path, "aten.mul.Tensor", "multiply", y, r)
            out = y if out is None else b.op("moe.sum", path, "aten.add.Tensor", "add", out, y)
        gate = proj(x, f"{path}.shared_expert_gate", hidden, 1, "moe.shared_gate")
        gate = b.op("moe.shared_gate", path, "aten.sigmoid.default", "sigmoid", gate)
        shared = mlp(x, f"{path}.shared_expert", intermediate)
        shared = b.op("moe.shared", path, "aten.mul.Tensor", "multiply", gate, shared)
        return b.op("moe.out", path, "aten.add.Tensor", "add", out, shared)

    ids = _input("input_ids", (1, seq), "int64")
    table = b.param("model.embed_tokens.weight", (vocab, hidden), "shift")
    h = b.op(
        "model.embed", "model.embed_tokens", "aten.embedding.default", "take", table, ids, axis=0
    )
    cos_np, sin_np = _rotary(seq, hd)
    cos = b.tensor("model.rotary_emb.cos", cos_np, "b")
    sin = b.tensor("model.rotary_emb.sin", sin_np, "b")
    mask = b.tensor("model.causal_mask", _causal_mask(seq), "b")
    for i in range(layers):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        x = rms_norm(h, f"{p}.input_layernorm")
        q = heads_of(x, a, "q")
        k = heads_of(x, a, "k")
        v = heads_of(x, a, "v")
        q = rope(q, a, "attn.rope_q", cos, sin)
        k = rope(k, a, "attn.rope_k", cos, sin)
        if i == fold_layer:
            base = b.tensor(f"{a}.head_dim", np.asarray(float(hd), np.float32), "b")
            scale: Any = b.op("attn.scale_t", a, "aten.rsqrt.default", "rsqrt", base)
        else:
            scale = _S(hd**-0.5)
        kt = b.op("attn.scores", a, "aten.transpose.int", "permute_dims", k, axes=[0, 1, 3, 2])
        s = b.op("attn.scores", a, "aten.matmul.default", "matmul", q, kt)
        s = b.op("attn.scale", a, "aten.mul.Tensor", "multiply", s, scale)
        s = b.op("attn.mask", a, "aten.add.Tensor", "add", s, mask)
        s = b.op("attn.softmax", a, "aten.softmax.int", "softmax", s, axis=-1)
        o = b.op("attn.out", a, "aten.matmul.default", "matmul", s, v)
        o = b.op("attn.merge", a, "aten.transpose.int", "permute_dims", o, axes=[0, 2, 1, 3])
        o = b.op("attn.merge", a, "aten.reshape.default", "reshape", o, shape=[1, seq, hidden])
        o = proj(o, f"{a}.o_proj", hidden, hidden, "attn.o")
        h = b.op("layer.attn", p, "aten.add.Tensor", "add", h, o)
        x = rms_norm(h, f"{p}.post_attention_layernorm")
        m = moe(x, f"{p}.mlp") if experts else mlp(x, f"{p}.mlp", intermediate)
        h = b.op("layer.mlp", p, "aten.add.Tensor", "add", h, m)
    h = rms_norm(h, "model.norm")
    logits = proj(h, "lm_head", hidden, vocab, "lm.head")
    return b.function([ids], logits)


def _fold_layer(layers: int, fold_layer: int | None) -> int:
    if fold_layer is None:
        fold_layer = FOLD_LAYER if layers > FOLD_LAYER else layers // 2
    if not 0 <= fold_layer < layers:
        raise ValueError(f"fold_layer {fold_layer} is not a layer of 0..{layers - 1}")
    return fold_layer


def _rotary(seq: int, hd: int) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = 1.0 / (10000.0 ** (np.arange(0, hd, 2, dtype=np.float32) / hd))
    freqs = np.outer(np.arange(seq, dtype=np.float32), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)


def _causal_mask(seq: int) -> np.ndarray:
    return np.triu(np.full((seq, seq), np.finfo(np.float32).min, np.float32), 1)


# ----- flat_chain: elementwise ops with no module ------------------------------------------

CHAIN_OPS = ("tanh", "sigmoid", "neg", "sin", "relu", "cos", "abs")


def flat_chain_module(n: int = 10000, width: int = 8, fold_at: int | None = None) -> Module:
    """The IR of ``flat_chain`` (see the module docstring): ``n`` ops, no module paths."""
    if n < 3:
        raise ValueError(f"a chain needs at least 3 ops, got {n}")
    fold_at = n // 2 if fold_at is None else fold_at
    b = _Builder()
    x = _input("x", (1, width))
    offset = b.tensor("offset", np.asarray(4.0, np.float32), "b")
    h: Expr = x
    i = k = 0
    while i < n:
        if i == fold_at and i + 1 < n:
            r = b.op("chain.fold", None, "aten.sqrt.default", "sqrt", offset)
            h = b.op("chain.fold", None, "aten.add.Tensor", "add", h, r)
            i += 2
            continue
        op = CHAIN_OPS[k % len(CHAIN_OPS)]
        h = b.op("chain.op", None, f"aten.{op}.default", op, h)
        i += 1
        k += 1
    return b.function([x], h)


# ----- traces -------------------------------------------------------------------------------


def _explore(module: Module, focus: Focus):
    import explorer

    trace = explorer.explore(module, pipeline=PIPELINE)
    focus.step = trace[VIEW_STEP].index
    trace.scale_focus = focus
    return trace


def many_ops(n: int = 5000, **options):
    """The 5,000-op model's trace: about ``n`` op nodes in ``stages.S.blocks.J`` modules;
    ``options`` as for ``many_ops_module`` (widths, in_features, num_classes, batch, seed)."""
    module = many_ops_module(n, **options)
    stages = len(options.get("widths", MANY_OPS_WIDTHS))
    group = _many_ops_group(n, stages)
    return _explore(module, Focus(0, VIEW_STEP, group, f"exp of {group}.log_gamma folded"))


def decoder(layers: int = 32, **options):
    """The 32-layer decoder's trace (about 10,000 nodes at the defaults); ``options`` as for
    ``decoder_module`` (hidden, heads, experts, intermediate, expert_intermediate, vocab,
    seq, fold_layer, seed)."""
    module = decoder_module(layers, **options)
    i = _fold_layer(layers, options.get("fold_layer"))
    group = f"model.layers.{i}.self_attn"
    return _explore(module, Focus(0, VIEW_STEP, group, f"rsqrt of {group}.head_dim folded"))


def flat_chain(n: int = 10000, **options):
    """A chain of ``n`` elementwise ops with no module path; ``options``: width, fold_at."""
    return _explore(
        flat_chain_module(n, **options), Focus(0, VIEW_STEP, "", "sqrt of the buffer offset folded")
    )


# ----- the same models in torch (for fidelity checks and to time torch.export) --------------

_TWINS: dict[str, Any] = {}


def _torch_classes() -> dict[str, Any]:
    """The torch twins of the three models (defined on first use, so importing this module
    does not import torch). Lines marked ``# L:tag`` are the ``file:line`` of the IR ops."""
    if _TWINS:
        return _TWINS
    import torch
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))
            self.variance_epsilon = eps

        def forward(self, x):
            variance = x.pow(2).mean(-1, keepdim=True)  # L:rms.var
            x = x * torch.rsqrt(variance + self.variance_epsilon)  # L:rms.norm
            return self.weight * x  # L:rms.scale

    def rotate_half(x):  # its ops get the caller's line: torch records the module's frame
        half = x.shape[-1] // 2
        x1 = x[..., :half]
        x2 = x[..., half:]
        return torch.cat((-x2, x1), dim=-1)

    class Attention(nn.Module):
        def __init__(self, hidden: int, heads: int, scale_buffer: bool):
            super().__init__()
            self.heads, self.head_size = heads, hidden // heads
            self.scaling = self.head_size**-0.5
            self.q_proj = nn.Linear(hidden, hidden, bias=False)
            self.k_proj = nn.Linear(hidden, hidden, bias=False)
            self.v_proj = nn.Linear(hidden, hidden, bias=False)
            self.o_proj = nn.Linear(hidden, hidden, bias=False)
            self.scale_buffer = scale_buffer
            if scale_buffer:
                self.register_buffer("head_dim", torch.tensor(float(self.head_size)))

        def forward(self, x, cos, sin, mask):
            b, t, _ = x.shape
            shape = (b, t, self.heads, self.head_size)
            q = self.q_proj(x).view(shape).transpose(1, 2)  # L:attn.q
            k = self.k_proj(x).view(shape).transpose(1, 2)  # L:attn.k
            v = self.v_proj(x).view(shape).transpose(1, 2)  # L:attn.v
            q = q * cos + rotate_half(q) * sin  # L:attn.rope_q
            k = k * cos + rotate_half(k) * sin  # L:attn.rope_k
            if self.scale_buffer:
                scale = torch.rsqrt(self.head_dim)  # L:attn.scale_t
            else:
                scale = self.scaling
            scores = torch.matmul(q, k.transpose(2, 3))  # L:attn.scores
            scores = scores * scale  # L:attn.scale
            scores = scores + mask  # L:attn.mask
            probs = torch.softmax(scores, dim=-1)  # L:attn.softmax
            out = torch.matmul(probs, v)  # L:attn.out
            out = out.transpose(1, 2).reshape(b, t, -1)  # L:attn.merge
            return self.o_proj(out)  # L:attn.o

    class MLP(nn.Module):
        def __init__(self, hidden: int, width: int):
            super().__init__()
            self.gate_proj = nn.Linear(hidden, width, bias=False)
            self.up_proj = nn.Linear(hidden, width, bias=False)
            self.down_proj = nn.Linear(width, hidden, bias=False)
            self.act_fn = nn.SiLU()

        def forward(self, x):
            return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  # L:mlp

    class SparseMoeBlock(nn.Module):
        """Qwen2-MoE's block with dense routing (every expert runs, weighted by the router)."""

        def __init__(self, hidden: int, experts: int, width: int, shared_width: int):
            super().__init__()
            self.gate = nn.Linear(hidden, experts, bias=False)
            self.experts = nn.ModuleList([MLP(hidden, width) for _ in range(experts)])
            self.shared_expert = MLP(hidden, shared_width)
            self.shared_expert_gate = nn.Linear(hidden, 1, bias=False)

        def forward(self, x):
            routing = torch.softmax(self.gate(x), dim=-1)  # L:moe.route
            out = None
            for e, expert in enumerate(self.experts):
                y = expert(x) * routing[..., e : e + 1]  # L:moe.expert
                out = y if out is None else out + y  # L:moe.sum
            gate = torch.sigmoid(self.shared_expert_gate(x))  # L:moe.shared_gate
            shared = gate * self.shared_expert(x)  # L:moe.shared
            return out + shared  # L:moe.out

    class DecoderLayer(nn.Module):
        def __init__(self, hidden, heads, experts, width, expert_width, scale_buffer):
            super().__init__()
            self.self_attn = Attention(hidden, heads, scale_buffer)
            if experts:
                self.mlp = SparseMoeBlock(hidden, experts, expert_width, width)
            else:
                self.mlp = MLP(hidden, width)
            self.input_layernorm = RMSNorm(hidden)
            self.post_attention_layernorm = RMSNorm(hidden)

        def forward(self, x, cos, sin, mask):
            h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)  # L:layer.attn
            return h + self.mlp(self.post_attention_layernorm(h))  # L:layer.mlp

    class RotaryEmbedding(nn.Module):
        def __init__(self, seq: int, head_dim: int):
            super().__init__()
            cos, sin = _rotary(seq, head_dim)
            self.register_buffer("cos", torch.from_numpy(cos))
            self.register_buffer("sin", torch.from_numpy(sin))

        def forward(self):
            return self.cos, self.sin

    class DecoderModel(nn.Module):
        def __init__(self, layers, hidden, heads, experts, width, expert_width, vocab, seq, fold):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, hidden)
            self.rotary_emb = RotaryEmbedding(seq, hidden // heads)
            self.layers = nn.ModuleList(
                [
                    DecoderLayer(hidden, heads, experts, width, expert_width, i == fold)
                    for i in range(layers)
                ]
            )
            self.norm = RMSNorm(hidden)
            self.register_buffer("causal_mask", torch.from_numpy(_causal_mask(seq)))

        def forward(self, input_ids):
            h = self.embed_tokens(input_ids)  # L:model.embed
            cos, sin = self.rotary_emb()
            for layer in self.layers:
                h = layer(h, cos, sin, self.causal_mask)
            return self.norm(h)

    class DecoderForCausalLM(nn.Module):
        def __init__(self, layers, hidden, heads, experts, width, expert_width, vocab, seq, fold):
            super().__init__()
            self.model = DecoderModel(
                layers, hidden, heads, experts, width, expert_width, vocab, seq, fold
            )
            self.lm_head = nn.Linear(hidden, vocab, bias=False)

        def forward(self, input_ids):
            return self.lm_head(self.model(input_ids))  # L:lm.head

    class TinyMLP(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.fc1 = nn.Linear(width, 2 * width)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(2 * width, width)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))  # L:tiny.mlp

    class Block(nn.Module):
        def __init__(self, width: int, log_gamma: bool):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.mlp = TinyMLP(width)
            self.log_gamma = nn.Parameter(torch.zeros(width)) if log_gamma else None

        def forward(self, x):
            y = self.mlp(self.norm(x))  # L:block.mlp
            if self.log_gamma is not None:
                y = self.log_gamma.exp() * y  # L:block.scale
            return x + y  # L:block.add

    class Stage(nn.Module):
        def __init__(self, n_in: int, width: int, depth: int, fold: int, downsample: bool):
            super().__init__()
            self.downsample = nn.Linear(n_in, width) if downsample else None
            self.blocks = nn.ModuleList([Block(width, j == fold) for j in range(depth)])

        def forward(self, x):
            if self.downsample is not None:
                x = self.downsample(x)  # L:stage.down
            for block in self.blocks:
                x = block(x)
            return x

    class ManyOps(nn.Module):
        def __init__(self, n, widths, in_features, num_classes):
            super().__init__()
            depths, fold = _many_ops_plan(n, len(widths))
            self.stem = nn.Linear(in_features, widths[0])
            stages, n_in = [], widths[0]
            for s, (width, depth) in enumerate(zip(widths, depths, strict=True)):
                stages.append(Stage(n_in, width, depth, fold, s > 0))
                n_in, fold = width, fold - depth
            self.stages = nn.ModuleList(stages)
            self.norm = nn.LayerNorm(widths[-1])
            self.head = nn.Linear(widths[-1], num_classes)

        def forward(self, x):
            x = self.stem(x)  # L:net.stem
            for stage in self.stages:
                x = stage(x)
            return self.head(self.norm(x))  # L:net.head

    class Chain(nn.Module):
        def __init__(self, n: int, fold_at: int):
            super().__init__()
            self.n, self.fold_at = n, fold_at
            self.register_buffer("offset", torch.tensor(4.0))
            self.ops = [getattr(torch, op) for op in CHAIN_OPS]

        def forward(self, x):
            i = k = 0
            while i < self.n:
                if i == self.fold_at and i + 1 < self.n:
                    x = x + torch.sqrt(self.offset)  # L:chain.fold
                    i += 2
                    continue
                x = self.ops[k % len(self.ops)](x)  # L:chain.op
                i += 1
                k += 1
            return x

    _TWINS.update(decoder=DecoderForCausalLM, many_ops=ManyOps, flat_chain=Chain)
    return _TWINS


def torch_twin(kind: str, **args):
    """``(model, example_inputs)``: the torch model whose import (``explorer.explore``) is the
    module ``{kind}_module(**args)`` builds, weights included. ``kind``: ``many_ops``,
    ``decoder`` or ``flat_chain``."""
    import torch

    if kind not in BUILDERS:
        raise ValueError(f"no model {kind!r}: {', '.join(BUILDERS)}")
    module = BUILDERS[kind](**args)
    params = inspect.signature(BUILDERS[kind]).parameters
    a = {name: p.default for name, p in params.items()} | args
    classes = _torch_classes()
    if kind == "decoder":
        fold = _fold_layer(a["layers"], a["fold_layer"])
        model = classes["decoder"](
            *(a[k] for k in ("layers", "hidden", "heads", "experts", "intermediate")),
            *(a[k] for k in ("expert_intermediate", "vocab", "seq")),
            fold,
        )
        inputs = (torch.arange(a["seq"]).reshape(1, -1) % a["vocab"],)
    elif kind == "many_ops":
        model = classes["many_ops"](a["n"], tuple(a["widths"]), a["in_features"], a["num_classes"])
        inputs = (torch.randn(a["batch"], a["in_features"]),)
    else:
        fold_at = a["n"] // 2 if a["fold_at"] is None else a["fold_at"]
        model = classes["flat_chain"](a["n"], fold_at)
        inputs = (torch.randn(1, a["width"]),)
    state = {c.name: torch.from_numpy(np.array(c.data)) for c in module.constants().values()}
    model.load_state_dict(state, strict=True)
    return model.eval(), inputs


# ----- the benchmark -----------------------------------------------------------------------

FULL = {"many_ops": {"n": 5000}, "decoder": {"layers": 32}, "flat_chain": {"n": 10000}}
QUICK = {"many_ops": {"n": 300}, "decoder": {"layers": 2}, "flat_chain": {"n": 300}}
BUILDERS = {"many_ops": many_ops_module, "decoder": decoder_module, "flat_chain": flat_chain_module}
TRACES = {"many_ops": many_ops, "decoder": decoder, "flat_chain": flat_chain}


def _time(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def bench(kind: str, args: dict, with_torch: bool) -> None:
    """Build ``kind`` with ``args`` and print what each part of it costs."""
    import explorer
    from compiler.ir.structural import structural_equal

    call = f"{kind}({', '.join(f'{k}={v}' for k, v in args.items())})"
    module, build_s = _time(BUILDERS[kind], **args)
    trace, explore_s = _time(explorer.explore, module, pipeline=PIPELINE)
    graph_s = [_time(lambda st=step: st.graph)[1] for step in trace]
    view = trace[VIEW_STEP]
    d, diff_s = _time(view.diff)
    public, public_s = _time(TRACES[kind], **args)
    print(f"\n== {call}: {len(module.main.bindings)} bindings")
    print(f"   {kind}_module(...), the IR            {build_s:7.3f} s")
    print(f"   explorer.explore(module, {PIPELINE!r}) {explore_s:7.3f} s")
    for step, s in zip(trace, graph_s, strict=True):
        g = step.graph
        ops = sum(1 for n in g.nodes.values() if n.kind == "op")
        grouped = sum(1 for n in g.nodes.values() if n.group)
        print(
            f"   step {step.index} {step.name:<13} {step.status:<9} {len(g.nodes):6d} nodes "
            f"({ops:5d} ops, {grouped:5d} with a module path)  pass {step.seconds:6.3f} s, "
            f"graph model {s:6.3f} s"
        )
    print(
        f"   step {view.index} .diff() against step {view.previous.index}: {diff_s:.3f} s: "
        + ", ".join(f"{len(getattr(d, k))} {k}" for k in ("added", "removed", "changed"))
    )
    for how, nodes in (("+", d.added), ("-", d.removed), ("~", [c.after for c in d.changed])):
        for n in nodes:
            print(f"     {how} {n.id:<52} {n.op:<9} group {n.group!r}")
    total = build_s + explore_s + sum(graph_s) + diff_s
    print(f"   total: build + explore + every step's graph model + the diff = {total:.2f} s")
    print(f"   {call} (build + explore, as a test calls it): {public_s:.2f} s")
    print(f"   trace.scale_focus: {public.scale_focus}")
    if with_torch:
        import torch

        model, inputs = torch_twin(kind, **args)
        ep, export_s = _time(torch.export.export, model, inputs)
        twin, import_s = _time(explorer.explore, ep, inputs, pipeline=PIPELINE)
        same = structural_equal(module, twin.imported.module, provenance=True)
        print(
            f"   torch route: torch.export {export_s:.2f} s ({len(ep.graph.nodes)} FX nodes), "
            f"explore(ExportedProgram) {import_s:.2f} s; the imported module is "
            f"{'structurally equal' if same else 'NOT EQUAL'} to the one built here "
            "(provenance included)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small variants only")
    parser.add_argument("--torch", action="store_true", help="also time the torch.export route")
    parser.add_argument("--only", default="", help="comma-separated: many_ops,decoder,flat_chain")
    opts = parser.parse_args(argv)
    print("Command:", shlex.join([".venv/bin/python", *sys.argv]))
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load average {os.getloadavg()[0]:.1f}"
    )
    sizes = QUICK if opts.quick else FULL
    kinds = [k for k in sizes if not opts.only or k in opts.only.split(",")]
    for kind in kinds:
        bench(kind, sizes[kind], opts.torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
