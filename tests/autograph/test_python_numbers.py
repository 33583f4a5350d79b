"""Python numbers and the functions of them in converted code: math.*, round and divmod of
a tensor give Python's values and errors, those without a graph version (math.factorial,
math.gcd) Python's values from a call made when the graph runs; float() and int() agree with Python, and so does
arithmetic of Python ints (no silent wrap-around)."""
import math

import numpy as np
import pytest

import autograph
from autograph import function
from _helpers import agree, check


def factorial_of(x):
    return math.factorial(x)


def gcd_of(x):
    return math.gcd(x, 6)


@pytest.mark.parametrize("fn, python_value", [(factorial_of, 120), (gcd_of, 2)])
def test_a_tensor_given_to_a_python_number_function_is_called_when_the_graph_runs(fn, python_value):
    assert function(fn)(python_value and {120: 5, 2: 4}[python_value]) == python_value  # Python stays Python
    # graphcore has no op for them: staged as Python calls on the value (autograph/operators/python_calls.py)
    for n in (np.int64(4), np.int64(0)):
        out = function(fn)(n)
        assert out == fn(n) and type(out) is type(fn(n))


def math_functions(x):
    y = 0.0
    if x > -5:  # staged: the math functions run in a branch of the graph
        y = math.sqrt(x) + math.exp(x) + math.log(x)
    return (y, math.isnan(x), math.isinf(x), math.fabs(x), math.atan2(x, 2.0), math.pow(x, 2), math.log(x + 10, 2),
            math.hypot(x, 3.0), math.sin(x) + math.cos(x) + math.tan(x) + math.tanh(x))


def integer_parts(x):
    return math.floor(x), math.ceil(x), math.trunc(x), math.floor(x * 0.5) + 1


def rounding(x):
    return round(x), round(x, 2), round(x, 0), round(float(x) * 1.0, 2), divmod(x, 0.75), divmod(x, -0.5)


def int_rounding(n):
    return round(n), round(n, -1), round(n, 1), divmod(n, 3), divmod(n, -2), math.sqrt(n), math.floor(n)


@pytest.mark.parametrize("x", [2.25, -1.0, 0.0, 800.0, np.inf, -np.inf, np.nan, 2.675, -2.5, 3.5])
def test_math_functions_round_and_divmod_of_a_tensor_are_pythons(x):
    """Python's values and Python's errors: math.sqrt(-1.0) and math.log(0.0) raise ValueError,
    math.exp(800.0) OverflowError, math.floor(nan) ValueError, round(2.675, 2) of a Python float is
    2.67 (its exact decimal value) and of an np.float64 2.68 (numpy's), round(x) is an int. (Each
    function here fails with one exception type on a given input: of two independent ops that
    both fail, the graph reports either, see the README.)"""
    agree(math_functions, np.float64(x))
    agree(integer_parts, np.float64(x))
    agree(rounding, np.float64(x))
    agree(rounding, np.float32(x))


@pytest.mark.parametrize("n", [15, -7, 0, 25])
def test_round_and_divmod_of_an_integer_tensor_are_pythons(n):
    agree(int_rounding, np.int64(n))
    agree(int_rounding, np.int32(n))


def math_of_loop(x, n):
    s = x
    for i in range(n):
        s = math.sin(s) * math.exp(-s * s) + math.sqrt(s * s + 1.0) + math.atan(s) + math.log(s * s + 2.0, 3.0)
    return s


def test_gradient_through_math_functions_matches_finite_differences():
    eps = 1e-6
    for x in (0.3, -1.1, 2.0):
        got = autograph.grad(math_of_loop)(np.float64(x), np.int64(3))
        expected = (math_of_loop(x + eps, 3) - math_of_loop(x - eps, 3)) / (2 * eps)
        np.testing.assert_allclose(got, expected, rtol=1e-6)


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


def count_positive(xs):
    c = 0
    for v in xs:
        c += v > 0
    return c


def masked(x, n):
    s = 0.0
    k = 0
    while k < n:
        s = s + x * (x > k) - (x < 0) * 2
        k += 1
    return s


def test_a_bool_counts_as_a_number_as_in_numpy():
    """`c += v > 0` and `x * (x > 0)` as numpy computes them, in loops too."""
    check(count_positive, (np.array([1.0, -2.0, 3.0, 0.0]),), (np.array([], dtype=np.float64),),
          (np.array([4, 5], dtype=np.int32),), python_args=False)
    check(masked, (np.float64(2.5), np.int64(4)), (np.float64(-1.0), np.int64(2)), (np.float32(3.0), np.int64(3)),
          python_args=False)


def test_gradient_through_a_bool_mask_matches_finite_differences():
    eps = 1e-6
    for x in (2.5, 0.7, -1.3):
        got = autograph.grad(masked)(np.float64(x), np.int64(4))
        expected = (masked(x + eps, 4) - masked(x - eps, 4)) / (2 * eps)
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def powers_of_ten(n):
    s = 1
    i = 0
    while i < n:
        s = s * 10
        i += 1
    return s


