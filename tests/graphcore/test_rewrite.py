"""The public rewrite API of Graph (what graph passes and the partitioner use): each
rewrite is followed by `validate()` and a run that must give the values of the run
before it, and ops a rewrite creates keep the source line of the op they stand for."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session


def run(g, fetches, feeds=None):
    return Session(g, num_threads=1).run(fetches, feeds)


def same_after(g, fetches, feeds, rewrite):
    """Run, rewrite, validate, run again: the values must not change."""
    before = run(g, fetches, feeds)
    version = g.version
    out = rewrite()
    assert g.version > version  # executors re-plan
    g.validate()
    after = run(g, fetches, feeds)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)
    return out


def ops_in(g, ctx):
    return [op for op in g.get_operations() if op.ctx is ctx]


# -- replace_all_uses_with ---------------------------------------------------------------

def test_replace_all_uses_then_erase_the_duplicate():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        a1 = gc.tanh(x)
        a2 = gc.tanh(x)  # the same computation twice (what CSE removes)
        y = a1 * 2.0
        z = a2 + a2
    feeds = {x: np.array([0.1, -2.0, 3.0])}

    def rewrite():
        rewired = g.replace_all_uses_with(a2, a1)
        assert rewired == [z.op] and z.op.inputs == (a1, a1)
        assert a2.consumers() == [] and a1.consumers().count(z.op) == 2
        return g.erase_op(a2.op)

    assert same_after(g, [y, z], feeds, rewrite) == [a2.op]
    assert a2.op not in g and a1.op in g


def test_replace_only_some_consumers_and_never_the_new_tensors_own_op():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        a = x + 1.0
        b = a * 3.0
        c = a - 1.0
    feeds = {x: 2.0}

    def rewrite():
        with g.inserting_after(a.op):
            a_again = gc.identity(a)  # reads a: replacing a by a_again must not make it read itself
        assert g.replace_all_uses_with(a, a_again, only=[b.op]) == [b.op]
        assert c.op.inputs[0] is a and a_again.op.inputs[0] is a
        assert g.replace_all_uses_with(a, a_again, only=lambda op: op is c.op) == [c.op]
        return a_again

    a_again = same_after(g, [b, c], feeds, rewrite)
    assert a.consumers() == [a_again.op]
    assert g.get_operations().index(a_again.op) == g.get_operations().index(a.op) + 1


def test_replace_refuses_another_dtype_or_shape():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")
        i = gc.placeholder(gc.int64, [3], name="i")
        s = gc.placeholder(gc.float64, [4], name="s")
        y = x * 2.0
    with pytest.raises(gc.GraphError, match="is int64 but .* is float64; cast it"):
        g.replace_all_uses_with(x, i)
    with pytest.raises(gc.GraphError, match="does not fit"):
        g.replace_all_uses_with(x, s)
    assert y.op.inputs[0] is x


# -- erase_op ------------------------------------------------------------------------------

def test_erase_refuses_an_op_still_in_use_unless_cascading():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        keep = x * 2.0
        a = gc.exp(x)
        b = a + 1.0
        p = gc.print(b)
        waits = gc.group(p)
    with pytest.raises(gc.GraphError, match=r"cannot erase Exp \(Exp\): it is still used by Add; .*cascade=True"):
        g.erase_op(a.op)
    removed = same_after(g, [keep], {x: 1.5}, lambda: g.erase_op(a.op, cascade=True))
    assert [op.name for op in removed] == [a.op.name, b.op.name, p.name, waits.name]
    assert x.consumers() == [keep.op]


def test_erasing_a_whole_loop_forgets_its_context():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        keep = x + 1.0
        v = gc.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x), [0, 1.0])[1]
    assert list(g.while_contexts) == ["while"]
    loop_ops = [op for op in g.get_operations() if op.frame_name == "while" or op.type == "Exit"]
    first = min(loop_ops, key=g.get_operations().index)
    same_after(g, [keep], {x: 2.0}, lambda: [g.erase_op(op, cascade=True) for op in loop_ops if op in g])
    assert g.while_contexts == {} and v.op not in g and first not in g


# -- inserting_before / inserting_after -----------------------------------------------------

def test_fold_a_shape_in_a_loop_to_a_constant_inserted_in_the_loops_context():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [3], name="x")

        def body(i, v):
            n = gc.cast(gc.shape(v)[0], gc.float64)  # known while building: 3
            return i + 1, v + n

        _, y = gc.while_loop(lambda i, v: i < 4, body, [0, x])
    shape_op = next(op for op in g.get_operations() if op.type == "Shape")
    loop = g.while_contexts["while"]
    assert shape_op.ctx is loop

    def rewrite():
        with g.inserting_before(shape_op):
            c = gc.constant(np.array([3], dtype=np.int64))
        g.replace_all_uses_with(shape_op.outputs[0], c)
        g.erase_op(shape_op)
        return c

    c = same_after(g, [y], {x: np.array([1.0, 2.0, 3.0])}, rewrite)
    # a constant in a loop is built outside and Entered, as while_loop builds it
    assert c.op.type == "Enter" and c.op.ctx is loop and c.op.attrs["is_constant"]
    assert c.op.inputs[0].op.type == "Const" and c.op.inputs[0].op.ctx is None
    assert c.op.source == shape_op.source and c.op.inputs[0].op.source == shape_op.source
    order = g.get_operations()
    assert order.index(c.op) < order.index(c.consumers()[0])
    assert c.op.name.startswith("while/")


def test_insert_in_a_given_cond_branch():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        y = gc.cond(x > 0.0, lambda: gc.exp(x), lambda: x * 0.5)
    exp = next(op for op in g.get_operations() if op.type == "Exp")
    branch = exp.ctx

    def rewrite():
        # exp(x) -> exp(x) * 1.0, built in the true branch (whose inputs come in through a Switch)
        with g.inserting_after(exp, context=branch):
            one = gc.constant(1.0)
            scaled = exp.outputs[0] * one
        g.replace_all_uses_with(exp.outputs[0], scaled)
        return one

    for v in (1.5, -2.0):
        one = same_after(g, [y], {x: v}, rewrite)
        assert one.op.ctx is branch and one.op.control_inputs  # hangs on the branch's pivot
        exp = one.consumers()[0]


def test_inserting_keeps_out_the_callers_control_dependencies_and_uses_the_ops_device():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        with g.device("cpu:1"):
            a = x * 2.0
        p = gc.print("side effect")
        with g.control_dependencies([p]):
            with g.inserting_before(a.op):
                b = x + 1.0
    assert b.op.control_inputs == () and b.op.device == "cpu:1" and b.op.source == a.op.source


# -- move_out_of_loop -------------------------------------------------------------------------

def _loop_with_invariant_product():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [2], name="x")
        w = gc.placeholder(gc.float64, [2], name="w")
        _, y = gc.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v + gc.tanh(w) * 2.0), [0, x])
    return g, x, w, y


def test_move_an_invariant_op_out_of_its_loop():
    g, x, w, y = _loop_with_invariant_product()
    loop = g.while_contexts["while"]
    mul = next(op for op in g.get_operations() if op.type == "Mul")
    tanh = mul.inputs[0].op
    feeds = {x: np.array([0.5, -1.0]), w: np.array([0.3, 2.0])}

    hoisted_tanh = same_after(g, [y], feeds, lambda: g.move_out_of_loop(tanh))
    assert hoisted_tanh.ctx is None and hoisted_tanh.source == tanh.source and tanh not in g
    # now the Mul reads only invariants too: move it as well
    hoisted = same_after(g, [y], feeds, lambda: g.move_out_of_loop(mul))
    assert hoisted.type == "Mul" and hoisted.ctx is None and hoisted.inputs[0] is hoisted_tanh.outputs[0]
    entered = hoisted.outputs[0].consumers()
    assert [op.type for op in entered] == ["Enter"] and entered[0].ctx is loop and entered[0].attrs["is_constant"]
    assert not [op for op in ops_in(g, loop) if op.type in ("Mul", "Tanh")]
    assert hoisted.source == mul.source


def test_a_moved_op_that_was_a_loop_variables_next_value_leaves_it_waiting_for_the_pivot():
    g = gc.Graph()
    with g.as_default():
        w = gc.placeholder(gc.float64, [], name="w")
        _, y = gc.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, w * 2.0), [0, gc.constant(1.0)])
    mul = next(op for op in g.get_operations() if op.type == "Mul")
    nxt = mul.outputs[0].consumers()[0]
    assert nxt.type == "NextIteration"
    same_after(g, [y], {w: 1.25}, lambda: g.move_out_of_loop(mul))
    # without the pivot, the invariant would feed the loop in its last (dead) iteration too
    assert [c.type for c in nxt.control_inputs] == ["Identity"]


def test_move_out_of_an_inner_loop_into_the_outer_loops_body():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")

        def outer_body(i, v):
            _, w = gc.while_loop(lambda j, w: j < 2, lambda j, w: (j + 1, w + gc.exp(v)), [0, v], name="inner")
            return i + 1, w * 0.5

        _, y = gc.while_loop(lambda i, v: i < 3, outer_body, [0, x], name="outer")
    exp = next(op for op in g.get_operations() if op.type == "Exp")
    inner, outer = g.while_contexts["outer/inner"], g.while_contexts["outer"]
    assert exp.ctx is inner
    moved = same_after(g, [y], {x: 0.25}, lambda: g.move_out_of_loop(exp))
    assert moved.ctx is outer


def test_move_out_of_loop_refuses_what_must_stay():
    g = gc.Graph()
    with g.as_default():
        w = gc.placeholder(gc.float64, [], name="w")

        def body(i, v):
            gc.print(w)
            return i + 1, v * w

        gc.while_loop(lambda i, v: i < 3, body, [0, gc.constant(1.0)])
        top = w * 2.0
    ops = g.get_operations()
    with pytest.raises(gc.GraphError, match="side effects"):
        g.move_out_of_loop(next(op for op in ops if op.type == "Print"))
    with pytest.raises(gc.GraphError, match=r"input .*Switch.* not a loop\s+invariant"):
        g.move_out_of_loop(next(op for op in ops if op.type == "Mul" and op.ctx is not None))
    with pytest.raises(gc.GraphError, match="loop machinery"):
        g.move_out_of_loop(next(op for op in ops if op.type == "Merge"))
    with pytest.raises(gc.GraphError, match="not in a while loop's body"):
        g.move_out_of_loop(top.op)
    g.validate()


# -- control inputs --------------------------------------------------------------------------

def test_add_and_remove_control_inputs(capfd):
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        p = gc.print("before y")
        y = gc.identity(x * 3.0)

    same_after(g, [y], {x: 1.0}, lambda: g.add_control_input(y.op, p))
    assert y.op.control_inputs == (p,) and p.control_outputs == [y.op]
    assert capfd.readouterr().out == "before y\n"
    g.add_control_input(y.op, p)  # already there: nothing changes
    assert y.op.control_inputs == (p,)
    same_after(g, [y], {x: 1.0}, lambda: g.remove_control_input(y.op, p))
    assert y.op.control_inputs == () and p.control_outputs == []
    capfd.readouterr()
    run(g, [y], {x: 1.0})
    assert capfd.readouterr().out == ""  # y no longer needs the print
    with pytest.raises(gc.GraphError, match="has no control input"):
        g.remove_control_input(y.op, p)


def test_rewrites_refuse_ops_of_other_graphs():
    g, h = gc.Graph(), gc.Graph()
    with g.as_default():
        a = gc.constant(1.0) + 1.0
    with h.as_default():
        b = gc.constant(2.0) + 1.0
    with pytest.raises(gc.GraphError, match="not an op of this graph"):
        g.erase_op(b.op)
    with pytest.raises(gc.GraphError, match="must be a tensor of this graph"):
        g.replace_all_uses_with(a, b)
    with pytest.raises(gc.GraphError, match="not an op of this graph"):
        g.add_control_input(a.op, b.op)


def test_a_rewritten_graph_round_trips_through_json():
    g, x, w, y = _loop_with_invariant_product()
    mul = next(op for op in g.get_operations() if op.type == "Mul")
    g.move_out_of_loop(mul.inputs[0].op)
    g.move_out_of_loop(next(op for op in g.get_operations() if op.type == "Mul"))
    g2 = gc.Graph.from_json(g.to_json())
    assert str(g2) == str(g)
    feeds = {x: np.array([0.5, -1.0]), w: np.array([0.3, 2.0])}
    y2 = g2.get_tensor_by_name(y.name)
    np.testing.assert_array_equal(run(g2, [y2], {g2.get_tensor_by_name(x.name): feeds[x],
                                                g2.get_tensor_by_name(w.name): feeds[w]})[0], run(g, [y], feeds)[0])
