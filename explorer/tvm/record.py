"""Running a TVM pipeline with a recording `PassInstrument`.

The instrument sees every pass application TVM makes in the `PassContext`, nested ones
included (a `Sequential`'s passes, the passes a module pass runs itself, the kernel builds
of `FoldConstant`). Each becomes a `compiler.passes.Snapshot` whose modules are
`explorer.tvm.module.TVMModule` references: the step types, diffs and views are
passlens's own. A pass that returned a module structurally equal to the one it was given
(`tvm_ffi.structural_equal`) shares its wrapper: it did not change the module. A pass that
raises is recorded as failed, with the exception and its traceback, on it and on the passes
around it, as passlens records its own passes; the run then stops and the trace is returned.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

from compiler.passes import SkippedPass, Snapshot
from explorer.tvm.module import TVMState


def resolve_pipeline(pipeline: Any) -> tuple[list, str, bool]:
    """`(passes to apply in turn, the pipeline's text, whether the passes are known)`.

    `pipeline` is a name for `relax.get_pipeline` (`"zero"`), a TVM pass (a
    `tvm.transform.Sequential` included) or a list of passes; None or `[]` runs nothing.
    """
    import tvm
    from tvm import relax

    if pipeline is None:
        return [], "", True
    if isinstance(pipeline, str):
        try:
            p = relax.get_pipeline(pipeline)
        except Exception as e:
            raise ValueError(f"TVM has no Relax pipeline named {pipeline!r}: {e}") from None
        return [p], pipeline, False
    if isinstance(pipeline, tvm.transform.Pass):
        return [pipeline], tvm_pass_name(pipeline), False
    if isinstance(pipeline, (list, tuple)):
        bad = [type(p).__name__ for p in pipeline if not isinstance(p, tvm.transform.Pass)]
        if bad:
            raise TypeError(
                f"a TVM pipeline list holds tvm.transform.Pass objects, not {', '.join(bad)}"
            )
        return list(pipeline), ",".join(tvm_pass_name(p) for p in pipeline), True
    raise TypeError(
        "pipeline for compiler='tvm' is a relax pipeline name (\"zero\"), a tvm.transform.Pass "
        f"or Sequential, or a list of passes; got {type(pipeline).__name__}"
    )


def tvm_pass_name(p: Any) -> str:
    """TVM's name of a pass (its `PassInfo.name`), else its type's name."""
    try:
        return str(p.info.name)
    except Exception:
        return type(p).__name__


#: pass names that say nothing of the pass: a function TVM's tutorials call ``transform``, a
#: lambda, a wrapper's name. A Python pass so named is named after the Relax mutators or
#: visitors it makes (``GeluToRelu``), else after where its function is defined.
GENERIC_NAMES = frozenset(
    {"transform", "transform_module", "transform_function", "<lambda>", "_pass_func"}
    | {"pass_func", "wrapper", "inner", "func", "fn", "f", "run", "apply", "mutate", "rewrite"}
)


class _Seen:
    """What ran inside one generically named pass: the Relax mutator / visitor classes it
    made (in order), where its own function is defined."""

    __slots__ = ("classes", "where")

    def __init__(self) -> None:
        self.classes: list[str] = []
        self.where: str | None = None

    def name(self, generic: str) -> str | None:
        if self.classes:
            return "+".join(self.classes[:3])
        if self.where is not None:
            return f"{generic} ({self.where})"
        return None


class _Run:
    """The recorder's state during one run (the instrument calls into it)."""

    def __init__(self, state: TVMState, job: Any):
        import tvm_ffi

        self.state = state
        self.job = job
        self.snapshots: list[Snapshot] = []
        self.stack: list[tuple[int, float]] = []
        self.equal = tvm_ffi.structural_equal
        self.watch: dict[int, _Seen] = {}  # open generically named passes: what ran inside
        self.profiling = False

    # ----- names of generically named passes (see GENERIC_NAMES) ---------------------------
    def _watch(self, index: int, name: str) -> None:
        """Note what the pass `snapshots[index]` makes and calls, for a better name than
        `name`: a profile function while it runs (not when another profiler is set)."""
        import sys

        if name not in GENERIC_NAMES:
            return
        if not self.profiling:
            if sys.getprofile() is not None:
                return  # someone else's profiler: the pass keeps TVM's name
            sys.setprofile(self._profile)
            self.profiling = True
        self.watch[index] = _Seen()

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call" or not self.stack:
            return
        index = self.stack[-1][0]
        seen = self.watch.get(index)
        if seen is None:
            return
        code = frame.f_code
        if code.co_name == "__init__":
            if not code.co_argcount or code.co_varnames[0] != "self":
                return
            obj = frame.f_locals.get("self")
            cls = type(obj)
            if isinstance(obj, _visitor_types()) and not cls.__module__.startswith("tvm."):
                if cls.__name__ not in seen.classes:
                    seen.classes.append(cls.__name__)
        elif seen.where is None and code.co_name == self.snapshots[index].spec:
            import os

            seen.where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"

    def _named(self, index: int) -> None:
        """Rename `snapshots[index]` after what ran inside (when it was watched)."""
        seen = self.watch.pop(index, None)
        if seen is not None:
            snap = self.snapshots[index]
            better = seen.name(snap.spec)
            if better:
                snap.pass_name = better[:200]
        if not self.watch:
            self.stop_profile()

    def stop_profile(self) -> None:
        """Remove the profile function (whatever happened to the passes watched)."""
        import sys

        if self.profiling:
            if sys.getprofile() == self._profile:
                sys.setprofile(None)
            self.profiling = False
            self.watch.clear()

    def before(self, mod: Any, info: Any) -> None:
        parent = self.stack[-1][0] if self.stack else None
        wrapper = self.state.wrap(mod)
        name = str(info.name)
        snap = Snapshot(
            index=len(self.snapshots),
            pass_name=name,
            spec=name,
            options={},
            depth=len(self.stack),
            parent=parent,
            before=wrapper,
        )
        if parent is not None:
            self.snapshots[parent].children.append(snap.index)
        self.snapshots.append(snap)
        if self.job is not None:
            self.job.advance(name)
        self._watch(snap.index, name)
        self.stack.append((snap.index, time.perf_counter()))

    def after(self, mod: Any, info: Any) -> None:
        index, start = self.stack.pop()
        snap = self.snapshots[index]
        snap.seconds = time.perf_counter() - start
        snap.module = self.state.result(snap.before, mod, self.equal)
        self._named(index)

    def failed(self, error: BaseException, binding: Any = None) -> bool:
        """The passes still open when `error` left the pipeline failed with it; False when
        none was open (the error came from outside any pass)."""
        if not self.stack:
            return False
        now = time.perf_counter()
        text = "".join(traceback.format_exception(error))
        node = None
        if binding is not None:
            try:
                node = self.state.ref(binding.var, binding.value)
            except Exception:  # a binding of an unexpected shape: the failure still records
                node = None
        while self.stack:
            index, start = self.stack.pop()
            snap = self.snapshots[index]
            snap.error = error
            snap.traceback = text
            snap.seconds = now - start
            if node is not None and snap.failed_node is None:
                snap.failed_node = node
            self._named(index)
        return True


