"""Untrusted inputs, round three (issue #39, item 5): ``passlens explore x.pt2`` runs nothing of
the file's. ``torch.export.load`` unpickles a .pt2's sample inputs (weights-only first, then
falling back to any pickle), pickled weights and constants, custom objects, and evaluates its
symbolic sizes with sympify; passlens reads the archive itself (passlens.pt2). Each payload
here would create a marker file; the marker must not appear."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

import explorer
from passlens.pt2 import check_expr, check_program_json, load_program
from tests.explorer.store.test_untrusted_zips import write_zeros_member
from tests.passlens.test_cli import assert_one_line_error, run

torch = pytest.importorskip("torch")

PIPELINE = ("--pipeline", "fold-constant")


class Payload:
    """Unpickling this calls ``open(marker, "w")``: the file appears."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


def _save(path: Path, dynamic: bool = False) -> Path:
    torch.manual_seed(0)
    shapes = ({0: torch.export.Dim("batch")},) if dynamic else None
    ep = torch.export.export(Net().eval(), (torch.randn(2, 4),), dynamic_shapes=shapes)
    torch.export.save(ep, str(path))
    return path


def _members(path: Path) -> tuple[str, dict[str, bytes]]:
    with zipfile.ZipFile(path) as zf:
        members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
    root = next(iter(members)).split("/", 1)[0]
    return root, members


def _rewrite(path: Path, out: Path, changes: dict[str, bytes | None]) -> Path:
    """``path`` with members (named below the archive's root folder) replaced or added."""
    root, members = _members(path)
    for name, data in changes.items():
        members[f"{root}/{name}"] = data
    with zipfile.ZipFile(out, "w") as zf:
        for k, v in members.items():
            if v is not None:
                zf.writestr(k, v)
    return out


