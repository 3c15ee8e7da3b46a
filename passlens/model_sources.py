"""What `passlens explore MODEL` can be, resolved to what `explorer.explore` takes: a
`(source, example_inputs)` pair, or one `passlens.cli.CLIError` line saying why not.

MODEL is one of:

- `model.onnx`: an ONNX model;
- `model.pt2`: a program saved by `torch.export.save`, read by `passlens.pt2`
  without running code from it (inputs: the program's own `example_inputs`, or
  `--input-shape`);
- `model.py`: a Python file defining `model()`, which returns `(model, example_args)` or
  a model;
- `model.py:ATTR` or `package.module:ATTR`: an `nn.Module` instance, an `nn.Module`
  class or any function called with no arguments that returns a model or
  `(model, example_args)`;
- `model.ir` / `model.txt`: a module in the IR text format;
- `model.mlir`: MLIR for `--compiler iree` (passed on as its path: the adapter reads it).

A torch model's example inputs are, first to last: `--input-shape` (repeatable, one per
input: `1,3,224,224` or `1,16:int64`), the `example_args` a function returned, an
`example_inputs` attribute of the model, then of the module or file it came from (a tuple of
tensors, or a function returning one). An ExportedProgram or an IR model may go without.
"""

from __future__ import annotations

import importlib
import inspect
import re
import runpy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passlens.errors import CLIError
from passlens.errors import one_line as _one_line

HELP = """\
MODEL is one of:
  model.onnx              an ONNX model
  model.pt2               a program saved by torch.export.save; its inputs are the
                          program's example_inputs, or --input-shape
  model.py                a Python file defining model(), which returns the model and a
                          tuple of example inputs (or only the model):

                              import torch

                              def model():
                                  net = torch.nn.Sequential(torch.nn.Linear(4, 8),
                                                            torch.nn.ReLU())
                                  return net.eval(), (torch.randn(2, 4),)

  model.py:ATTR           ATTR in a Python file, or in an importable module (the current
  package.module:ATTR     folder is searched first): an nn.Module instance, an nn.Module
                          class, or a function taking no arguments that returns a model
                          or (model, example_args)
  model.ir, model.txt     a module in the IR text format
  model.mlir              MLIR (torch dialect or any IREE input), with --compiler iree

a torch model's example inputs are the first of: --input-shape (once per input, in order:
--input-shape 1,3,224,224 --input-shape 1,16:int64; floats are random normal, integers 0 or
1, seed 0), the example_args a function returned, an example_inputs attribute of the model,
then of its module or file (a tuple of tensors, or a function returning one).
.py files and modules are run as Python: only use ones you trust. A .pt2 is read safely
(nothing of the file's runs; its sample inputs only through torch's weights-only unpickler).

exit codes: 0 ok, 1 findings (a pass failed, or --check found problems), 2 error
"""

ARG_HELP = "an .onnx, .pt2, .py, .ir/.txt or .mlir file, FILE.py:ATTR or package.module:ATTR"

SHAPE_HELP = (
    "an example input's shape, with an optional dtype (default float32, or the .pt2 "
    "program's): 1,3,224,224 or 1,16:int64; once per input, in order"
)

# ----- --input-shape ----------------------------------------------------------------------------

