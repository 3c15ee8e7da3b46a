"""Coverage of the ONNX backend node tests: each test model through ``from_onnx`` and the
reference interpreter, compared with the expected outputs the way onnx's backend runner
compares them (same dtype and shape; floats within rtol 1e-3, atol 1e-7; others exact).

The onnx wheel no longer ships ``onnx/backend/test/data/node``; it ships the code that makes
it (``onnx.backend.test.case.node``). When the data is not installed it is generated once, in
the same layout (``<name>/model.onnx``, ``<name>/test_data_set_0/{input,output}_N.pb``), into
``build/onnx-node-tests-<onnx version>/`` (or ``$PASSLENS_CACHE``), about 20 s.

Each test ends as:

- passed: imported, ran, and every output matches;
- unsupported: the import stopped with UnsupportedOperatorError (an op, op version, attribute
  or input form passlens does not convert) or UnsupportedOnnxFeature (opset, dtype);
- failed: anything else (another import error, a run error, a wrong result).

The claimed subset is what passlens says it supports: models of ai.onnx opset 13 to 21 whose
every node (subgraphs included) is an op with a converter, and whose inputs, outputs and
initializers are tensors of a dtype the IR has (f16, bf16, f32, f64, i8, i16, i32, i64, u8,
bool). An op that has a converter counts in the claimed subset even for attribute values or
input forms the converter reports as unsupported: those count against the claimed rate.

The default output is the summary (short enough for BENCHMARKS.md); ``--ops`` adds a table
per op of the standard domain (the op a test is about: its one op, else the op its name starts
with), ``--causes`` every failed or unsupported test under its cause (the reason with node
names, shapes and error sizes left out), ``--details`` / ``--failed`` a line per test.

    .venv/bin/python bench/onnx_coverage.py [--filter SUBSTR] [--ops] [--causes]
                                            [--details] [--failed]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RTOL, ATOL = 1e-3, 1e-7


# ----- the test data ----------------------------------------------------------------------


def node_test_dir() -> Path:
    """The directory of node tests: the installed one when onnx ships it, else a generated
    cache (made on first use)."""
    import onnx

    shipped = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
    if shipped.is_dir() and any(shipped.iterdir()):
        return shipped
    root = Path(os.environ.get("PASSLENS_CACHE", REPO / "build"))
    cache = root / f"onnx-node-tests-{onnx.__version__}"
    if not (cache / "COMPLETE").exists():
        # generate beside it and rename, so concurrent runs never read a half-written cache
        partial = cache.with_name(f"{cache.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        generate_node_tests(partial)
        try:
            if cache.exists():
                shutil.rmtree(cache)
            os.replace(partial, cache)
        except OSError:  # another run got there first
            shutil.rmtree(partial, ignore_errors=True)
    return cache


def generate_node_tests(dest: Path) -> None:
    """Write every node test of the installed onnx into ``dest`` (onnx's layout), plus a
    ``tolerance.json`` per test with its rtol and atol."""
    from onnx import numpy_helper
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np_err = np.seterr(all="ignore")
        try:
            cases = node.collect_testcases(None)
        finally:
            np.seterr(**np_err)
    dest.mkdir(parents=True, exist_ok=True)
    for case in cases:
        out_dir = dest / case.name
        data_dir = out_dir / "test_data_set_0"
        data_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "model.onnx").write_bytes(case.model.SerializeToString())
        (out_dir / "tolerance.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol}))
        if not case.data_sets:
            continue
        inputs, outputs = case.data_sets[0]
        for kind, values, infos in (
            ("input", inputs, case.model.graph.input),
            ("output", outputs, case.model.graph.output),
        ):
            for j, value in enumerate(values):
                info = infos[j] if j < len(infos) else None
                proto = _to_proto(value, info, numpy_helper)
                if proto is not None:
                    (data_dir / f"{kind}_{j}.pb").write_bytes(proto.SerializeToString())
    (dest / "COMPLETE").write_text(f"{len(cases)} tests\n")


def _to_proto(value, info, numpy_helper):
    from onnx import TensorProto

    if isinstance(value, TensorProto):
        return value
    kind = info.type.WhichOneof("value") if info is not None else "tensor_type"
    try:
        if kind == "sequence_type":
            return numpy_helper.from_list(value, info.name)
        if kind == "optional_type":
            return numpy_helper.from_optional(value, info.name)
        if kind == "map_type":
            return numpy_helper.from_dict(value, info.name)
        return numpy_helper.from_array(np.asarray(value), info.name if info else "")
    except Exception:
        return None  # a value onnx cannot serialise: the test will fail to load, as upstream


@dataclass
class CaseData:
    """One node test: the model bytes, inputs, expected outputs and tolerances."""

    name: str
    model: bytes
    inputs: list
    outputs: list
    rtol: float = RTOL
    atol: float = ATOL


def load_case(case_dir: Path) -> CaseData:
    """Read a node test directory (a value of a sequence or optional graph input or output
    as the SequenceProto or OptionalProto it is)."""
    import onnx

    model_bytes = (case_dir / "model.onnx").read_bytes()
    graph = onnx.ModelProto.FromString(model_bytes).graph
    protos = {"sequence_type": onnx.SequenceProto, "optional_type": onnx.OptionalProto}

    def read(kind: str) -> list:
        values = []
        data_dir = case_dir / "test_data_set_0"
        infos = graph.input if kind == "input" else graph.output
        j = 0
        while (data_dir / f"{kind}_{j}.pb").exists():
            which = infos[j].type.WhichOneof("value") if j < len(infos) else None
            t = protos.get(which, onnx.TensorProto)()
            t.ParseFromString((data_dir / f"{kind}_{j}.pb").read_bytes())
            values.append(t)
            j += 1
        return values

    tol = {"rtol": RTOL, "atol": ATOL}
    if (case_dir / "tolerance.json").exists():
        tol = json.loads((case_dir / "tolerance.json").read_text())
    return CaseData(
        case_dir.name,
        model_bytes,
        read("input"),
        read("output"),
        tol["rtol"],
        tol["atol"],
    )


# ----- the claimed subset -----------------------------------------------------------------


def _graph_ops(graph) -> set[tuple[str, str]]:
    ops = set()
    for n in graph.node:
        ops.add((n.domain, n.op_type))
        for a in n.attribute:
            for g in [a.g] if a.type == 5 else list(a.graphs) if a.type == 10 else []:
                ops |= _graph_ops(g)
    return ops


def claim_of(model) -> tuple[bool, str]:
    """Whether a test model is in the claimed subset, and why not."""
    from compiler.frontend.onnx_context import DTYPES
    from compiler.frontend.onnx_frontend import CLAIMED_OPSETS
    from compiler.frontend.onnx_ops import CONVERTERS

    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if len(versions) != 1 or versions[0] not in CLAIMED_OPSETS:
        return False, f"opset {versions[0] if versions else 'none'}"
    for domain, op in sorted(_graph_ops(model.graph)):
        if domain not in ("", "ai.onnx") or op not in CONVERTERS:
            return False, f"op {domain + '.' if domain else ''}{op}"
    g = model.graph
    for vi in list(g.input) + list(g.output):
        kind = vi.type.WhichOneof("value")
        if kind != "tensor_type":
            return False, f"{kind} value"
        if vi.type.tensor_type.elem_type not in DTYPES:
            return False, "dtype"
    for t in g.initializer:
        if t.data_type not in DTYPES:
            return False, "dtype"
    return True, ""


# ----- which op a test is about -----------------------------------------------------------


def _snake(name: str) -> str:
    """ReduceSum -> reduce_sum, DFT -> dft, LpNormalization -> lp_normalization."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


_NAME_KEYS: list[tuple[str, str]] | None = None
_NAME_ALIASES = {  # test names that abbreviate their op
    "mvn": "MeanVarianceNormalization",
    "nllloss": "NegativeLogLikelihoodLoss",
    "sce": "SoftmaxCrossEntropyLoss",
}


def _name_keys() -> list[tuple[str, str]]:
    """(test-name prefix, op) for every op of the standard domain, longest first."""
    global _NAME_KEYS
    if _NAME_KEYS is None:
        import onnx

        keys = set(_NAME_ALIASES.items())
        for schema in onnx.defs.get_all_schemas():
            if schema.domain == "":
                keys |= {(_snake(schema.name), schema.name), (schema.name.lower(), schema.name)}
        _NAME_KEYS = sorted(keys, key=lambda k: -len(k[0]))
    return _NAME_KEYS


def _op_by_name(name: str, among: set[str] | None = None) -> str | None:
    rest = name[len("test_") :] if name.startswith("test_") else name
    for key, op in _name_keys():
        if among is not None and op not in among:
            continue
        if rest.startswith(key) and (len(rest) == len(key) or not rest[len(key)].isalpha()):
            return op
    return None


OTHER_DOMAINS = "(other domains)"


def op_of(name: str, model) -> str:
    """The standard-domain op a node test is about: the model's one op (Constant aside), else
    the op its name starts with (``test_reduce_sum_...``, ``test_hannwindow_expanded``);
    ``(other domains)`` for a test of an op of another domain."""
    ops = {(n.domain, n.op_type) for n in model.graph.node}
    standard = {op for domain, op in ops if domain in ("", "ai.onnx")}
    other = len(standard) < len(ops)
    if len(standard) > 1:
        standard.discard("Constant")
    if len(standard) == 1 and not other:
        return next(iter(standard))
    return (
        _op_by_name(name, standard)
        or _op_by_name(name)
        or (OTHER_DOMAINS if other else "(several ops)")
    )


# ----- running ----------------------------------------------------------------------------


@dataclass
class CaseResult:
    """The outcome of one node test."""

    name: str
    status: str  # passed, failed, unsupported
    claimed: bool
    opset: int
    message: str = ""
    seconds: float = 0.0
    op: str = ""  # the op the test is about (op_of)


def _value(proto):
    """A TensorProto as an array, a SequenceProto as a tuple, an OptionalProto as its value
    or None (how ``compiler.interpret.run`` takes and gives them)."""
    import onnx
    from onnx import numpy_helper

    if isinstance(proto, onnx.SequenceProto):
        return tuple(numpy_helper.to_list(proto))
    if isinstance(proto, onnx.OptionalProto):
        value = numpy_helper.to_optional(proto)
        return tuple(value) if isinstance(value, list) else value
    return numpy_helper.to_array(proto) if isinstance(proto, onnx.TensorProto) else proto


def example_inputs(model, inputs: list) -> dict | None:
    """What ``from_onnx(example_inputs=)`` needs of a test's inputs: the values of its sequence
    and optional graph inputs (their lengths and presence); None when it has none."""
    examples = {
        vi.name: _value(t)
        for vi, t in zip(model.graph.input, inputs, strict=False)
        if vi.type.WhichOneof("value") in ("sequence_type", "optional_type")
    }
    return examples or None


def _compare(got: tuple, expected: list, rtol: float, atol: float, what: str = "") -> str:
    """ "" when the outputs match, else what differs."""
    if len(got) != len(expected):
        return f"{len(got)} {what or 'outputs'}, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        e = _value(e)
        if e is None or isinstance(e, tuple):  # an empty optional (an empty tuple); a sequence
            if not isinstance(g, (tuple, list)):
                return f"output {i} is not a sequence or optional"
            inner = _compare(tuple(g), list(e or ()), rtol, atol, f"tensors in output {i}")
            if inner:
                return inner
            continue
        g = np.asarray(g)
        if g.shape != e.shape:
            return f"output {i} has shape {g.shape}, expected {e.shape}"
        if g.dtype != e.dtype:
            return f"output {i} has dtype {g.dtype}, expected {e.dtype}"
        if e.dtype.kind in "fV" or e.dtype.name == "bfloat16":
            tol = max(rtol, 2**-6) if e.dtype.name == "bfloat16" else rtol
            gf, ef = g.astype(np.float64), e.astype(np.float64)
            if not np.allclose(gf, ef, rtol=tol, atol=atol, equal_nan=True):
                err = np.nanmax(np.abs(gf - ef)) if gf.size else 0.0
                return f"output {i} differs (max abs error {err:.3g})"
        elif not np.array_equal(g, e):
            return f"output {i} differs"
    return ""


def run_case(case_dir: Path) -> CaseResult:
    """Import and run one node test."""
    import onnx

    from compiler.frontend import UnsupportedOperatorError, from_onnx
    from compiler.frontend.onnx_frontend import UnsupportedOnnxFeature
    from compiler.interpret import run

    start = time.perf_counter()
    data = load_case(case_dir)
    model = onnx.ModelProto()
    model.ParseFromString(data.model)
    claimed, _ = claim_of(model)
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    opset = versions[0] if versions else 0
    op = op_of(data.name, model)

    def result(status: str, message: str = "") -> CaseResult:
        seconds = time.perf_counter() - start
        return CaseResult(data.name, status, claimed, opset, message, seconds, op)

    try:
        # strict: the coverage counts what passlens converts, not what onnxruntime runs for it
        module = from_onnx(
            data.model, example_inputs=example_inputs(model, data.inputs), strict=True
        )
    except (UnsupportedOperatorError, UnsupportedOnnxFeature) as e:
        return result("unsupported", str(e).splitlines()[-1].strip())
    except Exception as e:
        return result("failed", f"import: {type(e).__name__}: {str(e).splitlines()[0]}")
    try:
        inputs = [_value(t) for t in data.inputs]
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = run(module, *inputs)
    except Exception as e:
        lines = str(e).splitlines()
        return result("failed", f"run: {type(e).__name__}: {lines[0] if lines else ''}")
    problem = _compare(got, data.outputs, data.rtol, data.atol)
    return result("failed" if problem else "passed", problem)


def run_all(filter_text: str = "") -> list[CaseResult]:
    """Run every node test whose name contains ``filter_text``."""
    root = node_test_dir()
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and filter_text in d.name)
    return [run_case(d) for d in dirs]