def _visitor_types() -> tuple:
    from tvm.relax.expr_functor import PyExprMutator, PyExprVisitor

    return (PyExprMutator, PyExprVisitor)


def failing_binding(p: Any, module: Any, ctx_args: dict) -> Any:
    """The Relax binding pass `p` was visiting when it failed on `module`: `p` is run
    again (outside the recording, in its own PassContext) while a profiler notes the last
    `binding` argument of the Python visitors it calls (TVM's Python passes visit bindings
    with `visit_var_binding_` / `visit_binding`; the FFI's traceback frames do not keep
    their locals). None when no visitor had one (a pass written in C++)."""
    import sys

    import tvm

    seen: list[Any] = []

    def profile(frame, event, arg):
        if event == "call":
            value = frame.f_locals.get("binding")
            if hasattr(value, "var") and hasattr(value, "value"):
                seen.append(value)

    args = {k: v for k, v in ctx_args.items() if k != "instruments"}
    old = sys.getprofile()
    try:
        with tvm.transform.PassContext(**args):
            sys.setprofile(profile)
            try:
                p(module)
            except Exception:  # the failure again: what we wanted
                pass
            finally:
                sys.setprofile(old)
    except Exception:  # the context itself: no binding then
        return None
    return seen[-1] if seen else None


def make_instrument(run: _Run) -> Any:
    """A TVM PassInstrument reporting to `run`."""
    import tvm

    @tvm.instrument.pass_instrument
    class PasslensRecorder:
        """Records every pass application for passlens."""

        def run_before_pass(self, mod, info):
            run.before(mod, info)

        def run_after_pass(self, mod, info):
            run.after(mod, info)

    return PasslensRecorder()