def _pickled(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _edit_json(path: Path, name: str, edit) -> bytes:
    root, members = _members(path)
    doc = json.loads(members[f"{root}/{name}"])
    edit(doc)
    return json.dumps(doc).encode()


@pytest.fixture
def marker(tmp_path):
    return tmp_path / "payload-ran"


@pytest.fixture
def inputs_payload(tmp_path, marker):
    """A .pt2 whose sample inputs hold the payload."""
    plain = _save(tmp_path / "plain.pt2")
    sample = _pickled(((Payload(marker),), {}))
    return _rewrite(plain, tmp_path / "inputs.pt2", {"data/sample_inputs/model.pt": sample})


def test_torch_export_load_runs_the_sample_inputs_payload(inputs_payload, marker):
    """The attack is real: torch's own loader runs it (its weights-only attempt fails and it
    falls back to any pickle)."""
    try:
        torch.export.load(str(inputs_payload))
    except Exception:
        pass
    assert marker.exists()


def test_passlens_explore_does_not_run_a_sample_inputs_payload(capsys, inputs_payload, marker):
    code, _, err = run(capsys, "explore", inputs_payload, *PIPELINE)
    assert not marker.exists()
    assert code == 2
    assert "its sample inputs were not read" in err and "--input-shape" in err
    assert "Traceback" not in err
    # the program itself loads: with the shapes given, it explores
    code, out, err = run(capsys, "explore", inputs_payload, *PIPELINE, "--input-shape", "2,4")
    assert not marker.exists()
    assert code == 0, err
    assert "torch.export" in out


def test_explorer_explore_of_a_pt2_path_runs_no_payload(inputs_payload, marker):
    with pytest.raises(TypeError):  # explore takes programs, not .pt2 paths: nothing is read
        explorer.explore(str(inputs_payload))
    assert not marker.exists()


def test_a_normal_pt2_explores_with_its_own_sample_inputs(tmp_path):
    ep, sample, notes = load_program(_save(tmp_path / "net.pt2"))
    assert notes == [] and isinstance(ep, torch.export.ExportedProgram)
    (x,), kwargs = sample
    assert kwargs == {} and x.shape == (2, 4)
    torch.manual_seed(0)
    reference = torch.export.export(Net().eval(), (x,)).module()(x)
    torch.testing.assert_close(ep.module()(x), reference)


def _add_constant(path: Path, out: Path, fqn: str, path_name: str, data: bytes, pickle: bool):
    def edit(doc):
        doc["config"][fqn] = {
            "path_name": path_name,
            "is_param": False,
            "use_pickle": pickle,
            "tensor_meta": None,
        }

    config = _edit_json(path, "data/constants/model_constants_config.json", edit)
    changes = {"data/constants/model_constants_config.json": config}
    changes[f"data/constants/{path_name}"] = data
    return _rewrite(path, out, changes)


@pytest.mark.parametrize(
    "path_name, pickle, match",
    [
        ("tensor_0", True, "not a program saved by torch.export.save"),  # weights-only refuses
        ("custom_obj_0", False, "custom (torchbind) object"),
        ("opaque_obj_0", False, "an opaque object"),
    ],
)
def test_a_constant_payload_does_not_run(capsys, tmp_path, marker, path_name, pickle, match):
    plain = _save(tmp_path / "plain.pt2")
    bad = _add_constant(
        plain, tmp_path / "c.pt2", "evil", path_name, _pickled(Payload(marker)), pickle
    )
    code, _, err = run(capsys, "explore", bad, *PIPELINE)
    assert not marker.exists()
    assert code == 2
    assert_one_line_error(err, str(bad), match)


def test_a_pickled_weight_payload_does_not_run(capsys, tmp_path, marker):
    plain = _save(tmp_path / "plain.pt2")

    def edit(doc):
        entry = doc["config"]["fc.bias"]
        entry["use_pickle"] = True

    config = _edit_json(plain, "data/weights/model_weights_config.json", edit)
    root, members = _members(plain)
    bias = json.loads(members[f"{root}/data/weights/model_weights_config.json"])
    name = bias["config"]["fc.bias"]["path_name"]
    bad = _rewrite(
        plain,
        tmp_path / "w.pt2",
        {
            "data/weights/model_weights_config.json": config,
            f"data/weights/{name}": _pickled(Payload(marker)),
        },
    )
    code, _, err = run(capsys, "explore", bad, *PIPELINE)
    assert not marker.exists() and code == 2
    assert_one_line_error(err, str(bad))


def test_a_symbolic_size_payload_does_not_run(capsys, tmp_path, marker):
    """sympify evaluates a size's text as Python: torch.export.load runs this one."""
    dyn = _save(tmp_path / "dyn.pt2", dynamic=True)
    payload = f"Symbol('s0') + __import__('builtins').open({str(marker)!r}, 'w').__class__"
    text = _edit_json(dyn, "models/model.json", lambda d: None).decode()
    assert '"expr_str": "' in text
    head, sep, rest = text.partition('"expr_str": "')
    old = rest.split('"', 1)[0]
    bad_text = head + sep + json.dumps(payload)[1:-1] + rest[len(old) :]
    bad = _rewrite(dyn, tmp_path / "sym.pt2", {"models/model.json": bad_text.encode()})
    try:
        torch.export.load(str(bad))
    except Exception:
        pass
    assert marker.exists()  # the attack is real
    marker.unlink()
    code, _, err = run(capsys, "explore", bad, *PIPELINE)
    assert not marker.exists() and code == 2
    assert_one_line_error(err, str(bad), "symbolic size", "not loaded")


def test_a_dynamic_program_still_loads(tmp_path):
    ep, sample, notes = load_program(_save(tmp_path / "dyn.pt2", dynamic=True))
    assert notes == [] and sample[0][0].shape == (2, 4)
    assert ep.module()(torch.randn(5, 4)).shape == (5, 8)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('x')",
        "open('x', 'w')",
        "s0.__class__",
        "Symbol('a' + 'b')",
        "f'{s0}'",
        "lambda: 1",
        "(s0 := 1)",
        "Symbol('s0', **{'a': 1})",
        "[x for x in s0]",
        "getattr(s0, 'x')",
        "s0[0]",
        "Float(b'1')",
    ],
)
def test_a_symbolic_size_that_is_not_arithmetic_is_refused(text):
    with pytest.raises(ValueError, match="symbolic size"):
        check_expr(text)


@pytest.mark.parametrize(
    "text",
    [
        "Symbol('s77', integer=True, positive=True)",
        "Add(Mul(Integer(2), Symbol('s0', integer=True)), Integer(1))",
        "Float('1.5', precision=53)",
        "FloorDiv(Symbol('s0'), Integer(2))",
        "StrictLessThan(Symbol('u0'), oo)",
    ],
)
def test_the_sizes_torch_writes_are_accepted(text):
    check_expr(text)


def test_a_subgraph_name_that_is_not_an_identifier_is_refused():
    """A subgraph's name is written into the generated code as getattr(self, "NAME")."""
    doc = {"x": [{"as_graph": {"name": 'a") or open("p", "w") or ("', "graph": {}}}]}
    with pytest.raises(ValueError, match="identifier"):
        check_program_json(doc)
    check_program_json({"x": [{"as_graph": {"name": "true_graph_0", "graph": {}}}]})


