"""What the writer and the reader of trace files share: the format's name and version, the
caps on what a file may make passlens read, and the errors loading raises."""

from __future__ import annotations

import dataclasses

from compiler import PasslensError
from compiler.ir import Provenance

FORMAT = "passlens-trace"
VERSION = 2  # 2: the last check report (report.json) and, optionally, the inputs it ran on
# 3: another compiler's trace (explorer.adapters: foreign modules and refs in ir.json). Only such
# files are written as version 3, so a passlens that cannot show them says so.
FOREIGN_VERSION = 3
READ_VERSION = FOREIGN_VERSION  # the newest version this passlens reads
SUFFIX = ".passlens"
PROV_FIELDS = tuple(f.name for f in dataclasses.fields(Provenance))


# Caps on what a trace file may make passlens read or allocate (a file is untrusted input):
# manifest.json and ir.json: a 10,000-node trace's ir.json is about 10 MB, its manifest 1 MB
MAX_JSON_BYTES = {"manifest.json": 64 << 20, "ir.json": 256 << 20, "report.json": 64 << 20}
MAX_ARRAY_BYTES = 8 << 30  # one array (a weight or an example input)
# everything one ``load`` materialises: arrays read or derived (an array named twice is read
# and counted once), the ONNX source model's bytes, tensor copies of example inputs. A file
# never costs more than what it declares, and what it declares is capped here.
MAX_LOAD_BYTES = 16 << 30
MAX_SOURCE_BYTES = 2 << 30  # the ONNX source member (protobuf's own limit is 2 GiB)
MAX_STEPS = 1_000_000
# the inputs a check ran on, saved with its report (``save(..., inputs=True)``): all together
MAX_REPORT_INPUT_BYTES = 256 << 20
MAX_REPORT_DEPTH = 32  # nesting of the values in a finding's details


class TraceFileError(PasslensError, ValueError):
    """A file could not be read as a passlens trace; the message says which file and why."""


class RecordedError(Exception):
    """An exception of a saved trace whose type is not a Python builtin, as loaded.

    Loading creates a subclass named after the original type (`PassError`), so
    `type(error).__name__` reads as it did; `type_module` is the original type's module.
    """

    type_name = "RecordedError"
    type_module = ""

    def __repr__(self) -> str:
        return f"{self.type_name}({str(self)!r})"
