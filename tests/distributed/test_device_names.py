"""Device names that name a task, as TensorFlow writes them (graphcore/device_names.py):
their parts, partial names matching full ones, malformed names refused at the user's line,
and a loop across two tasks' devices in process giving the values of plain Python."""
from __future__ import annotations

import numpy as np
import pytest

import graphcore as gc
from executor import Session
from graphcore.device_names import DeviceName, parse_device
from graphcore.errors import GraphError

TASKS = ["/job:worker/task:0/cpu:0", "/job:worker/task:1/cpu:0"]


@pytest.mark.parametrize("name, parts", [
    ("cpu:0", DeviceName(type="cpu", index=0)),
    ("/cpu:1", DeviceName(type="cpu", index=1)),
    ("/device:CPU:0", DeviceName(type="cpu", index=0)),
    ("/task:1/cpu:0", DeviceName(task=1, type="cpu", index=0)),
    ("/job:worker/task:1/cpu:0", DeviceName(job="worker", task=1, type="cpu", index=0)),
    ("/job:worker/task:1/device:CPU:0", DeviceName(job="worker", task=1, type="cpu", index=0)),
    ("/job:ps/replica:0/task:12/device:GPU:3", DeviceName(job="ps", replica=0, task=12, type="gpu", index=3)),
    ("cpu", DeviceName(type="cpu")),
])
def test_names_are_read_as_tensorflow_writes_them(name, parts):
    assert parse_device(name) == parts


def test_the_task_name_is_the_machine():
    assert parse_device("/job:worker/task:1/device:CPU:0").task_name == "/job:worker/task:1"
    assert parse_device("/task:2/cpu:0").task_name == "/task:2"
    assert parse_device("cpu:0").task_name is None


def test_a_partial_name_matches_the_fuller_ones_that_agree():
    full = parse_device("/job:worker/task:1/cpu:0")
    assert parse_device("cpu:0").matches(full)
    assert parse_device("/task:1/device:CPU:0").matches(full)
    assert not parse_device("/task:0/cpu:0").matches(full)
    assert not parse_device("/job:ps/task:1/cpu:0").matches(full)
    assert not parse_device("cpu:1").matches(full)


@pytest.mark.parametrize("name, why", [
    ("", "empty part"),
    ("/task:x/cpu:0", "the task 'x' is not a number"),
    ("/cpu:0/task:1", "task comes after device"),
    ("/job:1w/cpu:0", "the job '1w' is not a name"),
    ("cpu:0:1", "too many ':'"),
    ("cpu:-1", "the device index '-1' is not a number"),
    ("/job:worker/task:1/cpu:0/", "empty part"),
    ("/job:a b/cpu:0", "not a name"),
])
def test_malformed_names_are_refused_saying_what_is_wrong(name, why):
    with pytest.raises(GraphError, match="malformed") as e:
        parse_device(name)
    assert why in str(e.value) and "/job:worker/task:1/device:CPU:0" in str(e.value)


def loop_on_task_one(device: str):
    g = gc.Graph()
    with g.as_default():
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, x):
            with gc.device(device):
                y = x * 0.5 + gc.cast(i, gc.float64)
            return i + 1, y
        _, x = gc.while_loop(lambda i, x: i < n, body, [gc.constant(np.int64(0)), gc.constant(1.0)])
    return g, n, x


def python_loop(n: int) -> float:
    x = 1.0
    for i in range(n):
        x = x * 0.5 + float(i)
    return x


@pytest.mark.parametrize("written", ["/job:worker/task:1/cpu:0", "/job:worker/task:1/device:CPU:0",
                                     "/task:1/cpu:0", "/task:1/device:cpu:0"])
def test_a_loop_across_two_tasks_runs_in_process_as_plain_python(written):
    g, n, x = loop_on_task_one(written)
    s = Session(g, devices=TASKS)
    for k in (0, 1, 7):
        assert s.run(x, {n: k}) == python_loop(k)
    assert s.last_messages > 0  # the body did run on task 1
    body_devices = {op.device for op in s.last_partitioning.graph.get_operations() if op.type == "Mul"}
    assert body_devices == {TASKS[1]}


def test_a_malformed_gc_device_is_refused_at_the_users_line():
    g, n, x = loop_on_task_one("/task:one/cpu:0")
    with pytest.raises(GraphError, match=r"at test_device_names.py:\d+: device name '/task:one/cpu:0' is "
                                         r"malformed: the task 'one' is not a number"):
        Session(g, devices=TASKS).run(x, {n: 3})


def test_a_name_matching_several_devices_is_refused_asking_for_the_task():
    g, n, x = loop_on_task_one("cpu:0")
    with pytest.raises(GraphError, match=r"at test_device_names.py:\d+ is placed on device 'cpu:0', which matches "
                                         r"several of this run's devices .*name the task"):
        Session(g, devices=TASKS).run(x, {n: 3})


def test_bad_run_devices_are_refused_at_the_users_line():
    g = gc.Graph()
    with pytest.raises(GraphError, match=r"'/task:1/cpu' names no single device.*at test_device_names.py:\d+"):
        Session(g, devices=["/task:0/cpu:0", "/task:1/cpu"])
    with pytest.raises(GraphError, match=r"malformed.*at test_device_names.py:\d+"):
        Session(g, devices=["/task:0/cpu:0", "/task:1//cpu:0"])
    with pytest.raises(GraphError, match=r"a device twice: '/task:1/cpu:0' and '/task:1/device:CPU:0'"):
        Session(g, devices=["/task:1/cpu:0", "/task:1/device:CPU:0"])
