"""Pipeline specs: `"decompose-ops,fold-constant,dce"`, `"convert-dtype{dtype=float16}"`.

`build_pipeline(spec)` turns a spec (or a Pass, or a list of passes and specs) into a
`Sequential`; `str(pipeline)` gives the spec back, so a run can be written down and
replayed exactly. Named pipelines (`default`, ...) may appear inside a spec.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any

from compiler.errors import PasslensError
from compiler.ir.types import DType
from compiler.passes.infra.manager import Pass, Sequential, all_passes, get_pass_class

_NAMED: dict[str, str] = {}
_ALIASES = {"dce": "dead-code-elimination"}
MAX_SPEC_CHARS = 1 << 20  # a spec may come from a file (a trace's steps, a reduction)
MAX_SPEC_DEPTH = 32  # braces and brackets nested in a spec
LIMIT = "limit"
"""Field metadata of a pass option that is a safety limit (``fold-constant``'s ``max_bytes``):
a spec may lower it, never raise it past its default; code raises it by building the pass
(``FoldConstant(max_bytes=...)``). Specs are text a file can hold; limits are the user's."""


class PipelineError(PasslensError, ValueError):
    """A pipeline spec could not be understood; the message says which part and why."""


def register_pipeline(name: str, spec: str) -> None:
    """Make `name` usable as a pipeline (or a part of one)."""
    _NAMED[name] = spec


def register_alias(alias: str, pass_name: str) -> None:
    """Make `alias` another name of the pass `pass_name` in specs (`dce`)."""
    _ALIASES[alias] = pass_name


def pass_aliases() -> dict[str, str]:
    """Every alias a spec may use for a pass (`{"dce": "dead-code-elimination"}`)."""
    return dict(_ALIASES)


def named_pipelines() -> dict[str, str]:
    """Every named pipeline and its spec."""
    return dict(_NAMED)


def _unknown(name: str, given: dict) -> str:
    """What to say of a spec item that names no pass: the closest passes, aliases and named
    pipelines (`defualt`: did you mean default?)."""
    import difflib

    known = sorted({*all_passes(), *_ALIASES, *_NAMED, *given})
    close = difflib.get_close_matches(name, known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return f"unknown pass {name[:80]!r}{hint}"


def _split(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside braces and brackets (at most MAX_SPEC_DEPTH deep)."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[":
            depth += 1
            if depth > MAX_SPEC_DEPTH:
                raise PipelineError(
                    f"the pipeline spec nests braces and brackets deeper than {MAX_SPEC_DEPTH} "
                    f"({text[:60]!r}...)"
                )
        elif ch in "}]":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced '{ch}' in {text!r}")
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise PipelineError(f"unbalanced braces in {text!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def _parse_value(text: str) -> Any:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return tuple(_parse_value(t) for t in _split(inner)) if inner else ()
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _hints(cls: type) -> dict[str, Any]:
    """The option types of a pass class; a class whose string annotations its module cannot
    resolve (a notebook cell's, `exec`'d code's) resolves them in its methods' globals, and
    an option whose type is still unknown takes any value."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        pass
    scope = next((f.__globals__ for f in vars(cls).values() if hasattr(f, "__globals__")), None)
    try:
        return typing.get_type_hints(cls, globalns=scope) if scope is not None else {}
    except Exception:
        return {}


def _coerce(cls: type, fld: dataclasses.Field, value: Any, item: str) -> Any:
    hint = _hints(cls).get(fld.name, Any)
    origin = typing.get_origin(hint)
    try:
        if hint is bool and not isinstance(value, bool):
            raise TypeError
        if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError
        if hint is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError
            return float(value)
        if hint is str:
            return str(value) if not isinstance(value, bool) else ("true" if value else "false")
        if hint is DType:
            return DType.of(value)
        if origin is tuple and not isinstance(value, tuple):
            return (value,)
    except TypeError:
        raise PipelineError(
            f"{item}: option {fld.name} expects {getattr(hint, '__name__', hint)}, got {value!r}"
        ) from None
    return value


def parse_pass(item: str, classes: Sequence[type[Pass]] = ()) -> Pass | Sequential:
    """One spec item, `name` or `name{opt=value,...}`, as a Pass (or a named pipeline).
    `classes`: pass classes found by their `name` before the registry (passes nobody
    registered, such as a notebook's own)."""
    item = item.strip()
    if not item:
        raise PipelineError("empty pass name in pipeline spec")
    name, opts_text = item, ""
    if "{" in item:
        if not item.endswith("}"):
            raise PipelineError(f"{item!r}: options must end with '}}'")
        name, opts_text = item[: item.index("{")].strip(), item[item.index("{") + 1 : -1]
    given = {c.name: c for c in classes}
    name = name if name in given else _ALIASES.get(name, name)
    if name in _NAMED and name not in given:
        if opts_text:
            raise PipelineError(f"named pipeline {name!r} takes no options")
        seq = build_pipeline(_NAMED[name], classes)
        return Sequential(seq.passes, label=name)
    try:
        cls = given[name] if name in given else get_pass_class(name)
    except KeyError:
        raise PipelineError(_unknown(name, given)) from None
    kwargs: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
    for part in _split(opts_text) if opts_text.strip() else []:
        if "=" not in part:
            raise PipelineError(f"{item!r}: option {part!r} needs the form name=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise PipelineError(f"{item!r}: pass {name} has no option {key!r} (options: {known})")
        kwargs[key] = _coerce(cls, fields[key], _parse_value(value), item)
        if fields[key].metadata.get(LIMIT) and not _within(kwargs[key], _default_of(fields[key])):
            raise PipelineError(
                f"{item[:200]!r}: {key} is a safety limit ({_default_of(fields[key])!r} by "
                f"default); a spec may lower it, not raise it (a spec can come from a file): "
                f"build the pass in code to raise it, {cls.__name__}({key}=...)"
            )
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise PipelineError(f"{item!r}: {e}") from None


def _default_of(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]


def _within(value: Any, default: Any) -> bool:
    """Whether a limit's `value` is no looser than its default (numbers: not larger)."""
    try:
        return value <= default
    except TypeError:
        return value == default


def build_pipeline(pipeline: Any, classes: Sequence[type[Pass]] = ()) -> Sequential:
    """A Sequential from a spec string, a Pass, or a sequence of passes and spec strings
    (`classes`: pass classes a spec finds by name before the registry, as for
    `parse_pass`)."""
    for c in classes:
        if not (isinstance(c, type) and issubclass(c, Pass) and c.name):
            raise PipelineError(f"classes must be named Pass subclasses, got {c!r}")
    if isinstance(pipeline, Sequential):
        return pipeline
    if isinstance(pipeline, Pass):
        return Sequential((pipeline,))
    if isinstance(pipeline, str):
        if len(pipeline) > MAX_SPEC_CHARS:
            raise PipelineError(
                f"the pipeline spec has {len(pipeline):,} characters, over the limit of "
                f"{MAX_SPEC_CHARS:,}"
            )
        items = [p for p in _split(pipeline)]
        if items == [""]:
            return Sequential(())
        passes: list[Pass] = []
        for item in items:
            p = parse_pass(item, classes)
            passes.append(p)
        return Sequential(tuple(passes))
    if isinstance(pipeline, Sequence):
        passes = []
        for p in pipeline:
            if isinstance(p, str):
                passes.extend(build_pipeline(p, classes).passes)
            elif isinstance(p, Pass):
                passes.append(p)
            else:
                raise PipelineError(f"a pipeline item must be a Pass or a spec string, got {p!r}")
        return Sequential(tuple(passes))
    raise PipelineError(f"cannot build a pipeline from {type(pipeline).__name__}")
