"""Registering a pass again (issue 42): the same definition run twice (a notebook cell run
again, the same source executed twice, ``importlib.reload``) replaces the pass with one
``PassRedefinedWarning``; another module's class under a taken name is an error naming both
definitions; a rule table registered again by its module is replaced quietly, by another module
it is the same error. A pass nobody registered is found by name in a spec
through ``build_pipeline(spec, classes=[...])``, and a snapshot keeps the Pass that ran."""

from __future__ import annotations

import importlib
import linecache
import sys
import textwrap
import warnings
from dataclasses import dataclass
from typing import ClassVar

import pytest

from compiler import PasslensError, passes
from compiler.ir import parse
from compiler.passes import (
    Pass,
    PassRedefinedWarning,
    PassRegistrationError,
    PipelineError,
    build_pipeline,
    get_pass_class,
    rule_tables,
)
from compiler.passes.infra import manager, rules

CELL = '''
from dataclasses import dataclass
from typing import ClassVar

from compiler.passes import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class Twice(Pass):
    """A pass a cell defines (and the user runs the cell again)."""

    name: ClassVar[str] = "test-redefined-twice"
    level: int = 1

    def transform(self, module, ctx):
        return module
'''

TABLE_CELL = """
from compiler.passes import Rule, rule_table
from compiler.passes.infra.rules import op

RULES = rule_table("test-redefined-table", Rule("keep", op("relu"), lambda n, ctx: None))
"""

TEXT = """
def @main(%x: f32[2]) -> f32[2] {
  %y: f32[2] = relu(%x)
  return %y
}
"""


@pytest.fixture(autouse=True)
def registry(monkeypatch):
    """Every test gets the registries back as they were."""
    monkeypatch.setattr(manager, "_PASSES", dict(manager._PASSES))
    monkeypatch.setattr(rules, "_TABLES", dict(rules._TABLES))
    monkeypatch.setattr(rules, "_TABLE_WHERE", dict(rules._TABLE_WHERE))


_count = [0]


def cell(source: str, module: str = "__main__", cached: bool = True) -> dict:
    """Run ``source`` as IPython runs a cell: a fresh namespace, the source in the line cache
    under the cell's own name (``cached=False``: ``exec`` of a string, no source kept)."""
    _count[0] += 1
    name = f"<test-cell-{_count[0]}>" if cached else "<string>"
    if cached:
        linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace = {"__name__": module}
    exec(compile(source, name, "exec", dont_inherit=True), namespace)
    return namespace


