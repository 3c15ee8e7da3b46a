"""Provenance: where an IR node came from in the user's model, and which pass made it."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True, slots=True)
class Provenance:
    """Source location of a node: framework, module path, source op and node, file:line, pass.

    `module_path` is the dotted path of the source layer (`stages.1.blocks.0.pwconv1`),
    `source_op` the framework op (`aten.linear.default` or ONNX `Gemm`), `source_node`
    the FX node or ONNX node name, `location` a `file:line` and `pass_name` the pass that
    created the node (None for nodes made by a frontend or the parser).
    """

    framework: str | None = None
    module_path: str | None = None
    source_op: str | None = None
    source_node: str | None = None
    location: str | None = None
    pass_name: str | None = None

    def with_pass(self, pass_name: str | None) -> Provenance:
        """The same provenance, marked as created by `pass_name`."""
        if pass_name == self.pass_name:
            return self
        return replace(self, pass_name=pass_name)

    @property
    def is_empty(self) -> bool:
        """Whether no field is set."""
        return all(getattr(self, name) is None for name in _FIELD_NAMES)

    def items(self) -> list[tuple[str, str]]:
        """The set fields as (text-format key, value) pairs, in a fixed order."""
        return [
            (key, value)
            for name, key in _TEXT_KEYS.items()
            if (value := getattr(self, name)) is not None
        ]

    @staticmethod
    def from_items(items: dict[str, str]) -> Provenance:
        """Build from text-format keys (`module`, `op`, `node`, `file`, ...)."""
        unknown = set(items) - set(_FIELD_OF)
        if unknown:
            raise KeyError(f"unknown provenance key(s): {', '.join(sorted(unknown))}")
        return Provenance(**{_FIELD_OF[k]: v for k, v in items.items()})

    def describe(self) -> str:
        """A short human description: `stages.1.pwconv1 (aten.linear.default, linear_3)`."""
        if self.is_empty:
            return "(no provenance)"
        head = self.module_path or self.source_node or self.source_op or self.location or ""
        rest = [x for x in (self.source_op, self.source_node, self.location) if x and x != head]
        text = head + (f" ({', '.join(rest)})" if rest else "")
        if self.pass_name:
            text += f" [made by {self.pass_name}]"
        return text


_TEXT_KEYS = {
    "framework": "framework",
    "module_path": "module",
    "source_op": "op",
    "source_node": "node",
    "location": "file",
    "pass_name": "pass",
}
_FIELD_OF = {v: k for k, v in _TEXT_KEYS.items()}
_FIELD_NAMES = tuple(f.name for f in fields(Provenance))  # (dataclasses.fields is slow per call)
if tuple(_TEXT_KEYS) != _FIELD_NAMES:  # items() lists the fields in their order
    raise RuntimeError("Provenance: _TEXT_KEYS must name every field, in the fields' order")

NO_PROVENANCE = Provenance()
