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


def _squared_error(w, x, y):
    return np.sum((x @ w - y) ** 2)


def _descend_from_a_numpy_start(x, y, steps):
    w = np.ones(3)  # a numpy value, a constant of the trace: the gradient is with respect to it
    grad = autograph.grad(_squared_error)
    for _ in range(steps):
        g = grad(w, x, y)
        norm = np.sqrt(np.sum(g * g))
        if norm > 1.0:
            g = g / norm
        w = w - 0.1 * g
    return w


def test_grad_with_respect_to_a_numpy_constant_inside_a_trace_matches_eager():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    eager = _descend_from_a_numpy_start(x, y, np.int64(6))
    np.testing.assert_allclose(autograph.function(_descend_from_a_numpy_start)(x, y, np.int64(6)), eager,
                               rtol=1e-12)
    first = autograph.function(lambda x, y: autograph.grad(_squared_error)(np.ones(3), x, y))(x, y)
    np.testing.assert_allclose(first, autograph.grad(_squared_error)(np.ones(3), x, y), rtol=1e-12)
