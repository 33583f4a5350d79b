"""`a op= b`: Python's in-place semantics where the graph can keep them, a refusal where
numpy would change an array another variable names, a warning for the caller's arrays."""
import warnings

import numpy as np
import pytest

from autograph import SideEffectWarning, function
from autograph.operators.augmented import InPlaceAliasError
from autograph.testing.differential import compare_values
from _helpers import agree


def accumulate_into_an_alias(x, y, n):
    total = x
    for i in range(n):
        total += y
    return total, x


def alias_in_a_branch(x, y):
    v = x
    if np.sum(y) > 0:
        v *= 2.0
    return v, x


def straight_alias(x):
    v = x
    v -= 1.0
    return x


@pytest.mark.parametrize("fn, args, name", [
    (accumulate_into_an_alias, (np.ones(2), np.ones(2), np.int64(2)), "total"),
    (alias_in_a_branch, (np.ones(2), np.ones(2)), "v"),
    (straight_alias, (np.ones(2),), "v"),
])
def test_an_in_place_change_to_an_array_another_name_holds_is_refused(fn, args, name):
    with pytest.raises(InPlaceAliasError,
                       match=rf"test_augmented_assignment.py:\d+: `{name} .=.*'x' shares its memory"):
        function(fn)(*args)


def fresh_arrays_and_scalars(x, y, n):
    total = x * 1.0
    for i in range(n):
        total += y
    s = 0.0
    s += np.sum(x)
    k = np.int64(0)
    k += n
    first = x[0]
    first += 1.0  # a numpy scalar: never changed in place, so x keeps its value
    return total, s, k, first, x


def python_values(x):
    a = [1]
    b = a
    a += [2]  # a Python list: in place, b sees it, as in Python
    c = 3
    c **= 2
    return b, c, x


@pytest.mark.parametrize("fn, args", [
    (fresh_arrays_and_scalars, (np.arange(2.0), np.ones(2), np.int64(3))),
    (python_values, (np.ones(1),)),
])
def test_augmented_assignments_that_mean_the_same_in_the_graph_match_python(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SideEffectWarning)
        assert compare_values(fn(*[np.copy(a) for a in args]), function(fn)(*args)) is None


def changes_its_argument(x, y):
    x += y
    return x


def test_changing_the_callers_array_in_place_writes_it_back_as_python_does():
    caller = np.ones(2)
    out = function(changes_its_argument)(caller, np.ones(2))
    np.testing.assert_array_equal(out, [2.0, 2.0])
    np.testing.assert_array_equal(caller, [2.0, 2.0])  # issue 25: Python changes the caller's array


# -- an array changed in place keeps its dtype and shape, as numpy's in-place ops do ---------

def accumulate(xs, n):
    acc = np.zeros(2)
    for i in range(n):
        acc += xs
    return acc


def float_into_int_array(xs):
    acc = np.zeros(2, dtype=np.int64)
    acc += xs
    return acc


def float_into_int_tensor(xs):
    acc = xs * 2
    acc += 1.5
    return acc


def into_float32(xs):
    acc = np.zeros(2, dtype=np.float32)
    acc += xs
    acc *= 2
    return acc


def wider_into_narrower(v, m):
    acc = v * 1.0
    acc += m
    return acc


def python_int_too_big(v):
    acc = v * 1
    acc += 10 ** 20
    return acc


@pytest.mark.parametrize("fn, args", [
    (accumulate, (np.array([1.0, 2.0]), np.int64(3))),
    (float_into_int_array, (np.array([1.5, 2.0]),)),           # numpy: cannot cast float64 to int64
    (float_into_int_tensor, (np.array([1, 2]),)),
    (into_float32, (np.array([1.5, 2.0]),)),                   # stays float32
    (wider_into_narrower, (np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]]))),  # non-broadcastable output
    (wider_into_narrower, (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 2.0]))),
    (python_int_too_big, (np.array([1, 2]),)),                 # OverflowError: Python int out of bounds
])
def test_in_place_ops_on_arrays_keep_numpys_dtype_and_shape_rules(fn, args):
    agree(fn, *args)


def kept_in_a_list(x):
    v = x * 2.0
    acc = [v]
    v += 1.0
    return np.stack(acc)


def appended_in_a_loop(x, n):
    v = x * 2.0
    acc = [x]
    for i in range(n):
        acc.append(v)
        v += 1.0
    return np.stack(acc)


