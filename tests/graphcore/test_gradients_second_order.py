"""Second (and third) derivatives through cond inside while and while inside cond,
against closed forms and derivatives propagated by hand."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session


def _branchy_body(x):
    def body(i, v):
        v = gc.cond(v > 0.5, lambda: v * v - 0.25, lambda: gc.tanh(v) * x)
        return i + 1, v

    return body


def _branchy_by_hand(x: float, n: int):
    """(y, dy/dx, d2y/dx2) of the loop of `_branchy_body`, the chain rule applied by hand
    along the branches the values take."""
    v, vx, vxx = x, 1.0, 0.0
    for _ in range(n):
        if v > 0.5:
            v, vx, vxx = v * v - 0.25, 2 * v * vx, 2 * vx * vx + 2 * v * vxx
        else:
            t = np.tanh(v)
            s = 1 - t * t
            tx, txx = s * vx, -2 * t * s * vx * vx + s * vxx
            v, vx, vxx = t * x, tx * x + t, txx * x + 2 * tx
    return v, vx, vxx


@pytest.mark.parametrize("threads", [1, 2])
def test_second_order_cond_inside_while_mixed_branches(threads):
    n = 5
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.while_loop(lambda i, v: i < n, _branchy_body(x), [0, x])[1]
        dx, = gc.gradients(y, [x])
        d2, = gc.gradients(dx, [x])
    s = Session(g, num_threads=threads)
    # 0.9 takes the true branch twice then the false one; 0.56 true once; 1.7 always true;
    # 0.3 and -0.6 always false (all away from the kink at v = 0.5)
    for v in (0.3, 0.56, 0.9, 1.7, -0.6):
        np.testing.assert_allclose(s.run([y, dx, d2], {x: v}), _branchy_by_hand(v, n), rtol=1e-9)


def test_third_order_cond_on_iteration_parity():
    # v -> v * x on even iterations, v -> v * v on odd ones: 1, x, x^2, x^3, x^6
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def body(i, v):
            return i + 1, gc.cond(gc.equal(i % 2, 0), lambda: v * x, lambda: v * v)

        y = gc.while_loop(lambda i, v: i < 4, body, [gc.constant(np.int64(0)), gc.constant(1.0)])[1]
        dx, = gc.gradients(y, [x])
        d2, = gc.gradients(dx, [x])
        d3, = gc.gradients(d2, [x])
    s = Session(g, num_threads=1)
    for v in (0.7, -1.3):
        np.testing.assert_allclose(s.run([y, dx, d2, d3], {x: v}),
                                   [v ** 6, 6 * v ** 5, 30 * v ** 4, 120 * v ** 3], rtol=1e-12)


def test_second_order_nested_cond_inside_while():
    # the inner cond only runs on the true branch of the outer one
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def body(i, v):
            def outer_true():
                return gc.cond(v > 2.0, lambda: v * x, lambda: v * v)

            return i + 1, gc.cond(v > 0.0, outer_true, lambda: gc.exp(v) * x)

        y = gc.while_loop(lambda i, v: i < 3, body, [0, x])[1]
        dx, = gc.gradients(y, [x])
        d2, = gc.gradients(dx, [x])
    s = Session(g, num_threads=1)
    # x = 1.2: v = 1.2 -> 1.44 (v*v) -> 2.0736 (v*v) -> v*x: y = x^5, y'' = 20 x^3
    np.testing.assert_allclose(s.run([y, d2], {x: 1.2}), [1.2 ** 5, 20 * 1.2 ** 3], rtol=1e-12)
    # x = 2.5: v*x every time: y = x^4, y'' = 12 x^2
    np.testing.assert_allclose(s.run([y, d2], {x: 2.5}), [2.5 ** 4, 12 * 2.5 ** 2], rtol=1e-12)
    # x = -0.5: v = exp(x) x = u, then exp(u) x < 0 ... check against finite differences of dx
    e = 1e-6
    fd = (s.run(dx, {x: -0.5 + e}) - s.run(dx, {x: -0.5 - e})) / (2 * e)
    np.testing.assert_allclose(s.run(d2, {x: -0.5}), fd, rtol=1e-6)


@pytest.mark.parametrize("threads", [1, 2])
def test_second_order_while_inside_cond(threads):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def cube():
            return gc.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [0, gc.constant(1.0)])[1]

        def tanh_twice():
            return gc.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, gc.tanh(v)), [0, x])[1]

        y = gc.cond(x > 0.0, lambda: cube() + x, tanh_twice)
        dx, = gc.gradients(y, [x])
        d2, = gc.gradients(dx, [x])
    s = Session(g, num_threads=threads)
    np.testing.assert_allclose(s.run([y, dx, d2], {x: 1.5}), [1.5 ** 3 + 1.5, 3 * 1.5 ** 2 + 1, 6 * 1.5])
    v = -0.7  # tanh(tanh(x)): y' = s2 s1, y'' = -2 t2 s2 s1^2 - 2 t1 s1 s2 (t1 = tanh x, s1 = 1 - t1^2, ...)
    t1 = np.tanh(v)
    s1 = 1 - t1 * t1
    t2 = np.tanh(t1)
    s2 = 1 - t2 * t2
    want = [t2, s2 * s1, -2 * t2 * s2 * s1 * s1 - 2 * t1 * s1 * s2]
    np.testing.assert_allclose(s.run([y, dx, d2], {x: v}), want, rtol=1e-12)
