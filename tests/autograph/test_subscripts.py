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
