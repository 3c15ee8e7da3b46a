"""A reduced TVM finding (`TVMReduction`) and its upstream repro: a standalone script
that needs only tvm and numpy. It parses the reduced module's TVMScript
(`tvm.script.from_source`), binds its weights (`relax.transform.BindParams`), applies the
pass (made by its name in TVM's API, `tvm.relax.transform.X()`, or from its own Python
source when it was written as a class) in the pipeline's `PassContext`, builds the module
before and after with `relax.build`, runs both in the Relax VM on the embedded inputs, prints
both outputs' max abs / rel difference and TVM's version, and exits 1 while they differ.

Everything from the model or the pass goes into the script as a literal: the TVMScript (checked
by `explorer.tvm.cut.check_script` before it is ever parsed), the pass's name, the inputs'
names; the pass's API name only once found in TVM's API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from explorer.reduce.errors import ReduceError
from explorer.reduce.repro import (
    DIFFERENCE_SOURCE,
    arrays_source,
    dotted,
    literal,
    pass_definition,
    write_script,
)
from explorer.reduce.result import write_new

MODULE_FILE = "reduced_module.py"
INPUTS_FILE = "inputs.npz"
PASS_FILE = "pass.txt"
REPRO_FILE = "repro.py"
RESERVED: dict[str, str | None] = {
    "tvm": "tvm",
    "relax": "tvm.relax",
    "np": "numpy",
    "sys": "sys",
    "base64": "base64",
    "contextlib": "contextlib",
    **dict.fromkeys(
        "PASS_NAME RTOL ATOL TARGET PASS_TARGET PASS_CONTEXT REDUCED_WITH MODULE INPUT_NAMES "
        "WEIGHT_NAMES ARGS WEIGHTS load_args load_weights make_pass difference verdict flat "
        "build_and_run main".split()
    ),
}


@dataclass
class TVMReduction:
    """A TVM finding reduced: the pass (`pass_name`; `spec` says how it is made again),
    `script` (the TVMScript of the reduced module: `main` takes the `inputs`, then the
    `weights`, which are bound to constants before the pass runs), how far the pass moves
    its outputs (`max_abs`), bindings of `main` (before, after), the candidates built
    (`tried`), the `PassContext` settings (`context`) and the check's tolerance.
    `save` writes the module, the inputs and the pass; `upstream_repro` the script."""

    finding: Any
    step_name: str
    spec: Any = field(repr=False)
    script: str
    inputs: list[tuple[str, np.ndarray]]
    weights: list[tuple[str, np.ndarray]]
    bindings: tuple[int, int]
    max_abs: float
    tried: int
    seconds: float
    budget: float
    rtol: float
    atol: float
    context: dict = field(default_factory=dict)
    cut_short: bool = False

    @property
    def pass_name(self) -> str:
        """The pass's name as TVM records it."""
        return self.step_name

    @property
    def files(self) -> list[str]:
        """The names of the files `save` writes."""
        return [MODULE_FILE, INPUTS_FILE, PASS_FILE]

    def save(self, directory: str | Path) -> Path:
        """Write `reduced_module.py` (the TVMScript), `inputs.npz` (`input_<k>` and
        `weight_<k>` in `main`'s order) and `pass.txt` (the pass, and how a script makes
        it) into `directory`, each a new file renamed over the name; returns the folder."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        write_new(out, MODULE_FILE, self.script.encode("utf-8"))
        arrays = {f"input_{k}": a for k, (_, a) in enumerate(self.inputs)}
        arrays.update({f"weight_{k}": a for k, (_, a) in enumerate(self.weights)})
        write_new(out, INPUTS_FILE, lambda f: np.savez(f, **arrays))
        made = f"{self.spec.api}()" if self.spec.api else "(not in TVM's API) " + self.spec.why
        lines = [f"pass: {self.pass_name}", f"made by: {made}", f"context: {self.context!r}"]
        write_new(out, PASS_FILE, ("\n".join(lines) + "\n").encode("utf-8"))
        return out

    def upstream_repro(self, path: str | Path) -> Path:
        """Write the standalone script (tvm and numpy only; `repro.py` inside `path` when
        it is a folder); returns its path. Raises `ReduceError` when the pass can be
        named neither from TVM's public API nor by its own Python source, or the pipeline's
        `PassContext` config holds values a script cannot write."""
        return write_script(path, repro_source(self), REPRO_FILE)

    def __str__(self) -> str:
        b0, b1 = self.bindings
        return (
            f"reduced {self.finding.kind} at {self.pass_name}: {b0} -> {b1} binding(s) of "
            f"@main; the pass moves the result by {self.max_abs:.3g} (max abs); "
            f"{self.tried} cut(s) built in {self.seconds:.1f} s"
        )

    def __repr__(self) -> str:
        return f"<TVMReduction {self.pass_name} {self.bindings[0]}->{self.bindings[1]} bindings>"


def _make_pass(reduction: TVMReduction) -> tuple[str, str, str]:
    """`(imports, definitions, expression)` that make the pass in the script."""
    spec = reduction.spec
    if spec.api:
        if not dotted(spec.api) or not spec.api.startswith("tvm."):
            raise ReduceError(f"the pass's API name {spec.api!r} is not a dotted name of tvm")
        return "", "", f"{spec.api}()"
    if spec.python is None:
        raise ReduceError(
            f"{reduction.pass_name!r} cannot be named from TVM's public API: {spec.why}"
        )
    code = pass_definition(spec.python, ("tvm",), f"the pass {reduction.pass_name!r}", RESERVED)
    return code.import_lines(), code.definitions_source(), code.make


def _context_literal(context: dict) -> tuple[str, str]:
    """`PASS_CONTEXT` and `PASS_TARGET` as literals."""
    args: dict[str, Any] = {}
    if context.get("opt_level") is not None:
        args["opt_level"] = int(context["opt_level"])
    if context.get("config"):
        args["config"] = {str(k): v for k, v in dict(context["config"]).items()}
    try:
        text = literal(args)
    except ReduceError:
        raise ReduceError(
            "the pipeline's PassContext config holds values a script cannot write as literals"
        ) from None
    target = context.get("target")
    return text, literal(None if target is None else str(target))


def repro_source(reduction: TVMReduction) -> str:
    """The whole script for `reduction` (see the module docstring)."""
    import tvm

    from explorer.tvm.cut import check_script

    check_script(reduction.script)  # the text was checked when cut; once more, as it goes out
    imports, definitions, make = _make_pass(reduction)
    context, target = _context_literal(reduction.context)
    input_names = [n for n, _ in reduction.inputs]
    weight_names = [n for n, _ in reduction.weights]
    inputs = arrays_source([a for _, a in reduction.inputs], "ARGS")
    weights = arrays_source([a for _, a in reduction.weights], "WEIGHTS")
    pass_section = f"{definitions}\n\n\n" if definitions else ""
    return f'''"""A TVM pass changes the numbers of a Relax module.

