"""A user's own passes in passlens traces: what runs a step's pass again, what a trace file
keeps of a pass passlens may not find by name, and how a loaded trace gets such passes back.

A recorded step keeps the Pass object that ran (`step.pass_object`), so a pass nobody
registered (`pipeline=["default", FastGelu()]`) runs again wherever a name would: reduce,
rerun. A trace file can keep only names: for a pass that is not one of passlens's own
registered passes it also keeps the pass's class, module and whether it was registered
(`pass_record`; read back as `step.saved_pass`). A loaded trace never imports the
module a file names: such a pass is found again only in the passes given to
`explorer.load(path, passes=[...])` (`supply`) or, for a registered one, in this
process's registry when its class is the same definition; otherwise whatever needs to run it
says which pass is missing and how to supply it (`MissingPasses`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compiler.passes import (
    Pass,
    PipelineError,
    Sequential,
    all_passes,
    build_pipeline,
    where_defined,
)

if TYPE_CHECKING:
    from explorer.step import Step
    from explorer.trace import Trace


class MissingPasses(Exception):
    """Passes a loaded trace names but this process does not have; `str()` says which and
    how to supply them (callers raise it as their own error: ReduceError, RerunError).
    `missing`: each in words; `classes`: the class names to give, where known."""

    def __init__(self, missing: Sequence[str], classes: Sequence[str] = ()):
        self.missing = list(dict.fromkeys(missing))
        self.classes = list(dict.fromkeys(classes))
        super().__init__(self.text())

    def text(self) -> str:
        many = len(self.missing) > 1
        what = ", ".join(self.missing[:5]) + (" ..." if len(self.missing) > 5 else "")
        given = ", ".join(self.classes) if self.classes else "MyPass"
        return (
            f"the trace's pass{'es' if many else ''} {what} {'are' if many else 'is'} not "
            f"available here: load the trace with explorer.load(path, passes=[{given}]) "
            f"(classes or instances), or register {'them' if many else 'it'} "
            "(compiler.passes.register_pass) before loading"
        )

    def __add__(self, other: MissingPasses) -> MissingPasses:
        return MissingPasses(self.missing + other.missing, self.classes + other.classes)


def is_own(p: Any) -> bool:
    """Whether `p` is one of passlens's own registered passes (found by its name anywhere)."""
    cls = type(p)
    return cls.__module__.startswith("compiler.") and all_passes().get(p.name) is cls


def pass_record(p: Any) -> dict | None:
    """What a trace file keeps of pass `p` besides its spec when passlens may not find it by
    name where the file is loaded (not one of its own registered passes); None otherwise (a
    Sequential: its passes are steps of their own)."""
    if not isinstance(p, Pass) or isinstance(p, Sequential) or is_own(p):
        return None
    cls = type(p)
    return {
        "name": str(p.name),
        "spec": p.spec(),
        "class": cls.__qualname__,
        "module": cls.__module__,
        "registered": all_passes().get(p.name) is cls,
        "defined": where_defined(cls),
    }


def describe(rec: dict) -> str:
    """A saved pass in words: `'fast-gelu' (__main__.FastGelu, not registered)`."""
    registered = "registered" if rec.get("registered") else "not registered"
    return f"{rec['name']!r} ({rec['module']}.{rec['class']}, {registered} when saved)"


# ===== a loaded trace's passes ===================================================================


def supply(trace: Trace, passes: Any) -> None:
    """Give the steps of a loaded `trace` whose file names a user's pass the object to run
    (`explorer.load(path, passes=[...])`): an instance given whose spec is the step's, else
    the class given under the pass's name (built from the step's spec). A pass given that no
    step ran is an error (a misspelled name would otherwise go unnoticed); a class of one of
    passlens's own passes given for good measure is not."""
    given = _given(passes)
    used: set[int] = set()
    for step in trace.steps:
        rec = step.saved_pass
        if step.kind != "pass" or rec is None:
            continue
        for k, p in enumerate(given):
            obj = _match(p, rec)
            if obj is not None:
                step.pass_object = obj
                used.add(k)
                break
    steps = [s for s in trace.steps if s.kind == "pass"]
    ran = sorted({s.spec for s in steps if not s.children})
    listed = ", ".join(ran[:20]) + (" ..." if len(ran) > 20 else "")
    for k, g in enumerate(given):
        if k in used:
            continue
        if isinstance(g, Pass) and not any(s.spec == g.spec() for s in steps):
            raise PipelineError(
                f"passes=: {g.spec()!r} is not a pass this trace ran (its passes: {listed}); "
                "give its class to build it from the trace's specs"
            )
        if not any(s.name == g.name for s in steps):
            raise PipelineError(
                f"passes=: {g.name!r} ran in no step of this trace (its passes: {listed})"
            )


