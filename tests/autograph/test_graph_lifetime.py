"""A traced function's graphs go when the function goes: no module-level table keeps them
(a long run of traced functions grew by thousands of objects each, and Python's full
collections took seconds: graphcore/side_tables.py)."""
import gc as pygc
import weakref

import numpy as np

import autograph
import graphcore as gc


def _program():
    def f(n, x):
        total = 0.0
        i = 0
        seen = []
        while i < n:
            if x > 1.0:
                total += x * 0.5
            else:
                total -= 1
            seen.append(total)
            i += 1
        print("done", total)
        assert total < 1e9, "too big"
        return total, len(seen)
    return f


def test_graphs_of_a_dropped_function_are_collected(capsys):
    refs = []
    for k in range(3):
        f = autograph.function(_program())
        assert f(np.int64(3), np.float64(2.0 + k)) == _program()(3, 2.0 + k)
        refs.append(weakref.ref(f.get_concrete_function(np.int64(3), np.float64(2.0)).graph))
        del f
    pygc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_a_variable_does_not_keep_the_graphs_it_was_read_in():
    v = gc.Variable(np.float64(1.0))
    refs = []
    for _ in range(2):
        g = gc.Graph()
        with g.as_default():
            v.read_value()
        refs.append(weakref.ref(g))
        del g
    pygc.collect()
    assert [r() for r in refs] == [None, None]


class _Model:
    def __init__(self, w):
        self.w = w

    @autograph.function
    def step(self, x):
        y = x
        while y < 10.0:
            y = y * self.w
        return y


def test_an_object_whose_method_was_traced_is_collected():
    """A training loop that makes a model per run must not keep every model (and graph)."""
    refs = []
    for k in range(3):
        m = _Model(2.0 + k)
        y = 1.5
        while y < 10.0:
            y *= 2.0 + k
        assert m.step(np.float64(1.5)) == y
        assert m.step is m.step  # bound once per object: its traces are kept while it lives
        refs.append(weakref.ref(m))
        del m
    pygc.collect()
    assert [r() for r in refs] == [None, None, None]
