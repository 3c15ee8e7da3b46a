"""A reduced IREE finding (`IREEReduction`) and its upstream reproducer: a folder with the
reduced MLIR (`reduced.mlir`), the inputs and the expected outputs (`.npy`, torch eager's;
and the same model run in float64, which judges elements beyond the tolerance as the check
does), the parameter file when the weights are not inlined (`params.irpa`) and `repro.py`,
a script that needs only iree's Python packages (`iree.compiler.tools.compile_file`,
`iree.runtime`) and numpy. It compiles the MLIR with the kept flags (and `--compile-from`
the phase the dump resumes from) for llvm-cpu, runs it on the inputs with iree.runtime's
local-task driver, prints the max error against the expected outputs and exits with status 1
while they differ (`--without-flags` compiles it without the flags: they agree).

Everything from the model or the recording goes into the script as a literal (`repr`,
checked by parsing it back): the flags, the file names, the tolerance; the MLIR stays in its
file.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from explorer.check.judge import FLOAT64_MULTIPLIER
from explorer.progress import clean
from explorer.reduce.errors import ReduceError
from explorer.reduce.repro import literal, write_script
from explorer.reduce.result import write_new

MLIR_FILE = "reduced.mlir"
PARAMS_FILE = "params.irpa"
SCRIPT = "repro.py"
FLAGS_FILE = "flags.txt"


@dataclass(eq=False)
class IREEReduction:
    """A diverged IREE finding reduced: the reduced `mlir` (the last agreeing step's dump,
    shrunk) compiled `--compile-from=phase` (None: from the start) with `flags` (the
    recording's, `dropped` the ones it did without) diverges from the `expected` outputs on
    `inputs` by `max_abs`, and without the flags agrees (`clean_abs`). `irpa`: the parameter
    file's bytes (None: no weights, or inlined into the MLIR); `chars` the MLIR's size
    (before, after); `tried` the candidates compiled and run."""

    finding: Any
    step: str
    last_agreeing: int
    phase: str | None
    mlir: str
    flags: list[str]
    dropped: list[str]
    recorded_flags: list[str]
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    expected64: list[np.ndarray] | None
    reference: str
    irpa: bytes | None
    chars: tuple[int, int]
    max_abs: float
    clean_abs: float
    rtol: float
    atol: float
    tried: int
    seconds: float
    budget: float
    cut_short: bool = False
    inlined: bool = False  # the weights are in the MLIR as constants (no params.irpa)

    # ----- files -------------------------------------------------------------------------------
    def _arrays(self) -> dict[str, np.ndarray]:
        out = {f"input_{k}.npy": a for k, a in enumerate(self.inputs)}
        out.update({f"expected_{k}.npy": a for k, a in enumerate(self.expected)})
        for k, a in enumerate(self.expected64 or []):
            out[f"expected64_{k}.npy"] = a
        return out

    @property
    def files(self) -> list[str]:
        """The names `save` writes."""
        extra = [PARAMS_FILE] if self.irpa is not None else []
        return [MLIR_FILE, FLAGS_FILE, *self._arrays(), *extra, SCRIPT]

    def save(self, directory: str | Path, script: str = SCRIPT) -> Path:
        """Write the reduced MLIR, `flags.txt` (one a line), the inputs and expected outputs
        (`.npy`), `params.irpa` (when the weights are not inlined) and `repro.py` into
        `directory` (made if missing; the script named `script`), each a new file renamed
        over the name; returns the folder."""
        if Path(script).name != script or not script.endswith(".py") or script in self.files:
            if script != SCRIPT:
                raise ReduceError(f"the script's name is a file name ending .py: {script!r:.80}")
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        write_new(out, MLIR_FILE, self.mlir.encode("utf-8"))
        write_new(out, FLAGS_FILE, "".join(f + "\n" for f in self.flags).encode("utf-8"))
        for name, a in self._arrays().items():
            write_new(out, name, lambda f, a=a: np.save(f, np.asarray(a), allow_pickle=False))
        if self.irpa is not None:
            write_new(out, PARAMS_FILE, self.irpa)
        write_script(out / script, self.script())
        return out

    def upstream_repro(self, path: str | Path) -> Path:
        """Write the reproducer into the folder `path` (everything `save` writes: the script
        reads the files beside it; a path ending in `.py` names the script, in its folder);
        returns the script's path."""
        target = Path(path)
        if target.suffix == ".py" and not target.is_dir():
            return self.save(target.parent, target.name) / target.name
        return self.save(target) / SCRIPT

    def script(self) -> str:
        """The upstream script's text."""
        return upstream_script(self)

    # ----- text --------------------------------------------------------------------------------
    def lines(self) -> list[str]:
        """The summary, one fact a line."""
        f = self.finding
        c0, c1 = self.chars
        n0, n1 = len(self.recorded_flags), len(self.flags)
        out = [
            f"reduced {f.kind} at #{f.step.index} {clean(self.step, 80)}: from the dump of "
            f"#{self.last_agreeing} ({c0:,} -> {c1:,} characters of MLIR), {n0} -> {n1} "
            f"flag(s) ({self.tried} candidates compiled and run, {self.seconds:.1f} s)",
            "flags kept: " + clean(" ".join(self.flags), 400),
            f"with them it differs from {self.reference} by {self.max_abs:.3g} (max abs), "
            f"without them by {self.clean_abs:.3g} (rtol={self.rtol:g}, atol={self.atol:g})",
            f"iree-compile --compile-from={self.phase or 'start'}; weights: "
            + (
                "inlined as constants"
                if self.inlined
                else (f"{PARAMS_FILE} ({len(self.irpa):,} B)" if self.irpa else "none")
            ),
        ]
        if self.dropped:
            out.append("flags dropped: " + clean(" ".join(self.dropped), 400))
        if self.cut_short:
            out.append(
                f"stopped by the time budget ({self.budget:g} s): a longer budget may reduce more"
            )
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return "\n".join([*self.lines(), "MLIR:", self.mlir.rstrip("\n")[:20000]])

    def _repr_html_(self) -> str:
        esc = html.escape
        head, *rest = self.lines()
        items = "".join(f"<li>{esc(line)}</li>" for line in rest)
        return f"<div><b>{esc(head)}</b><ul>{items}</ul><pre>{esc(self.mlir[:20000])}</pre></div>"


# ===== the script ================================================================================

_HEAD = '''"""A numerics bug report for IREE, written by passlens: run it with python (it needs only
iree-base-compiler, iree-base-runtime and numpy).

It compiles MLIR_FILE (the module just before the pass that changes the numbers) with
iree-compile for llvm-cpu and the flags FLAGS, runs it with iree.runtime (local-task) on the
saved inputs, and compares the outputs with the expected ones (REFERENCE says what made them:
the model run by torch eager, for a torch model; elements beyond the tolerance are judged
against the same model run in float64, when saved: wrong only when further from float64 than
torch's float32 result is, by FLOAT64_MULTIPLIER).
It prints the max error and exits with status 1 while they differ. `--without-flags`
compiles the same MLIR without FLAGS: the outputs then agree.
"""
'''

_BODY = '''
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import iree.runtime as rt
import numpy as np
from iree.compiler.tools import compile_file

HERE = Path(__file__).resolve().parent


def load(names):
    return [np.load(HERE / n, allow_pickle=False) for n in names]


def compile_module(flags):
    args = list(TARGET) + ([f"--compile-from={COMPILE_FROM}"] if COMPILE_FROM else [])
    return compile_file(str(HERE / MLIR_FILE), extra_args=args + list(flags))


def run(vmfb, inputs):
    config = rt.Config("local-task")
    modules = []
    if PARAMS_FILE:
        index = rt.ParameterIndex()
        index.load(str(HERE / PARAMS_FILE))
        provider = index.create_provider(scope=PARAMS_SCOPE)
        modules.append(rt.create_io_parameters_module(config.vm_instance, provider))
    vm = rt.VmModule.copy_buffer(config.vm_instance, vmfb)
    modules.append(vm)
    loaded = rt.load_vm_modules(*modules, config=config)[-1]
    out = loaded[ENTRY](*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [np.array(o.to_host() if hasattr(o, "to_host") else o, copy=True) for o in outs]


def distance(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        d = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return float(np.where(same, 0.0, np.where(np.isnan(d), np.inf, d)).max())


def wrong(got, want, want64):
    """Whether `got` differs from `want` as passlens judges it: beyond ATOL + RTOL * |want|,
    and (with a float64 run) further from float64 than `want` is, by FLOAT64_MULTIPLIER."""
    if got.shape != want.shape:
        return True
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(g - w)
    d = np.where((g == w) | (np.isnan(g) & np.isnan(w)), 0.0, np.where(np.isnan(d), np.inf, d))
    if not (d > ATOL + RTOL * np.abs(np.nan_to_num(w))).any():
        return False
    if want64 is None or got.dtype.kind != "f" or got.dtype.itemsize < want.dtype.itemsize:
        return True
    allowed = FLOAT64_MULTIPLIER * distance(want, want64) + ATOL / 10
    return not distance(got, want64) <= allowed


def versions():
    found = []
    for name in ("iree-base-compiler", "iree-base-runtime"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (version unknown)")
    found += [f"numpy {np.__version__}", f"python {platform.python_version()}"]
    print(", ".join(found) + f", {platform.platform()}")


def main(argv):
    flags = [] if "--without-flags" in argv else FLAGS
    versions()
    print("flags:", " ".join(flags) or "(none)")
    resume = [f"--compile-from={COMPILE_FROM}"] if COMPILE_FROM else []
    command = ["iree-compile", MLIR_FILE, *TARGET, *resume, *flags, "-o", "reduced.vmfb"]
    print("the same compile:", " ".join(command))
    inputs, expected = load(INPUTS), load(EXPECTED)
    expected64 = load(EXPECTED64) if EXPECTED64 else [None] * len(expected)
    got = run(compile_module(flags), inputs)
    if len(got) != len(expected):
        print(f"{len(got)} output(s), {len(expected)} expected")
        return 1
    bad = False
    for k, (g, w, w64) in enumerate(zip(got, expected, expected64)):
        print(f"output {k}: max abs error {distance(g, w):.6g} against the expected outputs")
        bad = wrong(g, w, w64) or bad
    if bad:
        print(f"BUG REPRODUCED: the outputs differ beyond rtol={RTOL} / atol={ATOL}")
        return 1
    print("not reproduced: the outputs agree")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def upstream_script(r: IREEReduction) -> str:
    """The script of `r` (see the module docstring): every value a checked literal."""
    from explorer.iree.record import TARGET_FLAGS

    arrays = list(r._arrays())
    data = [
        f"MLIR_FILE = {literal(MLIR_FILE)}",
        f"COMPILE_FROM = {literal(r.phase)}  # the phase the module resumes after (None: start)",
        f"TARGET = {literal(list(TARGET_FLAGS))}",
        f"FLAGS = {literal([str(f) for f in r.flags])}  # the flags that change the numbers",
        f"INPUTS = {literal([n for n in arrays if n.startswith('input_')])}",
        f"EXPECTED = {literal([n for n in arrays if n.startswith('expected_')])}",
        f"EXPECTED64 = {literal([n for n in arrays if n.startswith('expected64_')])}",
        f"PARAMS_FILE = {literal(PARAMS_FILE if r.irpa is not None else None)}",
        'PARAMS_SCOPE = "model"  # as iree-turbine names the parameters',
        'ENTRY = "main"',
        f"REFERENCE = {literal(str(r.reference))}  # what made the expected outputs",
        f"RTOL, ATOL = {literal(float(r.rtol))}, {literal(float(r.atol))}",
        f"FLOAT64_MULTIPLIER = {literal(float(FLOAT64_MULTIPLIER))}",
    ]
    return _HEAD + _BODY.replace("\nHERE =", "\n" + "\n".join(data) + "\n\nHERE =", 1)


__all__ = ["IREEReduction", "upstream_script"]
