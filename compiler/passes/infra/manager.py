"""Passes, the pass registry, instruments and the pass manager.

A pass is a pure function from Module to Module. A pass with options is a frozen dataclass
whose fields are its options, so `str(pass)` is a spec (`convert-dtype{dtype=float16}`)
that parses back to an equal pass. The pass manager applies passes through a
`PassContext`; instruments see every application, nested ones included, before and
after it runs (like TVM's PassInstrument). The recorder is one such instrument.
"""

from __future__ import annotations

import dataclasses
import difflib
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from compiler.errors import PasslensError
from compiler.ir.nodes import Expr, Module
from compiler.ir.types import DType
from compiler.passes.infra import rewrite, rules
from compiler.passes.infra.redefinition import (
    PassRegistrationError,
    redefined,
    same_definition,
    where_defined,
)


class PassError(PasslensError):
    """A pass cannot transform the module; `node` is the binding it failed on, if known."""

    def __init__(self, message: str, node: Expr | None = None):
        super().__init__(message)
        self.node = node


class PassFailed(PasslensError, RuntimeError):
    """Raised by `run(..., raise_on_failure=True)`: names the pass and the passes before."""


class PassesInterrupted(KeyboardInterrupt):
    """Raised by `run` when a KeyboardInterrupt (Ctrl-C, a notebook's stop button) stops
    a recorded run. It is a KeyboardInterrupt, so the run stops as the user asked; `result`
    is the partial `PassResult`: what ran, the interrupted pass, what was skipped."""

    def __init__(self, result: PassResult):
        super().__init__(result)
        self.result = result

    def __str__(self) -> str:
        where = self.result.failure.spec if self.result.failure else "?"
        return f"run interrupted in pass {where} (.result holds what ran)"


class Pass:
    """Base class of passes. Subclasses set `name` and implement `transform`.

    Options are dataclass fields (declare subclasses with `@dataclass(frozen=True)`).
    A pass that changes how a module is called (`compiler.passes.calling_convention`: the
    parameters, a transform function, lazy weights or results) sets `changes_signature`;
    every other pass must leave the calling convention as it was.
    """

    name: ClassVar[str] = ""
    changes_signature: ClassVar[bool] = False

    def transform(self, module: Module, ctx: PassContext) -> Module:
        """Return the transformed module (the same object when nothing changes)."""
        raise NotImplementedError

    def __call__(self, module: Module) -> Module:
        return PassContext.current().apply(self, module)

    @property
    def options(self) -> dict[str, Any]:
        """The option values, by name."""
        if dataclasses.is_dataclass(self):
            return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {}

    def spec(self) -> str:
        """This pass as a pipeline spec item, e.g. `convert-dtype{dtype=float16}`."""
        opts = (
            {
                f.name: getattr(self, f.name)
                for f in dataclasses.fields(self)
                if dataclasses.is_dataclass(self) and getattr(self, f.name) != _default(f)
            }
            if dataclasses.is_dataclass(self)
            else {}
        )
        if not opts:
            return self.name

        return self.name + "{" + ",".join(f"{k}={format_option(v)}" for k, v in opts.items()) + "}"

    def __str__(self) -> str:
        return self.spec()


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


