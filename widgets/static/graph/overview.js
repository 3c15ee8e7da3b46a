// passlens graph component, part `overview`: the overview, the module tree beside the graph (the payload's
// groups: stem, stages, head... or a function's, or a chain's segments). Each row gives a
// group's live nodes, parameter bytes, changes and findings; the rows of the groups in view
// are tinted, those holding the selection (else the focus) in bold; a click on a row goes
// there (its groups opened, the view fitted to it, at most zoom 1). Toggled by `o` and the
// toolbar's "overview"; open at first view when the component is wide enough. The minimap sits
// at its foot while it is open. The list follows the row in focus (the selection's, else the
// focus's: its tree opened down to it, the list scrolled to it) at first view, on n / p, a
// locate and a click in the graph, through redraws and resizes, until the user scrolls or
// clicks the list themselves; the next selection makes it follow again.
(function () {
"use strict";
const WIDE = 1100;       // px: the component opens with the overview beside the graph from here
const FIRST_ROWS = 36;   // rows shown at first (the tree opened breadth first up to this)
const MAX_ROWS = 3000;   // rows drawn at most (a tree opened that far is cut, and says so)
const STATUS = [["added", "+"], ["changed", "~"], ["removed", "−"], ["failed", "!"]];

PasslensGraphParts.part({
  name: "overview",
  needs: ["base", "dom", "sides", "shown", "drawing", "viewport", "minimap", "details"],
  state: { overviewOpen: false },
  make({ base, dom, shown, drawing, viewport, minimap, details }, st) {
    const { h, fmtBytes, signedBytes } = base;
    const { body, stage, el, mini, overviewB } = dom;
    const { focusIndex, plain } = shown;
    const { setView, sizeNow } = viewport;
    const { goGroup } = details;
    const pane = h("nav", "plg-overview");
    body.insertBefore(pane, stage);
    pane.setAttribute("aria-label", "module overview");
    const head = h("div", "plg-ov-head", pane);
    h("span", "plg-ov-title", head, "modules");
    const total = h("span", "plg-ov-total", head);
    const close = h("button", "plg-close", head, "×");
    close.type = "button"; close.title = "close the overview (o)";
    close.addEventListener("click", () => setOverview(false));
    const list = h("div", "plg-ov-list", pane);
    list.setAttribute("role", "tree");
    const treeOpen = new WeakMap(); // model -> Set of groups opened in the tree
    let decided = false, rowsOf = new Map(), drawnFor = null;
    let follow = true, hereRow = null; // the list kept on the row in focus (hereRow) until the user scrolls it

    function setOverview(open, keepCentre) {
      open = !!open;
      decided = true;
      el.dataset.overview = open ? "open" : "closed";
      if (open === st.overviewOpen) return;
      const before = stage.clientWidth;
      st.overviewOpen = open;
      pane.classList.toggle("plg-open", open);
      overviewB.classList.toggle("plg-on", open);
      if (open) renderTree();
      // the minimap at the foot of the overview (it covers nothing there), else in the stage
      if (open) pane.appendChild(mini); else stage.appendChild(mini);
      if (st.draw) minimap.renderMini(null);
      const after = sizeNow().w;
      if (keepCentre !== false && st.draw) { // the stage narrows or widens from the left: keep its centre
        setView({ x: st.view.x + (after - before) / 2 });
      }
    }

    // ---- which rows are shown --------------------------------------------------------------
    function opened(m) {
      let s = treeOpen.get(m);
      if (s) return s;
      s = new Set([0]);
      const f = focusIndex();
      if (f >= 0) for (let g = m.p.nodes[f].g; g > 0; g = m.p.groups[g].p) s.add(m.p.groups[g].p);
      // then breadth first while the rows stay few
      let rows = m.kids[0].length, level = m.kids[0].slice();
      for (const g of s) if (g > 0) rows += m.kids[g].length;
      while (level.length) {
        const next = [];
        for (const g of level) {
          if (!m.kids[g].length) continue;
          if (!s.has(g) && rows + m.kids[g].length <= FIRST_ROWS) { s.add(g); rows += m.kids[g].length; }
          if (s.has(g)) next.push(...m.kids[g]);
        }
        level = next;
      }
      treeOpen.set(m, s);
      return s;
    }
    function marksOf(grp) {
      const out = [];
      if (plain()) return out;
      if (grp.ch) {
        const text = STATUS.filter(([k]) => grp.ch[k]).map(([k, s]) => s + grp.ch[k]).join(" ");
        const words = STATUS.filter(([k]) => grp.ch[k]).map(([k]) => grp.ch[k] + " " + k).join(", ");
        if (text) out.push({ cls: grp.ch.failed ? "plg-ov-fail" : "plg-ov-ch", text, title: words + " — go to the first change", node: grp.ci });
        // nodes that only moved into or out of a function (fuse-ops): their values are unchanged
        if (grp.ch.moved) out.push({ cls: "plg-ov-mv", text: "→" + grp.ch.moved, title: grp.ch.moved + " moved into or out of a function, same values" });
      }
      if (grp.f || grp.bad) {
        const text = "▲ " + (grp.f || 1);
        const title = (grp.f || 1) + (grp.f === 1 ? " node a finding names" : " nodes findings name") + (grp.fm ? " (first: " + grp.fm + ")" : "") + " — go to the first";
        out.push({ cls: "plg-ov-f", text, title, node: grp.fi });
      }
      return out;
    }
    function row(m, g, depth) {
      const grp = m.p.groups[g], kids = m.kids[g].length, open = opened(m).has(g);
      const r = h("div", "plg-ov-row" + (grp.k === "segment" ? " plg-ov-seg" : grp.k === "function" ? " plg-ov-fn" : ""), list);
      r.dataset.gi = g; r.dataset.group = grp.id;
      r.setAttribute("role", "treeitem");
      r.style.paddingLeft = 4 + depth * 10 + "px";
      const caret = h("span", "plg-ov-caret", r, kids ? (open ? "▾" : "▸") : "");
      if (kids) { caret.dataset.toggle = g; caret.title = (open ? "hide" : "show") + " its " + kids + " groups"; r.setAttribute("aria-expanded", open ? "true" : "false"); }
      h("span", "plg-ov-name", r, grp.label || grp.id);
      // the numbers together, never cut: beside the name where they fit, else under it
      const nums = h("span", "plg-ov-nums", r);
      const live = h("span", "plg-ov-n", nums, String(grp.n || 0));
      live.title = (grp.n || 0) + " live nodes" + (grp.ch && grp.ch.removed ? " (" + grp.ch.removed + " removed, drawn as ghosts)" : "");
      const bytes = h("span", "plg-ov-b", nums, grp.b ? fmtBytes(grp.b) : "");
      if (grp.db && !plain()) { // what changed is what matters here: the whole is in the tooltip
        bytes.classList.add("plg-ov-db"); bytes.textContent = signedBytes(grp.db);
        bytes.title = fmtBytes(grp.b || 0) + " of parameters, " + signedBytes(grp.db) + " against the step before";
      }
      for (const mk of marksOf(grp)) {
        const s = h("span", "plg-ov-mark " + mk.cls, nums, mk.text);
        s.title = mk.title;
        if (mk.node !== undefined) s.dataset.node = mk.node;
      }
      r.title = (grp.id || "") + (grp.ops ? "\n" + grp.ops : "") + "\n" + (grp.n || 0) + " live nodes" + (grp.ch && grp.ch.removed ? " (" + grp.ch.removed + " removed)" : "") + (grp.b ? ", " + fmtBytes(grp.b) + " of parameters" : "") + "\nclick: go there";
      rowsOf.set(g, r);
      return r;
    }
    function renderTree() {
      const m = st.m, fresh = drawnFor !== m, keep = list.scrollTop; // drawn again where it was
      if (fresh) follow = true; // another step or side: its first view
      list.textContent = "";
      rowsOf = new Map(); hereRow = null;
      drawnFor = m;
      if (!m) return;
      const top = m.p.groups[0];
      const bits = [(top.n || 0) + " nodes"];
      if (top.b) bits.push(fmtBytes(top.b));
      total.textContent = bits.join(" · ");
      const s = opened(m);
      let count = 0;
      // depth first, in order, with a stack of its own (no recursion over the groups' nesting)
      const stack = [[0, 0, 0]]; // [group, depth, next child]
      while (stack.length && count <= MAX_ROWS) {
        const top = stack[stack.length - 1], kids = m.kids[top[0]];
        if (top[2] >= kids.length) { stack.pop(); continue; }
        const k = kids[top[2]++];
        if (++count > MAX_ROWS) break;
        row(m, k, top[1]);
        if (s.has(k)) stack.push([k, top[1] + 1, 0]);
      }
      if (count > MAX_ROWS) h("div", "plg-dim plg-ov-more", list, "first " + MAX_ROWS + " rows shown: close some groups");
      if (!m.kids[0].length) h("div", "plg-dim plg-ov-more", list, "no modules: the graph is flat");
      if (!fresh && keep) list.scrollTop = keep;
      markView();
    }

    // ---- where the view is -------------------------------------------------------------------
    let pending = 0;
    function markView() {
      pending = 0;
      const m = st.m, D = st.draw;
      if (!st.overviewOpen || !m || !D || st.drawn !== m) return; // (the other side's drawing, while this one is laid out)
      if (drawnFor !== m) { renderTree(); return; }
      const { w, h: H } = sizeNow(), v = st.view;
      const x0 = -v.x / v.k, y0 = -v.y / v.k, x1 = x0 + w / v.k, y1 = y0 + H / v.k;
      const here = new Set();
      for (let g = hereGroup(m); g > 0; g = m.p.groups[g].p) here.add(g);
      let first = null;
      for (const [g, r] of rowsOf) {
        const rect = D.frameOf.get(g) || D.boxes.get(m.N + g);
        const seen = !!rect && rect.x < x1 && rect.x + rect.w > x0 && rect.y < y1 && rect.y + rect.h > y0;
        r.classList.toggle("plg-ov-inview", seen);
        r.classList.toggle("plg-ov-here", here.has(g));
        if (here.has(g)) first = r;
      }
      hereRow = first;
      keepRow();
    }
    // the group in focus: the selected node's, else the selected group, else the focus's
    function hereGroup(m) {
      const i = st.sel >= 0 ? st.sel : st.selGroup >= 0 ? -1 : focusIndex();
      if (i >= 0) return i < m.N ? m.p.nodes[i].g : -1;
      return st.selGroup < m.G ? st.selGroup : -1;
    }
    // the row in focus scrolled into the list's view while the list follows it (the list only:
    // scrollIntoView would scroll a notebook or the page too)
    function keepRow() {
      const H = list.clientHeight;
      if (!follow || !hereRow || !hereRow.isConnected || !H) return;
      const L = list.getBoundingClientRect(), R = hereRow.getBoundingClientRect();
      const top = R.top - L.top + list.scrollTop;
      if (top < list.scrollTop || top + R.height > list.scrollTop + H) list.scrollTop = Math.max(0, top - H / 3);
    }
    // a node or group selected (n / p, a locate, a click in the graph): the list follows its row
    // again, the tree opened down to it
    function selectedNow() {
      follow = true;
      const m = st.m;
      if (!st.overviewOpen || !m || drawnFor !== m) { viewMoved(); return; }
      const s = opened(m), g0 = hereGroup(m);
      let grew = false;
      for (let g = g0; g > 0; g = m.p.groups[g].p) {
        const up = m.p.groups[g].p;
        if (!s.has(up)) { s.add(up); grew = true; }
      }
      if (grew) renderTree(); else viewMoved();
    }
    function viewMoved() { // after every pan / zoom: once a frame
      if (!st.overviewOpen || pending) return;
      pending = typeof requestAnimationFrame === "function" ? requestAnimationFrame(markView) : (markView(), 0);
    }
    function drawn() { // after every drawing (groups opened or closed, another side)
      if (!decided && st.m) setOverview(el.clientWidth >= WIDE, false);
      if (st.overviewOpen) renderTree();
    }

    // the user scrolls or clicks the list: it stays where they put it
    const mine = () => { follow = false; };
    for (const ev of ["wheel", "pointerdown", "touchstart", "keydown"]) list.addEventListener(ev, mine, { passive: true });
    if (typeof ResizeObserver !== "undefined") new ResizeObserver(keepRow).observe(list);
    list.addEventListener("click", (e) => {
      const m = st.m;
      if (!m) return;
      const t = e.target.closest("[data-toggle],[data-node],[data-gi]");
      if (!t) return;
      if (t.dataset.toggle !== undefined) {
        const g = +t.dataset.toggle, s = opened(m);
        if (s.has(g)) s.delete(g); else s.add(g);
        renderTree();
      } else if (t.dataset.node !== undefined) details.locate(+t.dataset.node);
      else goGroup(+t.dataset.gi);
    });
    drawing.onDrawn(drawn);
    viewport.onMove(viewMoved); // the overview's rows in view
    details.onSelected(selectedNow); // where the selection is
    return { setOverview, toggleOverview: () => setOverview(!st.overviewOpen) };
  },
});
})();
