"""The replicas of real bugs (SEEDS.md) reproduce their faulty behaviour, and only that."""

import sys

import numpy as np
import pytest

from compiler import passes
from compiler.interpret import evaluate, run
from compiler.ir import Call, Constant, parse
from compiler.passes import named_pipelines
from tests.compiler.passes.test_dynamic_to_static import (
    SEEDS_PAD_SQUEEZE,
    seeds_input,
    torch_pad_squeeze,
)


def test_replicas_are_labelled_and_never_in_named_pipelines():
    mine = ["replica-linear-broadcast", "replica-dynamic-to-static-squeeze"]
    for name in mine:
        cls = passes.get_pass_class(name)
        assert cls.__module__.startswith("compiler.passes.replicas.")
        doc = sys.modules[cls.__module__].__doc__
        assert doc.startswith("REPLICA OF A REAL BUG") and "docs/bugs.md bug" in doc
    for spec in named_pipelines().values():
        assert "replica-" not in spec


# ----- bug 3: (13, 13, 1, 1) after dynamic-to-static -------------------------------


def test_squeeze_replica_annotates_13_13_1_1_and_the_type_check_finds_that_node():
    result = passes.run(parse(SEEDS_PAD_SQUEEZE), "replica-dynamic-to-static-squeeze")
    assert result.ok
    main = result.module.main
    squeeze = main.output
    assert isinstance(squeeze, Call) and squeeze.op == "squeeze"
    assert squeeze.ty.shape == (13, 13, 1, 1)
    assert squeeze.prov.pass_name == "replica-dynamic-to-static-squeeze"
    assert squeeze.prov.source_node == "/Squeeze"

    x = seeds_input()
    ev = evaluate(result.module, [x], check_types=True)
    assert [m.node for m in ev.mismatches] == [squeeze]  # exactly that node, nothing else
    assert ev.mismatches[0].shape == (13, 1, 1, 1)
    assert str(ev.mismatches[0].annotated) == "f32[13, 13, 1, 1]"
    np.testing.assert_array_equal(ev.outputs[0], torch_pad_squeeze(x))  # values stay right


def test_squeeze_replica_differs_from_the_real_pass_only_in_that_annotation():
    module = parse(SEEDS_PAD_SQUEEZE)
    good = passes.run(module, "dynamic-to-static").module
    bad = passes.run(module, "replica-dynamic-to-static-squeeze").module
    assert evaluate(good, [seeds_input()], check_types=True).mismatches == []
    assert [b.ty for b in good.main.bindings[:-1]] == [b.ty for b in bad.main.bindings[:-1]]
    assert good.main.output.ty.shape == (13, 1, 1, 1)


def test_squeeze_replica_leaves_modules_without_a_folded_if_as_the_real_pass_does():
    text = """
    def @main(%x: f32[2, 1, 3]) -> f32[2, 3] {
      %s: f32[2, 3] = squeeze(%x, axes=[1])
      return %s
    }
    """
    module = parse(text)
    assert passes.run(module, "replica-dynamic-to-static-squeeze").module is module


# ----- bug 1: a linear layer's weight broadcast over the batch dims ----------------


def _linear_module(input_shape: tuple, seed: int = 0):
    """One ``Linear(128, 512)`` (weights named like torch's ``linear``) on ``input_shape``."""
    rng = np.random.default_rng(seed)
    shape = ", ".join(map(str, input_shape))
    out_shape = ", ".join(map(str, (*input_shape[:-1], 512)))
    text = f"""
    weights {{
      $linear.weight: f32[512, 128]
      $linear.bias: f32[512]
    }}
    def @main(%x: f32[{shape}]) -> f32[{out_shape}] {{
      %y: f32[{out_shape}] = linear(%x, $linear.weight, $linear.bias)  loc(module="linear")
      return %y
    }}
    """
    params = {
        "linear.weight": rng.standard_normal((512, 128)).astype(np.float32) / 11,
        "linear.bias": rng.standard_normal(512).astype(np.float32),
    }
    return parse(text, params=params)


def _constant_bytes(module) -> dict[str, int]:
    return {name: c.nbytes for name, c in module.constants().items()}


