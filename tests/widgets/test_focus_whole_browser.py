"""Issue 43 item 9 (centring clips the focus): the node in focus is centred with the open group
that holds it drawn whole across the stage, where the group fits. At first view on a 4-layer
decoder (fold-constant changes ``layers.3.self_attn``) the focus, the folded ``rsqrt``, was
centred alone: its group's frame started 40 px left of the stage and ``v_proj`` (at the group's
left edge) was cut in half by the overview pane beside the stage.

Checked at 1600x1000 in the HTML report, the Panel app and the stepper (its view 1200 px wide: the
front fixture of test_overview_scroll_browser.py), at first view, after ``n`` / ``p``
and after a locate (a search's result): the group's frame lies inside the stage each way it fits
(``layers.3.self_attn`` is 733 px wide, 1800 px tall at zoom 1: across only), every node of the
group the stage shows any of is whole along that way, and the node in focus is whole inside.
"""

from __future__ import annotations

import pytest

from tests.widgets.test_overview_scroll_browser import front  # noqa: F401 (a fixture)
from tests.widgets.test_scale_models import sm

pytestmark = pytest.mark.browser

# the node `sel` (CSS) picks, the innermost open group's frame around it and the group's boxes,
# against the stage: {group, frame, stage, target, cut: [boxes cut by a side of the stage]}
WHOLE = """(root, sel) => {
  const R = (e) => {
    const r = e.getBoundingClientRect();
    return { l: r.left, r: r.right, t: r.top, b: r.bottom };
  };
  const el = root.querySelector(sel);
  if (!el) return null;
  const S = R(root.querySelector('.plg-stage')), T = R(el);
  const cx = (T.l + T.r) / 2, cy = (T.t + T.b) / 2;
  let best = null;
  for (const f of root.querySelectorAll('.plg-vp .plg-frame')) {
    const F = R(f.querySelector('rect'));
    const area = (F.r - F.l) * (F.b - F.t);
    if (F.l <= cx && cx <= F.r && F.t <= cy && cy <= F.b && (!best || area < best.area))
      best = { group: f.dataset.group, F, area };
  }
  if (!best) return { group: null, stage: S, target: T, cut: [] };
  const F = best.F, across = F.r - F.l <= S.r - S.l, down = F.b - F.t <= S.b - S.t, e = 0.5;
  const cut = [];
  for (const n of root.querySelectorAll('.plg-vp g.plg-n')) {
    const B = R(n), mx = (B.l + B.r) / 2, my = (B.t + B.b) / 2;
    if (!(F.l <= mx && mx <= F.r && F.t <= my && my <= F.b)) continue; // not the group's
    const shownX = B.r > S.l && B.l < S.r, shownY = B.b > S.t && B.t < S.b;
    if (!shownX || !shownY) continue; // wholly off the stage
    if ((across && (B.l < S.l - e || B.r > S.r + e)) || (down && (B.t < S.t - e || B.b > S.b + e)))
      cut.push(n.dataset.nodeId);
  }
  return { group: best.group, frame: F, stage: S, target: T, across, down, cut };
}"""


@pytest.fixture(scope="module")
def decoder4():
    """4 layers, a plain MLP; fold-constant changes layer 3 (its self_attn)."""
    return sm.decoder(layers=4, experts=0, fold_layer=3)


def whole(g, sel: str, what: str) -> dict:
    """The group around the node `sel` picks is drawn whole as far as it fits (polled: a front
    end's sync may lag)."""
    w = None
    for _ in range(60):
        w = g.root.evaluate(WHOLE, sel)
        if w and w["group"] and ok(w):
            return w
        g.page.wait_for_timeout(50)
    raise AssertionError(f"{what}: the focus's group is cut: {w}")


def ok(w: dict) -> bool:
    S, F, T, e = w["stage"], w["frame"], w["target"], 0.5
    inside = T["l"] >= S["l"] - e and T["r"] <= S["r"] + e
    inside = inside and T["t"] >= S["t"] - e and T["b"] <= S["b"] + e
    framed = (not w["across"] or (F["l"] >= S["l"] - e and F["r"] <= S["r"] + e)) and (
        not w["down"] or (F["t"] >= S["t"] - e and F["b"] <= S["b"] + e)
    )
    return inside and framed and not w["cut"]


def test_the_focus_group_is_drawn_whole_at_first_view_and_after_n_p_and_locate(front, decoder4):  # noqa: F811
    page, g, problems, _ = front(decoder4)
    first = whole(g, "g.plg-n.plg-focus", "first view")
    assert first["group"] == "model.layers.3.self_attn"
    assert first["across"] and not first["down"]  # (733 px wide, 1800 px tall: across only)
    assert g.node("main/linear_23").count() == 1  # v_proj, at the group's left edge, drawn whole
    g.assert_inside(g.node("main/linear_23"), "v_proj")
    for key in ("n", "p", "p"):
        g.press(key)
        g.settle()
        w = whole(g, "g.plg-n.plg-sel", f"after {key}")
        assert w["group"] == "model.layers.3.self_attn", w
    # a locate: the first linear of the model (q_proj of layer 0)
    box = g.root.locator("input.plg-search")
    assert g.search("main/linear") > 1
    box.press("Enter")
    g.wait_selected("main/linear")
    box.press("Escape")
    w = whole(g, "g.plg-n.plg-sel", "after a locate")
    assert w["group"].startswith("model.layers.0"), w
    assert problems == []