def factorial(n):
    r = 1
    for k in range(1, n + 1):
        r *= k
    return r


def divide_by_countdown(n):
    s = 0
    for k in range(n):
        s = s + 10 // (k - 2) + 7 % (3 - k)
    return s


def float_divide_by_countdown(n):
    s = 0.0
    for k in range(n):
        s = s + 1.0 / (k - 2)
    return s


def two_to_the(n):
    s = 0
    for k in range(n):
        s = s + 2 ** (k - 1)
    return s


def test_python_ints_compute_as_python_or_the_run_fails():
    """Python ints in a graph are int64: where Python's result fits, the same value; where
    it would not (Python's ints have no bound), the run fails with OverflowError at the
    user's line instead of wrapping around silently."""
    check(powers_of_ten, (np.int64(18),), (np.int64(0),), python_args=False)
    check(factorial, (np.int64(20),), (np.int64(1),), python_args=False)
    for f, n in ((powers_of_ten, 19), (factorial, 21)):
        assert f(n) >= 2 ** 63  # plain Python: a big int
        with pytest.raises(OverflowError, match=r"beyond int64") as e:
            function(f)(np.int64(n))
        assert "test_python_numbers.py" in str(e.value)


def test_python_zero_divisors_raise_zero_division_error_as_python():
    check(divide_by_countdown, (np.int64(2),), python_args=False)
    check(float_divide_by_countdown, (np.int64(2),), python_args=False)
    for f in (divide_by_countdown, float_divide_by_countdown):
        with pytest.raises(ZeroDivisionError):
            f(4)
        with pytest.raises(ZeroDivisionError, match="by zero"):
            function(f)(np.int64(4))


def test_a_python_int_power_that_python_makes_a_float_is_refused():
    assert two_to_the(3) == 3.5
    check(two_to_the, (np.int64(0),), python_args=False)
    with pytest.raises(ValueError, match=r"2 \*\* -1 is the float 0.5 in Python.*2.0 \*\* k"):
        function(two_to_the)(np.int64(3))


def int_of(x):
    return int(x) * 3


@pytest.mark.parametrize("x, error", [(float("nan"), ValueError), (float("inf"), OverflowError),
                                      (-float("inf"), OverflowError)])
def test_int_of_a_float_fails_where_python_s_does(x, error):
    with pytest.raises(error):
        int_of(x)
    with pytest.raises(error):
        function(int_of)(np.float64(x))


def test_int_of_a_float_beyond_int64_is_refused_not_wrapped():
    assert int_of(1e30) == 3 * 10 ** 30 + 3 * 19884624838656  # Python: a big int
    with pytest.raises(OverflowError, match="does not fit in an int64"):
        function(int_of)(np.float64(1e30))


def test_int_of_a_float_truncates_as_python():
    check(int_of, (np.float64(-2.7),), (np.float64(2.999),), (np.float32(-0.5),), (np.float64(3.0e18),),
          python_args=False)


def float_of(x):
    y = float(x)
    return y / 2.0 + y ** 2.0 - 1.0 % y


def test_python_float_arithmetic_differentiates_as_numpy_s():
    eps = 1e-6
    for x in (3.0, 0.75):
        got = autograph.grad(float_of)(np.float64(x))
        np.testing.assert_allclose(got, (float_of(x + eps) - float_of(x - eps)) / (2 * eps), rtol=1e-6)


def float_mod(x, y):
    return x % y + 0.5 * (y % x)


def test_gradient_of_float_mod_matches_finite_differences():
    """x % y == x - floor(x / y) * y: d/dx 1, d/dy -floor(x / y) (it was taken as 0)."""
    eps = 1e-6
    for x, y in ((3.5, 2.0), (5.0, 1.5), (-2.25, 0.7), (1.3, -0.4)):
        gx, gy = autograph.grad(float_mod, argnums=(0, 1))(np.float64(x), np.float64(y))
        np.testing.assert_allclose(gx, (float_mod(x + eps, y) - float_mod(x - eps, y)) / (2 * eps), rtol=1e-6)
        np.testing.assert_allclose(gy, (float_mod(x, y + eps) - float_mod(x, y - eps)) / (2 * eps), rtol=1e-6)


def conversions_leave_the_argument_alone(x, n, y32, m32):
    k = int(n)
    f = float(x)
    r = round(n)
    return x + y32, n + m32, k + m32, f + y32, r


def test_int_float_round_give_python_numbers_without_changing_the_argument():
    """int(n) of an np.int64 casts nothing: its result must be a new (Python) value, not n made one."""
    agree(conversions_leave_the_argument_alone, np.float64(3.5), np.int64(3), np.float32(4.0), np.int32(4))
