"""Reading a `.pt2` file (`torch.export.save`) without running code from it.

`torch.export.load` (torch 2.13, `torch/export/pt2_archive/_package.py` and
`torch/_export/serde/serialize.py`) runs code of the file's choosing in these places:

- the sample inputs: `torch.load(weights_only=True)`, and when that fails, again with
  `weights_only=False`: any pickle (`deserialize_torch_artifact`); the same for the
  state dict and constants of the older (2.7) format;
- a weight or tensor constant marked `use_pickle`: `torch.load(weights_only=False)`;
- a custom object constant (`custom_obj_*`, torchbind): `torch._C._pickle_load_obj`; an
  opaque object constant (`opaque_obj_*`): `pickle.loads`;
- every symbolic size (`expr_str`): `sympy.sympify`, which evaluates its text as Python;
- a subgraph's name (`as_graph`): written into the graph module's generated Python code as
  `getattr(self, "NAME")`, unescaped;
- members under `data/aotinductor/`: compiled code (a shared library), loaded.

So passlens reads the archive itself with torch's own pieces and the same program format:
every member is first checked against its size and compression ratio
(`explorer.store.zipread`); anything pickled is read only through torch's weights-only
unpickler (tensors and plain containers, nothing else), inside a nested zip checked the same
way; sizes must be arithmetic on symbol names; subgraph names must be identifiers; custom and
opaque objects, AOTInductor code and the older format are refused with one clear error. Sample
inputs the weights-only unpickler cannot read are skipped with a note (give `--input-shape`).
"""

from __future__ import annotations

import ast
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from explorer.store.zipread import check_archive
from passlens.errors import CLIError
from passlens.errors import one_line as _one_line

MAX_PROGRAM_JSON = 256 << 20  # models/model.json (a 10,000-node program is about 10 MB)
MAX_EXPR_CHARS = 10_000  # one symbolic size
MAX_EMPTY_TENSOR_BYTES = 1 << 30  # a weight stored as 0 bytes is made as zeros of its shape
MODEL = "model"  # the program torch.export.load returns

# what a symbolic size (sympy's srepr of it) may call or name: torch's sympy functions, and
# sympy's numbers, arithmetic, relations and logic
_FUNCTIONS = frozenset(
    (
        "FloorDiv ModularIndexing Where PythonMod Mod CleanDiv CeilToInt FloorToInt CeilDiv "
        "LShift RShift PowByNatural FloatPow FloatTrueDiv IntTrueDiv TruncToFloat TruncToInt "
        "RoundToInt RoundDecimal ToFloat Identity IsNonOverlappingAndDenseIndicator "
        "Symbol Integer Rational Float Add Mul Pow Max Min Abs floor ceiling sqrt Piecewise "
        "ExprCondPair Tuple Eq Ne Lt Le Gt Ge Equality Unequality StrictLessThan LessThan "
        "StrictGreaterThan GreaterThan And Or Not Xor ITE"
    ).split()
)
_CONSTANTS = frozenset(
    "oo zoo nan true false pi E I NegativeOne One Zero Half Infinity NegativeInfinity".split()
)
# a symbol's assumptions and a Float's precision: Symbol('s0', integer=True, positive=True)
_KEYWORDS = frozenset(
    (
        "integer positive negative nonnegative nonpositive real extended_real finite infinite "
        "zero nonzero even odd rational irrational prime composite commutative precision"
    ).split()
)
_SYMBOL = re.compile(r"^[a-z]{1,8}\d{1,9}$")  # s0, u12, zuf0, ps3: torch's symbol names
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")  # Float('1.5', precision=53)
_NODES = (
    ast.Expression,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.keyword,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.BoolOp,
    ast.Tuple,
    ast.List,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
)


class Pt2Refused(CLIError):
    """A `.pt2` that loading would have to run code from, or that is not well formed."""


