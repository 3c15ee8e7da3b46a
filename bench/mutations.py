"""Do the tests catch a broken detector? A list of hand-picked one-line mutations of the
check's detectors and tolerances, explorer's diff, the widgets' escaping, fold-constant and
the rewrite rules and guards of the other passes (caught by their RuleCases / KeepCases);
each is applied to a temporary copy of the repository, the tests that should catch it are
run, and it is reported killed (a test failed) or survived. Run on demand, never in CI.

    .venv/bin/python bench/mutations.py [--only ID ...] [--list] [--full] [--keep]

``--full`` runs the whole test suite (not only the relevant tests) on each survivor. The copy
is made once under /tmp (the files git knows, plus untracked ones not ignored) and each
mutation is undone after its run. A mutation whose line is no longer in its file is reported
``stale`` and not scored (the code moved: update the list).

Goal (issue #21): at least 90% of the mutations killed; since issue 39, every one (the exit
status is 1 when any survives or is stale). A survivor gets a test that fails on it and stays
in the list; a stale one is updated to where its line went.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHECK_TESTS = (
    "tests/explorer/check/test_check_thresholds.py",
    "tests/explorer/check/test_check.py",
    "tests/explorer/check/test_check_registry.py",
)
DIFF_TESTS = ("tests/explorer/test_diff.py",)
ESCAPE_TESTS = (
    "tests/widgets/test_untrusted.py",
    "tests/widgets/test_render.py",
    "tests/widgets/test_tables.py",
    "tests/explorer/test_diff.py",
)
FOLD_TESTS = ("tests/compiler/passes/test_fold_constant.py",)
# the Before/Expected tables: every pass's test_<pass>.py that holds CASES (a mutation of one
# pass may be caught by the cases of another built on it, a replica's)
RULE_TESTS = tuple(
    sorted(
        str(p.relative_to(ROOT))
        for p in Path(ROOT, "tests/compiler/passes").rglob("test_*.py")
        if "\nCASES = " in p.read_text()
    )
)
FLOAT64_TESTS = (*CHECK_TESTS, "tests/explorer/check/test_check_float64.py")
# the float64 rule's direct tests, without the 2048-wide decoder's (which also kill these)
FLOAT64_FAST_TESTS = (
    "tests/explorer/check/test_check_float64.py::test_the_float64_run_multiplies_by_the_weight_transposed",
    "tests/compiler/ops/test_matmul_blocks.py",
)
TIE_TESTS = (
    "tests/explorer/check/test_check_ties.py",
    "tests/explorer/check/test_check_tied_weights.py",
)
OPAQUE_TESTS = (
    "tests/compiler/opaque/test_opaque.py",
    "tests/explorer/passlens/test_opaque_explore.py",
)
MEMO_TESTS = ("tests/explorer/passlens/test_check_memo.py", *CHECK_TESTS)


@dataclass(frozen=True)
class Mutation:
    id: str
    path: str
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]
    why: str = ""


M = Mutation
BLOAT = "explorer/check/detectors/param_bloat.py"
FACTS = "explorer/check/facts.py"
DIVERGED = "explorer/check/detectors/diverged.py"
NUMBERS = "explorer/check/numbers.py"
TRACE = "explorer/trace.py"
CHECK = "explorer/check/__init__.py"
SHAPE = "explorer/check/detectors/shape_mismatch.py"
SIG = "explorer/check/detectors/signature_changed.py"
PASS_FAILED = "explorer/check/detectors/pass_failed.py"
RUN_FAILED = "explorer/check/detectors/run_failed.py"
DIFF = "explorer/diff.py"
ESC = "widgets/escape.py"
FOLD = "compiler/passes/fold_constant.py"
D2S = "compiler/passes/dynamic_to_static.py"
DECOMPOSE = "compiler/passes/decompose_ops.py"
DTYPE = "compiler/passes/convert_dtype.py"
LAYOUT = "compiler/passes/convert_layout.py"
INLINE = "compiler/passes/inline_private_functions.py"
FUSE = "compiler/passes/fuse_ops.py"
LIFT = "compiler/passes/lift_transform_params.py"
LAZY = "compiler/passes/lazy_transform_params.py"
JUDGE = "explorer/check/judge.py"
OPAQUE_RUN = "compiler/opaque/run.py"

MUTATIONS: list[Mutation] = [
    # ----- param-bloat
    M(
        "bloat-and",
        BLOAT,
        "bloat_min_bytes or after <=",
        "bloat_min_bytes and after <=",
        CHECK_TESTS,
        "issue #21: size condition `and` instead of `or`",
    ),
    M(
        "bloat-threshold-0",
        FACTS,
        "BLOAT_THRESHOLD = 0.10",
        "BLOAT_THRESHOLD = 0.0",
        CHECK_TESTS,
        "issue #21: growth threshold 0",
    ),
    M(
        "bloat-threshold-0.2",
        FACTS,
        "BLOAT_THRESHOLD = 0.10",
        "BLOAT_THRESHOLD = 0.2",
        CHECK_TESTS,
    ),
    M("bloat-floor-0", FACTS, "BLOAT_MIN_BYTES = 1024", "BLOAT_MIN_BYTES = 0", CHECK_TESTS),
    M("bloat-floor-2048", FACTS, "BLOAT_MIN_BYTES = 1024", "BLOAT_MIN_BYTES = 2048", CHECK_TESTS),
    M("bloat-floor-le", BLOAT, "delta < facts.options", "delta <= facts.options", CHECK_TESTS),
    M("bloat-threshold-lt", BLOAT, "after <= before * (", "after < before * (", CHECK_TESTS),
    M(
        "bloat-no-children-guard",
        BLOAT,
        "if facts.run is None and step.children:",
        "if False:",
        CHECK_TESTS,
    ),
    # ----- diverged and the tolerances
    M(
        "trace-rtol-1e-1",
        TRACE,
        "rtol: float = 1e-4,",
        "rtol: float = 1e-1,",
        CHECK_TESTS,
        "issue #21: Trace.check's default rtol raised",
    ),
    M(
        "check-rtol-1e-1",
        CHECK,
        "rtol: float = 1e-4,",
        "rtol: float = 1e-1,",
        CHECK_TESTS,
        "issue #21: check()'s default rtol raised",
    ),
    M("trace-rtol-1e-5", TRACE, "rtol: float = 1e-4,", "rtol: float = 1e-5,", CHECK_TESTS),
    M("trace-atol-1e-3", TRACE, "atol: float = 1e-5,", "atol: float = 1e-3,", CHECK_TESTS),
    M("check-atol-1e-3", CHECK, "atol: float = 1e-5,", "atol: float = 1e-3,", CHECK_TESTS),
    M("check-atol-1e-6", CHECK, "atol: float = 1e-5,", "atol: float = 1e-6,", CHECK_TESTS),
    M(
        "tolerance-no-rel",
        NUMBERS,
        "np.count_nonzero(diff > atol + rtol * scale)",
        "np.count_nonzero(diff > atol + rtol)",
        CHECK_TESTS,
    ),
    M(
        "tolerance-ge",
        NUMBERS,
        "np.count_nonzero(diff > atol + rtol * scale)",
        "np.count_nonzero(diff >= 0.5 * (atol + rtol * scale))",
        CHECK_TESTS,
    ),
    M(
        "nan-as-same",
        NUMBERS,
        "same = (a64 == r64) | (np.isnan(a64) & np.isnan(r64))",
        "same = (a64 == r64) | (np.isnan(a64) | np.isnan(r64))",
        CHECK_TESTS,
    ),
    M(
        "diverged-every-step",
        DIVERGED,
        "if run is None or not run.diverged or cmp is None:",
        "if run is None or cmp is None:",
        CHECK_TESTS,
    ),
    M(
        "diverged-not-again",
        DIVERGED,
        "and allclose(run.outputs, before.outputs,",
        "or allclose(run.outputs, before.outputs,",
        CHECK_TESTS,
    ),
    M(
        "diverged-no-node",
        DIVERGED,
        "[errors[0].node] if errors else [],",
        "[],",
        CHECK_TESTS,
    ),
    # ----- the other detectors
    M("shape-every-step", SHAPE, "if id(mm.node) not in seen:", "if True:", CHECK_TESTS),
    M("shape-no-status", SHAPE, 'facts.check.status = "shape-mismatch"', "pass", CHECK_TESTS),
    M(
        "signature-flipped",
        SIG,
        "if before.convention == run.convention:",
        "if before.convention != run.convention:",
        CHECK_TESTS,
    ),
    M(
        "pass-failed-parents",
        PASS_FAILED,
        "if not step.failed or step.children:",
        "if not step.failed:",
        CHECK_TESTS,
    ),
    M(
        "run-failed-every-step",
        RUN_FAILED,
        "or (before is not None and before.error is not None)",
        "or False",
        CHECK_TESTS,
    ),
    # ----- explorer's diff
    M("diff-op-flipped", DIFF, "if na.op != nb.op:", "if na.op == nb.op:", DIFF_TESTS),
    M("diff-attrs-ignored", DIFF, "if na.attrs != nb.attrs:", "if False:", DIFF_TESTS),
    M("diff-inputs-ignored", DIFF, "if mapped != list(ins_a):", "if False:", DIFF_TESTS),
    M("diff-removed-flipped", DIFF, "if nid not in matched_a]", "if nid in matched_a]", DIFF_TESTS),
    M("diff-added-flipped", DIFF, "if nid not in matches]", "if nid in matches]", DIFF_TESTS),
    M("diff-signature-params", DIFF, "if a.params != b.params:", "if False:", DIFF_TESTS),
    M(
        "diff-html-unescaped",
        DIFF,
        'f"<li><code>{html.escape(x)}</code></li>"',
        'f"<li><code>{x}</code></li>"',
        DIFF_TESTS + ESCAPE_TESTS,
    ),
    # ----- the widgets' escaping
    M(
        "esc-none",
        ESC,
        'return html.escape(_CONTROL.sub("\\ufffd", text), quote=True)',
        "return text",
        ESCAPE_TESTS,
    ),
    M(
        "esc-no-quotes",
        ESC,
        'html.escape(_CONTROL.sub("\\ufffd", text), quote=True)',
        'html.escape(_CONTROL.sub("\\ufffd", text), quote=False)',
        ESCAPE_TESTS,
    ),
    M(
        "esc-control-kept",
        ESC,
        '_CONTROL.sub("\\ufffd", text)',
        "text",
        ESCAPE_TESTS,
    ),
    M(
        "esc-limit-off-by-one",
        "widgets/bounds.py",
        "    if len(text) <= limit:\n        return text\n    return text[:limit] + more_note",
        "    if len(text) <= limit:\n        return text\n    return text[: limit + 1] + more_note",
        ESCAPE_TESTS + ("tests/widgets/test_untrusted_bounds.py",),
    ),
    M("json-script-lt", ESC, 'text.replace("<", "\\\\u003c")', "text", ESCAPE_TESTS),
    # ----- fold-constant
    M(
        "fold-tuple-item",
        FOLD,
        "return field if isinstance(field, Constant) else None",
        "return None",
        FOLD_TESTS,
        "issue #21: %t[0] of a tuple literal no longer folded",
    ),
    M(
        "fold-symbolic-guard",
        FOLD,
        " or any(_has_symbols(v) for v in node.attrs.values())",
        "",
        FOLD_TESTS,
        "issue #21: the guard against symbolic attributes removed",
    ),
    M(
        "fold-symbolic-tuple",
        FOLD,
        "return isinstance(value, tuple) and any(_has_symbols(v) for v in value)",
        "return False",
        FOLD_TESTS,
    ),
    M("fold-max-bytes-ge", FOLD, "if size > max_bytes:", "if size >= max_bytes:", FOLD_TESTS),
    M(
        "fold-data-growth-1",
        FOLD,
        "DATA_DEPENDENT_GROWTH = 64",
        "DATA_DEPENDENT_GROWTH = 1",
        FOLD_TESTS,
    ),
    M(
        "fold-any-constant",
        FOLD,
        "not all(isinstance(a, Constant) for a in node.args)",
        "not any(isinstance(a, Constant) for a in node.args)",
        FOLD_TESTS,
    ),
    M(
        "fold-tuple-nonconst",
        FOLD,
        "return field if isinstance(field, Constant) else None",
        "return field",
        FOLD_TESTS,
    ),
    M("fold-name", FOLD, 'base = f"{base}.{node.op}" if base', "base = base if base", FOLD_TESTS),
    # ----- the rules and guards of the other passes (their tests/compiler/passes/test_<pass>.py)
    M(
        "d2s-both-branches",
        D2S,
        "return taken is node.then_branch, taken is node.else_branch",
        "return True, True",
        RULE_TESTS,
        "SEEDS item 3: the branch a folded If drops is rewritten too (and fails)",
    ),
    M(
        "d2s-symbolic-shape-of",
        D2S,
        "return isinstance(node.args[0].ty, TensorType) and node.args[0].ty.is_static",
        "return isinstance(node.args[0].ty, TensorType)",
        RULE_TESTS,
        "shape_of a symbolic shape folded",
    ),
    M(
        "d2s-float-folded",
        D2S,
        'if not isinstance(ty, TensorType) or not (ty.dtype.is_int or ty.dtype.name == "bool"):',
        "if not isinstance(ty, TensorType):",
        RULE_TESTS,
        "float data folded as if it were a shape",
    ),
    M(
        "decompose-symbolic-scale",
        DECOMPOSE,
        "if not isinstance(features, int):",
        "if False:",
        RULE_TESTS,
    ),
    M("decompose-bn-no-unsqueeze", DECOMPOSE, "if axis < rank - 1:", "if False:", RULE_TESTS),
    M(
        "dtype-no-cast-back",
        DTYPE,
        "final = output if fired is None else fired[1]",
        "final = output",
        RULE_TESTS,
        "convert-dtype changes the signature's result dtype",
    ),
    M(
        "dtype-weight-in-place",
        DTYPE,
        "kind(Constant, lambda k, c: k.name is None and k.ty.dtype is c.frm)",
        "kind(Constant, lambda k, c: k.ty.dtype is c.frm)",
        RULE_TESTS,
    ),
    M(
        "amp-no-cast-back",
        DTYPE,
        "return cast_to(result, node.ty)  # the rest",
        "return result  # the rest",
        RULE_TESTS,
    ),
    M(
        "layout-moves-any-permute",
        LAYOUT,
        "return _is_permute(e) and e.prov.pass_name == PASS_NAME",
        "return _is_permute(e)",
        RULE_TESTS,
        "convert-layout moves permutes it did not make",
    ),
    M(
        "layout-sinks-past-data",
        LAYOUT,
        "elif arank <= rank and _from_constants(a, memo):",
        "elif arank <= rank:",
        RULE_TESTS,
    ),
    M(
        "inline-unknown-dims",
        INLINE,
        "                    dims = None  # a callee symbol",
        "                    pass  # a callee symbol",
        RULE_TESTS,
    ),
    M(
        "fuse-not-into-reduce",
        FUSE,
        "m.own <= BC and (m.dom <= INJ or m.dom == RED)",
        "m.own <= BC and m.dom <= INJ",
        RULE_TESTS,
    ),
    M(
        "lift-constant-only",
        LIFT,
        "            const_only.add(id(node))",
        "            lifted.add(id(node))",
        RULE_TESTS,
    ),
    M(
        "lazy-no-split",
        LAZY,
        "        split = out_node",
        "        split = None",
        RULE_TESTS,
        "docs/bugs.md bug 5: a returned tuple made by a call",
    ),
    M(
        "lazy-set-twice",
        LAZY,
        "do_store = store and not is_stored(fn)",
        "do_store = store",
        RULE_TESTS,
    ),
    # ----- issue 31: four mutations the suite let pass
    M(
        "reduce-oracle-any-error",
        "explorer/passlens/reduce/oracle.py",
        "if f.kind == self.kind and f.step.index in inside and _extra(f) == self.extra",
        "if f.kind == self.kind and f.step.index in inside",
        ("tests/explorer/reduce/test_reduce.py",),
        "reduction shrinks to a finding of the same kind with another error type or op",
    ),
    M(
        "tvm-run-bound-params-take-weights",
        "explorer/tvm/run.py",
        "takes_weights = num_input is not None and num_input < len(main.params)",
        "takes_weights = num_input is not None and num_input <= len(main.params)",
        ("tests/explorer/tvm/test_tvm_run.py",),
        "every step after BindParams reported run-failed",
    ),
    M(
        "match-provenance-no-tie-break",
        "explorer/matching.py",
        "cands.sort(key=partial(self._agreement, self.mapped_inputs(bid)), reverse=True)",
        "pass",
        DIFF_TESTS,
        "two same-op nodes of one layer matched crosswise",
    ),
    M(
        "report-inputs-cap-per-input",
        "explorer/store/checks.py",
        "total += max(nbytes, 0)",
        "total = max(nbytes, 0)",
        ("tests/explorer/store/test_store.py",),
        "a file brings any number of inputs each under the cap",
    ),
    # ----- issue 39 item 6: the survivors of 25 mutations, each a bug a user would see
    M(
        "float64-nan-agrees",
        JUDGE,
        "same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))",
        "same = (a64 == b64) | (np.isnan(a64) | np.isnan(b64))",
        FLOAT64_TESTS,
        "issue 39 (a): a NaN where float64 has a number judged as agreeing",
    ),
    M(
        "float64-nan-distance-0",
        JUDGE,
        "d = np.where(same, 0.0, np.where(np.isnan(d), np.inf, d))",
        "d = np.where(same, 0.0, np.where(np.isnan(d), 0.0, d))",
        FLOAT64_TESTS,
        "issue 39 (a): a NaN against a number at distance 0 from float64",
    ),
    M(
        "float64-infinite-allowance",
        JUDGE,
        "if not math.isfinite(reference_error):",
        "if False:",
        FLOAT64_TESTS,
        "issue 39 (b): an infinite allowance passes every value",
    ),
    M(
        "float64-last-output-decides",
        NUMBERS,
        "wrong = wrong or j.wrong",
        "wrong = j.wrong",
        FLOAT64_TESTS,
        "issue 39 (c): of several outputs beyond tolerance only the last one's verdict counts",
    ),
    M(
        "ties-shown-step-untied",
        "explorer/check/runner.py",
        "cmp = self._judge(run.judged if run.judged is not None else run.outputs)",
        "cmp = self._judge(run.outputs)",
        TIE_TESTS,
        "issue 39 (d): a step showing an earlier step's module judged without the ties",
    ),
    M(
        "diverged-message-reference-error",
        DIVERGED,
        "where {ref.name} is {num(j.reference_error)}, over",
        "where {ref.name} is {num(j.error)}, over",
        FLOAT64_TESTS,
        "issue 39 (e): the step's error printed as the reference's distance from float64",
    ),
    M(
        "opaque-onnx-outputs-ignored",
        OPAQUE_RUN,
        'positions = list(attrs["outputs"]) if attrs.get("outputs") else list(range(len(fields)))',
        "positions = list(range(len(fields)))",
        OPAQUE_TESTS,
        "issue 39 (f): an opaque ONNX op keeping output 1 of its node returns output 0",
    ),
    M(
        "opaque-onnx-output-slot",
        OPAQUE_RUN,
        'outputs[p] = f"out{k}"',
        'outputs[k] = f"out{k}"',
        OPAQUE_TESTS,
        "issue 39 (f): the k-th kept output named at slot k, not at its position",
    ),
    M(
        "tvm-strict-not-ignored",
        "explorer/tvm/adapter.py",
        'ignored_options = ("strict",)',
        "ignored_options = ()",
        ("tests/explorer/tvm/test_tvm.py", "tests/explorer/test_adapters.py"),
        "issue 39 (g): explore(..., compiler='tvm', strict=True) raises TypeError",
    ),
    M(
        "adapter-options-not-dropped",
        "explorer/adapters.py",
        "            options.pop(key, None)",
        "            pass",
        ("tests/explorer/tvm/test_tvm.py", "tests/explorer/test_adapters.py"),
        "issue 39 (g): the adapters hand on the options they ignore",
    ),
    M(
        "passlens-check-options-dropped",
        "explorer/passlens/check.py",
        "return Checker(trace, inputs, options, Interpreter()).run()",
        "return Checker(trace, inputs, type(options)(), Interpreter()).run()",
        ("tests/explorer/test_adapters.py",),
        "issue 40: the passlens adapter drops the check's options",
    ),
    M(
        "tvm-check-options-dropped",
        "explorer/tvm/check.py",
        "return Checker(trace, inputs, options, TVMStepRunner()).run()",
        "return Checker(trace, inputs, type(options)(), TVMStepRunner()).run()",
        ("tests/explorer/tvm/test_tvm.py",),
        "issue 40: the TVM adapter drops the check's options",
    ),
    M(
        "inductor-check-options-dropped",
        "explorer/inductor/check.py",
        "return Checker(trace, inputs, options, InductorStepRunner(trace)).run()",
        "return Checker(trace, inputs, type(options)(), InductorStepRunner(trace)).run()",
        ("tests/explorer/inductor/test_inductor.py",),
        "issue 40: the Inductor adapter drops the check's options",
    ),
    M(
        "check-bloat-options-dropped",
        "explorer/check/__init__.py",
        "        rtol, atol, bloat_threshold, bloat_min_bytes, reference, progress, trust_ops",
        "        rtol, atol, reference=reference, progress=progress, trust_ops=trust_ops",
        ("tests/explorer/test_adapters.py",),
        "issue 40: explorer.check.check drops the param-bloat thresholds",
    ),
    M(
        "inductor-strict-not-ignored",
        "explorer/inductor/adapter.py",
        'ignored_options = ("strict",)',
        "ignored_options = ()",
        ("tests/explorer/inductor/test_inductor.py",),
        "issue 39 (g): explore(..., compiler='inductor', strict=True) raises TypeError",
    ),
    M(
        "inductor-last-node",
        "explorer/inductor/check.py",
        "f.nodes = [errors[0].node]",
        "f.nodes = [errors[-1].node]",
        ("tests/explorer/inductor/test_inductor.py",),
        "issue 39 (h): an Inductor finding marks the last differing node, not the first",
    ),
    M(
        "reduce-earlier-failure-allowed",
        "explorer/passlens/reduce/oracle.py",
        "if hits and self.first and any(",
        "if False and any(",
        ("tests/explorer/reduce/test_reduce.py",),
        "issue 39 (i): reduce ends on a case where another failure comes first",
    ),
    M(
        "reduce-never-first",
        "explorer/passlens/reduce/oracle.py",
        "first = not any(f.step.index < finding.step.index for f in report.failures)",
        "first = False",
        ("tests/explorer/reduce/test_reduce.py",),
        "issue 39 (i): the first failure reduced as if others came before it",
    ),
    M(
        "memo-key-no-attrs",
        "explorer/passlens/memo.py",
        "return (node.op, attrs, node.ty, *map(id, operands))",
        "return (node.op, node.ty, *map(id, operands))",
        MEMO_TESTS,
        "issue 39 (j): a value reused for an op with other attributes (was killed only by the "
        "2048-wide decoder)",
    ),
    M(
        "float64-linear-untransposed",
        "explorer/check/references.py",
        "matmul_float64(x.numpy(), w.detach().numpy().T)",
        "matmul_float64(x.numpy(), w.detach().numpy())",
        FLOAT64_FAST_TESTS,
        "issue 39 (k): the float64 run's linear by the weight, not its transpose (was killed "
        "only by the 2048-wide decoder)",
    ),
    # ----- issue 39: what runs untrusted (the allowlist, trust, programs, the server)
    M(
        "allow-check-skipped",
        "compiler/opaque/allow.py",
        "    why = refusal(framework, target)\n    if why is not None:",
        "    why = refusal(framework, target)\n    if False:",
        ("tests/compiler/opaque/test_allow.py",),
        "check_allowed lets every op run",
    ),
    M(
        "trust-any-prefix",
        "compiler/opaque/allow.py",
        'return "::" not in target and target.rsplit(".", 1)[0] in names',
        'return "::" not in target and any(target.startswith(n) for n in names)',
        ("tests/compiler/opaque/test_allow.py", "tests/explorer/test_opaque_trust.py"),
        "trusting aten.from trusts aten.from_file",
    ),
    M(
        "program-dropout-any",
        "explorer/trust.py",
        "        ok = value is want or value == want",
        "        ok = True",
        ("tests/passlens/test_pt2_untrusted.py",),
        "a .pt2's dropout with train=True runs as the reference",
    ),
    M(
        "onnx-source-unjudged",
        "explorer/trust.py",
        'if getattr(trace, "frontend", "") == "onnx" and hasattr(model, "graph"):',
        'if False and hasattr(model, "graph"):',
        ("tests/security/test_redteam_onnx_reference.py",),
        "a dead node of an ONNX source runs in onnxruntime's reference",
    ),
    M(
        "serve-bokeh-args",
        "widgets/app_guard.py",
        'steering = [k for k in request.query_arguments if k.lower().startswith("bokeh-")]',
        "steering = []",
        ("tests/security/test_redteam_serve.py",),
        "?bokeh-absolute-url= chooses where the page loads its scripts",
    ),
    M(
        "dtype-int-passes",
        "compiler/opaque/run.py",
        'if kind == "ScalarType" and not (value is None or isinstance(value, DType)):',
        'if kind == "ScalarType" and False:',
        ("tests/compiler/opaque/test_allow.py",),
        "a dtype given as a plain int reaches torch (SIGFPE)",
    ),
    M(
        "empty-not-filled",
        "explorer/check/references.py",
        "                out.zero_()",
        "                pass",
        ("tests/passlens/test_pt2_untrusted.py",),
        "a .pt2's empty() shows memory the process held",
    ),
]


def copy_repo(dest: str) -> None:
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        shutil.copy2(src, out)


def run_tests(copy: str, tests: tuple[str, ...], timeout: float) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": copy, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return -1, time.monotonic() - t0, "timeout"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILED") or "ERROR" in ln]
    return proc.returncode, time.monotonic() - t0, (lines[0] if lines else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="mutation ids to run")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--full", action="store_true", help="run the whole suite on survivors")
    ap.add_argument("--keep", action="store_true", help="keep the copy under /tmp")
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if args.only is None or m.id in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.id:26} {m.path}: {m.old!r} -> {m.new!r}")
        return 0
    copy = tempfile.mkdtemp(prefix="passlens-mutants-")
    try:
        copy_repo(copy)
        baseline = sorted({t for m in chosen for t in m.tests})
        code, secs, first = run_tests(copy, tuple(baseline), args.timeout)
        print(
            f"baseline: {len(baseline)} test files, {'green' if code == 0 else 'RED'} "
            f"({secs:.0f} s)"
        )
        if code != 0:
            print(f"  {first}\nthe unmutated tests must pass first", flush=True)
            return 2
        killed, survived, stale = [], [], []
        for m in chosen:
            path = os.path.join(copy, m.path)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if text.count(m.old) != 1:
                stale.append(m)
                print(f"  stale     {m.id}: {m.old!r} occurs {text.count(m.old)} times", flush=True)
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(m.old, m.new))
            try:
                code, secs, first = run_tests(copy, m.tests, args.timeout)
                if code == 0 and args.full:
                    code, secs2, first = run_tests(copy, ("tests",), args.timeout)
                    secs += secs2
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            if code == 0:
                survived.append(m)
                print(
                    f"  SURVIVED  {m.id} ({secs:.0f} s): {m.path}: {m.old!r} -> {m.new!r}",
                    flush=True,
                )
            else:
                killed.append(m)
                why = f" [{m.why}]" if m.why else ""
                print(f"  killed    {m.id}{why} ({secs:.0f} s) {first[:100]}", flush=True)
        scored = len(killed) + len(survived)
        score = 100 * len(killed) / scored if scored else 0.0
        print(
            f"score: {len(killed)}/{scored} mutations killed ({score:.0f}%)"
            + (f", {len(stale)} stale" if stale else "")
        )
        for m in survived:
            print(f"survivor: {m.id}: {m.path}: {m.old!r} -> {m.new!r}")
        return 0 if not survived and not stale else 1
    finally:
        if args.keep:
            print(f"copy kept in {copy}")
        else:
            shutil.rmtree(copy, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
