// The node side of tests/widgets/test_graph_parts.py: `node graph_parts_node.js SCENARIO FILE...`
// runs one scenario on the component's plain scripts (FILE) and prints its outcome as JSON.
"use strict";
const fs = require("fs");
const load = (path) => new Function(fs.readFileSync(path, "utf8") +
  "\nreturn { P: PasslensGraphParts," +
  " G: typeof PasslensGraph === 'undefined' ? null : PasslensGraph," +
  " L: typeof PasslensLayout === 'undefined' ? null : PasslensLayout };")();
const print = (v) => process.stdout.write(JSON.stringify(v));
const scenarios = {};

scenarios.declared = async function () {
  const { P, G } = load(process.argv[3]);
  const out = {};
  for (const [name, d] of P.defs) out[name] = { needs: d.needs, state: Object.keys(d.state), make: String(d.make) };
  print({ parts: out, wiring: G.WIRING, order: P.order(["host", "engine"]) });
};

scenarios.checks = async function () {
  const { P, G } = load(process.argv[3]);
  const given = { host: {}, engine: {} };
  const fails = (wiring) => { try { P.check(wiring, given); return ""; } catch (e) { return e.message; } };
  const W = G.WIRING.map(([n, needs]) => [n, needs.slice()]);
  const swapped = W.slice(); [swapped[3], swapped[4]] = [swapped[4], swapped[3]]; // expansion before sides
  const wrongNeeds = W.map(([n, needs]) => [n, n === "search" ? needs.filter((x) => x !== "details") : needs]);
  print({ ok: fails(W), swapped: fails(swapped), wrongNeeds: fails(wrongNeeds),
    missing: fails(W.slice(0, -1)) });
};

scenarios.guards = async function () {
  const { P } = load(process.argv[3]);
  P.part({ name: "a", state: { x: 1, list: [] }, make(_, st) { return { bump() { st.x++; }, x: () => st.x }; } });
  P.part({ name: "b", needs: ["a"], make({ a }, st) {
    return { read: () => st.x, write() { st.x = 5; }, add() { st.y = 1; }, other: () => st.z }; } });
  P.part({ name: "c", state: { z: 0 }, make() { return {}; } });
  const wiring = [["a", []], ["c", []], ["b", ["a"]]];
  const { parts, state } = P.wire(wiring, {});
  const error = (f) => { try { f(); return ""; } catch (e) { return e.message; } };
  parts.a.bump();
  print({
    read: parts.b.read(),
    write: error(parts.b.write),
    add: error(parts.b.add),
    undeclaredState: error(parts.b.other),
    wiringWrite: error(() => { state.x = 3; }),
    frozen: error(() => { parts.a.extra = 1; }),
    undeclaredInput: error(() => {
      P.part({ name: "d", needs: ["a"], make({ a, c }) { return {}; } });
      P.wire([...wiring, ["d", ["a"]]], {});
    }),
    twoOwners: error(() => { P.defs.delete("d"); P.part({ name: "e", state: { x: 0 }, make: () => ({}) }); P.check([...wiring, ["e", []]], {}); }),
  });
};

