"""How an arrival counts at its consumer (executor.ExecutorState._activate_nodes), one
kind of edge at a time, on hand-built graphs; and what the run keeps between iterations."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.ops import control_flow_ops as cf


def build(g, op, inputs, control_inputs=(), **attrs):
    return g.create_op(op, inputs, attrs, control_inputs=control_inputs, capture=False).outputs


def _switched(g):
    d = gc.placeholder(gc.float64, [], name="d")
    p = gc.placeholder(gc.bool_, [], name="p")
    f, t = build(g, cf.switch_op, [d, p])
    return d, p, f, t


def test_a_merge_waits_for_its_control_input_before_firing_live(capfd):
    g = gc.Graph()
    with g.as_default():
        d, p, f, t = _switched(g)
        said = gc.print("before the merge")
        m, index = build(g, cf.merge_op, [f, t], control_inputs=[said])
        out = m * 2.0
    s = Session(g, num_threads=1)
    assert s.run([out, index], {d: 3.0, p: True}) == [6.0, 1]
    assert s.run([out, index], {d: 3.0, p: False}) == [6.0, 0]
    assert capfd.readouterr().out == "before the merge\n" * 2


def test_a_merge_whose_data_is_all_dead_fires_dead_only_after_its_control_input():
    g = gc.Graph()
    with g.as_default():
        d, p, f, t = _switched(g)
        ctrl = gc.identity(d)
        m = build(g, cf.merge_op, [t, t * 2.0], control_inputs=[ctrl.op])[0]
        after = m + 1.0
    s = Session(g, num_threads=1)
    assert s.run(after, {d: 1.0, p: True}) == 2.0
    with pytest.raises(gc.ExecutionError, match="dead"):
        s.run(after, {d: 1.0, p: False})


def test_a_dead_control_input_makes_an_ordinary_op_dead():
    g = gc.Graph()
    with g.as_default():
        d, p, f, t = _switched(g)
        guarded = build(g, gc.ops.math_ops.neg_op, [d], control_inputs=[gc.identity(t).op])[0]
        out = build(g, cf.merge_op, [guarded, f])[0]
    s = Session(g, num_threads=1)
    assert s.run(out, {d: 5.0, p: True}) == -5.0    # the control input was live: neg ran
    assert s.run(out, {d: 5.0, p: False}) == 5.0    # dead: neg was dead, the merge took f


def test_both_outputs_of_a_merge_and_of_a_switch_can_be_fetched():
    g = gc.Graph()
    with g.as_default():
        d, p, f, t = _switched(g)
        value, index = build(g, cf.merge_op, [f, t])
    s = Session(g, num_threads=1)
    assert s.run([value, index, t], {d: 2.0, p: True}) == [2.0, 1, 2.0]
    assert s.run((index, value), {d: 2.0, p: False}) == (0, 2.0)


def test_an_op_fed_twice_by_one_output_counts_both_arrivals():
    g = gc.Graph()
    with g.as_default():
        d, p, f, t = _switched(g)
        twice = build(g, cf.merge_op, [t + t, f * f])[0]
    s = Session(g, num_threads=1)
    assert s.run(twice, {d: 3.0, p: True}) == 6.0
    assert s.run(twice, {d: 3.0, p: False}) == 9.0


def _cond_in_loop(parallel_iterations):
    """Each iteration takes one branch; the other branch's ops run dead, some of them
    with live inputs already in their slots (x enters every iteration)."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        x = gc.placeholder(gc.float64, [3], name="x")

        def body(i, acc):
            step = gc.cond(gc.equal(i % 3, 0), lambda: gc.reduce_sum(x * gc.cast(i, gc.float64)),
                           lambda: gc.reduce_max(x) - gc.cast(i, gc.float64))
            return i + 1, acc + step

        r = gc.while_loop(lambda i, acc: i < n, body, [gc.constant(np.int64(0)), 0.0],
                          parallel_iterations=parallel_iterations)
    return g, n, x, r


@pytest.mark.parametrize("parallel_iterations", [1, 3, 10])
def test_reused_iteration_states_carry_nothing_into_later_iterations(parallel_iterations):
    g, n, x, r = _cond_in_loop(parallel_iterations)
    xv = np.array([0.5, -1.0, 2.0])
    want = sum(xv.sum() * i if i % 3 == 0 else xv.max() - i for i in range(50))
    s = Session(g, num_threads=1)
    for _ in range(2):  # and nothing from one run into the next
        i, acc = s.run(r, {n: 50, x: xv})
        assert i == 50 and np.isclose(acc, want)
    assert s.last_stats.max_iterations_in_flight["while"] <= parallel_iterations


