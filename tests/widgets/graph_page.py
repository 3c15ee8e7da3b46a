"""The graph component (widgets/static/graph.js) as the browser tests see it, in any front end
(the HTML report, the Panel app, JupyterLab): its boxes, view, selection and stage, and the
moves of a user (keys, search). Playwright is imported when first used, so that importing
this module does not need it."""

from __future__ import annotations

import json

TIMEOUT = 15000  # ms


def expect(*args, **kwargs):
    from playwright.sync_api import expect as _expect

    return _expect(*args, **kwargs)


def sel(node_id: str) -> str:
    """A CSS attribute value for a node id (ids hold ``$``, ``.``, ``:``, ``/``)."""
    return json.dumps(node_id)


def wait_until(page, predicate, what: str, timeout_ms: int = TIMEOUT) -> None:
    """Poll a Python-side condition (state synced from the browser) without fixed sleeps of the
    test's own: Playwright's wait_for_timeout lets the page's events run."""
    for _ in range(timeout_ms // 50):
        if predicate():
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"timed out waiting for {what}")


class Graph:
    """The graph component under ``root`` (a locator of its ``.plg`` element) on ``page``."""

    def __init__(self, page, root):
        self.page, self.root = page, root
        self.stage = root.locator(".plg-stage")
        self.vp = root.locator("g.plg-vp")

    def node(self, node_id: str):
        """The box drawn for a node (none when it is inside a collapsed group)."""
        return self.root.locator(f"g.plg-n[data-node-id={sel(node_id)}]")

    def group(self, group_id: str):
        """A collapsed group's box."""
        return self.root.locator(f"g.plg-n.plg-group[data-group={sel(group_id)}]")

    def group_target(self, group_id: str):
        """What a user clicks for a collapsed group: its box, or, zoomed out below the size
        where box titles are drawn, the labelled block drawn over it (static/graph/semantic.js: a
        click there shows the group's details, a double-click opens it, as on the box)."""
        k = self.page.evaluate("(t) => parseFloat(/scale\\(([^)]+)\\)/.exec(t)[1])", self.transform)
        if k * 14 >= 8:  # titles drawn (TITLE x zoom >= READABLE): no blocks
            return self.group(group_id)
        block = self.root.locator(f".plg-sem g[data-group={sel(group_id)}]")
        expect(block).to_have_count(1)
        assert "," not in block.get_attribute("data-sem-groups"), f"{group_id} is in a run"
        return block

    def settle(self, timeout: float = 15_000) -> None:
        """Wait until what was asked is drawn: the layouts are made in a Web Worker, so a
        click that opens groups draws once they come back (``data-layout`` is "pending" until
        then). `timeout` in ms: a big model's every group laid out takes long on a loaded
        machine."""
        expect(self.root).not_to_have_attribute("data-layout", "pending", timeout=timeout)

    @property
    def boxes(self) -> int:
        self.settle()
        return int(self.root.get_attribute("data-boxes"))

    @property
    def transform(self) -> str:
        self.settle()
        return self.vp.get_attribute("transform")

    @property
    def selected(self) -> list[str]:
        """The ids of the boxes marked selected."""
        self.settle()
        return self.root.locator("g.plg-sel").evaluate_all("gs => gs.map((g) => g.dataset.nodeId)")

    @property
    def details(self):
        return self.root.locator(".plg-details")

    def inside(self, locator) -> bool:
        """Whether the element lies wholly inside the stage (the graph's viewport)."""
        return locator.evaluate(
            """(el) => {
              const s = el.closest('.plg').querySelector('.plg-stage').getBoundingClientRect();
              const r = el.getBoundingClientRect();
              return r.width > 0 && r.height > 0 && r.left >= s.left - 0.5 && r.top >= s.top - 0.5
                && r.right <= s.right + 0.5 && r.bottom <= s.bottom + 0.5;
            }"""
        )

    def assert_inside(self, locator, what: str) -> None:
        expect(locator).to_have_count(1)
        self.settle()
        for _ in range(40):  # a front end's sync may lag
            if self.inside(locator):
                return
            self.page.wait_for_timeout(50)
        box, stage = locator.bounding_box(), self.stage.bounding_box()
        raise AssertionError(f"{what} is not inside the stage: {box} not in {stage}")

    def press(self, key: str) -> None:
        """A key with the component focused (as after a click on it)."""
        self.root.focus()
        self.page.keyboard.press(key)
        self.settle()

    def search(self, query: str) -> int:
        """Type a search; returns the number of hits the result list reports (an empty
        search closes the list)."""
        self.root.locator("input.plg-search").fill(query)
        if not query:
            expect(self.root.locator(".plg-results")).to_be_hidden()
            return 0
        head = self.root.locator(".plg-results .plg-r-head")
        expect(head).to_be_visible()
        return int(head.get_attribute("data-count"))

    def go_to(self, node_id: str) -> None:
        """Bring a node drawn as a box of its own into view as a user would: search its id,
        Enter until it is the one selected, then clear the search."""
        box = self.root.locator("input.plg-search")
        for _ in range(self.search(node_id)):
            box.press("Enter")
            if self.selected == [node_id]:
                break
        assert self.selected == [node_id], f"search did not reach {node_id}"
        box.press("Escape")
        box.fill("")
        self.assert_inside(self.node(node_id), node_id)

    def wait_selected(self, node_id: str) -> None:
        expect(self.root.locator("g.plg-sel")).to_have_attribute("data-node-id", node_id)
