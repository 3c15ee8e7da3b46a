// passlens graph component, part `sides`: which side is shown. The payloads of both sides (the
// step's, `after`, and the previous step's, `before`, or a promise of it, `loadBefore`),
// whether the after side is drawn plain (no diff colours), the side shown (`mode`) and its
// model (`m`), the statuses of the before side's nodes, the node to come back to on the after
// side, and whether nodes are coloured by their error. Owns those fields; the component's
// control (part `modes`) and the toolbar set them through these functions.
(function () {
"use strict";
PasslensGraphParts.part({
  name: "sides",
  needs: ["models"],
  state: { after: null, before: null, loadBefore: null, plainAfter: false, mode: "after", m: null, afterUid: 0,
    beforeStatus: null, keepAfter: -1, err: false },
  make({ models }, st) {
    const { modelOf, beforeStatuses } = models;
    // new payloads (o: { plain, loadBefore })
    function setPayloads(after, before, o) {
      st.after = after; st.before = before || null;
      st.loadBefore = (!st.before && o && o.loadBefore) || null; // () => a promise of `before`
      st.plainAfter = !!(o && o.plain);
      st.keepAfter = -1;
      if (!modelOf(after).hasErr) st.err = false;
    }
    function setBefore(b) { st.before = b; }
    // side `mode` shown (its model in st.m)
    function show(mode) {
      const p = mode === "before" ? st.before : st.after;
      st.mode = mode;
      st.afterUid = modelOf(st.after).uid;
      st.m = modelOf(p);
      if (mode === "before") st.beforeStatus = beforeStatuses(modelOf(st.after), st.m);
    }
    function keep(i) { st.keepAfter = i; }
    function setErr(on) { st.err = !!on; }
    function counterpart(i, toMode) {
      return models.counterpart(modelOf(st.after), st.before ? modelOf(st.before) : null, i, toMode);
    }
    return { setPayloads, setBefore, show, keep, setErr, counterpart };
  },
});
})();
