// passlens graph component, part `modes`: the component's data and the side shown. setData
// draws new payloads (the after side, in its first view); setMode switches to the before or the
// after side, keeping the selection's counterpart where it was on the screen (a node this step
// added has none: it is kept to come back to), the groups opened alike and the search. Owns no
// state: it sets the other parts' through their functions.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "modes",
  needs: ["dom", "host", "models", "sides", "expansion", "drawing", "viewport", "details", "search"],
  make({ dom, host, models, sides, expansion, drawing, viewport, details, search: finding }, st) {
    const { el, modeBox, beforeB, afterB, errB, say } = dom;
    const { opts } = host;
    const { modelOf } = models;
    const { draw } = drawing;
    const { boxRect, centreOnNode, openView, setView } = viewport;
    const { ensureVisible, select, showDetails } = details;
    const { search } = finding;
    // show one side; `then` runs once it is drawn
    function use(mode, keepView, then) {
      sides.show(mode);
      beforeB.classList.toggle("plg-on", mode === "before");
      afterB.classList.toggle("plg-on", mode === "after");
      el.dataset.mode = mode;
      finding.resetChanges();
      draw(() => { if (!keepView) openView(); if (then) then(); });
    }
    function setMode(mode) {
      if (mode === "before" && !st.before && st.loadBefore) { // a live view's before side: asked for when first shown
        const after = st.after;
        st.loadBefore().then((b) => { if (st.after === after && !st.before) { sides.setBefore(b); setMode("before"); } });
        return;
      }
      if (mode === st.mode || (mode === "before" && !st.before)) return;
      const from = st.m, sel = st.sel, r = sel >= 0 ? boxRect(sel) : null;
      const screen = r ? { x: (r.x + r.w / 2) * st.view.k + st.view.x, y: (r.y + r.h / 2) * st.view.k + st.view.y } : null;
      const target = modelOf(mode === "before" ? st.before : st.after);
      expansion.syncExpansion(from, target);
      let j = sel >= 0 ? sides.counterpart(sel, mode) : -1;
      // a node this step added has no counterpart before it: keep it to come back to
      const added = mode === "before" && sel >= 0 && j < 0 ? st.m.p.nodes[sel].t : "";
      if (mode === "before") sides.keep(j < 0 ? sel : -1);
      else if (sel < 0 && st.keepAfter >= 0) j = st.keepAfter;
      details.forget(); finding.forget(); // indices into the side left: drawing the other side must not read them
      use(mode, true, () => {
        if (st.m !== target) return; // the side shown changed meanwhile
        if (j >= 0) {
          ensureVisible(j, () => {
            if (st.m !== target) return;
            select(j);
            const r2 = boxRect(j);
            if (r2 && screen) setView({ x: screen.x - (r2.x + r2.w / 2) * st.view.k, y: screen.y - (r2.y + r2.h / 2) * st.view.k });
            else if (r2) centreOnNode(j);
          });
        } else if (added) select(-1);
        else { select(-1); openView(); }
      });
      say(added ? "“" + added + "” is new in this step: the step before has no counterpart" : "");
      search(st.query);
      if (opts.onMode) opts.onMode(mode);
    }
    function setData(after, before, o) {
      sides.setPayloads(after, before, o);
      details.forget();
      modeBox.style.display = st.before || st.loadBefore ? "" : "none";
      const m = modelOf(after);
      errB.style.display = m.hasErr ? "" : "none";
      errB.classList.toggle("plg-on", st.err);
      use("after", false);
      showDetails();
      search(st.query);
      say((o && o.note) || "");
    }
    return { setData, setMode };
  },
});
})();
