"""cond and while_loop build exactly the seeds' shapes, and check their inputs."""
import collections

import numpy as np
import pytest

import graphcore as gc
from executor import Session


def types(g):
    return collections.Counter(op.type for op in g.operations)


def test_seed_cond_builds_one_switch_per_captured_input_and_one_merge_per_output():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.placeholder(gc.float64, [], name="y")
        z = gc.placeholder(gc.float64, [], name="z")
        r = gc.cond(x < y, lambda: x + z, lambda: y * y)
    t = types(g)
    assert t["Switch"] == 3  # x and z for the true branch, y (once) for the false branch
    assert t["Merge"] == 1
    assert r.op.type == "Merge"
    switched = sorted(op.inputs[0].op.name for op in g.operations if op.type == "Switch")
    assert switched == ["x", "y", "z"]
    s = Session(g, num_threads=1)
    assert s.run(r, {x: 1.0, y: 2.0, z: 10.0}) == 11.0
    assert s.run(r, {x: 3.0, y: 2.0, z: 10.0}) == 4.0


def test_seed_while_builds_enter_merge_loopcond_switch_nextiteration_exit():
    g = gc.Graph()
    with g.as_default():
        r = gc.while_loop(lambda i: i < 10, lambda i: i + 1, [0])
    t = types(g)
    for op_type in ("Enter", "Merge", "LoopCond", "Switch", "NextIteration", "Exit"):
        assert t[op_type] >= 1, op_type
    assert t["Merge"] == t["Switch"] == t["NextIteration"] == t["Exit"] == 1
    loop_enter = [op for op in g.operations if op.type == "Enter" and not op.attrs["is_constant"]]
    assert len(loop_enter) == 1 and loop_enter[0].attrs["frame_name"] == "while"
    merge = next(op for op in g.operations if op.type == "Merge")
    assert [i.op.type for i in merge.inputs] == ["Enter", "NextIteration"]
    assert r.op.type == "Exit"
    assert Session(g).run(r) == 10


def test_cond_nested_structures_and_python_constants():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [])
        r = gc.cond(x > 0, lambda: {"a": (x, 1), "b": [x * 2]}, lambda: {"a": (-x, 2), "b": [0.0]})
    s = Session(g, num_threads=1)
    out = s.run(r, {x: 3.0})
    assert out == {"a": (3.0, 1), "b": [6.0]}
    out = s.run(r, {x: -3.0})
    assert out == {"a": (3.0, 2), "b": [0.0]}
    assert r["a"][1].dtype == gc.int64 and r["b"][0].dtype == gc.float64


def test_cond_mismatched_structure_names_both():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [])
        with pytest.raises(gc.StagingError, match=r"true branch returns \(\., \.\).*false branch returns \."):
            gc.cond(x > 0, lambda: (x, x), lambda: x)
        with pytest.raises(gc.StagingError, match="float64 in the true branch but bool in the false"):
            gc.cond(x > 0, lambda: x, lambda: x > 1)


def test_while_nested_structures_and_invariants():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        i, v = gc.while_loop(lambda i, v: i < 10, lambda i, v: (i + 1, v * x), [0, 1.0])
        d = gc.while_loop(lambda s: s["n"] < 3, lambda s: {"n": s["n"] + 1, "acc": s["acc"] + x},
                          [{"n": 0, "acc": 0.0}])
    const_enters = [op for op in g.operations if op.type == "Enter" and op.attrs["is_constant"]]
    assert any(op.inputs[0] is x for op in const_enters)
    out = Session(g, num_threads=1).run([i, v, d], {x: 1.1})
    assert out[0] == 10 and np.isclose(out[1], 1.1 ** 10)
    assert out[2] == {"n": 3, "acc": pytest.approx(3.3)}


def test_while_dtype_change_is_an_error_naming_the_variable():
    g = gc.Graph()
    with g.as_default():
        with pytest.raises(gc.StagingError, match="counter.*int64.*float64"):
            gc.while_loop(lambda i: i < 10, lambda i: i / 2, [0], loop_var_names=["counter"])