def test_aot_inductor_code_is_refused(capsys, tmp_path):
    plain = _save(tmp_path / "plain.pt2")
    bad = _rewrite(plain, tmp_path / "aoti.pt2", {"data/aotinductor/model/model.so": b"\x7fELF"})
    code, _, err = run(capsys, "explore", bad, *PIPELINE)
    assert code == 2
    assert_one_line_error(err, "AOTInductor compiled code")


def test_a_zip_bombed_pt2_member_is_refused_before_torch_reads_it(capsys, tmp_path):
    plain = _save(tmp_path / "plain.pt2")
    root, members = _members(plain)
    bad = tmp_path / "bomb.pt2"
    with zipfile.ZipFile(bad, "w", allowZip64=True) as zf:
        for k, v in members.items():
            if not k.endswith("data/weights/weight_0"):
                zf.writestr(k, v)
        zf.compression = zipfile.ZIP_DEFLATED
        write_zeros_member(zf, f"{root}/data/weights/weight_0", 256 << 20)
    assert bad.stat().st_size < 1 << 20
    code, _, err = run(capsys, "explore", bad, *PIPELINE)
    assert code == 2
    assert_one_line_error(err, "weight_0", "100 times")


# ----- what the docs say runs code ---------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _what_runs_code() -> str:
    text = (ROOT / "docs" / "reference.md").read_text()
    start = text.index("**What runs code**")
    return " ".join(text[start : text.index("`python -m passlens` drops", start)].split())


def test_the_docs_list_python_sources_as_running_code_and_pt2_as_read_safely():
    """What the docs say is what the tests above show: .py files and modules run (they are
    Python); a .pt2 runs nothing of the file's (the payload tests above)."""
    from passlens.model_sources import HELP

    para = _what_runs_code()
    runs, _, safe = para.partition("runs no code of the file's")
    assert "`model.py` (run as Python)" in runs and "`module:ATTR` (imported)" in runs
    assert "`.pt2`" not in runs.replace("Loading a trace, an ONNX file, IR text or a `.pt2`", "")
    assert safe and "weights-only unpickler" in safe and "AOTInductor code refused" in safe
    help_text = " ".join(HELP.split())
    assert ".py files and modules are run as Python: only use ones you trust." in help_text
    assert "A .pt2 is read safely" in help_text
    for doc in (ROOT / "README.md", ROOT / "docs" / "reference.md"):
        flat = " ".join(doc.read_text().split())
        assert "unpickled by torch" not in flat and "pickled by torch" not in flat, doc
    assert "pickled by torch" not in help_text and ".pt2 files are unpickled" not in help_text


# ----- the program's own calls (issue #39, items 1 and 2) -----------------------------------
# A .pt2 is a program from a file, not the user's code: exploring it trusts none of its ops,
# and a check runs it as the reference only when every call it makes is a known pure
# computation (explorer.trust.program_refusals) or trusted with --trust-op.


