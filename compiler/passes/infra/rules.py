"""Rewrite rules as data, and the record of every rule application.

A `Rule` is a name, a `Pattern` and a rewrite. A pattern says which nodes a rule
looks at: their kind (a Call by default), the op names of a call, and a predicate; a rewrite
returns the replacement of a matched node, or None to leave it (the next rule of the table is
then tried). A pass built from rules hands its table to the rewriter as `Rules`, which
tries, for each binding, the rules whose pattern matches, in table order::

    RULES = rule_table(  # registered: rule_tables() lists every pass's rules
        "canonicalize-bindings",
        Rule("identity", op("identity"), lambda n, ctx: n.args[0], "identity(x) -> x"),
        ...
    )
    rules = Rules("canonicalize-bindings", RULES, ctx)  # ctx: options and state of one run
    rewrite_module(module, lambda name, fn: rules, pass_name)

A pass that is not a walk of the rewriter (fuse-ops' merges) applies its table with
`Rules.fire` and records what happened with `note`.

Inside `collect_rewrites` every rule application of every pass run on this thread
(this context) appends a `RewriteRecord`: the rule (`pass/rule`), the nodes it matched
(names in the module before the pass, the root first) and the nodes it produced (names in the
module after the pass, the replacement of the root first; nodes the pass itself removed again
are left out). Outside it nothing is recorded and nothing is paid.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from compiler.ir.nodes import (
    Call,
    Constant,
    Expr,
    Function,
    Module,
    Tuple,
    TupleGetItem,
    function_constants,
)
from compiler.ir.printer import value_names
from compiler.passes.infra.redefinition import PassRegistrationError, where_defined

Rewrite = Callable[[Any, Any], "Expr | None"]


@dataclass(frozen=True)
class Pattern:
    """Which nodes a rule looks at: of class `kind`, calling one of `ops` (calls only;
    None: any op), for which `where(node, ctx)` holds (None: all). `also(node)` gives the
    other nodes the rule reads besides the root (a tuple item's tuple), for the record."""

    kind: type = Call
    ops: frozenset[str] | None = None
    where: Callable[[Any, Any], bool] | None = None
    also: Callable[[Any], tuple[Expr, ...]] | None = None

    def matches(self, node: Expr, ctx: Any = None) -> bool:
        """Whether `node` is one this pattern describes."""
        if not isinstance(node, self.kind):
            return False
        if self.ops is not None and node.op not in self.ops:
            return False
        return self.where is None or bool(self.where(node, ctx))


def op(*names: str, where=None, also=None) -> Pattern:
    """A call of one of the ops `names` (none given: any op) for which `where` holds."""
    return Pattern(Call, frozenset(names) if names else None, where, also)


def kind(cls: type, where=None, also=None) -> Pattern:
    """A node of class `cls` (Tuple, TupleGetItem, If, FuncCall ...) for which `where`
    holds."""
    return Pattern(cls, None, where, also)


def _item_of_built_tuple(n: TupleGetItem, ctx: Any) -> bool:
    return isinstance(n.tuple_value, Tuple)


# an item of a tuple built in place, ``(a, b)[0]`` (the tuple is read too, for the record)
ITEM_OF_TUPLE = kind(TupleGetItem, _item_of_built_tuple, lambda n: (n.tuple_value,))


@dataclass(frozen=True)
class Rule:
    """A named local rewrite: `rewrite(node, ctx)` for a node `pattern` matches returns its
    replacement (new nodes over its operands, or an existing value), or None to keep it.
    `doc` says what it does in one line (`identity(x) -> x`), for views and listings."""

    name: str
    pattern: Pattern
    rewrite: Rewrite
    doc: str = ""

    def __post_init__(self):
        if not self.name or "/" in self.name:
            raise ValueError(f"a rule needs a name without '/', got {self.name!r}")


_TABLES: dict[str, tuple[Rule, ...]] = {}
_TABLE_WHERE: dict[str, tuple[str, str]] = {}  # pass name -> (module, file:line) that made it


def rule_table(pass_name: str, *rules: Rule, owner: type | None = None) -> tuple[Rule, ...]:
    """Register `rules` as the rule table of pass `pass_name` (what `rule_tables`
    lists), tried in this order; returns them. The module that registered a pass's table may
    register it again (a notebook cell run again, a module reloaded: the new table replaces
    the old one, quietly: a redefined pass says so itself, `register_pass`); another module
    may not. `owner`: the pass class the table belongs to, when it is not the caller's module
    that defines it (a `RulePass` registers its table as its class's)."""
    names = [r.name for r in rules]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{pass_name}: rules named twice: {', '.join(dup)}")
    if owner is not None:
        module, where = owner.__module__, where_defined(owner)
    else:
        caller = sys._getframe(1)
        module = str(caller.f_globals.get("__name__", "?"))
        where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    old = _TABLE_WHERE.get(pass_name)
    if _TABLES.get(pass_name) == rules and old is not None and old[0] == module:
        return rules  # the same table again: nothing to say
    if old is not None and pass_name in _TABLES:
        if old[0] != module:
            raise PassRegistrationError(
                f"the rule table of pass {pass_name!r} is registered twice: by {old[0]} "
                f"({old[1]}) and by {module} ({where}); give one of the passes another name"
            )
    _TABLES[pass_name] = rules
    _TABLE_WHERE[pass_name] = (module, where)
    return rules


def rule_tables() -> dict[str, tuple[Rule, ...]]:
    """The rule table of every pass built from rules, by pass name (a record's rule is
    `pass/rule` of one of these)."""
    return dict(_TABLES)


class Rules:
    """A pass's rule table applied with a context `ctx` (the pass's options and state, given
    to every pattern and rewrite). Called on a node it returns the first replacement a
    matching rule gives (so it is a plain rule for `compiler.passes.infra.rewrite`)."""

    def __init__(self, pass_name: str, rules: Sequence[Rule], ctx: Any = None):
        names = [r.name for r in rules]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"{pass_name}: rules named twice: {', '.join(sorted(dup))}")
        self.pass_name = pass_name
        self.rules = tuple(rules)
        self.ctx = ctx
        # rules by op (calls with listed ops) and by node class (the others), in table order
        self._by_op: dict[str, list[tuple[int, Rule]]] = {}
        self._other: list[tuple[int, Rule]] = []
        for i, r in enumerate(self.rules):
            if r.pattern.kind is Call and r.pattern.ops is not None:
                for name in r.pattern.ops:
                    self._by_op.setdefault(name, []).append((i, r))
            else:
                self._other.append((i, r))
        self._cache: dict[tuple[type, str | None], tuple[Rule, ...]] = {}

    def candidates(self, node: Expr) -> tuple[Rule, ...]:
        """The rules whose kind and ops fit `node`, in table order."""
        key = (type(node), node.op if isinstance(node, Call) else None)
        found = self._cache.get(key)
        if found is None:
            pairs = [p for p in self._other if isinstance(node, p[1].pattern.kind)]
            if key[1] is not None:
                pairs += self._by_op.get(key[1], [])
            found = self._cache[key] = tuple(r for _, r in sorted(pairs, key=lambda p: p[0]))
        return found

    def fire(self, node: Expr) -> tuple[Rule, Expr] | None:
        """The first rule that rewrites `node` and its replacement, or None."""
        ctx = self.ctx
        for rule in self.candidates(node):
            where = rule.pattern.where
            if where is not None and not where(node, ctx):
                continue
            out = rule.rewrite(node, ctx)
            if out is not None and out is not node:
                return rule, out
        return None

    def __call__(self, node: Expr) -> Expr | None:
        fired = self.fire(node)
        return None if fired is None else fired[1]


