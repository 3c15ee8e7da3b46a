"""`passlens export TRACE --step N --format model-explorer|onnx --out PATH`: one step of a
saved trace for another viewer (Google's Model Explorer, Netron); see `explorer.interop`."""

from __future__ import annotations

import argparse
import shlex
import shutil
import sys


def add_parser(sub) -> None:
    """Add the `export` subcommand to the `passlens` subparsers `sub`."""
    from explorer.interop import FORMATS

    p = sub.add_parser(
        "export",
        help="write one step of a saved trace for Model Explorer or Netron",
        description="Write step N of TRACE as Model Explorer's graph JSON (with node data "
        "files: parameter bytes and, with --check, each node's max error) or as ONNX (for "
        "Netron).",
    )
    p.add_argument("trace", metavar="TRACE", help="a .passlens file")
    p.add_argument(
        "--step",
        metavar="N",
        default="-1",
        help="the step: index or pass name (default: the last step)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="model-explorer",
        help="model-explorer (graph JSON) or onnx (default: %(default)s)",
    )
    p.add_argument("--out", metavar="PATH", required=True, help="the file to write")
    p.add_argument(
        "--check",
        action="store_true",
        help="model-explorer: check the trace on its saved inputs first, and write each "
        "node's max error against the reference",
    )
    add_trust_op(p)


def add_trust_op(p: argparse.ArgumentParser) -> None:
    """`--trust-op NAME` (repeatable): an opaque op to run although passlens does not know
    it to be a pure computation (explorer.trust)."""
    p.add_argument(
        "--trust-op",
        metavar="NAME",
        action="append",
        default=[],
        help="run the opaque op NAME (torch: ns.name or ns.name.overload; ONNX: "
        "domain::OpType) although passlens does not know it to be a pure computation; only "
        "for a file you trust: the op may do anything its code does (repeatable)",
    )


def run(args: argparse.Namespace, step_of, error: type[Exception]) -> int:
    """Run `passlens export`; returns the exit code. `step_of(trace, key)`: the CLI's
    step lookup; `error`: what a usage error raises (one line from the CLI)."""
    from explorer.interop import ExportError
    from explorer.store import load

    if args.check and args.format != "model-explorer":
        raise error("--check goes with --format model-explorer only")
    trace = load(args.trace, trust_ops=getattr(args, "trust_op", None))
    step = step_of(trace, args.step)
    report = None
    if args.check:
        report = trace.check(trace.example_inputs)
        print(report.headline(), file=sys.stderr)
    try:
        paths = trace.export(step, args.out, format=args.format, report=report)
    except ExportError as e:
        raise error(str(e)) from None
    print(f"wrote step {step.index} ({step.name}): {', '.join(str(p) for p in paths)}")
    if args.format == "model-explorer":
        cmd = ["model-explorer", str(paths[0])]
        if len(paths) > 1:
            cmd.append("--node_data_paths=" + ",".join(str(p) for p in paths[1:]))
        print("open it with: " + shlex.join(cmd))
    else:
        print(f"open it with Netron: netron {shlex.quote(str(paths[0]))}")
        if shutil.which("netron") is None:
            print(
                "(Netron is not installed here: `pip install netron`, or open the file at "
                "https://netron.app in a browser)"
            )
    return 0
