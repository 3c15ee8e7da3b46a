"""The verifier rejects broken modules with a message and the bad line marked ``>>``."""

import numpy as np
import pytest

import compiler.ops  # noqa: F401
from compiler.ir import (
    Block,
    Call,
    Constant,
    FuncCall,
    Function,
    If,
    Module,
    TensorType,
    Tuple,
    Var,
    VerifyError,
    call,
    parse,
    sym,
    verify,
)
from compiler.ir.verify import check

F32_2 = TensorType((2,), "float32")
n = sym("n")


def failure(obj) -> tuple[VerifyError, list[str]]:
    """The VerifyError for ``obj`` and its ``>>`` marked lines (as printed, stripped)."""
    with pytest.raises(VerifyError) as e:
        verify(obj)
    marked = [
        ln.split(">>", 1)[1].strip()
        for ln in str(e.value).splitlines()
        if ln.lstrip().startswith(">>")
    ]
    return e.value, marked


def only_problem(err: VerifyError) -> str:
    assert len(err.problems) == 1, [str(p) for p in err.problems]
    assert str(err).startswith("the module breaks 1 invariant(s):\n- ")
    return str(err.problems[0])


@pytest.fixture
def x():
    return Var("x", F32_2)


def test_a_well_formed_module_passes(x):
    fn = Function.from_output([x], call("relu", call("exp", x)))
    verify(fn)
    assert check(fn) == [] and check(Module({"main": fn})) == []


def test_bound_twice(x):
    a = call("exp", x, name="a")
    b = call("relu", a, name="b")
    err, marked = failure(Function([x], [a, b, a], b))
    assert only_problem(err) == "@main: %a is bound twice"
    assert marked == ["%a: f32[2] = exp(%x)"]
    assert str(err).splitlines()[5].strip() == ">>   %a: f32[2] = exp(%x)"  # the second one


def test_used_before_bound(x):
    a = call("exp", x, name="a")
    b = call("relu", a, name="b")
    err, marked = failure(Function([x], [b, a], b))
    assert only_problem(err) == "@main: reads %a before it is bound (or it is never bound)"
    assert marked == ["%b: f32[2] = relu(%a)"]


def test_never_bound_unnamed_value_is_named_as_printed(x):
    b = call("relu", call("exp", x))
    err, marked = failure(Function([x], [b], b))
    assert only_problem(err) == "@main: reads %exp before it is bound (or it is never bound)"
    assert marked == ["%relu: f32[2] = relu(%exp)"]


def test_output_never_bound(x):
    a = call("exp", x, name="a")
    err, marked = failure(Function([x], [], a))
    assert only_problem(err) == "@main: reads %a before it is bound (or it is never bound)"
    assert marked == ["return %a"]


def test_var_of_another_function(x):
    other = Var("x", F32_2)  # same name, another object: a parameter of some other function
    s = call("add", x, other, name="s")
    err, marked = failure(Module({"main": Function([x], [s], s)}))
    assert only_problem(err) == "@main: reads %x_1, which is not a parameter of @main"
    assert marked == ["%s: f32[2] = add(%x, %x_1)"]


def test_wrong_annotated_type(x):
    a = call("exp", x, name="a")
    bad = Call("relu", [a], ty=TensorType((3,), "float32"), name="bad")
    err, marked = failure(Function([x], [a, bad], a))
    assert only_problem(err) == "@main: relu is annotated f32[3] but its inputs give f32[2]"
    assert marked == ["%bad: f32[3] = relu(%a)"]


@pytest.mark.parametrize("num_input", [3, -1, True, "1", 1.0])
def test_bad_num_input_marks_the_signature(x, num_input):
    a = call("exp", x, name="a")
    err, marked = failure(Function([x], [a], a, attrs={"num_input": num_input}))
    assert only_problem(err) == f"@main: num_input = {num_input!r}, but the function has 1 params"
    assert len(marked) == 1 and marked[0].startswith(
        "def @main(%x: f32[2]) -> f32[2] attrs {num_input = "
    )


