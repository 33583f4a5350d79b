"""Weak typing (JAX's weak_type): Python numbers, and tensors computed from them only,
take the dtype of the strongly typed value they meet, as numpy 2 does for Python numbers."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session


def _run(g, fetches, feeds=None):
    return Session(g).run(fetches, feed_dict=feeds or {})


def test_weak_tensor_takes_the_strong_dtype():
    g = gc.Graph()
    with g.as_default():
        x32 = gc.placeholder(gc.int32, shape=[])
        k = gc.add(3, 4)                  # Python numbers only: weak int64 (gc.constant is strong)
        assert k.weak and k.dtype == gc.int64
        y = x32 + k                       # like np.int32(x) + 7: int32
        assert y.dtype == gc.int32 and not y.weak
        f = gc.placeholder(gc.float32, shape=[])
        assert (f * k).dtype == gc.float32
    assert _run(g, y, {x32: np.int32(5)}) == 12


def test_weak_float_meets_int_tensor_as_python_would():
    g = gc.Graph()
    with g.as_default():
        x32 = gc.placeholder(gc.int32, shape=[])
        half = gc.divide(1, 2)            # weak float64
        assert half.weak and half.dtype == gc.float64
        y = x32 + half
    assert y.dtype == gc.float64
    assert _run(g, y, {x32: np.int32(5)}) == 5.5


def test_strong_tensors_still_promote_and_opaque_values_do_not_mix():
    g = gc.Graph()
    with g.as_default():
        a = gc.placeholder(gc.int32, shape=[])
        b = gc.placeholder(gc.int64, shape=[])
        assert (a + b).dtype == gc.int64 and not (a + b).weak
        with pytest.raises(gc.GraphError, match="do not mix"):
            gc.add(gc.placeholder(gc.variant, shape=[]), a)


@pytest.mark.parametrize("other", ["int32", "int64", "float32", "float64", "weak int", "weak float"])
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "less"])
def test_a_bool_meets_a_number_as_in_numpy(other, op):
    """numpy counts a bool as the number it meets (True + 1 == 2, x * (x > 0)): the same
    dtype and value, either operand first."""
    values = {"int32": np.int32(-3), "int64": np.int64(5), "float32": np.float32(-1.5), "float64": np.float64(2.25),
              "weak int": 7, "weak float": 0.5}
    for flag in (np.True_, np.False_):
        for swap in (False, True):
            g = gc.Graph()
            with g.as_default():
                p = gc.placeholder(gc.bool_, shape=[])
                v = values[other]
                q = v if other.startswith("weak") else gc.placeholder(gc.as_dtype(np.asarray(v).dtype), shape=[])
                args = (q, p) if swap else (p, q)
                out = getattr(gc, op)(*args)
            feeds = {p: flag} if other.startswith("weak") else {p: flag, q: v}
            expected = getattr(np, op)(*((v, flag) if swap else (flag, v)))
            got = _run(g, out, feeds)
            assert got == expected and np.asarray(got).dtype == np.asarray(expected).dtype, (flag, swap, got, expected)


def test_arithmetic_of_two_bools_is_refused_at_the_user_s_line():
    g = gc.Graph()
    with g.as_default():
        p = gc.placeholder(gc.bool_, shape=[])
        with pytest.raises(gc.GraphError, match=r"Mul at .*test_weak_types.py:\d+: arithmetic of two bools"):
            p * p


def test_negation_and_comparison():
    g = gc.Graph()
    with g.as_default():
        k = -gc.multiply(2, 3)
        assert not gc.constant(2).weak and not (gc.constant(2) * 3).weak
        assert k.weak
        assert (k < 3).weak and (k == k).weak  # two Python numbers compare to a Python bool (prints True)
        assert not (gc.constant(2) < 3).weak and not (k < gc.constant(2)).weak  # a numpy bool


def test_python_number_with_a_tensor_after_its_graph_block():
    g = gc.Graph()
    with g.as_default():
        v = gc.placeholder(gc.float64, shape=[])
    w = v * 2.0  # outside the `with`: built in v's graph
    assert w.graph is g
    assert _run(g, w, {v: 1.5}) == 3.0
