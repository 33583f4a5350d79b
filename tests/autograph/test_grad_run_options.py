"""The gradient of a Function made with options runs with them (compiled loops, devices,
its control flow), and `grad(grad(f)).get_concrete_function` is the second order's trace
(it was the first order's: the inner gradient's attribute copied onto the outer one)."""
import numpy as np
import pytest

import autograph
import graphcore as gc


def cube_loop(x, n):
    i = 0
    while i < n:
        x = np.tanh(x) * 1.5
        i += 1
    return x


def _fd(f, x, h=1e-5):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_the_second_order_concrete_function_is_the_one_that_runs():
    g1 = autograph.grad(cube_loop)
    g2 = autograph.grad(g1)
    args = (np.float64(0.4), np.int64(3))
    c1, c2 = g1.get_concrete_function(*args), g2.get_concrete_function(*args)
    assert c2.graph is not c1.graph and len(c2.graph) > len(c1.graph)
    value = g2(*args)
    assert g2.get_concrete_function(*args) is c2  # the call used that trace (no second one)
    assert value == pytest.approx(_fd(lambda x: g1(np.float64(x), np.int64(3)), 0.4), rel=1e-6)


def test_a_compiled_functions_gradients_compile_their_loops():
    f = autograph.function(cube_loop, jit_compile=True)
    args = (np.float64(0.4), np.int64(3))
    for d in (autograph.grad(f), autograph.grad(autograph.grad(f))):
        value = d(*args)
        types = d.get_concrete_function(*args).graph.op_types()
        assert "CompiledLoop" in types and "LoopCond" not in types
    assert autograph.grad(f)(*args) == autograph.grad(cube_loop)(*args)
    assert value == autograph.grad(autograph.grad(cube_loop))(*args)


def test_a_v2_functions_gradients_are_traced_in_v2(monkeypatch):
    monkeypatch.delenv("AUTOGRAPH_CONTROL_FLOW", raising=False)
    f = autograph.function(cube_loop, control_flow="v2")
    args = (np.float64(0.4), np.int64(3))
    d = autograph.grad(autograph.grad(f))
    graph = d.get_concrete_function(*args).graph  # (as traced: a call lowers it)
    assert "While" in graph.op_types() and "LoopCond" not in graph.op_types()
    value = d(*args)
    assert value == pytest.approx(autograph.grad(autograph.grad(cube_loop))(*args), rel=1e-12)


def test_a_functions_gradient_runs_on_its_devices():
    from executor import Session

    f = autograph.function(cube_loop, devices=["cpu:0", "cpu:1"])
    args = (np.float64(0.4), np.int64(3))
    d = autograph.grad(f)
    concrete = d.get_concrete_function(*args)
    gc.placement.spread(concrete.graph, ["cpu:0", "cpu:1"], "round-robin", keep_given=False)
    runs = []
    original = Session._run_on_devices

    def counted(self, *a, **k):
        out = original(self, *a, **k)
        runs.append(self.last_messages)
        return out

    Session._run_on_devices = counted
    try:
        value = d(*args)
    finally:
        Session._run_on_devices = original
    assert runs and runs[0] > 0  # the devices sent each other values
    assert value == autograph.grad(cube_loop)(*args)
