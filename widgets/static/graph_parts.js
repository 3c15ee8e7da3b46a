// passlens graph component: how its parts are declared and wired. Each file of static/graph/
// declares one part:
//
//   PasslensGraphParts.part({
//     name: "viewport",
//     needs: ["base", "dom", "sides", "drawing"],   // the parts (or given inputs) it uses
//     state: { view: { x: 0, y: 0, k: 1 } },        // the state fields it owns (writes)
//     make({ base, dom, sides, drawing }, st) { ...; return { apply, fit, ... }; },
//   });
//
// make() is given the exports of the parts it needs (and nothing else: reading any other
// part's name throws) and `st`, its view of the component's state: its own fields read and
// written, the fields of the parts it needs read only (a write throws), any other field
// neither (throws). It returns what it provides (frozen). graph.js wires the parts in the
// order of its diagram, checked here against each part's own declaration: a part comes after
// every part it needs, the diagram's needs are the part's, and each field has one owner.
// The files themselves may come in any order: nothing is wired before PasslensGraph.create.
const PasslensGraphParts = (function () {
  "use strict";
  const defs = new Map(); // name -> { name, needs, state, make, ... }

  function part(def) {
    if (!def || typeof def.name !== "string" || typeof def.make !== "function") throw new Error("graph part: a name and make() are required");
    if (defs.has(def.name)) throw new Error("graph part " + def.name + " is declared twice");
    defs.set(def.name, Object.freeze(Object.assign({ needs: [], state: {} }, def)));
  }

  // The diagram `wiring` ([[name, needs], ...] in dependency order) checked against the parts
  // declared and the inputs `given` (name -> value): throws on the first disagreement.
  function check(wiring, given) {
    const seen = new Set(Object.keys(given)), owner = new Map();
    for (const [name, needs] of wiring) {
      const def = defs.get(name);
      if (!def) throw new Error("graph wiring: no part " + name);
      if (seen.has(name)) throw new Error("graph wiring: " + name + " twice");
      const declared = def.needs.slice().sort().join(","), drawn = needs.slice().sort().join(",");
      if (declared !== drawn) throw new Error("graph wiring: " + name + " needs [" + declared + "], the diagram says [" + drawn + "]");
      for (const n of needs) if (!seen.has(n)) throw new Error("graph wiring: " + name + " needs " + n + ", which is not wired before it");
      for (const f of Object.keys(def.state)) {
        if (owner.has(f)) throw new Error("graph state: st." + f + " is owned by both " + owner.get(f) + " and " + name);
        owner.set(f, name);
      }
      seen.add(name);
    }
    for (const name of defs.keys()) if (!seen.has(name)) throw new Error("graph wiring: part " + name + " is not in the diagram");
    return owner;
  }

  const copy = (v) => (v && typeof v === "object" ? (Array.isArray(v) ? v.slice() : Object.assign({}, v)) : v);

  // Wire the parts of `wiring` given the inputs `given`: returns { parts: name -> exports,
  // state: every field, read only }.
  function wire(wiring, given) {
    const owner = check(wiring, given);
    const stores = new Map(), built = new Map(Object.entries(given));
    const names = [...Object.keys(given), ...wiring.map(([n]) => n)];
    // part `who`'s view of the state (who: null for the wiring itself: all fields read only)
    function view(who, needs) {
      const st = {};
      for (const [f, o] of owner) {
        const store = stores.get(o);
        const mine = o === who, readable = mine || who === null || needs.includes(o);
        Object.defineProperty(st, f, {
          enumerable: true,
          get: readable ? () => store[f] : () => { throw new Error("graph part " + who + " reads st." + f + " of " + o + ", which it does not declare"); },
          set: mine ? (v) => { store[f] = v; } : (v) => { throw new Error("graph part " + (who || "graph.js") + " writes st." + f + ", which " + o + " owns"); },
        });
      }
      return Object.preventExtensions(st);
    }
    for (const [name] of wiring) {
      const def = defs.get(name), store = {};
      for (const [f, v] of Object.entries(def.state)) store[f] = copy(v);
      stores.set(name, store);
    }
    for (const [name] of wiring) {
      const def = defs.get(name), inputs = {};
      for (const n of names) {
        if (def.needs.includes(n)) Object.defineProperty(inputs, n, { enumerable: true, value: built.get(n) });
        else if (n !== name) Object.defineProperty(inputs, n, { get: () => { throw new Error("graph part " + name + " uses " + n + ", which it does not declare in needs"); } });
      }
      const out = def.make(Object.freeze(inputs), view(name, def.needs));
      built.set(name, Object.freeze(out || {}));
    }
    const parts = {};
    for (const [name] of wiring) parts[name] = built.get(name);
    return { parts, state: view(null, []) };
  }

  // A dependency order of the parts declared (for a check of the diagram; ties by name).
  function order(given) {
    const out = [], done = new Set(given || []), left = new Map(defs);
    while (left.size) {
      const ready = [...left.keys()].filter((n) => left.get(n).needs.every((d) => done.has(d))).sort();
      if (!ready.length) throw new Error("graph parts: a cycle among " + [...left.keys()].join(", "));
      for (const n of ready) { out.push(n); done.add(n); left.delete(n); }
    }
    return out;
  }

  return { part, defs, check, wire, order };
})();
