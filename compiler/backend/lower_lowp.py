"""The low-precision conversions are not compiled: the LLVM backend has no float8 / float4 /
int4 / int2 values (see DType.is_storage_only); this rule says so clearly (``lower_group``
already stops at any call with a value of such a type)."""

from __future__ import annotations

from compiler.backend.lowering import LoweringError, lowering


@lowering("to_float8e8m0")
def _to_float8e8m0(kb, call, inputs, dest):
    raise LoweringError(
        "the LLVM backend does not compile float8e8m0 (f8e8m0) values; "
        "run this module with the interpreter"
    )
