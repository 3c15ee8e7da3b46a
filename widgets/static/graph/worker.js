// passlens graph component: the layout off the page's thread. One Web Worker per page, made
// from the layout engine's own text (PasslensLayout.source(), already in the page) through a
// Blob URL: no file is fetched, so it works in a report opened from disk, in Jupyter and Panel.
// Where no worker can be made (no Worker, a Content-Security-Policy without blob:, an error
// as it starts), the layouts are made on the page's thread, at once, as before.
//
//   P.layoutRunner().run(jobs, done)   // jobs: PasslensLayout.layoutBatch's;
//                                      // done(results, "worker" | "page": where they were made)
//   P.layoutRunner().worker            // whether a worker is there to make them
(function (P) {
  "use strict";
  let runner = null;
  // what the worker runs after the engine: each message a batch of layouts, answered with
  // their results (or the error's message)
  function serve() {
    self.onmessage = function (e) {
      let results = null, error = "";
      try { results = PasslensLayout.layoutBatch(e.data.jobs); }
      catch (err) { error = String((err && err.message) || err); }
      self.postMessage({ id: e.data.id, results, error });
    };
  }
  function start() {
    try {
      if (typeof Worker === "undefined" || typeof Blob === "undefined" || typeof URL === "undefined" || !URL.createObjectURL) return null;
      const text = PasslensLayout.source() + "(" + String(serve) + ")();\n";
      const url = URL.createObjectURL(new Blob([text], { type: "text/javascript" }));
      return { worker: new Worker(url), url };
    } catch (e) {
      return null;
    }
  }
  P.layoutRunner = function () {
    if (runner) return runner;
    let made = start(), nextId = 0;
    const waiting = new Map(); // id -> {jobs, done}
    const here = (jobs, done) => done(PasslensLayout.layoutBatch(jobs), "page");
    const giveUp = () => { // the worker failed: what it was given is laid out here
      if (made) { made.worker.terminate(); URL.revokeObjectURL(made.url); made = null; }
      const left = [...waiting.values()];
      waiting.clear();
      for (const job of left) here(job.jobs, job.done);
    };
    if (made) {
      made.worker.onmessage = (e) => {
        const job = waiting.get(e.data.id);
        if (!job) return;
        waiting.delete(e.data.id);
        if (e.data.error) here(job.jobs, job.done); // the same error, raised here
        else job.done(e.data.results, "worker");
      };
      made.worker.onerror = (e) => { if (e && e.preventDefault) e.preventDefault(); giveUp(); };
    }
    runner = {
      get worker() { return made !== null; },
      run(jobs, done) {
        if (made === null) { here(jobs, done); return; }
        const id = ++nextId;
        waiting.set(id, { jobs, done });
        try { made.worker.postMessage({ id, jobs }); } catch (e) { giveUp(); }
      },
    };
    return runner;
  };
})(PasslensGraphParts);
