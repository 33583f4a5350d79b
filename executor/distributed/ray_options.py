"""What `engine_options` tell the Ray engine: the cluster to join and the node each task's
devices run on. Plain data and checks (no Ray import): a Session checks its options when
it is made, before any cluster is touched.

    Session(g, devices=["/job:worker/task:0/cpu:0", "/job:worker/task:1/cpu:0"], engine="ray",
            engine_options={"address": "10.0.0.5:6379",          # else RAY_ADDRESS, else a local cluster
                            "task_resources": {1: "gpu-box"},     # task 1's devices: a node with that resource
                            "task_nodes": {"/job:worker/task:0": "<Ray node id, hex>"}})

A task is named by its index (any job) or by `/job:NAME/task:N` (that job's only). A
task the options leave out goes to a node that has the custom resource `task:N` if
one has it, else to the N-th alive node (the head first, then the others by node id).
A device that names no task runs wherever Ray puts it, as before tasks existed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from graphcore.device_names import parse_device
from graphcore.errors import GraphError

KNOWN = ("address", "task_nodes", "task_resources")
HEAD_RESOURCE = "node:__internal_head__"  # (Ray's mark of the head node in its resources)


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None
    task_nodes: dict = field(default_factory=dict)      # "/task:N" or "/job:J/task:N" -> node id
    task_resources: dict = field(default_factory=dict)  # same keys -> custom resource name


def check_engine_options(engine: str, options) -> RayOptions | None:
    """The engine's options, checked (None for the local engine, which takes none)."""
    if options is None:
        return RayOptions() if engine == "ray" else None
    if not isinstance(options, dict):
        raise GraphError(f"engine_options must be a dict, got {type(options).__name__}")
    if engine != "ray":
        if options:
            raise GraphError(f"engine_options {sorted(options)} are for engine='ray'; the {engine!r} engine runs "
                             "every device in this process and takes none")
        return None
    unknown = sorted(set(options) - set(KNOWN))
    if unknown:
        raise GraphError(f"unknown engine_options {unknown}: the Ray engine takes {', '.join(KNOWN)}")
    address = options.get("address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise GraphError(f"engine_options['address'] must be a Ray cluster address such as '10.0.0.5:6379', "
                         f"got {address!r}")
    nodes = _task_map(options.get("task_nodes", {}), "task_nodes", "a Ray node id (hex)")
    resources = _task_map(options.get("task_resources", {}), "task_resources", "a custom resource's name")
    both = sorted(set(nodes) & set(resources))
    if both:
        raise GraphError(f"engine_options map task {both[0]} both to a node (task_nodes) and to a resource "
                         "(task_resources); give one")
    return RayOptions(address.strip() if address else None, nodes, resources)


def _task_map(given, what: str, value: str) -> dict:
    if not isinstance(given, dict):
        raise GraphError(f"engine_options[{what!r}] must be a dict of task -> {value}, got {type(given).__name__}")
    out = {}
    for key, where in given.items():
        name = _task_key(key, what)
        if not isinstance(where, str) or not where:
            raise GraphError(f"engine_options[{what!r}][{key!r}] must be {value}, got {where!r}")
        if name in out:
            raise GraphError(f"engine_options[{what!r}] names task {name} twice")
        out[name] = where
    return out


def _task_key(key, what: str) -> str:
    """A task as the options may name it (1, "/task:1", "/job:worker/task:1"), as a task name."""
    if isinstance(key, int) and not isinstance(key, bool) and key >= 0:
        return f"/task:{key}"
    if isinstance(key, str):
        try:
            spec = parse_device(key)
        except GraphError as e:
            raise GraphError(f"engine_options[{what!r}]: {e.args[0]}") from None
        if spec.task is not None and spec.type is None and spec.replica is None:
            return spec.task_name
    raise GraphError(f"engine_options[{what!r}] names a task as its index (1) or as '/job:worker/task:1', "
                     f"got {key!r}")


def cluster_address(options: RayOptions) -> str | None:
    """The cluster to join: the options', else RAY_ADDRESS's, else None (start one here)."""
    return options.address or os.environ.get("RAY_ADDRESS", "").strip() or None


def node_order(nodes: list[dict]) -> list[dict]:
    """Alive nodes (as ray.nodes() lists them) in the order tasks are given them by default:
    the head first, then the others by node id."""
    alive = [n for n in nodes if n.get("Alive")]
    return sorted(alive, key=lambda n: (HEAD_RESOURCE not in n.get("Resources", {}), n["NodeID"]))


def placement_of(device: str, options: RayOptions, nodes: list[dict]) -> tuple | None:
    """Where `device`'s actor runs: ("node", node id), ("resource", name), or None (its
    name has no task: anywhere). `nodes` are ray.nodes(). A mapping no alive node can
    take is refused, saying how to map the task."""
    spec = parse_device(device)
    if spec.task is None:
        return None
    keys = [spec.task_name, f"/task:{spec.task}"]
    alive = node_order(nodes)
    for key in keys:
        if key in options.task_nodes:
            node = options.task_nodes[key]
            if not any(n["NodeID"] == node for n in alive):
                raise GraphError(f"engine_options['task_nodes'] puts task {key} (device {device}) on Ray node "
                                 f"{node}, which is not an alive node of the cluster (its nodes: "
                                 f"{', '.join(n['NodeID'] for n in alive)})")
            return ("node", node)
        if key in options.task_resources:
            resource = options.task_resources[key]
            if not any(resource in n.get("Resources", {}) for n in alive):
                raise GraphError(f"engine_options['task_resources'] puts task {key} (device {device}) on a node "
                                 f"with the resource {resource!r}, which no alive node of the cluster has")
            return ("resource", resource)
    resource = f"task:{spec.task}"
    if any(resource in n.get("Resources", {}) for n in alive):
        return ("resource", resource)
    if spec.task < len(alive):
        return ("node", alive[spec.task]["NodeID"])
    raise GraphError(f"device {device} names task {spec.task}, but the Ray cluster has {len(alive)} alive node"
                     f"{'s' if len(alive) != 1 else ''} (task i runs on the i-th by default); map the task with "
                     f"engine_options={{'task_nodes': {{{spec.task}: '<node id>'}}}}, or start a node with the "
                     f"resource '{resource}'")
