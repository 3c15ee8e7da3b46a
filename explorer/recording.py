"""Recording, the part every adapter shares: `pass_steps` turns a run's snapshots (the pass
manager's records, or ones with their fields) into a trace's steps, and `input_tuple` is the
example inputs as a trace keeps them. Each compiler's recorder lives in its adapter's folder
(passlens's: `explorer.passlens.record`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from explorer.step import Step


def pass_steps(snapshots: Sequence[Any], offset: int) -> list[Step]:
    """The pass steps of a run's snapshots (each a `compiler.passes.Snapshot` or one with
    its fields), numbered after the `offset` steps before them (source, import): what every
    adapter's recorder builds its trace from."""
    return [
        Step(
            offset + snap.index,
            "pass",
            snapshot=snap,
            parent=None if snap.parent is None else offset + snap.parent,
            children=[offset + c for c in snap.children],
        )
        for snap in snapshots
    ]


def input_tuple(example_inputs: Any) -> tuple | None:
    """Example inputs as a trace keeps them: a tuple (one value becomes a 1-tuple), or None."""
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    if example_inputs is not None and not isinstance(example_inputs, tuple):
        return (example_inputs,)
    return example_inputs


__all__ = ["input_tuple", "pass_steps"]
