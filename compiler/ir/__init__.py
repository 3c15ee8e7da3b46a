"""The graph IR: types, nodes, printer, parser, verifier, structural equality, and the op
registry nodes infer their types from (op_registry.py).

The op families (compiler/ops/) register into that registry. They are imported at the end
of this file, so any import of the IR has every op; they import the IR's modules, never this
package.
nn_compute.py holds the nn family's numpy computations (here, below the families, so that
importing it first imports the IR and then the family that uses it).
"""

from compiler.ir.nodes import (
    Block,
    Call,
    Constant,
    Expr,
    FuncCall,
    Function,
    If,
    IRError,
    Loop,
    Module,
    Node,
    Tuple,
    TupleGetItem,
    Var,
    call,
    children,
    collect_bindings,
    external_reads,
    function_constants,
    map_operands,
    operands,
    remap_operands,
    substitute,
)
from compiler.ir.parser import ParseError, Parser, parse, parse_type
from compiler.ir.printer import Printer, format_attr, print_function, print_module
from compiler.ir.provenance import NO_PROVENANCE, Provenance
from compiler.ir.structural import assert_structural_equal, structural_equal, structural_hash
from compiler.ir.symbolic import ANY, Dim, SymExpr, sym
from compiler.ir.types import DType, TensorType, TupleType, Type, tensor
from compiler.ir.verify import VerifyError, verify

# isort: split
from compiler import ops as _ops  # noqa: F401  (registers every op family)

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
    "Loop",
    "Module",
    "NO_PROVENANCE",
    "Node",
    "ParseError",
    "Parser",
    "Printer",
    "VerifyError",
    "assert_structural_equal",
    "children",
    "format_attr",
    "parse",
    "parse_type",
    "print_function",
    "print_module",
    "structural_equal",
    "structural_hash",
    "verify",
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
    "external_reads",
    "function_constants",
    "map_operands",
    "operands",
    "remap_operands",
    "substitute",
    "sym",
    "tensor",
]
