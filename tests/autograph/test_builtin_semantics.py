"""Builtins and operators on graph tensors with Python's semantics, against plain Python:
min / max keep the first operand unless a later one wins (NaN included), `key=`, 1-d arrays;
isinstance / type answer for the value the tensor stands for; `& | ^ ~ << >>` on integers.
Where Python's answer would have a type decided by the values, the graph refuses."""
import numpy as np
import pytest

import graphcore as gc

from autograph import function
from _helpers import agree

NAN = np.nan


def pairs(x):
    return max(1.0, x), min(1.0, x), max(x, 1.0), min(x, 2.0, 1.0), max(x, -x, 0.5)


@pytest.mark.parametrize("x", [NAN, 0.5, 3.0, -0.0, 1.0])
def test_max_and_min_of_scalars_keep_the_first_operand_unless_a_later_one_wins(x):
    agree(pairs, np.float64(x))
    agree(pairs, np.float32(x))


def of_array(xs):
    return max(xs), min(xs)


@pytest.mark.parametrize("xs", [[NAN, 1.0, 2.0], [1.0, NAN, 3.0], [3.0, 1.0, NAN], [2.0], [], [-1.0, -3.0]])
def test_max_of_a_1d_array_iterates_it_as_python_does(xs):
    agree(of_array, np.array(xs))


def test_max_of_int_and_bool_arrays():
    agree(of_array, np.array([3, -1, 7]))
    agree(of_array, np.array([3, -1, 7], dtype=np.int32))
    agree(of_array, np.array([True, False]))


def of_matrix(m):
    return max(m)


def test_max_of_a_2d_array_raises_as_numpy_does():
    agree(of_matrix, np.array([[1.0, 2.0], [3.0, 4.0]]))   # ValueError on both sides


def by_key(a, b):
    return max(a, b, key=abs), min(a, b, key=lambda v: v * v), max(a, b, -3, key=abs)


@pytest.mark.parametrize("a, b", [(-5, 3), (3, -5), (2, -2), (0, 0)])
def test_key_is_called_on_the_operands(a, b):
    agree(by_key, np.int64(a), np.int64(b))


def with_default(xs):
    return max(xs, default=-1.0)


def test_default_of_a_statically_empty_array():
    agree(with_default, np.array([], dtype=np.float64))
    agree(with_default, np.array([2.0, 5.0]))


def best_in_loop(xs):
    best = xs[0]
    for v in xs:
        best = max(best, v)
    return best, max(len(xs), 2)


def test_max_in_a_loop_over_an_array():
    agree(best_in_loop, np.array([1.0, 5.0, 2.0]))
    agree(best_in_loop, np.array([4, 9, -2]))


def mixed(n, x):
    return max(n, x)


def int_float_literal(x):
    return max(x, 0)


@pytest.mark.parametrize("fn, args", [(mixed, (np.int64(3), np.float64(2.5))), (mixed, (np.int64(2), np.float64(2.5))),
                                      (int_float_literal, (np.float64(-2.0),)),
                                      (int_float_literal, (np.float64(2.0),))])
def test_operands_of_different_kinds_give_the_winner_with_its_own_type(fn, args):
    """Python returns the winner with its own type, int or float by value: the graph carries
    which (autograph/operators/path_types.py)."""
    plain = agree(fn, *args)
    assert type(function(fn)(*args)) is type(plain.value)


def big_int_among_floats(x):
    return max(x, 2**60 + 1)


def test_an_int_operand_the_float64_comparison_cannot_hold_fails_the_run():
    with pytest.raises(OverflowError, match="1152921504606846977"):
        function(big_int_among_floats)(np.float64(1.0))


def ints_and_literals(n):
    return max(n, 0), min(n, 2, 5), max(n > 1, n > 5), min(n > 1, n > 5)


@pytest.mark.parametrize("n", [-3, 0, 3, 9])
def test_ints_with_python_int_literals_and_bools(n):
    agree(ints_and_literals, np.int64(n))
    agree(ints_and_literals, np.int32(n))


def instance_checks(x, v, n):
    k = int(x)
    return (isinstance(x, float), isinstance(x, np.floating), isinstance(x, np.ndarray), isinstance(x, (int, str)),
            isinstance(v, np.ndarray), isinstance(v, float), isinstance(n, np.integer), isinstance(n, int),
            isinstance(k, int), isinstance(k, np.integer), isinstance(x > 0, np.bool_),
            type(x) is np.float64, type(v) is np.ndarray, type(n).__name__, type(k) is int)


def test_isinstance_and_type_answer_for_the_value_the_tensor_stands_for():
    agree(instance_checks, np.float64(2.5), np.array([1, 2]), np.int64(3))
    agree(instance_checks, np.float32(2.5), np.array([[1.0]]), np.int32(3))


def dispatch(x):
    if isinstance(x, np.ndarray):
        return x.sum()
    return x * 2


def test_isinstance_picks_the_branch_python_picks():
    agree(dispatch, np.array([1.0, 2.0]))
    agree(dispatch, np.float64(1.5))


def bits(n, m):
    return n & m, n | m, n ^ m, ~n, n << 2, n >> 1, n & 7, 5 | n, n ^ -1, 1 << (n % 8), ~(n > 2), (n > 2) & (m > 2)


@pytest.mark.parametrize("n, m", [(12, 10), (-7, 3), (0, -1), (255, 1)])
def test_bitwise_operators_on_integer_tensors(n, m):
    agree(bits, np.int64(n), np.int64(m))
    agree(bits, np.int32(n), np.int32(m))