scenarios.worker = async function () {
  const { P, L } = load(process.argv[3]);
  const W = P.defs.get("worker");
  const out = {};
  // the worker's side: a fake scope, its tasks run by hand
  // (each reading of the worker's clock `tick` ms later: 25, over the slice, or 0)
  function served(tick = 25) {
    const posted = [], tasks = [];
    const scope = { postMessage: (m) => posted.push(JSON.parse(JSON.stringify(m))) };
    let clock = 0;
    W.serve(scope, L, (f) => tasks.push(f), () => (clock += tick));
    const send = (m) => scope.onmessage({ data: m });
    const step = () => { const f = tasks.shift(); if (f) f(); return !!f; };
    return { posted, send, step, drain: () => { while (step()); } };
  }
  const job = (n) => ({ nodes: Array.from({ length: n }, () => ({ w: 40, h: 20 })), edges: [[0, 1]], rankSep: 46, nodeSep: 28, edgeSep: 14, margin: 0 });
  const batch = [job(3), { ...job(2), nodes: [{ job: 0, minW: 60, minH: 30, padW: 32, padH: 40 }, { w: 40, h: 20 }] }];
  {
    const s = served();
    s.send({ type: "layout", id: 1, jobs: batch });
    s.drain();
    out.served = s.posted.map((m) => m.type + ":" + m.id + (m.type === "progress" ? ":" + m.done + "/" + m.total : ""));
    out.same = JSON.stringify(s.posted.at(-1).results) === JSON.stringify(L.layoutBatch(batch));
  }
  { // a fast engine: the batch in one slice, one task, no progress
    const s = served(0);
    s.send({ type: "layout", id: 1, jobs: batch });
    let tasks = 0;
    while (s.step()) tasks++;
    out.oneSlice = { posted: s.posted.map((m) => m.type + ":" + m.id), tasks };
  }
  { // batch 1 cancelled between its jobs, batch 2 cancelled before it starts, batch 3 made
    const s = served();
    s.send({ type: "layout", id: 1, jobs: batch });
    s.send({ type: "layout", id: 2, jobs: batch });
    s.send({ type: "layout", id: 3, jobs: [job(2)] });
    s.step();
    s.send({ type: "cancel", id: 1 });
    s.send({ type: "cancel", id: 2 });
    s.drain();
    out.cancelled = s.posted.map((m) => m.type + ":" + m.id);
  }
  { // an engine error answers its batch only
    const s = served();
    s.send({ type: "layout", id: 1, jobs: [{ ...job(2), edges: [[0, 7]] }] });
    s.send({ type: "layout", id: 2, jobs: [job(2)] });
    s.drain();
    out.error = s.posted.map((m) => m.type + ":" + m.id);
    out.errorMessage = s.posted[0].message;
  }
  // the page's side: fake workers and a fake clock
  function page(opts) {
    const workers = [], timers = new Map(), log = [];
    let now = 0, nextTimer = 0;
    const env = {
      makeWorker: () => {
        if (opts && opts.none) return null;
        const w = { sent: [], terminated: false, postMessage(m) { this.sent.push(m.type + ":" + m.id); }, terminate() { this.terminated = true; } };
        workers.push(w);
        return { worker: w, url: "blob:" + workers.length };
      },
      revoke: (url) => log.push("revoke " + url),
      clock: { setTimeout: (f, ms) => { timers.set(++nextTimer, { f, at: now + ms }); return nextTimer; }, clearTimeout: (t) => timers.delete(t) },
      here: (jobs) => { log.push("here " + jobs.length); return jobs.map(() => "laid out here"); },
      timeoutMs: 1000,
    };
    const runner = W.createRunner(env);
    const advance = (ms) => { now += ms; for (const [t, r] of [...timers]) if (r.at <= now) { timers.delete(t); r.f(); } };
    const reply = (w, m) => w.onmessage({ data: m });
    return { runner, workers, log, advance, reply, timers };
  }
  { // a new layout of a component cancels its last; a late answer to it is dropped
    const p = page(), a = p.runner.client(), b = p.runner.client();
    a.run([1], (r, where) => p.log.push("a1 " + where), (m) => p.log.push("a1 failed"));
    b.run([1, 2], (r, where) => p.log.push("b1 " + where));
    a.run([1, 2, 3], (r, where) => p.log.push("a2 " + where), null, (d, t) => p.log.push("a2 " + d + "/" + t));
    const w = p.workers[0];
    p.reply(w, { type: "result", id: 1, results: [] });
    p.reply(w, { type: "progress", id: 3, done: 1, total: 3 });
    p.reply(w, { type: "result", id: 3, results: [] });
    p.reply(w, { type: "error", id: 2, message: "bad" });
    b.run([1], () => p.log.push("b2"));
    b.close();
    out.page = { sent: w.sent, log: p.log, timers: p.timers.size, asked: p.runner.asked };
  }
  { // a batch over the time limit: the worker ends, the view is told, the others asked again
    const p = page(), a = p.runner.client(), b = p.runner.client();
    a.run([1], () => p.log.push("a done"), (m) => p.log.push("a: " + m));
    p.advance(600);
    b.run([1], () => p.log.push("b done"), (m) => p.log.push("b: " + m));
    p.advance(400); // a has waited 1000 ms
    const [w1, w2] = p.workers;
    p.reply(w1, { type: "result", id: 1, results: [] }); // too late: w1 has ended
    p.reply(w2, { type: "result", id: 2, results: [] });
    p.advance(5000);
    out.timeout = { log: p.log, w1: { sent: w1.sent, terminated: w1.terminated }, w2: w2 && { sent: w2.sent, terminated: w2.terminated }, asked: p.runner.asked };
  }
  { // no worker: laid out on the page, at once
    const p = page({ none: true }), a = p.runner.client();
    a.run([1, 2], (r, where) => p.log.push(where + " " + r.length));
    out.none = { log: p.log, worker: a.worker };
  }
  print(out);
};

scenarios.messages = async function () {
  const { P } = load(process.argv[3]);
  const W = P.defs.get("worker");
  print({ types: Object.values(W.MESSAGES), serve: String(W.serve) });
};

scenarios.modules = async function () {
  const out = {};
  for (const [name, path] of [["anywidget", process.argv[3]], ["panel", process.argv[4]]]) {
    const mod = await import("data:text/javascript;base64," + fs.readFileSync(path).toString("base64"));
    out[name] = Object.fromEntries(Object.entries(mod).map(([k, v]) => [k, typeof v === "object" ? Object.keys(v) : typeof v]));
  }
  print(out);
};

scenarios[process.argv[2]]().catch((e) => { console.error(e); process.exit(1); });
