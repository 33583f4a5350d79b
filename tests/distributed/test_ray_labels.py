"""Ray placement by node labels (engine_options["task_labels"]): the options' checks and
the placements they give from ray.nodes()-like lists, then a local cluster of two nodes
whose labels differ (ray.cluster_utils.Cluster), where each task's device must run in an
actor on the node its labels name (asked of the actor: its node id), with the values of
plain Python and of one process. The cluster part is skipped, saying why, where Ray cannot
start a cluster."""
from __future__ import annotations

import numpy as np
import pytest

import graphcore as gc
from executor import Session
from executor.distributed.ray_options import HEAD_RESOURCE, check_engine_options, placement_of
from graphcore.errors import GraphError

HEAD = {"NodeID": "ff01", "Alive": True, "Resources": {"CPU": 1.0, HEAD_RESOURCE: 1.0},
        "Labels": {"ray.io/node-id": "ff01", "zone": "a"}}
WORKER = {"NodeID": "0a02", "Alive": True, "Resources": {"CPU": 1.0},
          "Labels": {"ray.io/node-id": "0a02", "zone": "b", "disk": "ssd"}}
DEAD = {"NodeID": "0004", "Alive": False, "Resources": {"CPU": 1.0}, "Labels": {"zone": "c"}}
NODES = [DEAD, WORKER, HEAD]


def test_a_task_goes_to_the_node_with_all_its_labels():
    options = check_engine_options("ray", {"task_labels": {1: {"zone": "b", "disk": "ssd"},
                                                           "/job:ps/task:0": {"zone": "a"}}})
    assert placement_of("/job:worker/task:1/cpu:0", options, NODES) == ("labels", (("disk", "ssd"), ("zone", "b")))
    assert placement_of("/job:ps/task:0/cpu:0", options, NODES) == ("labels", (("zone", "a"),))
    assert placement_of("/job:worker/task:0/cpu:0", options, NODES) == ("node", "ff01")  # (not mapped: the head)


def test_labels_no_alive_node_has_together_are_refused_naming_the_nodes_labels():
    for labels in ({"zone": "c"}, {"zone": "a", "disk": "ssd"}, {"rack": "7"}):
        options = check_engine_options("ray", {"task_labels": {1: labels}})
        with pytest.raises(GraphError, match=r"task_labels.*task /task:1 \(device /task:1/cpu:0\) on a node "
                                             r"labelled .*which no alive node of the cluster is .*'zone': 'b'"):
            placement_of("/task:1/cpu:0", options, NODES)


@pytest.mark.parametrize("labels, message", [
    ([("zone", "b")], "must be a non-empty dict of node label -> value"),
    ({}, "must be a non-empty dict of node label -> value"),
    ({"zone": 2}, "both non-empty strings; got 'zone': 2"),
    ({"": "b"}, "both non-empty strings"),
    ({"zone": "!a"}, "matched exactly here"),
    ({"zone": "in(a,b)"}, "matched exactly here"),
])
def test_bad_labels_are_refused_when_the_session_is_made(labels, message):
    with pytest.raises(GraphError, match=message):
        Session(gc.Graph(), devices=["cpu:0"], engine="ray", engine_options={"task_labels": {1: labels}})


def test_a_task_mapped_twice_is_refused():
    with pytest.raises(GraphError, match=r"task /task:1 both in task_resources and in task_labels"):
        check_engine_options("ray", {"task_resources": {"/task:1": "r"}, "task_labels": {1: {"zone": "b"}}})
    with pytest.raises(GraphError, match=r"task /job:w/task:0 both in task_nodes and in task_labels"):
        check_engine_options("ray", {"task_nodes": {"/job:w/task:0": "ab"}, "task_labels": {"/job:w/task:0": {"z": "1"}}})
    with pytest.raises(GraphError, match=r"engine_options\['task_labels'\] names task /task:1 twice"):
        check_engine_options("ray", {"task_labels": {1: {"z": "1"}, "/task:1": {"z": "2"}}})


# -- on a cluster of two nodes: the head labelled zone=a, the other zone=b and disk=ssd

ray = pytest.importorskip("ray", reason="the Ray engine is optional: pip install -e '.[distributed]'")

from executor.distributed.ray_engine import shutdown_actors  # noqa: E402

