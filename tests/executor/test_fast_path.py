"""The untraced run loop takes shortcuts (inline delivery, dead Exits run where their
input arrives); a traced run takes none. Both must compute the same thing."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session


def _fib():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda a, b, i: i < n, lambda a, b, i: (b, a + b, i + 1),
                          [np.float64(1), np.float64(1), np.int64(1)])
    return g, r, {n: 30}


def _nested_in_cond():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def outer(i, acc):
            _, acc = gc.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a + i * j), [0, acc])
            return i + 1, acc

        r = gc.cond(n > 2, lambda: gc.while_loop(lambda i, a: i < n, outer, [0, 0])[1], lambda: n * 100)
    return g, r, {n: 6}


def _dead_loop():
    g, r, feeds = _nested_in_cond()
    return g, r, {next(iter(feeds)): 1}


def _parallel(p):
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [8], name="x")
            r = gc.while_loop(lambda i, acc: i < 12,
                              lambda i, acc: (i + 1, acc + gc.reduce_sum(gc.tanh(x * gc.cast(i, gc.float64)))),
                              [0, 0.0], parallel_iterations=p)
        return g, r, {x: np.linspace(-1, 1, 8)}
    return build


def _multi_output():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def body(i, v):
            a, b = gc.unstack(gc.stack([v, v * 2.0]))
            return i + 1, a + b

        r = gc.while_loop(lambda i, v: i < 4, body, [0, x])
    return g, r, {x: 1.0}


@pytest.mark.parametrize("build", [_fib, _nested_in_cond, _dead_loop, _parallel(1), _parallel(4), _multi_output])
def test_traced_and_untraced_runs_agree(build):
    g, fetch, feeds = build()
    s = Session(g, num_threads=1)
    fast = s.run(fetch, feeds)
    fast_stats = s.last_stats
    trace = []
    slow = s.run(fetch, feeds, trace=trace)
    slow_stats = s.last_stats
    np.testing.assert_equal(fast, slow)
    assert fast_stats.nodes == slow_stats.nodes == sum(1 for e in trace if e["event"] == "run")
    assert fast_stats.frames == slow_stats.frames
    assert fast_stats.max_iterations_in_flight == slow_stats.max_iterations_in_flight
