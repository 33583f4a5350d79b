"""`y[k] = v` and `y[k] op= v` on arrays in converted code, against plain Python: the graph
makes a new array with the items replaced (numpy's broadcasting and casting: 2.7 into an int
array is 2) and rebinds the name, so filling an array in a loop on a tensor works; gradients
flow to the values written and to the items kept (finite differences). What Python would
also change elsewhere (another name for the array, a list holding it) is refused."""
import numpy as np
import pytest

import autograph
from autograph import function
from autograph.operators.augmented import InPlaceAliasError
from _helpers import agree


def fill(x, n):
    out = np.zeros(5)
    ints = np.zeros(4, dtype=np.int64)
    for i in range(n):
        out[i] = x * i
        ints[i % 4] = x * i   # numpy casts into the int array: truncation
        ints[i % 4] += 1
    return out, ints


def slices(xs, n):
    y = xs * 2.0
    y[0] = -1.0
    y[1:n] = 7.0
    y[n:] += xs[n:]
    y[-1] *= 3
    return y


def grid(m, n):
    out = np.zeros((3, 3))
    for i in range(n):
        out[i, i] = m[i, 0]
        out[i, 1:] = m[i] * 0.5
    return out


def branches(x):
    y = np.zeros(3)
    if x > 0:
        y[0] = x
    else:
        y[1] = -x
    return y


def lists_and_dicts(n):
    lst = [0, 0, 0]
    d = {}
    for i in range(3):
        lst[i] = n * i
        d[i % 2] = i
    lst[1] += 5
    return lst, d


def list_at_a_tensor_index(n):
    lst = [0, 0, 0]
    lst[n] = 1
    return lst


def test_a_python_list_given_an_item_at_a_tensor_index_is_refused():
    with pytest.raises(TypeError, match="make it a numpy array|Make it a numpy array"):
        function(list_at_a_tensor_index)(np.int64(1))


@pytest.mark.parametrize("fn, args", [
    (fill, (np.float64(1.5), np.int64(4))), (fill, (np.float64(-0.7), np.int64(0))),
    (slices, (np.array([1.0, 2.0, 3.0, 4.0]), np.int64(2))),
    (grid, (np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.int64(3))),
    (branches, (np.float64(-2.0),)), (branches, (np.float64(2.0),)),
    (lists_and_dicts, (np.int64(3),)),
])
def test_item_assignment_gives_what_python_gives(fn, args):
    agree(fn, *args)


def out_of_range(n):
    out = np.zeros(3)
    out[n] = 1.0
    return out


def test_an_index_out_of_range_raises_index_error():
    agree(out_of_range, np.int64(5))


def prefix_sums(xs):
    out = np.zeros_like(xs)
    s = 0.0
    for i in range(len(xs)):
        s += xs[i] * xs[i]
        out[i] = s
    out[0] = xs[1] * 3.0
    return np.sum(out * np.arange(1, 4))


def test_gradient_through_item_assignment_matches_finite_differences():
    xs = np.array([0.5, -1.2, 2.0])
    got = autograph.grad(prefix_sums)(xs)
    eps = 1e-6
    expected = [(prefix_sums(xs + eps * e) - prefix_sums(xs - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def aliased(xs):
    y = np.zeros(2)
    z = y
    y[0] = xs[0]
    return y, z


def held(xs):
    y = xs * 1.0
    keep = [y]
    y[0] = 5.0
    return keep[0]


@pytest.mark.parametrize("fn", [aliased, held])
def test_an_item_change_another_name_or_a_list_would_see_is_refused(fn):
    with pytest.raises(InPlaceAliasError):
        function(fn)(np.array([1.0, 2.0]))


def masked(xs, t):
    y = xs * 1.0
    y[y < 0] = 0.0
    y[y > t] += 10
    z = np.zeros(3, dtype=np.int64)
    z[xs > 0] = 2.7   # numpy casts into the int array
    return y, z


@pytest.mark.parametrize("t", [0.5, 5.0])
def test_a_bool_mask_with_one_value(t):
    agree(masked, np.array([1.0, -2.0, 3.0]), np.float64(t))


def masked_with_an_array(xs):
    y = xs * 1.0
    y[y < 0] = xs[:1]
    return y


def test_a_bool_mask_with_an_array_of_values_is_refused():
    """numpy fills the true places in order from the values: their count is only known when the graph runs."""
    with pytest.raises(TypeError, match="bool mask"):
        function(masked_with_an_array)(np.array([1.0, -2.0]))


def relu_by_mask(x):
    y = x * 2.0
    y[y < 0] = 0.0
    return np.sum(y * x)


def test_gradient_through_a_mask_assignment():
    x = np.array([0.5, -1.5, 2.0])
    eps = 1e-6
    expected = [(relu_by_mask(x + eps * e) - relu_by_mask(x - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(autograph.grad(relu_by_mask)(x), expected, rtol=1e-6)
