"""No file in compiler/ over 1,000 lines, and the nn family's files in every layer under 800
(issue #40): a file that grows past that is split along what its parts do (an ONNX operator
group, an op family, a stage of the backend), never cut at a line count."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 1000
MAX_NN_LINES = 800

# the nn family in each layer
NN_FILES = (
    "compiler/ops/nn.py",
    "compiler/backend/lower_nn.py",
    "compiler/frontend/onnx_ops/nn.py",
    "compiler/frontend/torch_ops/nn.py",
    "compiler/export/onnx/nn.py",
)


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_compiler_file_grows_past_the_limit():
    sizes = {str(p.relative_to(ROOT)): _lines(p) for p in sorted((ROOT / "compiler").rglob("*.py"))}
    assert len(sizes) > 50
    over = {f: n for f, n in sizes.items() if n > MAX_LINES}
    assert over == {}


def test_the_nn_family_files_stay_under_their_limit():
    present = [ROOT / f for f in NN_FILES if (ROOT / f).exists()]
    assert len(present) >= 3
    over = {str(p.relative_to(ROOT)): _lines(p) for p in present if _lines(p) > MAX_NN_LINES}
    assert over == {}
