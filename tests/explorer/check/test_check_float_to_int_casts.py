"""A torch model casting NaN, infinities and out-of-range floats to integers is no finding:
the interpreter and compiled code give what torch eager gives (the `cast` op's rule,
tests/compiler/ops/test_float_to_int_casts.py). Before the rule, compiled code saturated and
the check reported every such model diverged at legalize-ops."""

from __future__ import annotations

import pytest
import torch

import explorer

SPECIAL = [0.5, float("nan"), float("inf"), -float("inf"), 1e30, 300.0, -300.0, -1.0, 3e9]
SPECIAL += [-3e9, -(2.0**31) - 1, 2.0**32 - 1, 70000.0, 2.5]


class Cast(torch.nn.Module):
    """`x * w` in `src` (w holding the special values) to `dst` and back, plus `x`."""

    def __init__(self, src: torch.dtype, dst: torch.dtype):
        super().__init__()
        self.register_buffer("w", torch.tensor(SPECIAL * 5, dtype=torch.float64).to(src))
        self.dst = dst

    def forward(self, x):
        return (x.to(self.w.dtype) * self.w).to(self.dst).to(x.dtype) + x


PAIRS = [(torch.float32, d) for d in (torch.int8, torch.int16, torch.int32, torch.int64)]
PAIRS += [(torch.float32, torch.uint8), (torch.float64, torch.uint8)]
PAIRS += [(torch.bfloat16, torch.int8), (torch.float16, torch.int32)]


@pytest.mark.parametrize("src,dst", PAIRS, ids=lambda d: str(d).removeprefix("torch."))
def test_a_cast_of_special_values_is_checked_without_a_finding(src, dst):
    x = torch.ones(len(SPECIAL) * 5)
    trace = explorer.explore(Cast(src, dst).eval(), (x,), "default,legalize-ops,codegen")
    assert trace["codegen"].module.attrs["backend"].startswith("llvm")  # compiled
    report = trace.check((x,), progress=False)
    assert report.numbers_checked
    assert [f.kind for f in report.findings] == []


def test_a_cast_to_uint32_is_refused_at_import():
    """torch's uint32 cast of NaN or a value out of range depends on where the element falls
    in its vectorised loop (the cast op's doc): a model making one is not imported, so the
    check never compares a uint32 value with torch's."""
    from compiler.frontend.errors import FrontendError

    x = torch.ones(len(SPECIAL) * 5)
    with pytest.raises(FrontendError, match="uint32"):
        explorer.explore(Cast(torch.float32, torch.uint32).eval(), (x,))
