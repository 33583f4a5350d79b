"""Devices on several machines: a local Ray cluster of two nodes (ray.cluster_utils.Cluster),
the head with the resource {"task:0": 1} and the other with {"task:1": 1}. Each task's
device runs in an actor on its task's node (asked of the actor: its node id), the values
are those of plain Python and of one process, and Ray joins the cluster at the address
given in engine_options or in RAY_ADDRESS. Skipped, saying why, where Ray cannot start a
cluster; the actors and the connection end with the module."""
from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the Ray engine is optional: pip install -e '.[distributed]'")

import graphcore as gc  # noqa: E402
from executor import Session  # noqa: E402
from executor.distributed.ray_engine import shutdown_actors  # noqa: E402
from graphcore.errors import GraphError  # noqa: E402

TASKS = ["/job:worker/task:0/cpu:0", "/job:worker/task:1/device:CPU:0"]


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster  # noqa: PLC0415 (only here: the optional extra's test helper)

    shutdown_actors()  # (those of another module's connection)
    if ray.is_initialized():
        ray.shutdown()
    try:
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"task:0": 1},
                                                          "include_dashboard": False})
        c.add_node(num_cpus=1, resources={"task:1": 1})
        c.wait_for_nodes(timeout=60)
    except Exception as e:  # noqa: BLE001 (no cluster on this machine: say why, run nothing)
        pytest.skip(f"Ray cannot start a local cluster of two nodes here: {type(e).__name__}: {e}")
    yield c
    shutdown_actors()
    ray.shutdown()
    c.shutdown()


def node_with(resource: str) -> str:
    return next(n["NodeID"] for n in ray.nodes() if n["Alive"] and resource in n["Resources"])


def collatz_across_tasks(body_device: str = TASKS[1]):
    """Collatz steps: the loop's test on the first device, its body (a cond) on `body_device`."""
    g = gc.Graph()
    with g.as_default():
        n0 = gc.placeholder(gc.int64, [], name="n")

        def body(n, steps):
            with gc.device(body_device):
                n = gc.cond(gc.equal(n % 2, 0), lambda: n // 2, lambda: 3 * n + 1)
                steps = steps + 1
            return n, steps
        _, steps = gc.while_loop(lambda n, steps: gc.not_equal(n, 1), body, [n0, gc.constant(np.int64(0))])
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


def check_values(session: Session, g, n, steps) -> None:
    for k in (6, 27):
        want = python_collatz(k)
        assert session.run(steps, {n: np.int64(k)}, timeout=60) == want == Session(g).run(steps, {n: np.int64(k)})
    assert session.last_messages > 0  # the body did run on task 1


def test_each_tasks_device_runs_on_its_tasks_node_of_the_cluster_at_ray_address(cluster, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    g, n, steps = collatz_across_tasks()
    s = Session(g, devices=TASKS, engine="ray")
    check_values(s, g, n, steps)
    assert ray.get_runtime_context().gcs_address == cluster.address
    head, other = node_with("task:0"), node_with("task:1")
    assert head != other
    assert_runs_on(s, {TASKS[0]: head, TASKS[1]: other})
    assert s._engine.last_batches < s.last_messages  # the values of an iteration went together


def test_ray_joins_the_cluster_at_the_address_in_engine_options(cluster):
    if ray.is_initialized() and ray.get_runtime_context().gcs_address != cluster.address:
        shutdown_actors()
        ray.shutdown()
    g, n, steps = collatz_across_tasks()
    s = Session(g, devices=TASKS, engine="ray", engine_options={"address": cluster.address})
    check_values(s, g, n, steps)
    assert ray.get_runtime_context().gcs_address == cluster.address
    assert_runs_on(s, {TASKS[0]: node_with("task:0"), TASKS[1]: node_with("task:1")})


def test_a_gradient_through_a_loop_across_two_nodes_is_the_central_difference(cluster):
    """d/dw of x after n steps of x = tanh(x * w) + w, the body on task 1's node."""
    g = gc.Graph()
    with g.as_default():
        w = gc.placeholder(gc.float64, [], name="w")
        n = gc.placeholder(gc.int64, [], name="n")

        def body(i, x):
            with gc.device(TASKS[1]):
                return i + 1, gc.tanh(x * w) + w
        _, x = gc.while_loop(lambda i, x: i < n, body, [gc.constant(np.int64(0)), gc.constant(0.5)])
        dx_dw = gc.gradients(x, [w])[0]
    s = Session(g, devices=TASKS, engine="ray")

    def python(wv: float, steps: int) -> float:
        v = 0.5
        for _ in range(steps):
            v = np.tanh(v * wv) + wv
        return v
    for wv in (0.3, -1.2):
        value, grad = s.run([x, dx_dw], {w: wv, n: 4}, timeout=60)
        eps = 1e-6
        assert value == python(wv, 4)
        np.testing.assert_allclose(grad, (python(wv + eps, 4) - python(wv - eps, 4)) / (2 * eps), rtol=1e-6)
        assert [value, grad] == Session(g).run([x, dx_dw], {w: wv, n: 4})
    assert_runs_on(s, {TASKS[0]: node_with("task:0"), TASKS[1]: node_with("task:1")})


def test_the_options_map_tasks_to_nodes(cluster):
    g, n, steps = collatz_across_tasks()
    head, other = node_with("task:0"), node_with("task:1")
    s = Session(g, devices=TASKS, engine="ray", engine_options={"task_nodes": {0: other, "/job:worker/task:1": head}})
    check_values(s, g, n, steps)
    assert_runs_on(s, {TASKS[0]: other, TASKS[1]: head})


def test_another_clusters_address_and_a_task_without_a_node_are_refused(cluster):
    if not ray.is_initialized():
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    g, n, steps = collatz_across_tasks()
    with pytest.raises(GraphError, match="Ray is connected to the cluster at"):
        Session(g, devices=TASKS, engine="ray", engine_options={"address": "127.0.0.1:1"}).run(steps, {n: 6})
    g, n, steps = collatz_across_tasks("/task:2/cpu:0")
    s = Session(g, devices=["/task:0/cpu:0", "/task:2/cpu:0"], engine="ray")
    with pytest.raises(GraphError, match="names task 2, but the Ray cluster has 2 alive nodes"):
        s.run(steps, {n: np.int64(6)})


def test_prints_on_two_nodes_come_out_in_the_order_the_effects_chain_them(cluster, capsys):
    """Each print waits for the one before, on the other task's node: the driver prints
    them in that order (by the actors' logical clocks, which need no shared machine clock)."""
    g = gc.Graph()
    with g.as_default():
        x = gc.placeholder(gc.float64, [], name="x")
        before = []
        for k in range(6):
            with gc.device(TASKS[k % 2]), gc.control_dependencies(before):
                before = [gc.print(f"print {k} on task {k % 2}:", x * k)]
    s = Session(g, devices=TASKS, engine="ray")
    for _ in range(2):
        s.run(before[0], {x: 1.5}, timeout=60)
        assert capsys.readouterr().out.splitlines() == [f"print {k} on task {k % 2}: {1.5 * k}" for k in range(6)]
    assert_runs_on(s, {TASKS[0]: node_with("task:0"), TASKS[1]: node_with("task:1")})
