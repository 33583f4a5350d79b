"""engine_options of the Ray engine (executor/distributed/ray_options.py), without a
cluster: what is refused and why, and which node or resource each task's devices get
from a list of nodes as ray.nodes() gives it."""
from __future__ import annotations

import pytest

import graphcore as gc
from executor import Session
from executor.distributed.ray_options import (HEAD_RESOURCE, RayOptions, check_engine_options, cluster_address,
                                              node_order, placement_of)
from graphcore.errors import GraphError

HEAD = {"NodeID": "ff01", "Alive": True, "Resources": {"CPU": 1.0, HEAD_RESOURCE: 1.0}}
WORKER_A = {"NodeID": "0a02", "Alive": True, "Resources": {"CPU": 1.0}}
WORKER_B = {"NodeID": "0b03", "Alive": True, "Resources": {"CPU": 1.0, "big-memory": 1.0}}
DEAD = {"NodeID": "0004", "Alive": False, "Resources": {"CPU": 1.0}}
NODES = [WORKER_B, DEAD, HEAD, WORKER_A]


def test_tasks_go_to_the_nodes_in_order_head_first_by_default():
    assert [n["NodeID"] for n in node_order(NODES)] == ["ff01", "0a02", "0b03"]
    options = RayOptions()
    assert placement_of("/job:worker/task:0/cpu:0", options, NODES) == ("node", "ff01")
    assert placement_of("/task:2/device:CPU:1", options, NODES) == ("node", "0b03")
    assert placement_of("cpu:1", options, NODES) is None  # no task: wherever Ray puts it


def test_a_node_with_the_tasks_resource_takes_it_by_default():
    nodes = [HEAD, {**WORKER_A, "Resources": {"CPU": 1.0, "task:0": 1.0}}]
    assert placement_of("/task:0/cpu:0", RayOptions(), nodes) == ("resource", "task:0")
    assert placement_of("/task:1/cpu:0", RayOptions(), nodes) == ("node", "0a02")


def test_the_options_map_tasks_by_index_or_by_job_and_task():
    options = check_engine_options("ray", {"task_nodes": {1: "0b03", "/job:ps/task:0": "0a02"},
                                           "task_resources": {"/job:worker/task:0": "big-memory"}})
    assert placement_of("/job:worker/task:1/cpu:0", options, NODES) == ("node", "0b03")
    assert placement_of("/job:ps/task:0/cpu:0", options, NODES) == ("node", "0a02")
    assert placement_of("/job:worker/task:0/cpu:0", options, NODES) == ("resource", "big-memory")


def test_a_mapping_no_alive_node_can_take_is_refused():
    with pytest.raises(GraphError, match="task_nodes.*task /task:1 .*0004, which is not an alive node"):
        placement_of("/task:1/cpu:0", check_engine_options("ray", {"task_nodes": {1: "0004"}}), NODES)
    with pytest.raises(GraphError, match="resource 'gpu', which no alive node"):
        placement_of("/task:1/cpu:0", check_engine_options("ray", {"task_resources": {1: "gpu"}}), NODES)
    with pytest.raises(GraphError, match=r"names task 3, but the Ray cluster has 3 alive nodes.*task_nodes"):
        placement_of("/task:3/cpu:0", RayOptions(), NODES)


@pytest.mark.parametrize("options, message", [
    ({"adress": "x:1"}, r"unknown engine_options \['adress'\]"),
    ({"address": ""}, "must be a Ray cluster address"),
    ({"task_nodes": [1]}, "must be a dict of task"),
    ({"task_nodes": {"cpu:0": "ab"}}, "names a task as its index"),
    ({"task_nodes": {"/task:x": "ab"}}, "malformed"),
    ({"task_nodes": {1: 5}}, "must be a Ray node id"),
    ({"task_nodes": {1: "ab", "/task:1": "cd"}}, "names task /task:1 twice"),
    ({"task_nodes": {1: "ab"}, "task_resources": {"/task:1": "r"}}, "both in task_nodes and in task_resources"),
])
def test_bad_options_are_refused_when_the_session_is_made(options, message):
    with pytest.raises(GraphError, match=message):
        Session(gc.Graph(), devices=["cpu:0"], engine="ray", engine_options=options)


def test_the_local_engine_takes_no_options():
    with pytest.raises(GraphError, match="are for engine='ray'"):
        Session(gc.Graph(), devices=["cpu:0"], engine_options={"address": "x:1"})
    Session(gc.Graph(), devices=["cpu:0"], engine_options={})


def test_the_address_is_the_options_else_ray_address(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.7:6379")
    assert cluster_address(RayOptions()) == "10.0.0.7:6379"
    assert cluster_address(check_engine_options("ray", {"address": "10.0.0.5:6379"})) == "10.0.0.5:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    assert cluster_address(RayOptions()) is None
