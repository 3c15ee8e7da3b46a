"""Reuse of values between steps: a node a pass rebuilt around equal values (or decomposed)
is not computed again."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from compiler import CallMemo, compute_op, rounds_otherwise
from compiler.ir import Call, Constant, Expr, TensorType
from compiler.passes import SIDE_EFFECT_OPS, decompose, rounds_as_decomposed

# ===== reuse of values between steps ============================================================


class Memo:
    """Values by what computes them: (op, attributes, annotated type, operand values by
    identity). The value cache reuses a node shared between snapshots; this reuses the value
    of a node a pass rebuilt around the very same values: once fold-constant has turned
    `permute_dims(W)` into a constant that is a view of the same memory, the matmul reading
    it, and everything after, get the values computed before instead of running again (and
    so do the bodies of functions fuse-ops outlined). Ops are pure, so equal keys mean equal
    values; the annotated type is in the key so a node with a new annotation is checked.

    An entry keeps its operand arrays alive (so no other array takes their id) and is kept
    while it was made or used by the module a pass was given or the one being run; an entry
    of an op computed as its decomposition keeps the entries of its parts with it (a step
    that reuses the op's value keeps the parts decompose-ops' nodes will look up)."""

    def __init__(self) -> None:
        # key -> [operand arrays, value, generation, keys of its parts' entries]
        self.entries: dict[tuple, list] = {}
        self.views: dict[tuple, weakref.ref] = {}  # (base, address, layout) -> the first view
        self.canonicals: dict[int, tuple] = {}  # id(view) -> (it, its canonical view), weakly
        self.contents: dict[tuple, list] = {}  # (shape, dtype, sampled bytes) -> arrays
        self.content_hits = 0
        # (op, attrs, type, operand types) -> (its decomposition, the operands it reads)
        self.decompositions: dict[tuple, tuple] = {}
        self.generation = 0
        self.hits = 0
        # node -> the number standing for its (op, attributes, type) in keys: made once per
        # node, so a key is a tuple of ints, hashed and compared without Python's `__eq__`s
        self.signatures: dict[Expr, int] = {}
        self._numbers: dict[tuple, int] = {}  # (op, attributes, type) -> its number
        self._transposed: set[int] = set()  # the numbers of matmuls reading rhs transposed
        self._swept = 0  # the size of the weak tables when their dead references were dropped

    def decomposition(self, node: Call) -> tuple[Expr | None, tuple]:
        """What decompose-ops rewrites `node` into and the operands it is built on: made
        once per op, attributes, type and operand types (a decomposition reads no more of
        its node, and the parts' memo keys are made of those and the operand values), so
        the 32 attentions of a decoder's layers are decomposed once; a node reading one
        operand twice is decomposed on its own."""
        args = node.args
        if len({id(a) for a in args}) != len(args):
            return decompose(node), args
        sig = (node.op, node.attrs, node.ty, *(a.ty for a in args))
        made = self.decompositions.get(sig)
        if made is None:
            made = self.decompositions[sig] = (decompose(node), args)
        return made

    def start(self, keep: int | None) -> int:
        """Begin a module's run, keeping the entries of generation `keep`; its generation."""
        self.generation += 1
        live = {keep, self.generation}
        entries = self.entries
        for k in [k for k, e in entries.items() if e[2] not in live]:
            del entries[k]
        # the weak tables' dead references (looked at again before use) dropped once they
        # have doubled since the last time, not at every step
        size = len(self.views) + len(self.canonicals) + len(self.contents)
        if size > 2 * self._swept:
            self.views = {k: r for k, r in self.views.items() if r() is not None}
            self.canonicals = {k: c for k, c in self.canonicals.items() if c[0]() is not None}
            self.contents = {
                k: live
                for k, refs in self.contents.items()
                if (live := [r for r in refs if r() is not None])
            }
            self._swept = len(self.views) + len(self.canonicals) + len(self.contents)
        return self.generation

    def canonical(self, value: Any) -> Any:
        """The array standing for `value`: itself, or for a view, the first view seen of
        the same memory with the same shape, strides and dtype. An array over memory numpy
        does not own (a torch kernel's result: its base a tensor) stands for itself and for
        its views of its own layout, so it is not looked up."""
        if value.__class__ is not np.ndarray and not isinstance(value, np.ndarray):
            return value
        base = value.base
        if base is None or not isinstance(base, np.ndarray):
            return value
        seen = self.canonicals.get(id(value))  # (a view is looked at again at every step)
        if seen is not None and seen[0]() is value:
            if seen[1] is None:  # (itself the first)
                return value
            first = seen[1]()
            if first is not None:
                return first
        first = self._first_view(value)
        self.canonicals[id(value)] = (
            weakref.ref(value),
            None if first is value else weakref.ref(first),
        )
        return first

    def _first_view(self, value: np.ndarray) -> np.ndarray:
        root = value
        while isinstance(root.base, np.ndarray):
            root = root.base
        address = value.__array_interface__["data"][0]
        shape, strides, dtype = value.shape, value.strides, value.dtype.str
        if (
            root.base is not None  # a root over memory numpy does not own (`canonical`)
            and shape == root.shape
            and strides == root.strides
            and dtype == root.dtype.str
            and address == root.__array_interface__["data"][0]
        ):
            return root
        key = (id(root), address, shape, strides, dtype)
        ref = self.views.get(key)
        first = ref() if ref is not None else None
        if first is None:
            self.views[key] = weakref.ref(value)
            return value
        return first

    def key_of(self, node: Call, arrays: list) -> tuple[tuple, list] | None:
        """The key of a call of `node` on `arrays` (see `key`) and its canonical operands
        (`arrays` itself when each array is its own canonical one), or None when one of
        `arrays` is no array."""
        number = self.signatures.get(node)
        if number is None:
            number = self._signature(node)
        ops = arrays
        for a in arrays:
            if a.__class__ is not np.ndarray or isinstance(a.base, np.ndarray):
                canonical, ops = self.canonical, []
                for b in arrays:
                    if not isinstance(b, np.ndarray):
                        return None
                    ops.append(canonical(b))
                break
        if number in self._transposed and len(ops) == 2 and ops[1].ndim >= 2:
            ops = [ops[0], self.canonical(np.swapaxes(ops[1], -1, -2))]
        n = len(ops)
        if n == 2:  # (most calls: one or two operands, keyed without a map)
            return (number, id(ops[0]), id(ops[1])), ops
        if n == 1:
            return (number, id(ops[0])), ops
        return (number, *map(id, ops)), ops

    def key(self, node: Expr, operands: list) -> tuple:
        """What computes a value: the op, attributes and type (as their number in
        `signatures`) and the operands by identity. A matmul reading its rhs transposed
        (`transpose_b`) is keyed as the plain matmul of the transposed view, which is what it
        computes (the same view, the same `_matmul` call): fold-constant's `matmul(x, E,
        transpose_b)` for `matmul(x, permute_dims(E))` of a tied embedding gets the value
        computed before."""
        number = self.signatures.get(node)
        if number is None:
            number = self._signature(node)
        return (number, *map(id, operands))

    def _signature(self, node: Expr) -> int:
        transposed = _reads_transposed(node)
        attrs = node.attrs.with_(transpose_b=False) if transposed else node.attrs
        ty = node.ty
        # what the attributes and a tensor type compare equal by, as values hashed and compared
        # without a Python call (their `__eq__` and `__hash__` are Python's; a dtype is one
        # object per dtype)
        if ty.__class__ is TensorType:
            what = (node.op, attrs.pairs, id(ty.dtype), ty.shape)
        else:
            what = (node.op, attrs.pairs, ty)
        number = self._numbers.setdefault(what, len(self._numbers))
        if transposed:
            self._transposed.add(number)
        self.signatures[node] = number
        return number

    def find(self, node: Call, arrays: list) -> Any:
        """The value remembered for a call of `node` on `arrays`, or None."""
        made = self.key_of(node, arrays)
        return None if made is None else self._found(self.entries.get(made[0]))

    def _found(self, entry: list | None) -> Any:
        if entry is None:
            return None
        if entry[2] != self.generation:
            self._touch(entry)
        self.hits += 1
        return entry[1]

    def _touch(self, entry: list) -> None:
        """Mark `entry` and its parts' entries used by this generation."""
        generation = self.generation
        if entry[2] == generation:  # (and so are its parts)
            return
        entry[2] = generation
        if not entry[3]:  # (most entries: no parts)
            return
        entries = self.entries
        stack = [entry]
        while stack:
            e = stack.pop()
            e[2] = generation
            for k in e[3]:
                p = entries.get(k)
                if p is not None and p[2] != generation:
                    stack.append(p)

    def put(
        self, node: Call, operands: list, value: Any, parts: tuple = (), key: tuple | None = None
    ) -> tuple:
        """Remember `value` (its parts: the keys of the entries it was computed from; `key`:
        `key(node, operands)` when already made); returns its key."""
        k = self.key(node, operands) if key is None else key
        entry = self.entries.get(k)
        if entry is None:
            self.entries[k] = [tuple(operands), value, self.generation, parts]
        elif entry[2] != self.generation:  # found again (the node cache): kept with its parts
            self._touch(entry)
        return k

    def same_content(self, value: Any) -> Any:
        """An array computed before with the very same bytes (shape, dtype, every bit), or
        `value` itself. A pass that rebuilds a node around equal values (decompose-ops'
        matmul + add for a linear, rounded alike) then hands its consumers the array they
        read before, so the memo reuses everything downstream."""
        if not isinstance(value, np.ndarray) or value.size < 64 or not value.flags.c_contiguous:
            return value
        flat = value.reshape(-1)
        step = max(1, flat.size // 32)
        key = (value.shape, value.dtype.str, flat[: 32 * step : step].tobytes())  # 32 probes
        refs = self.contents.get(key)
        if refs is None:  # (the common case: nothing seen with these probes)
            self.contents[key] = [weakref.ref(value)]
            return value
        bits = flat.view(np.uint8)
        for ref in refs:
            old = ref()
            if (
                old is not None
                and old is not value
                and np.array_equal(old.reshape(-1).view(np.uint8), bits)
            ):
                self.content_hits += 1
                return old
        refs[:] = [r for r in refs if r() is not None][-3:]
        refs.append(weakref.ref(value))
        return value


class MemoHooks(CallMemo):
    """The memo, consulted by the interpreter at every op call while a step runs."""

    def __init__(self, memo: Memo):
        self.memo = memo
        self._parts: list | None = None  # the keys a decomposition being computed used
        self._root: tuple | None = None  # the last decomposition's last part and its operands
        # ids of the nodes whose entry this run made or used (their step need not remember them)
        self.handled: set[int] = set()
        # (node, args, key, canonical operands) of the last lookup that found nothing: the
        # record of that call that follows takes its key instead of working it out again
        self._missed: tuple | None = None

    def _key(self, node: Call, args: list) -> tuple[tuple, list] | None:
        return None if node.op in SIDE_EFFECT_OPS else self.memo.key_of(node, args)

    def lookup(self, node: Call, args: list) -> Any:
        made = self._key(node, args)
        if made is None:
            return None
        key, ops = made
        memo = self.memo
        entry = memo.entries.get(key)
        if entry is not None:
            memo._found(entry)
            self.hits += 1
            self.handled.add(id(node))
            if self._parts is not None:
                self._parts.append(key)
            return entry[1]
        # an op whose reference rounds as its decomposition is computed as its parts, so the
        # values of decompose-ops' matmul and add are found in the memo, not computed again
        value = None
        if isinstance(node.ty, TensorType) and rounds_as_decomposed(node.op, node.ty.dtype):
            outer, self._parts = self._parts, []
            try:
                value = self._decomposed(node, args)
            finally:
                parts, self._parts = tuple(self._parts), outer
            if isinstance(value, np.ndarray) and value.dtype.kind == "f" and np.isnan(value).any():
                value = None  # the op and its decomposition may differ there: compute the op
            if value is not None and rounds_otherwise(node.op):
                value = self._own(node, args, value)
            if value is not None:
                memo.put(node, ops, value, parts, key)
                self.handled.add(id(node))
                if self._parts is not None:
                    self._parts.append(key)
        if value is None:
            self._missed = (node, args, key, ops)
        return value

    def _own(self, node: Call, args: list, parts_value: np.ndarray) -> np.ndarray:
        """The value of an op whose kernel rounds otherwise than its decomposition (torch's
        fused attention), computed after its parts (`parts_value`: the last part's): the
        op's value is its kernel's; when the two agree to rounding (`agree`) the last
        part's memo entry takes the kernel's value too, so the nodes decompose-ops writes
        get the values this step had (and eager's bits), and everything after them is
        reused. When they do not agree the decomposition is not what the op computes: its
        nodes then keep their own values and are judged on them."""
        own = compute_op(node.op, args, node.attrs)
        if not isinstance(own, np.ndarray) or own.dtype != parts_value.dtype:
            return parts_value
        if own.tobytes() == parts_value.tobytes():
            return parts_value
        if agree(own, parts_value, args[2]):
            root = self._root
            made = self.memo.key_of(*root) if root is not None else None
            if made is not None:
                entry = self.memo.entries.get(made[0])
                if entry is not None and entry[1] is parts_value:
                    entry[1] = own
        return own

    def _decomposed(self, node: Call, args: list) -> Any:
        """The value of `node` computed as its decomposition, each part through the memo, so
        the parts decompose-ops makes later are found there. Only for ops whose reference
        rounds exactly like their decomposition (tested bitwise), and kept only when it has
        no NaN (where attention's value and its decomposition's differ)."""
        self._root = None
        root, leaves = self.memo.decomposition(node)
        if root is None:
            return None
        known: dict[int, Any] = {id(a): v for a, v in zip(leaves, args, strict=False)}
        out = self._part(root, known)
        if isinstance(root, Call):  # the last part and its operands (``_own``)
            self._root = (root, [known[id(a)] if id(a) in known else a.data for a in root.args])
        return out

    def _part(self, e: Expr, known: dict[int, Any]) -> Any:
        """The value of part `e` of a decomposition (`known`: values by id of the parts and
        operands already known), through the memo."""
        if id(e) in known:
            return known[id(e)]
        if isinstance(e, Constant):
            return e.data
        if not isinstance(e, Call):
            raise TypeError(f"unexpected {type(e).__name__} in a decomposition")
        vals = [self._part(a, known) for a in e.args]
        v = self.lookup(e, vals)
        if v is None:
            v = self.record(e, vals, compute_op(e.op, vals, e.attrs))
        known[id(e)] = v
        return v

    def record(self, node: Call, args: list, value: Any) -> Any:
        missed, self._missed = self._missed, None
        if missed is not None and missed[0] is node and missed[1] is args:
            made = missed[2:]  # the lookup of this very call worked them out
        else:
            made = self._key(node, args)
        if made is None or not isinstance(value, np.ndarray):
            return value
        key, ops = made
        value = self.memo.same_content(value)
        key = self.memo.put(node, ops, value, (), key)
        self.handled.add(id(node))
        if self._parts is not None:
            self._parts.append(key)
        return value


AGREE_RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
"""How far (relative to the largest value attended to) an op's fused value may be from its
decomposition's for the two to agree to rounding (``agree``): some hundred float32 rounding
steps; a decomposition that computes something else (another scale, a mask off by a key) is
orders of magnitude further."""


def agree(own: np.ndarray, parts: np.ndarray, values: np.ndarray) -> bool:
    """Whether attention's fused value `own` and its decomposition's `parts` agree to
    rounding: each within `AGREE_RTOL` of the largest of `values` (each result is a
    weighted mean of them), all finite."""
    rtol = AGREE_RTOL.get(own.dtype)
    if rtol is None or own.shape != parts.shape or not np.isfinite(parts).all():
        return False
    scale = float(np.abs(values).max()) if values.size else 0.0
    return bool(np.abs(own.astype(np.float64) - parts).max() <= rtol * max(scale, 1e-30))


def call_arrays(node: Call, values: dict, params: dict) -> list | None:
    """The operand arrays of a call (`Memo.key_of` canonicalizes them), or None when one is
    not known yet or is no array."""
    out = []
    for a in node.args:
        if isinstance(a, Constant):
            v = a.data
        else:
            v = values.get(a)
            if v is None:
                v = params.get(a)
        if v.__class__ is not np.ndarray and not isinstance(v, np.ndarray):
            return None
        out.append(v)
    return out


def _reads_transposed(node: Expr) -> bool:
    return isinstance(node, Call) and node.op == "matmul" and bool(node.attrs.get("transpose_b"))
