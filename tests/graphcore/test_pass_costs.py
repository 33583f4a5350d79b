"""The graph passes' cheap ways (graphcore/passes): what they compute the cheap way equals
what the general way computes, the passes read the graph's lists of readers without
copying them, and common subexpression elimination tells a constant 0.0 from -0.0."""
import contextlib
import io

import numpy as np
import pytest

import autograph
import graphcore as gc
from executor import Session
from graphcore import graph as graph_module
from graphcore.dtypes import float32, int64
from graphcore.passes import cse, optimize
from graphcore.passes import state as state_module
from graphcore.passes.state import all_equal
from graphcore.shapes import TensorShape
from samples import available_samples


def _general_key_of_attr(v):
    """cse._key_of_attr's general way, without the table of types (floats as it keys them)."""
    if isinstance(v, float):
        return cse._float(v)
    if v is None or isinstance(v, (bool, int, str)):
        return (type(v).__name__, v)
    if isinstance(v, np.generic):
        return ("np", v.dtype.str, v.tobytes())
    return cse._key_of_attr(v)


@pytest.mark.parametrize("value", [
    None, True, 3, -7, 2.5, 0.0, -0.0, "s", np.float64(1.5), np.float64(-0.0), np.float32(2), np.float16(1),
    np.int64(3), np.int32(-1), np.int8(5), np.uint8(3), np.uint64(2**63), np.bool_(True), np.complex128(1j),
    float32, int64, TensorShape([2, None]), TensorShape(None)])
def test_cse_keys_a_value_by_its_type_as_the_general_way_does(value):
    fast, general = cse._key_of_attr(value), _general_key_of_attr(value)
    assert fast == general
    assert [type(x) for x in fast] == [type(x) for x in general]


def test_cse_keys_tell_equal_values_of_other_types_apart():
    keys = [cse._key_of_attr(v) for v in (1, 1.0, True, np.int64(1), np.int32(1), np.float64(1.0), np.float32(1))]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("value", [1, 0, True, False, 1.0, 0.0, -0.0, np.float64(1), np.float64(np.nan),
                                   np.float32(1), np.int64(0), np.int8(1), np.bool_(True), np.uint8(0),
                                   np.array(1.0), np.array([1.0, 1.0]), np.array([], np.float64),
                                   np.array([1, 2])])
@pytest.mark.parametrize("scalar", [0, 1])
def test_all_equal_of_a_scalar_is_numpys_answer(value, scalar):
    arr = np.asarray(value)
    assert all_equal(value, scalar) == (arr.size > 0 and bool(np.all(arr == scalar)))


def test_cse_does_not_merge_a_zero_with_a_negative_zero():
    """1 / (x * 0.0) and 1 / (x * -0.0) are inf and -inf: the constants must stay two."""
    def build():
        g = gc.Graph()
        with g.as_default():
            x = gc.placeholder(gc.float64, [], name="x")
            a = gc.constant(1.0) / (x * gc.constant(0.0))
            b = gc.constant(1.0) / (x * gc.constant(-0.0))
            c = gc.constant(1.0) / (x * gc.constant(-0.0))  # a second -0.0: merged with the first
        return g, [a, b, c], x
    g0, f0, x0 = build()
    with np.errstate(all="ignore"):
        expected = Session(g0, num_threads=1).run(f0, feed_dict={x0: 2.0})
    g, fetches, x = build()
    report = optimize(g, fetches, skip=["fusion"], validate=True)
    with np.errstate(all="ignore"):
        got = Session(g, num_threads=1).run(report.fetches, feed_dict={x: 2.0})
    assert [float(v) for v in got] == [float(v) for v in expected] == [np.inf, -np.inf, -np.inf]
    zeros = [op.attrs["value"] for op in g.get_operations() if op.type == "Const" and op.attrs["value"] == 0]
    assert sorted(np.signbit(zeros).tolist()) == [False, True]  # one 0.0, one -0.0


def _optimize_sample(name):
    sample = next(s for s in available_samples() if s.name == name)
    concrete = autograph.function(sample.python_function).get_concrete_function(*sample.examples[0])
    with contextlib.redirect_stdout(io.StringIO()):
        return concrete, concrete.optimize()


