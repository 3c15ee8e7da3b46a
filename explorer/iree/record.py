"""Recording iree-compile: the source as torch-dialect MLIR (a torch model exported with
iree-turbine, its weights externalized into an `.irpa` parameter file so no dump holds
them; or an MLIR file or text), then `iree-compile` (the tool shipped in
iree-base-compiler, run as a child process so its global flags, its crashes and an interrupt
stay out of this process) with::

    --mlir-print-ir-after-all --mlir-print-ir-module-scope --mlir-disable-threading
    --mlir-print-debuginfo --dump-compilation-phases-to=<tmp>

Every pass application prints the whole module after it, in the order the passes ran (no
threads: no interleaving). IREE's `--dump-compilation-phases-to` adds one
`iree-util-dump-module` pass at the end of each phase: those dumps mark the phase
boundaries (their file names name the phase) and are not steps themselves. The const-eval
JIT compiles a module of its own inside `iree-consteval-jit-globals`: its dumps come between
the `iree-util-hoist-into-globals` dump and the JIT pass's own dump, and are dropped.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from compiler import LimitError
from explorer.iree.convert import IREEError, check_text

PHASES = (
    "input",
    "abi",
    "preprocessing",
    "global-optimization",
    "dispatch-creation",
    "flow",
    "stream",
    "executable-sources",
    "executable-configurations",
    "executable-targets",
    "hal",
    "vm",
)
#: what ``pipeline`` may be: the phase to compile to (``--compile-to``), or "end" (all)
PIPELINES = (*PHASES, "end")
#: the target every recording (and the check's compiles) is for: llvm-cpu, a generic CPU
TARGET_FLAGS = (
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=generic",
)
#: the module after every pass, whole, in the order the passes ran, with its locations
PRINT_FLAGS = (
    "--mlir-disable-threading",
    "--mlir-print-ir-module-scope",
    "--mlir-print-ir-after-all",
    "--mlir-print-debuginfo",
)
MAX_STREAM_BYTES = 1024 * 1024 * 1024  # the whole pass-after-all stream of one compile
MAX_DUMPS = 20_000  # dumps of one compile
MAX_DIAGNOSTIC_CHARS = 4000  # iree-compile's diagnostics kept for an error

_HEADER = re.compile(
    r"^// -----// IR Dump After (?P<cls>.+?)(?P<failed> Failed)?: (?P<arg>.*?)"
    r"(?: \('(?P<op>[^']+)' operation(?:: (?P<sym>@\S+))?\))? //----- //\s*$"
)
_PHASE_FILE = re.compile(r"\.\d+\.([a-z-]+)\.mlir\}?$")  # <module name>.<k>.<phase>.mlir
_DUMP_PASS = "iree-util-dump-module"
_HOIST = "iree-util-hoist-into-globals"
_JIT = "iree-consteval-jit-globals"


@dataclass
class Dump:
    """One dump of the stream: the pass (its class, its argument with options, the op it ran
    on), the module text after it, when it arrived, whether the pass failed."""

    cls: str
    arg: str
    scope: str
    lines: list[str] = field(default_factory=list)
    arrived: float = 0.0
    failed: bool = False

    @property
    def name(self) -> str:
        """The pass's argument without its options (`canonicalize`)."""
        return self.arg.split("{", 1)[0].strip() or self.cls

    @property
    def text(self) -> str:
        return "".join(self.lines)


@dataclass
class Compiled:
    """What one iree-compile run gave: the dumps by phase (JIT dumps dropped), how many were
    dropped, the diagnostics, the exit code, the output (vmfb or MLIR), the command line."""

    phases: list[tuple[str, list[Dump]]]
    dropped: int
    diagnostics: str
    returncode: int
    output: bytes | None
    argv: list[str]
    seconds: float
    stream_bytes: int


def iree_compile_path() -> str:
    """The iree-compile tool of the installed iree-base-compiler."""
    try:
        from iree.compiler.tools.binaries import find_tool
    except ImportError as e:
        raise ImportError(
            f"compiler='iree' needs IREE: pip install 'passlens[iree]' (iree-base-compiler 3.13, "
            f"iree-base-runtime, iree-turbine) ({e})"
        ) from None
    return find_tool("iree-compile")


def compile_flags(pipeline: str, target: str, flags: Any) -> list[str]:
    """The iree-compile flags of a recording (before the input and output paths)."""
    if pipeline not in PIPELINES:
        raise ValueError(
            f"pipeline for compiler='iree' is the phase to compile to, one of "
            f"{', '.join(PIPELINES)}; got {str(pipeline)[:60]!r}"
        )
    if target != "llvm-cpu":
        raise ValueError(f"compiler='iree' records the llvm-cpu target, not {str(target)[:40]!r}")
    from explorer.iree.flags import check_flags  # what a user's flag may be, in one place

    extra = check_flags(flags)
    return [*TARGET_FLAGS, f"--compile-to={pipeline}", *extra, *PRINT_FLAGS]


