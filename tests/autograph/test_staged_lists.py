"""Lists appended to in graph loops and graph conditions behave as the Python lists do."""
import numpy as np
import pytest

from autograph import function
from autograph.testing.differential import compare_values


def collect_rows(x, n):
    acc = []
    for i in range(n):
        acc.append(x * i)
    return acc


def nested_appends(x, n):
    acc = [x]
    for i in range(n):
        for e in x:
            acc.append(x * e)
    return np.stack(acc), len(acc), acc[-1], acc[1]


def conditional_append(x, n):
    acc = [x * 0.0]
    for i in range(n):
        if np.sum(x) > i:
            acc.append(x + i)
    total = 0.0
    for v in acc:
        total += np.sum(v)
    return total, len(acc)


def two_appends_then_stack_on_axis_1(x, n):
    acc = []
    k = 0
    while k < n:
        k += 1
        acc.append(x)
        acc.append(-x)
    return np.stack(acc, axis=1)


def array_of_list(x, n):
    acc = []
    for i in range(n):
        acc.append(x)
    return np.array(acc)


def array_of_scalars(n):
    acc = []
    for i in range(n):
        acc.append(i * 0.5)
    return np.asarray(acc)


def array_of_ints_as_float32(n):
    acc = []
    for i in range(n):
        acc.append(i * 2)
    return np.array(acc, dtype=np.float32)


@pytest.mark.parametrize("fn, args", [
    (collect_rows, (np.arange(3.0), np.int64(4))),
    (collect_rows, (np.arange(3.0), np.int64(0))),
    (nested_appends, (np.array([0.5, -1.0], np.float32), np.int64(2))),
    (conditional_append, (np.array([1.0, 2.0]), np.int64(5))),
    (conditional_append, (np.array([1.0, 2.0]), np.int64(0))),
    (two_appends_then_stack_on_axis_1, (np.arange(2.0), np.int64(3))),
    (array_of_list, (np.arange(2.0), np.int64(3))),
    (array_of_scalars, (np.int64(4),)), (array_of_scalars, (np.int64(0),)),
    (array_of_ints_as_float32, (np.int64(3),)),
])
def test_lists_built_in_graph_loops_match_python(fn, args):
    """Values, dtypes and structure (a list stays a list) exactly as plain Python."""
    assert compare_values(fn(*args), function(fn)(*args)) is None


def test_a_returned_list_is_a_python_list_of_numpy_values():
    out = function(collect_rows)(np.arange(2.0), np.int64(3))
    expected = collect_rows(np.arange(2.0), np.int64(3))
    assert isinstance(out, list) and len(out) == 3
    for a, b in zip(out, expected):
        assert isinstance(a, np.ndarray) and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def slice_of_list(x, n):
    acc = []
    for i in range(n):
        acc.append(x)
    return acc[1:]


def sum_of_list(x, n):
    acc = []
    for i in range(n):
        acc.append(x)
    return np.sum(acc)


def repeat_list(x, n):
    acc = []
    for i in range(n):
        acc.append(x)
    return acc * 2


@pytest.mark.parametrize("fn, message", [
    (slice_of_list, "slicing a list built in a graph loop"),
    (sum_of_list, r"np.sum\(...\) of it is not supported.*np.stack\(acc\) first"),
    (repeat_list, "unsupported operand"),
])
def test_what_the_graph_cannot_say_about_such_a_list_is_refused(fn, message):
    with pytest.raises(TypeError, match=message):
        function(fn)(np.arange(2.0), np.int64(2))


def test_np_array_of_an_empty_list_of_other_than_float_scalars_fails_the_run_saying_why():
    # numpy gives a float64 array of shape (0,) whatever the elements would have been
    with pytest.raises(ValueError, match="np.array of an empty list is numpy's float64 array of shape"):
        function(array_of_list)(np.arange(2.0), np.int64(0))