def summary(results: list[CaseResult]) -> dict[str, Counter]:
    """Counts of passed / failed / unsupported, overall and for the claimed subset."""
    return {
        "overall": Counter(r.status for r in results),
        "claimed": Counter(r.status for r in results if r.claimed),
    }


def by_op(results: list[CaseResult]) -> dict[str, Counter]:
    """Counts of passed / failed / unsupported per op (op_of), sorted by op."""
    table: dict[str, Counter] = {}
    for r in results:
        table.setdefault(r.op, Counter())[r.status] += 1
    return dict(sorted(table.items(), key=lambda kv: (kv[0].startswith("("), kv[0].lower())))


def cause_of(result: CaseResult) -> str:
    """The one-line cause of a failed or unsupported test: its reason without the node names,
    shapes and error sizes that differ between tests of one cause."""
    msg = result.message.split("  used at")[0].strip()
    msg = re.sub(r"node .*? \((\w+)\): ", r"\1: ", msg)  # node #0 (DFT) (DFT): -> DFT:
    msg = re.sub(r"while executing .*? from (\w+): ", r"in \1: ", msg)
    msg = re.sub(r"output \d+ (differs|has)", r"an output \1", msg)
    msg = re.sub(r" \(max abs error [^)]*\)", "", msg)
    msg = re.sub(r"shape \([^)]*\), expected \([^)]*\)", "another shape than expected", msg)
    return f"{result.status}: {msg}" if msg else result.status


