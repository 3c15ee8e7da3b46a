"""Save and load traces: `save(trace, path)` / `load(path)`, a versioned format without pickle.

A `.passlens` file is a zip archive:

    manifest.json     format name and version, pipeline, frontend, example inputs, and one
                      record per step (kind, name, spec, depth, parent, children, seconds,
                      status, the module before / after it by id, error type / message /
                      traceback, the failed node by id, a source step's graph model, its
                      rewrites: rule, matched and produced node ids, see `rewrites`; for
                      a user's own pass, `pass`: its name, spec, class, module, whether it
                      was registered and where it was defined, words only: loading imports
                      nothing they name, `load(path, passes=[...])` supplies the pass)
    ir.json           tables of unique types (text), provenances (dicts), IR nodes, functions
                      and modules; nodes refer to earlier nodes by index, so the table is
                      topologically ordered and has no cycles. A trace of another compiler
                      (its adapter's name as `"compiler"` in the manifest, steps naming
                      `foreign_module` / `foreign_before`) adds `foreign_modules` (what
                      each module showed: graph model, IR text, backend texts) and `refs`
                      (its graph nodes' objects: a weight's array, or a provenance), so it
                      loads without that compiler;
                      such a file is version 3 (an older passlens says it cannot read it)
    report.json       (version 2, when the trace was checked) the last check report,
                      `trace.report`: findings, each step's numbers, node and layer errors,
                      and with `save(..., inputs=True)` the inputs it ran on; see
                      `explorer.store.checks`
    arrays/<i>.npy    raw arrays (weights, example inputs), written with allow_pickle=False;
                      an array that is a transpose and/or cast of a stored one (what
                      fold-constant and convert-dtype make of a weight) is kept in ir.json
                      as a recipe `{"from": i, "axes": [...], "cast": true}` instead

Every IR object is written once however many steps share it, and read back as one object:
after `load` a node a pass did not touch is again the very same object in the steps before
and after the pass, so identity matching in diffs keeps working, and a weight is stored once
(arrays with equal content are stored once too). Types and attributes are stored in the IR
text format and decoded with its parser; nodes are rebuilt through their constructors, which
check them. Loading a file runs no code from it: JSON, `.npy` without pickles, and the IR
parser. A file that is not a trace, is damaged (its check report included), or has an
unknown format version raises a `TraceFileError` that says so. Version 2 added the
check report; version 1 files load as before, without one.

The package: `write` saves (it reads a trace through its attributes, without importing
explorer.trace), `read` loads (the one place that builds Steps and Traces from a file), and
`fileformat` holds what both share: the format name and version, the caps on what a file may
make passlens read, and the errors; `checks` writes and reads the check report, `graphs`
graph models (a source step's, another compiler's modules); `queued_file` is the file `write`
hands zipfile, written by a thread of its own (the CRC-32 of one chunk overlaps the write of the
one before).
"""

from explorer.store.fileformat import (
    FORMAT,
    MAX_ARRAY_BYTES,
    MAX_JSON_BYTES,
    MAX_LOAD_BYTES,
    MAX_REPORT_INPUT_BYTES,
    MAX_SOURCE_BYTES,
    MAX_STEPS,
    VERSION,
    RecordedError,
    TraceFileError,
)
from explorer.store.read import load, read_manifest
from explorer.store.write import save

__all__ = [
    "FORMAT",
    "MAX_ARRAY_BYTES",
    "MAX_JSON_BYTES",
    "MAX_LOAD_BYTES",
    "MAX_REPORT_INPUT_BYTES",
    "MAX_SOURCE_BYTES",
    "MAX_STEPS",
    "VERSION",
    "RecordedError",
    "TraceFileError",
    "load",
    "read_manifest",
    "save",
]