# the dtypes an example input can have (torch's names; the IR's and torch's aliases below)
_DTYPES = (
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
_ALIASES = {
    "f32": "float32",
    "float": "float32",
    "f16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "double": "float64",
    "i64": "int64",
    "long": "int64",
    "i32": "int32",
    "int": "int32",
    "i16": "int16",
    "i8": "int8",
    "u8": "uint8",
}
MAX_ELEMENTS = 1 << 28  # 1 GiB of float32 per input: a larger shape is most likely a typo
_SHAPE = re.compile(r"^\s*(?P<dims>\d+(?:\s*,\s*\d+)*)?\s*,?\s*(?::\s*(?P<dtype>\w+))?\s*$")


@dataclass(frozen=True)
class InputShape:
    """One `--input-shape`: the dims and the dtype's name (None: not given)."""

    shape: tuple[int, ...]
    dtype: str | None

    def __str__(self) -> str:
        return f"{','.join(map(str, self.shape))}:{self.dtype or 'float32'}"


def parse_input_shape(spec: str) -> InputShape:
    """`1,3,224,224` or `1,16:int64` (`:int64` alone is a scalar)."""
    m = _SHAPE.match(spec)
    if m is None or (m.group("dims") is None and m.group("dtype") is None and spec.strip()):
        raise CLIError(
            f"bad --input-shape {spec!r}: give the dims separated by commas and optionally "
            "a dtype, e.g. 1,3,224,224 or 1,16:int64"
        )
    dims = tuple(int(d) for d in (m.group("dims") or "").split(",") if d.strip())
    dtype = m.group("dtype")
    if dtype is not None:
        name = _ALIASES.get(dtype.lower(), dtype.lower())
        if name not in _DTYPES:
            raise CLIError(
                f"bad --input-shape {spec!r}: unknown dtype {dtype!r}; known: " + ", ".join(_DTYPES)
            )
        dtype = name
    n = 1
    for d in dims:
        n *= d
    if n > MAX_ELEMENTS:
        raise CLIError(
            f"bad --input-shape {spec!r}: {n} elements is more than {MAX_ELEMENTS} "
            "(an example input needs only a small batch)"
        )
    return InputShape(dims, dtype)


def make_inputs(shapes: Sequence[InputShape], torch_tensors: bool) -> tuple:
    """Example inputs of these shapes, seeded: floats standard normal, integers 0 or 1 (a
    valid index into any table of two or more rows), booleans random; torch tensors for a
    torch model, numpy arrays otherwise."""
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = []
    for s in shapes:
        name = s.dtype or "float32"
        if name == "bool":
            a = rng.integers(0, 2, s.shape).astype(bool)
        elif name.startswith(("int", "uint")):
            a = rng.integers(0, 2, s.shape).astype(name)
        else:
            a = rng.standard_normal(s.shape).astype(np.float32)
        arrays.append(a)
    if not torch_tensors:
        return tuple(a.astype(_numpy_dtype(s.dtype)) for a, s in zip(arrays, shapes, strict=True))
    import torch

    return tuple(
        torch.from_numpy(a).to(getattr(torch, s.dtype or "float32"))
        for a, s in zip(arrays, shapes, strict=True)
    )


def _numpy_dtype(name: str | None):
    import numpy as np

    if name == "bfloat16":  # numpy has none: ml_dtypes' (the IR's) bfloat16
        from compiler.ir.types import DType

        return DType.of("bf16").numpy
    return np.dtype(name or "float32")


# ----- MODEL ------------------------------------------------------------------------------------

_ATTR = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")


def load_model(spec: str, input_shapes: Sequence[str] = ()) -> tuple[Any, tuple | None]:
    """What `explore` is given for MODEL `spec`: `(source, example_inputs)`; each
    `input_shapes` entry is an `--input-shape` spec, which supplies (or replaces) the
    example inputs."""
    shapes = [parse_input_shape(s) for s in input_shapes]  # a typo fails before any import
    spec = str(spec)
    path = Path(spec)
    if not _is(path, "exists"):
        head, sep, attr = spec.rpartition(":")
        if sep and head and _ATTR.match(attr):
            if _is(Path(head), "is_file") and not head.lower().endswith(".py"):
                raise CLIError(f"{spec}: only a .py file or a Python module has attributes")
            if head.lower().endswith(".py") or "/" in head or "\\" in head:
                return _python_file(Path(head), attr, shapes, spec)
            return _module_attr(head, attr, shapes, spec)
        if _ATTR.match(spec) and "." in spec and path.suffix.lower() not in _SUFFIXES:
            raise CLIError(
                f"no such file: {spec} (for an attribute of a Python module, write "
                f"{spec}:ATTR, e.g. {spec}:model)"
            )
        raise CLIError(f"no such file: {path}")
    if path.is_dir():
        raise CLIError(f"{path} is a directory, not a model file")
    suffix = path.suffix.lower()
    if suffix == ".onnx":
        return str(path), _numpy_inputs(shapes)
    if suffix == ".pt2":
        return _exported_file(path, shapes)
    if suffix == ".py":
        return _python_file(path, None, shapes, spec)
    if suffix in (".ir", ".txt"):
        return _ir_text(path), _numpy_inputs(shapes)
    if suffix == ".mlir":  # read, size-capped and parsed by the iree adapter
        return str(path), _numpy_inputs(shapes)
    raise CLIError(
        f"{path}: unknown model type {suffix or '(no suffix)'!r}; expected an .onnx, .pt2, "
        ".py, .ir/.txt or .mlir file, FILE.py:ATTR or package.module:ATTR"
    )


_SUFFIXES = (".onnx", ".pt2", ".py", ".ir", ".txt", ".mlir")


def _is(path: Path, test: str) -> bool:
    """`path.exists()` / `is_file()`, False for a name no file can have (too long, a NUL)."""
    try:
        return getattr(path, test)()
    except (OSError, ValueError):
        return False


def _numpy_inputs(shapes: Sequence[InputShape]) -> tuple | None:
    return make_inputs(shapes, torch_tensors=False) if shapes else None


def _ir_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    if "def @" not in text:
        raise CLIError(f"{path}: no function in this IR text (expected 'def @main(...)')")
    from compiler.ir import ParseError, parse

    try:
        parse(text)
    except ParseError as e:
        raise CLIError(f"{path}:{e.line}:{e.column}: {e.message}") from None
    except Exception as e:
        raise CLIError(f"{path}: {_one_line(e)}") from None
    return text


# ----- .pt2 -------------------------------------------------------------------------------------


def _torch(what: str):
    try:
        import torch
    except ImportError:
        raise CLIError(f"{what} needs torch, which is not installed") from None
    return torch


def _exported_file(path: Path, shapes: Sequence[InputShape]) -> tuple[Any, tuple | None]:
    """A `.pt2`, read by `passlens.pt2`: no pickle but torch's weights-only one, no
    code of the file's choosing (`torch.export.load` would unpickle its sample inputs)."""
    _torch(f"{path} (a torch.export program)")
    from passlens.pt2 import load_program

    ep, sample, notes = load_program(path)
    for note in notes:
        print(f"passlens: note: {_one_line(note)}", file=sys.stderr)
    if shapes:
        return ep, _program_inputs(ep, shapes, str(path))
    if sample is None and notes:
        raise CLIError(
            f"{path}: no example inputs to run the program on (its sample inputs were not "
            "read, see the note above): give each input's shape with --input-shape, e.g. "
            "--input-shape 1,3,224,224"
        )
    return ep, _exported_example_inputs(ep, str(path))


def _exported_example_inputs(ep, where: str) -> tuple | None:
    """The program's saved example args (None when it kept none)."""
    try:
        saved = ep.example_inputs
    except Exception:
        return None
    if saved is None:
        return None
    args, kwargs = saved if isinstance(saved, tuple) and len(saved) == 2 else (saved, {})
    if kwargs:
        raise CLIError(
            f"{where}: the program's example inputs include keyword inputs "
            f"({', '.join(map(str, kwargs))}); passlens passes inputs by position: give them "
            "with --input-shape"
        )
    return tuple(args) if isinstance(args, (tuple, list)) else (args,)


def _user_inputs(ep) -> list[tuple[tuple, str | None]]:
    """The program's runtime inputs: (dims, None for a symbolic one; dtype name)."""
    names = set(ep.graph_signature.user_inputs)
    out = []
    for node in ep.graph.nodes:
        if node.op != "placeholder" or node.name not in names:
            continue
        val = node.meta.get("val")
        dims = tuple(d if isinstance(d, int) else None for d in getattr(val, "shape", ()))
        dtype = str(getattr(val, "dtype", "")).replace("torch.", "") or None
        out.append((dims, dtype))
    return out


def _program_inputs(ep, shapes: Sequence[InputShape], where: str) -> tuple:
    """`--input-shape` inputs for a program, checked against what it takes (a dtype not
    given is the program's)."""
    wanted = _user_inputs(ep)

    def show(dims, dtype):
        return f"{dtype}[{', '.join('?' if d is None else str(d) for d in dims)}]"

    takes = ", ".join(show(*w) for w in wanted) or "none"
    if len(shapes) != len(wanted):
        raise CLIError(
            f"{where}: the program takes {len(wanted)} input(s) ({takes}); --input-shape "
            f"gives {len(shapes)}"
        )
    fixed = []
    for i, (s, (dims, dtype)) in enumerate(zip(shapes, wanted, strict=True)):
        same = len(dims) == len(s.shape) and all(
            d is None or d == n for d, n in zip(dims, s.shape, strict=True)
        )
        if not same or (s.dtype is not None and dtype in _DTYPES and s.dtype != dtype):
            raise CLIError(
                f"{where}: input {i} of the program is {show(dims, dtype)}; --input-shape "
                f"gives {s} (the program takes {takes})"
            )
        fixed.append(InputShape(s.shape, s.dtype or (dtype if dtype in _DTYPES else None)))
    return make_inputs(fixed, torch_tensors=True)


# ----- Python -----------------------------------------------------------------------------------


def _python_file(
    path: Path, attr: str | None, shapes: Sequence[InputShape], spec: str
) -> tuple[Any, tuple | None]:
    """`model.py` (its `model()`) or `model.py:ATTR`."""
    if not _is(path, "exists"):
        raise CLIError(f"no such file: {path}")
    if path.is_dir():
        raise CLIError(f"{path} is a directory, not a Python file")
    try:
        namespace = runpy.run_path(str(path), run_name="__passlens_model__")
    except SystemExit:
        raise CLIError(f"{path}: the file exited while being loaded") from None
    except Exception as e:
        raise CLIError(f"{path}: running the file failed: {_one_line(e)}") from None
    if attr is None:  # the plain form: model() -> (model, example_args)
        if not callable(namespace.get("model")):
            raise CLIError(
                f"{path} defines no model() function (it should return (model, example_args)); "
                f"or name what to explore: {path}:ATTR"
            )
        attr = "model"
    first, _, rest = attr.partition(".")
    if first not in namespace:
        raise CLIError(f"{path} defines no {first!r}{_defined(namespace)}")
    obj = _getattr_path(namespace[first], rest, f"{path}:{first}")
    return _resolve(obj, attr, namespace.get("example_inputs"), shapes, spec, str(path))


def _module_attr(
    name: str, attr: str, shapes: Sequence[InputShape], spec: str
) -> tuple[Any, tuple | None]:
    """`package.module:ATTR`: the module imported as Python imports it, with the current
    folder searched first (as `python -m` does)."""
    if not _ATTR.match(name):
        raise CLIError(
            f"bad MODEL {spec!r}: {name!r} is neither a file nor a module name "
            "(package.module:ATTR)"
        )
    added = "" not in sys.path and str(Path.cwd()) not in sys.path
    if added:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and (name == e.name or name.startswith(e.name + ".")):
            raise CLIError(
                f"no module named {e.name!r} (for {spec}): run from the folder that holds it "
                "or add that folder to PYTHONPATH"
            ) from None
        raise CLIError(f"importing {name} failed: {_one_line(e)}") from None
    except SystemExit:
        raise CLIError(f"{name}: the module exited while being imported") from None
    except Exception as e:
        raise CLIError(f"importing {name} failed: {_one_line(e)}") from None
    finally:
        if added:
            sys.path.remove(str(Path.cwd()))
    first, _, rest = attr.partition(".")
    if not hasattr(module, first):
        raise CLIError(f"module {name} has no attribute {first!r}{_defined(vars(module))}")
    obj = _getattr_path(module, attr, f"{name}:{attr}")
    return _resolve(obj, attr, getattr(module, "example_inputs", None), shapes, spec, name)


def _getattr_path(obj: Any, dotted: str, where: str) -> Any:
    for part in filter(None, dotted.split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CLIError(f"{where}: no attribute {part!r}") from None
        except Exception as e:
            raise CLIError(f"{where}: reading {part!r} failed: {_one_line(e)}") from None
    return obj


def _defined(namespace: dict) -> str:
    """A hint: the public names that could be a model (modules, classes and functions)."""
    names = []
    for k, v in namespace.items():
        if k.startswith("_") or inspect.ismodule(v):
            continue
        if callable(v) or _kind(v) is not None:
            if getattr(v, "__module__", None) in ("typing", "__future__"):
                continue
            names.append(k)
    if not names:
        return ""
    more = ", ..." if len(names) > 8 else ""
    return f" (it defines {', '.join(names[:8])}{more})"


def _kind(obj: Any) -> str | None:
    """What `explorer.explore` takes: 'program' (an ExportedProgram), 'torch' (an nn.Module),
    'onnx' (a ModelProto, its bytes, a path to one), 'ir' (an IR Module or IR text), else None."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(obj, torch.export.ExportedProgram):
            return "program"
        if isinstance(obj, torch.nn.Module):
            return "torch"
    from compiler.ir import Module

    if isinstance(obj, Module) or (isinstance(obj, str) and "def @" in obj):
        return "ir"
    if isinstance(obj, (bytes, bytearray)) or type(obj).__name__ == "ModelProto":
        return "onnx"
    if isinstance(obj, (str, Path)) and str(obj).lower().endswith(".onnx"):
        return "onnx"
    return None


_EXPECTED = (
    "expected an nn.Module, an nn.Module class, or a function returning a model or "
    "(model, example_args)"
)


def _resolve(
    obj: Any, attr: str, module_inputs: Any, shapes: Sequence[InputShape], spec: str, where: str
) -> tuple[Any, tuple | None]:
    """The model and its example inputs from what ATTR names (`where`: its file or module,
    `module_inputs`: that one's `example_inputs`)."""
    model, args = obj, None
    if _kind(obj) is None:
        if inspect.isclass(obj) and not _is_module_class(obj):
            raise CLIError(f"{spec} is the class {obj.__name__}, not an nn.Module: {_EXPECTED}")
        if not callable(obj):
            raise CLIError(f"{spec} is a {type(obj).__name__}: {_EXPECTED}")
        made = _call(obj, attr, where)
        if isinstance(made, tuple) and len(made) == 2 and _kind(made[0]) is not None:
            model, args = made
            if args is not None:
                args = _as_args(args, f"{spec}: the example_args {attr}() returned")
        elif _kind(made) is not None:
            model = made
        else:
            returned = (
                f"a tuple whose first item is a {type(made[0]).__name__}"
                if isinstance(made, tuple) and made
                else f"a {type(made).__name__}"
            )
            raise CLIError(f"{spec}: {attr}() returned {returned}: {_EXPECTED}")
    kind = _kind(model)
    if shapes:
        if kind == "program":
            return model, _program_inputs(model, shapes, spec)
        return model, make_inputs(shapes, torch_tensors=kind == "torch")
    if args is not None:
        return model, args
    owners = [(where, module_inputs)]
    if kind == "torch":  # (an ExportedProgram's example_inputs is its own (args, kwargs))
        owners.insert(0, (f"{spec}'s model", _attribute(model, "example_inputs")))
    for owner, value in owners:
        if value is not None:
            return model, _example_inputs(value, f"{owner}: example_inputs")
    if kind == "program":
        return model, _exported_example_inputs(model, spec)
    if kind == "torch":
        raise CLIError(
            f"{spec}: no example inputs for the model: give each input's shape with "
            "--input-shape (e.g. --input-shape 1,3,224,224 or 1,16:int64), or define "
            f"example_inputs (a tuple of tensors) in {where}"
        )
    return model, None


def _is_module_class(cls: type) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(cls, torch.nn.Module)


def _call(fn: Any, attr: str, where: str) -> Any:
    """`fn()`: a class or function that needs no argument."""
    try:
        inspect.signature(fn).bind()
    except TypeError as e:
        raise CLIError(
            f"{where}:{attr} cannot be called with no arguments ({e}): {_EXPECTED}"
        ) from None
    except ValueError:  # no signature to read (a builtin): let the call say
        pass
    try:
        return fn()
    except SystemExit:
        raise CLIError(f"{where}: {attr}() exited") from None
    except Exception as e:
        raise CLIError(f"{where}: {attr}() failed: {_one_line(e)}") from None


def _attribute(obj: Any, name: str) -> Any:
    try:
        return getattr(obj, name, None)
    except Exception as e:
        raise CLIError(f"reading {name} of the model failed: {_one_line(e)}") from None


def _example_inputs(value: Any, what: str) -> tuple:
    """An `example_inputs` attribute: a tuple (a list, one tensor) or a function
    returning one."""
    if callable(value) and not _is_array(value):
        value = _call(value, "example_inputs", what.rpartition(":")[0])
    return _as_args(value, what)


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _as_args(value: Any, what: str) -> tuple:
    if isinstance(value, dict):
        raise CLIError(
            f"{what} is a dict: passlens passes inputs by position; give a tuple of tensors"
        )
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    if _is_array(value) or isinstance(value, (int, float, bool)):
        return (value,)
    raise CLIError(f"{what} is a {type(value).__name__}: expected a tuple of tensors")