_PASSES: dict[str, type[Pass]] = {}


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make a pass available by its `name` in pipeline specs.

    A name already taken by the same definition (a notebook cell run again,
    `importlib.reload`: same module and qualified name) is taken over by the new class,
    with a `PassRedefinedWarning`; a name taken by another definition is an error
    naming both."""
    if not cls.name:
        raise PassRegistrationError(f"{cls.__name__} has no name")
    old = _PASSES.get(cls.name)
    if old is not None and old is not cls:
        if not same_definition(old, cls):
            raise PassRegistrationError(
                f"pass {cls.name!r} is registered twice: by {where_defined(old)} and by "
                f"{where_defined(cls)}; give one of them another name"
            )
        redefined(
            f"pass {cls.name!r} redefined: {where_defined(cls)} replaces the earlier definition",
            stacklevel=2,
        )
    _PASSES[cls.name] = cls
    return cls


def get_pass_class(name: str) -> type[Pass]:
    """The pass class registered under `name`; unknown names get suggestions."""
    try:
        return _PASSES[name]
    except KeyError:
        close = difflib.get_close_matches(name, _PASSES, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise KeyError(f"unknown pass {name!r}{hint}") from None


def all_passes() -> dict[str, type[Pass]]:
    """Every registered pass class by name."""
    return dict(_PASSES)


@register_pass
@dataclass(frozen=True)
class Sequential(Pass):
    """Apply passes in order (each application is recorded as a nested step)."""

    name: ClassVar[str] = "sequential"
    passes: tuple = ()
    label: str = ""

    def transform(self, module: Module, ctx: PassContext) -> Module:
        for p in self.passes:
            module = ctx.apply(p, module)
        return module

    def spec(self) -> str:
        return self.label or ",".join(p.spec() for p in self.passes)

    @property
    def display_name(self) -> str:
        """The label, or the pipeline spec."""
        return self.label or self.spec()


class Instrument:
    """Hooks around every pass application (nested ones included)."""

    def enter(self, ctx: PassContext) -> None:
        """Called once when the context starts running."""

    def before(self, p: Pass, module: Module, depth: int) -> None:
        """Called before `p` runs on `module`."""

    def after(self, p: Pass, before: Module, after: Module, seconds: float, depth: int) -> None:
        """Called after `p` returned `after`."""

    def failed(
        self, p: Pass, module: Module, error: BaseException, seconds: float, depth: int
    ) -> None:
        """Called when `p` raised on `module` (the exception then propagates)."""


@dataclass
class Snapshot:
    """One pass application: what ran, where in the nesting, its result and its cost.

    `module` is the module after the pass (a reference; modules are immutable and share
    unchanged nodes), `before` the module it was given. For a failure, `error` and
    `traceback` are set, `module` is None and `failed_node` is the binding the pass was
    working on when it failed (when known).
    """

    index: int
    pass_name: str
    spec: str
    options: dict
    depth: int
    parent: int | None
    before: Module
    module: Module | None = None
    seconds: float = 0.0
    error: BaseException | None = None
    traceback: str = ""
    failed_function: str | None = None
    failed_node: Expr | None = None
    children: list[int] = field(default_factory=list)
    # the rule applications of this pass (compiler.passes.RewriteRecord; collected only
    # inside compiler.passes.collect_rewrites)
    rewrites: tuple = ()
    # the Pass object that ran (what runs it again: a pass nobody registered has no spec
    # that finds it); None for a snapshot made from a file or another compiler's record
    pass_object: Any = None

    @property
    def changed(self) -> bool:
        """Whether the pass returned a different module (identity, not equality)."""
        return self.module is not None and self.module is not self.before

    @property
    def failed(self) -> bool:
        """Whether the pass raised."""
        return self.error is not None

    @property
    def status(self) -> str:
        """`failed`, `changed` or `unchanged`."""
        return "failed" if self.failed else ("changed" if self.changed else "unchanged")

    def __repr__(self) -> str:
        return (
            f"<Snapshot #{self.index} {'  ' * self.depth}{self.spec} {self.status} "
            f"{self.seconds * 1000:.1f} ms>"
        )


class Recorder(Instrument):
    """Records every pass application as a `Snapshot` (nested ones included)."""

    def __init__(self) -> None:
        self.snapshots: list[Snapshot] = []
        self._stack: list[int] = []
        self._ctx: PassContext | None = None

    def enter(self, ctx: PassContext) -> None:
        self._ctx = ctx

    def before(self, p: Pass, module: Module, depth: int) -> None:
        parent = self._stack[-1] if self._stack else None
        snap = Snapshot(
            index=len(self.snapshots),
            pass_name=shown_name(p),
            spec=p.spec(),
            options=p.options if not isinstance(p, Sequential) else {},
            depth=depth,
            parent=parent,
            before=module,
            pass_object=p,
        )
        if parent is not None:
            self.snapshots[parent].children.append(snap.index)
        self.snapshots.append(snap)
        self._stack.append(snap.index)

    def after(self, p: Pass, before: Module, after: Module, seconds: float, depth: int) -> None:
        snap = self.snapshots[self._stack.pop()]
        snap.module = after
        snap.seconds = seconds
        if self._ctx is not None:
            snap.rewrites = self._ctx.rewrites

    def failed(self, p, module, error, seconds, depth) -> None:
        snap = self.snapshots[self._stack.pop()]
        snap.error = error
        snap.seconds = seconds
        snap.traceback = "".join(traceback.format_exception(error))
        node = getattr(error, "node", None)
        snap.failed_node = node if node is not None else rewrite.progress.node
        snap.failed_function = rewrite.progress.function


def shown_name(p: Pass) -> str:
    """The name a pass is shown by: a named pipeline's label (or spec), else the pass name."""
    return (p.display_name if isinstance(p, Sequential) else p.name) or p.name


