"""Gradients of @function code with Python control flow: autograph.grad /
value_and_grad, and graphcore.gradients on traced tensors."""
import numpy as np
import pytest

import graphcore as gc

autograph = pytest.importorskip("autograph")
from autograph.gradients_api import grad, value_and_grad  # noqa: E402

from gradcheck import numeric_grad  # noqa: E402


def piecewise_power(x, n):
    y = x
    i = 0
    while i < n:
        if gc.reduce_sum(y) > 20.0:
            y = y * 0.5 + gc.tanh(x)
        else:
            y = y * x
        i += 1
    return gc.reduce_sum(y)


def piecewise_power_np(x, n):
    y = x.copy()
    for _ in range(n):
        y = y * 0.5 + np.tanh(x) if y.sum() > 20.0 else y * x
    return y.sum()


def test_value_and_grad_through_converted_while_and_if():
    x = np.array([1.5, 2.2])
    v, dx = value_and_grad(piecewise_power)(x, np.int64(4))
    assert np.isclose(v, piecewise_power_np(x, 4))
    np.testing.assert_allclose(dx, numeric_grad(lambda a: piecewise_power_np(a, 4), x), rtol=1e-5)


def test_grad_of_a_decorated_function_and_argnums():
    @autograph.function
    def f(a, b):
        s = a * 0.0
        for k in range(3):  # a Python loop: unrolled while tracing
            s = s + gc.tanh(a * b) * (k + 1)
        return gc.reduce_sum(s)

    a, b = np.array([0.3, -0.4]), np.array([1.2, 0.7])
    da, db = grad(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(da, 6 * (1 - np.tanh(a * b) ** 2) * b)
    np.testing.assert_allclose(db, 6 * (1 - np.tanh(a * b) ** 2) * a)


def test_gradients_inside_a_decorated_function_and_variables():
    w = gc.Variable(np.array([1.0, 2.0]), name="ag_w")

    @autograph.function
    def step(x):
        loss = gc.reduce_sum(w * x * x)
        dw, dx = gc.gradients(loss, [w, x])
        w.assign_sub(0.1 * dw)
        return dx

    dx = step(np.array([1.0, 3.0]))
    np.testing.assert_allclose(dx, [2.0, 12.0])
    np.testing.assert_allclose(w.numpy(), [0.9, 1.1])


def test_grad_of_non_scalar_is_a_clear_error():
    with pytest.raises(gc.GraphError, match="not a scalar"):
        grad(lambda x: x * 2.0)(np.array([1.0, 2.0]))
