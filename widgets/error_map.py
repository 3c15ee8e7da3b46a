"""The error map and the parameter map as heat maps: one row per step, one column per source
layer (model order), a colour per cell, a legend, the first failing step and layer marked.

- `error_map_html`: a check's `explorer.check.ErrorMap` (each layer's relative
  error against the reference, coloured by the share of the tolerance it uses: cool within
  tolerance, warm beyond);
- `param_map_html`: a trace's `explorer.check.ParamMap` (each layer's weight
  bytes against the import; outlined where a pass made them grow);
Both are views of the whole trace in `widgets.views`' registry (the error map only with a
check report): tabs of the report, the stepper and the Panel app (`static/layer_map.js`),
where a click on a cell opens its step (`widgets.frame.StepFrame`).

A cell carries `data-step` and `data-node` (the graph node id to select), a row's name
`data-step`; the report (`static/report.js`) and `static/layer_map.js` read them. Every
name is escaped here (layer names and node ids come from the model)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from explorer.fmt import format_bytes, num
from widgets.escape import esc

if TYPE_CHECKING:
    from explorer.check import ErrorMap, ParamMap

MAX_LABEL = 30  # characters of a layer name in a column head (the whole name in its tooltip)

# by the share of the tolerance a cell uses (|x - ref| / (atol + rtol |ref|)): within it,
# exactly 0, < 0.001, < 0.01, < 0.1, up to 1; beyond it, < 10, < 100, < 1000, < 10^4, more
SHARES = (1e-3, 1e-2, 0.1, 1.0)
OK_COLOURS = ("#f3f7fb", "#dbe9f6", "#b7d4ec", "#86b8de", "#4f94cd")
OVER_COLOURS = ("#fdd49e", "#fdae6b", "#f16913", "#c84203", "#7f2704")
# weight bytes against the first step that has the layer: same, smaller, up to 2x, 8x, more
BYTES_COLOURS = ("#e6e9ec", "#b7d4ec", "#fdd49e", "#f16913", "#7f2704")

MAP_CSS = """
.pl-map{font:12px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222}
.pl-map-head{margin:2px 0 6px;max-width:1100px}
.pl-map-head .pl-map-first{color:#b71c1c;font-weight:600}
.pl-map-legend{display:flex;flex-wrap:wrap;gap:4px 14px;align-items:center;margin:0 0 6px;
font-size:12px;color:#333}
.pl-map-legend b{font-weight:600;margin-right:2px}
.pl-map-key{display:inline-flex;align-items:center;gap:4px;white-space:nowrap}
.pl-map-sw{display:inline-block;width:16px;height:13px;border:1px solid #c8c8c8;
box-sizing:border-box}
.pl-map-sw.pl-map-sw-grew{border:2px solid #b71c1c}
.pl-map-scroll{overflow:auto;max-height:calc(100vh - 260px);min-height:160px;
border:1px solid #ddd;background:#fff}
.pl-map-grid{border-collapse:separate;border-spacing:1px}
.pl-map-grid thead th{position:sticky;top:0;background:#fff;z-index:2}
.pl-map-grid th.pl-map-col{vertical-align:bottom;padding:2px 0;font-weight:normal;
color:#333;font-size:11px}
.pl-map-grid th.pl-map-col span{writing-mode:vertical-rl;transform:rotate(180deg);
white-space:nowrap;display:inline-block;max-height:210px;overflow:hidden}
.pl-map-grid th.pl-map-corner{left:0;z-index:3;text-align:left;vertical-align:bottom;
font-weight:normal;color:#666;font-size:11px;padding:2px 6px}
.pl-map-grid th.pl-map-row{position:sticky;left:0;background:#fff;z-index:1;text-align:left;
white-space:nowrap;font-weight:normal;padding:0 8px 0 4px;cursor:pointer;max-width:260px;
overflow:hidden;text-overflow:ellipsis}
.pl-map-grid th.pl-map-row:hover{text-decoration:underline}
.pl-map-grid td{height:18px;padding:0;cursor:pointer;box-sizing:border-box}
.pl-map-grid td.pl-map-blank{background:#fff;box-shadow:inset 0 0 0 1px #eee;cursor:default}
.pl-map-grid td[data-step]:hover{box-shadow:inset 0 0 0 2px #111}
.pl-map-grid td.pl-map-grew{box-shadow:inset 0 0 0 2px #b71c1c}
.pl-map-grid td.pl-map-first-cell{box-shadow:inset 0 0 0 2px #fff,inset 0 0 0 4px #000}
.pl-map-grid tr.pl-map-first-row th.pl-map-row,.pl-map-grid th.pl-map-first-col{
color:#b71c1c;font-weight:600}
.pl-map-grid tr.pl-map-current th.pl-map-row{background:#d6e8fb;box-shadow:inset 3px 0 0 #1565c0}
.pl-map-tag{font-size:10px;color:#fff;background:#b71c1c;border-radius:6px;padding:0 4px;
margin-left:4px;font-weight:600}
.pl-map-note{color:#666;font:13px sans-serif}
"""
MAP_CSS += "".join(
    f".pl-map-grid td.{prefix}{k}{{background:{c}}}\n"
    for prefix, colours in (("e", OK_COLOURS + OVER_COLOURS), ("b", BYTES_COLOURS))
    for k, c in enumerate(colours)
)


def _label(name: str) -> str:
    """A layer name for a column head: its end when long (the end says which layer)."""
    return name if len(name) <= MAX_LABEL else "…" + name[-(MAX_LABEL - 1) :]


def _bucket(x: float, edges: tuple[float, ...]) -> int:
    return next((k for k, e in enumerate(edges) if x < e), len(edges))


def _error_cell(rel: float, share: float, float64: float = math.nan) -> tuple[str, str]:
    """A cell's colour class (by the share of the tolerance it uses: `e0`-`e4` within,
    `e5`-`e9` beyond) and what its tooltip says. A cell beyond the tolerance that the
    float64 rule judged (`float64`: the share of its allowance, NaN when it did not) is
    coloured as within when that rule finds float32 rounding only."""
    if share > 1 and not math.isnan(float64):
        if float64 <= 1:
            return "e4", (
                f"rel error {num(rel)}, {num(share)}x the tolerance, but judged against "
                f"float64: {num(float64)} of the allowance (float32 rounding, as the "
                "reference's own)"
            )
        k = 5 + _bucket(share, tuple(10.0**k for k in range(1, 5)))
        return f"e{k}", (
            f"rel error {num(rel)}, {num(share)}x the tolerance; judged against float64: "
            f"{num(float64)}x the allowance: wrong"
        )
    if share > 1:
        k = 5 + _bucket(share, tuple(10.0**k for k in range(1, 5)))
        return f"e{k}", f"rel error {num(rel)}, {num(share)}x the tolerance: beyond it"
    k = 0 if share == 0 else 1 + _bucket(share, SHARES[:3])
    return f"e{k}", f"rel error {num(rel)}, {num(share)} of the tolerance"


def _bytes_cell(nbytes: int, base: int) -> str:
    """A cell's colour class: `b0` the same bytes as the first, `b1` fewer, `b2`-`b4`
    up to 2x, 8x, more."""
    ratio = nbytes / base if base else 1.0
    if abs(ratio - 1) < 0.01:
        return "b0"
    return "b1" if ratio < 1 else f"b{2 + _bucket(ratio, (2.0, 8.0))}"


def _key(colour: str, text: str, extra: str = "") -> str:
    return (
        f"<span class='pl-map-key'><span class='pl-map-sw{extra}' style='background:{colour}'>"
        f"</span>{esc(text)}</span>"
    )


def _grid(
    m: ErrorMap | ParamMap,
    cell: Callable[[int, int], tuple[str, str, str] | None],
    first_cell: tuple[int, int] | None,
) -> str:
    """The table of a map `m` (steps, step_names, depths, layers, nodes, first_step,
    first_layer): `cell(i, j)` is (colour class, tooltip text, extra class) or None
    (blank). Cells are what a map weighs (a ConvNeXt-base: 2,700 of them): classes, not
    styles, and the step's name only in its row."""
    first_row, first_col = first_cell if first_cell is not None else (None, None)
    if first_row is None and m.first_step is not None:
        first_row = m.steps.index(m.first_step)
    width = max(12, min(56, 1000 // max(1, len(m.layers))))
    heads = "".join(
        f"<th class='pl-map-col{' pl-map-first-col' if j == first_col else ''}' "
        f"title='{esc(name)}'><span>{esc(_label(name))}</span></th>"
        for j, name in enumerate(m.layers)
    )
    cols = f"<col style='width:{width}px'>" * len(m.layers)
    rows = []
    for i, (step, name) in enumerate(zip(m.steps, m.step_names, strict=True)):
        depth = m.depths[i] if i < len(m.depths) else 0
        tag = "<span class='pl-map-tag'>first</span>" if i == first_row else ""
        cells = []
        for j, layer in enumerate(m.layers):
            c = cell(i, j)
            if c is None:
                cells.append("<td class='pl-map-blank'></td>")
                continue
            colour, text, extra = c
            mark = " pl-map-first-cell" if (i, j) == first_cell else extra
            cells.append(
                f"<td class='pl-map-cell {colour}{mark}' data-step='{step}' "
                f"data-node='{esc(m.nodes[i][j])}' title='{esc(f'{layer} at #{step}: {text}')}'>"
                "</td>"
            )
        first = " class='pl-map-first-row'" if i == first_row else ""
        rows.append(
            f"<tr data-row='{step}'{first}>"
            f"<th class='pl-map-row' data-step='{step}' data-node='' "
            f"style='padding-left:{4 + 12 * depth}px' title='open #{step} {esc(name)}'>"
            f"#{step} {esc(name)}{tag}</th>{''.join(cells)}</tr>"
        )
    return (
        "<div class='pl-map-scroll'><table class='pl-map-grid'>"
        f"<colgroup><col>{cols}</colgroup><thead><tr>"
        "<th class='pl-map-corner'>step ↓ · layer →</th>"
        f"{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def error_map_html(m: ErrorMap, reference: str = "") -> str:
    """The heat map of an `explorer.check.ErrorMap` (`reference`: what the steps
    were compared with, for the caption)."""
    if not m.layers:
        return (
            "<div class='pl-map'><p class='pl-map-note'>No error map: no node of this trace "
            "names a source layer (a module path in its provenance).</p></div>"
        )
    against = f"against {esc(reference)}" if reference else "against the reference"
    head = (
        f"Max relative error <code>|x - ref| / (|ref| + atol)</code> of each layer's output "
        f"{against}: one row per step, one column per layer in model order. "
    )
    first_cell = None
    if m.errors.size and all(math.isnan(e) for e in m.errors.flat):
        head += "No layer was compared with the reference (no inputs, or no node matched). "
    elif m.first_step is None:
        head += "No step diverged. "
    else:
        i = m.row(m.first_step)
        head += (
            f"<span class='pl-map-first'>First failing step: #{m.first_step} "
            f"{esc(m.step_names[i])}</span>"
        )
        if m.first_layer is not None:
            j = m.column(m.first_layer)
            first_cell = (i, j)
            head += (
                f"; first layer beyond tolerance there: <span class='pl-map-first'>"
                f"{esc(m.first_layer)}</span> ({num(m.errors[i, j])} rel, outlined in black)"
            )
        head += ". "
    head += "Click a cell to open that step with the layer's node selected."
    legend = (
        "<span><b>Colour</b>: the share of the tolerance used, <code>|x - ref| / (atol + "
        f"rtol·|ref|)</code> with rtol {m.rtol:g}, atol {m.atol:g}.</span><b>Within:</b>"
        + _key(OK_COLOURS[0], "0")
        + "".join(_key(c, f"< {x:g}") for c, x in zip(OK_COLOURS[1:4], SHARES[:3], strict=True))
        + _key(OK_COLOURS[4], "≤ 1")
        + "<b>Beyond:</b>"
        + "".join(_key(c, f"< {10**k:g}x") for k, c in enumerate(OVER_COLOURS[:4], 1))
        + _key(OVER_COLOURS[4], "more")
        + _key("#fff", "blank: no value of that layer at the step")
        + "<span>A cell beyond the tolerance is judged again against a float64 run of the "
        "source where there is one: it is wrong only when further from float64 than the "
        "reference is (3x), and coloured as within otherwise.</span>"
    )

    def cell(i: int, j: int) -> tuple[str, str, str] | None:
        rel = m.errors[i, j]
        if math.isnan(rel):
            return None
        f64 = m.float64[i, j] if getattr(m, "float64", None) is not None else math.nan
        colour, text = _error_cell(float(rel), float(m.tolerance[i, j]), float(f64))
        return colour, text, ""

    return (
        f"<div class='pl-map pl-map-errors'><div class='pl-map-head'>{head}</div>"
        f"<div class='pl-map-legend'>{legend}</div>{_grid(m, cell, first_cell)}</div>"
    )


def param_map_html(m: ParamMap) -> str:
    """The heat map of a `explorer.check.ParamMap`."""
    if not m.layers:
        return (
            "<div class='pl-map'><p class='pl-map-note'>No parameter map: no weight of this "
            "trace belongs to a source layer (a module path in its provenance or its "
            "readers').</p></div>"
        )
    base = [next((int(b) for b in m.nbytes[:, j] if b), 0) for j in range(len(m.layers))]
    head = "Weight bytes of each layer at each step: one column per layer in model order. "
    first_cell = None
    if m.first_step is None:
        head += "No pass made a layer's weights grow. "
    else:
        i, j = m.row(m.first_step), m.column(m.first_layer)
        first_cell = (i, j)
        head += (
            f"<span class='pl-map-first'>Weights first grew at #{m.first_step} "
            f"{esc(m.step_names[i])}, in {esc(m.first_layer)}</span> (to "
            f"{format_bytes(int(m.nbytes[i, j]))}, outlined in black): where bloat starts. "
        )
    head += "Click a cell to open that step with the layer's largest weight selected."
    small = format_bytes(m.min_bytes)
    legend = (
        "<b>bytes against the first step with the layer:</b>"
        + _key(BYTES_COLOURS[0], "same")
        + _key(BYTES_COLOURS[1], "smaller")
        + _key(BYTES_COLOURS[2], "up to 2x")
        + _key(BYTES_COLOURS[3], "up to 8x")
        + _key(BYTES_COLOURS[4], "more")
        + _key(
            "#fff",
            f"outlined: a pass grew them here (> {m.threshold:.0%} and ≥ {small})",
            " pl-map-sw-grew",
        )
        + _key("#fff", "blank: no weights")
    )

    def cell(i: int, j: int) -> tuple[str, str, str] | None:
        nbytes = int(m.nbytes[i, j])
        if not nbytes:
            return None
        grew = bool(m.grew[i, j])
        ratio = f", {nbytes / base[j]:.3g}x the first" if base[j] and nbytes != base[j] else ""
        text = format_bytes(nbytes) + ratio + (": a pass grew them here" if grew else "")
        return _bytes_cell(nbytes, base[j]), text, " pl-map-grew" if grew else ""

    return (
        f"<div class='pl-map pl-map-params'><div class='pl-map-head'>{head}</div>"
        f"<div class='pl-map-legend'>{legend}</div>{_grid(m, cell, first_cell)}</div>"
    )


__all__ = [
    "MAP_CSS",
    "error_map_html",
    "param_map_html",
]
