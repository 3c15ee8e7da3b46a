// passlens graph component, part `semantic`: semantic zoom. Below the zoom where box titles are drawn, the
// groups on the screen become labelled blocks instead of vanishing: a cut through the module
// tree (a group opened on the screen is replaced by its child groups while each of them gets
// room for a label), runs of consecutive blocks too thin to label merged into one
// ("layers.0 – layers.16"), each block with its name, live-node count and its changes' and
// findings' marks, drawn in screen space over the drawing. A block of a collapsed group acts as
// its box (a click shows its details, a double-click opens it); a click on an opened group's
// block, or a run's, fits the view to it; on a mark, goes to the first change or finding inside. Owns the blocks drawn
// (`blocks`: what each says, for the tests).
(function () {
"use strict";
const PX = 12;            // the blocks' text, in screen pixels
const ROW = 16;           // a block this high (px) holds a line of text
const TWO = 34;           // ... and this high, two
const WIDEST = 440;       // px: a block is widened to its label's width up to this
const MAX_BLOCKS = 400;   // blocks drawn at most (the cut stops descending past this)
const SEG = /^(nodes|groups|nodes & groups) (\d+)–(\d+)( of [\d,]+)(?:, [\d,]+ removed)?$/; // a segment's label: what, from, to, of how many (live; ghosts counted apart)

PasslensGraphParts.part({
  name: "semantic",
  needs: ["base", "dom", "sides", "shown", "drawing", "viewport", "details"],
  state: { blocks: Object.freeze([]) },
  make({ base, dom, shown, viewport, details }, st) {
    const { svg, textWidth, cut, TITLE, READABLE } = base;
    const { root, el } = dom;
    const { plain } = shown;
    const { fitView, size } = viewport;
    const { goGroup, locate, selectGroup, toggle } = details;
    const layer = svg("g", { class: "plg-sem" }, root);
    let pending = 0;

    const rectOf = (m, D, g) => D.frameOf.get(g) || D.boxes.get(m.N + g);
    // the blocks: a cut through the groups drawn, in the coordinates of `t` (the screen's, or
    // the minimap's: x' = x * t.kx + t.x, y' = y * t.ky + t.y), in a W x H area, each room for
    // a line `row` px high
    function cutBlocks(m, D, t, W, H, row) {
      const out = [];
      out.frames = []; // the groups descended into, on the screen: drawn as outlines
      const scr = (r) => ({ x: r.x * t.kx + t.x, y: r.y * t.ky + t.y, w: r.w * t.kx, h: r.h * t.ky });
      const seen = (s) => s.x < W && s.y < H && s.x + s.w > 0 && s.y + s.h > 0;
      const descend = (g, s) => {
        let n = 0, thin = 0;
        for (const k of m.kids[g]) {
          const r = rectOf(m, D, k);
          if (!r) continue;
          n++;
          if (r.h * t.ky < row - 3) thin++;
        }
        // its child groups each get a line's height (they stack) or a label's width (side by
        // side), and most are not lines too thin for their label (written beside them): a
        // layer whose small parts are thin lines around one big one stays one block
        return n > 0 && 2 * thin <= n && (s.h / n >= row || s.w / n >= 140);
      };
      // depth first, in order, with a stack of its own (no recursion over the groups' nesting)
      const stack = [[0, 0, 0]]; // [group, depth, next child]
      while (stack.length && out.length < MAX_BLOCKS) {
        const top = stack[stack.length - 1], kids = m.kids[top[0]];
        if (top[2] >= kids.length) { stack.pop(); continue; }
        const k = kids[top[2]++], g = top[0], depth = top[1];
        const r = rectOf(m, D, k);
        if (!r) continue;
        const s = scr(r);
        if (!seen(s)) continue;
        if (D.frameOf.has(k) && descend(k, s)) { stack.push([k, depth + 1, 0]); out.frames.push({ g: k, s }); }
        else out.push({ g: k, parent: g, depth, s, members: [k] });
      }
      return out;
    }
    // two screen rectangles apart by at most a line's height, across and along
    const near = (a, b) => Math.max(0, b.y - a.y - a.h, a.y - b.y - b.h) <= 2 * ROW && Math.max(0, b.x - a.x - a.w, a.x - b.x - b.w) <= 2 * ROW;
    // consecutive neighbouring blocks of one parent too thin for a line of text become one run
    function mergeRuns(blocks, row) {
      const out = [];
      let run = null;
      const close = () => { if (run) out.push(run); run = null; };
      for (const b of blocks) {
        const thin = b.s.h < row;
        if (thin && run && run.parent === b.parent && run.s.h < row && near(run.s, b.s)) {
          const x0 = Math.min(run.s.x, b.s.x), y0 = Math.min(run.s.y, b.s.y);
          const x1 = Math.max(run.s.x + run.s.w, b.s.x + b.s.w), y1 = Math.max(run.s.y + run.s.h, b.s.y + b.s.h);
          run.s = { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
          run.members.push(b.g);
          continue;
        }
        close();
        if (thin) run = { g: b.g, parent: b.parent, depth: b.depth, s: Object.assign({}, b.s), members: [b.g] };
        else out.push(b);
      }
      close();
      return out;
    }
    // a module group's path in parts, a number joined to the part before it:
    // "stages.1.blocks.0.pwconv1" (or "@fn/stages.1...") -> ["stages.1", "blocks.0", "pwconv1"]
    function pathParts(grp) {
      let id = grp.id || "";
      if (id[0] === "@") { const at = id.indexOf("/"); id = at > 0 ? id.slice(at + 1) : ""; }
      const out = [];
      for (const p of id.split(".")) {
        if (!p) continue;
        if (/^\d+$/.test(p) && out.length) out[out.length - 1] += "." + p; else out.push(p);
      }
      return out;
    }
    // each single module block named by enough of its path to tell it from the other blocks:
    // "stages.1/blocks.0/pwconv1" where twelve blocks would say "pwconv1" (two parts at least,
    // so a block says where it is: "layers.17/self_attn")
    // A run of modules ("block.3 – block.5") is named by its first and last the same way,
    // the first with as much path as tells the run from the others ("1.0/block.3 – block.5").
    function nameBlocks(m, info) {
      const todo = [];
      for (const b of info) {
        const gs = b.members.map((g) => m.p.groups[g]);
        if (!gs.length || gs.some((grp) => grp.k !== "module")) continue;
        const parts = pathParts(gs[0]);
        if (gs.length > 1) { // a run: "first – last", the last by its own name
          const last = pathParts(gs[gs.length - 1]);
          if (parts.length && last.length) todo.push({ b, parts, n: 1, run: last[last.length - 1], min: 1 });
          continue;
        }
        if (parts.length) todo.push({ b, parts, n: 0, min: 2 });
      }
      const nameOf = (t) => t.parts.slice(-t.n).join("/") + (t.run ? " – " + t.run : "");
      // the parts every block shares ("model" of "model/layers.3") tell none apart
      let common = 0;
      while (todo.length > 1 && todo.every((t) => t.parts.length > common + 1 && t.parts[common] === todo[0].parts[common])) common++;
      for (const t of todo) t.n = Math.max(1, Math.min(t.min, t.parts.length - common));
      for (let round = 0; round < 64 && todo.length; round++) {
        const seen = new Map();
        for (const t of todo) seen.set(nameOf(t), (seen.get(nameOf(t)) || 0) + 1);
        let grew = false;
        for (const t of todo) {
          if (seen.get(nameOf(t)) > 1 && t.n < t.parts.length) { t.n++; grew = true; }
        }
        if (!grew) break;
      }
      for (const t of todo) if (!t.run || t.n > 1) t.b.d.name = nameOf(t); // (a run told apart by its own names keeps them)
    }
    // what a block says: name, count, marks (summed over a run's members)
    function describe(m, b) {
      const gs = b.members.map((g) => m.p.groups[g]);
      const first = gs[0], last = gs[gs.length - 1];
      const label = (grp) => { // "self_attn" says more as "layers.17.self_attn"
        const l = grp.label || grp.id, up = grp.p > 0 ? m.p.groups[grp.p] : null;
        return up && !/\d/.test(l) && up.k !== "segment" && grp.k === "module" ? (up.label || up.id) + "." + l : l;
      };
      let name = gs.length === 1 ? label(first) : label(first) + " – " + label(last);
      const a = SEG.exec(first.label || ""), z = SEG.exec(last.label || "");
      if (gs.length > 1 && a && z) name = (a[1] === z[1] ? a[1] : "nodes & groups") + " " + a[2] + "–" + z[3] + a[4]; // segments: "nodes 1–334 of 10,000"
      if (first.k === "segment") { // "0.blocks · nodes 1–40 of 200": the module they are a run of
        let up = first.p;
        while (up > 0 && m.p.groups[up].k === "segment") up = m.p.groups[up].p;
        if (up > 0) name = (m.p.groups[up].label || m.p.groups[up].id) + " · " + name;
      }
      let n = 0, f = 0, fi, fm, ci, bad = false;
      const ch = {};
      for (const grp of gs) {
        n += grp.n || 0;
        if (plain()) continue;
        if (grp.f || grp.bad) { f += grp.f || 1; bad = true; if (fi === undefined) { fi = grp.fi; fm = grp.fm; } }
        if (grp.ch) { for (const k in grp.ch) ch[k] = (ch[k] || 0) + grp.ch[k]; if (ci === undefined) ci = grp.ci; }
      }
      const nch = Object.entries(ch).reduce((a, [k, x]) => a + (k === "moved" ? 0 : x), 0);
      const count = n + (ch.removed ? " live" : "") + (n === 1 ? " node" : " nodes") + (gs.length > 1 ? " in " + gs.length + " groups" : "");
      const marks = [];
      if (nch) marks.push({ cls: ch.failed ? "plg-sem-fail" : "plg-sem-ch", text: "~" + nch + (nch === 1 ? " change" : " changes"), node: ci });
      if (ch.moved) marks.push({ cls: "plg-sem-mv", text: "→" + ch.moved + " moved" });
      if (bad) marks.unshift({ cls: "plg-sem-f", text: "▲ " + (fm ? cut(fm, 28) : f + (f === 1 ? " finding" : " findings")), node: fi });
      return { name, count, marks, failed: !!ch.failed, changed: nch > 0, moved: !nch && !!ch.moved, bad, n };
    }
    const overlaps = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

    function drawBlocks() {
      pending = 0;
      const t0 = performance.now();
      try { drawCut(); } finally { el.dataset.blocksMs = (performance.now() - t0).toFixed(1); }
    }
    function drawCut() {
      layer.textContent = "";
      const m = st.m, D = st.draw, v = st.view;
      const on = !!(m && D && st.drawn === m && v.k * TITLE < READABLE); // (not the other side's drawing)
      root.classList.toggle("plg-semantic", on);
      st.blocks = Object.freeze([]);
      if (!on) { el.dataset.blocks = "0"; return; }
      const { w: W, h: H } = size();
      const cutOut = cutBlocks(m, D, { kx: v.k, ky: v.k, x: v.x, y: v.y }, W, H, ROW);
      // the frames the cut went into (a stage around its blocks), so the structure between
      // the blocks (the spine of unchanged ops drawn faintly beneath) is not lost
      for (const f of cutOut.frames) svg("rect", { class: "plg-sem-frame", x: f.s.x, y: f.s.y, width: f.s.w, height: f.s.h, rx: 6 }, layer);
      const blocks = mergeRuns(cutOut, ROW);
      // widen each block to its label where that covers no other block, most important first
      const info = blocks.map((b) => Object.assign(b, { d: describe(m, b) }));
      nameBlocks(m, info);
      const order = info.slice().sort((a, b) => (b.d.bad - a.d.bad) || (b.d.changed - a.d.changed) || (b.d.n - a.d.n));
      const placed = [];
      for (const b of order) {
        const d = b.d, two = b.s.h >= TWO;
        let want = textWidth(d.name, PX, true) + 12;
        const markW = d.marks.reduce((a, mk) => a + textWidth(mk.text, PX, true) + 14, 0);
        const countW = textWidth(d.count, PX) + 8;
        want = two ? Math.max(want, countW + markW + 8) : want + countW + markW;
        want = Math.min(WIDEST, Math.max(want, 24));
        const free = (r2) => !info.some((o) => o !== b && overlaps(r2, o.r || o.s)) && !placed.some((o) => overlaps(r2, o));
        let r = { x: b.s.x, y: b.s.y, w: b.s.w, h: Math.max(b.s.h, 3) };
        if (r.h < ROW) { // a line's height where that covers no other block
          const tall = { x: r.x, y: r.y + r.h / 2 - ROW / 2, w: r.w, h: ROW };
          if (free(tall)) r = tall;
        }
        if (r.w < want) {
          let x = Math.min(Math.max(r.x + r.w / 2 - want / 2, 4), W - 4 - want); // on the screen
          x = Math.min(Math.max(x, r.x + r.w - want), r.x); // and still over the block
          const wide = { x, y: r.y, w: want, h: r.h };
          if (free(wide)) r = wide;
        }
        b.r = r;
        placed.push(r);
      }
      const labels = [];
      for (const b of info) if (!drawBlock(m, b)) sideLabel(b, info, labels, W, H);
      st.blocks = Object.freeze(info.map((b) => ({ groups: b.members.map((g) => m.p.groups[g].id), name: b.d.name, count: b.d.count, marks: b.d.marks.map((mk) => mk.text), rect: b.r })));
      el.dataset.blocks = String(info.length);
    }
    function drawBlock(m, b) {
      const d = b.d, r = b.r;
      const cls = ["plg-sem-block"];
      if (d.failed) cls.push("plg-s-failed"); else if (d.changed) cls.push("plg-s-changed"); else if (d.moved) cls.push("plg-s-moved");
      if (d.bad) cls.push("plg-bad");
      if (b.members.length > 1) cls.push("plg-sem-run");
      const g = svg("g", { class: cls.join(" "), transform: `translate(${r.x},${r.y})` }, layer);
      g.dataset.semGroups = b.members.join(",");
      g.dataset.group = m.p.groups[b.members[0]].id;
      svg("rect", { class: "plg-sem-shape", width: r.w, height: r.h, rx: Math.min(5, r.h / 2) }, g);
      const tip = svg("title", null, g);
      const whole = b.members.length === 1 && m.p.groups[b.members[0]].k === "module" ? m.p.groups[b.members[0]].id : d.name;
      tip.textContent = whole + " — " + d.count + (d.marks.length ? "\n" + d.marks.map((mk) => mk.text).join("\n") : "") + "\nclick: go there";
      b.el = g;
      if (r.h < ROW - 3 || r.w < 30) return false; // too small for text here
      const two = r.h >= TWO;
      const room = r.w - 12;
      let y = two ? r.h / 2 - 3 : r.h / 2 + PX / 2 - 2;
      const text = (x, yy, s, c2, bold) => {
        const t = svg("text", { x, y: yy, class: c2 }, g);
        t.textContent = s;
        if (bold) t.setAttribute("font-weight", "600");
        return t;
      };
      let x = 6;
      const nameW = Math.min(textWidth(d.name, PX, true), room);
      text(x, y, fit(d.name, room, true), "plg-sem-name", true);
      if (two) { y += PX + 4; x = 6; } else x += nameW + 8;
      if (x + textWidth(d.count, PX) <= r.w - 4) { text(x, y, d.count, "plg-sem-count"); x += textWidth(d.count, PX) + 8; }
      for (const mk of d.marks) {
        const mw = textWidth(mk.text, PX, true);
        if (x + mw + 8 > r.w) break;
        const badge = svg("g", { class: "plg-sem-mark " + mk.cls }, g);
        if (mk.node !== undefined) badge.dataset.node = mk.node;
        svg("rect", { x: x - 3, y: y - PX + 1, width: mw + 6, height: PX + 4, rx: 7 }, badge);
        const t = svg("text", { x, y }, badge);
        t.textContent = mk.text;
        x += mw + 12;
      }
      return true;
    }
    // a block too small for its text: the text beside it, where that covers nothing
    function sideLabel(b, info, labels, W, H) {
      const d = b.d, r = b.r;
      const text = d.name + "  " + d.count, tw = textWidth(text, PX) + 8;
      const cy = r.y + r.h / 2;
      for (const dy of [0, -ROW, ROW, -2 * ROW, 2 * ROW]) {
        for (const x of [r.x + r.w + 6, r.x - 6 - tw]) {
          const box = { x, y: cy + dy - ROW / 2, w: tw, h: ROW };
          if (box.x < 0 || box.x + box.w > W || box.y < 0 || box.y + box.h > H) continue;
          if (info.some((o) => overlaps(box, o.r)) || labels.some((o) => overlaps(box, o))) continue;
          labels.push(box);
          const g = b.el;
          const ox = x - r.x, oy = box.y - r.y;
          if (dy) svg("path", { class: "plg-sem-lead", d: `M${x > r.x ? r.w : 0},${r.h / 2} L${x > r.x ? ox : ox + tw},${oy + ROW / 2}` }, g);
          const t = svg("text", { x: ox + 4, y: oy + ROW / 2 + PX / 2 - 2, class: "plg-sem-side" }, g);
          t.textContent = text;
          return;
        }
      }
    }
    function fit(s, room, bold) {
      if (textWidth(s, PX, bold) <= room) return s;
      let n = Math.max(1, Math.floor((s.length * room) / textWidth(s, PX, bold)));
      while (n > 1 && textWidth(cut(s, n), PX, bold) > room) n--;
      return cut(s, n);
    }
    function schedule() {
      if (pending) return;
      pending = typeof requestAnimationFrame === "function" ? requestAnimationFrame(drawBlocks) : (drawBlocks(), 0);
    }
    layer.addEventListener("click", (e) => {
      const mk = e.target.closest("[data-node]"), b = e.target.closest("[data-sem-groups]");
      if (!b) return;
      e.stopPropagation();
      const m = st.m;
      if (st.drawn !== m) return; // the other side's drawing, while this one's is laid out
      if (mk) { locate(+mk.dataset.node); return; }
      const gs = b.dataset.semGroups.split(",").map(Number);
      if (gs.length === 1 && st.draw.boxes.has(m.N + gs[0])) { // a collapsed group: as a click on its box
        selectGroup(gs[0]);
        return;
      }
      if (gs.length === 1) { goGroup(gs[0]); return; }
      // a run: fit its groups into the view, where each gets room for its own block
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (const g of gs) { const r = rectOf(m, st.draw, g); if (!r) continue; x0 = Math.min(x0, r.x); y0 = Math.min(y0, r.y); x1 = Math.max(x1, r.x + r.w); y1 = Math.max(y1, r.y + r.h); }
      if (x0 < Infinity) fitView({ x: x0, y: y0, w: x1 - x0, h: y1 - y0 });
    });
    layer.addEventListener("dblclick", (e) => { // on a collapsed group, as on its box: open it
      const b = e.target.closest("[data-sem-groups]");
      if (!b) return;
      e.stopPropagation(); e.preventDefault();
      const gs = b.dataset.semGroups.split(",").map(Number), m = st.m;
      if (gs.length === 1 && st.draw.boxes.has(m.N + gs[0]) && !e.target.closest("[data-node]")) toggle(gs[0]);
    });
    // the blocks of a cut in other coordinates (the minimap's), each with what it says
    function blocksIn(t, W, H, row) {
      const m = st.m, D = st.draw;
      if (!m || !D || st.drawn !== m) return [];
      const info = mergeRuns(cutBlocks(m, D, t, W, H, row), row).map((b) => Object.assign(b, { d: describe(m, b) }));
      nameBlocks(m, info); // (the minimap's labels told apart as the blocks' are)
      return info;
    }
    viewport.onMove(schedule); // the zoomed-out blocks
    return { render: drawBlocks, schedule, blocksIn };
  },
});
})();