def shifts_in_a_loop(n):
    s = 0
    k = 1
    for i in range(n):
        s = s ^ (i << 2) | (k & 3)
        k = k << 1
    return s, k


def test_python_int_shift_beyond_int64_is_refused_not_wrapped():
    agree(shifts_in_a_loop, np.int64(20))
    with pytest.raises(OverflowError, match="beyond int64"):
        function(shifts_in_a_loop)(np.int64(70))  # Python: 2**70; numpy would wrap to 0


def float_bits(x):
    return x & 1


def test_bitwise_of_a_float_is_an_error_as_in_python():
    with pytest.raises(Exception, match="integer or bool"):
        function(float_bits)(np.float64(2.0))


def membership(n, xs):
    d = {1: 'a', 2: 'b'}
    return (n in (1, 2, 3), n not in [4, 5], n in {2, 9}, n in d, 3 in xs, n in xs, n in (n,), 'a' in ('a',),
            n * 0.5 in (1.0, 2.5))


@pytest.mark.parametrize("n", [2, 7, 5])
def test_in_compares_with_each_element_as_python_does(n):
    """A tensor in a set or dict would be looked up by identity (never found): compared instead."""
    agree(membership, np.int64(n), np.array([1.0, 2.0, 3.0]))


def truths(xs, a, b):
    return any(xs > 1), all(xs > 0), any([a > 1, b > 2]), all((a > 1, b, True)), any([a, 0]), abs(a > 2) + 1


@pytest.mark.parametrize("xs", [[1.0, 2.0], [0.0, -1.0], []])
def test_any_all_and_abs_of_bools(xs):
    agree(truths, np.array(xs), np.int64(5), np.float64(0.0))
    agree(truths, np.array(xs), np.int64(0), np.float64(3.0))


def any_of_matrix(m):
    return any(m)


def test_any_of_a_2d_array_raises_as_numpy_does():
    agree(any_of_matrix, np.array([[1.0, 0.0], [0.0, 0.0]]))


def numpy_constructors(x, n):
    k = int(x)
    y = float(n)
    return (np.int32(k), np.float32(y), np.int64(y * 2.5), np.bool_(k), np.float64(x) * 2, np.int64(n) + 1,
            np.float32(x), np.arange(n), np.arange(1, n), np.arange(np.int32(2), n).sum())


@pytest.mark.parametrize("x, n", [(2.5, 3), (-1.75, 0), (0.0, 5)])
def test_numpy_scalar_types_and_arange_on_tensors(x, n):
    agree(numpy_constructors, np.float64(x), np.int64(n))


def to_int(x):
    return np.int64(float(x))


def cast_edges(x):
    return np.int64(x), np.int32(x), np.float32(x)


@pytest.mark.parametrize("x", [np.nan, 1e20, 3e9, -2.7])
def test_numpy_constructors_of_python_and_numpy_floats_keep_numpys_errors_and_casts(x):
    """np.int64 of a Python float NaN raises ValueError (numpy's constructor); of an np.float64 it casts."""
    agree(to_int, np.float64(x))
    agree(cast_edges, np.float64(x))


def items(xs):
    a, b = xs.tolist()
    return a + b, xs[0].item(), xs[:1].item(), xs.sum().item()


def test_item_and_tolist_give_python_numbers():
    agree(items, np.array([1.5, 2.0]))
    agree(items, np.array([3, -4], dtype=np.int32))


def python_and_numpy_bools(n):
    k = 0
    for i in range(n):
        k += 1
    b = k < 3           # two Python ints: a Python bool
    c = n < 3           # a numpy value: np.True_
    d = not c           # `not` always gives a Python bool
    print(repr(b), repr(c), repr(d), repr(b == b), repr(bool(k)), repr(any([c, b])), repr(n in (1, 2)),
          repr(True + k), repr(k < 3 and k > -1))
    return b, c, d


@pytest.mark.parametrize("n", [0, 2, 5])
def test_python_bools_and_numpy_bools_print_as_python_prints_them(n):
    agree(python_and_numpy_bools, np.int64(n))


def counter_min(n, m):
    acc = n
    k = 0
    while k < 4:
        k += 1
        acc = min(k, 3) + acc  # the min of Python ints is a Python int: it takes acc's int32
    return acc, max(m, 1)


def test_min_of_python_numbers_stays_a_python_number():
    agree(counter_min, np.int32(2), np.int32(5))


def _bool_arrays(x, n):
    m = (x > 0) + (x < 2)
    if n > 0:
        m = m * (x > 1)
    return m, (x > 0) / (x < 2), max(x[0] > 0, x[1] > 0)


def test_arithmetic_on_bool_arrays_is_numpys():
    x = np.array([0.5, 1.5, 3.0])
    for n in (np.int64(1), np.int64(0)):
        got, want = function(_bool_arrays)(x, n), _bool_arrays(x, n)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w)


def _bool_scalars(x, y):
    return (x > 0) + (y > 0)


def test_arithmetic_on_two_bool_scalars_is_refused_with_advice():
    # np.True_ + np.True_ is True, True + True is 2: a graph cannot always tell which it has
    with pytest.raises(gc.GraphError, match=r"Add at .*test_builtin_semantics.py:\d+: arithmetic of two bools: "
                                            r".*int\(a\) \+ int\(b\)"):
        function(_bool_scalars)(np.float64(1.0), np.float64(2.0))
    with pytest.raises(TypeError, match="numpy boolean subtract"):
        function(lambda x: (x > 0) - (x > 1))(np.array([1.0, 2.0]))
