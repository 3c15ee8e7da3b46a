"""Exceptions in a trace file: how a recorded error is written (its type's name and module,
its message and simple args) and read back (a builtin type as itself, any other as a
RecordedError subclass of that name: no code of the file's choosing runs). Shared by the
trace and the check report."""

from __future__ import annotations

import builtins
import json
from typing import Any

from explorer.store.fileformat import RecordedError


def encode_error(error: BaseException) -> dict:
    """`error` as a trace file's record: its type's name and module, its message and its
    arguments when they are plain JSON values (what `decode_error` makes an error of again)."""
    rec: dict[str, Any] = {
        "type": getattr(error, "type_name", None) or type(error).__name__,
        "module": getattr(error, "type_module", None) or type(error).__module__,
        "message": str(error),
    }
    if all(isinstance(a, (str, int, float, bool)) or a is None for a in error.args):
        try:
            json.dumps(list(error.args), allow_nan=False)
            rec["args"] = list(error.args)
        except ValueError:
            pass
    return rec


_ERROR_CLASSES: dict[tuple[str, str], type] = {}
_PACKAGE = "explorer.store"  # the module of a recorded type whose own module is not known


def decode_error(rec: dict) -> BaseException:
    """The saved exception: a builtin type is rebuilt as itself, any other type as a
    RecordedError subclass of the same name (no code of the file's choosing runs)."""
    name, module, message = str(rec["type"]), str(rec.get("module") or ""), str(rec["message"])
    args = rec.get("args")
    if not isinstance(args, list):
        args = [message] if message else []
    cls = getattr(builtins, name, None) if module == "builtins" else None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            error = cls(*args)
            if str(error) == message:
                return error
        except Exception:
            pass
    key = (module, name)
    if key not in _ERROR_CLASSES:
        safe = name if name.isidentifier() else "RecordedError"
        _ERROR_CLASSES[key] = type(
            safe,
            (RecordedError,),
            {"type_name": name, "type_module": module, "__module__": module or _PACKAGE},
        )
    return _ERROR_CLASSES[key](message)
