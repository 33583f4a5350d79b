"""Gradients through cond and while_loop, checked against finite differences and
closed forms; second derivatives; accumulation of only the needed intermediates."""
import numpy as np
import pytest

import graphcore as gc
import executor
from executor import Session

from gradcheck import check_graph_grads
from graphcore.gradients import accumulated_tensors
from graphcore.testing.models import rnn

rng = np.random.default_rng(0)


def _power_loop(x, n):
    return gc.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * x), [0, gc.constant(1.0)])[1]


@pytest.mark.parametrize("threads", [1, 2])
def test_power_by_while_loop(threads):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = _power_loop(x, 7)
        dx, = gc.gradients(y, [x])
    s = Session(g, num_threads=threads)
    for v in (0.7, 1.3, -1.1):
        out = s.run([y, dx], {x: v})
        np.testing.assert_allclose(out, [v ** 7, 7 * v ** 6], rtol=1e-12)


def test_power_loop_with_runtime_trip_count_and_initial_value():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        x0 = gc.placeholder(gc.float64, [], name="x0")
        n = gc.placeholder(gc.int64, [], name="n")
        y = gc.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * x), [gc.constant(np.int64(0)), x0])[1]
        dx, dx0 = gc.gradients(y, [x, x0])
    s = Session(g, num_threads=1)
    for k in (0, 1, 4):
        out = s.run([dx, dx0], {x: 1.2, x0: 0.5, n: k})
        np.testing.assert_allclose(out, [0.5 * k * 1.2 ** (k - 1) if k else 0.0, 1.2 ** k], rtol=1e-12)


def test_rnn_20_steps_against_finite_differences():
    m = rnn(20, 4, 3)
    check_graph_grads(m.graph, m.loss, m.weights, m.grads, m.feeds(rng, weight_scale=0.5))


def test_double_loop():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [2], name="x")

        def outer_body(i, v):
            def inner_body(j, w):
                return j + 1, gc.tanh(w) * x + w

            _, w = gc.while_loop(lambda j, w: j < i + 1, inner_body, [0, v])
            return i + 1, w * 0.5

        _, y = gc.while_loop(lambda i, v: i < 3, outer_body, [0, x])
        loss = gc.reduce_sum(y * y)
        dx, = gc.gradients(loss, [x])
    check_graph_grads(g, loss, [x], [dx], {x: np.array([0.3, -0.8])})


def _piecewise(x):
    def body(i, v):
        v = gc.cond(v > 0.5, lambda: v * v - 0.25, lambda: gc.tanh(v) * x)
        return i + 1, v

    return gc.while_loop(lambda i, v: i < 6, body, [0, x])[1]


def test_cond_inside_while():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = _piecewise(x)
        dx, = gc.gradients(y, [x])
    for v in (0.3, 0.9, 1.7, -0.6):
        check_graph_grads(g, y, [x], [dx], {x: v})


def test_while_inside_cond():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.cond(x > 0.0, lambda: _power_loop(x, 3) + x, lambda: x * 2.0)
        dx, = gc.gradients(y, [x])
    s = Session(g, num_threads=1)
    np.testing.assert_allclose(s.run(dx, {x: 1.5}), 3 * 1.5 ** 2 + 1)
    np.testing.assert_allclose(s.run(dx, {x: -1.5}), 2.0)
    check_graph_grads(g, y, [x], [dx], {x: 0.8})


def test_maximum_iterations_early_exit():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.while_loop(lambda i, v: i < 100, lambda i, v: (i + 1, v * x), [0, gc.constant(1.0)],
                          maximum_iterations=4)[1]
        dx, = gc.gradients(y, [x])
    s = Session(g, num_threads=1)
    np.testing.assert_allclose(s.run([y, dx], {x: 1.1}), [1.1 ** 4, 4 * 1.1 ** 3])


def test_second_derivative_of_power_loop():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = _power_loop(x, 5)
        dx, = gc.gradients(y, [x])
        d2, = gc.gradients(dx, [x])
        d3, = gc.gradients(d2, [x])
    s = Session(g, num_threads=1)
    np.testing.assert_allclose(s.run([dx, d2, d3], {x: 1.3}), [5 * 1.3 ** 4, 20 * 1.3 ** 3, 60 * 1.3 ** 2])


def test_second_derivative_of_cond():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.cond(x < 1.0, lambda: x * x * x, lambda: gc.exp(x))
        d2, = gc.gradients(gc.gradients(y, [x])[0], [x])
    s = Session(g, num_threads=1)
    np.testing.assert_allclose(s.run(d2, {x: 0.5}), 6 * 0.5)
    np.testing.assert_allclose(s.run(d2, {x: 2.0}), np.exp(2.0))


def test_only_needed_intermediates_are_accumulated():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")

        def body(i, v, junk):
            a = v * 2.0            # linear: its gradient needs nothing from the forward pass
            b = gc.exp(a)          # needs exp's output
            c = junk + gc.exp(v)   # feeds only a loop variable the loss does not read
            d = gc.tanh(c) * 3.0
            return i + 1, b * 0.1 + v, d

        _, y, _ = gc.while_loop(lambda i, v, junk: i < 4, body, [0, x, x])
        dx, = gc.gradients(gc.reduce_sum(y), [x])
    loop = next(c for c in g.while_contexts.values() if not hasattr(c, "forward"))
    acc = accumulated_tensors(loop)
    assert [t.op.type for t in acc] == ["Exp"]
    check_graph_grads(g, gc_sum(g, y), [x], [dx], {x: np.array([0.1, -0.2, 0.3])})


def gc_sum(g, y):
    with g.as_default():
        return gc.reduce_sum(y)


def test_second_derivative_through_nested_loops_multithreaded():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def outer_body(i, v):
            _, w = gc.while_loop(lambda j, w: j < 2, lambda j, w: (j + 1, w * x), [0, v])
            return i + 1, w

        y = gc.while_loop(lambda i, v: i < 3, outer_body, [0, gc.constant(1.0)])[1]
        dx, = gc.gradients(y, [x])
        d2, = gc.gradients(dx, [x])
    out = Session(g, num_threads=2).run([y, dx, d2], {x: 1.1})
    np.testing.assert_allclose(out, [1.1 ** 6, 6 * 1.1 ** 5, 30 * 1.1 ** 4])


def test_gradient_of_loop_whose_new_value_ignores_the_old_one_ends():
    """The backward loop's variable for `r` has no gradient from the body: its zeros must
    be dead when the loop ends (a constant, live in every iteration, made it loop forever)."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, shape=[], name="x")
        _, r = gc.while_loop(lambda i, r: i < 3, lambda i, r: (i + 1, x * 2.0), [np.int64(0), 0.0])
        dx = gc.gradients(r, [x])[0]
    with executor.deadline(10):
        assert Session(g).run([r, dx], feed_dict={x: 0.5}) == [1.0, 2.0]
