// passlens graph component: what the user does. Expanding and collapsing groups (one, all, or
// a given set), mouse (pan, zoom, click, double-click, minimap drag), keys, the toolbar's
// buttons and the stage's size.
(function (P) {
  "use strict";
  P.interaction = function (c) {
    const { el, opts, searchBox, prevHit, nextHitB, prevChange, nextChangeB, expandAllB, collapseAllB,
      fitB, beforeB, afterB, errB, results, stage, root, mini, st, expandedOf } = c;
    // from the other modules, looked up when called
    const apply = P.late(c, "apply"), bump = P.late(c, "bump"), collapsedIds = P.late(c, "collapsedIds"),
      draw = P.late(c, "draw"), drawMiniView = P.late(c, "drawMiniView"), fit = P.late(c, "fit"),
      markSelection = P.late(c, "markSelection"), miniJump = P.late(c, "miniJump"),
      nextChange = P.late(c, "nextChange"), nextHit = P.late(c, "nextHit"),
      openView = P.late(c, "openView"), renderLegend = P.late(c, "renderLegend"),
      search = P.late(c, "search"), select = P.late(c, "select"), setMode = P.late(c, "setMode"),
      showGroupDetails = P.late(c, "showGroupDetails"), sizeNow = P.late(c, "sizeNow");
    // ---- expand / collapse -------------------------------------------------------------------
    function notifyCollapsed() {
      if (opts.onCollapsed) opts.onCollapsed(collapsedIds());
    }
    function toggle(gi) {
      const m = st.m;
      const before = st.draw && st.draw.boxes.get(m.N + gi) || (st.draw && st.draw.frames.find((f) => f.b === m.N + gi));
      const anchor = before ? { x: before.x * st.view.k + st.view.x, y: before.y * st.view.k + st.view.y } : null;
      if (st.expanded.has(gi)) st.expanded.delete(gi); else st.expanded.add(gi);
      bump(m, gi);
      draw(() => {
        // keep the group where it was on the screen
        const after = st.m === m && (st.draw.boxes.get(m.N + gi) || st.draw.frames.find((f) => f.b === m.N + gi));
        if (anchor && after) { st.view.x = anchor.x - after.x * st.view.k; st.view.y = anchor.y - after.y * st.view.k; apply(); }
        notifyCollapsed();
      });
    }
    function setAll(open) {
      const m = st.m;
      if (!m) return;
      st.expanded = new Set([0]);
      if (open) for (let g = 1; g < m.G; g++) st.expanded.add(g);
      expandedOf.set(m, st.expanded);
      m.epoch++; m.cache.clear();
      draw(() => { fit(); notifyCollapsed(); });
    }
    function setCollapsed(ids) {
      const m = st.m;
      if (!m) return;
      const closed = new Set(ids);
      const next = new Set([0]);
      for (let g = 1; g < m.G; g++) if (!closed.has(m.p.groups[g].id)) next.add(g);
      let same = next.size === st.expanded.size;
      if (same) for (const g of next) if (!st.expanded.has(g)) { same = false; break; }
      if (same) return;
      for (let g = 1; g < m.G; g++) if (next.has(g) !== st.expanded.has(g)) bump(m, g);
      st.expanded = next; expandedOf.set(m, next);
      draw();
    }

    // ---- events ----------------------------------------------------------------------------------
    let drag = null;
    stage.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = stage.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top, v = st.view;
      const k = Math.min(3, Math.max(0.02, v.k * Math.exp(-e.deltaY * 0.0015)));
      v.x = mx - (mx - v.x) * (k / v.k); v.y = my - (my - v.y) * (k / v.k); v.k = k;
      apply();
    }, { passive: false });
    stage.addEventListener("mousedown", (e) => { if (e.target === mini) return; drag = { x: e.clientX - st.view.x, y: e.clientY - st.view.y, moved: false }; });
    const onMove = (e) => { if (!drag) return; if (Math.abs(e.clientX - drag.x - st.view.x) + Math.abs(e.clientY - drag.y - st.view.y) > 2) drag.moved = true; st.view.x = e.clientX - drag.x; st.view.y = e.clientY - drag.y; apply(); };
    const onUp = () => setTimeout(() => { drag = null; }, 0);
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", onUp);
    mini.addEventListener("mousedown", (e) => { e.stopPropagation(); miniJump(e); const mv = (ev) => miniJump(ev); const up = () => { window.removeEventListener("mousemove", mv); window.removeEventListener("mouseup", up); }; window.addEventListener("mousemove", mv); window.addEventListener("mouseup", up); });
    root.addEventListener("click", (e) => {
      if (drag && drag.moved) return;
      if (st.drawn !== st.m) return; // the other side's drawing, while this one's is laid out
      el.focus({ preventScroll: true });
      results.classList.remove("plg-open");
      const g = e.target.closest("[data-i],[data-gi]");
      if (!g) { select(-1); return; }
      if (g.dataset.i !== undefined) select(+g.dataset.i);
      else { st.sel = -1; markSelection(); showGroupDetails(+g.dataset.gi); if (opts.onSelect) opts.onSelect("group:" + st.m.p.groups[+g.dataset.gi].id); }
    });
    root.addEventListener("dblclick", (e) => {
      const g = e.target.closest("[data-gi]");
      if (g) { e.preventDefault(); toggle(+g.dataset.gi); }
    });
    searchBox.addEventListener("input", () => search(searchBox.value, true));
    searchBox.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); nextHit(e.shiftKey ? -1 : 1); }
      else if (e.key === "Escape") { results.classList.remove("plg-open"); el.focus(); }
      e.stopPropagation();
    });
    searchBox.addEventListener("focus", () => { if (st.query.trim()) results.classList.add("plg-open"); });
    prevHit.addEventListener("click", () => nextHit(-1));
    nextHitB.addEventListener("click", () => nextHit(1));
    prevChange.addEventListener("click", () => nextChange(-1));
    nextChangeB.addEventListener("click", () => nextChange(1));
    expandAllB.addEventListener("click", () => setAll(true));
    collapseAllB.addEventListener("click", () => setAll(false));
    fitB.addEventListener("click", fit);
    beforeB.addEventListener("click", () => setMode("before"));
    afterB.addEventListener("click", () => setMode("after"));
    errB.addEventListener("click", () => { st.err = !st.err; errB.classList.toggle("plg-on", st.err); renderLegend(); draw(); });
    function onKey(e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return false;
      const t = e.target;
      if (t && t !== el && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return false;
      if (e.key === "n") nextChange(1);
      else if (e.key === "p") nextChange(-1);
      else if (e.key === "f") fit();
      else if (e.key === "o") c.toggleOverview();
      else if (e.key === "b") setMode(st.mode === "after" ? "before" : "after");
      else if (e.key === "/") { searchBox.focus(); searchBox.select(); }
      else if (e.key === "Escape") { results.classList.remove("plg-open"); select(-1); }
      else return false;
      e.preventDefault(); e.stopPropagation();
      return true;
    }
    el.addEventListener("keydown", onKey);
    let resizeObs = null;
    if (typeof ResizeObserver !== "undefined") {
      let last = "";
      resizeObs = new ResizeObserver(() => { const s = sizeNow(), key = s.w + "x" + s.h; if (key !== last) { const first = last === ""; last = key; if (first && st.draw) openView(); else drawMiniView(); } });
      resizeObs.observe(stage);
    }
    function unlisten() { window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp); if (resizeObs) resizeObs.disconnect(); }
    Object.assign(c, { notifyCollapsed, toggle, setAll, setCollapsed, onKey, unlisten });
  };
})(PasslensGraphParts);