def test_parameters_must_be_distinct(x):
    err, marked = failure(Function([x, Var("x", F32_2)], [], x))
    assert only_problem(err) == "@main: parameter name(s) used twice: x"
    assert marked == ["def @main(%x: f32[2], %x_1: f32[2]) -> f32[2] {"]
    err, _ = failure(Function([x, x], [], x))
    assert [str(p) for p in err.problems] == [
        "@main: a parameter appears twice",
        "@main: parameter name(s) used twice: x",
    ]


def test_leaves_are_never_bindings(x):
    err, marked = failure(Function([x], [x], x))
    assert only_problem(err) == "@main: a Var cannot be a binding"
    assert marked == ["%x: f32[2] = %x"]
    w = Constant(np.ones(2, np.float32), name="w")
    err, marked = failure(Function([x], [w], x))
    assert only_problem(err) == "@main: a Constant cannot be a binding"
    assert marked == ["%w: f32[2] = $w"]


@pytest.fixture
def helper():
    h = Var("h", TensorType((n, 2), "float32"))
    return Function.from_output([h], call("exp", h), {"private": True})


def _calling(helper, fcall, params):
    return Module({"main": Function(params, [fcall], fcall), "helper": helper})


def test_func_call_to_a_missing_function(x, helper):
    f = FuncCall("nothere", [x], F32_2, name="f")
    err, marked = failure(_calling(helper, f, [x]))
    assert only_problem(err) == "@main: calls @nothere, which is not in the module"
    assert marked == ["%f: f32[2] = call @nothere(%x)"]


def test_func_call_with_wrong_arity(helper):
    y = Var("y", TensorType((3, 2), "float32"))
    f = FuncCall("helper", [y, y], y.ty, name="f")
    err, marked = failure(_calling(helper, f, [y]))
    assert only_problem(err) == "@main: calls @helper with 2 argument(s), it takes 1"
    assert marked == ["%f: f32[3, 2] = call @helper(%y, %y)"]


@pytest.mark.parametrize(
    "arg_type, message",
    [
        (
            TensorType((3, 2), "int32"),
            "argument 0 of @helper has type i32[3, 2], parameter %h expects f32[n, 2]",
        ),
        (
            TensorType((3, 5), "float32"),
            "argument 0 of @helper has type f32[3, 5], parameter %h expects f32[n, 2]",
        ),
        (
            TensorType((2,), "float32"),
            "argument 0 of @helper has type f32[2], parameter %h expects f32[n, 2]",
        ),
    ],
)
def test_func_call_argument_type_mismatch(helper, arg_type, message):
    y = Var("y", arg_type)
    f = FuncCall("helper", [y], TensorType((3, 2), "float32"), name="f")
    err, marked = failure(_calling(helper, f, [y]))
    assert message in only_problem(err)
    assert marked == ["%f: f32[3, 2] = call @helper(%y)"]


def test_func_call_result_type_mismatch(helper):
    y = Var("y", TensorType((3, 2), "float32"))
    f = FuncCall("helper", [y], TensorType((3, 2), "float16"), name="f")
    err, marked = failure(_calling(helper, f, [y]))
    assert (
        only_problem(err)
        == "@main: call of @helper is annotated f16[3, 2], the function returns f32[n, 2]"
    )
    assert marked == ["%f: f16[3, 2] = call @helper(%y)"]


def test_func_call_to_a_symbolic_callee_is_accepted(helper):
    for ty in (
        TensorType((3, 2), "float32"),
        TensorType((sym("m"), 2), "float32"),
        TensorType(None, "float32"),
    ):
        y = Var("y", ty)
        verify(_calling(helper, FuncCall("helper", [y], TensorType((3, 2), "float32")), [y]))


@pytest.fixture
def cond():
    return Var("c", TensorType((), "bool"))


def test_a_binding_reads_a_value_of_the_other_branch(x, cond):
    t_local = call("neg", x, name="t_local")
    e_use = call("exp", t_local, name="e_use")
    r = If(cond, Block([t_local], t_local), Block([e_use], e_use), name="r")
    err, marked = failure(Function([x, cond], [r], r))
    assert only_problem(err) == "@main: reads %t_local, which is bound in another branch"
    assert marked == ["%e_use: f32[2] = exp(%t_local)"]