@pytest.mark.parametrize("name", ["softmax_regression", "rnn_adam"])
def test_the_passes_read_readers_and_waiters_without_copying_them(monkeypatch, name):
    """Tensor.consumers() and Operation.control_outputs copy the graph's lists: the passes read
    the lists themselves (on rnn_adam they asked ~2,400 times for copies)."""
    concrete = autograph.function(next(s for s in available_samples() if s.name == name).python_function) \
        .get_concrete_function(*next(s for s in available_samples() if s.name == name).examples[0])
    calls = {"consumers": 0, "control_outputs": 0}
    consumers, control_outputs = graph_module.Tensor.consumers, graph_module.Operation.control_outputs

    def counting_consumers(self):
        calls["consumers"] += 1
        return consumers(self)

    def counting_control_outputs(self):
        calls["control_outputs"] += 1
        return control_outputs.fget(self)

    monkeypatch.setattr(graph_module.Tensor, "consumers", counting_consumers)
    monkeypatch.setattr(graph_module.Operation, "control_outputs", property(counting_control_outputs))
    report = concrete.optimize()
    assert report.ops_after < report.ops_before
    assert calls == {"consumers": 0, "control_outputs": 0}


def test_fused_steps_name_the_lines_of_the_ops_they_stand_for(monkeypatch):
    """fusion keeps one text per (file, line) and reuses it: each step's location is still
    what its op's own `location()` says (the same graph optimized without fusion has the ops)."""
    concrete, _ = _optimize_sample("rnn_adam")
    monkeypatch.setenv("AUTOGRAPH_OPTIMIZE_SKIP", "fusion")
    plain, _ = _optimize_sample("rnn_adam")
    where = {op.name: op.location() for op in plain.graph.get_operations()}
    steps = [step for op in concrete.graph.get_operations() if op.type == "Fused" for step in op.attrs["steps"]]
    assert len(steps) > 50
    assert all(step[3] in where and step[4] == where[step[3]] for step in steps)
    assert len({step[4] for step in steps}) > 5


def test_root_ops_are_always_live_without_a_top_level_switch():
    """PassState.may_be_dead answers False for an op outside control flow at once when no
    Switch stands at the top level (and every loop has Enters): the walk of its ancestors
    would find nothing dead then. Checked against the full sweep on every sample."""
    seen_live = seen_not = 0
    for sample in available_samples():
        for args in sample.examples:
            with contextlib.redirect_stdout(io.StringIO()):
                g = autograph.function(sample.python_function).get_concrete_function(*args).graph
            dead = state_module.may_be_dead(g)
            if state_module._root_always_live(g):
                seen_live += 1
                assert not [op for op in g.get_operations() if op.ctx is None and id(op) in dead], sample.name
            else:
                seen_not += 1
    assert seen_live and seen_not

    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.cond(x > 0.0, lambda: x * 2.0, lambda: x - 1.0)
        z = gc.shape(y)
    assert not state_module._root_always_live(g)
    st = state_module.PassState(g, [z])
    walked = [op.name for op in g.get_operations() if op.ctx is None and st.may_be_dead(op)]
    assert walked and walked == [op.name for op in g.get_operations()
                                 if op.ctx is None and id(op) in state_module.may_be_dead(g)]


def _chain(n):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        for _ in range(n):
            x = x + 1.0
    return g


def test_an_insertion_finds_its_anchor_by_the_graphs_numbers():
    ops = _chain(200).get_operations()
    assert len(ops) > 200
    for k in (0, 3, 70, 149, 150, 151, 199, len(ops) - 1):
        assert graph_module._index_of(ops, ops[k]) == k
    with pytest.raises(ValueError):
        graph_module._index_of(ops[:50], ops[100])


def test_ops_inserted_far_before_and_after_the_last_insertion_stand_before_their_anchors():
    g = _chain(100)
    anchors = [op for op in g.get_operations() if op.type == "Add"]
    for anchor in [anchors[90], anchors[2], anchors[95], anchors[50]]:  # far apart, both ways
        with g.inserting_before(anchor):
            c = gc.constant(2.0)
        ops = g.get_operations()
        assert ops.index(c.op) == ops.index(anchor) - 1


def test_positions_order_ops_as_the_graph_did():
    g = _chain(20)
    anchors = g.get_operations()
    with g.inserting_before(anchors[5]):
        gc.constant(3.0)
    ops = g.get_operations()
    position = state_module.Positions(g)
    with g.inserting_before(ops[0]):  # made after the positions: after every op
        late = gc.constant(4.0).op
    stranger = _chain(1).get_operations()[-1]
    for a, b in zip(ops, ops[1:]):
        assert position(a) < position(b)
    assert position(late) > position(ops[-1]) and position(stranger) > position(ops[-1])


def test_many_insertions_at_one_place_keep_the_graphs_numbers_in_order():
    """Each insertion before the same op halves the room between its neighbours' numbers: past
    32 of them every op is numbered anew, in order."""
    g = _chain(30)
    anchor = g.get_operations()[10]
    made = []
    for _ in range(100):
        with g.inserting_before(anchor):
            made.append(gc.constant(1.0).op)
    ops = g.get_operations()
    assert ops[10:110] == made and ops[110] is anchor
    numbers = [op.order for op in ops]
    assert numbers == sorted(set(numbers))
