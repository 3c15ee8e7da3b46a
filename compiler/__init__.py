"""passlens's compiler core: IR, ops, frontends, exporters, passes, interpreter and backend."""

from compiler.errors import LimitError, PasslensError

# The interpreter's names, imported when first asked for (``import compiler`` stays light: the
# IR and the ops load with the first of them).
_INTERPRETER = (
    "CallMemo",
    "Evaluation",
    "InterpretError",
    "TypeMismatch",
    "ValueCache",
    "bind_inputs",
    "compute_op",
    "default_kernels",
    "evaluate",
    "kernels_in_use",
    "matmul_float64",
    "rounds_otherwise",
    "warm_up_kernels",
)

# torch calls shared between two runs (the check's import run and torch's reference)
_SHARED_CALLS = ("SharedCalls", "sharing_calls")

__all__ = ["LimitError", "PasslensError", *_INTERPRETER, *_SHARED_CALLS]


def __getattr__(name: str):
    # ``compiler.build(module)``: the backend (llvmlite) is imported only when first asked for
    if name in ("build", "load_executable"):
        from compiler import backend

        return backend.build if name == "build" else backend.load
    if name in _SHARED_CALLS:
        from compiler import shared_calls

        return getattr(shared_calls, name)
    if name in _INTERPRETER:
        from compiler import interpret

        return getattr(interpret, name)
    raise AttributeError(f"module 'compiler' has no attribute {name!r}")
