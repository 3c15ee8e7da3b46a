"""The standalone pytest file of a reduction: the reduced IR text and pipeline, and a test that
FAILS while the finding is there and passes once it is gone.

The file needs passlens (`explorer`, `compiler`), numpy and pytest, and, only when the
finding needs some of the model's own weight values, `weights.npz` beside it. Weights whose
values do not matter are made from their names by `generated_weight`, whose source is
copied into the file, so the reduction and the file make the very same arrays. A pipeline with
passes that are not passlens's own (a notebook's) gets them imported or written into the file
(`pass_source.py`), found by name through `PASSES`; what could not be written is listed in
`MISSING` and the file says, when run, what to define.
"""

from __future__ import annotations

import inspect
import zlib
from collections.abc import Mapping, Sequence

import numpy as np

from explorer.passlens.reduce.pass_source import PassSource
from explorer.reduce.result import WEIGHTS_FILE


def generated_weight(name: str, dtype: str, shape: tuple) -> np.ndarray:
    """A weight made from its name alone, the same in every run: standard normal values for
    floating-point dtypes, zeros for others."""
    rng = np.random.default_rng(zlib.crc32(name.encode("utf-8")))
    dt = np.dtype(dtype)
    if dt.kind == "f" or dt.name == "bfloat16":
        return rng.standard_normal(tuple(shape)).astype(dt)
    return np.zeros(tuple(shape), dt)


_TEMPLATE = '''\
"""A reduced case of a passlens finding, made by `passlens reduce`:
{what}.

The test FAILS while the bug is there and passes once it is fixed: it checks the module IR
through PIPELINE and asserts that no {kind} finding is left at the pipeline's pass number
PASS_INDEX. Try a fix without editing this file:

    PASSLENS_PIPELINE="{pipeline_text}" pytest {{this file}}

Needs passlens (explorer, compiler), numpy and pytest{needs_file}.{needs_passes}
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np

import explorer
from compiler.ir import parse{import_build}

KIND = {kind!r}
PASS_INDEX = {index!r}  # 0-based: the finding was at {pass_name}
PIPELINE = os.environ.get("PASSLENS_PIPELINE", {pipeline!r})
RTOL, ATOL = {rtol!r}, {atol!r}
FINDING = {message!r}  # as the check of the whole model reported it
# weights made from their names (their values do not matter here): name -> (dtype, shape)
GENERATED = {generated!r}
# weights that need the model's own values, read from {weights_file} beside this file (the
# k-th name's values are its array arr_k: any name round-trips)
SAVED = {saved!r}
# opaque ops passlens does not know to be pure computations, trusted by whoever made this file
# (`passlens reduce --trust-op`): running the test runs them
TRUST_OPS = {trust_ops!r}
{passes_block}
{ir}


{generated_weight}

def weights() -> dict:
    """The values of the weights IR declares without values."""
    out = {{name: generated_weight(name, *spec) for name, spec in GENERATED.items()}}
    if SAVED:
        with np.load(Path(__file__).with_name({weights_file!r})) as saved:
            out.update({{name: saved[f"arr_{{k}}"] for k, name in enumerate(SAVED)}})
    return out


{build_trace}


def findings(trace) -> list:
    """The {kind} findings of the check at the pipeline's pass PASS_INDEX (or nested in it)."""
    report = trace.check(rtol=RTOL, atol=ATOL, progress=False, trust_ops=TRUST_OPS)
    passes = [s for s in trace.steps if s.kind == "pass" and s.depth == 0]
    if PASS_INDEX >= len(passes):
        return []
    inside, stack = set(), [passes[PASS_INDEX]]
    while stack:
        step = stack.pop()
        inside.add(step.index)
        stack.extend(trace.steps[c] for c in step.children)
    return [f for f in report.findings if f.kind == KIND and f.step.index in inside]


def test_the_finding_is_gone():
    found = findings(build_trace())
    assert not found, "\\n".join([*map(str, found), f"(reduced from: {{FINDING}})"])
'''


