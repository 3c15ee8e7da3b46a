"""replica-linear-broadcast: its Before/Expected cases."""

from tests.compiler.passes.helpers import KeepCase as K
from tests.compiler.passes.helpers import RuleCase as C
from tests.compiler.passes.helpers import case_tests

# ----- Before/Expected cases: a RuleCase needs its rule, a KeepCase is a guard's near miss
# (tests/compiler/passes/test_pass_rules.py checks every pass has them)

# the weights of decompose-ops' cases (tests/compiler/passes/test_decompose_ops.py)
DECOMPOSE = """
weights {
  $w: f32[3, 2] = [[1, 2], [3, 4], [5, 6]]
  $b: f32[3] = [0.5, -0.5, 1]
  $g: f32[3] = [1, 2, 3]
  $mean: f32[3] = [0.1, 0.2, 0.3]
  $var: f32[3] = [1, 4, 9]
}"""

REPLICA_LINEAR = [
    C(
        "replica-linear-broadcast",
        "linear on a rank-3 input -> matmul with the weight broadcast over the batch",
        DECOMPOSE
        + """
def @main(%x: f32[2, 4, 2]) -> f32[2, 4, 3] {
  %y: f32[2, 4, 3] = linear(%x, $w, $b)
  return %y
}""",
        """
weights {
  $w: f32[3, 2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
  $b: f32[3] = [0.5, -0.5, 1.0]
}

def @main(%x: f32[2, 4, 2]) -> f32[2, 4, 3] {
  %permute_dims: f32[2, 3] = permute_dims($w, axes=[1, 0])
  %broadcast_to: f32[2, 2, 3] = broadcast_to(%permute_dims, shape=[2, 2, 3])
  %matmul: f32[2, 4, 3] = matmul(%x, %broadcast_to, out_dtype=none)
  %y: f32[2, 4, 3] = add(%matmul, $b)
  return %y
}""",
        numbers=True,
    ),
    K(
        "replica-linear-broadcast",
        "linear on a rank-2 input",
        DECOMPOSE
        + """
def @main(%x: f32[4, 2]) -> f32[4, 3] {
  %y: f32[4, 3] = linear(%x, $w, $b)
  return %y
}""",
    ),
]

CASES = REPLICA_LINEAR
test_rule, test_guard = case_tests(CASES)
