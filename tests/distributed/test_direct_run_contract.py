"""The run contract (tests/distributed/test_run_contract.py) when Control Flow v2 runs
directly: on the calling thread, on two devices in process, and on two Ray actors. A
deadline and Ctrl-C end a While that never ends (between two of its iterations), a
failing kernel inside a While body gives the error every engine gives (its op, the
user's line), a staged assert raises the user's exception, a failure on one device
cancels a While running on the other, nothing is left running, and the session runs
again."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import numpy as np
import pytest

import executor
import graphcore as gc
from autograph import function
from executor import Session
from graphcore.errors import CancelledError, DeadlineExceededError, ExecutionError
from placements import DEVICES, PLACEMENTS
from test_run_contract import ENDS, FOREVER, _nothing_left_running, _threads

try:
    import ray
except ImportError:  # (the Ray engine is skipped)
    ray = None

_RAY = pytest.mark.skipif(ray is None, reason="the Ray engine is optional: pip install -e '.[distributed]'")

ENGINES = {
    "direct": dict(functional="direct"),
    "direct_devices": dict(functional="direct", devices=DEVICES),
    "direct_ray": dict(functional="direct", devices=DEVICES, engine="ray"),
}
ALL = [pytest.param(name, marks=[_RAY] if "ray" in name else []) for name in ENGINES]
SEVERAL_DEVICES = [p for p in ALL if "devices" in ENGINES[p.values[0]]]


def _on(engine: str, device: str):
    return gc.device(device) if "devices" in ENGINES[engine] else contextlib.nullcontext()


def counting_loop(engine: str):
    """sum(range(n)) by a v2 While whose body asks for cpu:1 (so the While runs there,
    where there are devices, reading n from cpu:0)."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, total):
            with _on(engine, "cpu:1"):
                return i + 1, total + i
        _, total = gc.while_loop(lambda i, t: i < n, body, [gc.constant(np.int64(0)), gc.constant(np.int64(0))])
    return g, n, total


def _warm(engine: str):
    g, n, total = counting_loop(engine)
    s = Session(g, **ENGINES[engine])
    assert s.run(total, {n: np.int64(10)}, timeout=120) == 45
    if s.devices is not None:  # (the loop ran on cpu:1, as a While)
        loops = [op for op in s.last_partitioning.ops_of["cpu:1"] if op.type == "While"]
        assert len(loops) == 1
    return g, n, total, s


@pytest.mark.parametrize("engine", ALL)
def test_a_deadline_ends_a_while_that_never_ends(engine):
    _, n, total, s = _warm(engine)
    before = _threads()

    def in_scope():
        with executor.deadline(0.5):
            s.run(total, {n: FOREVER})
    for bounded in (lambda: s.run(total, {n: FOREVER}, timeout=0.5), in_scope):
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceededError) as e:
            bounded()
        assert time.monotonic() - t0 < ENDS
        message = str(e.value)
        assert "deadline of 0.5 s" in message and "in the While" in message, message
        assert "test_direct_run_contract.py" in message, message  # (the loop's line)
        _nothing_left_running(s, before)
        assert s.run(total, {n: np.int64(100)}) == 4950
    s.close()


@pytest.mark.parametrize("engine", ALL)
def test_ctrl_c_ends_a_while_that_never_ends(engine):
    _, n, total, s = _warm(engine)
    before = _threads()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            s.run(total, {n: FOREVER})
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < ENDS
    _nothing_left_running(s, before)
    assert s.run(total, {n: np.int64(100)}) == 4950
    s.close()