def check_expr(text: Any) -> None:
    """A symbolic size (sympify evaluates it as Python) is calls of known functions on symbol
    names, numbers and symbol-name strings, with arithmetic, comparisons and a symbol's
    assumptions as keywords: no attribute, subscript, other name, or other string."""
    if not isinstance(text, str) or len(text) > MAX_EXPR_CHARS:
        raise ValueError(f"a symbolic size must be text of at most {MAX_EXPR_CHARS:,} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ValueError(f"symbolic size {text[:80]!r} is not an expression ({e})") from None
    for node in ast.walk(tree):
        bad = None
        if not isinstance(node, _NODES):
            bad = type(node).__name__
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS):
                bad = "a call of " + ast.unparse(node.func)[:40]
        elif isinstance(node, ast.Name):
            if not (node.id in _FUNCTIONS or node.id in _CONSTANTS or _SYMBOL.match(node.id)):
                bad = f"the name {node.id[:40]!r}"
        elif isinstance(node, ast.keyword):
            if node.arg not in _KEYWORDS:
                bad = f"the keyword {str(node.arg)[:40]!r}"
        elif isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, str) and not (_SYMBOL.match(v) or _NUMBER.match(v)):
                bad = f"the string {v[:40]!r}"
            elif not isinstance(v, (str, int, float, bool)):
                bad = f"the constant {v!r:.40}"
        if bad is not None:
            raise ValueError(f"symbolic size {text[:80]!r} holds {bad}, not part of a size")


def _walk(obj: Any):
    """Every (key, value) of every mapping in a JSON document, without recursion."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                yield k, v
                if isinstance(v, (dict, list)):
                    stack.append(v)
        elif isinstance(x, list):
            stack.extend(v for v in x if isinstance(v, (dict, list)))


def check_program_json(doc: Any) -> None:
    """The serialized program holds no text that deserializing would run as Python."""
    for key, value in _walk(doc):
        if key == "expr_str":
            check_expr(value)
        elif key == "as_graph" and isinstance(value, dict):
            name = value.get("name")
            if not (isinstance(name, str) and name.isidentifier()):
                raise ValueError(f"a subgraph's name must be an identifier, not {name!r:.80}")


class _Archive:
    """The members of a `.pt2`, each read through torch's reader once checked."""

    def __init__(self, path: Path):
        from torch.export.pt2_archive._package import PT2ArchiveReader

        self.path = path
        with zipfile.ZipFile(path) as zf:
            check_archive(zf, path, Pt2Refused)
            names = zf.namelist()
            self.sizes = {i.filename: i.file_size for i in zf.infolist()}
        roots = {n.split("/", 1)[0] for n in names}
        if len(roots) != 1 or any("/" not in n for n in names):
            raise Pt2Refused(f"{path}: not a program saved by torch.export.save (its layout)")
        self.root = roots.pop()
        self.names = [n.split("/", 1)[1] for n in names]
        self.sizes_by_name = {k.split("/", 1)[1]: v for k, v in self.sizes.items()}
        self.reader = PT2ArchiveReader(str(path))

    def read(self, name: str, cap: int | None = None) -> bytes:
        size = self.sizes_by_name.get(name)
        if size is None:
            raise Pt2Refused(f"{self.path}: not a program saved by torch.export.save (no {name})")
        if cap is not None and size > cap:
            raise Pt2Refused(f"{self.path}: {name} is {size:,} bytes, over {cap:,}; not read")
        return self.reader.read_bytes(name)


def safe_torch_load(data: bytes, what: str, where: Any) -> Any:
    """`torch.load` of pickled bytes through the weights-only unpickler only (tensors,
    plain containers and numbers: a pickle naming anything else is refused by torch), after
    the nested zip `torch.save` writes is checked like the archive."""
    import torch

    buffer = io.BytesIO(data)
    if zipfile.is_zipfile(buffer):
        with zipfile.ZipFile(buffer) as zf:
            check_archive(zf, f"{where} ({what})", Pt2Refused)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True, map_location="cpu")


