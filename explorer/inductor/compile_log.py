"""What torch.compile says about itself while a trace is recorded (what tlparse reads): Dynamo's
guards per graph, why a frame was restarted or recompiled, the compile-time breakdown from
torch's own counters, and each output-code kernel with the FX nodes it came from.

`CompileLog` is a handler on torch's structured-trace logger (`torch.__trace`, what
`TORCH_TRACE` / tlparse write), installed for the compile only. It keeps, per Dynamo compile
id (`frame/recompile`):

- `dynamo_cpp_guards_str`: the guard manager's tree, one guard a line;
- the `recompile_reasons` artifact: the guard of the earlier compile that failed;
- `compilation_metrics`: the frame's times (entire frame, backend, Inductor, codegen, Dynamo
  before a restart), guard count, restart reasons, failure;
- the `dynamo_graph_break_reason` artifact;
- `chromium_event`: the `dynamo_timed` regions, summed by name;
- with `torch._inductor.config.trace.provenance_tracking_level` on (the recorder turns it on):
  `inductor_provenance_tracking_node_mappings` (kernel -> post-grad FX nodes, post-grad ->
  pre-grad nodes) and `..._kernel_stack_traces` (kernel -> the user's source lines).

`compile_info` joins them with the trace's graphs and steps into plain JSON (the trace's
`compile_info`, saved with it); `clean_info` checks and caps such a dict (what a file
gives back is untrusted). Everything read from torch is text: the view escapes it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from typing import Any

VERSION = 1
MAX_TEXT = 200_000  # a frame's guard text
MAX_LINE = 20_000  # a reason, a source line
MAX_ITEMS = 500  # reasons, kernels, events per frame; names per kernel
MAX_FRAMES = 1_000
MAX_NAME = 300

#: compilation_metrics' times, in the order the view lists them, with their labels
TIMES = (
    ("entire_frame_compile_time_s", "entire frame (Dynamo + backend)"),
    ("dynamo_time_before_restart_s", "Dynamo before restart"),
    ("backend_compile_time_s", "backend (AOTAutograd + Inductor)"),
    ("inductor_compile_time_s", "Inductor"),
    ("code_gen_time_s", "codegen"),
    ("structured_logging_overhead_s", "structured logging (what this log cost)"),
)
#: the recorded group steps whose seconds are listed beside torch's counters
GROUPS = ("pre-grad passes", "joint-graph passes", "post-grad passes", "inductor codegen")


class CompileLog(logging.Handler):
    """The structured-trace records of one recording, kept by compile id (see the module)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.frames: dict[str, dict] = {}
        self.order: list[str] = []
        self._open: dict[tuple, list[float]] = {}

    def frame(self, cid: str) -> dict:
        if cid not in self.frames:
            self.frames[cid] = {"events": {}, "recompile_reasons": [], "kernels": {}}
            self.order.append(cid)
        return self.frames[cid]

    def emit(self, record: logging.LogRecord) -> None:  # never raises into torch
        try:
            self._take(getattr(record, "metadata", None) or {}, getattr(record, "payload", None))
        except Exception:
            pass

    def _take(self, meta: dict, payload: Any) -> None:
        if "chromium_event" in meta:
            self._event(payload)
            return
        fid, fcid = meta.get("frame_id"), meta.get("frame_compile_id")
        if fid is None or fcid is None:
            return
        cid = f"{fid}/{fcid}"
        if "dynamo_cpp_guards_str" in meta:
            self.frame(cid)["guards"] = _text(payload, MAX_TEXT).strip("\n")
        elif "compilation_metrics" in meta:
            self.frame(cid)["metrics"] = meta["compilation_metrics"]
        elif "artifact" in meta:
            name = (meta.get("artifact") or {}).get("name")
            f = self.frame(cid)
            if name == "recompile_reasons":
                f["recompile_reasons"] = _reasons(payload)
            elif name == "dynamo_graph_break_reason":
                f["graph_break"] = _text(payload, MAX_LINE)
            elif name == "inductor_provenance_tracking_node_mappings":
                f["mappings"] = _json(payload)
            elif name == "inductor_provenance_tracking_kernel_stack_traces":
                f["stacks"] = _json(payload)

    def _event(self, payload: Any) -> None:
        e = _json(payload)
        if not isinstance(e, dict) or e.get("cat") != "dynamo_timed":
            return
        cid = str((e.get("args") or {}).get("compile_id") or "")
        name, ph, ts = str(e.get("name")), e.get("ph"), e.get("ts")
        if not cid or not isinstance(ts, (int, float)):
            return
        key = (cid, name)
        if ph == "B":
            self._open.setdefault(key, []).append(float(ts))
        elif ph == "E" and self._open.get(key):
            start = self._open[key].pop()
            events = self.frame(cid)["events"]
            events[name] = events.get(name, 0.0) + (float(ts) - start) / 1e6

    @contextlib.contextmanager
    def capture(self):
        """Listen to torch's structured trace inside (removed on exit, whatever happens)."""
        from torch._logging._internal import trace_log

        propagate = trace_log.propagate
        trace_log.propagate = False  # its records are for this handler, not the root logger's
        trace_log.addHandler(self)
        try:
            yield self
        finally:
            trace_log.removeHandler(self)
            trace_log.propagate = propagate


