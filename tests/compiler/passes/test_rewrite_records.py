"""Every rewrite rule has a Before/Expected case with its rewrite record (issue #34): run
inside ``collect_rewrites``, each case turns ``before`` into ``expected`` (as in
the pass's test_<pass>.py, whose cases are reused by id) and records exactly the rule applications
listed here: ``(rule, matched, produced)`` named as the IR text names them (matched in the
module before the pass, the root first; produced in the module after it, the root's
replacement first; nodes the pass removed again are left out). Every rule of every rule table
appears in at least one case."""

from __future__ import annotations

import threading

import pytest

from compiler import passes
from compiler.ir import parse
from compiler.passes import collect_rewrites, rule_tables
from tests.compiler.passes.helpers import RuleCase, collected_cases, verify_rule

TABLES = rule_tables()
RULE_PASSES = {
    "decompose-ops",
    "fold-constant",
    "canonicalize-bindings",
    "convert-dtype",
    "to-mixed-precision",
    "dynamic-to-static",
    "fuse-ops",
    "replica-linear-broadcast",
    "replica-relay-onnx-if",
    "replica-dynamic-to-static-squeeze",
}

# cases of this file: rules no case of a test_<pass>.py needs
BITCAST = RuleCase(
    "convert-dtype{dtype=float16}",
    "an op refusing the new dtype runs in float32 between casts",
    """
def @main(%x: i32[4]) -> f32[4] {
  %b: f32[4] = bitcast(%x, dtype=f32)
  %y: f32[4] = exp(%b)
  return %y
}""",
    """
def @main(%x: i32[4]) -> f32[4] {
  %bitcast: f32[4] = bitcast(%x, dtype=f32)
  %b: f16[4] = cast(%bitcast, dtype=f16)
  %y: f16[4] = exp(%b)
  %cast: f32[4] = cast(%y, dtype=f32)
  return %cast
}""",
)

D2S = "dynamic-to-static: "
CD = "convert-dtype{dtype=float16}: "
TMP = "to-mixed-precision"
SQ = "replica-dynamic-to-static-squeeze/"

