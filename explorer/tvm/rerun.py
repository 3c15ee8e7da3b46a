"""`rerun` of a TVM trace: the same source, example inputs and PassContext settings recorded
again through a changed pipeline (`pipeline=` a new one, or `replace={old: new}`: passes of
the pipeline swapped, inside a `Sequential` too).

The whole pipeline is recorded again: TVM's passes are cheap next to the check, and a TVM
module is immutable, so the steps before the first changed pass come out equal (not the same
objects). A pass a key names can be one of the pipeline list's (or a `Sequential`'s in it):
a pass TVM builds inside a pipeline of its own (`"zero"`'s `FoldConstant`) cannot be swapped;
give the pipeline as a list of passes for that.
"""

from __future__ import annotations

from typing import Any

from explorer.rerunning import (
    Replacements,
    RerunError,
    check_from_step,
    recording_of,
    step_names,
)


def rerun_tvm(
    trace: Any,
    pipeline: Any = None,
    from_step: Any = None,
    replace: dict | None = None,
    progress: Any = None,
) -> Any:
    """A new trace of `trace`'s source through `pipeline` (default: the trace's own) with
    the passes `replace` names swapped (see the module docstring). `from_step` is checked
    (a step of the trace) and changes nothing else: the whole pipeline is recorded again."""
    import tvm

    from explorer.tvm import explore_tvm

    recorded = recording_of(trace)
    check_from_step(trace, from_step)
    swap = Replacements(replace, tvm.transform.Pass, "a tvm.transform.Pass")
    new = recorded.pipeline if pipeline is None else pipeline
    if swap:
        new = swapped(new, swap, step_names(trace, recorded.passes), trace)
    return explore_tvm(recorded.source, recorded.example_inputs, new, progress, **recorded.options)


def swapped(pipeline: Any, swap: Replacements, names: dict[int, set[str]], trace: Any) -> Any:
    """`pipeline` with the passes `swap` names replaced (a list stays a list, a pass a
    pass); a `RerunError` for a key that names none of its passes."""
    from explorer.tvm.record import resolve_pipeline, tvm_pass_name

    passes, _, is_list = resolve_pipeline(pipeline)
    seen: list[str] = []

    def one(p: Any) -> Any:
        own = {tvm_pass_name(p), *names.get(id(p), ())}
        seen.extend(sorted(own))
        new = swap.pick(p, own)
        if new is not None:
            return new
        inner = list(getattr(p, "passes", None) or ())
        if not inner:
            return p
        out = [one(q) for q in inner]
        if all(a is b for a, b in zip(out, inner, strict=True)):
            return p
        import tvm

        info = p.info
        return tvm.transform.Sequential(
            out, opt_level=int(info.opt_level), name=str(info.name), required=list(info.required)
        )

    out = [one(p) for p in passes]
    try:
        swap.check_used(seen)
    except RerunError as e:
        inside = [s.name for s in trace.steps if s.kind == "pass" and s.depth > 0]
        hint = [k for k, _ in swap.items if isinstance(k, str) and k in inside]
        if hint:
            raise RerunError(
                f"{e}; {', '.join(repr(k) for k in hint)} ran inside a pass TVM builds itself "
                "(a pipeline name such as 'zero'): give the pipeline as a list of passes to "
                "swap it"
            ) from None
        raise
    if is_list:
        return out
    return out[0] if out else pipeline


__all__ = ["rerun_tvm", "swapped"]
