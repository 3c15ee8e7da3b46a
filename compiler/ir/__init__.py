"""The graph IR: types, nodes, printer, parser, verifier, structural equality."""

from compiler.ir.nodes import (
    Block,
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    IRError,
    Module,
    Node,
    Tuple,
    TupleGetItem,
    Var,
    call,
    collect_bindings,
    function_constants,
)
from compiler.ir.provenance import NO_PROVENANCE, Provenance
from compiler.ir.symbolic import ANY, Dim, SymExpr, sym
from compiler.ir.types import DType, TensorType, TupleType, Type, tensor

__all__ = [
    "ANY",
    "Block",
    "Call",
    "Constant",
    "DType",
    "Dim",
    "Expr",
    "FuncCall",
    "Function",
    "IRError",
    "If",
    "Module",
    "NO_PROVENANCE",
    "Node",
    "Provenance",
    "SymExpr",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "Type",
    "Var",
    "call",
    "collect_bindings",
    "function_constants",
    "sym",
    "tensor",
]
