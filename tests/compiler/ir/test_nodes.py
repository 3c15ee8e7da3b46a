"""IR nodes: immutability, replace(), type inference on construction, bindings collection."""

import copy

import numpy as np
import pytest

import compiler.ops  # noqa: F401
from compiler.ir import (
    ANY,
    Block,
    Call,
    Constant,
    FuncCall,
    Function,
    If,
    IRError,
    Module,
    Provenance,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Var,
    call,
    collect_bindings,
    function_constants,
    sym,
    verify,
)
from compiler.ir.nodes import children

n = sym("n")
F32_2 = TensorType((2,), "float32")


def test_nodes_are_immutable_and_never_copied():
    x = Var("x", F32_2)
    y = call("relu", x)
    with pytest.raises(AttributeError, match="replace"):
        y.op = "exp"
    with pytest.raises(AttributeError):
        del y.args
    assert copy.copy(y) is y and copy.deepcopy(y) is y


def test_replace_returns_self_when_nothing_changes():
    x = Var("x", F32_2)
    y = call("add", x, x, name="y", prov=Provenance(module_path="a"))
    assert y.replace() is y
    assert y.replace(args=(x, x)) is y  # a new tuple of the same objects
    assert y.replace(name="y", prov=Provenance(module_path="a")) is y
    z = y.replace(name="z")
    assert z is not y and z.name == "z" and z.args == y.args and z.ty == y.ty
    with pytest.raises(TypeError, match="no field 'color'"):
        y.replace(color="red")


def test_call_infers_its_type_with_broadcasting_over_symbolic_dims():
    x = Var("x", TensorType((n, 1, 4), "float32"))
    b = Var("b", TensorType((3, 1), "float32"))
    y = call("add", x, b)
    assert y.ty == TensorType((n, 3, 4), "float32")
    assert call("less", x, b).ty == TensorType((n, 3, 4), "bool")
    assert call("cast", x, dtype="f16").ty == TensorType((n, 1, 4), "float16")
    assert dict(call("clip", x, min=0).attrs) == {"min": 0.0, "max": None}


def test_call_keeps_an_annotated_type_that_differs_from_inference():
    x = Var("x", F32_2)
    wrong = TensorType((3,), "float32")
    c = Call("relu", [x], ty=wrong)
    assert c.ty == wrong and c.inferred_type() == F32_2
    assert Call("relu", [x], ty=F32_2).ty == F32_2


def test_call_errors_say_what_and_where():
    x = Var("x", F32_2)
    with pytest.raises(IRError, match="unknown op 'rleu' \\(did you mean relu"):
        call("rleu", x)
    prov = Provenance(module_path="stages.1.fc", source_op="aten.add.Tensor")
    with pytest.raises(IRError, match=r"add\(f32\[2\], f32\[3\]\): .*broadcast.* at stages.1.fc"):
        call("add", x, Var("y", TensorType((3,), "float32")), prov=prov)
    with pytest.raises(IRError, match="add takes inputs"):
        call("add", x)
    with pytest.raises(IRError, match="no attribute"):
        call("relu", x, alpha=1.0)
    with pytest.raises(IRError, match="dtype"):
        call("add", x, Var("i", TensorType((2,), "int32")))
    with pytest.raises(TypeError, match="argument 0 of relu"):
        call("relu", np.zeros(2, np.float32))


def test_constant_freezes_its_array_without_copying_read_only_ones():
    data = np.arange(3, dtype=np.float32)
    c = Constant(data, name="w")
    assert c.data is not data and not c.data.flags.writeable
    data[0] = 99  # the caller's later writes do not reach the IR
    assert c.data[0] == 0
    frozen = c.data
    assert Constant(frozen, name="v").data is frozen  # read-only: shared, never copied
    assert c.replace(name="w") is c
    assert c.ty == TensorType((3,), "float32") and c.nbytes == 12
    s = Constant.scalar(2, "int8")
    assert s.ty == TensorType((), "int8") and s.name is None and s.data.dtype == np.int8
    assert Constant(np.float16(1.5)).ty == TensorType((), "float16")


@pytest.mark.parametrize(
    "data, name, match",
    [
        (1.5, None, "numpy array"),
        ([1, 2], None, "numpy array"),
        (np.zeros(2, np.complex64), None, "not supported"),
        (np.zeros(2, np.float32), "", "non-empty string"),
    ],
)
def test_constant_rejects(data, name, match):
    with pytest.raises(TypeError, match=match):
        Constant(data, name=name)


def test_var_needs_a_name_and_a_type():
    with pytest.raises(TypeError, match="non-empty name"):
        Var("", F32_2)
    with pytest.raises(TypeError, match="must be a Type"):
        Var("x", (2,))
    with pytest.raises(TypeError, match="Provenance"):
        Var("x", F32_2, prov="model.py:1")


def test_tuples_and_get_item():
    x, y = Var("x", F32_2), Var("y", TensorType((), "int32"))
    t = Tuple([x, y])
    assert t.ty == TupleType([F32_2, TensorType((), "int32")])
    g = TupleGetItem(t, -1)
    assert g.index == 1 and g.ty == y.ty and g.operands == (t,)
    with pytest.raises(IRError, match="out of range"):
        TupleGetItem(t, 2)
    with pytest.raises(IRError, match="out of range"):
        TupleGetItem(t, True)
    with pytest.raises(IRError, match="non-tuple"):
        TupleGetItem(x, 0)


