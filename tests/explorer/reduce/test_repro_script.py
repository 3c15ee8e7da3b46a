"""What the upstream repro scripts share (explorer/reduce/repro.py), without a compiler:
literals that can only be their value, inputs embedded exactly, a user's pass as source with
what it reads (and refused, saying why, when a script could not make it again), the file
written over a name, never through it."""

from __future__ import annotations

import ast
import base64
import math
import sys

import numpy as np
import pytest

from explorer.reduce import ReduceError
from explorer.reduce.repro import (
    DIFFERENCE_SOURCE,
    arrays_source,
    literal,
    pass_definition,
    write_script,
)

SCALE = 3
RESERVED = {"np": "numpy", "main": None}


def _helper(x):
    return x * SCALE


def scaled_pass(graph):
    """A pass reading a helper, a constant and a module."""
    return math.floor(_helper(graph))


class StatefulPass:
    def __init__(self):
        self.factor = 2

    def __call__(self, graph):
        return graph * self.factor


class NeedsArgs:
    def __init__(self, factor):
        self.factor = factor


def uses_main(graph):
    return main(graph)  # noqa: F821 (a name the script itself defines)


@pytest.mark.parametrize(
    "value",
    [
        'a"); open("x", "w")  #',
        "line\n'''\nopen('x')\n'''",
        'two\nlines """ and \\ a backslash',
        "tab\tand\r\ncarriage",
        "\u2028 separator",
        {"opt_level": 3, "config": {"relax.x": True}},
        (1, 2.5, None),
    ],
)
def test_a_literal_evaluates_to_exactly_its_value(value):
    text = literal(value)
    assert ast.literal_eval(text) == value
    tree = ast.parse(f"X = {text}")
    assert len(tree.body) == 1 and isinstance(
        tree.body[0].value, ast.Constant | ast.Dict | ast.Tuple
    )


def test_a_value_that_is_no_literal_is_refused():
    with pytest.raises(ReduceError):
        literal(object())
    with pytest.raises(ReduceError):
        literal(float("nan"))


def test_embedded_arrays_come_back_exactly():
    arrays = [
        np.random.default_rng(0).standard_normal((3, 5)).astype("float32"),
        np.array([1, -2, 2**40], dtype="int64"),
        np.array(7.5, dtype="float16"),
        np.zeros((0, 4), dtype="bool"),
    ]
    space = {"np": np, "base64": base64}
    exec(arrays_source(arrays, "ARGS"), space)
    back = space["load_args"]()
    for a, b in zip(arrays, back, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ReduceError, match="numbers only"):
        arrays_source([np.array(["a"], dtype=object)])


def test_a_function_pass_comes_with_its_helpers_constants_and_modules():
    code = pass_definition(scaled_pass, ("torch",), "the pass", RESERVED)
    assert code.make == "scaled_pass"
    assert "import math" in code.imports
    source = code.import_lines() + "\n" + code.definitions_source()
    space: dict = {}
    exec(source, space)
    assert space["scaled_pass"](2.5) == scaled_pass(2.5) == 7
    assert "SCALE = 3" in code.definitions


def test_a_class_pass_is_made_again_with_no_arguments():
    code = pass_definition(StatefulPass(), ("torch",), "the pass", RESERVED)
    assert code.make == "StatefulPass()"
    changed = StatefulPass()
    changed.factor = 5
    with pytest.raises(ReduceError, match="holds state"):
        pass_definition(changed, ("torch",), "the pass", RESERVED)
    with pytest.raises(ReduceError, match="needs arguments"):
        pass_definition(NeedsArgs(2), ("torch",), "the pass", RESERVED)


def test_passes_a_script_cannot_hold_are_refused_saying_why():
    with pytest.raises(ReduceError, match="not a named def"):
        pass_definition(lambda g: g, ("torch",), "the pass", RESERVED)
    with pytest.raises(ReduceError, match="a name the script uses"):
        pass_definition(uses_main, ("torch",), "the pass", RESERVED)
    import explorer

    def reads_explorer(graph):
        return explorer.explore(graph)

    with pytest.raises(ReduceError, match="the module 'explorer'"):
        pass_definition(reads_explorer, ("torch",), "the pass", RESERVED)


def test_the_difference_judges_as_the_check():
    space = {"np": np, "sys": sys}
    exec(DIFFERENCE_SOURCE, space)
    difference = space["difference"]
    inf = np.inf
    assert difference([np.array([-inf, 1.0])], [np.array([-inf, 1.0])], 1e-4, 1e-5)[2] == 0
    assert difference([np.array([np.nan])], [np.array([np.nan])], 1e-4, 1e-5)[2] == 0
    worst, _, beyond, _ = difference([np.array([1.5, 2.0])], [np.array([1.0, 2.0])], 1e-4, 1e-5)
    assert (worst, beyond) == (0.5, 1)
    assert difference([np.zeros(2)], [np.zeros(3)], 1e-4, 1e-5)[0] == inf


def test_the_script_replaces_a_link_and_refuses_what_does_not_parse(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep")
    (tmp_path / "repro.py").symlink_to(target)
    out = write_script(tmp_path, "print('hi')\n")
    assert out == tmp_path / "repro.py" and not out.is_symlink()
    assert target.read_text() == "keep"
    with pytest.raises(ReduceError, match="does not parse"):
        write_script(tmp_path / "bad.py", "def (:\n")