def test_a_branch_yields_a_value_of_the_other_branch(x, cond):
    t_local = call("neg", x, name="t_local")
    r = If(cond, Block([t_local], t_local), Block([], t_local), name="r")
    err, marked = failure(Function([x, cond], [r], r))
    assert only_problem(err) == "@main: reads %t_local, which is bound in another branch"
    text = str(err).splitlines()
    assert marked == ["yield %t_local"] and text[text.index("         } else {") + 1].startswith(
        "    >>"
    )


def test_a_value_bound_in_a_branch_is_not_visible_after_the_if(x, cond):
    t_local = call("neg", x, name="t_local")
    r = If(cond, Block([t_local], t_local), Block([], x), name="r")
    after = call("add", r, t_local, name="after")
    err, marked = failure(Function([x, cond], [r, after], after))
    assert only_problem(err) == "@main: reads %t_local, which is bound in another branch"
    assert marked == ["%after: f32[2] = add(%r, %t_local)"]


def test_if_annotated_type_must_cover_its_branches(x, cond):
    r = If(cond, Block([], x), Block([], x), ty=TensorType((3,), "float32"), name="r")
    err, marked = failure(Function([x, cond], [r], r))
    assert (
        only_problem(err) == "@main: If is annotated f32[3] but its branches give f32[2] and f32[2]"
    )
    assert marked == ["%r: f32[3] = if %c {"]
    # an annotation with unknown dims covers
    verify(Function([x, cond], [r := r.replace(ty=TensorType(None, "float32"))], r))


def test_every_problem_is_listed(x):
    y = Var("y", F32_2)
    a = call("add", x, y, name="a")
    b = call("relu", a, name="b")
    err, marked = failure(Function([x], [b, a], b, attrs={"num_input": 2}))
    assert [str(p) for p in err.problems] == [
        "@main: num_input = 2, but the function has 1 params",
        "@main: reads %a before it is bound (or it is never bound)",
        "@main: reads %y, which is not a parameter of @main",
    ]
    assert str(err).startswith("the module breaks 3 invariant(s):")
    assert marked == [
        "def @main(%x: f32[2]) -> f32[2] attrs {num_input = 2} {",
        "%b: f32[2] = relu(%a)",
        "%a: f32[2] = add(%x, %y)",
    ]


def test_context_shows_a_few_lines_around_the_bad_one(x):
    chain = [x]
    for i in range(12):
        chain.append(call("relu", chain[-1], name=f"v{i}"))
    bindings = list(chain[1:])
    bad = Call("exp", [chain[7]], ty=TensorType((5,), "float32"), name="bad")
    bindings.insert(7, bad)
    err, _ = failure(Function([x], bindings, chain[-1]))
    shown = str(err).splitlines()[2:]
    assert len(shown) == 7 and shown[3].strip() == ">>   %bad: f32[5] = exp(%v6)"
    assert (
        shown[0].strip() == "%v4: f32[2] = relu(%v3)"
        and shown[-1].strip() == "%v9: f32[2] = relu(%v8)"
    )


def test_parse_runs_the_verifier():
    text = """
    def @main(%x: f32[2]) -> f32[2] {
      %y: f32[2] = call @helper(%x, %x)
      return %y
    }
    def @helper(%h: f32[2]) -> f32[2] attrs {private = true} {
      return %h
    }
    """
    with pytest.raises(VerifyError, match="calls @helper with 2 argument"):
        parse(text)


def test_constants_and_tuples_need_no_binding(x):
    w = Constant(np.ones(2, np.float32), name="w")
    t = Tuple([x, w])
    verify(Function([x], [t], t))
    verify(Function([x], [], w))


def test_a_weight_name_holds_one_value(x):
    w = Constant(np.ones(2, np.float32), name="w")
    other = Constant(np.zeros(2, np.float32), name="w")
    a = call("add", x, w, name="a")
    b = call("add", a, other, name="b")
    err, marked = failure(Module({"main": Function([x], [a, b], b)}))
    assert only_problem(err) == (
        "@main: reads weight $w of type f32[2], but another weight named $w has other values "
        "(one name must hold one value)"
    )
    assert marked == ["%b: f32[2] = add(%a, $w)"]
    # across functions, and with another dtype
    h = Var("h", TensorType((2,), "float16"))
    half = call("add", h, Constant(np.ones(2, np.float16), name="w"), name="half")
    mod = Module({"main": Function([x], [a], a), "helper": Function([h], [half], half)})
    err, marked = failure(mod)
    assert (
        "@helper: reads weight $w of type f16[2], but another weight named $w has type f32[2]"
        in only_problem(err)
    )
    # equal copies (say, parsed twice) are the same weight
    copy = Constant(np.ones(2, np.float32), name="w")
    verify(Function.from_output([x], call("add", a, copy)))