# case id -> the records (rule, matched, produced[, function]) of its first pass, in order
RECORDS: dict[str, list[tuple]] = {
    "fold-constant: an op on unnamed constants becomes a constant named after the binding": [
        ("fold-constant/fold-call", ("e",), ("$const.e",))
    ],
    "fold-constant: a folded constant is named after its first named input and the op": [
        ("fold-constant/fold-call", ("s",), ("$w.sqrt",))
    ],
    "fold-constant: %t[0] of a tuple literal whose item is a constant is the constant": [
        ("fold-constant/fold-tuple-item", ("a", "t"), ())  # an inline literal: no name
    ],
    "fold-constant: a transpose of a shared constant only matmuls read -> the matmul reads it "
    "transposed": [
        # the transpose is matched, and removed by the pass: nothing produced but the matmul
        ("fold-constant/read-shared-transpose", ("y", "t"), ("y",))
    ],
    "fold-constant: a matmul of a constant by its own transpose folds whole": [
        ("fold-constant/fold-call", ("t",), ()),  # its constant is folded again: dead
        ("fold-constant/fold-call", ("m",), ("$w.matmul",)),
    ],
    "canonicalize-bindings,dead-code-elimination: (a, b)[0] -> a": [
        ("canonicalize-bindings/item-of-tuple", ("a", "t"), ("x",))
    ],
    "canonicalize-bindings,dead-code-elimination: (t[0], t[1]) of a 2-tuple t -> t": [
        ("canonicalize-bindings/tuple-of-items", ("t", "a", "b"), ("s",))
    ],
    "canonicalize-bindings: identity(x) -> x": [("canonicalize-bindings/identity", ("i",), ("x",))],
    "canonicalize-bindings: cast to the dtype it has -> x": [
        ("canonicalize-bindings/no-op-cast", ("c",), ("x",))
    ],
    "canonicalize-bindings: broadcast_to its own static shape -> x": [
        ("canonicalize-bindings/no-op-reshape", ("r",), ("x",))
    ],
    "canonicalize-bindings: a permutation that moves nothing -> x": [
        ("canonicalize-bindings/no-op-permute", ("p",), ("x",))
    ],
    D2S + "shape_of a static value is a constant": [
        ("dynamic-to-static/shape-of-static", ("s",), ())
    ],
    D2S + "a small integer call on constants is its value": [
        ("dynamic-to-static/fold-shape-computation", ("y",), ())
    ],
    D2S + "a constant shape input becomes the attribute; the types downstream become static": [
        ("dynamic-to-static/attribute-form", ("y",), ("y",)),
        ("dynamic-to-static/reinfer-type", ("z",), ("z",)),
    ],
    D2S + "an If on a constant false is its else branch": [
        ("dynamic-to-static/inline-constant-if", ("o",), ("b",))
    ],
    D2S + "an If whose branches now agree gets their type": [
        ("dynamic-to-static/join-if-type", ("o",), ("o",))
    ],
    D2S + "only the taken branch is rewritten (squeeze of a dim now known to be 2 is dropped)": [
        ("dynamic-to-static/attribute-form", ("r",), ("r",)),
        ("dynamic-to-static/shape-of-static", ("s",), ()),
        ("dynamic-to-static/fold-shape-computation", ("d",), ()),
        ("dynamic-to-static/fold-shape-computation", ("c",), ()),
        ("dynamic-to-static/reinfer-type", ("i",), ("i",)),
        ("dynamic-to-static/inline-constant-if", ("o", "c"), ("i",)),
    ],
    "decompose-ops: linear(x, w, b) -> ... + b": [
        ("decompose-ops/linear-to-matmul", ("y",), ("y", "permute_dims", "matmul"))
    ],
    "decompose-ops: batch_norm on the last axis needs no unsqueeze": [
        (
            "decompose-ops/batch-norm-to-scale-shift",
            ("y",),
            ("y", "add", "sqrt", "divide", "multiply", "multiply_1", "subtract"),
        )
    ],
    "decompose-ops: layer_norm over trailing axes -> (x - mean) * rsqrt(var + eps) * g + b": [
        (
            "decompose-ops/layer-norm-to-moments",
            ("y",),
            ("y", "mean", "subtract", "variance", "add", "rsqrt", "multiply", "multiply_1"),
        )
    ],
    "decompose-ops: attention with a float mask: softmax(q k^T * scale + mask) v": [
        (
            "decompose-ops/attention-to-softmax",
            ("a",),
            ("a", "permute_dims", "matmul", "multiply", "add", "softmax"),
        )
    ],
    CD + "a call of another function casts its arguments and result; an If is retyped": [
        ("convert-dtype/cast-input", ("x",), ("cast",)),
        ("convert-dtype/convert-call", ("t",), ("t",)),
        ("convert-dtype/convert-call", ("e",), ("e",)),
        ("convert-dtype/retype-if", ("r",), ("r",)),
        # the cast of the result replaces the call (named s_1), then the cast argument
        ("convert-dtype/cast-at-call", ("s",), ("s_1", "cast_1", "s")),
        ("convert-dtype/cast-result-back", ("s",), ("cast_2",)),
        ("convert-dtype/cast-input", ("v",), ("cast",), "total"),
        ("convert-dtype/convert-call", ("s",), ("s",), "total"),
        ("convert-dtype/cast-result-back", ("s",), ("cast_1",), "total"),
    ],
    CD + "a named weight gets a cast; an inline literal is converted in place": [
        ("convert-dtype/cast-input", ("x",), ("cast",)),
        ("convert-dtype/cast-weight", ("$w",), ("cast_1",)),
        ("convert-dtype/convert-literal", (), ()),  # an inline literal has no name
        ("convert-dtype/convert-call", ("a",), ("a",)),
        ("convert-dtype/convert-call", ("y",), ("y",)),
        ("convert-dtype/cast-result-back", ("y",), ("cast_2",)),
    ],
    CD + "an opaque op runs on the dtype it was recorded with, between casts": [
        ("convert-dtype/cast-input", ("x",), ("cast",)),
        ("convert-dtype/convert-call", ("e",), ("e",)),
        ("convert-dtype/opaque-between-casts", ("c",), ("c_1", "cast_1", "c")),
        ("convert-dtype/convert-call", ("r",), ("r",)),
        ("convert-dtype/cast-result-back", ("r",), ("cast_2",)),
    ],
    BITCAST.id: [
        ("convert-dtype/call-between-casts", ("b",), ("b", "bitcast")),
        ("convert-dtype/convert-call", ("y",), ("y",)),
        ("convert-dtype/cast-result-back", ("y",), ("cast",)),
    ],
    TMP + ": matmul on float16 inputs, accumulating in float32 through out_dtype": [
        ("to-mixed-precision/heavy-op-in-half", ("m",), ("m", "cast", "cast_1"))
    ],
    "fuse-ops: an anchor takes the elementwise ops after it": [
        ("fuse-ops/anchor-with-epilogue", ("m", "a"), ("r",)),
        ("fuse-ops/anchor-with-epilogue", ("a", "r"), ("r",)),
    ],
    "fuse-ops: an injective chain is one group": [("fuse-ops/injective-chain", ("p", "r"), ("r",))],
    "fuse-ops: elementwise producers join the reduction after them": [
        ("fuse-ops/elemwise-into-consumer", ("e", "s"), ("s",))
    ],
    "replica-linear-broadcast: linear on a rank-3 input -> matmul with the weight broadcast "
    "over the batch": [
        (
            "replica-linear-broadcast/linear-with-broadcast-weight",
            ("y",),
            ("y", "permute_dims", "broadcast_to", "matmul"),
        )
    ],
    "replica-dynamic-to-static-squeeze: a squeeze inlined out of a folded If gets TVM's wrong "
    "shape": [
        (SQ + "attribute-form", ("r",), ("r",)),
        (SQ + "shape-of-static", ("s",), ()),
        (SQ + "fold-shape-computation", ("d",), ()),
        (SQ + "fold-shape-computation", ("c",), ()),
        (SQ + "reinfer-type", ("q",), ()),  # replaced again by the faulty rule: dead
        (SQ + "inline-squeeze-misannotated", ("o", "c"), ("q",)),
    ],
    "replica-relay-onnx-if: an If whose branches differ in rank: the lower one broadcast like "
    "the other (Relay)": [("replica-relay-onnx-if/broadcast-branch-to-like", ("o",), ("o",))],
}

