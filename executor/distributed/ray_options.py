"""What `engine_options` tell the Ray engine: the cluster to join and the node each task's
devices run on. Plain data and checks (no Ray import): a Session checks its options when
it is made, before any cluster is touched.

    Session(g, devices=["/job:worker/task:0/cpu:0", "/job:worker/task:1/cpu:0"], engine="ray",
            engine_options={"address": "10.0.0.5:6379",          # else RAY_ADDRESS, else a local cluster
                            "task_resources": {1: "gpu-box"},     # task 1's devices: a node with that resource
                            "task_nodes": {"/job:worker/task:0": "<Ray node id, hex>"},
                            "task_labels": {2: {"zone": "b"}}})   # task 2's: a node with those labels

A task is named by its index (any job) or by `/job:NAME/task:N` (that job's only), and
mapped by one of the three. Labels are matched exactly (every one given, on one node: the
labels a node was started with, `ray start --labels` or `Cluster.add_node(labels=...)`),
through Ray's `label_selector`. A task the options leave out goes to a node that has the custom resource `task:N` if
one has it, else to the N-th alive node (the head first, then the others by node id).
A device that names no task runs wherever Ray puts it, as before tasks existed.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

from graphcore.device_names import parse_device
from graphcore.errors import GraphError

KNOWN = ("address", "task_nodes", "task_resources", "task_labels")
_LABEL_OPERATORS = ("!", "in(")  # how label_selector spells "not" and "one of": values here are exact
HEAD_RESOURCE = "node:__internal_head__"  # (Ray's mark of the head node in its resources)


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None
    task_nodes: dict = field(default_factory=dict)      # "/task:N" or "/job:J/task:N" -> node id
    task_resources: dict = field(default_factory=dict)  # same keys -> custom resource name
    task_labels: dict = field(default_factory=dict)     # same keys -> ((label, value), ...), sorted


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
    labels = _task_map(options.get("task_labels", {}), "task_labels", "a dict of node label -> value",
                       _labels)
    maps = {"task_nodes": nodes, "task_resources": resources, "task_labels": labels}
    for first, second in itertools.combinations(maps, 2):
        both = sorted(set(maps[first]) & set(maps[second]))
        if both:
            raise GraphError(f"engine_options map task {both[0]} both in {first} and in {second}; give one")
    return RayOptions(address.strip() if address else None, nodes, resources, labels)


def _task_map(given, what: str, value: str, check=None) -> dict:
    """task name -> where, each checked by `check(where, what_of_it)` (default: a non-empty
    str), which returns the value kept."""
    if not isinstance(given, dict):
        raise GraphError(f"engine_options[{what!r}] must be a dict of task -> {value}, got {type(given).__name__}")
    out = {}
    for key, where in given.items():
        name = _task_key(key, what)
        if check is not None:
            where = check(where, f"engine_options[{what!r}][{key!r}]")
        elif not isinstance(where, str) or not where:
            raise GraphError(f"engine_options[{what!r}][{key!r}] must be {value}, got {where!r}")
        if name in out:
            raise GraphError(f"engine_options[{what!r}] names task {name} twice")
        out[name] = where
    return out


def _labels(given, what: str) -> tuple:
    """A task's labels ({label: value}, both non-empty str, values exact) as sorted pairs."""
    if not isinstance(given, dict) or not given:
        raise GraphError(f"{what} must be a non-empty dict of node label -> value such as {{'zone': 'b'}}, "
                         f"got {given!r}")
    for label, value in given.items():
        if not isinstance(label, str) or not label.strip() or not isinstance(value, str) or not value.strip():
            raise GraphError(f"{what} maps node labels to values, both non-empty strings; got {label!r}: {value!r}")
        if value.startswith(_LABEL_OPERATORS):
            raise GraphError(f"{what}[{label!r}] is {value!r}: label values are matched exactly here (Ray's "
                             "'!' and 'in(...)' selectors are not taken); give the value the node has")
    return tuple(sorted(given.items()))


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
    """Where `device`'s actor runs: ("node", node id), ("resource", name), ("labels",
    ((label, value), ...)), or None (its name has no task: anywhere). `nodes` are
    ray.nodes(). A mapping no alive node can take is refused, saying how to map the task."""
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
        if key in options.task_labels:
            labels = options.task_labels[key]
            if not any(all(n.get("Labels", {}).get(k) == v for k, v in labels) for n in alive):
                raise GraphError(f"engine_options['task_labels'] puts task {key} (device {device}) on a node "
                                 f"labelled {dict(labels)}, which no alive node of the cluster is (their labels: "
                                 f"{'; '.join(str(_own_labels(n)) for n in alive)})")
            return ("labels", labels)
    resource = f"task:{spec.task}"
    if any(resource in n.get("Resources", {}) for n in alive):
        return ("resource", resource)
    if spec.task < len(alive):
        return ("node", alive[spec.task]["NodeID"])
    raise GraphError(f"device {device} names task {spec.task}, but the Ray cluster has {len(alive)} alive node"
                     f"{'s' if len(alive) != 1 else ''} (task i runs on the i-th by default); map the task with "
                     f"engine_options={{'task_nodes': {{{spec.task}: '<node id>'}}}}, or start a node with the "
                     f"resource '{resource}'")


def _own_labels(node: dict) -> dict:
    """A node's labels as its user gave them (without the ones Ray gives every node)."""
    return {k: v for k, v in node.get("Labels", {}).items() if not k.startswith("ray.io/")}