def indexing_loop(engine: str):
    """sum(xs[i] for i < n) by a v2 While: xs[i], on cpu:1, fails past the end."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        xs = gc.placeholder(gc.float64, [None], name="xs")
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, total):
            with _on(engine, "cpu:1"):
                x = xs[i]  # the failing line
            return i + 1, total + x
        _, total = gc.while_loop(lambda i, t: i < n, body, [gc.constant(np.int64(0)), gc.constant(0.0)])
    return g, xs, n, total


@pytest.mark.parametrize("engine", ALL)
def test_a_failing_kernel_in_a_while_body_gives_the_error_of_every_engine(engine):
    g, xs, n, total = indexing_loop(engine)
    s = Session(g, **ENGINES[engine])
    values = np.arange(5.0)
    with pytest.raises(ExecutionError) as e:
        s.run(total, {xs: values, n: np.int64(8)}, timeout=120)
    assert isinstance(e.value, IndexError)
    message = str(e.value)
    assert "test_direct_run_contract.py" in message and "index 5 is out of bounds" in message, message
    if s.devices is not None:
        assert message.startswith("on device cpu:1: while executing"), message
    # the op of the body that failed, in the graph that was run (not a partitioned copy of it)
    fn = e.value.op.graph
    assert fn.outer_graph is not None and g.library[fn.name] is fn, e.value.op
    before = _threads()
    assert s.run(total, {xs: values, n: np.int64(5)}, timeout=120) == 10.0
    _nothing_left_running(s, before)
    s.close()


def _staged(x):
    while x < 100.0:
        x = x + 3.0
        assert x < 12.0, f"x reached {x}"
    return x


@pytest.mark.parametrize("engine", ALL)
def test_a_staged_assert_in_a_while_raises_the_users_exception(engine):
    f = function(_staged, control_flow="v2", **ENGINES[engine])
    if "devices" in ENGINES[engine]:
        PLACEMENTS["round_robin"](f.get_concrete_function(np.float64(0.0)).graph)
    with pytest.raises(AssertionError) as e:
        f(np.float64(0.0))
    assert str(e.value) == "x reached 12.0"
    assert f(np.float64(200.0)) == 200.0


def two_devices_one_failing():
    """cpu:0 fails (an index past the end, after two matmuls: a heavy part, so each device
    runs on a thread of its own in process) while a While on cpu:1 never ends."""
    g = gc.Graph()
    with g.as_default(), gc.control_flow_v2():
        m = gc.placeholder(gc.float64, [None, None], name="m")
        k = gc.placeholder(gc.int64, [], name="k")
        n = gc.placeholder(gc.int64, [], name="n")
        with gc.device("cpu:0"):
            row = gc.matmul(m, m)[k]  # the failing line
            other = gc.matmul(m, m + 1.0)
        with gc.device("cpu:1"):
            _, total = gc.while_loop(lambda i, t: i < n, lambda i, t: (i + 1, t + i),
                                     [gc.constant(np.int64(0)), gc.constant(np.int64(0))])
    return g, m, k, n, [row, total, other]


@pytest.mark.parametrize("engine", SEVERAL_DEVICES)
def test_a_failure_on_one_device_cancels_a_while_on_the_other(engine):
    g, m, k, n, fetches = two_devices_one_failing()
    s = Session(g, **ENGINES[engine])
    ones = np.ones((4, 4))
    assert s.run(fetches, {m: ones, k: np.int64(1), n: np.int64(10)}, timeout=120)[1] == 45
    assert [op.device for op in s.last_partitioning.graph.get_operations() if op.type == "While"] == ["cpu:1"]
    before = _threads()
    t0 = time.monotonic()
    with pytest.raises(ExecutionError) as e:
        s.run(fetches, {m: ones, k: np.int64(9), n: FOREVER})
    assert time.monotonic() - t0 < ENDS
    assert isinstance(e.value, IndexError) and not isinstance(e.value, CancelledError)
    assert str(e.value).startswith("on device cpu:0:") and "test_direct_run_contract.py" in str(e.value)
    _nothing_left_running(s, before)
    assert s.run(fetches, {m: ones, k: np.int64(0), n: np.int64(100)}, timeout=120)[1] == 4950
    s.close()