@pytest.mark.parametrize(
    "input_shape, copies",
    [
        ((1, 56, 56, 128), 56),  # ConvNeXt stage 1, channels last: batch dims (1, 56)
        ((2, 7, 7, 128), 14),
        ((4, 10, 128), 4),  # 3-D: batch dims (4,)
    ],
)
def test_linear_broadcast_then_fold_constant_duplicates_the_weight_per_batch_row(
    input_shape, copies
):
    module = _linear_module(input_shape)
    result = passes.run(module, "replica-linear-broadcast,fold-constant,dce")
    assert result.ok
    before, after = _constant_bytes(module), _constant_bytes(result.module)
    weight_bytes = 512 * 128 * 4
    assert before == {"linear.weight": weight_bytes, "linear.bias": 512 * 4}
    (new_name,) = set(after) - {"linear.bias"}
    assert new_name.startswith("linear.weight.")  # named after the weight it copies
    assert after[new_name] == copies * weight_bytes
    assert sum(after.values()) - 512 * 4 == copies * sum(before.values()) - copies * 512 * 4

    big = result.module.constants()[new_name]
    assert big.data.shape == (*input_shape[:-2], 128, 512)
    w_t = module.constants()["linear.weight"].data.T
    for index in np.ndindex(*input_shape[:-2]):
        np.testing.assert_array_equal(big.data[index], w_t)  # each slice is a copy of W.T

    x = np.random.default_rng(1).standard_normal(input_shape).astype(np.float32)
    np.testing.assert_allclose(run(result.module, x)[0], run(module, x)[0], rtol=1e-5, atol=1e-5)


def test_linear_broadcast_bloat_shows_at_the_fold_constant_step():
    result = passes.run(_linear_module((1, 56, 56, 128)), "replica-linear-broadcast,fold-constant")
    replica, fold = result.snapshots
    assert sum(_constant_bytes(replica.module).values()) == sum(
        _constant_bytes(replica.before).values()
    )  # the replica only adds ops; fold-constant makes the copy
    grown = sum(_constant_bytes(fold.module).values()) - sum(_constant_bytes(fold.before).values())
    assert grown == 55 * 512 * 128 * 4  # 56 copies in place of the one weight
    ops = [n.op for n in replica.module.main.bindings]
    assert ops == ["permute_dims", "broadcast_to", "matmul", "add"]
    assert all(n.prov.module_path == "linear" for n in replica.module.main.bindings)
    assert all(n.prov.pass_name == "replica-linear-broadcast" for n in replica.module.main.bindings)


def test_linear_broadcast_leaves_2d_inputs_and_the_real_pipeline_alone():
    module = _linear_module((3, 128))
    assert passes.run(module, "replica-linear-broadcast").module is module
    folded = passes.run(_linear_module((1, 56, 56, 128)), "default").module
    assert sum(_constant_bytes(folded).values()) == (512 * 128 + 512) * 4


def test_linear_broadcast_on_convnext_base_folds_to_the_reported_3_8_gb():
    # What fold-constant would materialise, read off the types (folding it for real takes
    # 4.2 GB and ~10 s: measured 4,159,123,872 bytes of constants, as computed here).
    from compiler.models import convnext

    module = convnext()
    main = passes.run(module, "replica-linear-broadcast").module.main
    broadcasts = [n for n in main.bindings if isinstance(n, Call) and n.op == "broadcast_to"]
    assert len(broadcasts) == 72  # every block linear; the head's 2-D linear is left alone
    copies = sorted({n.ty.shape[1] for n in broadcasts})
    assert copies == [7, 14, 28, 56]  # (1, H, W, C) inputs: one copy per row of the image
    transposes = {id(n.args[0]) for n in broadcasts}
    kept = {
        id(a): a.nbytes
        for n in main.bindings
        if id(n) not in transposes
        for a in n.operands
        if isinstance(a, Constant)
    }
    folded = sum(n.ty.nbytes for n in broadcasts) + sum(kept.values())
    original = sum(c.nbytes for c in module.constants().values())
    assert original == 354_365_856  # 338 MiB: SEEDS' "339 MB model"
    assert folded == 4_159_123_872  # 3.87 GiB: SEEDS' "3.8 GB engine"
