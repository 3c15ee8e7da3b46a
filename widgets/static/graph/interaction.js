// passlens graph component, part `interaction`: what the user does. Expanding and collapsing groups (one, all, or
// a given set), mouse (pan, zoom, click, double-click, minimap drag), keys, the toolbar's
// buttons and the stage's size.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "interaction",
  needs: ["dom", "host", "sides", "expansion", "drawing", "viewport", "minimap", "details", "search", "overview", "modes"],
  make({ dom, host, sides, expansion, drawing, viewport, minimap, details, search: finding, overview, modes }, st) {
    const { el, searchBox, prevHit, nextHitB, prevChange, nextChangeB, expandAllB, collapseAllB,
      fitB, overviewB, beforeB, afterB, errB, results, stage, root, mini } = dom;
    const { opts } = host;
    const { notifyCollapsed } = expansion;
    const { draw, renderLegend } = drawing;
    const { drawMiniView, miniJump } = minimap;
    const { fit, openView, setView, sizeNow } = viewport;
    const { select, selectGroup, toggle } = details;
    const { nextChange, nextHit, search } = finding;
    const { setMode } = modes;
    // ---- expand / collapse -------------------------------------------------------------------
    function setAll(open) {
      const m = st.m;
      if (!m) return;
      expansion.setAll(m, open);
      draw(() => { fit(); notifyCollapsed(); });
    }
    function setCollapsed(ids) {
      const m = st.m;
      if (!m) return;
      if (expansion.setCollapsed(m, ids)) draw();
    }

    // ---- events ----------------------------------------------------------------------------------
    let drag = null;
    stage.addEventListener("wheel", (e) => {
      e.preventDefault();
      const r = stage.getBoundingClientRect(), mx = e.clientX - r.left, my = e.clientY - r.top, v = st.view;
      const k = Math.min(3, Math.max(Math.min(0.02, v.k), v.k * Math.exp(-e.deltaY * 0.0015))); // (a group fitted below 0.02 stays reachable)
      setView({ x: mx - (mx - v.x) * (k / v.k), y: my - (my - v.y) * (k / v.k), k });
    }, { passive: false });
    stage.addEventListener("mousedown", (e) => { if (e.target === mini) return; drag = { x: e.clientX - st.view.x, y: e.clientY - st.view.y, moved: false }; });
    const onMove = (e) => { if (!drag) return; if (Math.abs(e.clientX - drag.x - st.view.x) + Math.abs(e.clientY - drag.y - st.view.y) > 2) drag.moved = true; setView({ x: e.clientX - drag.x, y: e.clientY - drag.y }); };
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
      else selectGroup(+g.dataset.gi);
    });
    root.addEventListener("dblclick", (e) => {
      const g = e.target.closest("[data-gi]");
      if (g) { e.preventDefault(); toggle(+g.dataset.gi); }
    });
    searchBox.addEventListener("input", () => search(searchBox.value, true));
    // the search is what the box holds, though its value was set with no input event (by a
    // script, a form's reset): an emptied box's old hits are dropped, not shown again
    const current = () => { if (searchBox.value !== st.query) search(searchBox.value, true); };
    searchBox.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); current(); nextHit(e.shiftKey ? -1 : 1); }
      else if (e.key === "Escape") { results.classList.remove("plg-open"); el.focus(); }
      e.stopPropagation();
    });
    searchBox.addEventListener("focus", () => { current(); if (st.query.trim()) results.classList.add("plg-open"); });
    prevHit.addEventListener("click", () => nextHit(-1));
    nextHitB.addEventListener("click", () => nextHit(1));
    prevChange.addEventListener("click", () => nextChange(-1));
    nextChangeB.addEventListener("click", () => nextChange(1));
    expandAllB.addEventListener("click", () => setAll(true));
    collapseAllB.addEventListener("click", () => setAll(false));
    fitB.addEventListener("click", fit);
    beforeB.addEventListener("click", () => setMode("before"));
    afterB.addEventListener("click", () => setMode("after"));
    errB.addEventListener("click", () => { sides.setErr(!st.err); errB.classList.toggle("plg-on", st.err); renderLegend(); draw(); });
    overviewB.addEventListener("click", () => overview.toggleOverview());
    function onKey(e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return false;
      const t = e.target;
      if (t && t !== el && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return false;
      if (e.key === "n") nextChange(1);
      else if (e.key === "p") nextChange(-1);
      else if (e.key === "f") fit();
      else if (e.key === "o") overview.toggleOverview();
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
    return { setAll, setCollapsed, onKey, unlisten };
  },
});
})();
