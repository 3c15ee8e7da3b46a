"""The `passlens` command's arguments (passlens.cli runs them): the parser of every
subcommand and its options, and the line a command prints before its first slow step."""

from __future__ import annotations

import argparse

from passlens import export as _export
from passlens import model_sources
from passlens import passes_cmd as _passes


def build_parser() -> argparse.ArgumentParser:
    """The `passlens` command's argument parser: every subcommand and its options."""
    from explorer.adapters import adapter_names  # every registered compiler (none imported)

    parser = argparse.ArgumentParser(
        prog="passlens",
        description="Explore and debug how a deep-learning compiler converts a model.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "explore",
        help="import a model, run a pipeline, print every step",
        description="Import MODEL (a file, FILE.py:ATTR or package.module:ATTR; see below), "
        "run the pipeline with every pass recorded, print the summary.",
        epilog=model_sources.HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", metavar="MODEL", help=model_sources.ARG_HELP)
    p.add_argument(
        "--input-shape",
        metavar="SHAPE[:DTYPE]",
        action="append",
        default=[],
        help=model_sources.SHAPE_HELP,
    )
    p.add_argument(
        "--pipeline",
        default=None,
        metavar="SPEC",
        help="pass pipeline spec (default: default; with --compiler tvm a Relax pipeline name, "
        "default zero; none with --compiler inductor; with --compiler iree the phase to "
        "compile to, e.g. flow, default end)",
    )
    p.add_argument(
        "--compiler",
        choices=adapter_names(),
        default="passlens",
        help="whose passes to record: passlens's own, Apache TVM Relax's, torch.compile's "
        "(Inductor, CPU), ONNX Runtime's or IREE's (iree-compile, llvm-cpu; MODEL may be an "
        ".mlir file) (default: %(default)s)",
    )
    p.add_argument(
        "--flag",
        metavar="--iree-NAME[=VALUE]",
        action="append",
        default=[],
        help="with --compiler iree: one more iree-compile flag (repeatable; --flag=--iree-... "
        "or --flag --iree-...); flags that write or read files, load a library or run a "
        "program are refused",
    )
    p.add_argument(
        "--check", action="store_true", help="check numerics, shapes and parameters at every step"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse a model with an operator passlens has no converter for (by default such "
        "an operator is kept as an opaque op that torch or onnxruntime runs)",
    )
    p.add_argument("--html", metavar="OUT", help="write a self-contained HTML report")
    p.add_argument("--save", metavar="OUT", help="save the trace (a .passlens file)")
    _export.add_trust_op(p)

    p = sub.add_parser(
        "show",
        help="print a saved trace",
        description="Print a saved trace's summary, a step's IR or its diff.",
    )
    p.add_argument("trace", metavar="TRACE", help="a .passlens file")
    p.add_argument("--step", metavar="N", help="print step N's IR text (index or pass name)")
    p.add_argument(
        "--view",
        metavar="NAME",
        default="IR",
        help="with --step: which text (IR, 'loop IR', 'LLVM IR', assembly; default %(default)s)",
    )
    p.add_argument("--diff", metavar="N", help="print what step N changed")

    p = sub.add_parser(
        "serve",
        help="open a saved trace in the Panel app",
        description="Serve the Panel app on a saved trace on localhost: print its URL and "
        "serve until Ctrl-C.",
    )
    p.add_argument("trace", metavar="TRACE", help="a .passlens file")
    p.add_argument(
        "--port", type=int, default=5006, help="port, 0 for a free one (default: %(default)s)"
    )
    p.add_argument("--open", action="store_true", help="open the app in a web browser")
    p.add_argument(
        "--allow-host",
        metavar="HOST",
        action="append",
        default=[],
        help="also answer requests to HOST or HOST:PORT (e.g. a reverse proxy's name; "
        "repeatable); by default only localhost, 127.0.0.1 and [::1] on the port are answered",
    )

    p = sub.add_parser(
        "reduce",
        help="shrink a saved trace's finding to a small module, pipeline and test",
        description="Check TRACE, then shrink its module and pipeline while the finding still "
        "holds (same kind, same pass); write reduced.passlens, reduced.ir, pipeline.txt and "
        "test_reduced.py (it fails while the bug is there) into DIR.",
    )
    p.add_argument("trace", metavar="TRACE", help="a .passlens file")
    p.add_argument("--out", metavar="DIR", required=True, help="where to write the reduction")
    p.add_argument(
        "--finding",
        metavar="N",
        type=int,
        help="which finding of the check (0 is the first; default: the first failure)",
    )
    p.add_argument(
        "--budget",
        metavar="SECONDS",
        type=float,
        default=60.0,
        help="time to spend; the smallest case so far is kept (default: %(default)g)",
    )
    _export.add_trust_op(p)

    _export.add_parser(sub)
    _passes.add_parser(sub)

    p = sub.add_parser(
        "demo",
        help="run the bundled demo",
        description="Explore a small ConvNeXt-style model (random weights, built in code) "
        "through torch.export and the default pipeline, check it against torch eager, then "
        "replay a real TVM bug (a weight copied by folding) where the check names the step "
        "and the copies; writes an HTML report and a saved trace to --out. With --notebook, "
        "run that notebook headless instead (make demo runs notebooks/00_tour.ipynb).",
    )
    p.add_argument(
        "--notebook",
        metavar="PATH",
        help="run this notebook headless instead (make demo: notebooks/00_tour.ipynb)",
    )
    p.add_argument(
        "--out", metavar="DIR", default="build/demo", help="where to write (default %(default)s)"
    )
    for command in sub.choices.values():
        command.add_argument(
            "--verbose",
            action="store_true",
            help="on an error, also print what torch logged and the full traceback",
        )
    return parser


# what a command says before its first slow step (importing torch and the compiler takes a few
# seconds, exporting a model more): a line in the first second, on a terminal only
STARTING = {
    "explore": "importing {model} (loading torch and the compiler first: a few seconds) ...",
    "show": "reading {trace} ...",
    "serve": "loading {trace}, then starting the app ...",
    "reduce": "loading {trace} to reduce its first finding ...",
    "demo": "running the demo (loading torch and the compiler first: a few seconds) ...",
    "export": "loading {trace} ...",
}


def starting(args: argparse.Namespace, stream) -> None:
    """Say on `stream` (stderr) what the command is about to do, when a person is watching
    (a terminal): the slow imports come next, and nothing else would show for seconds."""
    text = STARTING.get(args.command)
    isatty = getattr(stream, "isatty", None)
    if text is None or not (callable(isatty) and isatty()):
        return
    names = {k: getattr(args, k, "") for k in ("model", "trace")}
    print(f"passlens {args.command}: {text.format(**names)}", file=stream, flush=True)


def joined_flags(argv) -> list[str]:
    """`argv` with each `--flag VALUE` written `--flag=VALUE`: the value of `--flag`
    is itself an option (`--iree-...`), which argparse would take for one of ours."""
    args = list(argv)
    out: list[str] = []
    k = 0
    while k < len(args):
        if args[k] == "--flag" and k + 1 < len(args):
            out.append(f"--flag={args[k + 1]}")
            k += 2
            continue
        out.append(args[k])
        k += 1
    return out