def provenance_config() -> dict:
    """`torch._inductor.config` values that make Inductor log which FX nodes each kernel
    came from (its provenance tracking; it only adds comments to the output code)."""
    import torch._inductor.config as cfg

    trace = getattr(cfg, "trace", None)
    if trace is None or not hasattr(trace, "provenance_tracking_level"):
        return {}
    return {"trace.provenance_tracking_level": max(1, int(trace.provenance_tracking_level))}


def compile_info(log: CompileLog, graphs: list, steps: list) -> dict:
    """The JSON of a recording (module docstring): one frame per Dynamo compile id, in the
    order torch compiled them, each joined with its graph (`graph`: its index in
    `trace.inductor.graphs`), its import and codegen steps and the recorded seconds of its
    pass groups."""
    by_id = {g.compile_id: g for g in graphs}
    frames = []
    for cid in log.order:
        raw = log.frames[cid]
        m = raw.get("metrics") or {}
        g = by_id.get(cid)
        f: dict[str, Any] = {
            "id": cid,
            "code": str(m.get("co_name") or (g.code if g else "")),
            "file": str(m.get("co_filename") or ""),
            "line": m.get("co_firstlineno"),
            "guards": raw.get("guards", ""),
            "guard_count": m.get("guard_count"),
            "recompile_reasons": raw.get("recompile_reasons", []),
            "restart_reasons": [str(r) for r in m.get("restart_reasons") or []],
            "graph_break": raw.get("graph_break", ""),
            "fail": " ".join(str(m.get(k) or "") for k in ("fail_type", "fail_reason")).strip(),
            "times": [[label, m[k]] for k, label in TIMES if isinstance(m.get(k), (int, float))],
            "events": sorted(raw["events"].items(), key=lambda kv: -kv[1]),
            "graph": g.index if g else None,
            "import_step": g.step if g else None,
            "codegen_step": g.codegen_step if g else None,
            "ops": m.get("graph_op_count"),
        }
        if g is not None:
            f["recorded"] = _group_seconds(g, steps)
            code = g.texts.get("output code", "")
            f["kernels"] = _kernels(raw.get("mappings"), raw.get("stacks"), code)
        frames.append(f)
    return clean_info({"version": VERSION, "frames": frames})


def _group_seconds(g: Any, steps: list) -> list:
    end = g.codegen_step if g.codegen_step is not None else len(steps) - 1
    out = []
    for s in steps[g.step : end + 1]:
        if s.depth == 0 and s.name in GROUPS and s.seconds is not None:
            out.append([s.name, float(s.seconds)])
    return out


_HANDLE = re.compile(r"^(.*):(\d+)$")


def _kernels(mappings: Any, stacks: Any, code: str) -> list:
    """One entry per kernel Inductor wrote: its name as the output code calls it, the
    post-grad FX nodes it computes, the pre-grad (Dynamo) nodes those came from, the user's
    source lines, and the output code's line that calls it (its provenance comment's)."""
    if not isinstance(mappings, dict):
        return []
    to_post = mappings.get("cppCodeToPost") or {}
    to_pre = mappings.get("postToPre") or {}
    stacks = stacks if isinstance(stacks, dict) else {}
    lines = code.splitlines()
    out = []
    for handle, post in to_post.items() if isinstance(to_post, dict) else ():
        m = _HANDLE.match(str(handle))
        name = m.group(1) if m else str(handle)
        post = [str(n) for n in post] if isinstance(post, list) else []
        pre: list[str] = []
        for n in post:
            for p in to_pre.get(n) or [] if isinstance(to_pre, dict) else []:
                if str(p) not in pre:
                    pre.append(str(p))
        out.append(
            {
                "name": name,
                "nodes": post,
                "pre": pre,
                "sources": _sources(stacks.get(handle)),
                "line": _call_line(lines, str(handle), name),
            }
        )
    return out