TASKS = ["/job:worker/task:0/cpu:0", "/job:worker/task:1/cpu:0"]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster  # noqa: PLC0415 (only here: the optional extra's test helper)

    shutdown_actors()  # (those of another module's connection)
    if ray.is_initialized():
        ray.shutdown()
    try:
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "labels": {"zone": "a"},
                                                          "include_dashboard": False})
        c.add_node(num_cpus=1, labels={"zone": "b", "disk": "ssd"})
        c.wait_for_nodes(timeout=60)
    except Exception as e:  # noqa: BLE001 (no cluster on this machine: say why, run nothing)
        pytest.skip(f"Ray cannot start a local cluster of two nodes here: {type(e).__name__}: {e}")
    yield c
    shutdown_actors()
    ray.shutdown()
    c.shutdown()


def node_labelled(zone: str) -> str:
    return next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n.get("Labels", {}).get("zone") == zone)


def loop_across_tasks(body_task: str, test_task: str):
    """Collatz steps: the loop's test on `test_task`'s device, its body (a cond) on `body_task`'s."""
    g = gc.Graph()
    with g.as_default():
        n0 = gc.placeholder(gc.int64, [], name="n")

        def cond(n, steps):
            with gc.device(test_task):
                return gc.not_equal(n, 1)

        def body(n, steps):
            with gc.device(body_task):
                n = gc.cond(gc.equal(n % 2, 0), lambda: n // 2, lambda: 3 * n + 1)
                return n, steps + 1
        with gc.device(test_task):
            _, steps = gc.while_loop(cond, body, [n0, gc.constant(np.int64(0))])
    return g, n0, steps


def python_collatz(n: int) -> int:
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def assert_runs_on(session: Session, nodes: dict) -> None:
    actors = session._engine.actors
    assert set(actors) == set(nodes)
    for device, node in nodes.items():
        assert ray.get(actors[device].node.remote()) == node, device


@pytest.mark.parametrize("labels, zones", [
    ({0: {"zone": "b"}, 1: {"zone": "a"}}, ("b", "a")),  # the default order (head first) turned round
    ({"/job:worker/task:0": {"zone": "b", "disk": "ssd"}, "/job:worker/task:1": {"zone": "a"}}, ("b", "a")),
    ({0: {"zone": "a"}, 1: {"disk": "ssd"}}, ("a", "b")),
])
def test_each_tasks_device_runs_on_the_node_with_its_labels(cluster, labels, zones):
    g, n, steps = loop_across_tasks(TASKS[1], TASKS[0])
    s = Session(g, devices=TASKS, engine="ray", engine_options={"address": cluster.address, "task_labels": labels})
    for k in (6, 27):
        assert s.run(steps, {n: np.int64(k)}, timeout=60) == python_collatz(k) == Session(g).run(steps, {n: k})
    assert s.last_messages > 0  # the two tasks did exchange values
    assert_runs_on(s, {device: node_labelled(zone) for device, zone in zip(TASKS, zones)})


def test_a_ray_that_cannot_place_by_labels_is_named_in_the_error(monkeypatch):
    """(A Ray without label scheduling refuses the actor option; simulated here.)"""
    from executor.distributed import ray_engine  # noqa: PLC0415

    class NoLabels:
        def options(self, **options):
            raise ValueError(f"Invalid option keyword {next(iter(options))} for actors")
    monkeypatch.setattr(ray_engine.ray, "remote", lambda **_: lambda cls: NoLabels())
    with pytest.raises(GraphError, match=r"installed Ray \S+ cannot place actors by node labels .*label_selector"):
        ray_engine._actor_class(("labels", (("zone", "b"),)))


def test_labels_no_node_of_the_cluster_has_are_refused_before_anything_runs(cluster):
    g, n, steps = loop_across_tasks(TASKS[1], TASKS[0])
    s = Session(g, devices=TASKS, engine="ray",
                engine_options={"address": cluster.address, "task_labels": {1: {"zone": "b", "disk": "hdd"}}})
    with pytest.raises(GraphError, match=r"labelled \{'disk': 'hdd', 'zone': 'b'\}, which no alive node"):
        s.run(steps, {n: np.int64(6)}, timeout=60)