ALL_CASES = [c for cases in collected_cases().values() for c in cases if isinstance(c, RuleCase)]
RECORDED = {c.id: c for c in [*ALL_CASES, BITCAST] if c.id in RECORDS}


def _records(case: RuleCase) -> list[tuple]:
    """The records of the first pass of ``case``'s pipeline as ``(rule, matched, produced)``
    (with the function when it is not main), checking the case's expected module too."""
    with collect_rewrites() as records:
        verify_rule(case)
    first = passes.build_pipeline(case.spec).passes[0].name
    out = []
    for r in records:
        if r.rule.startswith(first + "/"):
            row = (r.rule, r.matched, r.produced)
            out.append(row if r.function == "main" else (*row, r.function))
    return out


def test_every_listed_case_exists():
    assert set(RECORDS) == set(RECORDED), set(RECORDS) ^ set(RECORDED)


@pytest.mark.parametrize("case_id", list(RECORDS))
def test_rule_records(case_id):
    assert _records(RECORDED[case_id]) == RECORDS[case_id]


def test_the_local_rewrite_passes_are_rule_tables():
    assert set(TABLES) >= RULE_PASSES, RULE_PASSES - set(TABLES)
    for name in RULE_PASSES:
        assert passes.get_pass_class(name).name == name


def test_every_rule_has_a_case_with_its_record():
    """Every rule of every table fired in a case (a rule two tables share, as the replica of
    dynamic-to-static shares its rules, in a case of either)."""
    by_name = {f"{p}/{r.name}": r for p, table in TABLES.items() for r in table}
    fired = {id(by_name[row[0]]) for rows in RECORDS.values() for row in rows}
    missing = [name for name, rule in by_name.items() if id(rule) not in fired]
    assert not missing, f"rules without a Before/Expected case with their record: {missing}"


