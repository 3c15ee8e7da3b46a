"""Errors of the frontends: what could not be imported, and where."""

from __future__ import annotations

from compiler.errors import PasslensError


class FrontendError(PasslensError):
    """A model could not be imported; the message says what and where."""


class UnsupportedOperatorError(FrontendError):
    """The model uses operators passlens cannot convert; `operators` maps each to where."""

    def __init__(self, operators: dict[str, list[str]], framework: str = "torch"):
        self.operators = operators
        lines = [f"{len(operators)} unsupported {framework} operator(s):"]
        for op, places in operators.items():
            shown = ", ".join(places[:5]) + (
                f" and {len(places) - 5} more" if len(places) > 5 else ""
            )
            lines.append(f"  {op}  used at {shown}")
        super().__init__("\n".join(lines))