def load_program(path: str | Path) -> tuple[Any, tuple | None, list[str]]:
    """The program of a `.pt2`, its sample inputs `(args, kwargs)` (None when it kept
    none or they are not plain tensors) and notes to show the user. Raises CLIError."""
    path = Path(path)
    try:
        import torch
    except ImportError:
        raise CLIError(
            f"{path} (a torch.export program) needs torch, which is not installed"
        ) from None
    try:
        return _load(path, torch)
    except CLIError:
        raise
    except (RecursionError, MemoryError) as e:
        raise Pt2Refused(f"{path}: the program is too large or too deep to read ({e})") from None
    except Exception as e:
        raise Pt2Refused(
            f"{path}: not a program saved by torch.export.save ({_one_line(e)})"
        ) from None


def _load(path: Path, torch: Any) -> tuple[Any, tuple | None, list[str]]:
    from torch._export.serde import schema
    from torch._export.serde.serialize import ExportedProgramDeserializer, _dict_to_dataclass
    from torch.export.pt2_archive import constants as c

    try:
        zipfile.ZipFile(path).close()
    except (zipfile.BadZipFile, OSError) as e:
        raise Pt2Refused(f"{path}: not a program saved by torch.export.save ({e})") from None
    archive = _Archive(path)
    names = archive.sizes_by_name
    if c.ARCHIVE_VERSION_PATH not in names:
        raise Pt2Refused(
            f"{path}: an older .pt2 format (torch 2.7 or before), which passlens does not "
            "read: load and save it again with torch.export.save in a current torch"
        )
    version = archive.read(c.ARCHIVE_VERSION_PATH, 64).decode(errors="replace")
    if version != c.ARCHIVE_VERSION_VALUE:
        raise Pt2Refused(
            f"{path}: archive version {version[:20]!r}; this torch reads "
            f"{c.ARCHIVE_VERSION_VALUE!r}"
        )
    if any(n.startswith(c.AOTINDUCTOR_DIR) for n in names):
        raise Pt2Refused(
            f"{path}: holds AOTInductor compiled code (a shared library that loading would "
            "run); passlens does not load it: save the program alone with torch.export.save"
        )
    model_json = c.MODELS_FILENAME_FORMAT.format(MODEL)
    if model_json not in names:
        raise Pt2Refused(f"{path}: no program named {MODEL!r} (no {model_json})")
    doc = json.loads(archive.read(model_json, MAX_PROGRAM_JSON).decode("utf-8"))
    try:
        check_program_json(doc)
    except ValueError as e:
        raise Pt2Refused(f"{path}: {e}; not loaded (loading would run it as Python)") from None
    serialized = _dict_to_dataclass(schema.ExportedProgram, doc)
    state_dict = _tensors(archive, c, "weights", path)
    constants = _tensors(archive, c, "constants", path)
    notes: list[str] = []
    sample = _sample_inputs(archive, c, path, notes)
    ep = ExportedProgramDeserializer(None).deserialize(serialized, state_dict, constants, sample)
    _check_modules(ep, path)
    return ep, sample, notes


