"""The graph component's parts (widgets/static/graph/*.js) declare what they need and own what
they write, graph.js's diagram wires them in a checked order, and the ES modules anywidget and
Panel load are the entry files. Run under node: the registry's guards on made-up parts, the
real parts' declarations read from their sources, and the ES modules imported.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from widgets.graph_view import (
    STATIC,
    GraphView,
    graph_esm,
    graph_js,
    graph_panel_esm,
    part_files,
)

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the parts are JS")


def run_node(script: str, *args: str, module: bool = False, tmp: Path | None = None) -> dict:
    """Run ``script`` under node (as an ES module with ``module``); it prints one JSON value."""
    cmd = [NODE, "--input-type=module" if module else "--input-type=commonjs", "-e", script]
    result = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# Loads the component's plain scripts (argv[1]) and gives back the registry, PasslensGraph and
# the engine.
LOAD = r"""
"use strict";
const fs = require("fs");
const load = (path) => new Function(fs.readFileSync(path, "utf8") +
  "\nreturn { P: PasslensGraphParts, G: typeof PasslensGraph === 'undefined' ? null : PasslensGraph," +
  " L: typeof PasslensLayout === 'undefined' ? null : PasslensLayout };")();
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("parts") / "graph.js"
    path.write_text(graph_js())
    return path


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Path:
    """The registry alone (static/graph_parts.js), for made-up parts."""
    path = tmp_path_factory.mktemp("registry") / "parts.js"
    path.write_text((STATIC / "graph_parts.js").read_text())
    return path


@pytest.fixture(scope="module")
def declared(script) -> dict:
    """Each real part's declaration: needs, the fields it owns, make's source."""
    return run_node(
        LOAD
        + r"""
const { P, G } = load(process.argv[1]);
const out = {};
for (const [name, d] of P.defs) out[name] = { needs: d.needs, state: Object.keys(d.state), make: String(d.make) };
process.stdout.write(JSON.stringify({ parts: out, wiring: G.WIRING, order: P.order(["host", "engine"]) }));
""",
        str(script),
    )


# ----- the wiring -----------------------------------------------------------------------------


def test_the_diagram_is_every_part_in_a_checked_dependency_order(declared):
    wiring = declared["wiring"]
    assert sorted(name for name, _ in wiring) == sorted(declared["parts"])
    seen = {"host", "engine"}
    for name, needs in wiring:
        assert sorted(needs) == sorted(declared["parts"][name]["needs"]), name
        assert set(needs) <= seen, f"{name} is wired before what it needs"
        seen.add(name)


def test_each_file_of_static_graph_is_one_part_of_its_name(declared):
    assert sorted(f.stem for f in part_files()) == sorted(declared["parts"])
    for f in part_files():
        assert f.read_text().count("PasslensGraphParts.part(") == 1, f.name


CHECKS = r"""
const { P, G } = load(process.argv[1]);
const given = { host: {}, engine: {} };
const fails = (wiring) => { try { P.check(wiring, given); return ""; } catch (e) { return e.message; } };
const W = G.WIRING.map(([n, needs]) => [n, needs.slice()]);
const swapped = W.slice(); [swapped[3], swapped[4]] = [swapped[4], swapped[3]]; // expansion before sides
const wrongNeeds = W.map(([n, needs]) => [n, n === "search" ? needs.filter((x) => x !== "details") : needs]);
process.stdout.write(JSON.stringify({ ok: fails(W), swapped: fails(swapped), wrongNeeds: fails(wrongNeeds),
  missing: fails(W.slice(0, -1)) }));
"""


def test_the_wiring_check_fails_on_a_wrong_order_or_wrong_needs(script):
    out = run_node(LOAD + CHECKS, str(script))
    assert out["ok"] == ""
    assert "expansion needs sides, which is not wired before it" in out["swapped"]
    assert "search needs [" in out["wrongNeeds"] and "the diagram says" in out["wrongNeeds"]
    assert "interaction is not in the diagram" in out["missing"]


def test_the_parts_files_may_come_in_any_order(tmp_path):
    """Nothing is wired before PasslensGraph.create: the parts' files reversed check alike."""
    from widgets.graph_view import layout_js

    files = [STATIC / "graph_parts.js", *reversed(part_files()), STATIC / "graph.js"]
    path = tmp_path / "reversed.js"
    path.write_text("\n".join([layout_js(), *(f.read_text() for f in files)]))
    assert run_node(LOAD + CHECKS, str(path))["ok"] == ""


# ----- the registry's guards, on made-up parts --------------------------------------------------

