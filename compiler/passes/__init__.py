"""Passes, the pass manager and pipelines.

`compiler.passes.run(module, pipeline="default", record=True)` runs a pipeline and returns
a PassResult with `.module` and `.snapshots` (one per pass application, nested included).
`calling_convention(module)` says how to call a module after passes that change its signature
(lift-transform-params, the lazy passes, bind-params: those with `changes_signature`) and
`lazy_callbacks` serves the weights and collects the results of a lazy one;
`decompose(call)` is what decompose-ops rewrites one call into (`rounds_as_decomposed`:
whether that changes no value). Local rewrites are rule tables (`Rule`: a name, a
`Pattern`, a rewrite); inside `collect_rewrites()` every rule application is recorded as a
`RewriteRecord` (and on its `Snapshot.rewrites`). `RulePass` is a pass made of one rule
table (the shortest pass of your own); `verify_pass` checks a pass on a Before and an
Expected module (`compiler.passes.infra.testing`). `register_pass` again by the same
definition (a notebook cell run again) replaces the pass with a `PassRedefinedWarning`; by
another definition it is a `PassRegistrationError` naming both. A pass nobody registered
runs as an instance in a pipeline (`[FastGelu()]`); `build_pipeline(spec, classes=[...])`
finds such classes by name in a spec.
"""

from compiler.passes.decompose_ops import decompose, rounds_as_decomposed
from compiler.passes.infra import library  # noqa: F401  (registers the passes and pipelines)
from compiler.passes.infra.calling import (
    SIDE_EFFECT_OPS,
    CallingConvention,
    calling_convention,
    lazy_callbacks,
    lazy_ops,
    transform_function,
    weight_params,
)
from compiler.passes.infra.manager import (
    Instrument,
    Pass,
    PassContext,
    PassError,
    PassesInterrupted,
    PassFailed,
    PassResult,
    Recorder,
    Sequential,
    SkippedPass,
    Snapshot,
    VerifyAfterEach,
    all_passes,
    get_pass_class,
    register_pass,
)
from compiler.passes.infra.pipeline import (
    PipelineError,
    build_pipeline,
    named_pipelines,
    pass_aliases,
    parse_pass,
    register_alias,
    register_pipeline,
)
from compiler.passes.infra.redefinition import (
    PassRedefinedWarning,
    PassRegistrationError,
    definition_source,
    same_definition,
    where_defined,
)
from compiler.passes.infra.rewrite import rewrite_function, rewrite_module
from compiler.passes.infra.rule_pass import RulePass
from compiler.passes.infra.rules import (
    Pattern,
    RewriteRecord,
    Rule,
    Rules,
    collect_rewrites,
    kind,
    op,
    rule_table,
    rule_tables,
)
from compiler.passes.infra.runner import run
from compiler.passes.infra.testing import verify_pass

__all__ = [
    "CallingConvention",
    "Instrument",
    "Pass",
    "PassContext",
    "Pattern",
    "RewriteRecord",
    "Rule",
    "Rules",
    "RulePass",
    "PassError",
    "PassFailed",
    "PassResult",
    "PassesInterrupted",
    "PassRedefinedWarning",
    "PassRegistrationError",
    "PipelineError",
    "Recorder",
    "SIDE_EFFECT_OPS",
    "Sequential",
    "SkippedPass",
    "Snapshot",
    "VerifyAfterEach",
    "all_passes",
    "build_pipeline",
    "calling_convention",
    "collect_rewrites",
    "decompose",
    "definition_source",
    "get_pass_class",
    "kind",
    "lazy_callbacks",
    "lazy_ops",
    "named_pipelines",
    "pass_aliases",
    "op",
    "parse_pass",
    "register_alias",
    "register_pass",
    "register_pipeline",
    "rewrite_function",
    "rewrite_module",
    "rounds_as_decomposed",
    "rule_table",
    "rule_tables",
    "run",
    "same_definition",
    "transform_function",
    "verify_pass",
    "weight_params",
    "where_defined",
]
