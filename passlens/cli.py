"""The `passlens` command (also `python -m passlens`).

    passlens explore MODEL [--input-shape SHAPE[:DTYPE] ...] [--pipeline SPEC] [--check]
                   [--html OUT] [--save OUT.passlens] [--compiler NAME] [--flag=--iree-...]
    passlens show TRACE.passlens [--step N [--view NAME]] [--diff N]
    passlens serve TRACE.passlens [--port P] [--open] [--allow-host HOST ...]
    passlens reduce TRACE.passlens --out DIR [--finding N] [--budget SECONDS]
    passlens export TRACE.passlens [--step N] [--format model-explorer|onnx] --out PATH
    passlens passes
    passlens demo [--notebook PATH [--out DIR]]

`explore` imports MODEL, runs the pipeline (default: `default`) with every pass recorded
and prints the trace summary; `--check` also checks numerics, shapes and parameters at every
step, `--html` writes a self-contained report and `--save` the trace. MODEL is one of
(passlens.model_sources resolves it):

  model.onnx           an ONNX model;
  model.pt2            a program saved by `torch.export.save`;
  model.py             a Python file defining `model()`, which returns `(model,
                       example_args)`: a torch.nn.Module (or an IR Module) and a tuple of
                       example inputs:

                           import torch

                           def model():
                               net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
                               return net.eval(), (torch.randn(2, 4),)

                       (the file is run as Python: only pass files you trust);
  model.py:ATTR,       ATTR of a Python file or an importable module: an nn.Module, an
  pkg.module:ATTR      nn.Module class, or a function returning a model or (model, example_args);
  model.ir, .txt       a module in the IR text format;
  model.mlir           MLIR, with `--compiler iree` (`--flag=--iree-...`, repeatable, adds
                       an iree-compile flag; explorer.iree.flags refuses those that write or
                       read files, load a library or run a program).

A torch model's example inputs are `--input-shape 1,3,224,224` (once per input; a dtype as in
`1,16:int64`) if given, else the example_args returned, else an `example_inputs` attribute
of the model, then of its module (a .pt2's own example inputs).

`show` prints a saved trace's summary; with `--step N` that step's IR text instead (N is
an index or a pass name; `--view "loop IR"`, `"LLVM IR"` or `assembly` for the backend's
texts of a step after legalize-ops or codegen), with `--diff N` what that step changed.
`serve` serves the Panel app on a saved trace on localhost (prints the URL, serves until
Ctrl-C; `--port 0` picks a free port; it answers only requests to localhost, 127.0.0.1 or
[::1], plus each `--allow-host HOST[:PORT]`, from its own pages, for its own paths:
`widgets.app_guard.HostGuard`), `demo` runs the bundled demo.
`reduce` checks a saved trace, then shrinks its module and pipeline while its first failure
(or finding `N` of the check, 0 the first) still holds, and writes the reduced trace, its IR,
its pipeline and a pytest file that fails while the bug is there into DIR. `export` writes
one step for Model Explorer or Netron; `passes` lists every pass (what it does, its options)
and the named pipelines, the names a `--pipeline` spec can use.

Exit codes: 0 when all went well; 1 when there are findings (a pass failed, or `--check`
found problems); 2 when the command could not run (a missing or unreadable file, a bad
pipeline spec, a missing dependency). Errors are one line on stderr, without a traceback
(set PASSLENS_TRACEBACK=1 to see it).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from passlens import export as _export
from passlens import passes_cmd as _passes
from passlens.cli_args import build_parser as _parser
from passlens.cli_args import joined_flags, starting
from passlens.errors import CLIError, port_error, print_error
from passlens.errors import one_line as _one_line
from passlens.model_sources import load_model

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `passlens` command with `argv` (default: the process arguments); returns
    the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(joined_flags(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help (0) or a usage error (2), already printed by argparse
        return int(e.code or 0)
    command = {
        "explore": _explore,
        "show": _show,
        "serve": _serve,
        "reduce": _reduce,
        "demo": _demo,
        "export": _export_step,
        "passes": _passes.run,
    }[args.command]
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Printable(out), _Printable(err)
    try:
        starting(args, sys.stderr)
        return command(args)
    except KeyboardInterrupt:
        print("passlens: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        if os.environ.get("PASSLENS_TRACEBACK"):
            raise
        print_error(e, sys.stderr, verbose=getattr(args, "verbose", False))
        return EXIT_ERROR
    finally:
        sys.stdout, sys.stderr = out, err


# C0 and C1 control characters but newline and tab: a name in a shared trace or model must not
# drive the terminal (move the cursor, retitle the window, hide what follows)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class _Printable:
    """A text stream that shows control characters as `\\x1b` escapes."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(_CONTROL.sub(lambda m: ascii(m.group())[1:-1], text))

    def __getattr__(self, name):
        return getattr(self.stream, name)


