"""numpy arrays of numbers as variables of graph control flow: like numbers, they become
graph constants where a loop or a cond on a tensor changes them (`m = np.eye(2)` before
`m = m @ a` in a loop), and give what plain Python gives."""
import numpy as np
import pytest

import autograph
from _helpers import check
from autograph import StagingError, function


def matrix_power(a, n):
    m = np.eye(2)
    for _ in range(n):
        m = m @ a
    return m


def doubling(n):
    v = np.array([1, 2, 3])
    k = 0
    while k < n:
        v = v * 2 - 1
        k += 1
    return v


def branch_arrays(x):
    if x > 0:
        m = np.eye(2)
    else:
        m = np.ones((2, 2))
    return m * x


def growing(n):
    v = np.zeros(1)
    for _ in range(n):
        v = np.concatenate([v, v + 1])
    return v


def accumulate(x, n):
    m = np.zeros(3)
    for i in range(n):
        m = m + x * i
    return np.sum(m * m)


def test_arrays_changed_by_graph_control_flow_agree_with_python():
    fib = np.array([[1.0, 1.0], [1.0, 0.0]])
    check(matrix_power, (fib, 5), (fib, 0), python_args=False)
    check(doubling, (3,), (0,), python_args=False)
    check(branch_arrays, (2.0,), (-2.0,), python_args=False)
    check(growing, (3,), (0,), python_args=False)
    assert "Enter" in function(matrix_power).get_concrete_function(fib, np.int64(2)).graph.op_types()


def test_gradient_through_an_array_loop_variable_matches_finite_differences():
    eps = 1e-6
    got = autograph.grad(accumulate)(np.float64(1.5), np.int64(4))
    np.testing.assert_allclose(got, (accumulate(1.5 + eps, 4) - accumulate(1.5 - eps, 4)) / (2 * eps), rtol=1e-6)


def halving(n):
    v = np.array([1, 2])
    for _ in range(n):
        v = v * 0.5
    return v


def test_an_array_that_changes_dtype_in_a_loop_is_refused_at_its_line():
    with pytest.raises(StagingError, match=r"test_array_values.py:\d+: 'v' is int64 before the loop but float64"):
        function(halving)(np.int64(2))


def _sieve(n):
    is_prime = np.ones(n, dtype=bool)
    is_prime[0] = False
    is_prime[1] = False
    i = 2
    while i * i < n:
        if is_prime[i]:
            j = i * i
            while j < n:
                is_prime[j] = False
                j += i
        i += 1
    return np.sum(is_prime)


def _filled(n, m):
    return np.zeros(n), np.ones((2, n), dtype=np.int32), np.full(m, 2.5), np.full((n, 1), m), np.zeros(3)


@pytest.mark.parametrize("fn, args", [
    (_sieve, (np.int64(30),)), (_sieve, (np.int64(2),)),
    (_filled, (np.int64(3), np.int64(2))), (_filled, (np.int64(0), np.int64(1))),
])
def test_arrays_whose_shape_a_tensor_decides_match_numpy(fn, args):
    check(fn, args)


def test_a_negative_shape_from_a_tensor_raises_numpys_value_error():
    with pytest.raises(ValueError):
        function(_filled)(np.int64(-1), np.int64(2))


def _mixed_dtype_products(x32, n):
    y = x32 @ np.eye(2)                                   # int32 @ float64: float64
    z = np.dot(x32, np.array([1.5, 2.0]))                 # float64
    w = np.matmul(x32, np.ones((2, 2), dtype=np.int64))   # int64
    for i in range(n):
        y = y @ y
    return y, z, w


def test_products_of_two_dtypes_promote_as_numpy():
    x = np.array([[1, 2], [3, 4]], dtype=np.int32)
    got, want = function(_mixed_dtype_products)(x, np.int64(2)), _mixed_dtype_products(x, 2)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
