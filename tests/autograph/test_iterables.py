"""`for` over zip / enumerate of tensors is a graph loop over the first dimension (the
shortest length); dict.items() and other Python iterables stay Python."""
import numpy as np
import pytest

from _helpers import check
from autograph import StagingError, function
from autograph.testing.differential import compare_values


def zipped(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b
    return s


def enum_zip(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        s = s + float(i) * a - b
    return s


def zip_with_range_and_list(x, n):
    s = 0.0
    for a, k, w in zip(x, range(n), [1.0, 2.0, 3.0, 4.0]):
        s = s + a * float(k) * w
    return s


def enum_start(x):
    s = 0.0
    for i, a in enumerate(x, 2):
        s = s + float(i) * a
    return s


def test_zip_of_tensors_stops_at_shortest():
    x, y = np.arange(4.0), np.arange(1.0, 7.0)
    check(zipped, (x, y), (y, x), (x[:0], y), python_args=False)
    check(enum_zip, (x, y), (x[:1], y), python_args=False)
    check(enum_start, (x,), (x[:0],), python_args=False)
    check(zip_with_range_and_list, (x, 3), (x, 10), (x[:2], 3), python_args=False)
    g = function(zipped).get_concrete_function(x, y).graph
    assert "Enter" in g.op_types()


def rows_of_matrix(m, v):
    out = 0.0
    for row, w in zip(m, v):
        out = out + row * w
    return out


def test_zip_rows_of_a_matrix():
    m = np.arange(6.0).reshape(3, 2)
    check(rows_of_matrix, (m, np.array([1.0, -1.0, 2.0])), python_args=False)


def dict_items(x):
    s = x * 0
    for k, v in {"a": x, "b": 2 * x}.items():
        if k == "b":
            s = s + v
    return s


def test_dict_items_stays_python():
    check(dict_items, (3.0,), (np.arange(3.0),))
    assert "Enter" not in function(dict_items).get_concrete_function(np.float64(1.0)).graph.op_types()


def zip_with_string(x):
    s = 0.0
    for a, c in zip(x, "abc"):
        s = s + a
    return s


def test_zip_with_unsupported_python_value_is_an_error():
    with pytest.raises(StagingError, match="zip.. argument 2 is a Python str"):
        function(zip_with_string)(np.arange(3.0))


def reversed_range(n, start, step):
    s = 0
    for i in reversed(range(start, n, step)):
        s = 3 * s + i
        if s > 10_000:
            break
    return s


def reversed_rows(x):
    s = 0.0
    for k, a in enumerate(reversed(x)):
        s = s * 0.5 + a * k
    return s


def test_reversed_range_and_rows_as_python():
    """reversed() of a range with tensor bounds and of a tensor's rows: the items last
    first, as Python gives them (empty, negative steps, steps that overshoot)."""
    check(reversed_range, (5, 0, 1), (0, 0, 1), (7, -3, 2), (-4, 6, -3), (9, 2, 4), (3, 3, -1), (40, 0, 1))
    x = np.array([1.5, -2.0, 4.0, 0.25])
    check(reversed_rows, (x,), (x[:1],), (x[:0],), python_args=False)
    assert "Enter" in function(reversed_range).get_concrete_function(np.int64(5), 0, 1).graph.op_types()


def reversed_enumerate(x):
    s = 0.0
    for i, a in reversed(enumerate(x)):
        s = s + a
    return s


def test_reversed_of_an_iterator_is_python_s_type_error():
    with pytest.raises(TypeError, match="'enumerate' object is not reversible"):
        reversed_enumerate(np.arange(3.0))
    with pytest.raises(TypeError, match="'enumerate' object is not reversible"):
        function(reversed_enumerate)(np.arange(3.0))


def _python_iteration_of_known_length(xs, ys):
    pairs = list(enumerate(xs))
    (i0, a), (i1, b) = enumerate(ys)
    out = 0.0
    for i, v in reversed(list(enumerate(xs))):
        out = out * 10 + v
    return pairs[1][0], pairs[-1][1], i1 + a + b, tuple(zip(xs, ys)), out


def test_enumerate_and_zip_of_tensors_of_known_length_iterate_as_in_python():
    xs, ys = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0])
    assert compare_values(_python_iteration_of_known_length(xs, ys),
                          function(_python_iteration_of_known_length)(xs, ys)) is None


def test_python_iteration_of_a_length_known_only_at_run_time_is_refused():
    with pytest.raises(TypeError, match="length is only known when the graph runs .* loop over it with `for`"):
        function(lambda n: list(range(n)))(np.int64(3))