# ===== explore ================================================================================


def _file_program_options(program, compiler: str, args: argparse.Namespace) -> dict:
    """explore's options for a torch program read from a file (a `.pt2`): passlens's own
    compiler trusts none of its ops (a check refuses to run one not known to be pure unless
    `--trust-op`); another compiler runs the program as it explores (torch.compile) or
    checks, so it is refused up front when it calls an op that may not run."""
    if compiler == "passlens":
        return {"trust_source": False}
    from compiler.opaque import trusted_ops
    from explorer.trust import refuse_untrusted_program

    with trusted_ops(args.trust_op or ()):
        refuse_untrusted_program(program, str(args.model), allow_empty=False)
    return {}


def _explore(args: argparse.Namespace) -> int:
    import explorer
    from compiler.frontend.errors import UnsupportedOperatorError
    from compiler.passes import PipelineError, build_pipeline

    compiler = getattr(args, "compiler", "passlens")
    if compiler == "passlens":
        args.pipeline = "default" if args.pipeline is None else args.pipeline
        unknown = _unknown_pass_names(args.pipeline)
        if unknown:
            raise CLIError(unknown)
        try:
            build_pipeline(args.pipeline)  # a bad spec fails before the model is imported
        except PipelineError as e:
            raise CLIError(
                f"bad pipeline spec {args.pipeline!r}: {e} "
                "(`passlens passes` lists every pass and its options)"
            ) from None
    adapter = explorer.get_adapter(compiler)
    if not adapter.takes_pipeline and args.pipeline is not None:
        raise CLIError(f"--compiler {compiler} runs its own passes: give no --pipeline")
    options = _iree_options(args, compiler)  # before the model is read: its flags, its phase
    source, inputs = load_model(args.model, args.input_shape)
    try:
        adapter.refuse_source(source, str(args.model), flag="--compiler")
    except explorer.adapters.Unsupported as e:
        raise CLIError(str(e)) from None
    if adapter.needs_inputs and inputs is None:
        raise CLIError(
            f"--compiler {compiler} needs example inputs for {args.model}: --input-shape, or "
            "example args returned by model()"
        )
    if args.strict:
        options["strict"] = True
    from_file = Path(str(args.model)).suffix.lower() == ".pt2"  # a program read from a file
    if from_file:
        options.update(_file_program_options(source, compiler, args))
    try:
        trace = explorer.explore(
            source, inputs, pipeline=args.pipeline, compiler=compiler, **options
        )
    except ImportError as e:
        raise CLIError(f"cannot import {args.model}: missing {e.name or 'module'} ({e})") from None
    except UnsupportedOperatorError as e:  # every operator and where, on one line
        listed = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
        raise CLIError(f"cannot import {args.model}: {listed}") from None
    except Exception as e:
        raise CLIError(f"cannot import {args.model}: {_one_line(e)}") from None
    if from_file:  # whichever compiler: its reference run is guarded too
        trace.source_trusted = False
        if isinstance(trace.source, dict):
            trace.source["untrusted_program"] = True
    print(trace.summary_text())
    status = EXIT_OK
    failure = trace.failure
    if failure is not None:
        print(_failure_line(failure))
        status = EXIT_FINDINGS

    def save() -> None:
        if args.save:  # with the check's report, if any, and the inputs it ran on
            path = trace.save(args.save, inputs=True) or Path(args.save)
            print(f"saved the trace to {args.save} ({_size(Path(path))})")

    if trace.interrupted:  # Ctrl-C during the pipeline: what ran is kept, nothing more runs
        save()
        print("passlens: interrupted", file=sys.stderr)
        return 130
    report = None
    if args.check:  # before saving and the report: the file and the HTML hold the numerics
        try:
            report = trace.check(trace.example_inputs, trust_ops=args.trust_op)
        except BaseException as e:
            save()  # the trace is kept when the check cannot run (or is interrupted)
            if isinstance(e, ImportError):
                raise CLIError(_missing_feature("--check", e, ("explorer.check",))) from None
            raise
    save()
    if args.html:
        try:
            trace.to_html(args.html, report=report)
        except ImportError as e:
            raise CLIError(_missing_feature("--html", e, ("widgets.report", "widgets"))) from None
        print(f"wrote {args.html}")
    if report is not None:
        print(report)
        if not getattr(report, "ok", True):
            status = EXIT_FINDINGS
    return status


