"""Arrays whose shape changes in a loop on a tensor (grown with np.concatenate, in the loop
or in an `if` inside it), against plain Python: their length, `.shape`, `.ndim`, `.size`,
`np.shape` and the values computed from them. The loop variable's static shape must cover
every iteration's value: it once kept the first value's [0, 3], so len() after the loop
was 0 and `a.shape[0]` of an array grown in a loop was None."""
import numpy as np
import pytest

from _helpers import agree

import graphcore as gc
from executor import Session


def rows_kept_in_an_if(rows):
    out = np.zeros((0, 3))
    n = 0
    for r in rows:
        if r[0] > 0:
            out = np.concatenate([out, r[None, :]], axis=0)
            n += len(out)
    return n, len(out), out.shape[0], out.shape, out.size, np.shape(out), out.sum()


def doubled(n):
    a = np.ones(1)
    for _ in range(n):
        a = np.concatenate([a, a])
    return a.shape[0], a.shape, a.ndim, a.size, np.size(a), np.ndim(a), len(a), a.sum()


def shape_in_the_loop_test(n):
    a = np.zeros(1)
    while a.shape[0] < n:
        a = np.concatenate([a, a + a.shape[0]])
    return a


ROWS = np.array([[1.0, 2.0, 0.5], [-1.0, 0.0, 1.0], [3.0, 1.0, 2.0], [0.5, 0.5, 0.5]])


@pytest.mark.parametrize("rows", [ROWS, ROWS[1:2], ROWS[:0]])
def test_rows_appended_in_an_if_inside_a_loop(rows):
    agree(rows_kept_in_an_if, rows)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_an_array_doubled_in_a_loop(n):
    agree(doubled, np.int64(n))


@pytest.mark.parametrize("n", [0, 1, 5, 17])
def test_an_array_grown_until_its_shape_says_stop(n):
    agree(shape_in_the_loop_test, np.int64(n))


def test_a_loop_variable_shape_covers_a_next_value_less_known_than_its_first():
    g = gc.Graph()
    with g.as_default():
        p = gc.placeholder(gc.bool_, shape=[])
        start = gc.zeros([0, 2], dtype=gc.float64)

        def body(i, a):
            grown = gc.cond(p, lambda: gc.concat([a, gc.ones([1, 2], dtype=gc.float64)], axis=0), lambda: a)
            return i + 1, grown
        _, out = gc.while_loop(lambda i, a: i < 3, body, [0, start])
        assert out.shape.dims == (None, 2)
        rows = gc.shape(out)[0]
    assert Session(g).run(rows, feed_dict={p: True}) == 3


def test_a_pinned_shape_the_body_does_not_keep_is_refused():
    g = gc.Graph()
    with g.as_default():
        p = gc.placeholder(gc.bool_, shape=[])
        with pytest.raises(gc.StagingError, match=r"shape \[0,2\] entering .* but \[\?,2\] after one iteration"):
            gc.while_loop(lambda a: gc.size(a) < 3,
                          lambda a: gc.cond(p, lambda: gc.concat([a, gc.ones([1, 2], dtype=gc.float64)], axis=0),
                                            lambda: a),
                          [gc.zeros([0, 2], dtype=gc.float64)], shape_invariants=[gc.TensorShape([0, 2])])