class VerifyAfterEach(Instrument):
    """Runs the verifier after every pass; a broken invariant fails that pass, naming it."""

    def after(self, p: Pass, before: Module, after: Module, seconds: float, depth: int) -> None:
        if after is before or isinstance(p, Sequential):
            return
        from compiler.ir.verify import check, context

        problems = check(after)
        if problems:
            node = problems[0].node
            raise PassError(
                f"pass {p.spec()} broke the IR's invariants:\n{context(after, problems)}", node
            )


class PassContext:
    """Runs passes with instruments; `PassContext.current()` is the innermost active one."""

    _stack: ClassVar[list[PassContext]] = []

    def __init__(self, instruments: Sequence[Instrument] = ()):
        self.instruments = list(instruments)
        self.depth = 0
        self.applied: list[str] = []
        # the rule applications of the pass that has just finished (inside collect_rewrites)
        self.rewrites: tuple = ()

    @classmethod
    def current(cls) -> PassContext:
        """The active context, or a fresh one without instruments."""
        return cls._stack[-1] if cls._stack else PassContext()

    def __enter__(self) -> PassContext:
        PassContext._stack.append(self)
        for inst in self.instruments:
            inst.enter(self)
        return self

    def __exit__(self, *exc) -> None:
        PassContext._stack.pop()

    def apply(self, p: Pass, module: Module) -> Module:
        """Run pass `p` on `module`, telling every instrument before and after."""
        if not isinstance(module, Module):
            raise TypeError(f"pass {p.spec()} needs a Module, got {type(module).__name__}")
        depth = self.depth
        for inst in self.instruments:
            inst.before(p, module, depth)
        saved = (rewrite.progress.function, rewrite.progress.node)
        rewrite.progress.function = rewrite.progress.node = None
        self.depth += 1
        start = time.perf_counter()
        try:
            with _activate(self), rules.pass_frame() as frame:
                out = p.transform(module, self)
            if not isinstance(out, Module):
                raise PassError(f"pass {p.spec()} returned {type(out).__name__}, not a Module")
            self.rewrites = () if frame is None else tuple(rules.finish_frame(frame, module, out))
            elapsed = time.perf_counter() - start
            for inst in self.instruments:
                inst.after(p, module, out, elapsed, depth)
        except BaseException as e:
            elapsed = time.perf_counter() - start
            self.depth = depth
            for inst in self.instruments:
                inst.failed(p, module, e, elapsed, depth)
            raise
        finally:
            self.depth = depth
            rewrite.progress.function, rewrite.progress.node = saved
        if not isinstance(p, Sequential):
            self.applied.append(p.spec())
        return out


class _activate:
    def __init__(self, ctx: PassContext):
        self.ctx = ctx

    def __enter__(self):
        PassContext._stack.append(self.ctx)

    def __exit__(self, *exc):
        PassContext._stack.pop()


@dataclass
class SkippedPass:
    """A pass of the pipeline that did not run because one before it failed (or the run was
    interrupted); `depth` is its nesting, as a Snapshot's would have been."""

    pass_name: str
    spec: str
    depth: int
    reason: str


@dataclass
class PassResult:
    """The outcome of `run`: the final module (the last good one if a pass failed), the
    snapshots (empty without recording), the failed snapshot, if any, and the passes a
    failure left unrun, in pipeline order (`skipped`; recorded runs only)."""

    module: Module
    snapshots: list[Snapshot]
    pipeline: Sequential
    failure: Snapshot | None = None
    skipped: list[SkippedPass] = field(default_factory=list)
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """Whether every pass succeeded."""
        return self.failure is None and not self.interrupted

    def __repr__(self) -> str:
        where = self.failure.spec if self.failure else "?"
        state = "ok" if self.ok else f"{'interrupted' if self.interrupted else 'failed'} at {where}"
        skipped = f", {len(self.skipped)} skipped" if self.skipped else ""
        return (
            f"<PassResult {self.pipeline.spec()!r}: {len(self.snapshots)} snapshots, "
            f"{state}{skipped}>"
        )


def format_option(value: Any) -> str:
    """An option value as it appears in a spec."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, DType):
        return value.name
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(format_option(v) for v in value) + "]"
    if value is None:
        return "none"
    return str(value)