def _tensors(archive: _Archive, c: Any, kind: str, path: Path) -> dict:
    """The weights or constants: raw tensors as torch reads them, pickled ones through the
    weights-only unpickler; custom and opaque objects refused."""
    import torch
    from torch._export.serde import schema
    from torch._export.serde.serialize import (
        _dict_to_dataclass,
        deserialize_device,
        deserialize_scalar_type,
        deserialize_size,
        deserialize_storage_offset,
        deserialize_stride,
    )

    base = c.WEIGHTS_DIR if kind == "weights" else c.CONSTANTS_DIR
    config_name = (
        c.WEIGHTS_CONFIG_FILENAME_FORMAT
        if kind == "weights"
        else c.CONSTANTS_CONFIG_FILENAME_FORMAT
    ).format(MODEL)
    if config_name not in archive.sizes_by_name:
        raise Pt2Refused(f"{path}: not a program saved by torch.export.save (no {config_name})")
    config = _dict_to_dataclass(
        schema.PayloadConfig, json.loads(archive.read(config_name, MAX_PROGRAM_JSON).decode())
    )
    files: dict[str, Any] = {}
    out: dict[str, Any] = {}
    for fqn, meta in config.config.items():
        name = meta.path_name
        record = base + name
        if kind == "constants" and not name.startswith(c.TENSOR_CONSTANT_FILENAME_PREFIX):
            what = (
                "a custom (torchbind) object"
                if name.startswith(c.CUSTOM_OBJ_FILENAME_PREFIX)
                else "an opaque object"
            )
            raise Pt2Refused(
                f"{path}: constant {fqn[:80]!r} is {what}, which loading would unpickle as "
                "arbitrary code; passlens does not load such programs"
            )
        if meta.use_pickle:
            out[fqn] = safe_torch_load(archive.read(record), f"{kind} {fqn[:80]}", path)
            if not isinstance(out[fqn], torch.Tensor):
                raise Pt2Refused(f"{path}: {kind[:-1]} {fqn[:80]!r} is not a tensor")
            continue
        tm = meta.tensor_meta
        if tm is None:
            raise Pt2Refused(f"{path}: {kind[:-1]} {fqn[:80]!r} has no tensor description")
        dtype = deserialize_scalar_type(tm.dtype)
        size = deserialize_size(tm.sizes)
        if name not in files:
            nbytes = archive.sizes_by_name.get(record)
            if nbytes is None:
                raise Pt2Refused(f"{path}: no member {record[:120]}")
            if nbytes == 0:
                numel = 1
                for d in size:
                    numel *= int(d)
                if numel * torch._utils._element_size(dtype) > MAX_EMPTY_TENSOR_BYTES:
                    raise Pt2Refused(
                        f"{path}: {kind[:-1]} {fqn[:80]!r} stores no data but declares "
                        f"{list(size)[:8]} ({dtype}); not made"
                    )
                files[name] = torch.zeros(size, dtype=dtype)
            else:
                item = torch._utils._element_size(dtype)
                if nbytes % item:
                    raise Pt2Refused(f"{path}: {record[:120]} is not whole {dtype} values")
                raw = archive.reader.archive_file.get_storage_from_record(
                    record, nbytes // item, dtype
                )
                t = torch.empty(0, dtype=dtype)
                t.set_(raw.untyped_storage(), 0, (nbytes // item,), (1,))
                files[name] = t
        tensor = torch.as_strided(
            files[name],
            size,
            deserialize_stride(tm.strides),
            deserialize_storage_offset(tm.storage_offset),
        )
        deserialize_device(tm.device)  # (well formed; passlens keeps every tensor on the CPU)
        if kind == "weights" and meta.is_param:
            tensor = torch.nn.Parameter(tensor, requires_grad=tm.requires_grad)
        out[fqn] = tensor
    return out


def _sample_inputs(archive: _Archive, c: Any, path: Path, notes: list[str]) -> tuple | None:
    """The saved sample inputs `(args, kwargs)`, read through the weights-only unpickler;
    None (with a note) when they hold anything else."""
    name = c.SAMPLE_INPUTS_FILENAME_FORMAT.format(MODEL)
    if name not in archive.sizes_by_name:
        return None
    data = archive.read(name)
    if not data:
        return None
    try:
        value = safe_torch_load(data, "sample inputs", path)
    except CLIError:
        raise
    except Exception as e:
        notes.append(
            f"{path}: its sample inputs were not read: they hold more than tensors and plain "
            f"values, which passlens does not unpickle ({_one_line(e)[:200]}); give each "
            "input's shape with --input-shape"
        )
        return None
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict)):
        notes.append(
            f"{path}: its sample inputs are not (args, kwargs); give each input's shape with "
            "--input-shape"
        )
        return None
    return value


def _check_modules(ep: Any, path: Path) -> None:
    """Backstop: every attribute a graph module's code reads is named by identifiers (its
    generated Python is only defined so far, not run)."""
    for _, module in ep.graph_module.named_modules():
        graph = getattr(module, "graph", None)
        for node in getattr(graph, "nodes", ()):
            if node.op in ("get_attr", "call_module"):
                parts = str(node.target).split(".")
                if not all(p.isidentifier() for p in parts):
                    raise Pt2Refused(
                        f"{path}: the program reads an attribute named {node.target!r:.80}, "
                        "not an identifier; not loaded"
                    )