def _given(passes: Any) -> list:
    if isinstance(passes, (Pass, type)):
        passes = [passes]
    if not isinstance(passes, (list, tuple)):
        raise PipelineError(f"passes= takes a list of Pass classes or instances, not {passes!r}")
    for p in passes:
        named = isinstance(p, Pass) or (isinstance(p, type) and issubclass(p, Pass))
        if not named or not getattr(p, "name", ""):
            raise PipelineError(f"passes= takes named Pass classes or instances, not {p!r}")
    return list(passes)


def _match(p: Any, rec: dict) -> Pass | None:
    """The pass to run for a saved record: instance `p` with the same spec, or class `p`
    of the same name built from the spec (None if `p` is not that pass)."""
    if isinstance(p, Pass):
        return p if p.spec() == rec["spec"] else None
    if p.name != rec["name"]:
        return None
    seq = build_pipeline(rec["spec"], classes=[p])
    return seq.passes[0] if len(seq.passes) == 1 else None


def runnable(step: Step, steps: Sequence[Step]) -> Any:
    """The Pass that runs `step`'s pass again: its own object, the registered class of the
    same definition built from its spec (a saved user's pass), or its spec parsed (passlens's
    own); a list of passes whose spec does not parse is built from its nested steps. Raises
    `MissingPasses` naming every pass this process does not have."""
    if step.pass_object is not None:
        return step.pass_object
    rec = step.saved_pass
    if rec is not None:
        cls = all_passes().get(rec["name"])
        if cls is None or (cls.__module__, cls.__qualname__) != (rec["module"], rec["class"]):
            raise MissingPasses([describe(rec)], [rec["class"].rpartition(".")[2]])
        return _single(build_pipeline(rec["spec"]), rec["spec"])
    try:
        return _single(build_pipeline(step.spec), step.spec)
    except PipelineError as e:
        if not step.children:
            raise MissingPasses([f"{step.spec!r} ({e})"]) from None
    kids, missing = [], MissingPasses([])
    for c in step.children:
        try:
            kids.append(runnable(steps[c], steps))
        except MissingPasses as e:
            missing += e
    if missing.missing:
        raise missing
    joined = ",".join(k.spec() for k in kids)
    return Sequential(tuple(kids), label="" if step.spec == joined else step.spec)


def _single(seq: Sequential, spec: str) -> Any:
    """The pass a spec item stands for (a list of passes stays a Sequential)."""
    return seq.passes[0] if len(seq.passes) == 1 and "," not in spec else seq


@dataclass(frozen=True)
class Unresolved:
    """A top-level pass of a loaded trace this process does not have: its `spec`, what the
    file said of it (`saved`, or None) and the passes missing (as `MissingPasses`
    names them)."""

    spec: str
    saved: dict | None
    missing: MissingPasses

    @property
    def name(self) -> str:
        return self.saved["name"] if self.saved else self.spec.partition("{")[0]

    def same_as(self, p: Any) -> bool:
        """Whether pass `p` is this one again: the same spec, and of the class the file
        named (for a saved user's pass)."""
        if not isinstance(p, Pass) or p.spec() != self.spec:
            return False
        cls = type(p)
        saved = self.saved
        return saved is None or (cls.__module__, cls.__qualname__) == (
            saved["module"],
            saved["class"],
        )


def entries(trace: Trace) -> list[Any]:
    """The top-level passes of `trace`'s pipeline, in order: its own pass objects for a
    recorded trace; for a loaded one, each top-level step's (`runnable`) then the
    passes a failure left unrun (`trace.skipped` at depth 0, from their specs), an
    `Unresolved` for each this process does not have."""
    if trace.passes:
        return list(trace.passes)
    out: list[Any] = []
    for step in trace.steps:
        if step.kind == "pass" and step.depth == 0:
            try:
                out.append(runnable(step, trace.steps))
            except MissingPasses as e:
                out.append(Unresolved(step.spec, step.saved_pass, e))
    for skipped in trace.skipped:
        if skipped.depth == 0:
            try:
                out.append(_single(build_pipeline(skipped.spec), skipped.spec))
            except PipelineError as e:
                missing = MissingPasses([f"{skipped.spec!r} ({e})"])
                out.append(Unresolved(skipped.spec, None, missing))
    return out


def require(passes: Sequence[Any]) -> list[Any]:
    """`passes` when none is `Unresolved`; else `MissingPasses` naming them."""
    missing = MissingPasses([])
    for p in passes:
        if isinstance(p, Unresolved):
            missing += p.missing
    if missing.missing:
        raise missing
    return list(passes)


__all__ = [
    "MissingPasses",
    "Unresolved",
    "describe",
    "entries",
    "is_own",
    "pass_record",
    "require",
    "runnable",
    "supply",
]
