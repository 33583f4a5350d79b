"""The lowering puts every op an If/While becomes on the If/While's device (a v2 loop built
under `gc.device("cpu:1")` and run lowered on two devices runs on cpu:1, as v1's would),
nested ones included; an op inside a function with a device of its own keeps it."""
from __future__ import annotations

import numpy as np

import graphcore as gc
from executor import Session
from graphcore.passes.lower_functional import lowered_copy


def _graph():
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        n = gc.placeholder(gc.int64, [], name="n")
        with gc.device("cpu:1"):
            def body(i, a, b):
                c = gc.cond(i > 2, lambda: a + b, lambda: b)
                return i + 1, b, c
            out = gc.while_loop(lambda i, a, b: i < n, body, [np.int64(0), np.int64(0), np.int64(1)])
            picked = gc.cond(n > 5, lambda: out[1] * 2, lambda: out[1])
    kinds = {op.type for op in g.get_operations()}
    assert {"While", "If"} <= kinds
    return g, n, picked


def _plain(n):
    i, a, b = 0, 0, 1
    while i < n:
        c = a + b if i > 2 else b
        i, a, b = i + 1, b, c
    return a * 2 if n > 5 else a


def test_every_lowered_op_is_on_the_functional_ops_device():
    g, n, picked = _graph()
    new, outs, _, _ = lowered_copy(g, [picked], [], [n])
    made = [op for op in new.get_operations() if op.name != "n"]
    assert {op.type for op in made} >= {"Enter", "Switch", "Merge", "Exit", "NextIteration"}
    assert {op.device for op in made if op.type not in ("Const",)} == {"cpu:1"}, \
        sorted((op.name, op.device) for op in made if op.device != "cpu:1")


def test_lowered_on_two_devices_runs_the_loop_on_its_device():
    g, n, picked = _graph()
    s = Session(g, devices=["cpu:0", "cpu:1"])
    for k in (0, 4, 9):
        assert s.run(picked, {n: np.int64(k)}) == _plain(k)
    loop_ops = [op for op in s.last_partitioning.ops_of["cpu:1"] if op.type in ("Enter", "Merge", "Exit")]
    assert loop_ops and not [op for op in s.last_partitioning.ops_of["cpu:0"] if op.type in ("Enter", "Exit")]
