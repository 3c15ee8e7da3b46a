"""The graph component's parts (widgets/static/graph/*.js) declare what they need and own what
they write, graph.js's diagram wires them in a checked order, and the ES modules anywidget and
Panel load are the entry files. Run under node (tests/widgets/graph_parts_node.js): the
registry's guards on made-up parts, the real parts' declarations read from their sources, the
layout worker's messages with a fake worker and a fake clock, and the ES modules imported.
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


HARNESS = Path(__file__).with_name("graph_parts_node.js")


def run_node(scenario: str, *files: Path) -> dict:
    """One scenario of graph_parts_node.js on ``files``; what it prints (JSON)."""
    cmd = [NODE, str(HARNESS), scenario, *map(str, files)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


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
    return run_node("declared", script)


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


def test_the_wiring_check_fails_on_a_wrong_order_or_wrong_needs(script):
    out = run_node("checks", script)
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
    assert run_node("checks", path)["ok"] == ""


# ----- the registry's guards, on made-up parts --------------------------------------------------

def test_a_part_writes_only_the_fields_it_owns_and_uses_only_what_it_declares(registry):
    out = run_node("guards", registry)
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
MUTATE = re.compile(
    r"\bst\.(\w+)\.(push|pop|shift|unshift|splice|sort|reverse|add|delete|set|clear)\("
)
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
            owner = owners.get(field)
            assert field in d["state"], f"part {name} writes st.{field}, owned by {owner}"
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

@pytest.fixture(scope="module")
def worker(script) -> dict:
    return run_node("worker", script)


def test_the_worker_answers_a_batch_with_progress_then_its_result(worker):
    """(Its clock read 25 ms later each time: a slice of 20 ms holds one job.)"""
    assert worker["served"] == ["progress:1:1/2", "result:1"]
    assert worker["same"]  # job by job, as layoutBatch lays the batch out


def test_the_worker_makes_the_jobs_of_a_slice_in_one_task(worker):
    assert worker["oneSlice"] == {"posted": ["result:1"], "tasks": 1}


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
    out = run_node("messages", script)
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


def test_the_modules_export_what_anywidget_and_panel_call(tmp_path):
    """anywidget calls the default export's render; Panel the named render (it would take a
    default export's first, so the Panel module has none)."""
    a, p = tmp_path / "anywidget.mjs", tmp_path / "panel.mjs"
    a.write_text(graph_esm())
    p.write_text(graph_panel_esm())
    out = run_node("modules", a, p)
    assert out == {"anywidget": {"default": ["render"]}, "panel": {"render": "function"}}
