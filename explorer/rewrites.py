"""Rewrites: which rule of a pass fired on which nodes, recorded under the pass's step.

A pass built from rules records every rule application inside
`compiler.passes.collect_rewrites()` on its snapshot (the innermost pass running);
`step_rewrites` makes each a `Rewrite` of the pass's step, whose `matched`
nodes are node ids of the step before (the graph model's ids, as every view names nodes) and
whose `produced` nodes are node ids of the step itself. Other compilers' recorders make
Rewrites the same way (Inductor's pattern-matcher replacements, named by their pattern).

- `step.rewrites`: the step's rewrites, in order;
- `rule_counts`: each rule with its number of applications; `rule_doc` what a
  rule does (as the step's compiler's adapter says);
- `rewrites_of` (`step.rewrites_of(node)`): the rewrites of a step that matched or
  produced a node;
- `why` (`step.why(node)`): why a node of a step is what it is: the rule and the step
  that produced it (this step or an earlier one: a node a pass keeps is the same object).
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from explorer.adapters import get_adapter, is_adapter_name

MAX_NAMES = 64  # nodes a rewrite keeps per side (a bigger match is cut, and says so)
MAX_WHY_NAMES = 8  # nodes a why line names (then "and N more")
MAX_WHY_CHARS = 500  # characters of one line of whys() (a file's names can be long)


@dataclass(frozen=True)
class Rewrite:
    """One rule application: `rule` (`pass/rule`, or an Inductor pattern's name), the
    nodes it `matched` (node ids of the step before, root first) and the nodes it
    `produced` (node ids of this step, the root's replacement first); `cut` counts the
    names left out beyond `MAX_NAMES`."""

    rule: str
    matched: tuple[str, ...] = ()
    produced: tuple[str, ...] = ()
    cut: int = 0

    @property
    def rule_name(self) -> str:
        """The rule without its pass: `linear-to-matmul` of `decompose-ops/linear-to-matmul`."""
        return self.rule.split("/", 1)[1] if "/" in self.rule else self.rule

    def __str__(self) -> str:
        left = ", ".join(self.matched) or "-"
        right = ", ".join(self.produced) or "-"
        return f"{self.rule}: {left} -> {right}"


def make(rule: str, matched: Iterable[str], produced: Iterable[str]) -> Rewrite:
    """A Rewrite with at most `MAX_NAMES` names per side."""
    m, p = tuple(matched), tuple(produced)
    cut = max(0, len(m) - MAX_NAMES) + max(0, len(p) - MAX_NAMES)
    return Rewrite(str(rule), m[:MAX_NAMES], p[:MAX_NAMES], cut)


def node_id(function: str, name: str) -> str:
    """The graph model's id of a binding `name` of `function` (a named weight, `$w`,
    is its own id)."""
    return name if name.startswith("$") else f"{function}/{name}"


def from_record(record: Any) -> Rewrite:
    """A Rewrite from a `compiler.passes.RewriteRecord` (names turned into node ids)."""
    fn = str(record.function)
    return make(
        record.rule,
        (node_id(fn, str(n)) for n in record.matched),
        (node_id(fn, str(n)) for n in record.produced),
    )


def step_rewrites(records: Iterable[Any]) -> tuple[Rewrite, ...]:
    """A step's rewrites from its snapshot's: `compiler.passes.RewriteRecord` items
    (names turned into node ids) or Rewrites already (another compiler's recorder)."""
    return tuple(r if isinstance(r, Rewrite) else from_record(r) for r in records)


# ----- summaries ------------------------------------------------------------------------------


def rule_counts(rewrites: Iterable[Rewrite]) -> dict[str, int]:
    """Each rule with how many times it fired, the most frequent first (ties: first seen)."""
    counts = Counter(r.rule for r in rewrites)
    return dict(counts.most_common())


def rule_doc(rule: str, compiler: str = "passlens") -> str:
    """What a rule does, in one line, as `compiler`'s adapter says (`Adapter.rule_doc`:
    passlens's reads its pass's rule table, for `pass/rule`); "" for a rule it has no words
    for (another compiler's pattern, a rule no table of this passlens has, an old file)."""
    return get_adapter(compiler).rule_doc(rule) if is_adapter_name(compiler) else ""


def rewrites_of(step: Any, node: str) -> list[Rewrite]:
    """The rewrites of `step` that produced `node` (a node id of the step) or matched it
    (a node id of the step before)."""
    return [r for r in step.rewrites if node in r.produced or node in r.matched]


@dataclass(frozen=True)
class Why:
    """Why a node is what it is: `rewrite` (its rule) fired in `step`; `how` is
    `produced` (the rule made this node), `reused` (the rule put this existing node in
    place of what it matched), `input` (the rule made `via`, an input of this node,
    which the pass then rebuilt) or `put-input` (the rule put the existing node `via` in
    place of this node's input)."""

    step: Any
    rewrite: Rewrite
    how: str = "produced"
    via: str = ""

    def __str__(self) -> str:
        where = f"#{self.step.index} {self.step.name}"
        if self.how == "reused":
            what = _names_text(self.rewrite.matched) or "a node"
            return f"rule {self.rewrite.rule} at {where} put it in place of {what}"
        if self.how == "input":
            return f"its input {self.via} was made by rule {self.rewrite.rule} at {where}"
        if self.how == "put-input":
            what = _names_text(self.rewrite.matched) or "another node"
            via, rule = self.via, self.rewrite.rule
            return f"rule {rule} at {where} made {via} its input in place of {what}"
        return f"made by rule {self.rewrite.rule} at {where}"


def _names_text(names: tuple[str, ...]) -> str:
    """`a, b, c` for at most `MAX_WHY_NAMES` names, then `and N more`."""
    text = ", ".join(names[:MAX_WHY_NAMES])
    more = len(names) - MAX_WHY_NAMES
    return f"{text} and {more} more" if more > 0 else text


def _cut(line: str) -> str:
    """A line of `whys` cut to `MAX_WHY_CHARS` characters, with a note."""
    if len(line) <= MAX_WHY_CHARS:
        return line
    return f"{line[:MAX_WHY_CHARS]}… ({len(line) - MAX_WHY_CHARS:,} more characters)"


def _objects_before(step: Any) -> set[int] | dict:
    """The ids of the IR objects of the step before `step` (what its rules could reuse)."""
    prev = step.previous
    return prev.object_ids if prev is not None else {}


_INDEX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _made_by(trace: Any) -> dict[int, tuple[Any, Rewrite]]:
    """id(IR object) -> (step, rewrite) for every node a rule produced in `trace` (built
    once per trace; objects are kept alive by the trace's modules, so ids are stable)."""
    index = _INDEX.get(trace)
    if index is None:
        index = {}
        for s in trace.steps:
            if not s.rewrites:
                continue
            objects = {nid: oid for oid, nid in s.object_ids.items()}  # the last, as graph.nodes
            older = _objects_before(s)
            for r in s.rewrites:
                for nid in r.produced:
                    oid = objects.get(nid)
                    if oid is not None and oid not in older:  # reused: not made here
                        index[oid] = (s, r)
        _INDEX[trace] = index
    return index


_WHYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _whys_of(step: Any) -> _Whys:
    w = _WHYS.get(step)
    if w is None or w.count != len(step.rewrites):
        w = _WHYS[step] = _Whys(step)
    return w


def why(step: Any, node: str) -> Why | None:
    """Why `node` (a node id of `step`) is what it is: the rule and the step that
    produced it (this step, or the earlier step whose rule made the very same node object),
    else, for a node this step rebuilt, the rule of this step that made one of its inputs;
    None when no rule is on record for it."""
    return _whys_of(step).of(node)


def whys(step: Any) -> dict[str, str]:
    """Why every node of `step` that has an answer is what it is, as text, by node id:
    `why`, then the rules behind what that rule matched (`origin`), one a line
    (at most four lines, each cut at `MAX_WHY_CHARS` characters with a note)."""
    if not step.rewrites and (step.trace is None or not any(s.rewrites for s in step.trace)):
        return {}
    w = _whys_of(step)
    out = {}
    for nid, n in step.graph.nodes.items():
        if n.kind in ("input", "param", "output"):
            continue
        found = w.of(nid)
        if found is None:
            continue
        lines = [str(found)]
        if found.how not in ("input", "put-input"):
            chain = origin(step, nid, limit=4)
            lines += [
                f"from {src.rewrite.matched[0]}, {w2}"
                for src, w2 in zip(chain, chain[1:], strict=False)
            ]
        out[nid] = "\n".join(map(_cut, lines))
    return out


def origin(step: Any, node: str, limit: int = 8) -> list[Why]:
    """The rules behind `node` of `step`, newest first: the rule that made it, then the
    rule that made the root it matched, and so on back through the steps (at most
    `limit`). E.g. a folded constant: `fold-constant/...` from a `broadcast_to` that a
    rule of an earlier pass made."""
    out: list[Why] = []
    while step is not None and len(out) < limit:
        w = why(step, node)
        if w is None or w.how in ("input", "put-input"):
            break  # no rule made it (an input's rule is not this node's)
        out.append(w)
        if w.how == "reused" or not w.rewrite.matched:
            break  # the node is older than the rule: what it matched is another story
        step, node = w.step.previous, w.rewrite.matched[0]
    return out


def _done_by(made: Any, step: Any) -> bool:
    """Whether `made` had run when `step`'s module was made: an earlier step, the step
    itself, or a pass nested in it (a pipeline's step comes before its passes)."""
    if made.index <= step.index:
        return True
    steps, parent = step.trace.steps, made.parent
    while parent is not None and parent > step.index:
        parent = steps[parent].parent
    return parent == step.index


class _Whys:
    """`why` for the nodes of one step, with what it needs computed once."""

    def __init__(self, step: Any) -> None:
        self.step = step
        self.count = len(step.rewrites)
        self.graph = step.graph
        self.produced = {nid: r for r in reversed(step.rewrites) for nid in r.produced}
        self.made_by = _made_by(step.trace) if step.trace is not None else {}
        self.inputs: dict[str, list[str]] | None = None

    def of(self, node: str) -> Why | None:
        obj = getattr(self.graph.nodes.get(node), "obj", None)
        r = self.produced.get(node)
        if r is not None:
            if obj is not None and id(obj) in _objects_before(self.step):
                return Why(self.step, r, "reused")
            return Why(self.step, r)
        if obj is not None:
            found = self.made_by.get(id(obj))
            if found is not None and _done_by(found[0], self.step):
                return Why(found[0], found[1])
        if self.produced:
            if self.inputs is None:
                self.inputs = {}
                for e in self.graph.edges:
                    self.inputs.setdefault(e.dst, []).append(e.src)
            for src in self.inputs.get(node, ()):
                if src in self.produced:
                    old = getattr(self.graph.nodes.get(src), "obj", None)
                    how = "input" if id(old) not in _objects_before(self.step) else "put-input"
                    return Why(self.step, self.produced[src], how, src)
        return None


__all__ = [
    "MAX_NAMES",
    "Rewrite",
    "Why",
    "from_record",
    "make",
    "origin",
    "node_id",
    "rewrites_of",
    "rule_counts",
    "rule_doc",
    "step_rewrites",
    "why",
    "whys",
]
