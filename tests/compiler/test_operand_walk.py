"""The one generic operand walk of the IR: ``operands`` and ``map_operands`` (issue #33)."""

import numpy as np

from compiler.ir import (
    Block,
    Constant,
    If,
    Tuple,
    TupleGetItem,
    Var,
    call,
    map_operands,
    operands,
    remap_operands,
    tensor,
)


def _nodes():
    x = Var("x", tensor((2, 3)))
    y = Var("y", tensor((2, 3)))
    add = call("add", x, y)
    tup = Tuple([add, x])
    item = TupleGetItem(tup, 0)
    c = Var("c", tensor((), "bool"))
    branch = If(c, Block([], x), Block([], y))
    return x, y, add, tup, item, c, branch


def test_operands_of_every_kind():
    x, y, add, tup, item, c, branch = _nodes()
    assert operands(add) == (x, y)
    assert operands(tup) == (add, x)
    assert operands(item) == (tup,)
    assert operands(branch) == (c,)  # branches are blocks, not operands
    assert operands(x) == () and operands(Constant(np.ones(2, "float32"))) == ()


def test_map_operands_keeps_the_node_when_nothing_changes():
    for node in _nodes():
        assert map_operands(node, lambda e: e) is node


def test_map_operands_replaces_and_keeps_name_and_annotation():
    x, y, add, tup, item, c, branch = _nodes()
    z = Var("z", tensor((2, 3)))
    named = add.replace(name="sum")
    out = map_operands(named, lambda e: z if e is y else e)
    assert out is not named and out.args == (x, z) and out.name == "sum" and out.op == "add"
    assert remap_operands(tup, {id(add): z}).fields == (z, x)
    assert remap_operands(item, {id(tup): Tuple([y])}).ty == y.ty
    c2 = Var("c2", tensor((), "bool"))
    new_if = remap_operands(branch, {id(c): c2})
    assert new_if.cond is c2 and new_if.then_branch is branch.then_branch
