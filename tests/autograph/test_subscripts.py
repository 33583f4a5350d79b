"""Indexing Python values with graph tensors, against plain Python: a numpy array or a list
of numbers indexed (or sliced) by a tensor is a graph constant indexed in the graph; what
the graph cannot do like Python (a dict looked up by a tensor, a list of mixed kinds) is
refused with advice."""
import numpy as np
import pytest

from autograph import function
from _helpers import agree


def table_lookups(x, n):
    v = np.zeros(3) + 1.5
    table = [1, 2, 3, 5, 8]
    s = 0.0
    k = 0
    for i in range(n):
        s += v[i % 3] + x[n] + v[-i] + v[1:n].sum() + x[i:].sum()
        k += table[i] + table[-1 - i]
    return s, k, (0.5, 1.5)[n % 2], table[n]


@pytest.mark.parametrize("n", [0, 2, 4, 5, 7])
def test_arrays_and_lists_indexed_by_a_tensor(n):
    """n = 5 and 7 are out of range for `x[n]` / `table[n]`: IndexError on both sides."""
    agree(table_lookups, np.array([1.0, 0.25, -1.0, 2.0, 3.0]), np.int64(n))


def mixed_list(n):
    return [1, 2.5][n]


def dict_by_tensor(n):
    return {1: 2}[n]


@pytest.mark.parametrize("fn, match", [(mixed_list, "not all of one kind"), (dict_by_tensor, "dict looked up")])
def test_lookups_the_graph_cannot_do_like_python_are_refused(fn, match):
    with pytest.raises(TypeError, match=match):
        function(fn)(np.int64(1))


def tuple_keys_with_slices(m, k, rows):
    out = np.zeros((0, 3))
    for r in rows:
        if r[0] > 0:
            out = np.concatenate([out, r[None, :]], axis=0)
    return m[k, 1:], m[1:, k], m[::2, ::-1], m[1:2,], m[(0, 1)], m[..., 0], out


def test_tuple_keys_holding_slices_convert_to_valid_python():
    # astunparse wrote `r[(None, :)]`: the converted source did not compile (SyntaxError)
    rows = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 1.0], [3.0, 1.0, 2.0]])
    agree(tuple_keys_with_slices, np.arange(9.0).reshape(3, 3), np.int64(1), rows)
