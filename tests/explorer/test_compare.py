"""compare(): two conversions of one model side by side and where they first differ."""

import sys

import pytest

import explorer
from compiler import models
from explorer.compare import Comparison, compare
from explorer.diff import Diff


def small_convnext(**kw):
    return models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10, **kw)


@pytest.fixture(scope="module")
def mlp():
    return models.mlp((32, 64, 16), batch=4, seed=3)


def test_two_pipelines_diverge_at_the_first_pass_that_changes_op_counts(mlp):
    a = explorer.explore(mlp)  # default: ... decompose-ops, fold-constant, dce, fuse-ops
    b = explorer.explore(mlp, pipeline="fold-constant,dce")
    c = compare(a, b)
    assert not c.imported  # same imported module
    div = c.first_divergence
    assert div.step_a is a["decompose-ops"] and div.step_b is b.imported
    assert div.difference.ops["linear"] == (0, 2) and div.difference.ops["matmul"] == (2, 0)
    assert div.difference.param_bytes is None
    assert c.final.ops["linear"] == (0, 2)
    assert (c.a.final.index, c.b.final.index) == (a.final.index, b.final.index)
    text = str(c)
    assert "first divergence: after A #5 decompose-ops and B #0 module" in text
    assert "linear 0 vs 2" in text and "final ops: linear" in text
    html = c._repr_html_()
    assert "<table>" in html and "pl-differs" in html and "decompose-ops" in html


def test_same_conversion_twice_has_no_divergence(mlp):
    a, b = explorer.explore(mlp), explorer.explore(mlp)
    c = compare(a, b)
    assert c.same and c.first_divergence is None and not c.final and not c.imported
    assert "same op counts and parameter bytes at every stage" in c.text()
    assert c.a.param_bytes == c.b.param_bytes and len(c.a.param_bytes) == len(
        [s for s in a if s.kind == "import" or (s.kind == "pass" and not s.children)]
    )


def test_different_imports_that_converge():
    """linear vs matmul(x, permute_dims(W)) + b: the imports differ, the defaults agree."""
    a = explorer.explore(small_convnext())
    b = explorer.explore(small_convnext(linear_form="matmul"))
    c = compare(a, b, labels=("linear", "matmul"))
    assert str(c.first_divergence).startswith("the imported modules differ: ")
    assert c.imported.ops["linear"] == (5, 0) and not c.final
    assert c.text().splitlines()[0].split() == ["linear", "matmul"]


def test_parameter_bloat_is_the_divergence_after_folding():
    model = small_convnext()
    a = explorer.explore(model, pipeline="decompose-ops,fold-constant")
    b = explorer.explore(model, pipeline="replica-linear-broadcast,fold-constant")
    c = compare(a, b)
    assert c.first_divergence.step_a is a["decompose-ops"]
    assert "broadcast_to" in c.first_divergence.difference.ops
    x, y = c.final.param_bytes
    assert y > x == c.a.imported.param_bytes
    bloat = c.param_lines(c.b)
    assert len(bloat) == 2 and bloat[1].startswith(f"#{b['fold-constant'].index} fold-constant")
    assert "(+" in bloat[1]


def test_artifact_size_hook_and_failed_pass(mlp):
    a = explorer.explore(mlp)
    b = explorer.explore(mlp, pipeline="decompose-ops,test-explode")
    assert c_row(compare(a, b), "artifact") == ("-", "-")
    a.final.artifact_bytes = 2_500_000  # what a build step will record
    c = compare(a, b)
    assert c.a.artifact_bytes == 2_500_000 and c.b.artifact_bytes is None
    assert c_row(c, "artifact") == ("2.5 MB", "-")
    assert c.b.failed == f"#{b.failure.index} test-explode"
    assert c_row(c, "failed pass")[1].endswith("test-explode")


def c_row(c: Comparison, label: str) -> tuple[str, str]:
    row = next(r for r in c.rows() if r[0] == label)
    return row[1], row[2]


def test_compare_takes_traces():
    with pytest.raises(TypeError, match="compare\\(\\) takes two Traces"):
        compare("a", "b")


def test_public_names_are_the_functions_and_survive_being_called(mlp):
    """``explorer.compare`` / ``explorer.diff`` are functions with modules of the same name:
    importing or calling them must not rebind the package's names to the modules."""
    a = explorer.explore(mlp)
    for _ in range(2):
        c = explorer.compare(a, a)
        assert type(c) is Comparison and c.same and c.first_divergence is None
        d = explorer.diff(a.imported, a.final)
        assert type(d) is Diff and d.op_count_changes["linear"] == -2
    assert explorer.compare is sys.modules["explorer.compare"].compare is compare
    assert explorer.diff is sys.modules["explorer.diff"].diff
    assert explorer.load is sys.modules["explorer.store"].load


# registers test-explode
from tests.compiler.passes import test_manager  # noqa: E402,F401
