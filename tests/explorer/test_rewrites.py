"""step.rewrites: every rule application recorded under its pass step, named as the views name
nodes; the summaries (rule counts, rewrites_of, why, origin); saved and loaded with the trace
(a crafted file checked and capped); the param-bloat finding names the rules behind it."""

import json
import zipfile

import numpy as np
import pytest

import explorer
from compiler import LimitError, models
from compiler.ir import parse
from explorer.rewrites import Rewrite, make, origin, rule_counts, rule_doc, why, whys
from explorer.store import TraceFileError
from explorer.store import rewrites as stored

LINEAR_4D = """
weights {
  $linear.weight: f32[64, 32]
  $linear.bias: f32[64]
}
def @main(%x: f32[1, 16, 4, 32]) -> f32[1, 16, 4, 64] attrs {num_input = 1} {
  %y: f32[1, 16, 4, 64] = linear(%x, $linear.weight, $linear.bias)
  return %y
}
"""


@pytest.fixture(scope="module")
def mlp_trace():
    return explorer.explore(models.mlp(sizes=(6, 5, 4)), progress=False)


@pytest.fixture(scope="module")
def bloat_trace():
    rng = np.random.default_rng(0)
    module = parse(
        LINEAR_4D,
        params={
            "linear.weight": rng.standard_normal((64, 32)).astype(np.float32),
            "linear.bias": rng.standard_normal(64).astype(np.float32),
        },
    )
    return explorer.explore(
        module, pipeline="replica-linear-broadcast,fold-constant", progress=False
    )


def test_each_rule_application_is_recorded_under_its_pass_step(mlp_trace):
    decompose = mlp_trace["decompose-ops"]
    assert [r.rule for r in decompose.rewrites] == ["decompose-ops/linear-to-matmul"] * 2
    before, after = decompose.previous.graph, decompose.graph
    for r in decompose.rewrites:
        # matched: nodes of the step before (a linear); produced: nodes of this step
        assert [before.nodes[m].op for m in r.matched] == ["linear"]
        assert {after.nodes[p].op for p in r.produced} == {"add", "matmul", "permute_dims"}
    # steps without rules record none; only the passes that applied one have some
    with_rewrites = {s.name for s in mlp_trace if s.rewrites}
    assert {"decompose-ops", "fold-constant"} <= with_rewrites
    assert "dead-code-elimination" not in with_rewrites and "default" not in with_rewrites
    assert mlp_trace.imported.rewrites == ()


def test_rule_counts_and_rewrites_of(mlp_trace):
    fold = mlp_trace["fold-constant"]
    assert rule_counts(fold.rewrites) == {"fold-constant/fold-call": 2}
    first = fold.rewrites[0]
    assert fold.rewrites_of(first.produced[0]) == [first]
    assert fold.rewrites_of(first.matched[0]) == [first]
    assert fold.rewrites_of("main/no-such-node") == []
    assert (
        rule_doc("fold-constant/fold-call")
        == "op(constants...) -> a new named constant (its value)"
    )
    assert rule_doc("fold-constant/no-such-rule") == rule_doc("pointless_view_pair") == ""
    counts = rule_counts([make("b", (), ()), make("a", (), ()), make("a", (), ())])
    assert list(counts.items()) == [("a", 2), ("b", 1)]


def test_why_names_the_rule_and_the_step_that_made_a_node(mlp_trace):
    decompose, fold, final = mlp_trace["decompose-ops"], mlp_trace["fold-constant"], mlp_trace.final
    weight = fold.rewrites[0].produced[0]  # the folded transpose of a weight
    assert weight.startswith("$") and weight.endswith(".permute_dims")
    w = why(final, weight)  # a later step: the very same constant, made by fold-constant
    assert final.index > fold.index
    assert (w.step, w.rewrite.rule, w.how) == (fold, "fold-constant/fold-call", "produced")
    assert str(w) == f"made by rule fold-constant/fold-call at #{fold.index} fold-constant"
    # the pipeline's step holds the passes that ran after it is numbered: the same answer
    pipeline = mlp_trace["default"]
    assert pipeline.index < fold.index and pipeline.why(weight).step is fold
    # ... from a permute_dims that decompose-ops's rule made
    chain = origin(final, weight)
    assert [(c.step, c.rewrite.rule) for c in chain] == [
        (fold, "fold-constant/fold-call"),
        (decompose, "decompose-ops/linear-to-matmul"),
    ]
    assert whys(final)[weight].splitlines()[1].startswith("from main/permute_dims")
    # the matmul fold-constant rebuilt: its input was made by a rule of this step
    user = next(e.dst for e in fold.graph.edges if e.src == weight)
    w = fold.why(user)
    assert (w.how, w.via, w.step) == ("input", weight, fold)
    # a node no rule touched has no answer
    assert mlp_trace.imported.why("main/x") is None
    assert fold.why("main/x") is None