def test_a_cell_run_again_replaces_its_pass_with_one_warning():
    first = cell(CELL)["Twice"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        again = cell(CELL)["Twice"]
    assert again is not first and get_pass_class("test-redefined-twice") is again
    (w,) = seen  # one note, one line, no traceback
    assert w.category is PassRedefinedWarning
    text = str(w.message)
    assert "\n" not in text
    assert "'test-redefined-twice' redefined: __main__.Twice (<test-cell-" in text
    assert w.filename.startswith("<test-cell-")  # shown at the user's cell, not in passlens
    # the spec finds the new class, options and all
    assert type(build_pipeline("test-redefined-twice{level=3}").passes[0]) is again


def test_the_same_source_executed_twice_replaces_it_too_without_a_line_cache():
    cell(CELL, cached=False)
    with pytest.warns(PassRedefinedWarning, match=r"redefined: __main__\.Twice replaces"):
        again = cell(CELL, cached=False)["Twice"]
    assert get_pass_class("test-redefined-twice") is again


def test_a_name_taken_by_another_module_is_an_error_naming_both_definitions():
    first = cell(CELL, module="notebook_a")["Twice"]
    with pytest.raises(PassRegistrationError) as e:
        cell(CELL, module="notebook_b")
    text = str(e.value)
    assert "'test-redefined-twice' is registered twice" in text
    assert "by notebook_a.Twice (<test-cell-" in text and "by notebook_b.Twice (<test-cell-" in text
    assert isinstance(e.value, PasslensError) and isinstance(e.value, ValueError)
    assert get_pass_class("test-redefined-twice") is first  # the first one stays


def test_passlens_s_own_pass_names_cannot_be_taken_and_the_error_says_where_they_are():
    with pytest.raises(
        PassRegistrationError, match=r"fold_constant\.FoldConstant \(.*fold_constant\.py:\d+\)"
    ):
        cell(CELL.replace("test-redefined-twice", "fold-constant"), module="mine")


def test_importlib_reload_replaces_the_pass(tmp_path, monkeypatch):
    path = tmp_path / "my_reloaded_passes.py"
    path.write_text(textwrap.dedent(CELL))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("my_reloaded_passes")
    try:
        first = module.Twice
        with pytest.warns(PassRedefinedWarning, match=r"my_reloaded_passes\.Twice \(.*:8\)"):
            importlib.reload(module)
        assert get_pass_class("test-redefined-twice") is module.Twice is not first
    finally:
        sys.modules.pop("my_reloaded_passes", None)


def test_a_rule_table_registered_again_by_its_module_replaces_it_another_module_s_is_an_error():
    first = cell(TABLE_CELL)["RULES"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # quietly: the pass's own redefinition says it
        again = cell(TABLE_CELL)["RULES"]
    assert rule_tables()["test-redefined-table"] is again is not first
    with pytest.raises(
        PassRegistrationError,
        match=r"registered twice: by __main__ \(<test-cell-\d+>:5\) and by elsewhere",
    ):
        cell(TABLE_CELL, module="elsewhere")
    assert rule_tables()["test-redefined-table"] is again


@dataclass(frozen=True)
class Unregistered(Pass):
    """A pass nobody registered."""

    name: ClassVar[str] = "test-unregistered"
    level: int = 1

    def transform(self, module, ctx):
        return module


def test_a_spec_finds_an_unregistered_class_given_to_it_first():
    with pytest.raises(PipelineError, match="unknown pass 'test-unregistered'"):
        build_pipeline("test-unregistered")
    seq = build_pipeline("dce,test-unregistered{level=2}", classes=[Unregistered])
    assert seq.passes[1] == Unregistered(level=2)
    assert build_pipeline(["dce", "test-unregistered"], classes=[Unregistered]).passes[1] == (
        Unregistered()
    )
    # a given class comes before the registry (a notebook's own version of a pass)
    Shadow = type("Shadow", (Unregistered,), {"name": "dce"})
    assert type(build_pipeline("dce", classes=[Shadow]).passes[0]) is Shadow
    with pytest.raises(PipelineError, match="classes must be named Pass subclasses"):
        build_pipeline("dce", classes=["dce"])


def test_a_snapshot_keeps_the_pass_object_that_ran():
    mine = Unregistered(level=5)
    result = passes.run(parse(TEXT), ["default", mine])
    ran = [s.pass_object for s in result.snapshots if s.depth == 0]
    assert ran[0] is result.pipeline.passes[0] and ran[1] is mine
    nested = [s.pass_object for s in result.snapshots if s.depth == 1]
    assert nested == list(result.pipeline.passes[0].passes)


def test_options_of_a_cell_s_pass_with_string_annotations_are_read_in_its_own_globals():
    """``from __future__ import annotations`` in a cell: the option types are strings that
    ``sys.modules["__main__"]`` (here pytest's, not the cell's namespace) cannot resolve; the
    class's methods' globals can."""
    cls = cell("from __future__ import annotations\n" + CELL)["Twice"]
    assert build_pipeline("test-redefined-twice{level=3}").passes[0] == cls(level=3)
    with pytest.raises(PipelineError, match="option level expects int"):
        build_pipeline("test-redefined-twice{level=x}")


def test_rule_passes_of_one_name_run_in_turn_without_a_note_or_an_error():
    """``RulePass`` registers its table each time it runs (from its own module): a buggy and a
    fixed version of one pass, run in turn as a re-run does, replace it quietly."""
    from compiler.ir import Call
    from compiler.passes import Rule, RulePass, op

    class Buggy(RulePass):
        name = "test-rule-pass"
        rules = (Rule("to-relu", op("relu"), lambda n, ctx: Call("abs", n.args)),)

    class Fixed(RulePass):
        name = "test-rule-pass"
        rules = (Rule("keep", op("relu"), lambda n, ctx: None),)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p in (Buggy(), Fixed(), Buggy(), Fixed()):
            passes.run(parse(TEXT), [p], raise_on_failure=True)
    assert rule_tables()["test-rule-pass"] == Fixed.rules