def _iree_options(args: argparse.Namespace, compiler: str) -> dict:
    """explore's options for `--compiler iree` (`flags`, each checked as the API checks
    it: explorer.iree.flags), and its phase checked; an MLIR file or a `--flag` with
    another compiler is one error."""
    flags = list(getattr(args, "flag", None) or ())
    if compiler != "iree":
        if flags:
            raise CLIError("--flag passes iree-compile flags: use it with --compiler iree")
        if Path(str(args.model)).suffix.lower() == ".mlir":
            raise CLIError(f"{args.model} is MLIR: explore it with --compiler iree")
        return {}
    from explorer.iree.flags import check_flags
    from explorer.iree.record import PIPELINES

    if args.pipeline is not None and args.pipeline not in PIPELINES:
        raise CLIError(
            f"bad --pipeline {args.pipeline[:60]!r} for --compiler iree: the phase to compile "
            f"to, one of {', '.join(PIPELINES)}"
        )
    try:
        return {"flags": check_flags(flags)} if flags else {}
    except ValueError as e:  # one flag refused: which and why
        raise CLIError(str(e)) from None


def _missing_feature(option: str, e: ImportError, modules: tuple[str, ...]) -> str:
    if e.name in modules:
        return f"{option} is not available in this passlens yet (no module {e.name})"
    return f"{option} needs {e.name or 'a module that is not installed'} ({e})"


def _failure_line(step) -> str:
    error = step.error
    what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    where = ""
    line = step.failed_line
    if line is not None:
        where = f" at `{step.text.splitlines()[line].strip()}`"
        if step.failed_function:
            where += f" in @{step.failed_function}"
    return f"pass #{step.index} {step.name} failed{where}: {what}"


def _size(path: Path) -> str:
    from explorer.fmt import format_bytes

    try:
        return format_bytes(path.stat().st_size)
    except OSError:
        return "?"


# ===== show, serve, demo ======================================================================


def _show(args: argparse.Namespace) -> int:
    from explorer.store import load

    trace = load(args.trace)
    if args.step is None and args.diff is None:
        print(
            f"{args.trace}: {len(trace)} steps, frontend {trace.frontend or '-'}, "
            f"pipeline {trace.pipeline or '-'}"
        )
        print(trace.summary_text())
        if trace.failure is not None:
            print(_failure_line(trace.failure))
        if trace.report is not None:  # the check saved with the trace: verdict and numbers
            print(trace.report)
        return EXIT_OK
    if args.step is not None:
        step = _step(trace, args.step)
        views = step.texts
        if args.view not in views:
            raise CLIError(
                f"step {step.index} ({step.name}) has no {args.view!r} text; it has "
                + ", ".join(repr(v) for v in views)
            )
        text = views[args.view]
        line = step.failed_line if args.view == "IR" else None
        if line is not None:
            lines = text.splitlines()
            lines[line] += "    # <-- the pass failed here"
            text = "\n".join(lines) + "\n"
        print(text, end="")
        if step.failed:
            print(_failure_line(step))
            if step.traceback:
                print(step.traceback, end="")
    if args.diff is not None:
        step = _step(trace, args.diff)
        try:
            d = step.diff()
        except ImportError as e:
            raise CLIError(_missing_feature("--diff", e, ("explorer.diff",))) from None
        except ValueError as e:  # the first step has nothing to diff with
            raise CLIError(str(e)) from None
        print(d)
        if d.text_diff:
            print(d.text_diff, end="")
            if d.text_diff_note:
                print(f"({d.text_diff_note})")
    return EXIT_OK