_FRAME = re.compile(r'File "([^"]*)", line (\d+), in (\S+)\n\s*(.*)')


def _sources(stacks: Any) -> list:
    """`file:line in fn: code` for each stack trace's last frame (the user's line)."""
    out: list[str] = []
    for s in stacks if isinstance(stacks, list) else []:
        frames = _FRAME.findall(str(s))
        if frames:
            file, line, fn, text = frames[-1]
            entry = f"{file.rsplit('/', 1)[-1]}:{line} in {fn}: {text.strip()}"
            if entry not in out:
                out.append(entry)
    return out


def _call_line(lines: list[str], handle: str, name: str) -> int | None:
    """The 1-based line of the output code that calls the kernel (after its provenance
    handle's comment), else the line that defines it."""
    for i, line in enumerate(lines):
        if line.strip().startswith("# [Provenance debug handles]") and line.strip().endswith(
            handle
        ):
            return i + 2 if i + 1 < len(lines) else i + 1
    for i, line in enumerate(lines):
        if line.startswith(f"{name} = "):
            return i + 1
    return None


# ----- checking what a file gives back -------------------------------------------------------


def _text(value: Any, limit: int) -> str:
    """`value` as text of at most `limit` characters (cut with a note; cutting again
    changes nothing)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    if len(text) <= limit:
        return text
    keep = max(0, limit - 40)
    return text[:keep] + f"\n... ({len(text) - keep} more characters)"[: limit - keep]


def _json(payload: Any) -> Any:
    if not isinstance(payload, str):
        return payload
    try:
        return json.loads(payload)
    except ValueError:
        return None


def _reasons(payload: Any) -> list[str]:
    value = _json(payload)
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(payload)] if payload else []


def _strs(value: Any, limit: int = MAX_LINE) -> list[str]:
    items = value if isinstance(value, list) else []
    return [_text(v, limit) for v in items[:MAX_ITEMS]]


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) < 1e12 else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 40:
        return None
    return value


def _pairs(value: Any) -> list:
    """`[[name, seconds], ...]`: a pair whose seconds are not a number >= 0 left out."""
    out = []
    for item in value if isinstance(value, list) else []:
        seconds = _num(item[1]) if isinstance(item, (list, tuple)) and len(item) == 2 else None
        if seconds is not None and seconds >= 0:
            out.append([_text(item[0], MAX_NAME), seconds])
    return out[:MAX_ITEMS]


def clean_info(info: Any) -> dict | None:
    """`info` checked and capped (every text a str within its limit, every number a
    number, every step index an int): what the view and the file may rely on. None when it
    is not a compile-info dict."""
    if not isinstance(info, dict) or not isinstance(info.get("frames"), list):
        return None
    frames = []
    for f in info["frames"][:MAX_FRAMES]:
        if not isinstance(f, dict):
            continue
        kernels = []
        for k in (f.get("kernels") if isinstance(f.get("kernels"), list) else [])[:MAX_ITEMS]:
            if isinstance(k, dict):
                kernels.append(
                    {
                        "name": _text(k.get("name"), MAX_NAME),
                        "nodes": _strs(k.get("nodes"), MAX_NAME),
                        "pre": _strs(k.get("pre"), MAX_NAME),
                        "sources": _strs(k.get("sources")),
                        "line": _int(k.get("line")),
                    }
                )
        frames.append(
            {
                "id": _text(f.get("id"), MAX_NAME),
                "code": _text(f.get("code"), MAX_NAME),
                "file": _text(f.get("file"), MAX_LINE),
                "line": _int(f.get("line")),
                "guards": _text(f.get("guards"), MAX_TEXT),
                "guard_count": _int(f.get("guard_count")),
                "recompile_reasons": _strs(f.get("recompile_reasons")),
                "restart_reasons": _strs(f.get("restart_reasons")),
                "graph_break": _text(f.get("graph_break"), MAX_LINE),
                "fail": _text(f.get("fail"), MAX_LINE),
                "times": _pairs(f.get("times")),
                "events": _pairs(f.get("events")),
                "recorded": _pairs(f.get("recorded")),
                "graph": _int(f.get("graph")),
                "import_step": _int(f.get("import_step")),
                "codegen_step": _int(f.get("codegen_step")),
                "ops": _int(f.get("ops")),
                "kernels": kernels,
            }
        )
    return {"version": VERSION, "frames": frames}


__all__ = ["CompileLog", "clean_info", "compile_info", "provenance_config"]