FORWARDED = """
def @main(%x: f32[2, 3]) -> f32[2, 3] attrs {num_input = 1} {
  %a: f32[2, 3] = add(%x, %x)
  %b: f32[2, 3] = reshape(%a, shape=[2, 3])
  %c: f32[2, 3] = exp(%b)
  return %c
}
"""


def test_why_a_rule_that_reuses_a_node_does_not_claim_to_have_made_it():
    trace = explorer.explore(parse(FORWARDED), pipeline="canonicalize-bindings", progress=False)
    step = trace["canonicalize-bindings"]
    (r,) = step.rewrites
    assert (r.matched, r.produced) == (("main/b",), ("main/a",))  # the reshape forwarded to %a
    w = step.why("main/a")
    assert w.how == "reused"
    assert (
        str(w) == f"rule {r.rule} at #{step.index} canonicalize-bindings put it in place of main/b"
    )
    assert str(step.why("main/c")) == (
        f"rule {r.rule} at #{step.index} canonicalize-bindings made main/a its input in place "
        "of main/b"
    )
    assert origin(step, "main/a") == [w]  # the chain stops: %a is older than the rule
    assert origin(step, "main/c") == []


def test_rewrites_are_saved_and_loaded(mlp_trace, tmp_path):
    path = mlp_trace.save(tmp_path / "t.passlens")
    loaded = explorer.load(path)
    assert [s.rewrites for s in loaded] == [s.rewrites for s in mlp_trace]
    assert all(isinstance(r, Rewrite) for s in loaded for r in s.rewrites)
    weight = mlp_trace["fold-constant"].rewrites[0].produced[0]
    # identity survives loading, so why still finds the step that made a node
    assert str(loaded.final.why(weight)) == str(mlp_trace.final.why(weight))


def _rewrite_manifest(path, out, change):
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "manifest.json":
                manifest = json.loads(data)
                step = next(s for s in manifest["steps"] if s.get("rewrites"))
                change(step)
                data = json.dumps(manifest).encode()
            zout.writestr(item, data)
    return out


@pytest.mark.parametrize(
    "bad",
    [
        "not a list",
        [["rule", ["a"], ["b"]]],  # three fields
        [[7, ["a"], ["b"], 0]],  # a rule that is not text
        [["", ["a"], ["b"], 0]],  # an empty rule
        [["rule", "a", ["b"], 0]],  # names that are not a list
        [["rule", ["a", 3], ["b"], 0]],  # a name that is not text
        [["rule", ["x" * 5000], ["b"], 0]],  # a name too long
        [["rule", ["a"] * 65, ["b"], 0]],  # more names than a rewrite keeps
        [["rule", ["a"], ["b"], -1]],  # a negative count of names left out
        [["rule", ["a"], ["b"], True]],  # a bool is not a count
    ],
)
def test_a_damaged_rewrite_in_a_file_is_refused(mlp_trace, tmp_path, bad):
    path = mlp_trace.save(tmp_path / "t.passlens")

    def change(step):
        step["rewrites"] = bad

    out = _rewrite_manifest(path, tmp_path / "bad.passlens", change)
    with pytest.raises(TraceFileError, match=r"bad\.passlens, step \d+: .*rewrite"):
        explorer.load(out)


def test_too_many_rewrites_in_a_file_is_refused(mlp_trace, tmp_path, monkeypatch):
    path = mlp_trace.save(tmp_path / "t.passlens")
    monkeypatch.setattr(stored, "MAX_REWRITES", 1)
    with pytest.raises(LimitError, match="2 rewrites, over the limit of 1"):
        explorer.load(path)


def test_a_crafted_rule_name_loads_as_text(mlp_trace, tmp_path):
    evil = "<script>alert(1)</script>/x"
    path = mlp_trace.save(tmp_path / "t.passlens")

    def change(step):
        step["rewrites"][0][0] = evil

    loaded = explorer.load(_rewrite_manifest(path, tmp_path / "evil.passlens", change))
    assert any(r.rule == evil for s in loaded for r in s.rewrites)


def test_make_keeps_at_most_max_names_and_counts_the_rest():
    r = make("p/r", [f"m{i}" for i in range(70)], ["a", "b"])
    assert len(r.matched) == 64 and r.cut == 6 and r.produced == ("a", "b")


def test_param_bloat_names_the_rules_that_made_the_broadcast(bloat_trace):
    fold = bloat_trace["fold-constant"]
    report = bloat_trace.check()
    (finding,) = [f for f in report.findings if f.kind == "param-bloat"]
    weight = next(n for n in fold.graph.params if n.endswith("broadcast_to"))
    chain = origin(fold, fold.graph.params[weight].node_id)
    assert chain and chain[0].rewrite.rule.startswith("fold-constant/")
    expected = " -> ".join(f"{w.rewrite.rule} at #{w.step.index}" for w in reversed(chain))
    assert expected in finding.message
    # the rule that made the broadcast, then the fold that baked it
    assert [w.step.name for w in chain] == ["fold-constant", "replica-linear-broadcast"]
    assert "made by rules replica-linear-broadcast/" in finding.message
