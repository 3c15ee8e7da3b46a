"""README.md stands alone and runs as pasted (issue #18), and its first screen is what a
newcomer needs (issue #30): what passlens is, the two commands, how to activate the
environment, the tour and where to go next, in under about 1,500 words; the reference lives in
docs/reference.md. Every ```python block of both (and of docs/passes.md) runs on its own in a
fresh interpreter in an empty directory, the table of the ``default`` pipeline is the pipeline's, and every relative
link points at a file of the repository."""

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compiler import passes
from passlens import PORT

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference.md"
PASSES_PAGE = ROOT / "docs" / "passes.md"
FENCE = re.compile(r"^( *)```python\n(.*?)^\1```$", re.M | re.S)


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, dedented code) of every ```python block, indented ones (in lists) too."""
    return [
        (text.count("\n", 0, m.start()) + 1, textwrap.dedent(m.group(2)))
        for m in FENCE.finditer(text)
    ]


BLOCKS = [(f"README.md:{n}", code) for n, code in python_blocks(README.read_text())] + [
    (f"docs/reference.md:{n}", code) for n, code in python_blocks(REFERENCE.read_text())
] + [(f"docs/passes.md:{n}", code) for n, code in python_blocks(PASSES_PAGE.read_text())]


def _port_busy(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("localhost", port))
        except OSError:
            return True
    return False


def test_the_readme_has_its_blocks():
    assert len(BLOCKS) >= 3
    assert any("passlens.serve(" in code for _, code in BLOCKS)


@pytest.mark.parametrize("line, code", BLOCKS, ids=[line for line, _ in BLOCKS])
def test_every_python_block_runs_as_pasted(line, code, tmp_path):
    if "passlens.serve(" in code and _port_busy(PORT):
        # the README serves on passlens' default port; another process holds it right now
        code = code.replace("block=False)", "block=False, port=0)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # the tour takes about 10 s; a serve that blocks ends here
    )
    assert done.returncode == 0, f"{line}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


def _table_after(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after ``heading`` in the
    reference."""
    text = REFERENCE.read_text()
    start = text.index(heading)
    rows = []
    for row in text[start:].splitlines()[1:]:
        if row.startswith("|"):
            rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # without the header and the rule


def test_the_default_table_is_the_pipeline():
    spec = passes.named_pipelines()["default"]
    expected = [p.spec() for p in passes.build_pipeline(spec).passes]
    rows = _table_after("### What `default` runs")
    assert [row[0] for row in rows] == [str(i) for i in range(1, len(expected) + 1)]
    assert [row[1].strip("`") for row in rows] == expected
    for row in rows:
        assert len(row) == 3 and row[2], row


@pytest.mark.parametrize(
    "page", [README, REFERENCE, ROOT / "docs" / "views.md"], ids=["README", "reference", "views"]
)
def test_links_stay_in_the_repository(page):
    text = page.read_text()
    assert "../shared" not in text
    for target in re.findall(r"\]\(([^)#\s]+)", text):
        if not re.match(r"[a-z]+:", target):
            assert (page.parent / target).resolve().exists(), target


def test_the_first_screen_is_what_a_newcomer_needs():
    text = README.read_text()
    words = len(re.findall(r"\S+", text))
    assert words < 1500, f"README.md has {words} words: move reference material to docs/"
    first_screen = "\n".join(text.splitlines()[:30])
    for needed in ("make demo", "make test", "source .venv/bin/activate"):
        assert needed in first_screen, needed
    headings = re.findall(r"^## (.*)$", text, re.M)
    assert headings[:3] == ["Start here", "The tour", "Where to go next"], headings
    assert "docs/reference.md" in text and "docs/bugs.md" in text
    count = len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    assert count >= 9
    for n in range(count):  # every notebook is named where to go next
        assert f"({n:02d})" in text or f"`{n:02d}_" in text, n


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_notebooks_link_their_case_in_docs_bugs():
    bugs = (ROOT / "docs" / "bugs.md").read_text()
    anchors = {_slug(h) for h in re.findall(r"^#+ (.*)$", bugs, re.M)}
    assert set(re.findall(r"\]\(#([^)]+)\)", bugs)) <= anchors  # its own table of contents
    for n in range(1, 6):
        (path,) = (ROOT / "notebooks").glob(f"0{n}_*.ipynb")
        title = json.loads(path.read_text())["cells"][0]["source"][0]
        (anchor,) = re.findall(rf"\[case {n}\]\(\.\./docs/bugs\.md#([^)]+)\)", title)
        assert anchor in anchors and anchor.startswith(f"{n}-"), (path.name, anchor)
    assert "SEEDS" not in bugs


def test_the_readmes_explore_line_runs_as_written(tmp_path, capsys, monkeypatch):
    from passlens.cli import main

    lines = [
        line.split("#")[0].split()
        for line in README.read_text().splitlines()
        if line.startswith("passlens explore compiler.")
    ]
    assert lines, "the README shows an explore line on a bundled model"
    monkeypatch.chdir(tmp_path)
    for argv in lines:
        assert main(argv[1:]) == 0
        assert (tmp_path / argv[argv.index("--html") + 1]).is_file()