_BUILD_TRACE = '''def build_trace(pipeline: str = PIPELINE):
    """The trace of the reduced module through ``pipeline``."""
    return explorer.explore(parse(IR, params=weights()), pipeline=pipeline, progress=False)'''

_BUILD_TRACE_WITH_PASSES = '''def build_trace(pipeline: str = PIPELINE, passes=None):
    """The trace of the reduced module through ``pipeline``, whose passes that are not
    passlens's own are found by name in ``passes`` (default: PASSES)."""
    if passes is None and MISSING:
        raise RuntimeError(
            f"this file could not write {MISSING}: define them above and add the passes to "
            "PASSES (or call build_trace(passes=[...]) with the pass classes)"
        )
    pipe = build_pipeline(pipeline, classes=PASSES if passes is None else passes)
    return explorer.explore(parse(IR, params=weights()), pipeline=pipe, progress=False)'''

_PASSES_BLOCK = """
# ----- the passes of PIPELINE that are not passlens's own (found by name in PASSES) -----------

{text}


PASSES = [{names}]
# what this file could not write from the notebook that made it: define it above (and add its
# passes to PASSES), or the test says so when it runs
MISSING = {missing!r}

"""


def _passes_block(user_passes: PassSource) -> str:
    return _PASSES_BLOCK.format(
        text=user_passes.text or "# (none could be written)",
        names=", ".join(user_passes.names),
        missing=list(user_passes.missing),
    )


def _ir_constant(text: str) -> str:
    """`IR = '''...'''` holding `text` (backslashes and single quotes escaped: the IR
    text quotes with double quotes, which stay readable)."""
    body = text.replace("\\", "\\\\").replace("'", "\\'")
    return "IR = '''\\\n" + body + "'''"


def _plain(text: str) -> str:
    """Text safe for the file's docstring: printable ASCII without quotes or backslashes."""
    return "".join(c if " " <= c <= "~" and c not in "\"'\\" else "?" for c in text)


def make_test_source(
    ir: str,
    pipeline: str,
    kind: str,
    index: int,
    pass_name: str,
    message: str,
    rtol: float,
    atol: float,
    generated: Mapping[str, tuple[str, tuple]],
    saved: Sequence[str],
    trust_ops: Sequence[str] = (),
    user_passes: PassSource | None = None,
) -> str:
    """The text of the pytest file for a reduced finding (`user_passes`: the code of the
    pipeline's passes that are not passlens's own, see `pass_source.py`)."""
    needs_passes = ""
    if user_passes is not None:
        needs_passes = (
            "\nIts pipeline has passes that are not passlens's own: they are below, found by "
            "name in PASSES."
        )
        if user_passes.missing:
            needs_passes += " Some could not be written (MISSING): define them to run it."
    return _TEMPLATE.format(
        what=_plain(f"{kind} at {pass_name}"),
        kind=kind,
        index=index,
        pass_name=_plain(pass_name),
        pipeline=pipeline,
        pipeline_text=_plain(pipeline),
        rtol=rtol,
        atol=atol,
        message=message,
        generated={
            name: (dtype, tuple(int(d) for d in shape))
            for name, (dtype, shape) in generated.items()
        },
        saved=list(saved),
        trust_ops=sorted(str(t) for t in trust_ops),
        weights_file=WEIGHTS_FILE,
        needs_file=f", and {WEIGHTS_FILE} beside this file" if saved else "",
        needs_passes=needs_passes,
        import_build="\nfrom compiler.passes import build_pipeline" if user_passes else "",
        passes_block="" if user_passes is None else _passes_block(user_passes),
        build_trace=_BUILD_TRACE if user_passes is None else _BUILD_TRACE_WITH_PASSES,
        ir=_ir_constant(ir),
        generated_weight=inspect.getsource(generated_weight),
    )
