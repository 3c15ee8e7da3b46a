"""Every registered pass has its Before/Expected cases (issue 40: beside it): one small case
per rewrite rule, each needing its rule (the pass changes ``before``), so that removing or
flipping a rule fails its case, and the guards as KeepCases (``helpers.verify_keep``).

A pass module compiler/passes/[replicas/]<m>.py keeps its cases in
tests/compiler/passes/[replicas/]test_<m>.py as ``CASES`` (run there by
``helpers.case_tests``); this file collects them all (``helpers.collected_cases``) and checks
that every registered pass has a case, or says in NO_RULE_CASE why it cannot, and that a test
module holds only the cases of its own pass module. bench/mutations.py mutates some of these
rules on purpose."""

from compiler import passes
from tests.compiler.passes.helpers import KeepCase, RuleCase, collected_cases

BY_MODULE = collected_cases()
ALL = [c for cases in BY_MODULE.values() for c in cases]
CASES = [c for c in ALL if isinstance(c, RuleCase)]
KEEP = [c for c in ALL if isinstance(c, KeepCase)]

# Registered passes without a RuleCase, each with the reason a Before/Expected text cannot
# show what it does. Nothing else may be missing: a new pass needs a case (or a reason here).
NO_RULE_CASE = {
    # What names a pipeline of passes ("a,b" builds one), not a pass with rules of its own.
    "sequential": "builds the pipeline a spec names",
    # Its whole change is the module's ``backend`` attribute (the IR text has no module
    # attributes) and the machine code it compiles, which depends on the host's CPU; the graph
    # is unchanged. tests/compiler/backend runs it.
    "codegen": "changes no IR: compiles kernels for the host, marks the module",
    # Its result calls kernels named by a digest of the loop code lowering generates
    # (``add_1a2b3c4d``), held in a per-process table, and marks the module (not in the
    # text): an Expected text would pin those digests, so any change to a lowering breaks
    # it. tests/compiler/backend checks its rules (views stay, fused functions become one
    # kernel, split / attention / topk expansions) by running the kernels.
    "legalize-ops": "its result names content-hashed kernels of the backend",
}


def test_every_registered_pass_has_a_rule_case():
    covered = {c.pass_name for c in CASES}
    # the compiler's passes (tests register passes of their own, e.g. test_manager.py)
    registered = {
        name for name, cls in passes.all_passes().items() if cls.__module__.startswith("compiler.")
    }
    missing = registered - covered - set(NO_RULE_CASE)
    assert not missing, (
        f"passes without a RuleCase (add one, or a reason in NO_RULE_CASE): {missing}"
    )
    stale = set(NO_RULE_CASE) & (covered | (set(NO_RULE_CASE) - registered))
    assert not stale, f"NO_RULE_CASE lists passes that have cases or are gone: {stale}"


def test_every_case_sits_beside_its_pass():
    """The cases of test_<m>.py test passes that compiler/passes/<m>.py registers."""
    registered_by = {name: cls.__module__ for name, cls in passes.all_passes().items()}
    misplaced = {
        c.id: (module, registered_by[c.pass_name])
        for module, cases in BY_MODULE.items()
        for c in cases
        if registered_by[c.pass_name] != module
    }
    assert misplaced == {}


def test_every_keep_case_is_a_near_miss_of_a_pass_with_rules():
    """A guard belongs to a pass that has rules (else it tests nothing that could break)."""
    assert {c.pass_name for c in KEEP} <= {c.pass_name for c in CASES}
