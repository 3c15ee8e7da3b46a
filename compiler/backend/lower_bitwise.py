"""Lowerings of the bitwise ops: each a lazy elementwise value over the loop IR's integer
``and`` / ``or`` / ``xor`` / ``not``."""

from __future__ import annotations

from compiler.backend import loops as L
from compiler.backend.lowering import elementwise, lowering

_BINARY = {"bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor"}


@lowering(*_BINARY)
def _bitwise(kb, call, inputs, dest):
    op = _BINARY[call.op]
    return elementwise(inputs, call.out_shape, call.out_dtype, lambda a, b: L.binary(op, a, b))


@lowering("bitwise_not")
def _bitwise_not(kb, call, inputs, dest):
    return elementwise(inputs, call.out_shape, call.out_dtype, lambda x: L.unary("not", x))


@lowering("bitcast")
def _bitcast(kb, call, inputs, dest):
    dtype = call.out_dtype
    return elementwise(inputs, call.out_shape, dtype, lambda x: L.Bitcast(dtype, x), promote=False)
