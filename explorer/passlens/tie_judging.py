"""The check's judging of tied indices (`ties.py` says when indices are a tie): outputs taken
as the reference's, and runs computed again with the reference's order of ties."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from compiler.ir import Expr, Module, children
from explorer.check.facts import Run
from explorer.check.numbers import compare, leaves
from explorer.check.references import input_reference, matched_reference, node_location
from explorer.check.ties import TIE_NOTE, index_source, output_nodes, tied

if TYPE_CHECKING:
    from explorer.step import Step


class TieJudging:
    """The tie methods of `explorer.passlens.check.Interpreter` (which holds `reference`,
    `ref_outputs`, `cache`, `rtol`, `atol`, `notes`, `tie_notes` and
    `run_module`)."""

    def _untie(self, step: Step, outputs: tuple) -> tuple:
        """The outputs as they are judged: an output that is the index result of an
        order-selecting op (`ties.py`) and selects the same values of its input as the
        reference's indices do is taken as the reference's (tied values ordered otherwise:
        both orders are correct), with a note; every other output as it is."""
        if not isinstance(step.module, Module):  # another compiler's steps: outputs only
            return outputs
        got, want = leaves(outputs), leaves(self.ref_outputs)
        nodes = output_nodes(step.module["main"].output)
        if not (len(nodes) == len(got) == len(want)):
            return outputs
        judged, changed = list(got), False
        for i, (node, g, w) in enumerate(zip(nodes, got, want, strict=True)):
            if index_source(node) is None:
                continue
            g, w = np.asarray(g), np.asarray(w)
            if g.shape != w.shape or not compare(g, w, self.rtol, self.atol)[2]:
                continue
            ref = self.reference
            within = input_reference(ref.fx_values, ref.node_values)
            if tied(node, g, w, self.cache.values, self.rtol, self.atol, within):
                judged[i], changed = w.astype(g.dtype, copy=False), True
                self.tie_note(
                    f"output {i} ({node_location(node)})", "judged by the values they select"
                )
        return tuple(judged) if changed else outputs

    def _retie(self, module: Module, run: Run) -> Run:
        """The run again with every index of tied values in @main that differs from the
        reference's (`ties.py`) set to the reference's, and all that reads it computed
        again: what the module computes when it breaks ties as the reference does (a value
        routed by the order of ties, an MoE's chosen experts, is then comparable; a wrong
        index is not tied and stays). A note names each such index."""
        ref = self.reference
        fx, node_ref = ref.fx_values, ref.node_values
        if not fx and not node_ref:
            return run
        values, within = self.cache.values, input_reference(fx, node_ref)
        main = module["main"]
        dirty: dict[int, Expr] = {}
        for node in main.iter_nodes():
            if index_source(node) is None:
                continue
            v = values.get(node)
            if not isinstance(v, np.ndarray):
                continue
            want = matched_reference(node, v, fx, node_ref)
            if want is None or want is v or not compare(v, want, self.rtol, self.atol)[2]:
                continue
            if tied(node, v, want, values, self.rtol, self.atol, within):
                values[node] = np.asarray(want).astype(v.dtype, copy=False)
                dirty[id(node)] = node
                self.tie_note(
                    node_location(node), f"values after it computed with {ref.name}'s order"
                )
        if not dirty:
            return run
        tied_ids = set(dirty)
        for node in main.iter_nodes():  # what reads a replaced index is computed again
            if id(node) not in tied_ids and any(id(c) in dirty for c in children(node)):
                dirty[id(node)] = node
                values.pop(node, None)
        again = self.run_module(module)
        again.generation = run.generation
        again.computed += run.computed
        again.reused += run.reused
        again.seconds += run.seconds
        return again

    def tie_note(self, where: str, how: str) -> None:
        """Say once that the indices of tied values at `where` differ from the reference's,
        and `how` they were judged."""
        note = f"{TIE_NOTE.format(ref=self.reference.name, where=where)}; {how}"
        if note not in self.tie_notes:
            self.tie_notes.add(note)
            self.notes.append(note)
