"""executor/cost.py and what the executor does with it: a heavy op too small ever to be worth
a hop to the pool runs inline (decided once from static shapes, else per run from the values),
a large one may still go to the pool."""
import numpy as np
import pytest

import executor.blas
import graphcore as gc
from executor import Session
from executor.cost import POOL_MIN_NS, estimate_ns, static_estimate_ns


@pytest.fixture
def one_blas_thread(monkeypatch):
    monkeypatch.setattr(executor.blas, "threads", lambda: 1)


def _matmuls(n, dtype=gc.float64, known=True):
    g = gc.Graph()
    with g.as_default():
        shape = [n, n] if known else [None, None]
        a, b, x, y = (gc.placeholder(dtype, shape, name=k) for k in "abxy")
        first, second = gc.matmul(a, b), gc.matmul(x, y)
    return g, (a, b, x, y), first, second


def test_a_matmul_costs_by_its_multiply_adds_and_float32_half_as_much():
    g, _, first, _ = _matmuls(100)
    f64 = estimate_ns(first.op, (np.ones((100, 100)), np.ones((100, 100))))
    f32 = estimate_ns(first.op, (np.ones((100, 100), np.float32),) * 2)
    assert f64 == pytest.approx(2 * f32) and 0.02 < f64 / 100 ** 3 < 0.1
    assert static_estimate_ns(first.op) == pytest.approx(f64)
    assert static_estimate_ns(_matmuls(100, known=False)[2].op) is None


def test_small_matmuls_of_known_shapes_are_cheap_in_the_plan_and_run_without_the_pool(one_blas_thread):
    g, (a, b, x, y), first, second = _matmuls(8)
    s = Session(g, num_threads=2)
    plan = s._plan([first, second], [], [a, b, x, y])
    assert all(it.cheap for it in plan.items) and not plan.needs_pool
    out = s.run([first, second], {a: np.eye(8), b: np.full((8, 8), 2.0), x: np.eye(8), y: np.eye(8)})
    np.testing.assert_array_equal(out[0], np.full((8, 8), 2.0))
    assert s.last_stats.async_ops == 0
    g, (a, b, x, y), first, second = _matmuls(400)  # ~3 ms each: worth it
    plan = Session(g, num_threads=2)._plan([first, second], [], [a, b, x, y])
    assert static_estimate_ns(first.op) > POOL_MIN_NS
    assert not all(it.cheap for it in plan.items) and plan.needs_pool


@pytest.mark.parametrize("n, on_pool", [(8, 0), (300, 1)])
def test_matmuls_of_unknown_shapes_go_to_the_pool_only_when_worth_it(one_blas_thread, n, on_pool):
    g, (a, b, x, y), first, second = _matmuls(n, known=False)
    s = Session(g, num_threads=2)
    m = np.arange(n * n, dtype=np.float64).reshape(n, n) / n
    for _ in range(3):
        out = s.run([first, second], {a: m, b: m, x: m.T, y: m})
        np.testing.assert_allclose(out[0], m @ m)
        np.testing.assert_allclose(out[1], m.T @ m)
        assert s.last_stats.async_ops == on_pool  # (two ready together: one may go)


def test_a_small_matmul_in_a_loop_runs_inline_with_the_pool_there(one_blas_thread):
    g = gc.Graph()
    with g.as_default():
        w = gc.placeholder(gc.float32, [16, 16], name="w")
        h0 = gc.placeholder(gc.float32, [4, 16], name="h0")
        h = gc.while_loop(lambda i, h: i < 50, lambda i, h: (i + 1, gc.tanh(gc.matmul(h, w))), [0, h0])[1]
    s = Session(g, num_threads=2)
    rng = np.random.default_rng(1)
    wv, hv = rng.normal(size=(16, 16)).astype(np.float32) / 4, rng.normal(size=(4, 16)).astype(np.float32)
    want = hv
    for _ in range(50):
        want = np.tanh(want @ wv)
    for _ in range(3):
        np.testing.assert_allclose(s.run(h, {w: wv, h0: hv}), want, rtol=1e-5)
        assert s.last_stats.async_ops == 0
