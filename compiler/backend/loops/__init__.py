"""The loop-level IR: kernels over buffers, made of loops, loads, stores and scalar arithmetic.

A `Kernel` is what `legalize-ops` makes of one graph op (or one fused primitive
function): buffers in, one buffer out, optional workspaces, and a body of *stages* run one
after the other. A stage is a loop nest (`Stage`) or a call of a library routine
(`LibCall`, e.g. `numpy.matmul`: the text says so). Shapes are static ints or
expressions of symbolic dims, which a kernel receives as i64 values at run time.

Everything here is an immutable value; printing a kernel gives its readable text, and its
`key` (a hash of that text) names it, so two call sites with the same shapes share one kernel.

    kernel @add_relu_3f2a(%lhs: f32[4, 8], %rhs: f32[8], out %out: f32[4, 8]) {
      stage add, relu {
        parallel for i0 in 0..4 {
          for i1 in 0..8 {
            %out[i0, i1] = max(%lhs[i0, i1] + %rhs[i1], 0.0f)
          }
        }
      }
    }

The package's modules: exprs.py (expressions: building with folding, traversal, text) and
stmts.py (statements and kernels: traversal and printer); every name is used from here
(`from compiler.backend import loops as L`).
"""

from compiler.backend.loops.exprs import (
    ARITH,
    BITWISE,
    COMPARE,
    INDEX,
    MATH_ANY,
    MATH_FLOAT,
    Binary,
    Bitcast,
    Buffer,
    Cast,
    Compare,
    Const,
    Expr,
    Load,
    Math,
    Select,
    Var,
    as_expr,
    binary,
    buffer_type,
    cast,
    compare,
    const_value,
    expr_children,
    fold_int,
    format_dims,
    format_expr,
    free_vars,
    logical_and,
    map_expr,
    maximum,
    minimum,
    postorder,
    product,
    select,
    shared_subexpressions,
    static_int,
    sym_expr,
    unary,
    walk_expr,
)
from compiler.backend.loops.stmts import (
    LIBRARY_ROUTINES,
    For,
    IfThen,
    Kernel,
    Let,
    LibCall,
    Local,
    Seq,
    Stage,
    Stmt,
    Store,
    View,
    replace_buffers,
    seq,
    stmt_children,
    stmt_exprs,
    walk_stmt,
)

__all__ = [
    "ARITH",
    "as_expr",
    "Binary",
    "binary",
    "Bitcast",
    "BITWISE",
    "Buffer",
    "buffer_type",
    "Cast",
    "cast",
    "COMPARE",
    "Compare",
    "compare",
    "Const",
    "const_value",
    "Expr",
    "expr_children",
    "fold_int",
    "For",
    "format_dims",
    "format_expr",
    "free_vars",
    "IfThen",
    "INDEX",
    "Kernel",
    "Let",
    "LibCall",
    "LIBRARY_ROUTINES",
    "Load",
    "Local",
    "logical_and",
    "map_expr",
    "Math",
    "MATH_ANY",
    "MATH_FLOAT",
    "maximum",
    "minimum",
    "postorder",
    "product",
    "replace_buffers",
    "Select",
    "select",
    "Seq",
    "seq",
    "shared_subexpressions",
    "Stage",
    "static_int",
    "Stmt",
    "stmt_children",
    "stmt_exprs",
    "Store",
    "sym_expr",
    "unary",
    "Var",
    "View",
    "walk_expr",
    "walk_stmt",
]
