"""The ``call_lowered`` op: a call of a loop-IR kernel from the graph (like TVM's call_tir).

``call_lowered(%x, $w, kernel="fused_matmul_add_gelu_3f2a9c1b", shape=[1, 56, 56, 512],
dtype=f32, library="numpy.matmul")``: the result type comes from the attributes, so the
graph stays a valid module without the kernel at hand. The kernel itself is held by the
module (``module.attrs["kernels"]``, see compiler/backend/kernels.py), so the call runs only
where its module is known: the interpreter runs it with :func:`run_kernel` and the module's
compiled kernel, an executable with its own copy. ``library`` names the library routines the
kernel calls, if any (else none: all generated code).

The op is registered with every other op (so a saved trace holding kernel calls loads in any
process); the backend (llvmlite) is imported only when such a call runs.
"""

from __future__ import annotations

from compiler.errors import PasslensError
from compiler.ir.op_registry import OPAQUE, AttrSpec, define_op
from compiler.ir.types import TensorType


def _infer(types, attrs):
    return TensorType(attrs["shape"], attrs["dtype"])


class KernelCallOutsideModule(PasslensError):
    """A ``call_lowered`` was computed without the module that holds its kernel."""


def _compute(values, attrs):
    raise KernelCallOutsideModule(
        f"call_lowered of @{attrs['kernel']} runs only with the module that holds its kernel "
        "(compiler.interpret.run(module, ...) or compiler.build(module))"
    )


def run_kernel(kernel, values, attrs):
    """Run a compiled kernel (a ``compiler.backend.runtime.CompiledKernel``) as the
    ``call_lowered`` with ``attrs`` calls it on ``values``."""
    dims = attrs.get("dims")
    names = [n.strip() for n in (attrs.get("dim_names") or "").split(",") if n.strip()]
    env = dict(zip(names, (int(d) for d in dims), strict=True)) if dims else None
    shape = tuple(attrs["shape"])  # symbolic when the inputs did not bind its symbols
    out_shape = shape if all(isinstance(d, int) for d in shape) else None
    return kernel.run(values, out_shape=out_shape, env=env)


def _define() -> None:
    define_op(
        "call_lowered",
        inputs=("*args",),
        attrs={
            "kernel": AttrSpec("str", doc="name of the loop-IR kernel (made by legalize-ops)"),
            "shape": AttrSpec("dims", doc="the result shape", may_stay_symbolic=True),
            "dtype": AttrSpec("dtype", doc="the result dtype"),
            "dims": AttrSpec(
                "dims", None, "values of the kernel's dims its buffers' sizes do not determine"
            ),
            "dim_names": AttrSpec("str", None, "the names of those dims, comma-separated"),
            "library": AttrSpec(
                "str", None, "library routines the kernel calls; none = all generated code"
            ),
        },
        infer=_infer,
        compute=_compute,
        pattern=OPAQUE,
        doc="Call a lowered loop-IR kernel on buffers (made by legalize-ops, compiled by codegen).",
    )


_define()
