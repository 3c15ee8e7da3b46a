"""A reduced ONNX Runtime finding (`ORTReduction`) and its upstream reproducer: a script
that needs only onnx, onnxruntime and numpy, a bug report a user can file as is.

For one of ORT's transformers the script holds the reduced model and its inputs, runs the
model with the optimizations at the stage's level and with them off, prints both outputs, the
versions and the first transformer after which they differ (it finds it itself: ORT's log of
the transformers that ran on the model is in the script as data, and it disables every one
first applied after each application in turn), and exits with status 1 while they differ. For
an onnxscript rule or pass or a transformers-optimizer fusion (rewrites made before ORT) it
holds the model before and after the rewrite and runs both with the optimizations off.

Everything from the model (names of nodes, values, rules, transformers) is untrusted: the
models and inputs are embedded as base64, names as `repr()` literals, never as code or in
the script's docstring; printed names have their control characters escaped.
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.progress import clean
from explorer.reduce import ReduceError
from explorer.reduce.result import write_new

MAX_EMBEDDED_BYTES = 4 << 20  # models and inputs one script holds (before base64)
SCRIPT = "repro.py"
FILES = ("reduced.onnx", "inputs.npz")
REWRITTEN = "rewritten.onnx"

KINDS = {
    "ort": "ONNX Runtime graph transformer",
    "rule": "onnxscript rewrite rule",
    "pass": "onnxscript pass",
    "fusion": "onnxruntime transformers-optimizer fusion",
}


def reduced_applications(model: Any, level: str) -> list[tuple[str, bool]]:
    """ORT's transformer applications on the reduced `model` at `level` (its verbose
    log), for the script to step through."""
    from explorer.onnxruntime.ort_steps import applications

    return [(str(n), bool(m)) for n, m in applications(model.SerializeToString(), level)]


@dataclass(eq=False)
class ORTReduction:
    """A diverged ONNX Runtime finding reduced: the step (`step`, its `kind`: `ort`,
    `rule`, `pass` or `fusion`), the reduced `model` (the cut of the model the step was
    given; an `onnx.ModelProto`) with its `inputs` (numpy, in the model's input order) and
    its one `output` (the value the finding names), `transformed` (the model the rewrite
    makes of it; None for an ORT transformer, whose `level`, `transformer` and ORT's log
    on the reduced model, `applied`, are kept instead). `nodes` is (before, after),
    `max_abs` how far the step moves the output, `tried` the cuts run."""

    finding: Any
    step: str
    kind: str
    model: Any
    inputs: list[np.ndarray]
    output: str
    nodes: tuple[int, int]
    max_abs: float
    rtol: float
    atol: float
    tried: int
    seconds: float
    budget: float
    cut_short: bool = False
    transformed: Any = None
    level: str = ""
    transformer: str = ""
    applied: list[tuple[str, bool]] = field(default_factory=list)

    # ----- files -------------------------------------------------------------------------------
    @property
    def embedded_bytes(self) -> int:
        """What the script embeds: the models and the inputs (before base64)."""
        models = [self.model] + ([self.transformed] if self.transformed is not None else [])
        return sum(m.ByteSize() for m in models) + sum(a.nbytes for a in self.inputs)

    @property
    def fits(self) -> bool:
        """Whether the upstream script can embed the model and inputs."""
        return self.embedded_bytes <= MAX_EMBEDDED_BYTES

    @property
    def files(self) -> list[str]:
        """The names `save` writes."""
        names = list(FILES) + ([REWRITTEN] if self.transformed is not None else [])
        return names + ([SCRIPT] if self.fits else [])

    def save(self, directory: str | Path) -> Path:
        """Write `reduced.onnx`, `inputs.npz` (`arr_0`... in the model's input order),
        `rewritten.onnx` (a rewrite's result) and `repro.py` (`upstream_repro`;
        when it fits, see `files`) into `directory` (made if missing); returns its path.
        Each file is a new one renamed over the name (`explorer.reduce.result.write_new`)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        write_new(out, "reduced.onnx", self.model.SerializeToString())
        write_new(out, "inputs.npz", lambda f: np.savez(f, *self.inputs))
        if self.transformed is not None:
            write_new(out, REWRITTEN, self.transformed.SerializeToString())
        if self.fits:
            write_new(out, SCRIPT, self.script().encode("utf-8"))
        return out

    def upstream_repro(self, path: str | Path = SCRIPT) -> Path:
        """Write the standalone script (see the module docstring) to `path` (a directory:
        `repro.py` in it); returns the file's path."""
        target = Path(path)
        if target.is_dir():
            target = target / SCRIPT
        text = self.script()
        target.parent.mkdir(parents=True, exist_ok=True)
        write_new(target.parent, target.name, text.encode("utf-8"))
        return target

    def script(self) -> str:
        """The upstream script's text."""
        if not self.fits:
            raise ReduceError(
                f"the reduced model and its inputs are {self.embedded_bytes:,} bytes, more than "
                f"the {MAX_EMBEDDED_BYTES:,} a script embeds: save() writes them as files"
            )
        return upstream_script(self)

    # ----- text --------------------------------------------------------------------------------
    def lines(self) -> list[str]:
        """The summary, one fact a line."""
        f = self.finding
        what = KINDS.get(self.kind, self.kind)
        out = [
            f"reduced {f.kind} at #{f.step.index} {clean(self.step, 80)} ({what}): "
            f"{self.nodes[0]} -> {self.nodes[1]} ONNX node(s) ({self.tried} cut(s) run, "
            f"{self.seconds:.1f} s)",
            f"the step moves output {clean(self.output, 80)} by {self.max_abs:.3g} (max abs; "
            f"rtol={self.rtol:g}, atol={self.atol:g})",
        ]
        if self.kind == "ort":
            out.append(
                f"ORT at level {self.level}: the output moves once {clean(self.transformer, 80)} "
                "runs (every transformer first applied after it off), not with it off too"
            )
        if not self.fits:
            out.append(
                f"no {SCRIPT}: the model and inputs are {self.embedded_bytes:,} bytes, past "
                f"the {MAX_EMBEDDED_BYTES:,} a script embeds (the .onnx and .npz files have them)"
            )
        if self.cut_short:
            out.append(
                f"stopped by the time budget ({self.budget:g} s): a longer budget may reduce more"
            )
        return out

    def node_lines(self) -> list[str]:
        """The reduced model's nodes, `outputs = op(inputs)` each."""
        out = []
        for n in self.model.graph.node:
            op = f"{n.domain}::{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
            out.append(
                clean(f"{', '.join(n.output)} = {op}({', '.join(n.input)})", 160)
                + (f"  # {clean(n.name, 60)}" if n.name else "")
            )
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return "\n".join([*self.lines(), "nodes:", *("  " + line for line in self.node_lines())])

    def _repr_html_(self) -> str:
        esc = html.escape
        head, *rest = self.lines()
        items = "".join(f"<li>{esc(line)}</li>" for line in rest)
        nodes = esc("\n".join(self.node_lines()))
        return f"<div><b>{esc(head)}</b><ul>{items}</ul><pre>{nodes}</pre></div>"


# ===== the script ================================================================================


def _chunks(data: bytes, indent: str = "    ") -> str:
    """`data` as base64 in a parenthesized run of string literals, 76 characters a line."""
    text = base64.b64encode(data).decode("ascii")
    lines = [text[k : k + 76] for k in range(0, len(text), 76)] or [""]
    return "(\n" + "".join(f'{indent}"{line}"\n' for line in lines) + ")"


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    a = np.asarray(a)
    np.save(buf, a.astype(str) if a.dtype == object else a, allow_pickle=False)
    return buf.getvalue()


def _number(x: float, what: str) -> str:
    x = float(x)
    if not math.isfinite(x):
        raise ReduceError(f"the report's {what} is {x}: the script needs a finite tolerance")
    return repr(x)


_HEAD_ORT = '''"""A bug report for ONNX Runtime, written by passlens: run it with python (it
needs only onnx, onnxruntime and numpy).

ONNX Runtime's graph optimizations change this model's output: run at the level LEVEL names
it gives other numbers than with the optimizations off. The script prints both outputs, the
versions, and the first graph transformer after which they differ (it finds it itself: APPLIED
is ORT's verbose log of the transformers it ran on this model, in order; for each application
that changed the model it disables every transformer first applied after it). It exits with
status 1 while the outputs differ.
"""
'''

_HEAD_REWRITE = '''"""A bug report for a graph rewrite, written by passlens: run it with python
(it needs only onnx, onnxruntime and numpy).

The rewrite (REWRITE says whose, STEP names it) is not ONNX Runtime's: it ran before the model
reached ONNX Runtime. So the script holds the model before the rewrite (MODEL) and after it
(REWRITTEN), runs both in ONNX Runtime with its graph optimizations off, and prints both
outputs and the versions. It exits with status 1 while the outputs differ.
"""
'''

_IMPORTS = """
import base64
import io
import platform
import sys

import numpy as np
import onnx
import onnxruntime as ort
"""

_HELPERS = '''
LEVELS = {
    "off": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def printable(text):
    """Text from the model with its control characters escaped (newlines kept)."""
    return "".join(c if c == "\\n" or c.isprintable() else repr(c)[1:-1] for c in str(text))


def inputs():
    return {
        name: np.load(io.BytesIO(base64.b64decode("".join(data))), allow_pickle=False)
        for name, data in INPUTS
    }


def run(model, feeds, level, disabled=()):
    """The model's first output in a CPU session at ``level`` with ``disabled`` transformers."""
    options = ort.SessionOptions()
    options.graph_optimization_level = LEVELS[level]
    options.log_severity_level = 3
    session = ort.InferenceSession(
        model, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(disabled)
    )
    return np.asarray(session.run(None, feeds)[0])


def differ(got, want):
    """(whether ``got`` is beyond ATOL + RTOL * |want| of ``want`` anywhere, max abs diff);
    equal infinities and NaN beside NaN are equal."""
    if got.shape != want.shape:
        return True, float("inf")
    a, b = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
    beyond = diff > ATOL + RTOL * np.abs(np.nan_to_num(b))
    return bool(beyond.any()), float(diff.max()) if diff.size else 0.0


def summary(x):
    first = np.array2string(x.reshape(-1)[:6], precision=6, separator=", ")
    return f"shape {list(x.shape)} {x.dtype}, first values {first}"


def show(model):
    try:
        text = onnx.printer.to_text(onnx.load_model_from_string(model))
    except Exception as e:
        text = f"(onnx cannot print it: {type(e).__name__})"
    print(printable(text if len(text) < 20000 else text[:20000] + "\\n..."))


def versions():
    print(
        f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}, "
        f"python {platform.python_version()}, {platform.platform()}"
    )
'''

_MAIN_ORT = '''

def disabled_after(k):
    """The transformers first applied after application ``k`` of APPLIED."""
    first = {}
    for i, (name, _) in enumerate(APPLIED):
        first.setdefault(name, i)
    return sorted(name for name, i in first.items() if i > k)


def first_differing(model, feeds, off):
    """(application index, transformer) after which the output first differs, or None."""
    for k, (name, modified) in enumerate(APPLIED):
        if modified and differ(run(model, feeds, LEVEL, disabled_after(k)), off)[0]:
            return k, name
    return None


def main():
    versions()
    model = base64.b64decode("".join(MODEL))
    show(model)
    feeds = inputs()
    off = run(model, feeds, "off")
    on = run(model, feeds, LEVEL)
    print(f"{'optimizations off:':<28}", summary(off))
    print(f"{f'optimizations on ({LEVEL}):':<28}", summary(on))
    wrong, max_abs = differ(on, off)
    if not wrong:
        print(f"the outputs agree (max abs difference {max_abs:.3g}): not reproduced here")
        return 0
    print(f"the outputs differ: max abs difference {max_abs:.3g} (rtol={RTOL}, atol={ATOL})")
    found = first_differing(model, feeds, off)
    if found is None:
        print("no single transformer's application makes them differ (they do in one go)")
    else:
        print(printable(f"first differing transformer: {found[1]} (application {found[0]} "
                        f"of ORT's log at level {LEVEL})"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''

_MAIN_REWRITE = """

def main():
    versions()
    print(printable(f"the rewrite: {REWRITE} {STEP}"))
    before = base64.b64decode("".join(MODEL))
    after = base64.b64decode("".join(REWRITTEN))
    print("before the rewrite:")
    show(before)
    print("after the rewrite:")
    show(after)
    feeds = inputs()
    want = run(before, feeds, "off")
    got = run(after, feeds, "off")
    print("before the rewrite (optimizations off):", summary(want))
    print("after the rewrite (optimizations off): ", summary(got))
    wrong, max_abs = differ(got, want)
    if not wrong:
        print(f"the outputs agree (max abs difference {max_abs:.3g}): not reproduced here")
        return 0
    print(f"the outputs differ: max abs difference {max_abs:.3g} (rtol={RTOL}, atol={ATOL})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
"""


def upstream_script(r: ORTReduction) -> str:
    """The script of `r` (see the module docstring): every name a `repr()` literal, the
    models and inputs base64."""
    data = [
        f"STEP = {str(r.step)!r}  # the step passlens found",
        f"OUTPUT = {str(r.output)!r}  # the model's one output",
        f"RTOL, ATOL = {_number(r.rtol, 'rtol')}, {_number(r.atol, 'atol')}  "
        "# differ: |got - want| > ATOL + RTOL * |want|",
    ]
    if r.kind == "ort":
        head, main = _HEAD_ORT, _MAIN_ORT
        data.insert(0, f"LEVEL = {str(r.level)!r}  # the graph optimization level")
        applied = ",\n".join(f"    ({str(n)!r}, {bool(m)!r})" for n, m in r.applied)
        data.append(f"APPLIED = [\n{applied}{',' if applied else ''}\n]")
    else:
        head, main = _HEAD_REWRITE, _MAIN_REWRITE
        data.insert(0, f"REWRITE = {KINDS.get(r.kind, 'rewrite')!r}")
    data.append(f"MODEL = {_chunks(r.model.SerializeToString())}")
    if r.kind != "ort":
        data.append(f"REWRITTEN = {_chunks(r.transformed.SerializeToString())}")
    names = [i.name for i in r.model.graph.input]
    feeds = "".join(
        f"    ({str(n)!r}, {_chunks(_npy(a), '        ')}),\n"
        for n, a in zip(names, r.inputs, strict=True)
    )
    data.append(f"INPUTS = [\n{feeds}]")
    return head + _IMPORTS + "\n" + "\n".join(data) + "\n\n" + _HELPERS + main


__all__ = ["MAX_EMBEDDED_BYTES", "ORTReduction", "reduced_applications", "upstream_script"]
