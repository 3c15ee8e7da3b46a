"""What an IREE step holds, without IREE: `IREEModule`, the MLIR text of one dump of
iree-compile's pass-after-all stream (or what a saved trace kept of it), converted to a graph
model only when a view asks (`explorer.iree.convert`, which imports iree.compiler)."""

from __future__ import annotations

from explorer.graph import GraphModel


class IREEModule:
    """One whole-module MLIR dump (`mlir`: its text, trailing blank lines dropped).
    `phase` is the IREE phase it was dumped in (`input` ... `vm`; `import` for the
    module iree-turbine made). A pass whose dump equals the module it was given shares that
    module's wrapper, so the step is `unchanged`. A module read from a file has the graph
    and text it was saved with."""

    compiler = "iree"
    inner = False

    def __init__(
        self,
        mlir: str | None = None,
        phase: str = "",
        *,
        graph: GraphModel | None = None,
        text: str | None = None,
        texts: dict[str, str] | None = None,
        stage: str | None = None,
    ):
        if mlir is None and (graph is None or text is None):
            raise TypeError("an IREEModule without MLIR text needs its graph and text")
        self.mlir = (mlir if mlir is not None else text).rstrip() + "\n"
        self.phase = phase
        self.parse_error = ""  # why the graph model is one "unparsed" node, if it is
        self.state = None  # the trace's explorer.iree.convert.IREEState (shared op stand-ins)
        self._graph = graph
        self._texts = dict(texts or {})
        self._stage = stage

    def graph_model(self) -> GraphModel:
        """Operations as nodes, SSA values as edges (built on first use; imports iree)."""
        if self._graph is None:
            from explorer.iree.convert import IREEError, graph_of_mlir, unparsed_graph

            try:
                self._graph = graph_of_mlir(self.mlir, self.state)
            except IREEError as e:  # iree-compile printed text its own parser refuses
                self.parse_error = str(e)
                self._graph = unparsed_graph(self.parse_error)
        return self._graph

    def text(self) -> str:
        """The module's MLIR, as iree-compile printed it."""
        return self.mlir

    def texts(self) -> dict[str, str]:
        """No backend texts: every phase's MLIR is the step's own text."""
        return dict(self._texts)

    @property
    def backend_stage(self) -> str | None:
        return self._stage

    @property
    def functions(self) -> list[str]:
        return list(self.graph_model().signatures)

    def __repr__(self) -> str:
        return f"<IREEModule {self.phase or 'loaded'} {len(self.mlir)} chars>"


__all__ = ["IREEModule"]
