"""``help()`` on the public API reads as plain text (issue 45): no reStructuredText roles
(``:func:`x```) and no double-backtick literals in what pydoc prints for explorer/, widgets/,
passlens/ and compiler's packages (tests/docstring_markup.py says what is scanned, and converts)."""

from __future__ import annotations

import pydoc

from tests import docstring_markup
from tests.docstring_markup import MARKUP, convert_source, plain, problems, scope


def test_help_of_the_public_api_has_no_rst_markup():
    found = problems()
    assert not found, (
        "RST markup in help() text; convert it with "
        "`PYTHONPATH=. .venv/bin/python -m tests.docstring_markup --write`:\n" + "\n".join(found)
    )


def test_the_scan_covers_the_api_and_sees_markup_where_there_is_some():
    names = scope()
    for name in ("explorer", "explorer.trace", "explorer.inductor", "passlens", "compiler",
                 "compiler.ir", "compiler.passes", "widgets", "widgets.stepper"):  # fmt: skip
        assert name in names, name
    assert not any(n.startswith("compiler.ir.") for n in names)  # compiler: its packages only
    assert MARKUP.search(pydoc.plaintext.document("x ``y`` z"))
    assert MARKUP.search(":func:`explorer.explore`") and MARKUP.search(":py:class:`A`")
    assert not MARKUP.search("`explorer.explore` and a `literal`")
    text = pydoc.render_doc(docstring_markup, renderer=pydoc.plaintext)
    assert MARKUP.search(text)  # this module's own help has some: the scan would see it


def test_plain_turns_roles_and_literals_into_single_backticks():
    assert plain('``pipeline`` default ``"default"``') == '`pipeline` default `"default"`'
    assert plain("see :func:`explorer.explore` and :class:`~a.b.C`") == (
        "see `explorer.explore` and `a.b.C`"
    )
    assert plain(":meth:`the check <Trace.check>`") == "`the check`"
    assert plain("a ``two\n    lines`` literal") == "a `two\n    lines` literal"


def test_only_docstrings_are_converted():
    source = (
        '"""Module ``doc``."""\n'
        'PATTERN = "``x``"  # ``comment``\n\n\n'
        "def f():\n"
        '    """Run ``f`` (see :func:`g`)."""\n'
        '    return "``kept``"\n\n\n'
        "class C:\n"
        "    '''Café ``c``.'''\n"
    )
    out = convert_source(source)
    assert '"""Module `doc`."""' in out and '"""Run `f` (see `g`)."""' in out
    assert "'''Café `c`.'''" in out  # columns are byte offsets: a non-ASCII line is right
    assert 'PATTERN = "``x``"  # ``comment``' in out and 'return "``kept``"' in out


def test_what_a_class_inherits_from_outside_passlens_is_not_ours_to_write():
    rule = " |  " + "-" * 70
    text = "\n".join([
        " |  run(self) -> None",
        " |      Run ``it``.",
        rule,
        " |  Methods inherited from traitlets.traitlets.HasTraits:",
        " |  observe(self, handler)",
        " |      signature should be ``handler(change)``",
        " |      Parameters",
        " |      ----------",
        " |      ``names``: the traits",
        rule,
        " |  Methods inherited from widgets.frame.Frame:",
        " |      Draw ``ours``.",
    ])  # fmt: skip
    kept = docstring_markup.own_lines(text)
    assert [line for line in kept if MARKUP.search(line)] == [
        " |      Run ``it``.",
        " |      Draw ``ours``.",
    ]
