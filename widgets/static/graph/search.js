// passlens graph component, part `search`: finding things. Search (substring or /regex/) over
// every node, including those inside collapsed groups, its results list and marks; going
// through changes. Owns the search (`query`), its hits (`hits`, frozen, and the one gone to,
// `hit`) and the change gone to (`change`).
(function () {
"use strict";
PasslensGraphParts.part({
  name: "search",
  needs: ["base", "dom", "host", "sides", "shown", "drawing", "details"],
  state: { query: "", hits: Object.freeze([]), hit: -1, change: -1 },
  make({ base, dom, host, shown, drawing, details }, st) {
    const { h, modulePath, searchText } = base;
    const { searchBox, hitInfo, prevChange, changeInfo, nextChangeB, results, vp } = dom;
    const { opts } = host;
    const { changes, plain, rep, shownNode } = shown;
    const { locate } = details;
    // ---- search --------------------------------------------------------------------------------
    function matcher(q) {
      q = q.trim();
      if (!q) return null;
      const re = /^\/(.+)\/([a-z]*)$/.exec(q);
      if (re) { try { const r = new RegExp(re[1], re[2].includes("i") ? re[2] : re[2] + "i"); return (s) => r.test(s); } catch (e) { return "bad"; } }
      const low = q.toLowerCase();
      return (s) => s.includes(low);
    }
    function search(q, fromUser) {
      st.query = q;
      if (fromUser && opts.onSearch) opts.onSearch(q);
      if (searchBox.value !== q) searchBox.value = q;
      const m = st.m, f = m ? matcher(q) : null;
      forget();
      if (f === "bad") { hitInfo.textContent = "bad regex"; results.textContent = ""; results.classList.remove("plg-open"); markHits(); return; }
      const hits = [];
      if (f) for (let i = 0; i < m.N; i++) if (shownNode(m, i) && f(searchText(m, i))) hits.push(i);
      st.hits = Object.freeze(hits);
      hitInfo.textContent = f ? st.hits.length : ""; // "5 found", the word dropped where narrow (graph.css)
      if (f) h("span", "plg-word", hitInfo, " found");
      hitInfo.title = hitInfo.textContent;
      renderResults();
      markHits();
    }
    function renderResults() {
      results.textContent = "";
      const m = st.m;
      if (!st.query.trim() || !m) { results.classList.remove("plg-open"); return; }
      results.classList.add("plg-open");
      const head = h("div", "plg-r-head", results, st.hits.length ? (st.hit >= 0 ? (st.hit + 1) + " of " + st.hits.length : st.hits.length + (st.hits.length === 1 ? " hit" : " hits")) + " · Enter: next · Esc: close" : "no node matches");
      head.dataset.count = st.hits.length;
      const byModule = new Map();
      for (const i of st.hits.slice(0, 300)) {
        const key = modulePath(m, m.p.nodes[i].g) || "(top level)";
        if (!byModule.has(key)) byModule.set(key, []);
        byModule.get(key).push(i);
      }
      for (const [mod, list] of byModule) {
        h("div", "plg-r-mod", results, mod + " (" + list.length + ")");
        for (const i of list) {
          const n = m.p.nodes[i];
          const item = h("div", "plg-r-item" + (st.hits[st.hit] === i ? " plg-on" : ""), results);
          item.dataset.i = i;
          const d = (m.p.details || [])[i] || {};
          h("span", "plg-r-op", item, n.k === "op" || n.k === "call" ? (n.mod ? n.s[0] + " " + n.t : n.t) : n.k);
          h("span", "plg-r-name", item, " " + (n.k === "op" || n.k === "call" ? n.id.split("/").pop() : d.name || n.t));
          if (n.st === "removed" && !plain()) h("span", "plg-r-gone", item, " (removed)");
          item.title = d.name || n.id;
          item.addEventListener("click", () => { st.hit = st.hits.indexOf(i); locate(i); renderResults(); });
        }
      }
      if (st.hits.length > 300) h("div", "plg-dim", results, "first 300 shown");
    }
    function markHits() {
      vp.querySelectorAll(".plg-hit").forEach((g) => g.classList.remove("plg-hit"));
      const m = st.m;
      if (!m || !st.boxes) return;
      for (const i of st.hits) { const g = st.boxes.get(rep(m, i)); if (g) g.classList.add("plg-hit"); }
    }
    function nextHit(d) {
      if (!st.hits.length) return;
      st.hit = (st.hit + (d || 1) + st.hits.length) % st.hits.length;
      locate(st.hits[st.hit]);
      markHits();
      renderResults();
      hitInfo.textContent = (st.hit + 1) + " of " + st.hits.length;
    }

    function nextChange(d) {
      const list = changes();
      if (!list.length) return;
      st.change = st.change < 0 ? (d > 0 ? 0 : list.length - 1) : (st.change + d + list.length) % list.length;
      locate(list[st.change]);
      changeInfo.textContent = (st.change + 1) + "/" + list.length;
      changeInfo.title = "change " + changeInfo.textContent;
    }
    function updateChangeInfo() {
      const list = changes();
      const what = st.mode === "before" ? " removed or changed" : list.length === 1 ? " change" : " changes";
      // "20 changes": the word is dropped where the toolbar is narrow (graph.css), the title keeps it
      changeInfo.textContent = list.length;
      h("span", "plg-word", changeInfo, what);
      changeInfo.title = changeInfo.textContent;
      prevChange.disabled = nextChangeB.disabled = !list.length;
    }

    // the hits dropped (their indices are of the side left: drawing the other must not read them)
    function forget() { st.hits = Object.freeze([]); st.hit = -1; }
    // the changes of the side shown counted again, none gone to yet
    function resetChanges() { st.change = -1; updateChangeInfo(); }
    drawing.onDrawn(markHits);
    return { matcher, search, renderResults, markHits, nextHit, nextChange, updateChangeInfo, forget, resetChanges };
  },
});
})();