def _ends_module(line: str, state: list) -> bool:
    """Whether `line` is past the module a dump prints (diagnostics after it)."""
    # state: [closed the top-level op, in a resource block]
    if state[1]:
        if line.startswith("#-}"):
            state[1] = False
        return False
    if state[0]:
        if line.startswith("{-#"):
            state[1] = True
            return False
        # after the module: its alias definitions (``#loc3 = loc(...)``, ``#di_file = ...``)
        return bool(line.strip()) and not line.startswith(("#", "!", " "))
    if line.rstrip("\n") == "}" or line.startswith("} loc("):
        state[0] = True
    return False


def read_stream(stream: Any, job: Any) -> tuple[list[Dump], list[str], int]:
    """The dumps of a pass-after-all stream (lines of text), the lines outside any dump
    (warnings, errors) and the bytes read; `job.advance(pass name)` per dump."""
    dumps: list[Dump] = []
    other: list[str] = []
    total = 0
    current: Dump | None = None
    state = [False, False]
    for line in stream:
        total += len(line)
        if total > MAX_STREAM_BYTES:
            raise LimitError(
                f"iree-compile's pass-after-all stream passed {MAX_STREAM_BYTES:,} bytes "
                "(explorer.iree.record.MAX_STREAM_BYTES): record fewer phases (pipeline=<phase>)"
            )
        m = _HEADER.match(line) if line.startswith("// -----// IR Dump") else None
        if m is not None:
            if len(dumps) >= MAX_DUMPS:
                raise LimitError(
                    f"iree-compile printed more than {MAX_DUMPS:,} dumps "
                    "(explorer.iree.record.MAX_DUMPS): record fewer phases (pipeline=<phase>)"
                )
            scope = m.group("op") or ""
            if m.group("sym"):
                scope += f" {m.group('sym')}"
            current = Dump(m.group("cls"), m.group("arg"), scope, [], time.perf_counter())
            current.failed = bool(m.group("failed"))
            dumps.append(current)
            state = [False, False]
            if job is not None:
                job.advance(current.name)
        elif current is not None and not _ends_module(line, state):
            current.lines.append(line)
        else:
            current = None
            other.append(line)
    return dumps, other, total


def split_phases(dumps: list[Dump]) -> tuple[list[tuple[str, list[Dump]]], int]:
    """The dumps grouped by phase (the dump-module markers taken out), the const-eval JIT's
    dumps dropped: `([(phase, dumps)], how many were dropped)`."""
    phases: list[tuple[str, list[Dump]]] = []
    pending: list[Dump] = []
    dropped = 0
    for d in dumps:
        if d.name == _DUMP_PASS:
            m = _PHASE_FILE.search(d.arg)
            phases.append((m.group(1) if m else f"phase {len(phases) + 1}", pending))
            pending = []
            continue
        if d.name == _JIT:
            hoist = max((i for i, p in enumerate(pending) if p.name == _HOIST), default=None)
            if hoist is not None:
                dropped += len(pending) - hoist - 1
                del pending[hoist + 1 :]
        pending.append(d)
    if pending:  # the phase the run stopped in (a failure), else what comes after vm
        last = phases[-1][0] if phases else None
        k = PHASES.index(last) + 1 if last in PHASES else len(phases)
        phases.append((PHASES[k] if k < len(PHASES) else "end", pending))
    return phases, dropped


def run_compile(mlir: str, argv: list[str], job: Any, workdir: str) -> Compiled:
    """Run iree-compile on `mlir` with `argv` (see `compile_flags`), reading its
    stream as it comes; an interrupt ends the child process."""
    tool = iree_compile_path()
    src = os.path.join(workdir, "input.mlir")
    with open(src, "w", encoding="utf-8") as f:
        f.write(mlir)
    phases_dir = os.path.join(workdir, "phases")
    last = next((a.split("=", 1)[1] for a in argv if a.startswith("--compile-to=")), "end")
    out = os.path.join(workdir, "out.vmfb" if last == "end" else "out.mlir")
    cmd = [tool, src, *argv, f"--dump-compilation-phases-to={phases_dir}", "-o", out]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        cwd=workdir,
    )
    try:
        dumps, other, total = read_stream(proc.stderr, job)
        rc = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        proc.stderr.close()
    seconds = time.perf_counter() - start
    output = None
    if rc == 0 and os.path.exists(out):
        with open(out, "rb") as f:
            output = f.read()
    phases, dropped = split_phases(dumps)
    diagnostics = "".join(other)[-MAX_DIAGNOSTIC_CHARS:]
    return Compiled(phases, dropped, diagnostics, rc, output, cmd, seconds, total)


# ===== the source ==============================================================================


@dataclass
class Imported:
    """The source as MLIR: its text, a label, the parameter file's bytes (a torch model's
    weights; None for an MLIR source) and the torch model's parameter names."""

    mlir: str
    label: str
    frontend: str
    irpa: bytes | None = None
    params: list[str] = field(default_factory=list)


