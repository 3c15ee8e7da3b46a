"""Which opaque ops a trace may run: what passlens knows to be pure computations, what the trace
trusts of its own, and what the person running it trusts.

An opaque op names an op of torch or onnxruntime, and a trace, IR text or ONNX file is
untrusted: an op that is not a known pure computation (``compiler.ops.opaque_allow``) runs
only when trusted. A trace trusts of its own (``trace.trusted_ops``) the torch ops of a model
explored live from the user's own code (its export made them: the user's code, run already);
that trust is never saved, so the same trace loaded from a file refuses them until trusted
again: ``explorer.load(path, trust_ops=[...])``, ``trace.check(..., trust_ops=[...])``,
``report.reduce(..., trust_ops=[...])``, the CLI's ``--trust-op``.

:func:`trusting` is entered by every entry point that runs a trace's modules (check, reduce):
it adds the trust and refuses, before anything runs, a trace holding an op still untrusted,
with one error naming each such op and how to trust it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from compiler.ir import Module
from compiler.ops import (
    OpaqueOpError,
    refused_message,
    refused_opaque_ops,
    trust_names,
    trusted_opaque_ops,
    trusted_ops,
)


def live_trust(module: Any) -> frozenset[str]:
    """The torch targets of ``module``'s opaque ops: what a model explored live from the user's
    own code may run (its export made them)."""
    if not isinstance(module, Module):
        return frozenset()
    out = set()
    for fn in module.functions.values():
        for node in fn.iter_nodes():
            if getattr(node, "op", None) == "opaque" and node.attrs["framework"] == "torch":
                out.add(node.attrs["target"])
    return frozenset(out)


def trace_modules(trace: Any) -> Iterator[Module]:
    """Every module a check or a reduction of ``trace`` may run: each step's module and the
    module a failed pass was given."""
    for step in getattr(trace, "steps", ()):
        for m in (getattr(step, "module", None), getattr(step, "before", None)):
            if isinstance(m, Module):
                yield m


def refuse_untrusted(trace: Any) -> None:
    """Raise OpaqueOpError (one, naming each op) when ``trace`` holds an opaque op that may
    not run in this context."""
    refused = refused_opaque_ops(trace_modules(trace))
    if refused:
        raise OpaqueOpError(refused_message(list(refused), refused))


@contextlib.contextmanager
def trusting(trace: Any, trust_ops: Iterable[str] | str | None = None):
    """Run the block with ``trace``'s own trust and ``trust_ops`` added to this context's, after
    refusing a trace that holds an op still untrusted (OpaqueOpError, before anything runs)."""
    names = trust_names(trust_ops) | frozenset(getattr(trace, "trusted_ops", ()) or ())
    with trusted_ops(names):
        refuse_untrusted(trace)
        yield


class TrustingExecutable:
    """A compiled step's executable that runs with its trace's own trust (a live torch model's
    custom ops, called on the host between the kernels); everything else is the executable's."""

    def __init__(self, executable: Any, trust: frozenset[str]):
        self._executable = executable
        self._trust = trust

    def __call__(self, *inputs: Any, **options: Any):
        with trusted_ops(self._trust):
            return self._executable(*inputs, **options)

    def run(self, *inputs: Any, **options: Any):
        with trusted_ops(self._trust):
            return self._executable.run(*inputs, **options)

    def __getattr__(self, name: str):
        return getattr(self._executable, name)

    def __repr__(self) -> str:
        return repr(self._executable)


def with_trace_trust(executable: Any, trace: Any) -> Any:
    """``executable`` running with ``trace``'s own trust, if it has any."""
    trust = frozenset(getattr(trace, "trusted_ops", ()) or ())
    return TrustingExecutable(executable, trust) if trust else executable


def needed_trust(module: Any) -> frozenset[str]:
    """The opaque targets of ``module`` that run only when trusted (not known to be pure
    computations), whatever is trusted now."""
    return frozenset(refused_opaque_ops(module, frozenset()))


def current_trust() -> frozenset[str]:
    """The op names trusted in this context."""
    return trusted_opaque_ops()


__all__ = [
    "current_trust",
    "live_trust",
    "needed_trust",
    "refuse_untrusted",
    "trace_modules",
    "trusting",
    "with_trace_trust",
]
