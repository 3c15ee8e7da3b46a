"""Recorded graph payloads (``widgets.graph_view.graph_data``) of a few small traces, so a change
to how the payload is *computed* (its speed) can be shown not to change what it *is*.

``tests/widgets/test_payload_snapshot.py`` compares the payloads of today's code with the
recorded ones in ``tests/widgets/data/payloads.json.gz`` (written from commit 3a18588, before the
payload path was made faster). A deliberate change of the payload re-records them:

    PYTHONPATH=. .venv/bin/python -m tests.widgets.payload_snapshot --write

The traces cover what the builder does: module trees and their simplification (a decoder),
segments of a flat chain and of a wide module, ghosts of removed nodes, a check report's marks
and errors (the bloat replica), functions and calls (fuse-ops), a failed pass, weights'
statistics (``stats=True``) and a small ``max_boxes`` (more groups collapsed at first).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parent / "data" / "payloads.json.gz"
_LINE = re.compile(r":\d+$")


def _traces():
    """``(name, trace, report)`` of each recorded trace (small: built in a few seconds)."""
    import explorer
    from compiler import models
    from tests.compiler.passes.test_lazy_params import NESTED
    from tests.widgets.test_scale_models import sm

    bloat = explorer.explore(
        models.convnext(dims=(8, 16), depths=(1, 1), image=32, num_classes=10),
        pipeline="replica-linear-broadcast,fold-constant",
    )
    return [
        ("decoder2", sm.decoder(layers=2, experts=2), None),
        ("many_ops300", sm.many_ops(300), None),
        ("flat_chain300", sm.flat_chain(300), None),
        ("bloat", bloat, bloat.check()),
        ("mlp_default", explorer.explore(models.mlp()), None),
        (
            "failed",
            explorer.explore(NESTED, pipeline="fold-constant,replica-lazy-transform-params"),
            None,
        ),
    ]


def _normalise(value):
    """A payload as JSON text reads it back, with source line numbers (``file.py:123``) left
    out: editing a model's source file moves them, and they are not what is compared."""
    value = json.loads(json.dumps(value, allow_nan=False))
    for payload in (value.get("after"), value.get("before")):
        for d in (payload or {}).get("details", []):
            prov = d.get("provenance", {})
            if isinstance(prov.get("file"), str):
                prov["file"] = _LINE.sub(":N", prov["file"])
    return value


def payloads() -> dict[str, dict]:
    """Every recorded case: ``"<trace>#<step>[/variant]"`` -> ``graph_data(...)`` normalised."""
    from widgets.graph_view import graph_data

    out = {}
    for name, trace, report in _traces():
        last = trace[len(trace) - 1]
        for step in trace if len(trace) > 3 else [last]:  # the scale models: their last step
            prev = step.previous
            out[f"{name}#{step.index}"] = _normalise(graph_data(step, prev, report, stats=False))
        if report is not None:
            out[f"{name}#{last.index}/stats"] = _normalise(graph_data(last, last.previous, report))
        out[f"{name}#{last.index}/boxes12"] = _normalise(
            graph_data(last, last.previous, report, max_boxes=12, stats=False)
        )
    return out


def recorded() -> dict[str, dict]:
    """The recorded payloads."""
    with gzip.open(SNAPSHOT, "rt", encoding="utf-8") as f:
        return json.load(f)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="re-record the payloads")
    args = parser.parse_args(argv)
    if not args.write:
        parser.print_help()
        return 2
    data = payloads()
    SNAPSHOT.parent.mkdir(exist_ok=True)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    with gzip.GzipFile(SNAPSHOT, "wb", mtime=0) as f:
        f.write(text.encode())
    print(f"{len(data)} payloads, {len(text) / 1e6:.1f} MB of JSON -> {SNAPSHOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