def kept_in_a_dict(x):
    v = x * 2.0
    d = {"a": v}
    v *= 3.0
    return d["a"]


def passed_on_only(x):
    v = x * 2.0
    w = np.stack([v, x])  # a list literal only passed to a function holds nothing afterwards
    v += 1.0
    a, b = v, w
    return a, b


@pytest.mark.parametrize("fn, args", [(kept_in_a_list, (np.array([1.0, 2.0]),)),
                                      (appended_in_a_loop, (np.array([1.0, 2.0]), np.int64(2))),
                                      (kept_in_a_dict, (np.array([1.0, 2.0]),))])
def test_changing_an_array_in_place_that_a_container_holds_is_refused(fn, args):
    """In Python the list / dict holds the very array, so it sees the change; the graph's would not."""
    with pytest.raises(InPlaceAliasError, match="puts 'v' into a list, dict or object"):
        function(fn)(*args)


def test_a_literal_passed_to_a_function_does_not_hold_the_array():
    agree(passed_on_only, np.array([1.0, 2.0]))


# -- what numpy shares: a constant taken before an in-place change, copies, views ---------

def captured_then_changed(x):
    v = np.ones(2)
    y = x + v        # the graph takes v's value here
    v *= 2           # ... and Python changes v afterwards, in place
    v[0] = 5.0
    return y, v


def copied_then_changed(x):
    y = x.copy()
    y += 1.0
    z = np.copy(x)
    z[0] = 7.0
    return x, y, z


def started_in_a_loop(x):
    v = np.ones(2) * 0.5
    k = 0
    while k < 3 and (x < -1.0).all():  # a loop on a tensor that may not run: its first trace must not change v
        k += 1
        v *= -1.0
    return v


@pytest.mark.parametrize("fn, args", [(captured_then_changed, (np.array([1.0, 2.0]),)),
                                      (copied_then_changed, (np.array([1.0, 2.0]),)),
                                      (started_in_a_loop, (np.array([-1.0, -0.5]),)),
                                      (started_in_a_loop, (np.array([-2.0, -3.0]),))])
def test_numpy_values_changed_in_place_while_tracing_keep_pythons_values(fn, args):
    agree(fn, *args)


def view_changed(x):
    v = x[1:]
    v += 1.0
    return x, v


def base_changed(x):
    y = x * 1.0
    v = y[1:]
    y += 1.0
    return y, v


def reshaped_then_item_set(x):
    y = x * 1.0
    v = y.reshape(3, 1)
    y[0] = 9.0
    return v


@pytest.mark.parametrize("fn", [view_changed, base_changed, reshaped_then_item_set])
def test_an_in_place_change_seen_through_a_view_is_refused(fn):
    """numpy's basic slices and reshapes share memory: the other name would change in Python."""
    with pytest.raises(InPlaceAliasError, match="shares its memory"):
        function(fn)(np.array([1.0, 2.0, 3.0]))


def _halves_what_it_iterates(x):
    v = x + 0.0
    s = 0.0
    for e in v:
        v *= 0.5  # numpy: later iterations see the halved items
        s += e
    return s


def _sets_an_item_of_what_it_iterates(x):
    v = x + 0.0
    s = 0.0
    for e in v:
        v[2] = 10.0
        s += e
    return s


def _rebinds_what_it_iterates(x):
    v = x + 0.0
    s = 0.0
    for e in v:
        v = v * 0.5  # a new array: the loop goes on over the old one, in Python too
        s += e
    return s, v


@pytest.mark.parametrize("fn, what", [(_halves_what_it_iterates, r"`v \*= \.\.\.`"),
                                      (_sets_an_item_of_what_it_iterates, r"`v\[\.\.\.\] = \.\.\.`")])
def test_an_in_place_change_of_the_array_a_loop_iterates_is_refused(fn, what):
    # it gave the sum of the old items where Python sums the changed ones
    with pytest.raises(InPlaceAliasError, match=rf"{what} changes the array in place in numpy, and the loop at line "
                                                r"\d+ iterates over 'v'"):
        function(fn)(np.array([1.0, 2.0, 3.0]))


def test_rebinding_the_array_a_loop_iterates_keeps_pythons_values():
    x = np.array([1.0, 2.0, 3.0])
    got, want = function(_rebinds_what_it_iterates)(x), _rebinds_what_it_iterates(x)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
