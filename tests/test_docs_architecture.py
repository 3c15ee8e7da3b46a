"""docs/reference.md's architecture section stays true (issue 40): every kind of extension says
which files to touch, every path it names exists, every dotted name it names imports, and every
folder of compiler/ and explorer/ is drawn in its diagram (a new folder must be drawn)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "reference.md").read_text()
SECTION = DOC[DOC.index("## Architecture\n") : DOC.index("## Layout\n")]
WHERE = SECTION[SECTION.index("### Where to add things") :]
_START = SECTION.index("```\n") + 4
DIAGRAM = SECTION[_START : SECTION.index("\n```\n", _START)]

KINDS = ("an op", "a converter", "a pass", "a rule", "a finding kind", "a view", "a compiler")
PACKAGES = ("compiler", "explorer", "widgets", "passlens", "tests")


def _quoted(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def _paths(text: str) -> list[str]:
    return sorted(
        {q for q in _quoted(text) if re.fullmatch(rf"({'|'.join(PACKAGES)})/[\w<>/.*-]*", q)}
    )


def _dotted(text: str) -> list[str]:
    return sorted(
        {q for q in _quoted(text) if re.fullmatch(r"(compiler|explorer|widgets)(\.\w+)+", q)}
    )


def test_every_kind_of_extension_is_listed_with_files_to_touch():
    bullets = re.findall(r"^- \*\*([^*]+)\*\*(.*?)(?=^- \*\*|\Z)", WHERE, re.S | re.M)
    found = {title.split(" (")[0]: body for title, body in bullets}
    assert set(KINDS) <= set(found), set(KINDS) - set(found)
    for kind in KINDS:
        assert _paths(found[kind]), f"{kind!r} names no file to touch"


def test_the_section_names_enough_paths_for_the_test_to_mean_something():
    assert len(_paths(SECTION)) > 40 and len(_dotted(SECTION)) > 5


@pytest.mark.parametrize("path", _paths(SECTION))
def test_every_path_the_section_names_exists(path):
    """A placeholder (``<family>``, ``<pass>``, ``<compiler>``) stands for any name, but at
    least one file must fit it."""
    pattern = re.sub(r"<\w+>", "*", path).rstrip("/")
    assert list(ROOT.glob(pattern)), f"docs/reference.md names {path}, which does not exist"


@pytest.mark.parametrize("name", _dotted(SECTION))
def test_every_dotted_name_the_section_names_imports(name):
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            assert hasattr(obj, attr), f"docs/reference.md names {name}: no {attr}"
            obj = getattr(obj, attr)
        return
    pytest.fail(f"docs/reference.md names {name}, which does not import")


@pytest.mark.parametrize("package", ["compiler", "explorer"])
def test_every_folder_of_the_two_cores_is_drawn(package):
    folders = sorted(
        p.name
        for p in (ROOT / package).iterdir()
        if p.is_dir() and (p / "__init__.py").exists()
    )
    assert len(folders) >= 5
    missing = [f for f in folders if not re.search(rf"\b{f}/", DIAGRAM)]
    assert missing == [], f"the architecture diagram does not draw {package}/{missing}"