GUARDS = r"""
const { P } = load(process.argv[1]);
P.part({ name: "a", state: { x: 1, list: [] }, make(_, st) { return { bump() { st.x++; }, x: () => st.x }; } });
P.part({ name: "b", needs: ["a"], make({ a }, st) {
  return { read: () => st.x, write() { st.x = 5; }, add() { st.y = 1; }, other: () => st.z }; } });
P.part({ name: "c", state: { z: 0 }, make() { return {}; } });
const wiring = [["a", []], ["c", []], ["b", ["a"]]];
const { parts, state } = P.wire(wiring, {});
const error = (f) => { try { f(); return ""; } catch (e) { return e.message; } };
parts.a.bump();
process.stdout.write(JSON.stringify({
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
}));
"""


def test_a_part_writes_only_the_fields_it_owns_and_uses_only_what_it_declares(registry):
    out = run_node(LOAD + GUARDS, str(registry))
    assert out["read"] == 2  # a's field, read through the owner's view
    assert out["write"] == "graph part b writes st.x, which a owns"
    assert "object is not extensible" in out["add"] or "add property y" in out["add"]
    assert out["undeclaredState"] == "graph part b reads st.z of c, which it does not declare"
    assert out["wiringWrite"] == "graph part graph.js writes st.x, which a owns"
    assert out["undeclaredInput"] == "graph part d uses c, which it does not declare in needs"
    assert "read only" in out["frozen"] or "not extensible" in out["frozen"]
    assert out["twoOwners"] == "graph state: st.x is owned by both a and e"


# ----- the real parts, read from their sources --------------------------------------------------

WRITE = re.compile(r"\bst\.(\w+)\s*(?:[-+*/]?=(?!=)|\+\+|--)")
NESTED_WRITE = re.compile(r"\bst\.(\w+)(?:\.\w+|\[[^\]]+\])+\s*(?:[-+*/]?=(?!=)|\+\+|--)")
MUTATE = re.compile(r"\bst\.(\w+)\.(push|pop|shift|unshift|splice|sort|reverse|add|delete|set|clear)\(")
READ = re.compile(r"\bst\.(\w+)")


