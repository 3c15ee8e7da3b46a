"""tests/explorer mirrors explorer/'s folders (issue #40): the tests of explorer/<folder>/ sit in
tests/explorer/<folder>/ (check/, store/, reduce/, and an adapter's folder each: passlens/, tvm/,
inductor/), the tests of the neutral modules at the top. A folder of tests names a folder of
explorer/, a test at the top is not named after one (``test_tvm.py`` belongs in tvm/), and each
folder of tests is a package, as the rest of tests/ (so two ``test_check.py`` never clash)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
EXPLORER = TESTS.parents[1] / "explorer"
NOT_TESTS = {"data", "__pycache__"}


def _test_folders() -> list[Path]:
    return sorted(
        d
        for d in TESTS.rglob("*")
        if d.is_dir() and not NOT_TESTS & set(d.relative_to(TESTS).parts)
    )


def test_every_folder_of_tests_mirrors_a_folder_of_explorer():
    folders = _test_folders()
    assert folders  # check/, store/, ... (a layout that lost them is not a mirror)
    missing = [
        f"tests/explorer/{d.relative_to(TESTS)}: no explorer/{d.relative_to(TESTS)}/"
        for d in folders
        if not (EXPLORER / d.relative_to(TESTS) / "__init__.py").is_file()
    ]
    assert missing == []


def test_every_folder_of_tests_is_a_package():
    assert [str(d) for d in _test_folders() if not (d / "__init__.py").is_file()] == []


def test_no_test_at_the_top_is_named_after_a_folder_of_explorer():
    folders = {d.name for d in EXPLORER.iterdir() if (d / "__init__.py").is_file()}
    misplaced = [
        p.name
        for p in TESTS.glob("test_*.py")
        if p.stem.removeprefix("test_").split("_")[0] in folders
    ]
    assert misplaced == []