def _step(trace, key: str):
    try:
        return trace[int(key)] if key.lstrip("-").isdigit() else trace[key]
    except IndexError as e:  # the trace says which steps it has
        raise CLIError(str(e)) from None
    except KeyError as e:
        raise CLIError(str(e.args[0])) from None


def _serve(args: argparse.Namespace) -> int:
    from explorer.store import load

    trace = load(args.trace)
    try:
        from widgets.app import HostError, serve
    except ImportError as e:
        raise CLIError(_missing_feature("serve", e, ("widgets.app", "widgets", "panel"))) from None
    if not 0 <= args.port <= 65535:
        raise CLIError(f"bad port {args.port}: use 0 (a free port) to 65535")
    try:  # prints the URL, serves until Ctrl-C
        serve(trace, port=args.port, show=args.open, allow_host=args.allow_host)
    except HostError as e:  # a bad --allow-host: its message says which and why
        raise CLIError(str(e)) from None
    except OSError as e:
        error = port_error(args.port, e, option="--port 0")
        if error is None:
            raise
        raise CLIError(str(error)) from None
    return EXIT_OK


def _reduce(args: argparse.Namespace) -> int:
    from explorer.reduce import ReduceError, reduce
    from explorer.store import load

    if args.budget <= 0:
        raise CLIError(f"bad budget {args.budget:g}: give a number of seconds above 0")
    trace = load(args.trace, trust_ops=args.trust_op)
    print(f"checking {args.trace} ({len(trace)} steps) ...", file=sys.stderr)
    report = trace.check(trace.example_inputs)
    print(report.headline(), file=sys.stderr)
    try:
        reduction = reduce(report, args.finding, budget=args.budget, progress=True)
    except ReduceError as e:
        raise CLIError(str(e)) from None
    out = reduction.save(args.out)
    print(reduction)
    print(f"wrote {', '.join(reduction.files)} to {out}")
    return EXIT_OK


def _spec_names(spec: str) -> list[str]:
    """The pass or pipeline name of each top-level item of a spec (`a,b{x=1}` -> a, b)."""
    names, depth, cur = [], 0, []
    for ch in spec + ",":
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth <= 0:
            item = "".join(cur).strip()
            names.append(item.split("{", 1)[0].strip())
            cur = []
        else:
            cur.append(ch)
    return [n for n in names if n]


def _unknown_pass_names(spec: str) -> str | None:
    """A message naming every unknown pass name of `spec`, each with the names it is
    closest to, one short line each; None when every name is known."""
    import difflib

    from compiler.passes import PipelineError, all_passes, build_pipeline, named_pipelines

    known = [*named_pipelines(), *sorted(set(all_passes()) - {"sequential"})]
    unknown = []
    for name in dict.fromkeys(_spec_names(spec)):
        if name in known:
            continue
        try:
            build_pipeline(name)  # an alias (dce) is known too
        except PipelineError as e:
            if "unknown pass" in str(e):
                unknown.append(name)
        except Exception:  # noqa: S110 - a pass that needs options: its name is known
            pass
    if not unknown:
        return None
    lines = [
        f"bad pipeline spec: {len(unknown)} unknown pass name{'s' if len(unknown) > 1 else ''}"
    ]
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
        hint = f": did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        lines.append(f"  {name!r}{hint}")
    lines.append("`passlens passes` lists every pass and what it does.")
    return "\n".join(lines)


def _export_step(args: argparse.Namespace) -> int:
    return _export.run(args, step_of=_step, error=CLIError)


def _demo(args: argparse.Namespace) -> int:
    if getattr(args, "notebook", None):
        from passlens.demo import run_notebook

        return run_notebook(args.notebook, args.out)
    from passlens.demo import main as demo_main

    return int(demo_main(args.out) or 0)