# ===== the record of rule applications ==========================================================


@dataclass(frozen=True)
class RewriteRecord:
    """One rule application: `rule` is `pass/rule`; `matched` the names (in the module
    before the pass) of the nodes it matched, the root first; `produced` the names (in the
    module after the pass) of the nodes it made, the root's replacement first; `function`
    the function it happened in. A name is a binding's or parameter's name as the IR text
    prints it (without `%`), or `$name` for a named weight."""

    rule: str
    matched: tuple[str, ...]
    produced: tuple[str, ...]
    function: str


@dataclass
class Application:
    """A rule application as it happened, before names are known: the nodes themselves (kept
    alive until the pass has finished and they are named)."""

    rule: str
    function: str
    matched: tuple[Expr, ...]
    produced: tuple[Expr, ...]


@dataclass
class _Frame:
    """The applications of the pass being run (names are given when it has finished)."""

    applications: list[Application] = field(default_factory=list)


_SINK: ContextVar[list[RewriteRecord] | None] = ContextVar("passlens_rewrites", default=None)
# the printed names of the functions seen while collecting: id(fn) -> (fn, names). The module
# after one pass is the one before the next, and unchanged functions are shared, so most
# functions are named once.
_NAMES: ContextVar[dict[int, tuple[Function, dict[int, str]]] | None] = ContextVar(
    "passlens_rewrite_names", default=None
)
_NAMES_KEPT = 32
_FRAME: ContextVar[_Frame | None] = ContextVar("passlens_rewrite_frame", default=None)


