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


def test_external_reads_of_an_if_are_what_its_branches_read_from_outside():
    from compiler.ir import external_reads

    x, y, add, tup, item, c, _ = _nodes()
    inner = call("exp", add)
    branch = If(c, Block([inner], inner), Block([], y))
    assert external_reads(branch) == [c, add, y]  # not `inner`, bound in the branch
    assert external_reads(add) == [x, y]


def test_substitute_enters_if_branches_and_keeps_unchanged_nodes():
    from compiler.ir import substitute

    x, y, add, tup, item, c, _ = _nodes()
    inner = call("exp", add)
    branch = If(c, Block([inner], inner), Block([], y))
    other = call("relu", x)
    z = Var("z", tensor((2, 3)))
    mapping = {id(y): z}
    out = substitute([add, branch, other], mapping)
    assert out[2] is other  # reads nothing replaced: the same object
    assert out[0].args == (x, z) and mapping[id(add)] is out[0]
    new_inner = out[1].then_branch.bindings[0]
    assert new_inner.args == (out[0],) and out[1].then_branch.result is new_inner
    assert out[1].else_branch.result is z
    seen = []
    substitute([add, branch], {}, seen.append)
    assert seen == [add, branch, inner]
