"""A pass made of one rule table, the shortest way to write a peephole pass of your own::

    from compiler.ir import Call
    from compiler.passes import Rule, RulePass, op, register_pass

    @register_pass
    class FastGelu(RulePass):
        name = "fast-gelu"
        rules = (
            Rule("gelu-to-relu", op("gelu"), lambda n, ctx: Call("relu", n.args),
                 "gelu(x) -> relu(x)"),
        )

The rewriter tries the rules on every binding of every function, in table order (a rewrite
returning None leaves the node to the next rule), and records each application (the
explorer's rewrites tab). Nodes a rewrite no longer uses stay where they are:
`dead-code-elimination` (in `default`) removes them. The table is registered under the
pass's name when the pass runs, as its class's (a class defined again replaces it), so views
can show each rule's line of doc.
"""

from __future__ import annotations

from typing import ClassVar

from compiler.ir.nodes import Module
from compiler.passes.infra.manager import Pass, PassContext
from compiler.passes.infra.rewrite import rewrite_module
from compiler.passes.infra.rules import Rule, Rules, rule_table


class RulePass(Pass):
    """Base class of a pass that applies one rule table (`rules`) with the rewriter.
    Subclasses set `name` and `rules`; a dataclass subclass's options reach the rules as
    `ctx` (the pass itself)."""

    rules: ClassVar[tuple[Rule, ...]] = ()

    def transform(self, module: Module, ctx: PassContext) -> Module:
        table = tuple(self.rules)
        bad = [type(r).__name__ for r in table if not isinstance(r, Rule)]
        if bad:
            raise TypeError(f"{self.name}: rules holds Rule objects, not {', '.join(bad)}")
        rule_table(self.name, *table, owner=type(self))  # the doc lines the views show
        rules = Rules(self.name, table, self)
        return rewrite_module(module, lambda name, fn: rules, self.name)
