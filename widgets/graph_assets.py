"""The graph component's files (`static/`): its script (the layout engine, the parts and
`PasslensGraph`) and its style sheet, as the HTML report, the snapshot, the Jupyter widget and
the Panel app embed them. Apart from `widgets.graph_view` so that writing a report does not
import the Jupyter widget's libraries (anywidget, ipywidgets: about a second)."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"
HOST_CSS = ".plg-host{display:block;width:100%}"


# the layout engine's scripts in their order (graph_layout.js, which builds ``PasslensLayout``
# from the parts, last)
LAYOUT_JS = (
    "graph_layout_simplex.js",
    "graph_layout_order.js",
    "graph_layout_x.js",
    "graph_layout.js",
)
# the graph component's parts: one file each, declaring what it needs and returning what it
# provides (static/graph_parts.js); their order does not matter (static/graph.js wires them,
# in the dependency order of its diagram, when a component is made)
PARTS = STATIC / "graph"


def layout_js() -> str:
    """The layout engine as a plain script defining `PasslensLayout`."""
    return "\n".join((STATIC / name).read_text() for name in LAYOUT_JS)


def part_files() -> list[Path]:
    """The graph component's parts (static/graph/*.js)."""
    return sorted(PARTS.glob("*.js"))


def graph_js() -> str:
    """The graph component as a plain script: the layout engine, how parts are declared
    (graph_parts.js), the parts, and `PasslensGraph` wiring them (graph.js)."""
    files = [STATIC / "graph_parts.js", *part_files(), STATIC / "graph.js"]
    return "\n".join([layout_js(), *(f.read_text() for f in files)])


def graph_css() -> str:
    """The component's style sheet (and the widget host's size)."""
    return (STATIC / "graph.css").read_text() + HOST_CSS
