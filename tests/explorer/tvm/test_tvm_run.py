"""explorer/tvm/run.py: a TVM Relax module of a trace built with relax.build and run in the
VM on numpy values, under each calling convention a pipeline gives main (as imported; after
LiftTransformParams; after the lazy passes, whose callbacks are served and collected by
index). Real TVM 0.27 (skipped only where tvm is not installed)."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")
torch = pytest.importorskip("torch")

from tvm import relax  # noqa: E402

from explorer.tvm.run import TVMRunError, TVMRunner  # noqa: E402


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        self.out = torch.nn.Linear(3, 2)

    def forward(self, x):
        return self.out(torch.relu(self.lin(x)))


@pytest.fixture(scope="module")
def imported():
    from tvm.relax.frontend.torch import from_exported_program

    torch.manual_seed(0)
    model = Small().eval()
    x = torch.randn(2, 4)
    mod = from_exported_program(torch.export.export(model, (x,)), keep_params_as_input=True)
    mod, params = relax.frontend.detach_params(mod)
    weights = [p.numpy() for p in params["main"]]
    return model, x, mod, weights


def _expected(model, x):
    return model(x).detach().numpy()


def test_the_imported_module_runs_with_its_weights(imported):
    model, x, mod, weights = imported
    runner = TVMRunner()
    (got,) = runner.run(mod, [x.numpy()], weights)
    np.testing.assert_allclose(got, _expected(model, x), rtol=1e-5, atol=1e-6)


def test_after_lift_transform_params_main_gets_the_transformed_weights(imported):
    """LiftTransformParams changes main's signature: a naive call with the weights would be
    wrong; the runner calls main_transform_params first, as a deployment does."""
    model, x, mod, weights = imported
    lifted = relax.transform.LiftTransformParams()(mod)
    names = [gv.name_hint for gv in lifted.get_global_vars()]
    assert "main_transform_params" in names
    assert len(lifted["main"].params) != len(mod["main"].params) or any(
        str(a.ty) != str(b.ty)
        for a, b in zip(lifted["main"].params, mod["main"].params, strict=False)
    )
    (got,) = TVMRunner().run(lifted, [x.numpy()], weights)
    np.testing.assert_allclose(got, _expected(model, x), rtol=1e-5, atol=1e-6)


def test_the_lazy_workaround_hands_the_whole_tuple_to_index_0_and_the_run_says_so(imported):
    """The documented workaround (LazyGetInput + LazySetOutput after LiftTransformParams)
    runs, but sets one output, index 0, holding the whole tuple: main then cannot be called
    with what a loader receives per index."""
    model, x, mod, weights = imported
    lifted = relax.transform.LiftTransformParams()(mod)
    lazy = tvm.transform.Sequential(
        [relax.transform.LazyGetInput(), relax.transform.LazySetOutput()]
    )(lifted)
    message = r"asks for value \d+, .* handed over 1 value.*, value 0 a whole tuple of 4"
    with pytest.raises(TVMRunError, match=message):
        TVMRunner().run(lazy, [x.numpy()], weights)
    only_get = relax.transform.LazyGetInput()(lifted)  # weights fetched lazily: still right
    (got,) = TVMRunner().run(only_get, [x.numpy()], weights)
    np.testing.assert_allclose(got, _expected(model, x), rtol=1e-5, atol=1e-6)


def test_structurally_equal_modules_share_one_build(imported):
    from tvm.relax.frontend.torch import from_exported_program

    model, x, mod, weights = imported
    runner = TVMRunner()
    runner.run(mod, [x.numpy()], weights)
    again = from_exported_program(torch.export.export(model, (x,)), keep_params_as_input=True)
    copy, _ = relax.frontend.detach_params(again)  # the same program, imported again
    assert copy is not mod
    runner.run(copy, [x.numpy()], weights)
    assert runner.builds == 1
    runner.run(relax.transform.LiftTransformParams()(mod), [x.numpy()], weights)
    assert runner.builds == 2


def test_a_module_without_the_function_is_a_clear_error(imported):
    _, x, mod, weights = imported
    with pytest.raises(TVMRunError, match="has no @forward"):
        TVMRunner().run(mod, [x.numpy()], weights, function="forward")


def test_after_bind_params_main_takes_the_inputs_only(imported):
    """Behaviour protected: the calling convention after BindParams. The weights are now
    constants of main; its ``num_input`` still counts the runtime inputs and equals the
    number of parameters, so main is called with the inputs alone (handing it the weights
    too would fail every step after BindParams as run-failed)."""
    model, x, mod, weights = imported
    names = [str(p.name) for p in mod["main"].params[1:]]
    bound = relax.transform.BindParams("main", dict(zip(names, weights, strict=True)))(mod)
    main = bound["main"]
    assert len(main.params) == 1 and int(main.attrs["num_input"]) == len(main.params)
    (got,) = TVMRunner().run(bound, [x.numpy()], weights)
    np.testing.assert_allclose(got, _expected(model, x), rtol=1e-5, atol=1e-6)
