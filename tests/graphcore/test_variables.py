"""Variables: read/assign in graphs and eagerly, one store shared by Sessions, init errors."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session
from executor.session import Runtime


def test_graph_variable_assign_and_persist_across_runs():
    g = gc.Graph()
    with g.as_default():
        v = gc.Variable(np.array([1.0, 2.0]), name="v")
        inc = v.assign_add(np.array([1.0, 1.0]))
        dec = v.assign_sub(0.5 * v.value())
        reset = v.assign(np.zeros(2))
        read = v.value()
    s = Session(g, num_threads=1)
    s.run(v.initializer)
    np.testing.assert_allclose(s.run(inc), [2.0, 3.0])
    np.testing.assert_allclose(s.run(read), [2.0, 3.0])
    np.testing.assert_allclose(s.run(dec), [1.0, 1.5])
    s.run(reset)
    np.testing.assert_allclose(Session(g, num_threads=1).run(read), [0.0, 0.0])  # another Session sees it


def test_read_before_initialization_names_the_variable():
    g = gc.Graph()
    with g.as_default():
        p = gc.placeholder(gc.float64, [], name="p")
        v = gc.Variable(p * 2.0, name="from_tensor")
        y = v.value() + 1.0
        init = gc.global_variables_initializer()
    s = Session(g, num_threads=1)
    with pytest.raises(gc.InvalidArgumentError, match="'from_tensor'.*before it was initialized"):
        s.run(y)
    s.run(init, {p: 3.0})
    assert s.run(y) == 7.0
    with pytest.raises(gc.InvalidArgumentError, match="before it was initialized"):
        Session(g, num_threads=1, runtime=Runtime()).run(y)


def test_eager_variable_and_operators():
    v = gc.Variable(3.0, name="eager_v")
    assert v.assign_add(2.0) == 5.0
    assert float(v * 2) == 10.0 and float(2 - v) == -3.0
    np.testing.assert_allclose(gc.tanh(v), np.tanh(5.0))
    v.assign_sub(1.0)
    assert v.numpy() == 4.0


def test_variable_read_inside_loop_and_gradient():
    g = gc.Graph()
    with g.as_default():
        w = gc.Variable(1.5, name="w_loop")
        y = gc.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * w), [0, gc.constant(1.0)])[1]
        dw, = gc.gradients(y, [w])
    np.testing.assert_allclose(Session(g, num_threads=1).run([y, dw]), [1.5 ** 4, 4 * 1.5 ** 3])


def test_variable_unique_names_and_collections():
    g = gc.Graph()
    with g.as_default():
        a = gc.Variable(1.0, name="same")
        b = gc.Variable(2.0, name="same", trainable=False)
    assert a.name != b.name
    assert gc.trainable_variables(g) == [a]
    assert set(gc.global_variables(g)) == {a, b}


def test_a_variable_first_used_in_a_rolled_back_trace_gets_a_new_handle():
    g = gc.Graph()
    v = gc.Variable(np.array([1.0, 2.0]), name="rolled")
    with g.as_default():
        mark = g.checkpoint()
        v.value()
        g.rollback(mark)
        r = v.value() * 2.0
    g.validate()
    np.testing.assert_allclose(Session(g, num_threads=1).run(r), [2.0, 4.0])
