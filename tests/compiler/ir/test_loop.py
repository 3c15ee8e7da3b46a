"""The Loop node (compiler/ir/nodes.py): a loop over a private body function. Its text form
round-trips, the verifier names what is wrong with a body, structural equality sees the
carried count, passes keep the body (never inlined, never dropped), a trace with a Loop
saves and loads, and close_over splits a body from the values it reads."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.interpret import run
from compiler.ir import (
    Loop,
    Var,
    call,
    parse,
    structural_equal,
    tensor,
    verify,
)
from compiler.ir.closure import close_over
from compiler.ir.nodes import IRError, Tuple
from compiler.ir.verify import VerifyError

TEXT = """
def @main(%x: f32[n, 3], %trips: i64[]) -> (f32[n, 3], f32[?, n, 3]) {
  %r: (f32[n, 3], f32[?, n, 3]) = loop @body(%trips, const(bool[], true), %x, %x, carried=1)
  return %r
}

def @body(%i: i64[], %c: bool[], %acc: f32[n, 3], %x: f32[n, 3])
    -> (bool[], f32[n, 3], f32[n, 3]) attrs {private = true} {
  %a: f32[n, 3] = add(%acc, %x)
  %t: (bool[], f32[n, 3], f32[n, 3]) = (%c, %a, %a)
  return %t
}
"""


def _module():
    return parse(TEXT)


def test_text_round_trips_and_runs():
    m = _module()
    verify(m)
    assert "loop @body(%trips, const(bool[], true), %x, %x, carried=1)" in str(m)
    again = parse(str(m))
    assert structural_equal(m, again)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    final, scanned = run(m, x, np.array(3, np.int64))
    np.testing.assert_array_equal(final, 4 * x)
    np.testing.assert_array_equal(scanned, np.stack([2 * x, 3 * x, 4 * x]))
    final, scanned = run(m, x, np.array(0, np.int64))
    assert scanned.shape == (0, 2, 3)  # no iteration: the per-iteration shape from the body
    np.testing.assert_array_equal(final, x)


def test_structural_equality_sees_the_carried_count():
    a = _module()
    b = parse(TEXT.replace("carried=1", "carried=1 "))
    assert structural_equal(a, b)
    loop = next(n for n in a.main.iter_nodes() if isinstance(n, Loop))
    assert loop.num_carried == 1 and loop.num_scan == 1
    assert loop.max_trips is a.main.params[1] and loop.captured == (a.main.params[0],)


@pytest.mark.parametrize(
    "edits, message",
    [
        (
            [
                ("%i: i64[], %c: bool[]", "%i: i64[], %c: i64[]"),
                ("(%c, %a, %a)", "(const(bool[], true), %a, %a)"),
            ],
            "body parameter 1 must be a scalar bool, got i64",
        ),
        (
            [("f32[?, n, 3]", "f32[?, 3]")],
            "scanned output 0 is annotated f32.., 3., the body yields",
        ),
        ([("carried=1)", "carried=2)")], "carried value 1 is annotated"),
        (
            [("(%c, %a, %a)", "(%c, %x, %a)"), ("%a: f32[n, 3] = add", "%a: f32[n, 3] = add")],
            None,  # yields x as the carried value: still well typed
        ),
    ],
)
def test_the_verifier_names_a_broken_loop(edits, message):
    text = TEXT
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    if message is None:
        verify(parse(text))
        return
    with pytest.raises(VerifyError, match=message):  # parse verifies what it reads
        verify(parse(text))


def test_a_loop_over_a_missing_body_is_a_clear_problem():
    text = TEXT.replace("loop @body(", "loop @nobody(")
    with pytest.raises(VerifyError, match="the body is not in the module"):
        verify(parse(text))


def test_loop_arguments_are_checked_when_built():
    x = Var("x", tensor([3]))
    with pytest.raises(IRError, match="max_trips must be a scalar integer"):
        Loop("body", [x, x, x], _tuple([3]), 1)
    n = Var("n", tensor([], "int64"))
    with pytest.raises(IRError, match="cond must be a scalar bool"):
        Loop("body", [n, n, x], _tuple([3]), 1)
    c = Var("c", tensor([], "bool"))
    with pytest.raises(IRError, match="takes max_trips, cond and 2 carried values"):
        Loop("body", [n, c, x], _tuple([3], [3]), 2)


def _tuple(*shapes):
    from compiler.ir import TupleType

    return TupleType([tensor(s) for s in shapes])


def test_passes_keep_the_body_and_never_inline_it():
    from compiler import passes

    m = _module()
    for spec in ("inline-private-functions", "dead-code-elimination", "default"):
        out = passes.run(m, spec).module
        assert "body" in out.functions, spec
        assert any(isinstance(n, Loop) for n in out.main.iter_nodes()), spec
        x = np.ones((2, 3), np.float32)
        np.testing.assert_array_equal(run(out, x, np.array(2, np.int64))[0], 3 * x)


def test_infer_types_keeps_the_loop_type():
    from compiler import passes

    out = passes.run(_module(), "infer-types").module
    loop = next(n for n in out.main.iter_nodes() if isinstance(n, Loop))
    assert str(loop.ty) == "(f32[n, 3], f32[?, n, 3])"


def test_a_trace_with_a_loop_saves_and_loads(tmp_path):
    import explorer

    trace = explorer.explore(_module(), pipeline="default")
    path = tmp_path / "loop.passlens"
    trace.save(path)
    loaded = explorer.load(path)
    assert structural_equal(loaded.steps[-1].module, trace.steps[-1].module)
    graph = trace.steps[0].graph
    ops = {n.op for n in graph.nodes.values()}
    assert "loop @body" in ops


def test_close_over_captures_outer_values_and_hoists_invariants():
    w = Var("w", tensor([3]))
    outer = call("exp", w)  # computed before the loop
    invariant = call("add", w, w)  # reads no body parameter: hoisted, captured as one value
    s = Var("s", tensor([3]))
    body_out = call("add", call("multiply", s, outer), invariant)
    fn, captured = close_over([s], Tuple([body_out]))
    assert {id(c) for c in captured} == {id(outer), id(invariant)}
    assert len(fn.params) == 3 and fn.params[0] is s
    assert [b.op for b in fn.bindings if hasattr(b, "op")] == ["multiply", "add"]
    verify(fn)
    w_val = np.array([1.0, 2.0, 3.0], np.float32)
    s_val = np.array([0.5, 0.5, 0.5], np.float32)
    args = {id(outer): np.exp(w_val), id(invariant): 2 * w_val}
    (got,) = run(fn, s_val, *[args[id(c)] for c in captured])
    np.testing.assert_allclose(got, s_val * np.exp(w_val) + 2 * w_val, rtol=1e-6)