Written by passlens's reducer: the module the pass was given, cut down to what still shows the
bug (TVMScript; its weights are parameters, bound to their values before the pass runs), the
pass, the inputs the bug shows on. Needs only tvm and numpy. It builds the module before and
after the pass with relax.build, runs both in the Relax VM and prints how far the results
moved; it exits 1 (BUG REPRODUCED) while they differ beyond tolerance, 0 once they agree.
"""

import base64
import contextlib
import sys

import numpy as np
import tvm
from tvm import relax
{imports}

PASS_NAME = {literal(reduction.pass_name)}
RTOL, ATOL = {literal(float(reduction.rtol))}, {literal(float(reduction.atol))}
TARGET = "llvm"  # what the modules are built for
PASS_CONTEXT = {context}  # tvm.transform.PassContext(**PASS_CONTEXT), as the pipeline ran in
PASS_TARGET = {target}  # the target the pipeline's passes ran under (None: none)
REDUCED_WITH = {literal({"tvm": str(tvm.__version__)})}

# ----- the module the pass was given, cut down --------------------------------------------------
MODULE = {literal(reduction.script)}
INPUT_NAMES = {literal(input_names)}  # @main's parameters: these inputs, then the weights
WEIGHT_NAMES = {literal(weight_names)}


# ----- the pass ---------------------------------------------------------------------------------
{pass_section}def make_pass():
    """The pass, as the pipeline ran it."""
    return {make}


# ----- the inputs and weights: the values the bug shows on -----------------------------------
{inputs}

{weights}

{DIFFERENCE_SOURCE}

def flat(value):
    """The arrays of a VM result (tuples flattened)."""
    if hasattr(value, "numpy"):
        return [value.numpy()]
    if isinstance(value, (list, tuple)) or type(value).__name__ in ("Array", "List"):
        return [a for v in value for a in flat(v)]
    return [np.asarray(value)]


def build_and_run(mod, args):
    """``mod``'s @main built with relax.build and run in the Relax VM on ``args``."""
    exe = relax.build(mod, target=TARGET)
    vm = relax.VirtualMachine(exe, tvm.cpu())
    return flat(vm["main"](*[tvm.runtime.tensor(a) for a in args]))


def main():
    mod = tvm.script.from_source(MODULE)
    if WEIGHT_NAMES:
        bound = {{n: tvm.runtime.tensor(a) for n, a in zip(WEIGHT_NAMES, load_weights())}}
        mod = relax.transform.BindParams("main", bound)(mod)
    with contextlib.ExitStack() as stack:
        if PASS_TARGET is not None:
            stack.enter_context(tvm.target.Target(PASS_TARGET))
        stack.enter_context(tvm.transform.PassContext(**PASS_CONTEXT))
        after = make_pass()(mod)
    args = load_args()
    want = build_and_run(mod, args)
    got = build_and_run(after, args)
    version = f"tvm {{tvm.__version__}} (reduced with tvm {{REDUCED_WITH['tvm']}})"
    return verdict(PASS_NAME, version, got, want, RTOL, ATOL)


if __name__ == "__main__":
    sys.exit(main())
'''


__all__ = ["TVMReduction", "repro_source"]
