"""One test per row of the rules of execution (the table in executor/executor.py), on hand-built primitives."""
import pytest

import graphcore as gc
from executor import Session
from graphcore.ops import control_flow_ops as cf


def build(g, op, inputs, **attrs):
    return g.create_op(op, inputs, attrs, capture=False).outputs


def test_switch_forwards_data_to_the_chosen_output_and_kills_the_other():
    g = gc.Graph()
    with g.as_default():
        d = gc.placeholder(gc.float64, [], name="d")
        p = gc.placeholder(gc.bool_, [], name="p")
        f, t = build(g, cf.switch_op, [d, p])
    s = Session(g, num_threads=1)
    assert s.run(t, {d: 2.5, p: True}) == 2.5
    assert s.run(f, {d: 2.5, p: False}) == 2.5
    with pytest.raises(gc.ExecutionError, match="dead.*Switch"):
        s.run(f, {d: 2.5, p: True})


def test_switch_of_a_dead_input_makes_both_outputs_dead():
    g = gc.Graph()
    with g.as_default():
        d = gc.placeholder(gc.float64, [], name="d")
        p = gc.placeholder(gc.bool_, [], name="p")
        _, t = build(g, cf.switch_op, [d, p])
        f2, t2 = build(g, cf.switch_op, [t, gc.logical_not(p)])
        m = build(g, cf.merge_op, [f2, t2])[0]
    with pytest.raises(gc.ExecutionError, match="dead"):
        Session(g, num_threads=1).run(m, {d: 1.0, p: False})


def test_merge_forwards_the_live_input_and_its_index():
    g = gc.Graph()
    with g.as_default():
        d = gc.placeholder(gc.float64, [], name="d")
        p = gc.placeholder(gc.bool_, [], name="p")
        f, t = build(g, cf.switch_op, [d, p])
        value, index = build(g, cf.merge_op, [f * 10.0, t * 100.0])
    s = Session(g, num_threads=1)
    assert s.run([value, index], {d: 1.0, p: False}) == [10.0, 0]
    assert s.run([value, index], {d: 1.0, p: True}) == [100.0, 1]


def test_merge_of_all_dead_inputs_is_dead():
    g = gc.Graph()
    with g.as_default():
        d = gc.placeholder(gc.float64, [], name="d")
        p = gc.placeholder(gc.bool_, [], name="p")
        f, t = build(g, cf.switch_op, [d, p])
        m = build(g, cf.merge_op, [t, t * 2.0])[0]
        after = m + 1.0
    with pytest.raises(gc.ExecutionError, match="fetch Add:0 is dead.*Switch"):
        Session(g, num_threads=1).run(after, {d: 1.0, p: False})


def test_dead_inputs_propagate_through_ordinary_ops_without_running_kernels(capfd):
    g = gc.Graph()
    with g.as_default():
        d = gc.placeholder(gc.float64, [], name="d")
        p = gc.placeholder(gc.bool_, [], name="p")
        f, t = build(g, cf.switch_op, [d, p])
        boom = gc.Assert(t < 0, [t], message="must not run")  # would fail if its kernel ran
        loud = gc.print("ran with", t)
        out = build(g, cf.merge_op, [f, gc.sqrt(t) + gc.log(t)])[0]
    Session(g, num_threads=1).run([out, boom, loud], {d: 4.0, p: False})
    assert capfd.readouterr().out == ""


def _trace(fetch, feeds=None, g=None):
    trace = []
    s = Session(g, num_threads=1)
    out = s.run(fetch, feeds, trace=trace)
    return out, trace


def test_enter_creates_the_frame_and_tags_values_with_it():
    g = gc.Graph()
    with g.as_default():
        r = gc.while_loop(lambda i: i < 2, lambda i: i + 1, [0], name="loop")
    out, trace = _trace(r, g=g)
    assert out == 2
    created = [e for e in trace if e["event"] == "frame_created"]
    assert [e["frame"] for e in created] == ["root", "root/loop"]
    enters = [e for e in trace if e["event"] == "run" and e["type"] == "Enter"]
    assert all(e["frame"] == "root" for e in enters)
    merges = [e for e in trace if e["event"] == "run" and e["type"] == "Merge"]
    assert [e["frame"] for e in merges] == ["root/loop:0", "root/loop:1", "root/loop:2"]


def test_constant_enter_is_seen_by_every_iteration():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        r = gc.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v + x), [0, 0.0])
    out, trace = _trace(r, {x: 1.5}, g)
    assert out[1] == 7.5
    const_enter_runs = [e for e in trace if e["event"] == "run" and e["type"] == "Enter"]
    # the invariant x and the hoisted constants enter once each, not once per iteration
    n_const = sum(1 for op in g.operations if op.type == "Enter" and op.attrs["is_constant"])
    assert len(const_enter_runs) == n_const + 2


def test_exit_leaves_the_frame_and_nextiteration_advances_the_iteration():
    g = gc.Graph()
    with g.as_default():
        a, b, i = gc.while_loop(lambda a, b, i: i < 2, lambda a, b, i: (b, a + b, i + 1), [1, 1, 1])
    out, trace = _trace([a, b, i], g=g)
    assert out == [1, 2, 2]  # the Fibonacci loop of samples/fibonacci.py
    iters = [e["iteration"] for e in trace if e["event"] == "iteration_created"]
    assert iters == [1]
    exits = [e for e in trace if e["event"] == "run" and e["type"] == "Exit"]
    assert {e["dead"] for e in exits if e["iteration"] == 1} == {False}
    assert {e["dead"] for e in exits if e["iteration"] == 0} == {True}
    nexts = [e for e in trace if e["event"] == "run" and e["type"] == "NextIteration"]
    assert [e["dead"] for e in nexts if e["iteration"] == 1] == [True, True, True]
    freed = [e["frame"] for e in trace if e["event"] == "frame_freed"]
    assert freed == ["root/while", "root"]


def test_dead_loop_in_an_untaken_branch_sends_dead_exits():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [], name="x")
        r = gc.cond(x > 0, lambda: gc.while_loop(lambda i: i < x, lambda i: i + 1, [0]), lambda: x * 100)
    s = Session(g, num_threads=1)
    assert s.run(r, {x: 7}) == 7
    assert s.run(r, {x: -7}) == -700