def test_while_shape_change_is_relaxed_automatically():
    g = gc.Graph()
    with g.as_default():
        x = gc.constant(np.zeros((1,)))
        r = gc.while_loop(lambda v: gc.size(v) < 5, lambda v: gc.concat([v, v[:1] + 1.0], 0), [x])
        assert r.shape.dims == (None,)
        with pytest.raises(gc.StagingError, match="shape_invariants"):
            gc.while_loop(lambda v: gc.size(v) < 5, lambda v: gc.concat([v, v], 0), [x], shape_invariants=[[1]])
    assert Session(g).run(r).tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]


def test_tensor_from_inside_a_branch_cannot_escape():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [])
        leaked = []

        def t():
            leaked.append(x * 2)
            return x

        gc.cond(x > 0, t, lambda: x)
        with pytest.raises(gc.StagingError, match="inside the true branch"):
            gc.while_loop(lambda i: i < 3, lambda i: i + leaked[0], [0.0])


def test_case_switch_case_group_tuple():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.int64, [])
        c = gc.case([(x < 0, lambda: gc.constant(-1)), (x < 10, lambda: gc.constant(1))], default=lambda: x)
        sc = gc.switch_case(x, [lambda: x * 10, lambda: x * 20], default=lambda: x * 0)
        a, b = gc.tuple([x + 1, x + 2])
        grp = gc.group(a, b)
    s = Session(g, num_threads=1)
    assert [s.run(c, {x: v}) for v in (-5, 5, 50)] == [-1, 1, 50]
    assert [s.run(sc, {x: v}) for v in (0, 1, 7)] == [0, 20, 0]
    assert s.run([a, b, grp], {x: 1}) == [2, 3, None]
    assert grp.type == "NoOp" and len(grp.control_inputs) == 2


def test_while_body_returning_the_wrong_number_of_values_says_so():
    g = gc.Graph()
    with g.as_default():
        with pytest.raises(gc.StagingError, match=r"returns \. \(1 values\).*\[\., \.\] \(2 values\)"):
            gc.while_loop(lambda i, j: i < 3, lambda i, j: i + 1, [0, 0])


def test_a_loop_body_shares_one_const_and_enter_per_small_constant():
    """The same small constant made many times in a loop body is one hoisted Const and one
    Enter (a body's 0, 1 and 0.5 otherwise come once per use); values unchanged."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [])

        def body(i, s):
            x = gc.cast(i, gc.float64)
            return i + 1, s + 1.5 * x + 1.5 - gc.constant(np.array([1.5, 2.0]))[0]

        out = gc.while_loop(lambda i, s: i < n, body, [gc.constant(np.int64(0)), gc.constant(0.0)])
    halves = [op for op in g.get_operations() if op.type == "Const" and np.asarray(op.attrs["value"]).shape == ()
              and float(op.attrs["value"]) == 1.5]
    assert len(halves) == 1
    assert Session(g).run(out[1], {n: 4}) == sum(1.5 * i for i in range(4))


def test_a_rolled_back_trace_does_not_leave_a_shared_constant_behind():
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [])
        mark = g.checkpoint()
        gc.while_loop(lambda i: i < n, lambda i: i + 7, [gc.constant(np.int64(0))])
        g.rollback(mark)
        out = gc.while_loop(lambda i: i < n, lambda i: i + 7, [gc.constant(np.int64(0))])
        g.validate()
    assert Session(g).run(out, {n: 10}) == 14


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_a_body_returning_the_wrong_number_of_values_is_refused(v2):
    import contextlib

    g = gc.Graph()
    with g.as_default(), (gc.control_flow_v2() if v2 else contextlib.nullcontext()):
        with pytest.raises(gc.StagingError, match=r"returns \(\., \., \.\) \(3 values\) but the loop variables are .*"
                                                    r"\(2 values\); return one new value per loop variable"):
            gc.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x, x), [np.int64(0), np.float64(1.0)])