def run_pipeline(
    module: Any,
    pipeline: Any,
    state: TVMState,
    *,
    job: Any = None,
    opt_level: int | None = None,
    config: dict | None = None,
    instruments: Any = (),
    target: Any = None,
) -> tuple[list[Snapshot], list[SkippedPass], bool]:
    """Run `pipeline` on `module` with the recorder: `(snapshots, skipped, interrupted)`.

    A failing pass ends the run (the exception is recorded on its snapshot); when the
    pipeline is a list, the passes after it are listed as skipped.
    """
    import contextlib

    import tvm

    passes, _, known = resolve_pipeline(pipeline)
    run = _Run(state, job)
    ctx_args: dict[str, Any] = {"instruments": [*instruments, make_instrument(run)]}
    if opt_level is not None:
        ctx_args["opt_level"] = opt_level
    if config:
        ctx_args["config"] = config
    skipped: list[SkippedPass] = []
    interrupted = False
    current = module
    state.context = {"opt_level": opt_level, "config": dict(config or {}), "target": target}
    with contextlib.ExitStack() as stack:
        stack.callback(run.stop_profile)
        if target is not None:
            stack.enter_context(tvm.target.Target(target))
        stack.enter_context(tvm.transform.PassContext(**ctx_args))
        for k, p in enumerate(passes):
            first = len(run.snapshots)
            try:
                current = p(current)
            except Exception as e:
                note_passes(run.snapshots, first, p, state.passes)
                if not run.failed(e, failing_binding(p, current, ctx_args)):
                    raise
                reason = f"skipped: pass {_failed_name(run, p)} failed"
            except KeyboardInterrupt as e:
                note_passes(run.snapshots, first, p, state.passes)
                if not run.failed(e):
                    raise
                interrupted = True
                reason = f"skipped: interrupted in pass {_failed_name(run, p)}"
            else:
                note_passes(run.snapshots, first, p, state.passes)
                continue
            if known:
                skipped = [
                    SkippedPass(tvm_pass_name(q), tvm_pass_name(q), 0, reason)
                    for q in passes[k + 1 :]
                ]
            break
    return run.snapshots, skipped, interrupted


def note_passes(snapshots: list[Snapshot], index: int, p: Any, passes: dict[int, Any]) -> None:
    """Note `p` as the pass of `snapshots[index]` (when that snapshot is `p`'s, by
    name) and, for a `Sequential`, its passes as those of the snapshot's children, matched
    in order by name (a Sequential skips the passes its opt_level leaves out). A snapshot's
    `spec` is TVM's name of its pass (its `pass_name` may be a better one)."""
    if index >= len(snapshots) or snapshots[index].spec != tvm_pass_name(p):
        return
    passes[index] = p
    inner = list(getattr(p, "passes", None) or ())
    k = 0
    for child in snapshots[index].children:
        name = snapshots[child].spec
        while k < len(inner) and tvm_pass_name(inner[k]) != name:
            k += 1
        if k == len(inner):
            return
        note_passes(snapshots, child, inner[k], passes)
        k += 1


def _failed_name(run: _Run, p: Any) -> str:
    failed = [s for s in run.snapshots if s.error is not None]
    return failed[-1].spec if failed else tvm_pass_name(p)


__all__ = ["make_instrument", "resolve_pipeline", "run_pipeline", "tvm_pass_name"]
