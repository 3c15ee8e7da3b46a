"""What ``passlens explore MODEL`` takes besides .onnx, .py and IR text: a .pt2 program saved
by torch.export.save, ``package.module:ATTR`` and ``file.py:ATTR`` sources, ``--input-shape``;
and one clear error line for each way these go wrong (passlens.model_sources)."""

import sys
import textwrap
import uuid

import numpy as np
import pytest

from explorer.store import load
from tests.passlens.test_cli import IR, assert_one_line_error, run

torch = pytest.importorskip("torch")

PIPELINE = ("--pipeline", "fold-constant")
STEPS = ["torch.export", "from_torch", "fold-constant"]

# a module to import as package.module:ATTR or file.py:ATTR; the shapes of its example inputs
# say where they came from: the module's (3, 4), the model's (5, 4), make()'s (2, 4)
MODELS = textwrap.dedent("""
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 8)

        def forward(self, x):
            return torch.relu(self.fc(x))


    class Tokens(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 4)

        def forward(self, ids):
            return self.emb(ids).sum(-1)


    example_inputs = (torch.randn(3, 4),)

    net = Net()

    tagged = Net()
    tagged.example_inputs = (torch.randn(5, 4),)

    def make():
        return Net(), (torch.randn(2, 4),)

    def factory():
        return Net()

    class NotAModule:
        pass

    count = 3

    def needs_args(width):
        return Net()

    def broken():
        raise RuntimeError("boom")

    def returns_list():
        return [Net()]
""")


def steps(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines()[1:] if line.strip()]


