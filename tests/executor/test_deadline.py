"""Run deadlines: a run that loops forever ends near its timeout with DeadlineExceededError
naming the frame and iteration, and the session runs the next graph as usual."""
import threading
import time

import numpy as np
import pytest

import graphcore as gc
from executor import Session, deadline
from executor.deadline import Watchdog

SLACK = 0.5  # seconds a loaded test machine may add to a deadline


@pytest.fixture(scope="module")
def forever():
    """`i` counts up from x while i >= 0: forever for x >= 0, no iteration for x < 0."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [], name="x")
        r = gc.while_loop(lambda i: i >= 0, lambda i: i + 1, [x])
        twice = x * 2
    return g, x, r, twice


def _timed(fn):
    t0 = time.monotonic()
    with pytest.raises(gc.DeadlineExceededError) as e:
        fn()
    return e.value, time.monotonic() - t0


@pytest.mark.parametrize("threads", [1, 4])
def test_infinite_loop_ends_at_its_timeout_and_session_runs_on(forever, threads):
    g, x, r, twice = forever
    s = Session(g, num_threads=threads)
    err, took = _timed(lambda: s.run(r, {x: 0}, timeout=0.3))
    assert 0.3 <= took < 0.3 + SLACK
    assert err.timeout == 0.3 and err.iteration > 10 and err.frame == f"root/while:{err.iteration}"
    assert "deadline of 0.3 s" in str(err) and f"in frame while at iteration {err.iteration}" in str(err)
    assert s.run(twice, {x: 21}) == 42
    assert s.run(r, {x: -5}, timeout=5) == -5          # same plan, now a finite run
    err, took = _timed(lambda: s.run(r, {x: 0}, timeout=0.2))  # and again
    assert took < 0.2 + SLACK


def test_heavy_ops_on_the_worker_pool_are_interrupted_between_kernels():
    # the scheduling thread mostly waits for workers here, not on its ready queue
    g = gc.Graph()
    with g.as_default():
        v = gc.placeholder(gc.float64, [200, 200], name="v")
        _, r = gc.while_loop(lambda i, m: i >= 0, lambda i, m: (i + 1, gc.tanh(gc.matmul(m, m))), [0, v])
        total = gc.reduce_sum(v)
    s = Session(g, num_threads=2)
    err, took = _timed(lambda: s.run(r, {v: np.eye(200)}, timeout=0.3))
    assert took < 0.3 + SLACK and err.iteration >= 1
    assert s.run(total, {v: np.ones((200, 200))}) == 40000


def test_the_error_names_the_inner_frame_of_nested_loops():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def outer_body(i):
            j = gc.while_loop(lambda j: j >= 0, lambda j: j + 1, [i], name="inner")
            return i + 1 + j * 0

        r = gc.while_loop(lambda i: i < n, outer_body, [0], name="outer")
    err, _ = _timed(lambda: Session(g, num_threads=1).run(r, {n: 3}, timeout=0.2))
    assert err.frame == f"root/outer:0/outer/inner:{err.iteration}"
    assert f"in frame outer/inner at iteration {err.iteration}" in str(err)


def test_a_traced_run_stops_too_and_records_no_deadline_step(forever):
    g, x, r, _ = forever
    events = []
    _timed(lambda: Session(g, num_threads=1).run(r, {x: 0}, trace=events, timeout=0.2))
    assert events and all(e.get("node") != "<deadline>" for e in events)


def test_a_deadline_scope_bounds_every_run_inside_it_together(forever):
    g, x, r, twice = forever
    s = Session(g, num_threads=1)
    with deadline(0.4):
        assert s.run(twice, {x: 1}) == 2
        err, took = _timed(lambda: s.run(r, {x: 0}))
        assert took < 0.4 + SLACK and err.timeout == 0.4
        with pytest.raises(gc.DeadlineExceededError, match="did not start"):
            s.run(twice, {x: 1})                        # the budget is spent
    assert s.run(twice, {x: 1}) == 2                    # outside the scope: no deadline


def test_the_earlier_of_scope_and_timeout_wins(forever):
    g, x, r, _ = forever
    s = Session(g, num_threads=1)
    with deadline(60):
        err, took = _timed(lambda: s.run(r, {x: 0}, timeout=0.2))
    assert err.timeout == 0.2 and took < 0.2 + SLACK
    with deadline(0.2), deadline(60):
        err, took = _timed(lambda: s.run(r, {x: 0}, timeout=30))
    assert err.timeout == 0.2 and took < 0.2 + SLACK


def test_a_run_that_finishes_in_time_is_not_disturbed_later(forever):
    g, x, r, twice = forever
    s = Session(g, num_threads=1)
    for _ in range(200):  # (a generous deadline: a busy machine must not make one run late)
        assert s.run(twice, {x: 4}, timeout=0.5) == 8
    time.sleep(0.6)  # their alarms were cancelled: nothing fires into the next run
    assert s.run(r, {x: -1}) == -1


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "1", True])
def test_timeout_must_be_positive_seconds(forever, bad):
    g, x, _, twice = forever
    with pytest.raises(ValueError, match="positive number of seconds"):
        Session(g).run(twice, {x: 1}, timeout=bad)
    with pytest.raises(ValueError, match="positive number of seconds"):
        with deadline(bad):
            pass


def test_watchdog_calls_in_time_order_and_skips_cancelled():
    w = Watchdog()
    calls, done = [], threading.Event()
    now = time.monotonic()
    w.arm(now + 0.10, lambda: (calls.append("late"), done.set()))
    w.arm(now + 0.02, lambda: calls.append("early"))
    w.cancel(w.arm(now + 0.05, lambda: calls.append("cancelled")))
    assert done.wait(2)
    assert calls == ["early", "late"]


def test_watchdog_drops_cancelled_entries():
    w = Watchdog()
    far = time.monotonic() + 3600
    for _ in range(1000):
        w.cancel(w.arm(far, lambda: None))
    assert len(w._heap) < 200  # a long timeout on many quick runs must not pile up
