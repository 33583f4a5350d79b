"""Optimizers against hand-computed updates; gate_gradients; global_step."""
import numpy as np
import pytest

import graphcore as gc
from executor import Session


def _quadratic(opt_factory, steps=3, gate=gc.optimizers.GATE_OP):
    g = gc.Graph()
    with g.as_default():
        w = gc.Variable(np.array([1.0, -2.0]), name="w")
        loss = gc.reduce_sum(w * w)  # grad = 2 w
        step_var = gc.Variable(np.int64(0), name="global_step", trainable=False)
        opt = opt_factory()
        train = opt.minimize(loss, global_step=step_var, gate_gradients=gate)
        init = gc.global_variables_initializer()
    s = Session(g, num_threads=1)
    s.run(init)
    for _ in range(steps):
        s.run(train)
    return w.numpy(), step_var.numpy()


def _reference(update, steps=3):
    w = np.array([1.0, -2.0])
    state = {}
    for t in range(1, steps + 1):
        w = update(w, 2 * w, state, t)
    return w


def test_gradient_descent():
    w, step = _quadratic(lambda: gc.optimizers.GradientDescent(0.1))
    np.testing.assert_allclose(w, _reference(lambda w, g, s, t: w - 0.1 * g))
    assert step == 3


def test_momentum():
    def upd(w, g, s, t):
        s["a"] = s.get("a", 0) * 0.9 + g
        return w - 0.1 * s["a"]
    np.testing.assert_allclose(_quadratic(lambda: gc.train.MomentumOptimizer(0.1, 0.9))[0], _reference(upd))


def test_adam():
    def upd(w, g, s, t):
        s["m"] = s.get("m", 0) * 0.9 + 0.1 * g
        s["v"] = s.get("v", 0) * 0.999 + 0.001 * g * g
        lr = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        return w - lr * s["m"] / (np.sqrt(s["v"]) + 1e-8)
    np.testing.assert_allclose(_quadratic(lambda: gc.optimizers.Adam(0.1))[0], _reference(upd))


def test_rmsprop():
    def upd(w, g, s, t):
        s["ms"] = s.get("ms", 1.0) * 0.9 + 0.1 * g * g
        s["mom"] = s.get("mom", 0) * 0.5 + 0.01 * g / np.sqrt(s["ms"] + 1e-10)
        return w - s["mom"]
    np.testing.assert_allclose(_quadratic(lambda: gc.optimizers.RMSProp(0.01, momentum=0.5))[0], _reference(upd))


@pytest.mark.parametrize("gate", [gc.optimizers.GATE_NONE, gc.optimizers.GATE_OP, gc.optimizers.GATE_GRAPH])
def test_gate_gradients_modes_give_the_same_result(gate):
    w, _ = _quadratic(lambda: gc.optimizers.GradientDescent(0.1), gate=gate)
    np.testing.assert_allclose(w, _reference(lambda w, g, s, t: w - 0.1 * g))


def test_gate_graph_gates_all_gradients_together():
    g = gc.Graph()
    with g.as_default():
        a, b = gc.Variable(1.0, name="a"), gc.Variable(2.0, name="b")
        loss = a * b + b
        gv = gc.optimizers.GradientDescent(0.1).compute_gradients(loss, gate_gradients=gc.optimizers.GATE_GRAPH)
    gates = [t.op.control_inputs for t, _ in gv]
    assert all(len(c) == 1 for c in gates) and gates[0][0] is gates[1][0]
    gv_op = gc.optimizers.GradientDescent(0.1).compute_gradients
    with g.as_default():
        gv2 = gv_op(loss, gate_gradients=gc.optimizers.GATE_OP)
    mul_grads = [op for op in g.get_operations() if op.type == "Identity" and op.control_inputs
                 and op.name.startswith("gradients_1")]
    assert mul_grads, "GATE_OP gates the input gradients of each multi-input op"
    s = Session(g, num_threads=1)
    assert s.run([t for t, _ in gv]) == s.run([t for t, _ in gv2]) == [2.0, 2.0]


def test_apply_gradients_eagerly():
    v = gc.Variable(np.array([1.0, 2.0]), name="eager_opt")
    opt = gc.optimizers.Momentum(0.5, 0.0)
    opt.apply_gradients([(np.array([1.0, 1.0]), v)])
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5])
