"""Loop runners (executor/loop_runner.py): a straight-line while frame, once it ran
RUNNER_AFTER iterations, runs whole as one generated loop. It gives the values the frame
executor gives (a traced run: the generic handlers), bit for bit, counts the same nodes,
raises the same errors, ends at a deadline naming the frame and iteration, and hands a frame
back to the frame executor mid-loop when something else is queued."""
import collections
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

import executor.executor
import executor.loop_runner
import graphcore as gc
from executor import Session
from executor.loop_runner import why_not


@pytest.fixture
def runners_at_once(monkeypatch):
    """Every straight-line loop gets its runner at its first instance."""
    monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 0)


def _frames(s):
    """name -> FrameInfo of the loops of the session's (one) plan, and the plan."""
    plan = next(iter(s._plans.values()))
    return {name: info for name, info in plan.frames.items() if info.parent is not None}, plan


def _fib(dtype=gc.int64):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i, a, b: i < n, lambda i, a, b: (i + 1, b, a + b),
                          [gc.constant(np.int64(0)), gc.constant(dtype.np_dtype.type(0)),
                           gc.constant(dtype.np_dtype.type(1))])
    return g, n, r


def _rnn(T=12, B=3, H=5):
    """h = tanh(h @ w + xs[t] @ u), float32, and the same in plain numpy."""
    rng = np.random.default_rng(1)
    values = [rng.normal(size=s).astype(np.float32) for s in ((B, H), (T, B, H), (H, H), (H, H))]
    g = gc.Graph()
    with g.as_default():
        h0, xs, w, u = (gc.placeholder(gc.float32, v.shape, name=name) for v, name in zip(values, "hxwu"))
        _, h = gc.while_loop(lambda t, h: t < T,
                             lambda t, h: (t + 1, gc.tanh(gc.matmul(h, w) + gc.matmul(xs[t], u))),
                             [gc.constant(np.int64(0)), h0])

    def numpy_rnn(h, xs, w, u):
        for t in range(T):
            h = np.tanh(h @ w + xs[t] @ u)
        return h
    return g, dict(zip((h0, xs, w, u), values)), h, numpy_rnn(*values)


def test_a_loop_gets_its_runner_after_runner_after_iterations_and_gives_the_same_values(monkeypatch):
    monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 30)
    g, n, r = _fib()
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 20}) == [20, 6765, 10946]
    assert s.run(r, {n: 20}) == [20, 6765, 10946]
    frames, _ = _frames(s)
    assert frames["while"].runner is None and frames["while"].iterations_run == 42  # the second ran node by node
    want = s.run(r, {n: 90}, trace=[])  # (a traced run records every node: never a runner)
    traced = s.last_stats
    assert frames["while"].runner is None
    got = s.run(r, {n: 90})  # (int64 past 2**63 at 93: below it here)
    assert frames["while"].runner
    assert got == want and [type(x) for x in got] == [type(x) for x in want] == [np.int64] * 3
    assert s.last_stats.nodes == traced.nodes and s.last_stats.frames == traced.frames
    assert s.last_stats.max_iterations_in_flight == {"while": 1}
    a, b = 0, 1
    for _ in range(90):
        a, b = b, a + b
    assert got == [90, a, b]


@pytest.mark.parametrize("dtype", [gc.int64, gc.int32])
def test_integer_sums_wrap_around_as_numpy_does(runners_at_once, dtype):
    """fib past the dtype's range: numpy's ufunc wraps around (the runner writes + with the
    handlers' guard), as the generic handlers' np.add does."""
    g, n, r = _fib(dtype)
    s = Session(g, num_threads=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (numpy's scalar operator would warn on overflow: none is used)
        want = s.run(r, {n: 100}, trace=[])
        got = s.run(r, {n: 100})
    assert _frames(s)[0]["while"].runner and got == want
    a, b = dtype.np_dtype.type(0), dtype.np_dtype.type(1)
    with np.errstate(over="ignore"):
        for _ in range(100):
            a, b = b, np.add(a, b)
    assert got[1] == a and got[2] == b and type(got[1]) is type(a)


def test_an_rnn_is_bit_identical_to_numpy_and_lets_temporaries_go(runners_at_once):
    g, feeds, h, want = _rnn()
    s = Session(g, num_threads=1)
    for _ in range(2):
        got = s.run(h, feeds)
        assert got.dtype == np.float32 and np.array_equal(got, want)
    runner = _frames(s)[0]["while"].runner
    assert runner and "= None" in runner.source  # (x_t @ u and h @ w let go once added)
    traced = []
    assert np.array_equal(s.run(h, feeds, trace=traced), want)
    nodes = s.last_stats.nodes
    s.run(h, feeds)
    assert s.last_stats.nodes == nodes == sum(1 for e in traced if e["event"] == "run")


def test_loop_invariants_and_ops_of_several_outputs(runners_at_once):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        m = gc.placeholder(gc.float64, [3], name="m")
        i, acc = gc.while_loop(lambda i, acc: i < n,
                               lambda i, acc: (i + 1, sum(gc.unstack(m * gc.cast(i, gc.float64))) + acc),
                               [0, gc.constant(0.0, gc.float64)])
    s = Session(g, num_threads=1)
    mv = np.array([0.5, -2.0, 3.25])
    want = s.run([i, acc], {n: 7, m: mv}, trace=[])
    assert s.run([i, acc], {n: 7, m: mv}) == want
    assert _frames(s)[0]["while"].runner
    assert want[0] == 7 and np.isclose(want[1], sum(mv.sum() * k for k in range(7)))


def test_an_inner_loop_runs_whole_in_each_iteration_of_its_outer_one(runners_at_once):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def outer(i, total):
            _, inner = gc.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + i * j), [0, total])
            return i + 1, inner
        r = gc.while_loop(lambda i, t: i < n, outer, [0, gc.constant(np.int64(0))])
    s = Session(g, num_threads=1)
    want = s.run(r, {n: 12}, trace=[])
    traced = s.last_stats
    assert s.run(r, {n: 12}) == want == [12, sum(i * j for i in range(12) for j in range(i))]
    frames, plan = _frames(s)
    inner = next(info for info in frames.values() if info.parent is not plan.root)
    outer = next(info for info in frames.values() if info.parent is plan.root)
    assert inner.runner and outer.runner is False and "a loop inside it" in why_not(plan, outer)
    # 1 + 13 frames: an inner instance per outer iteration, the last one's (the outer test false) dead
    assert s.last_stats.nodes == traced.nodes and s.last_stats.frames == traced.frames == 14