def test_a_symbol_no_parameter_binds_is_reported_once_at_its_first_use():
    """``arange(stop=n)`` in a function whose parameters never mention ``n``: nothing could
    give ``n`` a value when the function is called."""
    text = """
    def @main(%x: f32[m]) -> i64[1, n] {
      %a: i64[n] = arange(dtype=i64, start=0, step=1, stop=n)
      %b: i64[1, n] = unsqueeze(%a, axes=[0])
      return %b
    }
    """
    with pytest.raises(VerifyError) as e:
        parse(text)
    assert only_problem(e.value) == (
        "@main: uses symbolic dim(s) n, which no parameter's type binds"
    )
    assert ">>   %a: i64[n] = arange(" in str(e.value)


def test_a_symbol_inside_an_expression_of_a_parameter_is_bound():
    parse(
        """
    def @main(%x: f32[2*n + 1]) -> i64[n] {
      %a: i64[n] = arange(dtype=i64, start=0, step=1, stop=n)
      return %a
    }
    """
    )


RECURSIVE = """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = call @f(%x)
  return %y
}
def @f(%a: f32[2]) -> f32[2] {
  %b: f32[2] = call @g(%a)
  return %b
}
def @g(%c: f32[2]) -> f32[2] {
  %d: f32[2] = relu(%c)
  %e: f32[2] = call @f(%d)
  return %e
}
def @self(%s: f32[2]) -> f32[2] {
  %t: f32[2] = call @self(%s)
  return %t
}
"""


def test_recursive_calls_are_refused():
    # once accepted: the interpreter then recursed until Python's RecursionError
    with pytest.raises(VerifyError) as e:
        parse(RECURSIVE)
    assert [str(p) for p in e.value.problems] == [
        "@g: calls @f, which leads back to @g (@f -> @g -> @f): recursive calls are not supported",
        "@self: calls itself (@self -> @self): recursive calls are not supported",
    ]
    assert ">>   %e: f32[2] = call @f(%d)" in str(e.value)
    assert ">>   %t: f32[2] = call @self(%s)" in str(e.value)


def test_a_call_chain_of_any_depth_is_checked_without_recursion():
    # 5000 functions, each calling the next, the last calling the first
    k = 5000
    text = "".join(
        f"def @f{i}(%x: f32[2]) -> f32[2] {{\n  %y: f32[2] = call @f{(i + 1) % k}(%x)\n"
        "  return %y\n}\n"
        for i in range(k)
    )
    (problem,) = check(parse(text, verify=False))
    assert problem.function == f"f{k - 1}" and "leads back to" in problem.message
    # without the back edge the chain is fine
    ok = text.replace("%y: f32[2] = call @f0(%x)", "%y: f32[2] = relu(%x)")
    assert check(parse(ok, verify=False)) == []


def test_every_error_passlens_raises_on_purpose_is_a_passlens_error():
    """One family at the API boundary; each keeps the builtin base it had."""
    import explorer
    from compiler.backend.build import BuildError
    from compiler.errors import PasslensError
    from compiler.frontend import FrontendError, UnsupportedOperatorError
    from compiler.interpret import InterpretError
    from compiler.ir.parser import ParseError
    from compiler.passes.infra.manager import PassError, PassFailed
    from compiler.passes.infra.pipeline import PipelineError
    from explorer.check import CheckError
    from passlens.cli import CLIError

    family = [
        BuildError,
        FrontendError,
        UnsupportedOperatorError,
        InterpretError,
        ParseError,
        VerifyError,
        PassError,
        PassFailed,
        PipelineError,
        CheckError,
        CLIError,
        explorer.TraceFileError,
        explorer.LimitError,
    ]
    assert all(issubclass(e, PasslensError) for e in family)
    assert explorer.PasslensError is PasslensError
    assert issubclass(ParseError, ValueError) and issubclass(explorer.TraceFileError, ValueError)
    with pytest.raises(PasslensError):
        parse("def @main(")
