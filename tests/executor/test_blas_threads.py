"""A run whose every matmul is small runs with BLAS on one thread (its spinning threads
would take the core the executor needs on a loaded machine), and gives BLAS its thread
count back when it ends, also when it fails; large matmuls keep BLAS as it is."""
import threading

import numpy as np
import pytest

import graphcore as gc
from executor import Session, blas
from graphcore.registry import CHEAP, define_op, registered_ops

pytest.importorskip("threadpoolctl")
if not blas._blas_controllers():
    pytest.skip("no BLAS library that threadpoolctl can control", allow_module_level=True)


@pytest.fixture
def two_blas_threads(monkeypatch):
    """BLAS on two threads, on a busy machine (where small matmuls take one thread)."""
    monkeypatch.setattr(blas, "machine_busy", lambda: True)
    controllers = blas._blas_controllers()
    before = [c.num_threads for c in controllers]
    for c in controllers:
        c.set_num_threads(2)
    yield
    for c, n in zip(controllers, before):
        c.set_num_threads(n)


def _spy_op():
    """An op that records how many threads BLAS had when its kernel ran."""
    seen = []
    name = "TestBlasThreadsSpy"
    op = registered_ops().get(name)
    if op is None:
        op = define_op(name, shape=lambda x: (x.dtype, x.shape), kernel=None, cost=CHEAP)
        op.not_differentiable("a test's spy")

    def kernel(x):
        seen.append(blas.threads())
        if np.any(np.isnan(x)):
            raise ValueError("a NaN reached the spy")
        return x
    op.kernel = kernel
    return op, seen


def _loop_of_matmuls(n: int, size: int, spy):
    g = gc.Graph()
    with g.as_default():
        h0 = gc.placeholder(gc.float32, [32, size], name="h")
        w = gc.placeholder(gc.float32, [size, size], name="w")
        _, h = gc.while_loop(lambda i, h: i < n, lambda i, h: (i + 1, spy(gc.tanh(gc.matmul(h, w)))),
                             [np.int64(0), h0])
    return g, h0, w, h


def test_a_run_of_small_matmuls_has_blas_on_one_thread_and_restores_it(two_blas_threads):
    spy, seen = _spy_op()
    g, h0, w, h = _loop_of_matmuls(3, 64, spy)
    s = Session(g)
    rng = np.random.default_rng(0)
    hv, wv = rng.standard_normal((32, 64), np.float32), rng.standard_normal((64, 64), np.float32) * 0.1
    out = s.run(h, {h0: hv, w: wv})
    expected = hv
    for _ in range(3):
        expected = np.tanh(expected @ wv)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    assert seen == [1, 1, 1]
    assert blas.threads() == 2  # given back


def test_a_straight_line_run_of_a_loop_of_small_matmuls_has_blas_on_one_thread_too(two_blas_threads, monkeypatch):
    """(a loop its runner runs whole, as one step of a straight-line plan: executor/straight_line.py)"""
    import executor.executor  # noqa: PLC0415
    import executor.loop_runner  # noqa: PLC0415
    monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 0)
    monkeypatch.setattr(executor.executor.ExecutorState, "run", lambda self: pytest.fail("not straight-line"))
    spy, seen = _spy_op()
    g, h0, w, h = _loop_of_matmuls(3, 64, spy)
    run = Session(g).make_callable(h, [h0, w])
    hv, wv = np.ones((32, 64), np.float32), np.eye(64, dtype=np.float32) * 0.5
    np.testing.assert_array_equal(run(hv, wv), np.tanh(np.tanh(np.tanh(hv * 0.5) * 0.5) * 0.5))
    assert run._line is not None and run._line.line.loops[0].info.runner
    assert seen == [1, 1, 1] and blas.threads() == 2


def test_the_count_comes_back_when_the_run_fails(two_blas_threads):
    spy, seen = _spy_op()
    g, h0, w, h = _loop_of_matmuls(2, 64, spy)
    with pytest.raises(ValueError, match="a NaN reached the spy"):
        Session(g).run(h, {h0: np.full((32, 64), np.nan, np.float32), w: np.eye(64, dtype=np.float32)})
    assert seen == [1] and blas.threads() == 2


def test_large_matmuls_keep_blas_as_it_is(two_blas_threads):
    spy, seen = _spy_op()
    g, h0, w, h = _loop_of_matmuls(1, 1024, spy)  # 32x1024x1024: over SMALL_BLAS_NS
    Session(g).run(h, {h0: np.zeros((32, 1024), np.float32), w: np.zeros((1024, 1024), np.float32)})
    assert seen == [2]


def test_runs_on_several_threads_leave_blas_as_it_was(two_blas_threads):
    """No run leaves BLAS on one thread, whichever ends last. (OpenBLAS raises its count
    only from the main thread: a run on another thread that ended last and gave the
    threads back left BLAS on one for good. Only the main thread's runs limit it.)"""
    spy, seen = _spy_op()
    g, h0, w, h = _loop_of_matmuls(20, 64, spy)
    s = Session(g)
    feeds = {h0: np.ones((32, 64), np.float32), w: np.eye(64, dtype=np.float32) * 0.5}
    expected = s.run(h, feeds)
    errors = []

    def work():
        try:
            for _ in range(5):
                np.testing.assert_array_equal(s.run(h, feeds), expected)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    np.testing.assert_array_equal(s.run(h, feeds), expected)  # one run on the main thread: it ends first
    for t in threads:
        t.join()
    assert not errors and len(seen) == 20 * 17
    assert blas.threads() == 2


def test_on_an_idle_machine_small_matmuls_keep_blas_as_it_is(two_blas_threads, monkeypatch):
    # (a second BLAS thread is worth its while when no other work wants the core)
    monkeypatch.setattr(blas, "machine_busy", lambda: False)
    spy, seen = _spy_op()
    g, h0, w, h = _loop_of_matmuls(3, 64, spy)
    hv, wv = np.ones((32, 64), np.float32), np.eye(64, dtype=np.float32) * 0.5
    expected = hv
    for _ in range(3):
        expected = np.tanh(expected @ wv)
    np.testing.assert_allclose(Session(g).run(h, {h0: hv, w: wv}), expected, rtol=1e-6)
    assert seen == [2, 2, 2] and blas.threads() == 2


def test_the_machine_is_busy_when_its_load_is_over_the_cores_and_one(monkeypatch):
    for load, busy in ((0.3, False), (blas._CORES + 0.9, False), (blas._CORES + 1.5, True)):
        monkeypatch.setattr(blas.os, "getloadavg", lambda load=load: (load, load, load))
        monkeypatch.setattr(blas, "_busy", [-10.0, None])
        assert blas.machine_busy() is busy
