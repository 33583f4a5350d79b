"""Functions that need a Python number (math.*, round, complex) given a graph tensor in
converted code: a clear error at the user's line with what to write instead. float()
and int() have tensor versions and agree with Python."""
import inspect
import math

import numpy as np
import pytest

import autograph
from autograph import function
from _helpers import check


def root(x):
    return math.sqrt(x)


def floor_of(x):
    return math.floor(x)


def power(x):
    return math.pow(x, 2)


def rounded(x):
    return round(x)


def line_of(fn) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + len(lines) - 1  # the `return` line


@pytest.mark.parametrize("fn, python_value, advice", [
    (root, 1.5, "np.sqrt(x)"), (power, 5.0625, "x ** y"),
    (floor_of, 2, "int(np.floor(x))"), (rounded, 2, "graphcore has no op")])
def test_a_tensor_given_to_a_python_number_function_is_refused_at_the_users_line(fn, python_value, advice):
    assert function(fn)(2.25) == python_value  # a Python number stays Python
    with pytest.raises(TypeError) as e:
        function(fn)(np.float64(2.25))
    message = str(e.value)
    assert message.startswith(f"{__file__}:{line_of(fn)}: ")
    assert "needs a Python number but got a graph tensor" in message and advice in message


def numpy_root(x):
    return np.sqrt(x) + np.exp(x) - np.log(x)


def test_the_suggested_numpy_ufuncs_build_graph_ops():
    check(numpy_root, (2.25,), python_args=False)
    expected = 0.5 / np.sqrt(2.25) + np.exp(2.25) - 1 / 2.25
    np.testing.assert_allclose(autograph.grad(numpy_root)(np.float64(2.25)), expected, rtol=1e-12)


def casts(x):
    return float(x) * 2 + int(x)


@pytest.mark.parametrize("x", [2.75, -2.75, 3.0])
def test_float_and_int_of_a_scalar_tensor_match_python(x):
    check(casts, (x,))


def test_gradient_through_float_of_a_tensor():
    np.testing.assert_allclose(autograph.grad(lambda x: float(x) * float(x))(np.float64(1.5)), 3.0)
