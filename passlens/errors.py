"""The command's errors: `CLIError` (a command could not run) and `one_line`, an
exception as the one line `passlens: error: ...` prints (shared by passlens.cli and
passlens.model_sources)."""

from __future__ import annotations

from compiler import PasslensError


class CLIError(PasslensError):
    """A command could not run; the message is printed as one line."""


class PortError(PasslensError, OSError):
    """The app cannot listen on the port asked for (in use, not allowed, out of range); an
    OSError too, with the errno of the failure where there was one."""


def port_error(port, e: OSError | None, option: str = "port=0") -> PortError | None:
    """The PortError for a failure to listen on `port` (`e` None: not a port number), or
    None when `e` is another OSError. `option`: how the caller picks a free port."""
    import errno

    if e is None:
        return PortError(f"bad port {port!r}: use 0 (a free port) to 65535")
    if e.errno not in (errno.EADDRINUSE, errno.EACCES):
        return None
    error = PortError(
        f"port {port} is in use (or not allowed): try {option} (a free port) or another port"
    )
    error.errno = e.errno
    return error


def one_line(e: BaseException) -> str:
    """An exception as one line: CLI errors and known error types as their message, others
    with their type name."""
    from compiler.ir import ParseError

    if isinstance(e, ParseError):
        return f"line {e.line}, column {e.column}: {e.message}"
    if isinstance(e, ImportError):
        missing = e.name or "a module"
        return f"missing dependency {missing} ({e})"
    text = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
    text = str(text).strip().splitlines()[0] if str(text).strip() else ""
    if isinstance(e, (CLIError, FileNotFoundError)) or _known(e):
        return text or type(e).__name__
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _known(e: BaseException) -> bool:
    """Errors whose message says everything (no need for the type name)."""
    from compiler.opaque import OpaqueOpError
    from compiler.passes import PipelineError
    from explorer.store import TraceFileError

    try:
        from compiler.frontend import FrontendError
    except ImportError:  # pragma: no cover - frontend package always present today
        FrontendError = ()  # type: ignore[assignment]
    return isinstance(e, (PipelineError, TraceFileError, FrontendError, OpaqueOpError))


def torch_log_of(e: BaseException) -> list[str]:
    """The torch log lines a capture held back (compiler.frontend.torch_logs), from `e` or
    the errors it was raised from."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        lines = getattr(e, "torch_log", None)
        if lines:
            return list(lines)
        e = e.__cause__ or e.__context__
    return []


def print_error(e: BaseException, stream, verbose: bool = False) -> None:
    """`passlens: error: ...` for `e` on `stream`: one line (a CLIError may say more on
    its own short lines: each unknown pass name, ...). `verbose`: first what torch logged
    while capturing and the traceback; else the line says how many records torch logged."""
    more = str(e).strip().splitlines()[1:] if isinstance(e, CLIError) else []
    log = torch_log_of(e)
    line = one_line(e)
    if verbose:
        import traceback

        if log:
            print("torch's log while capturing:", *log, sep="\n", file=stream)
        traceback.print_exception(e, file=stream)
    elif log:
        records = "1 record" if len(log) == 1 else f"{len(log)} records"
        line += f" (torch logged {records} while capturing: --verbose shows them)"
    print("\n".join([f"passlens: error: {line}", *more]), file=stream)