class Small(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


def _program_with(path: Path, make, meta_val) -> Path:
    """A .pt2 of ``Small`` whose graph also calls ``make(graph)`` (a node valued like
    ``meta_val``), summed into the output so nothing drops it."""
    ep = torch.export.export(Small(), (torch.randn(2, 4),))
    g = ep.graph_module.graph
    relu = next(n for n in g.nodes if n.op == "call_function" and "relu" in str(n.target))
    users = list(relu.users)
    with g.inserting_after(relu):
        extra = make(g)
    extra.meta["val"] = meta_val
    with g.inserting_after(extra):
        total = g.call_function(torch.ops.aten.sum.default, (extra,), {})
    total.meta["val"] = torch.empty((), dtype=meta_val.dtype)
    with g.inserting_after(total):
        added = g.call_function(torch.ops.aten.add.Tensor, (relu, total))
    added.meta["val"] = torch.empty(2, 4)
    for u in users:
        u.replace_input_with(relu, added)
    ep.graph_module.recompile()
    torch.export.save(ep, str(path))
    return path


@pytest.fixture
def from_file_program(tmp_path):
    target = tmp_path / "notes.bin"

    def make(g):
        return g.call_function(
            torch.ops.aten.from_file.default, (str(target), True, 16), {"dtype": torch.uint8}
        )

    return _program_with(tmp_path / "evil.pt2", make, torch.empty(16, dtype=torch.uint8)), target


def test_a_pt2_calling_from_file_is_refused_at_check_and_writes_nothing(capsys, from_file_program):
    path, target = from_file_program
    code, out, err = run(capsys, "explore", path, *PIPELINE, "--check")
    assert code == 2 and not target.exists()
    assert_one_line_error(err, "refused to run", "aten.from_file.default", "--trust-op")
    # viewing it runs nothing and works
    code, out, err = run(capsys, "explore", path, *PIPELINE)
    assert code == 0 and not target.exists(), err
    assert "aten.from_file.default" in out


def test_a_pt2_op_trusted_on_the_command_line_runs(capsys, from_file_program):
    path, target = from_file_program
    trust = ("--trust-op", "aten.from_file")
    code, out, err = run(capsys, "explore", path, *PIPELINE, "--check", *trust)
    assert target.exists()  # the person trusted it: it ran (shared=True makes the file)
    assert "refused" not in err


def test_a_pt2_is_refused_up_front_for_another_compiler(capsys, from_file_program):
    path, target = from_file_program
    code, out, err = run(capsys, "explore", path, "--compiler", "inductor")
    assert code == 2 and not target.exists()
    assert_one_line_error(err, "aten.from_file.default", "--trust-op")


def test_a_normal_pt2_checks_clean(capsys, tmp_path):
    code, out, err = run(capsys, "explore", _save(tmp_path / "net.pt2"), *PIPELINE, "--check")
    assert code == 0, err
    assert "refused" not in err + out


def test_a_transformer_pt2_checks_without_a_refusal(capsys, tmp_path):
    """A real model's program calls assertions, sizes, dunder bitwise ops, dropout with
    train=False and attention without dropout: none of them is refused."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(
        n_layer=1, n_embd=32, n_head=2, vocab_size=50, n_positions=16, use_cache=False
    )
    torch.manual_seed(0)
    model = transformers.GPT2Model(cfg).eval()
    ep = torch.export.export(model, (torch.randint(0, 50, (1, 6)),))
    torch.export.save(ep, str(tmp_path / "gpt2.pt2"))
    code, out, err = run(capsys, "explore", tmp_path / "gpt2.pt2", *PIPELINE, "--check")
    assert "refused" not in err + out
    assert code == 0, err


def _graph(fn, *args):
    return torch.export.export(fn, args)


def test_program_refusals_judge_each_call():
    from explorer.trust import program_refusals

    class Drop(torch.nn.Module):
        def __init__(self, train):
            super().__init__()
            self.t = train

        def forward(self, x):
            return torch.ops.aten.dropout.default(x, 0.5, self.t)

    none = frozenset()
    assert program_refusals(_graph(Drop(False), torch.randn(3)), none) == {}
    refused = program_refusals(_graph(Drop(True), torch.randn(3)), none)
    assert (
        list(refused) == ["aten.dropout.default"]
        and "train=False" in refused["aten.dropout.default"]
    )

    class Empty(torch.nn.Module):
        def forward(self, x):
            return torch.empty_like(x).fill_(1) + x

    assert program_refusals(_graph(Empty(), torch.randn(3)), none) == {}

    gm = torch.fx.symbolic_trace(Small())
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    node.target = print  # a Python function, not a torch op
    assert "builtins.print" in program_refusals(gm, none)


def test_an_empty_is_filled_with_zeros_in_the_reference():
    """What an allocating op makes holds zeros, not memory the process held before."""
    from explorer.check.references import _fx_run

    class Empty(torch.nn.Module):
        def forward(self, x):
            return torch.empty(4096, dtype=torch.float32) + x.sum() * 0

    ep = torch.export.export(Empty(), (torch.randn(3),))
    (out,), _ = _fx_run(ep, [torch.randn(3)], untrusted=True)
    assert (out == 0).all()


def test_a_pt2_asking_for_a_huge_value_fails_under_the_budget(capsys, tmp_path):
    def make(g):
        return g.call_function(torch.ops.aten.full.default, ([1 << 17, 1 << 17], 1.0), {})

    path = _program_with(tmp_path / "huge.pt2", make, torch.empty(1, 1))
    code, out, err = run(capsys, "explore", path, *PIPELINE, "--check")
    assert "Traceback" not in err
    assert "needed more than" in err + out, err + out


def test_a_normal_pt2_explores_with_inductor(capsys, tmp_path):
    """torch.compile takes the program's graph as a module (it cannot call an
    ExportedProgram)."""
    code, out, err = run(capsys, "explore", _save(tmp_path / "net.pt2"), "--compiler", "inductor")
    assert code == 0, err
    assert "refused" not in err


def test_an_empty_in_a_pt2_is_refused_for_a_compiler_that_runs_the_program_itself(capsys, tmp_path):
    def make(g):
        return g.call_function(torch.ops.aten.empty.memory_format, ([4],), {})

    path = _program_with(tmp_path / "empty.pt2", make, torch.empty(4))
    code, out, err = run(capsys, "explore", path, "--compiler", "inductor")
    assert code == 2
    assert_one_line_error(err, "aten.empty.memory_format")