@contextlib.contextmanager
def collect_rewrites() -> Iterator[list[RewriteRecord]]:
    """Record every rule application of the passes run inside (on this thread / context) in
    the list yielded, as `RewriteRecord` items in the order they happened."""
    out: list[RewriteRecord] = []
    token, names = _SINK.set(out), _NAMES.set({})
    try:
        yield out
    finally:
        _SINK.reset(token)
        _NAMES.reset(names)


def recording() -> bool:
    """Whether rule applications are being collected."""
    return _SINK.get() is not None


def current_frame() -> _Frame | None:
    """Where the pass being run notes its rule applications (None: not recording)."""
    return _FRAME.get()


def note(rule: str, function: str, matched: Sequence[Expr], produced: Sequence[Expr]) -> None:
    """Note one rule application of the pass being run (no-op when not recording)."""
    frame = _FRAME.get()
    if frame is not None:
        frame.applications.append(Application(rule, function, tuple(matched), tuple(produced)))


@contextlib.contextmanager
def pass_frame() -> Iterator[_Frame | None]:
    """Around one pass application: a fresh frame when recording (else None)."""
    if _SINK.get() is None:
        yield None
        return
    frame = _Frame()
    token = _FRAME.set(frame)
    try:
        yield frame
    finally:
        _FRAME.reset(token)


def function_names(fn: Function) -> dict[int, str]:
    """The printed name of every parameter and bound node of `fn` (by id), as the IR text
    and the graph view name them."""
    return value_names(fn)


def _name(e: Expr, names: dict[int, str]) -> str | None:
    if isinstance(e, Constant):
        return "$" + e.name if e.name is not None else None
    return names.get(id(e))


def _read_weights(fn: Function) -> set[int]:
    """Ids of the named weights `fn` reads."""
    return {id(c) for c in function_constants(fn) if c.name is not None}


def finish_frame(frame: _Frame, before: Module, after: Module) -> list[RewriteRecord]:
    """The frame's applications as records named in `before` / `after`, appended to the
    collecting list."""
    sink = _SINK.get()
    records: list[RewriteRecord] = []
    if not frame.applications:
        return records
    cache = _NAMES.get()
    if cache is None:
        cache = {}

    def names(module: Module, fname: str) -> dict[int, str]:
        fn = module.functions.get(fname)
        if fn is None:
            return {}
        if id(fn) not in cache:
            if len(cache) >= _NAMES_KEPT:
                del cache[next(iter(cache))]
            cache[id(fn)] = (fn, function_names(fn))
        return cache[id(fn)][1]

    read: dict[str, set[int]] = {}

    def weights(module: Module, fname: str) -> set[int]:
        """The weights the function reads after the pass (a folded one may be dead)."""
        if fname not in read:
            fn = module.functions.get(fname)
            read[fname] = _read_weights(fn) if fn is not None else set()
        return read[fname]

    for app in frame.applications:
        old, new = names(before, app.function), names(after, app.function)
        matched = _unique(_name(e, old) for e in app.matched)
        produced = _unique(
            _name(e, new)
            for e in app.produced
            if not isinstance(e, Constant) or id(e) in weights(after, app.function)
        )
        records.append(RewriteRecord(app.rule, matched, produced, app.function))
    frame.applications.clear()
    if sink is not None:
        sink.extend(records)
    return records


def _unique(names) -> tuple[str, ...]:
    """The names given (None left out), each once, in order."""
    return tuple(dict.fromkeys(n for n in names if n is not None))


__all__ = [
    "Pattern",
    "RewriteRecord",
    "Rule",
    "Rules",
    "collect_rewrites",
    "rule_table",
    "rule_tables",
    "kind",
    "op",
    "recording",
]