LINEAR = """
def @main(%x: f32[2, 3], %w: f32[4, 3]) -> f32[2, 4] {
  %y: f32[2, 4] = linear(%x, %w)
  return %y
}"""


def test_nothing_is_recorded_outside_collect_rewrites():
    module = parse(LINEAR)
    with collect_rewrites() as records:
        pass
    result = passes.run(module, "decompose-ops")
    assert result.module is not module and records == []
    assert all(s.rewrites == () for s in result.snapshots)


def test_snapshots_carry_their_pass_records():
    with collect_rewrites() as records:
        result = passes.run(parse(LINEAR), "decompose-ops,canonicalize-bindings")
    by_pass = {s.pass_name: s.rewrites for s in result.snapshots}
    assert [r.rule for r in by_pass["decompose-ops"]] == ["decompose-ops/linear-to-matmul"]
    assert by_pass["canonicalize-bindings"] == ()
    assert list(by_pass["decompose-ops"]) == records


def test_collecting_is_per_thread():
    seen: dict[str, list] = {}

    def other():
        seen["other"] = []
        passes.run(parse(LINEAR), "decompose-ops")  # not collecting here

    with collect_rewrites() as records:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert records == []
        passes.run(parse(LINEAR), "decompose-ops")
    assert [r.matched for r in records] == [("y",)]


def test_decompose_ops_records_only_the_ops_asked():
    text = """
def @main(%x: f32[2, 3], %w: f32[4, 3], %g: f32[4], %b: f32[4]) -> f32[2, 4] {
  %y: f32[2, 4] = linear(%x, %w)
  %n: f32[2, 4] = layer_norm(%y, %g, %b, axes=[-1], epsilon=1e-05)
  return %n
}"""
    with collect_rewrites() as records:
        passes.run(parse(text), "decompose-ops{ops=[layer_norm]}")
    assert [(r.rule, r.matched[0]) for r in records] == [
        ("decompose-ops/layer-norm-to-moments", "n")
    ]


def test_record_names_are_the_printed_names():
    """value_names (what records are named by) names every value as the printer does: one
    hint shared by many values, values without a hint, a hint that looks like a suffixed name,
    If branches."""
    from compiler.ir import Block, Function, If, Var, call, tensor
    from compiler.ir.printer import Printer, value_names

    x, c = Var("x", tensor((2,))), Var("c", tensor((), "bool"))
    a = call("exp", x, name="a")
    a1 = call("exp", a, name="a_1")
    a2 = call("exp", a1, name="a")
    inner = call("relu", a2, name="a")
    branch = If(c, Block([inner], inner), Block([], a), name="a")
    out = call("add", branch, call("add", a, a))
    fn = Function([x, c], [a, a1, a2, branch, out.args[1], out], out)
    printer = Printer()
    printer.function("main", fn)
    names = value_names(fn)
    assert names == {id(n): printer.name_of(n) for n in [*fn.params, *fn.iter_nodes()]}
    assert [names[id(n)] for n in (a, a1, a2, branch, inner, out.args[1], out)] == [
        "a",
        "a_1",
        "a_2",
        "a_3",
        "a_4",
        "add",
        "add_1",
    ]


def test_every_rule_says_what_it_does():
    undocumented = [f"{p}/{r.name}" for p, t in TABLES.items() for r in t if not r.doc]
    assert not undocumented, undocumented
