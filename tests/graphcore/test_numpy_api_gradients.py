"""Gradients through numpy functions on graph tensors match central finite differences."""
import numpy as np
import pytest

import autograph
from gradcheck import numeric_grad

X = np.array([[0.3, -1.2, 2.1], [1.7, 0.4, -0.6]])


def loss_sum_where(x):
    return np.sum(np.where(x > 0.5, x * x, -x))


def loss_mean_clip(x):
    return np.mean(np.clip(x, -1.0, 1.5) * x)


def loss_dot_max(x):
    return np.max(np.dot(x, x.T)) + x.sum(axis=0).prod()


def loss_stack_reshape(x):
    s = np.stack([x, x * 2.0], axis=1).reshape(-1)
    return np.sum(s * s) + np.min(np.concatenate([x, -x], axis=0))


def loss_new_ufuncs_and_var(x):
    return np.sum(np.sin(x) * np.cos(x) + np.log1p(x * x) + np.expm1(x * 0.5)) + np.var(x) + np.std(x, axis=0).sum()


def loss_loop_over_rows(x):
    acc = []
    for row in x:
        acc.append(np.tanh(row) * np.mean(row))
    return np.sum(np.stack(acc))


@pytest.mark.parametrize("loss", [loss_sum_where, loss_mean_clip, loss_dot_max, loss_stack_reshape,
                                  loss_new_ufuncs_and_var, loss_loop_over_rows])
def test_gradient_through_numpy_functions_matches_finite_differences(loss):
    got = autograph.grad(loss)(X)
    np.testing.assert_allclose(got, numeric_grad(loss, X), rtol=1e-5, atol=1e-7)
