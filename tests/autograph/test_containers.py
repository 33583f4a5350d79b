"""Item assignments `d['k'] = ...` and `a[i] = ...` on Python containers inside tensor
loops and branches: the container's items are carried as loop variables / cond outputs
and written back in place."""
import numpy as np
import pytest

from _helpers import agree, check
from autograph import StagingError, function


def dict_in_loop(n):
    d = {"total": 0, "count": 0, "name": "acc"}
    for i in range(n):
        d["total"] += i
        d["count"] = d["count"] + 1
    return d["total"], d["count"], d["name"] == "acc"


def list_items_in_loop(n):
    a = [0, 1, 2]
    for i in range(n):
        for j in range(3):          # a Python loop inside the tensor loop: j is a Python int
            a[j] = a[j] + i * j
    return a


def nested_items(n):
    m = [[1, 2], [3, 4]]
    for _ in range(n):
        m[0][1] = m[0][1] * 2
        m[1][0] += m[0][1]
    return m


def test_items_in_tensor_loops():
    check(dict_in_loop, (0,), (4,))
    check(list_items_in_loop, (0,), (3,))
    check(nested_items, (0,), (3,))


def items_in_branch(x):
    d = {"a": 1.0, "b": 2.0}
    a = [x, x]
    if x > 0:
        d["a"] = x * 10
        a[1] = -x
    else:
        d["b"] = x
    return d, a


def test_items_in_tensor_if():
    check(items_in_branch, (3.0,), (-2.0,))


class Holder:
    def __init__(self):
        self.vals = {"x": 0}


H = Holder()


def attribute_container(n):
    H.vals = {"x": 0}
    alias = H.vals
    for i in range(n):
        H.vals["x"] += i
    return alias["x"]


def test_write_back_in_place_keeps_aliases():
    check(attribute_container, (0,), (5,), tensor_args=False)  # a Python loop: runs as Python
    # in a loop on a tensor the global object would get a graph tensor and keep it across calls
    with pytest.raises(StagingError, match=r"'H.vals\['x'\]' changes a global object inside a loop"):
        function(attribute_container)(np.int64(5))


def tuple_rebound(n):
    t = (0, 1.0)
    for i in range(n):
        t = (t[0] + i, t[1] * 2)
    return t


def test_container_rebound_with_same_shape():
    check(tuple_rebound, (0,), (4,))


def new_key(n):
    d = {"a": 0}
    for i in range(n):
        d["b"] = i
    return d


def numpy_items(n):
    a = np.zeros(3)
    for i in range(n):
        a[0] = i
    return a


def test_unsupported_container_changes_are_errors():
    with pytest.raises(StagingError, match="'d' is a dict with keys \\['a'\\] before the loop"):
        function(new_key)(np.int64(2))


def test_numpy_items_assigned_in_a_loop_on_a_tensor_are_graph_values():
    """(refused before item assignment made a new graph array: see test_item_assignment.py)"""
    for n in (0, 2):
        agree(numpy_items, np.int64(n))


def find_pair(n, target):
    for i in range(n):
        for j in range(n):
            if i * j == target:
                return i, j
    return -1, -1


def test_tuple_returned_from_nested_tensor_loops():
    check(find_pair, (4, 6), (4, 0), (3, 7), (0, 1))


def arrays_appended_then_graph_loop(x, n):
    acc = [np.abs(x * 2.0)]
    v = np.ones(2)
    for _ in range(2):        # a Python loop: numpy arrays appended
        acc.append(np.abs(v))
    for i in range(n):        # a loop on a tensor appends more
        acc.append(x + i)
    return np.stack(acc)


def test_a_list_of_numpy_arrays_appended_to_in_a_graph_loop():
    """(the loop's first trace works on copies of the arrays: they are not "changed items")"""
    agree(arrays_appended_then_graph_loop, np.array([-0.5, 2.0]), np.int64(3))
