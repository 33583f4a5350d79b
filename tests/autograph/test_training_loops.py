"""Library optimizers with slots inside @function graph loops (the loop body is traced
more than once, so slot variables and handles must survive rolled-back traces)."""
import numpy as np
import pytest

import autograph
import graphcore as gc


def loss_fn(w):
    return gc.reduce_sum(w * w)


@pytest.mark.parametrize("make", [lambda: gc.optimizers.GradientDescent(0.1), lambda: gc.optimizers.Adam(0.1),
                                  lambda: gc.optimizers.Momentum(0.1, 0.9), lambda: gc.optimizers.RMSProp(0.1)])
def test_optimizer_steps_in_a_graph_loop_match_eager_steps(make):
    start = np.array([1.0, -2.0])
    w = gc.Variable(start, name="w_graph")
    opt = make()

    @autograph.function
    def train(steps):
        i = 0
        while i < steps:
            opt.apply_gradients([(autograph.grad(loss_fn)(w.value()), w)])
            i += 1
        return w.value()

    got = train(np.int64(5))

    w_eager = gc.Variable(start, name="w_eager")
    opt_eager = make()
    for _ in range(5):
        opt_eager.apply_gradients([(2.0 * w_eager.value(), w_eager)])
    np.testing.assert_allclose(got, w_eager.value(), rtol=1e-10)
    assert np.all(np.abs(got) < np.abs(start))
