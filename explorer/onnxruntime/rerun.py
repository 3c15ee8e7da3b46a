"""`rerun` of an ONNX Runtime trace: the same source (the torch model exported again, or the
ONNX file's model) and example inputs recorded again through `pipeline=` (a new pipeline
text) or with the user's rewrite rules swapped (`replace={old: new}`: by the rule's step
name, its `RewriteRuleClassBase` class, or the rule object; a new rule is a `RewriteRule`
or such a class, made with `.rule()`).

The whole pipeline is recorded again: onnxscript registers nothing for a rule, so a rule
redefined in a notebook cell is just a new object, and the re-run applies it.
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


def new_rule(value: Any) -> Any:
    """A replacement as an onnxscript `RewriteRule` (a `RewriteRuleClassBase` subclass
    made with `.rule()`)."""
    from onnxscript.rewriter import pattern

    if isinstance(value, type) and issubclass(value, pattern.RewriteRuleClassBase):
        try:
            return value.rule()
        except TypeError as e:
            raise RerunError(
                f"replace: {value.__name__}.rule() needs arguments ({e}); give the rule "
                f"({value.__name__}.rule(...))"
            ) from None
    if not isinstance(value, pattern.RewriteRule):
        raise RerunError(
            "replace: a new rule is an onnxscript RewriteRule (or a RewriteRuleClassBase "
            f"subclass), not {type(value).__name__}"
        )
    return value


def rerun_onnxruntime(
    trace: Any,
    pipeline: Any = None,
    from_step: Any = None,
    replace: dict | None = None,
    progress: Any = None,
) -> Any:
    """A new trace of `trace`'s source as the module docstring says. `from_step` is
    checked (a step of the trace) and changes nothing else: the whole pipeline is recorded
    again."""
    from explorer.onnxruntime import explore_onnxruntime
    from explorer.onnxruntime.record import rule_class, rule_name

    recorded = recording_of(trace)
    check_from_step(trace, from_step)
    options = dict(recorded.options)
    rules = list(options.get("rewrite_rules") or ())
    swap = Replacements(replace, None, "", make=new_rule)
    if swap:
        names = step_names(trace, recorded.passes)  # as named when recorded
        seen: list[str] = []
        for k, rule in enumerate(rules):
            name = recorded.names.get(id(rule)) or rule_name(rule, f"rule{k}")
            own = {name, *names.get(id(rule), ())}
            seen.extend(own)
            new = swap.pick(rule, own, rule_class(rule) or type(rule))
            if new is not None:
                rules[k] = new
        swap.check_used(seen)
    options["rewrite_rules"] = rules or None
    return explore_onnxruntime(
        recorded.source,
        recorded.example_inputs,
        recorded.pipeline if pipeline is None else pipeline,
        progress,
        **options,
    )


__all__ = ["new_rule", "rerun_onnxruntime"]
