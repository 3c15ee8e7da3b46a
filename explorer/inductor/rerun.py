"""`rerun` of a torch.compile trace: the same model, example inputs, `dynamic` and extra
calls compiled again, with changed `torch._inductor.config` options: `pipeline=` a dict of
options over the trace's own (Inductor runs its own passes: its "pipeline" is what those
options plug in), `replace={old: new}` a custom pass swapped (`{"AddToSub": Fixed()}`, by
the pass's step name, its option's name, its class or the object).

The whole compile is recorded again (Dynamo's cache reset, Inductor's FX graph and AOTAutograd
caches off, as for `explore`), so a pass redefined in a notebook cell runs, whatever its
`uuid()` says: no compiled graph of the earlier pass is served from a cache.
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

#: the torch._inductor.config options that hold a pass of the user's
PASS_OPTIONS = (
    "pre_grad_custom_pass",
    "joint_custom_pre_pass",
    "joint_custom_post_pass",
    "post_grad_custom_pre_pass",
    "post_grad_custom_post_pass",
)


def rerun_inductor(
    trace: Any,
    pipeline: Any = None,
    from_step: Any = None,
    replace: dict | None = None,
    progress: Any = None,
) -> Any:
    """A new trace of `trace`'s model compiled again with the options changed as the module
    docstring says. `from_step` is checked (a step of the trace) and changes nothing else:
    the whole compile is recorded again."""
    from explorer.inductor import explore_inductor
    from explorer.inductor.record import pass_label

    recorded = recording_of(trace)
    check_from_step(trace, from_step)
    options = dict(recorded.options.get("options") or {})
    if pipeline is not None:
        if not isinstance(pipeline, dict):
            raise RerunError(
                "compiler='inductor' runs torch.compile's own passes: a re-run's pipeline is a "
                "dict of torch._inductor.config options over the trace's own "
                "({'post_grad_custom_post_pass': MyPass()}), not "
                f"{type(pipeline).__name__}"
            )
        options.update(pipeline)
    swap = Replacements(replace, object, "a pass")
    if swap:
        names = step_names(trace, recorded.passes)
        seen: list[str] = []
        for key in PASS_OPTIONS:
            fn = options.get(key)
            if fn is None:
                continue
            own = {key, pass_label(fn), f"{key}={pass_label(fn)}", *names.get(id(fn), ())}
            seen.extend(sorted(own))
            new = swap.pick(fn, own)
            if new is not None:
                if not callable(new):
                    raise RerunError(
                        f"replace: a new Inductor pass is a CustomGraphPass or a function of "
                        f"an FX graph, not {type(new).__name__}"
                    )
                options[key] = new
        swap.check_used(seen)
    return explore_inductor(
        recorded.source,
        recorded.example_inputs,
        None,
        progress,
        dynamic=recorded.options.get("dynamic"),
        options=options,
        calls=recorded.options.get("calls", ()),
    )


__all__ = ["PASS_OPTIONS", "rerun_inductor"]
