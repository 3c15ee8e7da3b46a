"""`passlens passes`: every registered pass with what it does and its options, and the named
pipelines (what `default` runs), so a pipeline spec can be written without reading code."""

from __future__ import annotations

import argparse
import dataclasses
import re
import textwrap


def add_parser(sub) -> None:
    """Add the `passes` subcommand to the `passlens` subparsers `sub`."""
    sub.add_parser(
        "passes",
        help="list the passes and named pipelines a --pipeline spec can use",
        description="Every registered pass (name, what it does, its options with their "
        'defaults: write them as name{option=value}) and the named pipelines ("default").',
    )


def _options(cls) -> str:
    """`option=default` for each option of a pass class (`option` alone when required)."""
    if not dataclasses.is_dataclass(cls):
        return ""
    out = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            out.append(f"{f.name} (required)")
            continue
        if isinstance(default, bool):
            default = str(default).lower()
        elif isinstance(default, tuple):
            default = "[" + ",".join(str(v) for v in default) + "]"
        elif hasattr(default, "value") and hasattr(default, "name"):  # an enum (a dtype)
            default = default.name
        out.append(f"{f.name}={default}")
    return ", ".join(out)


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")  # :func:`explorer.explore` -> explorer.explore
_LITERAL = re.compile(r"``([^`]+)``")  # ``dtype`` -> dtype
_CODE = re.compile(r"`([^`\n]+)`")  # `dtype` (the docstrings' own style) -> dtype


def plain(text: str) -> str:
    """A docstring's reStructuredText roles and literals, and its single-backticked code, as
    plain terminal text."""
    return _CODE.sub(r"\1", _LITERAL.sub(r"\1", _ROLE.sub(r"\1", text)))


def summary(cls) -> str:
    """The first paragraph of a pass's docstring, on one line, in plain text."""
    return plain(" ".join((cls.__doc__ or "").strip().split("\n\n")[0].split()))


def listing() -> str:
    """The text `passlens passes` prints."""
    from compiler.passes import all_passes, named_pipelines, pass_aliases

    aliases: dict[str, list[str]] = {}
    for alias, name in sorted(pass_aliases().items()):
        aliases.setdefault(name, []).append(alias)
    lines = ["passes (options as name{option=value}; replica-* passes reproduce real bugs):"]
    for name, cls in sorted(all_passes().items()):
        if name == "sequential":
            continue  # what a comma-separated spec builds, not a pass to name
        also = aliases.get(name)
        lines.append(f"  {name}" + (f" (also: {', '.join(also)})" if also else ""))
        for text in textwrap.wrap(summary(cls), 88):
            lines.append(f"      {text}")
        if options := _options(cls):
            lines.append(f"      options: {options}")
    lines.append("")
    lines.append("named pipelines:")
    for name, spec in named_pipelines().items():
        lines.append(f"  {name} = {spec}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the listing."""
    print(listing())
    return 0