def test_a_loop_with_a_cond_inside_keeps_the_frame_executor(runners_at_once):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.while_loop(lambda i, a: i < n,
                          lambda i, a: (i + 1, gc.cond(i % 2 == 0, lambda: a + i, lambda: a - i)), [0, 0])
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 9}) == [9, sum(k if k % 2 == 0 else -k for k in range(9))]
    frames, plan = _frames(s)
    assert frames["while"].runner is False and "cond" in why_not(plan, frames["while"])


def test_a_loop_in_a_branch_not_taken_ends_dead_as_before(runners_at_once):
    """Its Enters are dead: they are delivered as usual, and the frame ends dead."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        r = gc.cond(n > 0, lambda: gc.while_loop(lambda i: i < n, lambda i: i + 2, [0]), lambda: n * 10)
    s = Session(g, num_threads=1)
    assert s.run(r, {n: 7}) == 8  # (the frame's first instance: it gets its runner)
    assert s.run(r, {n: 5}) == 6 and s.run(r, {n: -3}) == -30
    frames, _ = _frames(s)
    assert all(info.runner for info in frames.values())
    traced = []
    assert s.run(r, {n: -3}, trace=traced) == -30
    nodes = s.last_stats.nodes
    assert s.run(r, {n: -3}) == -30 and s.last_stats.nodes == nodes


def _indexing():
    """sum(xs[i] for i < n): xs[i] fails past xs's end."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        xs = gc.placeholder(gc.float64, [5], name="xs")
        r = gc.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + xs[i]), [0, 0.0])
    return g, n, xs, r


def test_an_error_names_the_op_its_frame_and_iteration_as_the_frame_executor_does(runners_at_once):
    g, n, xs, r = _indexing()
    s = Session(g, num_threads=1)
    xv = np.arange(5.0)
    assert s.run(r, {n: 5, xs: xv}) == [5, 10.0]
    assert _frames(s)[0]["while"].runner
    with pytest.raises(gc.ExecutionError, match=r"in frame root/while:5 \(iteration 5\)") as e:
        s.run(r, {n: 8, xs: xv})
    with pytest.raises(gc.ExecutionError) as generic:
        s.run(r, {n: 8, xs: xv}, trace=[])
    assert str(e.value) == str(generic.value) and "test_loop_runner.py" in str(e.value)
    assert isinstance(e.value, IndexError) and e.value.iteration == 5
    assert s.run(r, {n: 3, xs: xv}) == [3, 3.0]  # the session runs on


def test_a_deadline_ends_a_loop_its_runner_runs(runners_at_once):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [], name="x")
        r = gc.while_loop(lambda i: i >= 0, lambda i: i + 1, [x])
    s = Session(g, num_threads=1)
    assert s.run(r, {x: -4}) == -4
    assert _frames(s)[0]["while"].runner
    with pytest.raises(gc.DeadlineExceededError) as e:
        s.run(r, {x: 0}, timeout=0.2)
    assert e.value.iteration > 10 and e.value.frame == f"root/while:{e.value.iteration}"
    assert f"in frame while at iteration {e.value.iteration}" in str(e.value)
    assert s.run(r, {x: -1}) == -1


class _GrowsOnce(collections.deque):
    """A ready queue that looks, once, as if another thread had queued something (as the
    deadline's watchdog does) after `after` looks at its length."""

    after = 0

    def __bool__(self):  # (the scheduler's `if not ready`: the queue as it is)
        return collections.deque.__len__(self) > 0

    def __len__(self):
        _GrowsOnce.after -= 1
        return super().__len__() + (_GrowsOnce.after == 0)


def test_a_frame_is_handed_back_to_the_frame_executor_when_something_else_is_queued(runners_at_once,
                                                                                  monkeypatch):
    g, feeds, h, want = _rnn(T=30)
    s = Session(g, num_threads=1)
    assert np.array_equal(s.run(h, feeds), want)
    traced = []
    s.run(h, feeds, trace=traced)
    monkeypatch.setattr(executor.executor, "deque", _GrowsOnce)
    for k in (1, 2, 17, 30):  # handed back before iteration k (its loop variables as NextIterations send them)
        _GrowsOnce.after = k + 1
        assert np.array_equal(s.run(h, feeds), want)
        assert s.last_stats.nodes == sum(1 for e in traced if e["event"] == "run")


def test_ctrl_c_ends_a_loop_its_runner_runs_and_the_session_runs_on(runners_at_once):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [], name="x")
        r = gc.while_loop(lambda i: i >= 0, lambda i: i + 1, [x])
    s = Session(g, num_threads=1)
    assert s.run(r, {x: -2}) == -2 and _frames(s)[0]["while"].runner
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            s.run(r, {x: 0})
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 10
    assert s.run(r, {x: -7}) == -7