def by_cause(results: list[CaseResult]) -> dict[str, list[CaseResult]]:
    """Failed and unsupported tests grouped by cause, the most common cause first."""
    groups: dict[str, list[CaseResult]] = {}
    for r in results:
        if r.status != "passed":
            groups.setdefault(cause_of(r), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))


def _op_table(results: list[CaseResult]) -> list[str]:
    lines = [
        "| op | tests | passed | failed | unsupported |",
        "|----|------:|-------:|-------:|------------:|",
    ]
    for op, c in by_op(results).items():
        total = sum(c.values())
        lines.append(f"| {op} | {total} | {c['passed']} | {c['failed']} | {c['unsupported']} |")
    return lines


def _line(label: str, counts: Counter) -> str:
    total = sum(counts.values())
    passed = counts["passed"]
    rate = 100.0 * passed / total if total else 0.0
    return (
        f"{label:<10} {total:5d} tests: {passed:5d} passed ({rate:5.1f}%), "
        f"{counts['failed']:4d} failed, {counts['unsupported']:4d} unsupported"
    )


def main(argv: list[str] | None = None) -> None:
    """Print the coverage figures (and, with --details, each failure)."""
    import onnx

    from compiler.frontend.onnx_ops import supported_ops

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--filter", default="", help="only tests whose name contains this")
    parser.add_argument("--details", action="store_true", help="list failed and unsupported")
    parser.add_argument("--failed", action="store_true", help="list failed tests only")
    parser.add_argument("--ops", action="store_true", help="a table per op (markdown)")
    parser.add_argument(
        "--causes", action="store_true", help="failed and unsupported tests grouped by cause"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = run_all(args.filter)
    elapsed = time.perf_counter() - start
    counts = summary(results)
    print(
        f"ONNX backend node tests (onnx {onnx.__version__}), {len(supported_ops())} ONNX ops "
        f"with converters"
    )
    print(_line("overall", counts["overall"]))
    print(_line("claimed", counts["claimed"]))
    print("  claimed = ai.onnx opset 13-21, every op converted by passlens, IR dtypes only")
    print(
        f"{elapsed:.1f} s on {platform.machine()} ({os.cpu_count()} cores), "
        f"Python {platform.python_version()}"
    )
    if args.details or args.failed:
        for r in results:
            if r.status == "failed" or (args.details and r.status == "unsupported"):
                mark = "*" if r.claimed else " "
                print(f"{mark} {r.status:<11} {r.name}: {r.message}")
    if args.ops:
        print()
        print("\n".join(_op_table(results)))
    if args.causes:
        for cause, cases in by_cause(results).items():
            print(f"\n{cause} ({len(cases)})")
            for r in cases:  # the message only where it says more than the cause
                message = r.message.split("  used at")[0]
                detail = "" if cause == f"{r.status}: {message}" else f": {message}"
                print(f"  {'*' if r.claimed else ' '} {r.name}{detail}")
    if not args.details and not args.failed and not args.causes:
        groups = by_cause(results)
        print(f"most common causes ({len(groups)} in all; --causes lists them with their tests):")
        for cause, cases in list(groups.items())[:15]:
            print(f"  {len(cases):4d}  {cause}")
    print("command:", shlex.join([".venv/bin/python", "bench/onnx_coverage.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