def saved_inputs(path) -> tuple:
    return load(path).example_inputs


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package on sys.path with MODELS as its ``models`` module; its name is new each test
    (imported modules stay in sys.modules)."""
    name = f"plsrc_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "site"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "models.py").write_text(MODELS)
    (root / name / "crash.py").write_text("1 / 0\n")
    (root / name / "needs.py").write_text("import plsrc_missing_dependency\n")
    (root / name / "dict_inputs.py").write_text(
        "import torch\nnet = torch.nn.Linear(4, 2)\nexample_inputs = {'x': torch.randn(1, 4)}\n"
    )
    monkeypatch.syspath_prepend(str(root))
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


@pytest.fixture
def models_file(tmp_path):
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    return path


def _save_program(path, model, args, dynamic_shapes=None, keep_inputs=True):
    ep = torch.export.export(model.eval(), args, dynamic_shapes=dynamic_shapes)
    if not keep_inputs:
        ep.example_inputs = None
    torch.export.save(ep, str(path))
    return path


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


# ----- .pt2 -------------------------------------------------------------------------------------


def test_a_pt2_program_with_its_own_example_inputs(capsys, tmp_path):
    x = torch.randn(2, 4)
    pt2 = _save_program(tmp_path / "net.pt2", Net(), (x,))
    out_path = tmp_path / "net.passlens"
    code, out, err = run(capsys, "explore", pt2, *PIPELINE, "--save", out_path)
    assert code == 0 and err == ""
    assert steps(out)[:3] == STEPS
    (saved,) = saved_inputs(out_path)
    np.testing.assert_array_equal(np.asarray(saved), x.numpy())  # the program's own inputs


def test_a_pt2_program_without_example_inputs_takes_input_shape(capsys, tmp_path):
    batch = torch.export.Dim("batch")
    pt2 = _save_program(
        tmp_path / "dyn.pt2",
        Net(),
        (torch.randn(2, 4),),
        dynamic_shapes=({0: batch},),
        keep_inputs=False,
    )
    assert torch.export.load(str(pt2)).example_inputs is None
    out_path = tmp_path / "a.passlens"
    code, out, err = run(capsys, "explore", pt2, *PIPELINE, "--save", out_path)
    assert code == 0 and err == "" and steps(out)[:3] == STEPS
    assert saved_inputs(out_path) is None  # the check makes inputs up from the signature
    code, _, err = run(
        capsys, "explore", pt2, *PIPELINE, "--input-shape", "6,4", "--save", out_path
    )
    assert code == 0 and err == ""
    (x,) = saved_inputs(out_path)
    assert x.shape == (6, 4) and np.asarray(x).dtype == np.float32


def test_input_shape_overrides_a_pt2_programs_inputs_and_takes_its_dtype(capsys, tmp_path):
    namespace: dict = {}
    exec(MODELS, namespace)
    pt2 = _save_program(
        tmp_path / "tok.pt2", namespace["Tokens"](), (torch.zeros(2, 6, dtype=torch.int64),)
    )
    out_path = tmp_path / "t.passlens"
    code, _, err = run(
        capsys, "explore", pt2, *PIPELINE, "--input-shape", "2,6", "--save", out_path
    )
    assert code == 0 and err == ""
    (ids,) = saved_inputs(out_path)
    ids = np.asarray(ids)
    assert ids.dtype == np.int64 and ids.shape == (2, 6)  # the program's dtype, not float32
    assert set(np.unique(ids)) <= {0, 1} and ids.any()  # random valid indices, not all zeros


def test_a_pt2_program_checks_with_its_inputs(capsys, tmp_path):
    pt2 = _save_program(tmp_path / "net.pt2", Net(), (torch.randn(2, 4),))
    code, out, err = run(capsys, "explore", pt2, *PIPELINE, "--check")
    assert code == 0 and err == ""
    assert "torch.export" in out


# ----- package.module:ATTR and file.py:ATTR -----------------------------------------------------


@pytest.mark.parametrize(
    "attr,shape",
    [
        ("net", (3, 4)),  # an instance: the module's example_inputs
        ("Net", (3, 4)),  # an nn.Module class, made with no arguments
        ("factory", (3, 4)),  # a function returning a model
        ("tagged", (5, 4)),  # the model's own example_inputs come first
        ("make", (2, 4)),  # a function returning (model, example_args)
    ],
)
@pytest.mark.parametrize("form", ["module", "file"])
def test_module_and_file_attributes(capsys, tmp_path, package, models_file, form, attr, shape):
    model = f"{package}.models:{attr}" if form == "module" else f"{models_file}:{attr}"
    out_path = tmp_path / "m.passlens"
    code, out, err = run(capsys, "explore", model, *PIPELINE, "--save", out_path)
    assert code == 0 and err == "", err
    assert steps(out)[:3] == STEPS
    (x,) = saved_inputs(out_path)
    assert tuple(x.shape) == shape


def test_the_current_folder_is_searched_for_a_module(capsys, tmp_path, monkeypatch):
    name = f"plsrc_cwd_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    try:
        code, out, err = run(capsys, "explore", f"{name}:net", *PIPELINE)
    finally:
        sys.modules.pop(name, None)
    assert code == 0 and err == "" and steps(out)[:3] == STEPS
    assert str(tmp_path) not in sys.path  # searched while importing, not left behind


def test_example_inputs_may_be_a_function(capsys, tmp_path):
    path = tmp_path / "fn_inputs.py"
    path.write_text(
        "import torch\n"
        "net = torch.nn.Linear(4, 2)\n"
        "def example_inputs():\n"
        "    return torch.randn(7, 4)\n"
    )
    out_path = tmp_path / "f.passlens"
    code, _, err = run(capsys, "explore", f"{path}:net", *PIPELINE, "--save", out_path)
    assert code == 0 and err == ""
    (x,) = saved_inputs(out_path)
    assert tuple(x.shape) == (7, 4)


# ----- --input-shape ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attr,spec,shape,dtype",
    [
        ("net", "9,4", (9, 4), np.float32),  # replaces the module's (3, 4)
        ("make", "1,4:float32", (1, 4), np.float32),  # replaces what make() returned
        ("Tokens", "2,6:int64", (2, 6), np.int64),
        ("Tokens", "2,6:i32", (2, 6), np.int32),
    ],
)
def test_input_shape_supplies_and_overrides(capsys, tmp_path, package, attr, spec, shape, dtype):
    out_path = tmp_path / "s.passlens"
    code, _, err = run(
        capsys,
        "explore",
        f"{package}.models:{attr}",
        *PIPELINE,
        "--input-shape",
        spec,
        "--save",
        out_path,
    )
    assert code == 0 and err == "", err
    (x,) = saved_inputs(out_path)
    x = np.asarray(x)
    assert x.shape == shape and x.dtype == dtype


def test_input_shape_overrides_a_python_files_model_inputs(capsys, tmp_path):
    path = tmp_path / "tnet.py"
    path.write_text(
        "import torch\n"
        "def model():\n"
        "    return torch.nn.Linear(4, 2).eval(), (torch.randn(2, 4),)\n"
    )
    out_path = tmp_path / "p.passlens"
    code, _, err = run(
        capsys, "explore", path, *PIPELINE, "--input-shape", "3,4", "--save", out_path
    )
    assert code == 0 and err == ""
    (x,) = saved_inputs(out_path)
    assert tuple(x.shape) == (3, 4)


def test_input_shape_gives_an_ir_model_numpy_inputs(capsys, tmp_path):
    path = tmp_path / "m.ir"
    path.write_text(IR)
    out_path = tmp_path / "i.passlens"
    code, _, err = run(
        capsys, "explore", path, *PIPELINE, "--input-shape", "5,3", "--save", out_path
    )
    assert code == 0 and err == ""
    (x,) = saved_inputs(out_path)
    assert isinstance(x, np.ndarray) and x.shape == (5, 3) and x.dtype == np.float32


def test_several_inputs_in_order(capsys, tmp_path):
    path = tmp_path / "two.py"
    path.write_text(
        textwrap.dedent("""
        import torch

        class Two(torch.nn.Module):
            def forward(self, x, ids):
                return x * ids.to(x.dtype)
        """)
    )
    out_path = tmp_path / "two.passlens"
    code, _, err = run(
        capsys,
        "explore",
        f"{path}:Two",
        *PIPELINE,
        "--input-shape",
        "2,3",
        "--input-shape",
        "2,3:int64",
        "--save",
        out_path,
    )
    assert code == 0 and err == "", err
    x, ids = (np.asarray(a) for a in saved_inputs(out_path))
    assert x.dtype == np.float32 and ids.dtype == np.int64 and x.shape == ids.shape == (2, 3)


def test_explore_help_says_what_model_can_be(capsys):
    code, out, _ = run(capsys, "explore", "--help")
    assert code == 0
    for text in (".pt2", "package.module:ATTR", "model.py:ATTR", "--input-shape", "1,16:int64"):
        assert text in out, text


# ----- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,fragments",
    [
        (["{tmp}/missing.pt2"], ["no such file", "missing.pt2"]),
        (["{tmp}/missing.py:net"], ["no such file", "missing.py"]),
        (["{tmp}/garbage.pt2"], ["garbage.pt2: not a program saved by torch.export.save"]),
        (["plsrc_nowhere_at_all.models:net"], ["no module named 'plsrc_nowhere_at_all'"]),
        (["{pkg}.nomodule:net"], ["no module named '{pkg}.nomodule'"]),
        (["{pkg}.models"], ["no such file", "write {pkg}.models:ATTR"]),
        (["{pkg}.crash:net"], ["importing {pkg}.crash failed", "ZeroDivisionError"]),
        (["{pkg}.needs:net"], ["importing {pkg}.needs failed", "plsrc_missing_dependency"]),
        (["{pkg}.models:nothere"], ["has no attribute 'nothere'", "(it defines ", "Net"]),
        (["{pkg}.models:net.nothere"], ["no attribute 'nothere'"]),
        (["{file}:nothere"], ["defines no 'nothere'"]),
        (["{pkg}.models:count"], ["is a int: expected an nn.Module"]),
        (["{pkg}.models:NotAModule"], ["is the class NotAModule, not an nn.Module"]),
        (["{pkg}.models:needs_args"], ["needs_args cannot be called with no arguments"]),
        (["{pkg}.models:broken"], ["broken() failed: RuntimeError: boom"]),
        (["{pkg}.models:returns_list"], ["returns_list() returned a list"]),
        (["{pkg}.dict_inputs:net"], ["example_inputs is a dict"]),
        (["{ir}:main"], ["only a .py file or a Python module has attributes"]),
        (
            ["{tmp}/noinputs.py:net"],
            ["no example inputs for the model", "--input-shape", "define example_inputs"],
        ),
        (
            ["{pkg}.models:net", "--input-shape", "2,x"],
            ["bad --input-shape '2,x'", "e.g. 1,3,224,224 or 1,16:int64"],
        ),
        (["{pkg}.models:net", "--input-shape", "2,4:float99"], ["unknown dtype 'float99'"]),
        (["{pkg}.models:net", "--input-shape", "100000,100000"], ["elements is more than"]),
        (
            ["{pkg}.models:net", "--input-shape", "2,5"],
            ["cannot import", "torch.export could not capture the model"],
        ),
        (
            ["{pt2}", "--input-shape", "2,5"],
            ["input 0 of the program is float32[2, 4]; --input-shape gives 2,5:float32"],
        ),
        (
            ["{pt2}", "--input-shape", "2,4:int64"],
            ["input 0 of the program is float32[2, 4]"],
        ),
        (
            ["{pt2}", "--input-shape", "2,4", "--input-shape", "2,4"],
            ["the program takes 1 input(s) (float32[2, 4]); --input-shape gives 2"],
        ),
    ],
)
def test_errors_are_one_line_and_exit_2(capsys, tmp_path, package, models_file, argv, fragments):
    (tmp_path / "garbage.pt2").write_bytes(b"not a zip file")
    (tmp_path / "noinputs.py").write_text("import torch\nnet = torch.nn.Linear(4, 2)\n")
    (tmp_path / "m.ir").write_text(IR)
    pt2 = _save_program(tmp_path / "net.pt2", Net(), (torch.randn(2, 4),))
    subst = {
        "{tmp}": str(tmp_path),
        "{pkg}": package,
        "{file}": str(models_file),
        "{ir}": str(tmp_path / "m.ir"),
        "{pt2}": str(pt2),
    }

    def fill(text):
        for k, v in subst.items():
            text = text.replace(k, v)
        return text

    code, out, err = run(capsys, "explore", *map(fill, argv), *PIPELINE)
    assert code == 2, (out, err)
    assert_one_line_error(err, *map(fill, fragments))
