"""passlens's compiler core: IR, ops, frontends, passes, interpreter and backend."""

from compiler.errors import LimitError, PasslensError

__all__ = ["LimitError", "PasslensError"]


def __getattr__(name: str):
    # ``compiler.build(module)``: the backend (llvmlite) is imported only when first asked for
    if name in ("build", "load_executable"):
        from compiler import backend

        return backend.build if name == "build" else backend.load
    raise AttributeError(f"module 'compiler' has no attribute {name!r}")
