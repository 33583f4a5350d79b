"""A failure on one device ends the whole run: the error names the device, the op and the
user's line, every other device stops waiting (its receives are cancelled), and the
session runs again afterwards. Also: a deadline across devices, an unknown device."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.errors import DeadlineExceededError, ExecutionError, GraphError
from placements import DEVICES


def indexing_loop():
    """sum(xs[i] for i < n), xs[i] read on cpu:1, the loop's predicate on cpu:0."""
    g = gc.Graph()
    with g.as_default():
        xs = gc.placeholder(gc.float64, [None], name="xs")
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, total):
            with gc.device("cpu:1"):
                x = xs[i]  # the line a failure names
            return i + 1, total + x
        _, total = gc.while_loop(lambda i, total: i < n, body, [gc.constant(np.int64(0)), gc.constant(0.0)])
    return g, xs, n, total


def test_a_kernel_failing_on_one_device_mid_loop_ends_the_run_and_names_it():
    g, xs, n, total = indexing_loop()
    s = Session(g, devices=DEVICES)
    values = np.arange(5.0)
    assert s.run(total, {xs: values, n: 2}, timeout=30) == 1.0  # (starts the deadline's watchdog thread)
    threads_before = threading.active_count()
    with pytest.raises(ExecutionError) as e:
        s.run(total, {xs: values, n: 8}, timeout=30)
    assert isinstance(e.value, IndexError)  # the kernel's error, as in one process
    message = str(e.value)
    assert message.startswith("on device cpu:1:")
    assert "StridedSlice" in message and "test_device_failures.py" in message and "iteration 5" in message
    assert e.value.op.graph is g  # the op of the user's graph, not of the partitioned copy
    assert threading.active_count() <= threads_before  # no device is left waiting
    assert s.run(total, {xs: values, n: 5}, timeout=30) == values.sum()  # usable afterwards
    assert s.run(total, {xs: values, n: 3}, timeout=30) == values[:3].sum()


def test_a_deadline_ends_every_device():
    g, xs, n, total = indexing_loop()
    s = Session(g, devices=DEVICES)
    big = np.ones(2_000_000)
    with pytest.raises(DeadlineExceededError):
        s.run(total, {xs: big, n: 2_000_000}, timeout=0.3)
    assert s.run(total, {xs: big[:10], n: 10}, timeout=30) == 10.0


def test_an_op_on_a_device_the_run_does_not_have_is_refused_at_its_line():
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        with gc.device("gpu:7"):
            y = x * 2.0
    with pytest.raises(GraphError, match=r"at test_device_failures.py:\d+ is placed on device .gpu:7., which this run"):
        Session(g, devices=DEVICES).run(y, {x: 1.0})


def test_bad_device_lists_are_refused():
    g = gc.Graph()
    with pytest.raises(GraphError, match="twice"):
        Session(g, devices=["cpu:0", "cpu:0"])
    with pytest.raises(GraphError, match="non-empty"):
        Session(g, devices=[])
    with pytest.raises(ValueError, match="engine"):
        Session(g, devices=DEVICES, engine="mpi")


def test_parallel_iterations_hold_on_every_device():
    """The leader may run ahead of the other device by at most parallel_iterations
    iterations: the other device's control loop starts them one by one as well."""
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")
        w = gc.placeholder(gc.float64, [64, 64], name="w")

        def body(i, x):
            with gc.device("cpu:1"):
                y = gc.tanh(gc.matmul(x, w))  # slow enough for iterations to pile up
            return i + 1, y
        _, x = gc.while_loop(lambda i, x: i < n, body, [gc.constant(np.int64(0)), gc.ones([64, 64], gc.float64)],
                             parallel_iterations=3)
    s = Session(g, devices=DEVICES)
    feeds = {n: 40, w: np.eye(64) * 0.5}
    np.testing.assert_array_equal(s.run(x, feeds), Session(g).run(x, feeds))
    stats = s._engine.last_stats
    assert set(stats) == set(DEVICES)
    for device, st in stats.items():
        assert 1 <= max(st.max_iterations_in_flight.values()) <= 3, (device, st)


def test_a_graph_partitioned_already_is_refused_not_run():
    """Its _Recv ops might wait for sends that no part makes: a clear error instead."""
    from graphcore.partition import partition  # noqa: PLC0415
    g, xs, n, total = indexing_loop()
    p = partition(g, [total], feeds=[xs, n], devices=DEVICES)
    copy = gc.Graph.from_json(p.graph.to_json())
    fetch = copy.get_tensor_by_name(total.name)
    feeds = {copy.get_tensor_by_name("xs:0"): np.ones(3), copy.get_tensor_by_name("n:0"): 3}
    with pytest.raises(GraphError, match="partitioned already"):
        Session(copy, devices=DEVICES).run(fetch, feeds)
    with pytest.raises(ExecutionError, match="run it with Session\\(graph, devices"):
        Session(copy).run(fetch, feeds)


def test_parts_that_wait_for_each_other_end_with_an_error_not_a_hang():
    """Parts of cheap ops take turns on one thread: when all wait and nothing arrived,
    nothing ever will (here a _Recv that no part sends to)."""
    from executor.distributed import LocalEngine  # noqa: PLC0415
    from executor.distributed.device_part import DevicePart  # noqa: PLC0415
    g = gc.Graph()
    with g.as_default():
        with gc.device("cpu:1"):
            r = g.create_op("_Recv", [], {"tensor_name": "nowhere:0", "send_device": "cpu:0", "recv_device": "cpu:1",
                                          "dtype": gc.float64, "shape": gc.TensorShape([])}).outputs[0]
            y = r * 2.0
        with gc.device("cpu:0"):
            z = gc.constant(1.0) + 1.0
    parts = [DevicePart(g, d, [y, z], []) for d in DEVICES]
    with pytest.raises(ExecutionError, match="wait for each other: no device will send nowhere:0 from cpu:0 to cpu:1"):
        LocalEngine(threads=False).run(parts, [], num_fetches=2)


@pytest.mark.parametrize("threads", [False, True])
def test_both_ways_of_running_parts_in_process_agree(threads):
    from executor.distributed import LocalEngine  # noqa: PLC0415
    g, xs, n, total = indexing_loop()
    s = Session(g, devices=DEVICES)
    s._engine = LocalEngine(threads=threads)
    values = np.arange(7.0)
    assert s.run(total, {xs: values, n: 7}) == values.sum()
    assert s._engine.last_messages >= 3 * 7
    with pytest.raises(IndexError):
        s.run(total, {xs: values, n: 9})