def test_if_condition_and_type():
    x = Var("x", TensorType((n, 4), "float32"))
    c = Var("c", TensorType((), "bool"))
    r = If(c, Block.of(call("relu", x)), Block.of(call("exp", x)))
    assert r.ty == x.ty and r.operands == (c,)
    one = Var("one", TensorType((1, 1), "bool"))
    assert If(one, Block([], x), Block([], x)).ty == x.ty
    y = Var("y", TensorType((n, 5), "float32"))
    assert If(c, Block([], x), Block([], y)).ty == TensorType((n, ANY), "float32")
    with pytest.raises(IRError, match="scalar bool"):
        If(Var("v", TensorType((2,), "bool")), Block([], x), Block([], x))
    with pytest.raises(IRError, match="incompatible"):
        If(c, Block([], x), Block([], Var("i", TensorType((n, 4), "int32"))))


def test_collect_bindings_orders_dependencies_first_and_skips_leaves():
    x = Var("x", F32_2)
    w = Constant(np.ones(2, np.float32), name="w")
    a = call("add", x, w)
    b = call("relu", a)
    c = call("multiply", b, a)
    assert collect_bindings([c]) == [a, b, c]
    assert collect_bindings([c], {id(a)}) == [b, c]
    fn = Function.from_output([x], c)
    assert fn.bindings == (a, b, c) and fn.ret_type == F32_2
    verify(fn)


def test_collect_bindings_is_iterative():
    x = Var("x", F32_2)
    y = x
    for _ in range(5000):
        y = call("relu", y)
    assert len(Function.from_output([x], y).bindings) == 5000


def test_if_reads_from_outside_are_bound_before_it():
    """Nodes a branch reads from outside are bound before the If; a branch's own nodes (also
    those of an If nested in it, and a yielded binding's operands) stay inside."""
    x, c = Var("x", F32_2), Var("c", TensorType((), "bool"))
    shared = call("exp", x)  # read only inside branches
    deep = call("relu", shared)  # bound inside the nested If's then-branch
    nested = If(c, Block.of(deep, [x, c, shared]), Block([], x))
    then_result = call("neg", nested)
    else_result = call("tanh", call("abs", shared))  # the yield is a binding with an operand
    top = If(c, Block.of(then_result, [shared]), Block.of(else_result, [shared]))
    fn = Function.from_output([x, c], top)
    assert fn.bindings == (shared, top)
    assert top.then_branch.bindings == (nested, then_result)
    assert nested.then_branch.bindings == (deep,)
    assert [b.op for b in top.else_branch.bindings] == ["abs", "tanh"]
    verify(fn)
    walked = list(fn.iter_nodes())
    assert walked == [
        shared,
        top,
        nested,
        deep,
        then_result,
        *top.else_branch.bindings,
    ]
    assert list(fn.iter_nodes()) == walked  # (listed once, the same every time)
    assert set(map(id, children(top))) >= {id(c), id(nested), id(then_result)}


def test_function_attributes():
    x, w = Var("x", F32_2), Var("w", F32_2)
    fn = Function.from_output([x, w], call("add", x, w), {"num_input": 1})
    assert fn.num_input == 1 and not fn.is_private
    assert Function.from_output([x], x).num_input == 1
    p = fn.with_attrs(private=True)
    assert p.is_private and p.bindings[0] is fn.bindings[0] and fn.with_attrs(num_input=1) is fn
    with pytest.raises(TypeError, match="must be Vars"):
        Function([x, "w"], [], x)


def test_module():
    x = Var("x", F32_2)
    w = Constant(np.ones(2, np.float32), name="w")
    w2 = Constant(np.zeros(2, np.float32), name="w2")
    main = Function.from_output([x], call("add", call("add", x, w2), w))
    helper = Function.from_output([x], call("multiply", x, w), {"private": True})
    mod = Module({"main": main, "helper": helper})
    assert mod.main is main and "helper" in mod and "nope" not in mod
    assert list(mod.constants()) == ["w2", "w"] and mod.constants()["w"] is w
    assert function_constants(helper) == [w]
    assert mod.with_function("main", main) is mod
    assert mod.replace(functions={"main": main, "helper": helper}) is mod
    other = mod.with_function("extra", helper)
    assert list(other.functions) == ["main", "helper", "extra"] and other["main"] is main
    assert list(other.without_function("helper").functions) == ["main", "extra"]
    with pytest.raises(KeyError, match="no function @nope \\(has @main, @helper\\)"):
        mod["nope"]
    with pytest.raises(TypeError, match="not a Function"):
        Module({"main": x})
    with pytest.raises(TypeError):
        mod.functions["x"] = main  # a read-only mapping


def test_func_call_takes_its_annotated_type():
    x = Var("x", F32_2)
    f = FuncCall("helper", [x], TupleType([F32_2]))
    assert f.ty == TupleType([F32_2]) and f.operands == (x,)
    with pytest.raises(TypeError, match="function name"):
        FuncCall("", [x], F32_2)
    with pytest.raises(TypeError, match="must be a Type"):
        FuncCall("helper", [x], None)


def test_provenance():
    p = Provenance.from_items(
        {"module": "stages.1.fc", "op": "aten.linear.default", "node": "linear_3"}
    )
    assert p.module_path == "stages.1.fc" and p.source_node == "linear_3"
    assert p.items() == [
        ("module", "stages.1.fc"),
        ("op", "aten.linear.default"),
        ("node", "linear_3"),
    ]
    assert p.describe() == "stages.1.fc (aten.linear.default, linear_3)"
    made = p.with_pass("fold-constant")
    assert made.pass_name == "fold-constant" and made.with_pass("fold-constant") is made
    assert made.describe().endswith("[made by fold-constant]")
    assert Provenance().is_empty and Provenance().describe() == "(no provenance)"
    assert Provenance(location="m.py:3").describe() == "m.py:3"
    with pytest.raises(KeyError, match="unknown provenance key"):
        Provenance.from_items({"colour": "red"})
    with pytest.raises(AttributeError):
        p.module_path = "x"
