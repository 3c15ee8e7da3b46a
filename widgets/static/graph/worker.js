// passlens graph component, part `worker`: the layout off the page's thread. One Web Worker per
// page, made from the layout engine's own text (engine.source(), already in the page) through a
// Blob URL: no file is fetched, so it works in a report opened from disk, in Jupyter and Panel.
// Where no worker can be made (no Worker, a Content-Security-Policy without blob:, an error
// as it starts), the layouts are made on the page's thread, at once, as before.
//
// The page and the worker speak in MESSAGES only (as Netron's view.Worker and worker.js do):
// the page asks for a batch of layouts (`layout`) or drops one (`cancel`); the worker answers
// with `progress` while it works, then the batch's `result` or the engine's `error`. Each
// component has one client: a new layout asked by it cancels its previous one, and destroying
// the component cancels its last. A batch not answered within TIMEOUT_MS ends the worker (a
// job cannot be interrupted) and fails with a message the view shows; the other batches are
// asked again of a new worker.
//
//   const client = worker.client();
//   client.run(jobs, done, fail, progress)  // jobs: PasslensLayout.layoutBatch's;
//       // done(results, "worker" | "page": where they were made), fail(message),
//       // progress(done, total)
//   client.cancel() / client.close()        // drop the batch asked last
//   client.worker                           // whether a worker is there to make them
(function () {
"use strict";
// every message between the page and the worker, by its `type`
const MESSAGES = Object.freeze({
  layout: "layout",     // page -> worker {type, id, jobs}: lay out a batch (layoutBatch's jobs)
  cancel: "cancel",     // page -> worker {type, id}: drop batch id (queued, or between its jobs)
  progress: "progress", // worker -> page {type, id, done, total}: jobs of batch id made so far
  result: "result",     // worker -> page {type, id, results}: the batch's layouts, in order
  error: "error",       // worker -> page {type, id, message}: the engine failed on batch id
});
const TIMEOUT_MS = 60000;
const timeoutMessage = (ms) => "The layout took longer than " + Math.round(ms / 1000) +
  " s and was stopped: collapse some groups (“collapse”) to draw less.";

// What the worker runs after the engine (self-contained: its text goes into the worker; the
// message types are written out here). Batches in the order asked, the jobs of a slice of
// about SLICE ms per task (`defer`, `now`: the worker's clock), so that a cancel is read
// between slices and the page hears of the progress once per slice. A job may be sized after
// the result of an earlier job of its batch, as in engine.layoutBatch.
function serve(scope, engine, defer, now) {
  const SLICE = 20;
  const queue = [];
  let busy = false;
  function step() {
    const t0 = now();
    let b = queue[0];
    while (b) {
      if (b.results.length === b.jobs.length) { // done (or empty)
        queue.shift();
        scope.postMessage({ type: "result", id: b.id, results: b.results });
        b = queue[0];
        continue;
      }
      try {
        const job = b.jobs[b.results.length];
        const nodes = job.nodes.map((s) => {
          if (!s || s.job === undefined) return s;
          const r = b.results[s.job];
          return { w: Math.max(r.width, s.minW || 0) + s.padW, h: Math.max(r.height, s.minH || 0) + s.padH };
        });
        b.results.push(engine.layout(Object.assign({}, job, { nodes })));
      } catch (err) {
        queue.shift();
        scope.postMessage({ type: "error", id: b.id, message: String((err && err.message) || err) });
        b = queue[0];
        continue;
      }
      if (b.results.length < b.jobs.length && now() - t0 >= SLICE) {
        scope.postMessage({ type: "progress", id: b.id, done: b.results.length, total: b.jobs.length });
        defer(step);
        return;
      }
    }
    busy = false;
  }
  scope.onmessage = function (e) {
    const d = e.data;
    if (d.type === "layout") {
      queue.push({ id: d.id, jobs: d.jobs, results: [] });
      if (!busy) { busy = true; defer(step); }
    } else if (d.type === "cancel") {
      const k = queue.findIndex((b) => b.id === d.id);
      if (k >= 0) queue.splice(k, 1);
    }
  };
}

// The page's side: batches asked of a worker made by env.makeWorker() ({ worker, url } or null:
// none can be made), timed by env.clock ({ setTimeout, clearTimeout }), laid out on the page by
// env.here(jobs) where no worker is there (or one failed).
function createRunner(env) {
  const clock = env.clock, limit = env.timeoutMs || TIMEOUT_MS;
  let made = null, broken = false, nextId = 0;
  const asked = new Map(); // id -> { id, jobs, done, fail, progress, timer }: sent, not answered
  const here = (r) => r.done(env.here(r.jobs), "page");
  function forget(r) {
    asked.delete(r.id);
    if (r.timer !== null) clock.clearTimeout(r.timer);
    r.timer = null;
  }
  function stop() {
    if (!made) return;
    made.worker.terminate();
    if (env.revoke) env.revoke(made.url);
    made = null;
  }
  function post(r) {
    try { made.worker.postMessage({ type: MESSAGES.layout, id: r.id, jobs: r.jobs }); } catch (e) { giveUp(); }
  }
  function start() {
    if (made || broken) return made !== null;
    made = env.makeWorker();
    if (!made) { broken = true; return false; }
    made.worker.onmessage = (e) => {
      const d = e.data, r = asked.get(d.id);
      if (!r) return; // cancelled, or timed out
      if (d.type === MESSAGES.progress) { if (r.progress) r.progress(d.done, d.total); return; }
      forget(r);
      if (d.type === MESSAGES.result) r.done(d.results, "worker");
      else here(r); // MESSAGES.error: the same error, raised here
    };
    made.worker.onerror = (e) => { if (e && e.preventDefault) e.preventDefault(); giveUp(); };
    return true;
  }
  function giveUp() { // the worker failed: what it was given is laid out here, and all after
    stop();
    broken = true;
    const left = [...asked.values()];
    for (const r of left) forget(r);
    for (const r of left) here(r);
  }
  function expire(r) { // over the limit: the worker ends, the others are asked of a new one
    r.timer = null;
    forget(r);
    stop();
    const left = [...asked.values()];
    if (left.length && start()) for (const o of left) post(o);
    r.fail(timeoutMessage(limit));
  }
  function ask(jobs, done, fail, progress) {
    if (!start()) { done(env.here(jobs), "page"); return null; }
    const r = { id: ++nextId, jobs, done, fail, progress, timer: null };
    asked.set(r.id, r);
    r.timer = clock.setTimeout(() => expire(r), limit);
    post(r);
    return asked.has(r.id) ? r : null;
  }
  function cancel(r) {
    if (!r || !asked.has(r.id)) return;
    forget(r);
    if (made) made.worker.postMessage({ type: MESSAGES.cancel, id: r.id });
  }
  function client() {
    let last = null;
    return {
      get worker() { return start(); },
      run(jobs, done, fail, progress) {
        cancel(last);
        last = null;
        last = ask(jobs, done, fail || (() => {}), progress);
      },
      cancel() { cancel(last); last = null; },
      close() { cancel(last); last = null; },
    };
  }
  return { client, get worker() { return made !== null; }, get asked() { return asked.size; } };
}

// the browser's worker, made from the engine's text (null where none can be made)
function browserWorker(engine) {
  try {
    if (typeof Worker === "undefined" || typeof Blob === "undefined" || typeof URL === "undefined" || !URL.createObjectURL) return null;
    const defer = "((f) => { const c = new MessageChannel(); c.port1.onmessage = () => f(); c.port2.postMessage(0); })";
    const text = engine.source() + "(" + String(serve) + ")(self, PasslensLayout, " + defer + ", () => performance.now());\n";
    const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
    return { worker: new Worker(url), url };
  } catch (e) {
    return null;
  }
}

let page = null; // the page's runner: one worker for every component of the page
PasslensGraphParts.part({
  name: "worker",
  needs: ["engine"],
  make({ engine }) {
    if (!page) {
      page = createRunner({
        makeWorker: () => browserWorker(engine),
        revoke: (url) => URL.revokeObjectURL(url),
        clock: { setTimeout: (f, ms) => setTimeout(f, ms), clearTimeout: (t) => clearTimeout(t) },
        here: (jobs) => engine.layoutBatch(jobs),
      });
    }
    const client = page.client();
    void client.worker; // the page's layout worker starts while the page reads the graph's data
    return { client };
  },
  MESSAGES, TIMEOUT_MS, serve, createRunner,
});
})();
