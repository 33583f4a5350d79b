"""Straight-line runs (executor/straight_line.py): a plan without control flow runs as one
list of kernel calls, with the frame executor's values, stats and errors; plans it cannot
take (control flow, stateful ops, a pool, a deadline) take the frame executor."""
import numpy as np
import pytest

import executor
import executor.executor
import executor.loop_runner
import graphcore as gc
from executor import Session
from executor.executor import ExecutorState
from executor.straight_line import straight_line


def _graph():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        k = gc.placeholder(gc.int64, [], name="k")
        unused = gc.placeholder(gc.float64, [], name="unused")
        y = x * 2.0 + gc.cast(k, gc.float64)
        z = gc.reduce_sum(y)
        w = gc.tanh(y) - z
    return g, x, k, unused, y, z, w


def test_values_and_stats_are_the_frame_executors():
    g, x, k, unused, y, z, w = _graph()
    s = Session(g, num_threads=1)
    for fetches, feeds in (([w, y, z], [x, k]), ([z, x], [x, k, unused]), ([y.op, w], [k, x]), (x, [x])):
        run = s.make_callable(fetches, feeds)
        values = [np.arange(3.0) if t is x else np.int64(2) if t is k else np.float64(1) for t in feeds]
        got = run(*values)
        assert run._line is not None
        line_stats = repr(s.last_stats)
        want = s.run(fetches, dict(zip(feeds, values)))
        np.testing.assert_equal(got, want)
        state = ExecutorState(run._plan, [np.asarray(v) for v in values])
        state.run()
        assert line_stats == repr(state.stats)


def test_an_op_with_several_outputs_and_values_let_go():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [2, 3], name="x")
        parts = gc.unstack(x)
        y = parts[0] * parts[1] + gc.reduce_sum(x)
    run = Session(g, num_threads=1).make_callable([y, parts[1]], [x])
    a = np.arange(6.0).reshape(2, 3)
    got = run(a)
    np.testing.assert_equal(got, [a[0] * a[1] + 15.0, a[1]])
    assert len(parts[0].op.outputs) == 2
    line = run._line
    assert line is not None
    assert any(step[-1] for step in line.steps)  # x's slot is let go after its last reader


def test_a_kernel_error_is_the_frame_executors_error():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        i = gc.placeholder(gc.int64, [], name="i")
        y = gc.gather(x, i) + 1.0
    s = Session(g, num_threads=1)
    run = s.make_callable(y, [x, i])
    assert run(np.arange(3.0), np.int64(1)) == 2.0
    assert run._line is not None
    with pytest.raises(gc.ExecutionError) as got:
        run(np.arange(3.0), np.int64(7))
    with pytest.raises(gc.ExecutionError) as want:
        s.run(y, {x: np.arange(3.0), i: np.int64(7)})
    assert str(got.value) == str(want.value) and type(got.value) is type(want.value)
    assert got.value.op is want.value.op and "root frame" in str(got.value)


def test_plans_it_does_not_take(monkeypatch):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        loop = gc.while_loop(lambda i: i < n, lambda i: gc.cond(i > 2, lambda: i + 1, lambda: i + 2),
                             [gc.constant(np.int64(0))])  # (a cond in the loop: no loop runner)
        v = gc.Variable(np.float64(1.0), name="v")
        bump = v.assign_add(1.0)
        big = gc.placeholder(gc.float64, [512, 512], name="big")
        two = [gc.matmul(big, big), gc.matmul(big, big)]
    line = straight_line(Session(g)._plan([loop], [], [n]))  # control flow but runnable loops
    monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 0)  # (due its runner: it has none)
    assert line.run([np.int64(3)]) is None and line.frames[0].runner is False
    assert straight_line(Session(g)._plan([bump], [], [])) is None  # state
    assert straight_line(Session(g, num_threads=2)._plan(two, [], [big])) is None  # a pool
    assert straight_line(Session(g)._plan([n + 1], [], [n])) is not None


def test_a_run_with_a_deadline_takes_the_frame_executor(monkeypatch):
    g, x, k, unused, y, z, w = _graph()
    run = Session(g, num_threads=1).make_callable(z, [x, k])
    assert run(np.arange(3.0), np.int64(0)) == 6.0
    monkeypatch.setattr(type(run._line), "run", lambda self, values: pytest.fail("ran straight"))
    with executor.deadline(10):
        assert run(np.arange(3.0), np.int64(1)) == 9.0


def test_a_loop_its_runner_runs_is_one_step(monkeypatch):
    """A while loop of the root frame that a loop runner runs whole: until its frame has its
    runner (after RUNNER_AFTER iterations on the frame executor) the runs take the frame
    executor; then the loop is one step, with the frame executor's values and stats; a kernel
    that fails in it gives the frame executor's error."""
    monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 10)
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        xs = gc.placeholder(gc.float64, [6], name="xs")
        i, total = gc.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + xs[i] * 2.0), [0, 0.0])
        out = total * 10.0
    s = Session(g, num_threads=1)
    run = s.make_callable([out, i], [n, xs])
    xv = np.arange(6.0)
    assert run._line is None and run(np.int64(4), xv) == [120.0, 4]
    line = run._line
    assert line is not None and line.frames[0].runner is None
    assert run(np.int64(6), xv) == [300.0, 6]  # (5 + 7 iterations node by node: the runner is due)
    assert line.frames[0].runner is None and line.line is None
    monkeypatch.setattr(executor.executor.ExecutorState, "run", lambda self: pytest.fail("not straight-line"))
    for k in (0, 3, 6):
        got = run(np.int64(k), xv)  # (the first made the runner)
        assert line.frames[0].runner and line.line.loops[0].info is line.frames[0]
        stats = repr(s.last_stats)
        assert got == [20.0 * sum(range(k)), k]
        monkeypatch.undo()
        monkeypatch.setattr(executor.loop_runner, "RUNNER_AFTER", 10)
        state = ExecutorState(run._plan, [np.int64(k), xv])
        state.run()
        assert stats == repr(state.stats)
        monkeypatch.setattr(executor.executor.ExecutorState, "run", lambda self: pytest.fail("not straight-line"))
    monkeypatch.undo()
    with pytest.raises(gc.ExecutionError) as got:
        run(np.int64(8), xv)  # xs[6] fails
    with pytest.raises(gc.ExecutionError) as want:
        s.run([out, i], {n: 8, xs: xv}, trace=[])
    assert str(got.value) == str(want.value) and "iteration 6" in str(got.value)