def code_of(source: str) -> str:
    """The source without its comments and string literals (for the name checks)."""
    source = re.sub(r"//[^\n]*", "", source)
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`', '""', source)


def test_each_state_field_is_written_only_by_its_owner(declared):
    parts = declared["parts"]
    owners: dict[str, str] = {}
    for name, d in parts.items():
        for field in d["state"]:
            assert field not in owners, f"st.{field}: owned by {owners[field]} and {name}"
            owners[field] = name
    for name, d in parts.items():
        code = code_of(d["make"])
        for field in WRITE.findall(code):
            assert field in d["state"], f"part {name} writes st.{field}, owned by {owners.get(field)}"
        # state values are replaced, never changed in place (the owner's too: frozen values)
        assert not NESTED_WRITE.findall(code), f"part {name} changes a state value in place"
        assert not MUTATE.findall(code), f"part {name} changes a state value in place"


def test_each_part_reads_only_the_fields_of_the_parts_it_declares(declared):
    parts = declared["parts"]
    owners = {f: name for name, d in parts.items() for f in d["state"]}
    for name, d in parts.items():
        readable = {f for f, o in owners.items() if o == name or o in d["needs"]}
        for field in set(READ.findall(code_of(d["make"]))):
            assert field in readable, f"part {name} reads st.{field} of {owners.get(field)}"


def test_each_part_takes_its_inputs_from_what_it_declares(declared):
    """make's first parameter destructures the parts it uses, each of them declared; each
    declared need is used (destructured, or its state read)."""
    parts = declared["parts"]
    owners = {f: name for name, d in parts.items() for f in d["state"]}
    for name, d in parts.items():
        head = re.match(r"(?:make\s*)?\(\s*(\{[^}]*\}|_)?\s*(?:,\s*st\s*)?\)", d["make"])
        assert head, f"part {name}: make({{ ...needs }}, st) expected"
        taken = set()
        if head.group(1) and head.group(1) != "_":
            taken = {k.split(":")[0].strip() for k in head.group(1)[1:-1].split(",") if k.strip()}
        assert taken <= set(d["needs"]), f"part {name} uses {taken - set(d['needs'])}"
        # a part named in the body without being declared (not destructured: a free name)
        others = (set(parts) | {"host", "engine"}) - {name}
        named = set(re.findall(r"(?<![.\w])(\w+)\.\w", code_of(d["make"]))) & others
        assert named <= set(d["needs"]), f"part {name} uses {named - set(d['needs'])}"
        read_from = {owners[f] for f in READ.findall(code_of(d["make"])) if f in owners}
        unused = set(d["needs"]) - taken - read_from
        assert not unused, f"part {name} declares {unused} and does not use it"


GLOBALS = re.compile(r"\b(PasslensGraph|PasslensLayout|PasslensWidget|passlensLayout\w*)\b")


def test_no_part_names_another_files_globals():
    """A part reaches the engine, the other parts and the host only through its inputs."""
    for f in part_files():
        code = code_of(f.read_text())
        assert not GLOBALS.findall(code), f"{f.name} names {set(GLOBALS.findall(code))}"
        assert re.findall(r"\bPasslensGraphParts\b[.\w]*", code) == ["PasslensGraphParts.part"]


# ----- the layout worker's messages ------------------------------------------------------------

WORKER = r"""
const { P, L } = load(process.argv[1]);
const W = P.defs.get("worker");
const out = {};
// the worker's side: a fake scope, its tasks run by hand
function served() {
  const posted = [], tasks = [];
  const scope = { postMessage: (m) => posted.push(JSON.parse(JSON.stringify(m))) };
  W.serve(scope, L, (f) => tasks.push(f));
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
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def worker(script) -> dict:
    return run_node(LOAD + WORKER, str(script))


def test_the_worker_answers_a_batch_with_progress_then_its_result(worker):
    assert worker["served"] == ["progress:1:1/2", "result:1"]
    assert worker["same"]  # job by job, as layoutBatch lays the batch out


def test_the_worker_drops_a_cancelled_batch_between_its_jobs_or_before_it_starts(worker):
    assert worker["cancelled"] == ["progress:1", "result:3"]


def test_an_engine_error_answers_its_batch_and_the_next_is_made(worker):
    assert worker["error"] == ["error:1", "result:2"]
    assert "edge 0" in worker["errorMessage"]


def test_a_new_layout_cancels_the_components_last_and_closing_cancels(worker):
    page = worker["page"]
    assert page["sent"] == [
        "layout:1",
        "layout:2",
        "cancel:1",  # a's second layout cancels its first
        "layout:3",
        "layout:4",
        "cancel:4",  # b closed (its view destroyed)
    ]
    # a1's late result is dropped; b1's engine error is laid out (and raised) on the page
    assert page["log"] == ["a2 1/3", "a2 worker", "here 2", "b1 page"]
    assert page["timers"] == 0 and page["asked"] == 0


def test_a_layout_over_the_time_limit_ends_with_a_message_not_a_hang(worker):
    timeout = worker["timeout"]
    message = (
        "a: The layout took longer than 1 s and was stopped: "
        "collapse some groups (“collapse”) to draw less."
    )
    assert timeout["log"] == ["revoke blob:1", message, "b done"]
    assert timeout["w1"] == {"sent": ["layout:1", "layout:2"], "terminated": True}
    assert timeout["w2"] == {"sent": ["layout:2"], "terminated": False}  # b asked again
    assert timeout["asked"] == 0


def test_without_a_worker_the_page_lays_out_at_once(worker):
    assert worker["none"] == {"log": ["here 2", "page 2"], "worker": False}


def test_the_worker_messages_are_the_enumerated_list(script):
    """The page and the worker's own code (serve, whose text runs in the worker) use the
    message types of MESSAGES and no other."""
    out = run_node(
        LOAD
        + r"""
const { P } = load(process.argv[1]);
const W = P.defs.get("worker");
process.stdout.write(JSON.stringify({ types: Object.values(W.MESSAGES), serve: String(W.serve) }));
""",
        str(script),
    )
    assert out["types"] == ["layout", "cancel", "progress", "result", "error"]
    used = set(re.findall(r'type(?: ===|:) "(\w+)"', out["serve"]))
    assert used == set(out["types"])
    source = (STATIC / "graph" / "worker.js").read_text()
    page_side = source[source.index("function createRunner") :]
    assert not re.findall(r'type(?: ===|:) "(\w+)"', page_side)  # MESSAGES.x only


# ----- the ES modules ---------------------------------------------------------------------------


def test_the_es_module_anywidget_loads_is_the_entry_file():
    from widgets.app_maps import GraphPane

    widget = (STATIC / "graph_widget.js").read_text()
    for esm, entry in ((GraphView._esm, "graph_anywidget.js"), (GraphPane._esm, "graph_panel.js")):
        text = (STATIC / entry).read_text()
        assert esm == "\n".join((graph_js(), widget, text))
    assert GraphView._esm == graph_esm() and GraphPane._esm == graph_panel_esm()


IMPORT = r"""
const fs = await import("fs");
const out = {};
for (const [name, path] of [["anywidget", process.argv[1]], ["panel", process.argv[2]]]) {
  const mod = await import("data:text/javascript;base64," + fs.readFileSync(path).toString("base64"));
  out[name] = Object.fromEntries(Object.entries(mod).map(([k, v]) => [k, typeof v === "object" ? Object.keys(v) : typeof v]));
}
process.stdout.write(JSON.stringify(out));
"""


def test_the_modules_export_what_anywidget_and_panel_call(tmp_path):
    """anywidget calls the default export's render; Panel the named render (it would take a
    default export's first, so the Panel module has none)."""
    a, p = tmp_path / "anywidget.mjs", tmp_path / "panel.mjs"
    a.write_text(graph_esm())
    p.write_text(graph_panel_esm())
    out = run_node(IMPORT, str(a), str(p), module=True)
    assert out == {"anywidget": {"default": ["render"]}, "panel": {"render": "function"}}