def _nested_in_cond():
    """A loop in a loop, in a cond: n > 2 runs both loops, else the cond's other branch,
    and the loops' frames end dead."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def rows():
            def row(i, total):
                return i + 1, gc.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + i * j), [0, total])[1]
            return gc.while_loop(lambda i, total: i < n, row, [0, 0])[1]

        r = gc.cond(n > 2, rows, lambda: n * 100)
    return g, n, r


@pytest.mark.parametrize("value, want", [(6, sum(i * j for i in range(6) for j in range(i))), (1, 100)])
def test_a_traced_run_computes_and_runs_what_an_untraced_run_does(value, want):
    # A traced run queues dead Exits instead of running them where their input arrives, and
    # runs every node from the ready queue (an untraced one runs some inside the handler of
    # the node that made them ready: executor/handlers.py); the nodes run and frames made
    # are the same, and iterations in flight stay within parallel_iterations in both (how
    # many are in flight at once depends on the order nodes ran in).
    g, n, r = _nested_in_cond()
    s = Session(g, num_threads=1)
    assert s.run(r, {n: value}) == want
    untraced = s.last_stats
    trace = []
    assert s.run(r, {n: value}, trace=trace) == want
    traced = s.last_stats
    assert untraced.nodes == traced.nodes == sum(1 for e in trace if e["event"] == "run")
    assert untraced.frames == traced.frames
    assert untraced.max_iterations_in_flight.keys() == traced.max_iterations_in_flight.keys()
    assert all(n <= 10 for n in [*untraced.max_iterations_in_flight.values(),
                                 *traced.max_iterations_in_flight.values()])


def test_every_frame_made_is_freed_and_every_iteration_too():
    g, n, r = _nested_in_cond()
    trace = []
    Session(g, num_threads=1).run(r, {n: 5}, trace=trace)
    made = [e["frame"] for e in trace if e["event"] == "frame_created"]
    freed = [e["frame"] for e in trace if e["event"] == "frame_freed"]
    # root, the outer loop, and the inner one in each of the outer loop's 6 iterations (the
    # last one, whose condition is false, enters it dead)
    assert sorted(made) == sorted(freed) and len(made) == 1 + 1 + 6
    started = [e["frame"] for e in trace if e["event"] == "iteration_created"]
    ended = [e["frame"] for e in trace if e["event"] == "iteration_freed"]
    assert set(started) <= set(ended) and len(ended) == len(started) + len(made)  # (+ each iteration 0)


@pytest.mark.parametrize("parallel_iterations", [1, 3])
def test_an_inner_loops_iteration_states_go_from_one_instance_to_the_next(monkeypatch, parallel_iterations):
    """An inner loop's frame instance, started in every outer iteration, takes the iteration
    states an ended instance left (state.FrameState._spare_iteration), its tagged nodes moved
    to it: the same values and nodes run, no value kept after the run, few states made."""
    from executor import state  # noqa: PLC0415

    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def row(i, total):
            inner = gc.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + i * j), [0, total],
                                  parallel_iterations=parallel_iterations)
            return i + 1, inner[1]

        r = gc.while_loop(lambda i, total: i < n, row, [0, 0])[1]
    want = sum(i * j for i in range(30) for j in range(i))
    made = []
    init = state.IterationState.__init__
    monkeypatch.setattr(state.IterationState, "__init__", lambda self, *a: (made.append(1), init(self, *a))[1])
    s = Session(g, num_threads=1)
    trace = []
    assert s.run(r, {n: 30}, trace=trace) == want
    made.clear()  # (the first run made the states; the next ones reuse them)
    for _ in range(2):
        assert s.run(r, {n: 30}) == want
        assert s.last_stats.nodes == sum(1 for e in trace if e["event"] == "run")
    assert len(made) <= parallel_iterations + 2  # (without reuse: at least one per inner instance, 62)
    plan = next(iter(s._plans.values()))
    inner = next(f for f in {it.frame.name: it.frame for it in plan.items}.values() if f.name.count("while") == 2)
    assert inner.spare_iterations and all(ist.inputs is None for ist in inner.spare_iterations)
    assert all(node.frame.info is inner for ist in inner.spare_iterations for node in ist.tagged)