def _printed(mlir: str) -> str:
    """`mlir` as iree-compile prints it (with its locations), so the first pass that
    changes nothing is not shown as a change of printing; refused unless it is pure
    computation (`explorer.iree.gate`)."""
    from explorer.iree.convert import parse_module
    from explorer.iree.gate import check_source

    _, module = parse_module(mlir, "the source MLIR")
    check_source(module)  # pure computation only, before iree-compile reads it
    return module.operation.get_asm(enable_debug_info=True)


def import_source(source: Any, example_inputs: Any) -> Imported:
    """The source as torch-dialect (or any IREE input) MLIR: a torch `nn.Module` through
    `iree.turbine.aot.export` with its parameters externalized, else an `.mlir` path or
    MLIR text."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        if "\n" not in text and text.endswith(".mlir") and len(text) < 4096:
            try:
                size = os.path.getsize(text)
            except OSError as e:
                raise IREEError(f"cannot read the MLIR file {text[:200]!r}: {e.strerror}") from None
            from explorer.iree.convert import MAX_TEXT_BYTES

            if size > MAX_TEXT_BYTES:
                raise LimitError(
                    f"the MLIR file {text[:200]!r} has {size:,} bytes, over the limit of "
                    f"{MAX_TEXT_BYTES:,} (explorer.iree.convert.MAX_TEXT_BYTES)"
                )
            with open(text, "rb") as f:
                data = f.read()
            mlir = check_text(data, f"the MLIR file {os.path.basename(text)[:100]!r}")
            return Imported(_printed(mlir), os.path.basename(text), "mlir file")
        if "module" in text or "func" in text:
            return Imported(_printed(check_text(text)), "MLIR text", "mlir text")
        raise IREEError(
            f"compiler='iree' takes a torch model, an .mlir file or MLIR text, not {text[:80]!r}"
        )
    if isinstance(source, (bytes, bytearray)):
        return Imported(_printed(check_text(source)), "MLIR text", "mlir text")
    return _export_torch(source, example_inputs)


@contextlib.contextmanager
def _module_locations():
    """While iree-turbine imports an FX graph: each node's location (the torch source
    `file:line` iree's FX importer takes from its stack trace) wrapped in a named location
    holding the node's module path (`loc("fc1"(...))`, from torch.export's
    `nn_module_stack`), which IREE's passes carry along, so an op names its layer."""
    from iree.compiler.extras import fx_importer
    from iree.compiler.ir import Location

    cls = fx_importer.ContextCache
    original = cls.get_node_location

    def get_node_location(self, node):
        loc = original(self, node)
        stack = node.meta.get("nn_module_stack") or {}
        if loc is None or not stack:
            return loc
        path = str(list(stack.values())[-1][0])[:200]
        if not path:
            return loc
        try:
            return Location.name(path, childLoc=loc, context=self._c)
        except Exception:  # a location it cannot wrap: the source line alone
            return loc

    cls.get_node_location = get_node_location
    try:
        yield
    finally:
        cls.get_node_location = original


def _export_torch(model: Any, example_inputs: Any) -> Imported:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"compiler='iree' exports a torch.nn.Module with iree-turbine, not "
            f"{type(model).__name__}"
        )
    if example_inputs is None:
        raise ValueError("compiler='iree' needs example inputs: explore(model, (x,), ...)")
    try:
        import iree.turbine.aot as aot
    except ImportError as e:
        raise ImportError(
            f"compiler='iree' needs iree-turbine: pip install 'passlens[iree]' ({e})"
        ) from None
    args = example_inputs if isinstance(example_inputs, tuple) else tuple(example_inputs)
    args = tuple(torch.from_numpy(a) if not isinstance(a, torch.Tensor) else a for a in args)
    import copy
    import warnings

    copied = copy.deepcopy(model)  # externalizing marks the tensors: the user's model stays as is
    aot.externalize_module_parameters(copied)
    with warnings.catch_warnings(), _module_locations():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            exported = aot.export(copied, args=args)
        except Exception as e:
            raise IREEError(
                f"iree-turbine could not export this model: {type(e).__name__}: {str(e)[:500]}"
            ) from e
    mlir = exported.mlir_module.get_asm(enable_debug_info=True)
    with tempfile.TemporaryDirectory(prefix="passlens-iree-") as tmp:
        path = os.path.join(tmp, "params.irpa")
        aot.save_module_parameters(path, copied)
        with open(path, "rb") as f:
            irpa = f.read()
    names = [n for n, _ in copied.named_parameters()] + [n for n, _ in copied.named_buffers()]
    return Imported(_printed(mlir), type(model).__name__, "iree-turbine", irpa, names)


__all__ = [
    "PHASES",
    "PIPELINES",
    "PRINT_FLAGS",
    "TARGET_FLAGS",
    "Compiled",
    "Dump",
    "Imported",
    "compile_flags",
    "import_source",
    "read_stream",
    "run_compile",
    "split_phases",
]
